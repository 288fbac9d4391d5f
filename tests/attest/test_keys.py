from __future__ import annotations

import stat
from pathlib import Path

import pytest

from assay.attest import keys


def test_new_keypair_writes_a_0600_private_key_that_loads(tmp_path: Path) -> None:
    pair = keys.new_keypair(tmp_path / "k", "alice")
    assert stat.S_IMODE(pair.private.stat().st_mode) == 0o600
    loaded = keys.load_private(pair.private)
    assert keys.public_hex(loaded) == pair.public_hex == keys.read_public(str(pair.public))
    signature = keys.sign(loaded, b"t\0", b"message")
    keys.verify(pair.public_hex, signature, b"t\0", b"message")
    with pytest.raises(keys.SignatureError):
        keys.verify(pair.public_hex, signature, b"u\0", b"message")  # other domain


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o644, 0o620])
def test_private_key_readable_or_writable_by_others_is_refused(tmp_path: Path, mode: int) -> None:
    pair = keys.new_keypair(tmp_path, "alice")
    pair.private.chmod(mode)
    with pytest.raises(keys.KeyFileError, match=f"mode {mode:04o}.*chmod 600"):
        keys.load_private(pair.private)


def test_existing_key_is_never_overwritten(tmp_path: Path) -> None:
    keys.new_keypair(tmp_path, "alice")
    with pytest.raises(keys.KeyFileError, match="already exists"):
        keys.new_keypair(tmp_path, "alice")


def test_validator_key_created_0600_then_reused(tmp_path: Path) -> None:
    path = tmp_path / "data" / "validator.key"
    first, created = keys.load_or_create_private(path)
    again, created_again = keys.load_or_create_private(path)
    assert created and not created_again
    assert keys.public_hex(first) == keys.public_hex(again)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_garbage_keys_are_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.key"
    bad.write_text("not a key")
    bad.chmod(0o600)
    with pytest.raises(keys.KeyFileError, match="not an unencrypted PEM key"):
        keys.load_private(bad)
    with pytest.raises(keys.KeyFileError, match="64 hex digits"):
        keys.public_key("abcd")
