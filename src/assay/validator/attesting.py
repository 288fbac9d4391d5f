"""A stored round's SSSAs: the round store and the validator key wired to `attest.sssa`,
which signs and writes what it is handed and knows neither."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from assay.attest import keys
from assay.attest.sssa import Export, SssaError, sign_round, write_sssas
from assay.schema.mechanism_file import pinned
from assay.store.sqlite import Store
from assay.validator.config import data_dir


def default_validator_key_path() -> Path:
    return data_dir() / "validator.key"


def export_round(
    db: Path, round_id: str, out: Path, key: Ed25519PrivateKey | None = None
) -> Export:
    """Write one SSSA per agent × task of a completed round into `out` (see `write_sssas`),
    the tracks it abstained on left out.

    `key` defaults to the validator key under the data dir, created 0600 when missing
    (after the round is found fit to attest, so a failed export leaves no new key behind).
    """
    with Store(db, read_only=True) as store:
        stored = store.round(round_id)
        plan = stored.plan
        # Which rep speaks for a task is the mechanism's rule: a round planned under
        # another mechanism is not attested under this one.
        mismatch = plan.mechanism_mismatch(round_id, pinned())
        if mismatch:
            raise SssaError(mismatch)
        if stored.status != "completed":
            raise SssaError(
                f"round {round_id} is {stored.status}; only completed rounds are attested"
            )
        key_created = None
        if key is None:
            key_path = default_validator_key_path()
            key, created = keys.load_or_create_private(key_path)
            key_created = key_path if created else None
        # A track the validator abstained on was not scored: none of its reps is attested.
        abstained = store.abstained_tracks(round_id)
        outcomes = (o for o in store.outcomes(round_id) if o.track.value not in abstained)
        signed = sign_round(plan, round_id, outcomes, key)
        export = write_sssas(signed, store.inference_bodies, out)
    return replace(export, key_created=key_created)
