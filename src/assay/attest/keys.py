"""ed25519 key files: a private key (PKCS#8 PEM, mode 0600) and its public key (hex).

A public key is named everywhere by the hex of its 32 raw bytes. Signatures
are hex too, and every signed message starts with a domain tag, so a manifest
signature can never be replayed as an SSSA signature or the reverse.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

PRIVATE_SUFFIX = ".key"
PUBLIC_SUFFIX = ".pub"


class KeyFileError(ValueError):
    """A key file is missing, malformed or readable by others; the message names it."""


class SignatureError(ValueError):
    """A signature does not verify under the given public key."""


@dataclass(frozen=True)
class KeyPair:
    private: Path
    public: Path
    public_hex: str


def public_hex(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()


def public_key(text: str) -> Ed25519PublicKey:
    """A public key from its hex form."""
    try:
        raw = bytes.fromhex(text.strip())
        return Ed25519PublicKey.from_public_bytes(raw)
    except ValueError as exc:
        raise KeyFileError(f"not an ed25519 public key (64 hex digits): {text[:80]!r}") from exc


def read_public(path_or_hex: str) -> str:
    """A public key given as hex or as a `.pub` file; returns the hex."""
    path = Path(path_or_hex)
    text = path.read_text().strip() if path.is_file() else path_or_hex
    return public_hex(public_key(text))


def _write_private(path: Path, key: Ed25519PrivateKey) -> None:
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # O_EXCL: never overwrite a key; the mode is set at creation, never widened after.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)


def new_keypair(out_dir: Path, name: str) -> KeyPair:
    """Write `NAME.key` (0600) and `NAME.pub` into `out_dir`; refuses to overwrite."""
    private, public = out_dir / f"{name}{PRIVATE_SUFFIX}", out_dir / f"{name}{PUBLIC_SUFFIX}"
    key = Ed25519PrivateKey.generate()
    try:
        _write_private(private, key)
        public.write_text(public_hex(key) + "\n")
    except FileExistsError as exc:
        raise KeyFileError(f"{private} already exists; not overwriting a key") from exc
    except OSError as exc:
        raise KeyFileError(f"cannot write key into {out_dir}: {exc.strerror}") from exc
    return KeyPair(private, public, public_hex(key))


def load_private(path: Path) -> Ed25519PrivateKey:
    """A private key file, refused when its group or others may read (or write) it."""
    try:
        mode = path.stat().st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise KeyFileError(
                f"private key {path} has mode {stat.S_IMODE(mode):04o}; "
                f"it must not be accessible to group or others (chmod 600 {path})"
            )
        pem = path.read_bytes()
    except OSError as exc:
        raise KeyFileError(f"private key {path}: {exc.strerror}") from exc
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"private key {path} is not an unencrypted PEM key") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"private key {path} is not an ed25519 key")
    return key


def load_or_create_private(path: Path) -> tuple[Ed25519PrivateKey, bool]:
    """The validator's signing key, created 0600 when missing; True when just created."""
    if path.exists():
        return load_private(path), False
    key = Ed25519PrivateKey.generate()
    try:
        _write_private(path, key)
    except OSError as exc:
        raise KeyFileError(f"cannot create key {path}: {exc.strerror}") from exc
    return key, True


def sign(key: Ed25519PrivateKey, domain: bytes, message: bytes) -> str:
    return key.sign(domain + message).hex()


def signature_bytes(signature: str) -> bytes:
    try:
        return bytes.fromhex(signature)
    except ValueError as exc:
        raise SignatureError("signature is not hex") from exc


def verify(public: str, signature: str, domain: bytes, message: bytes) -> None:
    """Raise SignatureError unless `signature` (hex) is `public`'s signature of the message."""
    raw = signature_bytes(signature)
    try:
        public_key(public).verify(raw, domain + message)
    except InvalidSignature as exc:
        raise SignatureError(f"signature does not verify under key {public[:16]}…") from exc
