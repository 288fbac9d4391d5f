"""SSSA: one signed, self-standing attestation per agent × task of a stored round.

Layout: a body `{format, round, track, artifact {task_id, bundle_sha256, nonce},
reps, verdict, evidence, findings, policy[, inference]}` (`inference` only when the
round served a model: per rep, its usage and each exchange's request and response
SHA-256) and an `attestation` block
`{agent_hash, author_key, validator_key, mechanism_digest, field_hashes,
canonical_hash, signature}`.

- `canonical_hash` is the SHA-256 of the canonical JSON (canonical.py) of the
  body, i.e. everything except `attestation`;
- `field_hashes` holds the same digest per top-level body field, so a verifier
  can name the field that changed rather than only "the hash differs";
- `signature` is the validator's ed25519 signature of the domain tag
  "assay sssa v1\\0" followed by the canonical JSON of the attestation block
  without `signature`: it covers the body (through `canonical_hash`) and the
  agent, author, validator and mechanism identities alike.

The reps reduce to one verdict by DESIGN §6 (`consensus.reduce_verdicts`; for
repositories too, where it is advisory). The evidence, findings, policy and
nonce shown are those of the *representative* rep: the lowest-numbered
completed rep whose decision equals that consensus. The median rule always
picks one of the votes, so it exists whenever a rep completed. With no
completed rep, verdict, evidence and policy are null, findings empty, and
the nonce is rep 0's.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from assay.attest import keys
from assay.attest.canonical import CanonicalError, canonical_bytes, canonical_digest, parse_strict
from assay.mechanism.consensus import representative
from assay.mechanism.spec import pinned
from assay.results.plan import PlannedTask, RoundPlan
from assay.runner.outcome import RunOutcome
from assay.store.sqlite import Store
from assay.validator.config import data_dir
from assay.validator.round import RoundLedger

SSSA_FORMAT = "assay-sssa/1"
_DOMAIN = b"assay sssa v1\0"
_ATTESTATION_KEYS = (
    "agent_hash",
    "author_key",
    "validator_key",
    "mechanism_digest",
    "field_hashes",
    "canonical_hash",
    "signature",
)


class SssaError(ValueError):
    """An SSSA cannot be built, or does not verify; the message names every problem."""


def default_validator_key_path() -> Path:
    return data_dir() / "validator.key"


def _representative(outcomes: Sequence[RunOutcome]) -> RunOutcome | None:
    chosen = representative([(o.rep, o.decision) for o in outcomes])
    return next((o for o in outcomes if o.rep == chosen), None)


def _body(plan: RoundPlan, round_id: str, task: PlannedTask, outcomes: Sequence[RunOutcome]) -> Any:
    chosen = _representative(outcomes)
    report = chosen.report if chosen else None
    first = min(outcomes, key=lambda o: o.rep)
    return {
        "format": SSSA_FORMAT,
        "round": {
            "round_id": round_id,
            "validator_id": plan.validator_id,
            "mechanism_version": plan.mechanism_version,
        },
        "track": task.track.value,
        "artifact": {
            "task_id": task.task_id,
            "bundle_sha256": task.artifact_digest,
            "nonce": (chosen or first).nonce,
        },
        "reps": {
            "total": len(outcomes),
            "completed": sum(o.completed for o in outcomes),
            "representative": chosen.rep if chosen else None,
        },
        "verdict": report.verdict.model_dump(mode="json") if report else None,
        "evidence": report.evidence.model_dump(mode="json", exclude_none=True) if report else None,
        "findings": [f.model_dump(mode="json", exclude_none=True) for f in report.findings]
        if report
        else [],
        "policy": report.policy if report else None,
        **_inference(outcomes),
    }


def _inference(outcomes: Sequence[RunOutcome]) -> dict[str, Any]:
    """`inference`, when the round had a model: every rep's exchanges by digest, so the
    attestation states what was asked and what the model answered (times are left out)."""
    used = sorted((o for o in outcomes if o.inference), key=lambda o: o.rep)
    if not used:
        return {}
    timing = {"upstream_s", "wall_extension_s"}
    reps = [
        {
            "rep": o.rep,
            **o.inference.model_dump(mode="json", exclude=timing | {"exchanges"}),
            "exchanges": [
                e.model_dump(mode="json", exclude={"upstream_s"}) for e in o.inference.exchanges
            ],
        }
        for o in used
        if o.inference
    ]
    return {"inference": reps}


def sign_sssa(body: dict[str, Any], identity: dict[str, Any], key: Ed25519PrivateKey) -> Any:
    """`body` with its attestation; `identity` gives agent_hash, author_key, mechanism_digest."""
    attestation = {
        **identity,
        "validator_key": keys.public_hex(key),
        "field_hashes": {name: canonical_digest(value) for name, value in body.items()},
        "canonical_hash": canonical_digest(body),
    }
    attestation["signature"] = keys.sign(key, _DOMAIN, canonical_bytes(attestation))
    return {**body, "attestation": attestation}


@dataclass(frozen=True)
class Verified:
    agent_hash: str
    validator_key: str
    track: str
    task_id: str
    decision: str | None


def _attestation(doc: Any) -> dict[str, Any]:
    if not isinstance(doc, dict) or not isinstance(doc.get("attestation"), dict):
        raise SssaError("no attestation block: not an SSSA")
    attestation: dict[str, Any] = doc["attestation"]
    missing = [k for k in _ATTESTATION_KEYS if k not in attestation]
    if missing:
        raise SssaError(f"attestation is missing {', '.join(missing)}")
    unknown = sorted(set(attestation) - set(_ATTESTATION_KEYS))
    if unknown:
        raise SssaError(f"attestation has fields that are not signed: {', '.join(unknown)}")
    if not isinstance(attestation["field_hashes"], dict):
        raise SssaError("attestation.field_hashes is not an object")
    return attestation


def _field_problems(body: dict[str, Any], signed: dict[str, Any]) -> list[str]:
    problems = [f"field {name!r} was removed" for name in sorted(set(signed) - set(body))]
    problems += [
        f"field {name!r} was added after signing" for name in sorted(set(body) - set(signed))
    ]
    for name in sorted(set(body) & set(signed)):
        if canonical_digest(body[name]) != signed[name]:
            problems.append(f"field {name!r} does not match its signed hash (it was changed)")
    return problems


def verify_sssa(doc: Any, *, validator_key: str | None = None) -> Verified:
    """Check an SSSA offline; raises SssaError naming every problem found."""
    attestation = _attestation(doc)
    body = {k: v for k, v in doc.items() if k != "attestation"}
    problems = []
    if validator_key is not None and attestation["validator_key"] != validator_key:
        problems.append(
            f"validator_key {attestation['validator_key']!s:.16}… is not the expected "
            f"key {validator_key:.16}…"
        )
    try:
        problems += _field_problems(body, attestation["field_hashes"])
        if canonical_digest(body) != attestation["canonical_hash"]:
            problems.append("canonical_hash does not match the content")
        unsigned = {k: v for k, v in attestation.items() if k != "signature"}
        keys.verify(
            str(attestation["validator_key"]),
            str(attestation["signature"]),
            _DOMAIN,
            canonical_bytes(unsigned),
        )
    except CanonicalError as exc:
        problems.append(f"content has no canonical form: {exc}")
    except (keys.SignatureError, keys.KeyFileError) as exc:
        problems.append(
            f"signature: {exc} (the attestation block — {', '.join(_ATTESTATION_KEYS[:-1])} — "
            f"was changed, or this validator key did not sign it)"
        )
    if problems:
        raise SssaError("; ".join(problems))
    verdict = body.get("verdict")
    return Verified(
        agent_hash=str(attestation["agent_hash"]),
        validator_key=str(attestation["validator_key"]),
        track=str(body.get("track")),
        task_id=str(body.get("artifact", {}).get("task_id")),
        decision=verdict.get("decision") if isinstance(verdict, dict) else None,
    )


def verify_file(path: Path, *, validator_key: str | None = None) -> Verified:
    try:
        doc = parse_strict(path.read_bytes())
    except OSError as exc:
        raise SssaError(f"{path}: {exc.strerror}") from exc
    except CanonicalError as exc:
        raise SssaError(f"{path}: {exc}") from exc
    return verify_sssa(doc, validator_key=validator_key)


@dataclass(frozen=True)
class Skipped:
    """An agent × task with no SSSA: its stored data has no canonical form."""

    agent_hash: str
    track: str
    task_id: str
    reason: str


@dataclass(frozen=True)
class Export:
    written: list[Path]
    skipped: list[Skipped]
    key_created: Path | None = None  # the validator key, when this export had to create it
    bodies: list[Path] = field(default_factory=list)  # inference bodies the SSSAs name


def round_sssas(ledger: RoundLedger, key: Ed25519PrivateKey) -> Iterator[tuple[str, Any] | Skipped]:
    """(agent hash, signed SSSA) for every agent × task of a stored round.

    Reports are checked for a canonical form when accepted, so nothing stored
    should fail here; if something does (a store written by an older version),
    that one agent × task is skipped with its reason and the others go on.
    """
    plan = ledger.plan
    tasks = {(t.track.value, t.task_id): t for t in plan.tasks}

    def group(outcome: RunOutcome) -> tuple[str, str, str]:
        return (outcome.agent_hash, outcome.track.value, outcome.task_id)

    for (agent, track, task_id), reps in itertools.groupby(
        ledger.store.outcomes(ledger.round_id), group
    ):
        body = _body(plan, ledger.round_id, tasks[(track, task_id)], list(reps))
        identity = {
            "agent_hash": agent,
            "author_key": plan.manifests.get(agent, {}).get("author_key"),
            "mechanism_digest": plan.mechanism_digest,
        }
        try:
            yield agent, sign_sssa(body, identity, key)
        except CanonicalError as exc:
            yield Skipped(agent, track, task_id, f"no canonical form: {exc}")


def _file_name(doc: Any) -> str:
    stem = f"{doc['track']}.{doc['artifact']['task_id']}"
    return re.sub(r"[^A-Za-z0-9._-]", "_", stem) + ".json"


def export_round(
    db: Path, round_id: str, out: Path, key: Ed25519PrivateKey | None = None
) -> Export:
    """Write one SSSA per agent × task of a completed round.

    Files are OUT/<agent hash[:16]>/<track>.<task id>.json, in canonical form;
    anything skipped is listed, with its reason, in OUT/skipped.json. The stored
    bodies of the inference exchanges they name are OUT/inference/<sha256>.json,
    byte for byte what was sent or received, so anyone can check a digest.
    `key` defaults to the validator key under the data dir (created 0600 when missing).
    """
    key_created = None
    if key is None:
        key_path = default_validator_key_path()
        key, created = keys.load_or_create_private(key_path)
        key_created = key_path if created else None
    with Store(db, create=False) as store:
        ledger = RoundLedger(store, round_id, pinned())
        status = store.round(round_id).status
        if status != "completed":
            raise SssaError(f"round {round_id} is {status}; only completed rounds are attested")
        written, skipped, signed = [], [], []
        for item in round_sssas(ledger, key):
            if isinstance(item, Skipped):
                skipped.append(item)
                continue
            agent, doc = item
            path = out / agent[:16] / _file_name(doc)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(canonical_bytes(doc).decode("utf-8") + "\n")
            written.append(path)
            signed.append(doc)
        bodies = _write_bodies(store, signed, out / "inference")
    if skipped:
        out.mkdir(parents=True, exist_ok=True)
        listing = [vars(s) for s in skipped]
        (out / "skipped.json").write_text(json.dumps(listing, indent=2, ensure_ascii=True) + "\n")
    return Export(written, skipped, key_created, bodies)


def _write_bodies(store: Store, docs: Sequence[Any], folder: Path) -> list[Path]:
    digests = {
        digest
        for doc in docs
        for rep in doc.get("inference") or ()
        for exchange in rep["exchanges"]
        for digest in (exchange["request_sha256"], exchange["response_sha256"])
        if digest
    }
    paths = []
    for digest, text in sorted(store.inference_bodies(digests).items()):
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{digest}.json"
        path.write_bytes(text.encode("utf-8"))
        paths.append(path)
    return paths
