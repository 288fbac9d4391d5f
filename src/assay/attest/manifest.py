"""Agent submission manifests: an author's signed claim "this code, for this track".

A manifest sits beside the agent file it pins and names it by `agent_file`, a
path relative to the manifest's folder. The author signs, over the canonical
JSON of the signed fields, the track, the SHA-256 of the code, the entrypoint,
the sandbox digest the author tested under, their own public key and the time
of pinning. `agent_file` and `signature` are not signed: the file name only
locates the code, whose identity is its hash.

The sandbox digest is informative: validators differ in tool versions, so a
different digest is reported but does not refuse the agent.
"""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import ValidationError

from assay.attest import hotkey, keys
from assay.mechanism.spec import Track
from assay.schema.boundedjson import JsonLimitError
from assay.schema.canonical import CanonicalError, canonical_bytes, read_signed
from assay.schema.manifest import MANIFEST_FORMAT, AgentManifest

MANIFEST_SUFFIX = ".manifest.json"
_DOMAIN = b"assay agent manifest v1\0"
# A manifest is a dozen short fields (well under 2 KiB); anything far larger is not one.
MAX_MANIFEST_BYTES = 64 * 1024


class ManifestError(ValueError):
    """A manifest is unreadable, malformed, or does not verify; the message says which."""


def pin(
    agent: Path,
    *,
    track: Track,
    key: Ed25519PrivateKey | hotkey.HotkeySigner,
    entrypoint: str,
    sandbox_digest: str,
    manifest_path: Path,
    model: str | None = None,
) -> AgentManifest:
    """Sign a manifest for `agent` that will be stored at `manifest_path`, with an
    author's ed25519 key or a miner's sr25519 hotkey (named by its SS58 address)."""
    fields: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "track": track.value,
        "code_sha256": hashlib.sha256(agent.read_bytes()).hexdigest(),
        "entrypoint": entrypoint,
        "sandbox_digest": sandbox_digest,
        "author_key": (
            keys.public_hex(key) if isinstance(key, Ed25519PrivateKey) else key.ss58_address
        ),
        "issued_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if model is not None:
        fields["model"] = model
    signed = canonical_bytes(fields)
    if isinstance(key, Ed25519PrivateKey):
        signature = keys.sign(key, _DOMAIN, signed)
    else:
        signature = hotkey.sign(key, _DOMAIN, signed)
    relative = os.path.relpath(agent.resolve(), manifest_path.resolve().parent)
    return AgentManifest(**fields, agent_file=Path(relative).as_posix(), signature=signature)


def write_manifest(manifest: AgentManifest, path: Path) -> None:
    path.write_text(manifest.model_dump_json(indent=2, exclude_none=True) + "\n")


def read_manifest(path: Path) -> AgentManifest:
    try:
        return AgentManifest.model_validate(read_signed(path, max_bytes=MAX_MANIFEST_BYTES))
    except OSError as exc:
        raise ManifestError(f"manifest {path}: {exc.strerror}") from exc
    except (JsonLimitError, ValidationError) as exc:
        raise ManifestError(f"manifest {path} is malformed: {exc}") from exc


def verify_manifest(manifest: AgentManifest, code: bytes) -> None:
    """Raise ManifestError unless the author's signature holds and `code` is the pinned code.

    The signature is checked first: until it holds, the pinned hash is only a claim.
    """
    verify = hotkey.verify if hotkey.is_address(manifest.author_key) else keys.verify
    try:
        verify(
            manifest.author_key,
            manifest.signature,
            _DOMAIN,
            canonical_bytes(manifest.signed_fields()),
        )
    except CanonicalError as exc:  # e.g. a lone surrogate: nothing of that form was signed
        raise ManifestError(
            f"bad signature: the signed fields have no canonical form: {exc}"
        ) from exc
    except (keys.SignatureError, keys.KeyFileError) as exc:
        signed = ", ".join(sorted(manifest.signed_fields()))
        raise ManifestError(
            f"bad signature: {exc} (a signed field — {signed} — was changed, "
            f"or the author key did not sign it)"
        ) from exc
    actual = hashlib.sha256(code).hexdigest()
    if actual != manifest.code_sha256:
        raise ManifestError(
            f"hash mismatch: manifest pins code_sha256 {manifest.code_sha256[:16]}… but "
            f"{manifest.agent_file} hashes to {actual[:16]}…"
        )
