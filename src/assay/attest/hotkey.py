"""A miner's sr25519 hotkey as an author key: the chain SDK's key library signs and
verifies (the `chain` extra), never crypto of assay's own.

A hotkey is named by its SS58 address. Signatures are hex, over the same domain-tagged
message an ed25519 author key signs (`keys.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from assay.attest.keys import KeyFileError, SignatureError, signature_bytes


class HotkeySigner(Protocol):
    """What signs with a hotkey: the SDK's keypair (or a wallet's hotkey)."""

    @property
    def ss58_address(self) -> str: ...

    @property
    def public_key(self) -> bytes: ...

    @property
    def crypto_type(self) -> int: ...

    def sign(self, data: bytes) -> bytes: ...


def _sdk() -> Any:
    try:
        import bittensor.keyfiles
        import bittensor.wallets
    except ImportError as exc:
        raise SignatureError(
            "hotkey signatures need the chain extra: pip install 'assay[chain]'"
        ) from exc
    return bittensor


def is_address(text: str) -> bool:
    """An SS58 address in Bittensor's format (False, never an error, without the extra)."""
    try:
        return bool(_sdk().wallets.is_bittensor_address(text))
    except SignatureError:
        return False


def sign(signer: HotkeySigner, domain: bytes, message: bytes) -> str:
    return bytes(signer.sign(domain + message)).hex()


def verify(address: str, signature: str, domain: bytes, message: bytes) -> None:
    """Raise SignatureError unless `signature` (hex) is the hotkey's signature of the message."""
    raw = signature_bytes(signature)
    try:
        public = _sdk().keyfiles.Keypair(ss58_address=address)
        valid = public.verify(domain + message, raw)
    except ValueError as exc:
        raise SignatureError(f"not a hotkey signature under {address[:12]}…: {exc}") from exc
    if not valid:
        raise SignatureError(f"signature does not verify under hotkey {address[:12]}…")


def load_hotkey(name: str, path: Path | None = None) -> HotkeySigner:
    """A wallet's hotkey (`name` is WALLET/HOTKEY), read by the SDK from its keyfile."""
    sdk = _sdk()
    where = {"path": str(path)} if path else {}
    try:
        keypair: HotkeySigner = sdk.Wallet(name=name, **where).hotkey
    except Exception as exc:  # the SDK's keyfile errors share no base class but Exception
        raise KeyFileError(f"cannot read hotkey {name!r}: {exc}") from exc
    return keypair
