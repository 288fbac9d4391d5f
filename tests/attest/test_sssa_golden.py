"""SSSA bytes are pinned: every file an export writes hashes as `golden/sssa-digests.json`
says, which the code wrote before the SSSA body became typed models.

Two stored rounds are exported with a fixed validator key: the golden round as a real
run stored it (`golden/round.json.gz`: its plan and reps, from `tests/golden`'s frozen
inputs, seed and secret), and a variant of it that reaches every branch of the body:
an author key from a manifest, model inference (an exchange without an answer, a body
the store does not hold), a task no rep of an agent completed, a representative that is
not rep 0, and a report with no canonical form (skipped, and listed).

A deliberate change of the SSSA format (or of the mechanism, which stored plans pin)
regenerates the digests: `python tests/attest/test_sssa_golden.py`; review the diff.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from assay.inference.usage import Body, Exchange, InferenceUsage
from assay.runner.outcome import FailureReason, RunOutcome, RunStatus
from assay.store.sqlite import Store
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
    return data["plan"], [RunOutcome.model_validate(o) for o in data["outcomes"]]


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
    return outcome.model_copy(update={"inference": usage, "transcript": transcript})


def _failed(outcome: RunOutcome, reason: FailureReason) -> RunOutcome:
    return outcome.model_copy(
        update={"status": RunStatus.FAILED, "reason": reason, "report": None, "detail": "x"}
    )


def _uncanonical(outcome: RunOutcome) -> RunOutcome:
    assert outcome.report is not None
    evidence = outcome.report.evidence.model_copy(update={"e\u0301": 1, "\u00e9": 2})
    report = outcome.report.model_copy(update={"evidence": evidence})
    return outcome.model_copy(update={"report": report})


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


def export_digests(work: Path) -> dict[str, dict[str, str]]:
    """Per stored round: every exported file (relative path) -> SHA-256 of its bytes."""
    digests = {}
    for name, (plan, outcomes) in {"golden": golden_round(), "variant": variant_round()}.items():
        db, out = work / f"{name}.db", work / name
        with Store(db) as store:
            store.create_round(ROUND_ID, plan, [])
            for outcome in outcomes:
                store.put_rep(ROUND_ID, outcome)
            store.finish(ROUND_ID, {}, {})
        export_round(db, ROUND_ID, out, KEY)
        digests[name] = {
            p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*"))
            if p.is_file()
        }
    return digests


def test_exported_sssas_are_byte_identical_to_the_golden(tmp_path: Path) -> None:
    produced = export_digests(tmp_path)
    golden = json.loads(DIGESTS.read_text())
    assert produced == golden
    # Not vacuous: the variant reaches inference, failures and a skipped agent x task.
    variant = produced["variant"]
    assert "skipped.json" in variant
    # 8 tasks x 2 reps asked (one of the two requests kept each), answered alike per rep.
    assert sum(path.startswith("inference/") for path in variant) == 8 * 2 + 2
    assert len(produced["golden"]) == 3 * 8


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        DIGESTS.write_text(json.dumps(export_digests(Path(tmp)), indent=1, sort_keys=True) + "\n")
