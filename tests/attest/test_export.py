"""Exporting a stored round's SSSAs.

SSSA bytes are pinned: every file an export writes hashes as `golden/sssa-digests.json`
says, which the code wrote before the SSSA body became typed models.

Two stored rounds are exported with a fixed validator key: the golden round as a real
run stored it (`golden/round.json.gz`: its plan and reps, from `tests/golden`'s frozen
inputs, seed and secret), and a variant of it that reaches every branch of the body:
an author key from a manifest, model inference (an exchange without an answer, a body
the store does not hold), a task no rep of an agent completed, a representative that is
not rep 0, and a report with no canonical form (skipped, and listed).

A deliberate change of the SSSA format (or of the mechanism, which stored plans pin)
regenerates the digests: `python tests/attest/test_export.py`; review the diff.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from assay.attest.sssa import SssaError, sign_round, write_sssas
from assay.records import codec
from assay.records.outcome import FailureReason, RunOutcome, RunStatus
from assay.records.plan import RoundPlan
from assay.records.scorecard import Scorecard
from assay.records.usage import Body, Exchange, InferenceUsage
from assay.store.sqlite import Store, StoreError
from assay.validator.attesting import export_round

GOLDEN = Path(__file__).resolve().parent / "golden"
DIGESTS = GOLDEN / "sssa-digests.json"
ROUND_ID = "round-0001"
KEY = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"assay sssa golden").digest())
ALLOW_ALL = "6a2aa8917b6ee338a1538ad7603ef9df14616290904b19437251fc563f013650"
COIN_FLIP = "60b32cf8f116ddcecc7d7c3c4988ab6786425a9c7407be22c27e674e711d42bd"
KEYWORD = "0b0655cd5c281acffc1685777e38a2f1308f2846ac342f0fde5edf78bb008a31"

Stored = tuple[dict[str, Any], list[RunOutcome]]


def golden_round() -> Stored:
    data = json.loads(gzip.decompress((GOLDEN / "round.json.gz").read_bytes()))
    return data["plan"], [codec.convert(o, RunOutcome) for o in data["outcomes"]]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _with_inference(outcome: RunOutcome) -> RunOutcome:
    asked = json.dumps({"task": outcome.task_id, "rep": outcome.rep})
    answered = json.dumps({"choices": [{"message": {"content": f"rep {outcome.rep}"}}]})
    again = json.dumps({"task": outcome.task_id, "rep": outcome.rep, "retry": True})
    usage = InferenceUsage(
        provider="openai",
        model="small-model",
        requests=2,
        errors=1,
        prompt_tokens=120 + outcome.rep,
        completion_tokens=7,
        estimated=outcome.rep == 1,
        upstream_s=1.25,
        wall_extension_s=0.5,
        exchanges=(
            Exchange(seq=0, status=200, request_sha256=_sha(asked),
                     response_sha256=_sha(answered), prompt_tokens=120, completion_tokens=7,
                     upstream_s=0.75),
            Exchange(seq=1, status=504, request_sha256=_sha(again), upstream_s=0.5),
        ),
    )  # fmt: skip
    # The retry's request body is not kept: an export writes only the bodies it has.
    transcript = (Body(sha256=_sha(asked), text=asked), Body(sha256=_sha(answered), text=answered))
    return msgspec.structs.replace(outcome, inference=usage, transcript=transcript)


def _failed(outcome: RunOutcome, reason: FailureReason) -> RunOutcome:
    return msgspec.structs.replace(
        outcome, status=RunStatus.FAILED, reason=reason, report=None, detail="x"
    )


def _uncanonical(outcome: RunOutcome) -> RunOutcome:
    assert outcome.report is not None
    evidence = outcome.report.evidence.model_copy(update={"e\u0301": 1, "\u00e9": 2})
    report = outcome.report.model_copy(update={"evidence": evidence})
    return msgspec.structs.replace(outcome, report=report)


def variant_round() -> Stored:
    plan, outcomes = golden_round()
    plan["manifests"] = {
        KEYWORD: {
            "format": "assay-agent-manifest/1",
            "agent_file": "keyword.py",
            "track": "skills",
            "code_sha256": KEYWORD,
            "entrypoint": "agent_main",
            "sandbox_digest": "5" * 64,
            "author_key": "a1" * 32,
            "issued_at": "2026-11-30T12:00:00Z",
            "signature": "5e" * 64,
            "model": None,
        }
    }
    changed = []
    for o in outcomes:
        if o.agent_hash == COIN_FLIP and o.rep < 2:  # rep 2 asks the model nothing
            o = _with_inference(o)
        elif o.agent_hash == ALLOW_ALL and o.task_id == "skill-0001":
            o = _failed(o, FailureReason.CRASH)
        elif o.agent_hash == KEYWORD and o.task_id == "mcp-0002" and o.rep == 0:
            o = _failed(o, FailureReason.CPU_BUDGET)
        elif o.agent_hash == KEYWORD and o.task_id == "repo-0001":
            o = _uncanonical(o)
        changed.append(o)
    return plan, changed


def rounds() -> dict[str, Stored]:
    return {"golden": golden_round(), "variant": variant_round()}


def _digests(out: Path) -> dict[str, str]:
    """Every file under `out` (relative path) -> SHA-256 of its bytes."""
    return {
        p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


def _into_store(
    db: Path, plan: dict[str, Any], outcomes: Sequence[RunOutcome], *, completed: bool = True
) -> None:
    """A round as a real round store holds it: its plan, its reps and, once completed, scores."""
    planned = RoundPlan.from_json(plan)
    with Store(db) as store:
        store.create_round(ROUND_ID, planned, [])
        for outcome in outcomes:
            store.put_rep(ROUND_ID, outcome)
        if completed:
            # An export reads no scores: an empty scorecard marks the round completed.
            card = Scorecard(
                mechanism_version=planned.mechanism_version,
                mechanism_digest=planned.mechanism_digest,
                scores={},
                weights={},
            )
            store.finish(ROUND_ID, card, {})


def export_digests(work: Path) -> dict[str, dict[str, str]]:
    """Each round stored in a real round store and exported from it, as `attest export` does."""
    digests = {}
    for name, (plan, outcomes) in rounds().items():
        db = work / f"{name}.db"
        _into_store(db, plan, outcomes)
        export_round(db, ROUND_ID, work / name, KEY)
        digests[name] = _digests(work / name)
    return digests


def test_exported_sssas_are_byte_identical_to_the_golden(tmp_path: Path) -> None:
    produced = export_digests(tmp_path)
    assert produced == json.loads(DIGESTS.read_text())
    # Not vacuous: the variant reaches inference, failures and a skipped agent x task.
    variant = produced["variant"]
    assert "skipped.json" in variant
    # 8 tasks x 2 reps asked (one of the two requests kept each), answered alike per rep.
    assert sum(path.startswith("inference/") for path in variant) == 8 * 2 + 2
    assert len(produced["golden"]) == 3 * 8


def _held(bodies: dict[str, str]) -> Callable[[set[str]], dict[str, str]]:
    """A body lookup over what the reps carried: what a round store would answer."""
    return lambda digests: {d: bodies[d] for d in digests if d in bodies}


def test_attest_signs_what_it_is_handed_without_a_store(tmp_path: Path) -> None:
    produced = {}
    for name, (plan, outcomes) in rounds().items():
        bodies = _held({body.sha256: body.text for o in outcomes for body in o.transcript})
        signed = sign_round(RoundPlan.from_json(plan), ROUND_ID, outcomes, KEY)
        write_sssas(signed, bodies, tmp_path / name)
        produced[name] = _digests(tmp_path / name)
    assert produced == json.loads(DIGESTS.read_text())


def test_reps_of_one_agent_and_task_must_come_together() -> None:
    plan, outcomes = golden_round()
    by_rep = sorted(outcomes, key=lambda o: o.rep)  # every agent x task split in three
    with pytest.raises(SssaError, match="are not together"):
        list(sign_round(RoundPlan.from_json(plan), ROUND_ID, by_rep, KEY))


def _store(db: Path, plan: dict[str, Any], *, completed: bool = True) -> None:
    """The golden round's first agent x task (its three reps), with `plan` changed."""
    stored_plan, outcomes = golden_round()
    _into_store(db, stored_plan | plan, outcomes[:3], completed=completed)


@pytest.fixture
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path / "data" / "assay"


def test_the_validator_key_is_created_once_when_none_is_given(
    tmp_path: Path, data_home: Path
) -> None:
    _store(tmp_path / "r.db", {})
    first = export_round(tmp_path / "r.db", ROUND_ID, tmp_path / "one")
    assert first.key_created == data_home / "validator.key"
    assert first.key_created.stat().st_mode & 0o077 == 0
    second = export_round(tmp_path / "r.db", ROUND_ID, tmp_path / "two")
    assert second.key_created is None and len(second.written) == 1
    assert _digests(tmp_path / "one") == _digests(tmp_path / "two")


@pytest.mark.parametrize(
    ("plan", "completed", "message"),
    [
        ({}, False, "round round-0001 is interrupted; only completed rounds are attested"),
        ({"mechanism_digest": "0" * 64}, True, "was planned under mechanism 0000"),
    ],
)
def test_a_round_unfit_to_attest_is_refused_and_no_key_is_made(
    tmp_path: Path, data_home: Path, plan: dict[str, Any], completed: bool, message: str
) -> None:
    _store(tmp_path / "r.db", plan, completed=completed)
    with pytest.raises(SssaError, match=message):
        export_round(tmp_path / "r.db", ROUND_ID, tmp_path / "out")
    assert not data_home.exists() and not (tmp_path / "out").exists()


def test_no_store_is_a_store_error_and_no_key_is_made(tmp_path: Path, data_home: Path) -> None:
    with pytest.raises(StoreError, match="no round store"):
        export_round(tmp_path / "absent.db", ROUND_ID, tmp_path / "out")
    assert not data_home.exists() and not (tmp_path / "absent.db").exists()


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        DIGESTS.write_text(json.dumps(export_digests(Path(tmp)), indent=1, sort_keys=True) + "\n")
