"""SSSA: one signed, self-standing attestation per agent × task of a round.

Layout: a body `{format, round, track, artifact {task_id, bundle_sha256, nonce},
reps, verdict, evidence, findings, policy[, inference][, draw]}` (`inference` only when
the round served a model: per rep, its usage and each exchange's request and response
SHA-256; `draw` only in chain mode: the round seed, the subnet, its anchor block and
that block's hash, and the corpus digest, from which anyone recomputes the shared draw,
`mechanism/draw.py`) and an `attestation` block
`{agent_hash, author_key, validator_key, mechanism_digest, field_hashes,
canonical_hash, signature}`.

- `canonical_hash` is the SHA-256 of the canonical JSON (`schema.canonical`) of
  the body, i.e. everything except `attestation`;
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

Signing reads data handed to it (the round's plan and its reps); where they are
stored, and where the validator key lives, is the caller's business
(the validator wires its round store in).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_serializer

from assay.attest import keys
from assay.mechanism.consensus import representative
from assay.mechanism.spec import Track
from assay.records import codec
from assay.records.outcome import RunOutcome
from assay.records.plan import PlannedTask, RoundPlan
from assay.schema.boundedjson import JsonLimitError
from assay.schema.canonical import CanonicalError, canonical_bytes, canonical_digest, read_signed
from assay.schema.report import Evidence, Finding, Verdict

SSSA_FORMAT: Final = "assay-sssa/1"
_DOMAIN = b"assay sssa v1\0"
# The largest SSSA file a verifier reads. What a validator writes is at most one
# report (`sandbox.report_bytes`, 1 MiB as pinned) plus, per rep, one short line per
# model exchange (200 requests a rep as pinned: well under 1 MiB for all reps). The
# same document re-spelled on its way to a verifier (indented, or ASCII-escaped,
# where one byte can become a six-byte `\u` escape) stays equivalent and must still
# verify, so the cap leaves room for that growth: 16 MiB, read once, is cheap.
MAX_SSSA_BYTES = 16 * 2**20


class SssaError(ValueError):
    """An SSSA cannot be built, or does not verify; the message names every problem."""


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RoundRef(_Part):
    round_id: str
    validator_id: str
    mechanism_version: str


class ArtifactRef(_Part):
    task_id: str
    bundle_sha256: str
    nonce: str


class DrawRef(_Part):
    """A chain-mode round's shared draw: `round_seed` is
    `chain_round_seed(block_hash, corpus_digest)`."""

    round_seed: str
    netuid: int
    anchor_block: int
    block_hash: str
    corpus_digest: str


class RepCount(_Part):
    total: int
    completed: int
    representative: int | None


class _Attested(BaseModel):
    # Read from a stored usage record: its timing fields are left out, not refused.
    model_config = ConfigDict(frozen=True, extra="ignore")


class AttestedExchange(_Attested):
    """An exchange as attested: what was asked and answered, by digest; not its timing."""

    seq: int
    status: int
    request_sha256: str
    response_sha256: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False


class RepInference(_Attested):
    """One rep's model usage as attested: its counts and exchanges; not its timing.

    Spelled out rather than derived from the stored usage record: what an SSSA signs
    is a format of its own, which a field added to the store must not change."""

    rep: int
    provider: str
    model: str
    requests: int = 0
    refused: int = 0
    rejected: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    exchanges: tuple[AttestedExchange, ...] = ()


class SssaBody(_Part):
    """Everything an SSSA states; its canonical JSON is what `canonical_hash` covers."""

    format: Literal["assay-sssa/1"] = SSSA_FORMAT
    round: RoundRef
    track: Track
    artifact: ArtifactRef
    reps: RepCount
    verdict: Verdict | None
    evidence: Evidence | None
    findings: tuple[Finding, ...]
    policy: JsonValue
    # Absent, not null, when the round served no model: SSSAs of such rounds keep the
    # bytes they had before rounds could.
    inference: tuple[RepInference, ...] | None = Field(
        default=None, exclude_if=lambda value: value is None
    )
    # Absent in a local round (whose draw is the validator's own), as `inference` is.
    draw: DrawRef | None = Field(default=None, exclude_if=lambda value: value is None)

    # Evidence and findings say what the agent reported: its sections and optional
    # fields left out stay left out, rather than appearing as nulls it never wrote.
    @field_serializer("evidence")
    def _evidence_as_reported(self, evidence: Evidence | None) -> Any:
        return evidence.model_dump(mode="json", exclude_none=True) if evidence else None

    @field_serializer("findings")
    def _findings_as_reported(self, findings: tuple[Finding, ...]) -> Any:
        return [f.model_dump(mode="json", exclude_none=True) for f in findings]

    def body_fields(self) -> dict[str, Any]:
        """The body as JSON, one entry per top-level field."""
        return self.model_dump(mode="json", exclude={"attestation"})


class Attestation(_Part):
    agent_hash: str
    author_key: str | None
    validator_key: str
    mechanism_digest: str
    field_hashes: dict[str, str]
    canonical_hash: str
    signature: str


_ATTESTATION_KEYS = tuple(Attestation.model_fields)


class Sssa(SssaBody):
    """A signed SSSA: the body and its attestation, as one file holds them."""

    attestation: Attestation

    def document(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def inference_digests(self) -> set[str]:
        """The request and response bodies this SSSA names."""
        return {
            digest
            for rep in self.inference or ()
            for exchange in rep.exchanges
            for digest in (exchange.request_sha256, exchange.response_sha256)
            if digest
        }


def sign_sssa(
    body: SssaBody,
    *,
    agent_hash: str,
    author_key: str | None,
    mechanism_digest: str,
    key: Ed25519PrivateKey,
) -> Sssa:
    """`body` with its attestation; raises CanonicalError when the body has no canonical form."""
    fields = body.body_fields()
    unsigned = {
        "agent_hash": agent_hash,
        "author_key": author_key,
        "validator_key": keys.public_hex(key),
        "mechanism_digest": mechanism_digest,
        "field_hashes": {name: canonical_digest(value) for name, value in fields.items()},
        "canonical_hash": canonical_digest(fields),
    }
    signature = keys.sign(key, _DOMAIN, canonical_bytes(unsigned))
    attestation = Attestation.model_validate({**unsigned, "signature": signature})
    return Sssa.model_validate({**dict(body), "attestation": attestation})


def _body(
    plan: RoundPlan, round_id: str, task: PlannedTask, outcomes: Sequence[RunOutcome]
) -> SssaBody:
    chosen_rep = representative([(o.rep, o.decision) for o in outcomes])
    chosen = next((o for o in outcomes if o.rep == chosen_rep), None)
    report = chosen.report if chosen else None
    first = min(outcomes, key=lambda o: o.rep)
    # What was asked and what the model answered, per rep, by digest (times are left out).
    used = sorted((o for o in outcomes if o.inference), key=lambda o: o.rep)
    inference = tuple(
        RepInference.model_validate({**codec.to_builtins(o.inference), "rep": o.rep})
        for o in used
        if o.inference
    )
    return SssaBody(
        round=RoundRef(
            round_id=round_id,
            validator_id=plan.validator_id,
            mechanism_version=plan.mechanism_version,
        ),
        track=task.track,
        artifact=ArtifactRef(
            task_id=task.task_id,
            bundle_sha256=task.artifact_digest,
            nonce=(chosen or first).nonce,
        ),
        reps=RepCount(
            total=len(outcomes),
            completed=sum(o.completed for o in outcomes),
            representative=chosen.rep if chosen else None,
        ),
        verdict=report.verdict if report else None,
        evidence=report.evidence if report else None,
        findings=report.findings if report else (),
        policy=report.policy if report else None,
        inference=inference or None,
        draw=_draw(plan),
    )


def _draw(plan: RoundPlan) -> DrawRef | None:
    if plan.shared is None:
        return None
    return DrawRef(round_seed=plan.round_seed, **codec.to_builtins(plan.shared))


@dataclass(frozen=True)
class Skipped:
    """An agent × task with no SSSA: its stored data has no canonical form."""

    agent_hash: str
    track: str
    task_id: str
    reason: str


def sign_round(
    plan: RoundPlan, round_id: str, outcomes: Iterable[RunOutcome], key: Ed25519PrivateKey
) -> Iterator[Sssa | Skipped]:
    """One SSSA for every agent × task among `outcomes`, which come grouped by agent × task
    (as the round store yields them), so a round is signed without holding all its reports.

    Reports are checked for a canonical form when accepted, so nothing should fail
    here; if something does (a store written by an older version), that one agent ×
    task is skipped with its reason and the others go on.
    """
    tasks = {(t.track, t.task_id): t for t in plan.tasks}
    seen: set[tuple[str, Track, str]] = set()
    for (agent, track, task_id), reps in itertools.groupby(
        outcomes, lambda o: (o.agent_hash, o.track, o.task_id)
    ):
        if (agent, track, task_id) in seen:
            # Two SSSAs for one agent × task would overwrite each other's file.
            raise SssaError(f"the reps of {agent[:16]} on {track.value}/{task_id} are not together")
        seen.add((agent, track, task_id))
        body = _body(plan, round_id, tasks[(track, task_id)], list(reps))
        manifest = plan.manifests.get(agent)
        try:
            yield sign_sssa(
                body,
                agent_hash=agent,
                author_key=manifest.author_key if manifest else None,
                mechanism_digest=plan.mechanism_digest,
                key=key,
            )
        except CanonicalError as exc:
            yield Skipped(agent, track.value, task_id, f"no canonical form: {exc}")


@dataclass(frozen=True)
class Export:
    written: list[Path]
    skipped: list[Skipped]
    key_created: Path | None = None  # the validator key, when this export had to create it
    bodies: list[Path] = field(default_factory=list)  # inference bodies the SSSAs name


def _file_name(sssa: Sssa) -> str:
    stem = f"{sssa.track.value}.{sssa.artifact.task_id}"
    return re.sub(r"[^A-Za-z0-9._-]", "_", stem) + ".json"


def write_sssas(
    signed: Iterable[Sssa | Skipped],
    inference_bodies: Callable[[set[str]], Mapping[str, str]],
    out: Path,
) -> Export:
    """Write each SSSA as OUT/<agent hash[:16]>/<track>.<task id>.json, in canonical form.

    Anything skipped is listed, with its reason, in OUT/skipped.json. The bodies of
    the inference exchanges the SSSAs name, as `inference_bodies` finds them by
    digest, are OUT/inference/<sha256>.json, byte for byte what was sent or
    received, so anyone can check a digest.
    """
    written, skipped, digests = [], [], set()
    for item in signed:
        if isinstance(item, Skipped):
            skipped.append(item)
            continue
        path = out / item.attestation.agent_hash[:16] / _file_name(item)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(canonical_bytes(item.document()).decode("utf-8") + "\n")
        written.append(path)
        digests |= item.inference_digests()
    bodies = []
    for digest, text in sorted(inference_bodies(digests).items()):
        path = out / "inference" / f"{digest}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
        bodies.append(path)
    if skipped:
        out.mkdir(parents=True, exist_ok=True)
        listing = [vars(s) for s in skipped]
        (out / "skipped.json").write_text(json.dumps(listing, indent=2, ensure_ascii=True) + "\n")
    return Export(written, skipped, bodies=bodies)


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
    unknown = sorted(map(str, set(attestation) - set(_ATTESTATION_KEYS)))
    if unknown:
        raise SssaError(f"attestation has fields that are not signed: {', '.join(unknown)}")
    if not isinstance(attestation["field_hashes"], dict):
        raise SssaError("attestation.field_hashes is not an object")
    return attestation


def _field_problems(body: dict[str, Any], signed: dict[Any, Any]) -> list[str]:
    problems = [f"field {name!r} was removed" for name in sorted(set(signed) - set(body), key=str)]
    problems += [
        f"field {name!r} was added after signing" for name in sorted(set(body) - set(signed))
    ]
    for name in sorted(set(body) & set(signed)):
        if canonical_digest(body[name]) != signed[name]:
            problems.append(f"field {name!r} does not match its signed hash (it was changed)")
    return problems


def _text(value: Any, *path: str) -> str | None:
    """The string at `path` inside a verified document, or None (its shape is not trusted)."""
    for step in path:
        value = value.get(step) if isinstance(value, dict) else None
    return value if isinstance(value, str) else None


def verify_sssa(doc: Any, *, validator_key: str | None = None) -> Verified:
    """Check an SSSA offline; raises SssaError naming every problem found.

    `doc` is untrusted: whatever its shape, the answer is a `Verified` or an SssaError.
    """
    attestation = _attestation(doc)
    body = {k: v for k, v in doc.items() if k != "attestation"}
    problems = []
    if validator_key is not None and attestation["validator_key"] != validator_key:
        problems.append(
            f"validator_key {attestation['validator_key']!s:.16}… is not the expected "
            f"key {validator_key:.16}…"
        )
    try:
        content_hash = canonical_digest(body)  # first: a body with no canonical form stops here
        problems += _field_problems(body, attestation["field_hashes"])
        if content_hash != attestation["canonical_hash"]:
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
    return Verified(
        agent_hash=str(attestation["agent_hash"]),
        validator_key=str(attestation["validator_key"]),
        track=str(body.get("track")),
        task_id=str(_text(body, "artifact", "task_id")),
        decision=_text(body, "verdict", "decision"),
    )


def verify_file(path: Path, *, validator_key: str | None = None) -> Verified:
    try:
        doc = read_signed(path, max_bytes=MAX_SSSA_BYTES)
    except OSError as exc:
        raise SssaError(f"{path}: {exc.strerror}") from exc
    except JsonLimitError as exc:
        raise SssaError(f"{path}: {exc}") from exc
    return verify_sssa(doc, validator_key=validator_key)
