"""The context an agent receives (DESIGN §4), built from the rep and the round's data.

`observed` is the validator's detonation as stored, plus the keys a Phylax
agent reads, so those agents run unmodified: `capabilities` as canonical names
(the full records move to `capability_evidence`) and `phases`, one per
detonation profile with the capabilities that profile showed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from assay.mechanism.spec import Track
from assay.records import codec
from assay.records.observed import Observed
from assay.runner.probe import Probe
from assay.sandbox.interface import SANDBOX_ARTIFACT_DIR, SANDBOX_WORKSPACE_DIR, SandboxBackend


def agent_observed(observed: Observed | None) -> dict[str, object] | None:
    """`context.observed`: the stored detonation with the Phylax-compatible keys added,
    as the JSON builtins the context is written from."""
    if observed is None:
        return None
    data = codec.to_builtins(observed)
    return {
        **data,
        "capabilities": [c.capability for c in observed.capabilities],
        "capability_evidence": data["capabilities"],
        "phases": {
            p.name: {"capabilities": list(p.capabilities), "status": p.status}
            for p in observed.profiles
        },
    }


def build_context(
    *,
    track: str,
    nonce: str,
    probe: Probe | None,
    observed: Observed | None,
    backend: SandboxBackend,
    inference: Mapping[str, str] | None = None,
) -> dict[str, object]:
    """The context of DESIGN §4, exactly as the agent receives it in the sandbox."""
    return _context(
        track, SANDBOX_ARTIFACT_DIR, SANDBOX_WORKSPACE_DIR, nonce, probe, observed, inference
    ) | {"sandbox": {"backend": backend.name, "digest": backend.digest}}


def local_context(
    track: Track,
    artifact_dir: Path,
    workspace: Path,
    *,
    observed: Observed | None = None,
    nonce: str = "00" * 16,
) -> dict[str, object]:
    """The same context for an agent called in this process (tests, benchmarks, an
    author's debugger): host paths, a probe from a fixed nonce, no sandbox and no model.
    Nothing checks the probe here: it is only there for the agent to act on."""
    probe = Probe.from_nonce(nonce) if track.behavioural else None
    context = _context(track.value, str(artifact_dir), str(workspace), nonce, probe, observed)
    return context | {"sandbox": {"backend": "none", "digest": ""}}


def _context(
    track: str,
    artifact_dir: str,
    workspace: str,
    nonce: str,
    probe: Probe | None,
    observed: Observed | None,
    inference: Mapping[str, str] | None = None,
) -> dict[str, object]:
    return {
        "track": track,
        "artifact_dir": artifact_dir,
        "workspace": workspace,
        "nonce": nonce,
        "probe": probe.context(workspace) if probe else None,
        "observed": agent_observed(observed),
        # The metered inference proxy; empty when the round has no upstream model.
        "inference": dict(inference or {}),
    }
