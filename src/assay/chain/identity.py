"""Which hotkey owns a submission: the address its manifest's author key has on chain."""

from __future__ import annotations

from bittensor_core import ss58_decode, ss58_encode

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
    """A valid SS58 address in Bittensor's format: it decodes, and its key encodes back to
    it under that format (an address of another Substrate chain does not).

    The SDK's own `is_bittensor_address` checks the same through these codec functions,
    but importing any part of the SDK package loads all of it (0.7 s on every command
    that names a hotkey)."""
    try:
        public_key = bytes(ss58_decode(text))
    except (ValueError, TypeError):
        return False
    return address(public_key) == text
