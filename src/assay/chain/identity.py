"""Which hotkey owns a submission: the address its manifest's author key has on chain."""

from __future__ import annotations

from bittensor.wallets import is_bittensor_address
from bittensor_core import ss58_encode

# Bittensor's address format (the Substrate generic prefix).
SS58_FORMAT = 42


def hotkey_of(author_key: str) -> str | None:
    """The SS58 address of a manifest's author key, or None when it names no account.

    A miner's manifest is signed by its sr25519 hotkey and names it by address; a local
    round's ed25519 key (64 hex digits) is the 32-byte public key of an account too, so it
    gets the address that key would have.
    """
    if is_address(author_key):
        return author_key
    try:
        raw = bytes.fromhex(author_key)
    except ValueError:
        return None
    return address(raw) if len(raw) == 32 else None


def address(public_key: bytes) -> str:
    return str(ss58_encode(public_key, SS58_FORMAT))


def is_address(text: str) -> bool:
    """A valid SS58 address in Bittensor's format."""
    return bool(is_bittensor_address(text))
