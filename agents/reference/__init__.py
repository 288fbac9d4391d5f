"""Reference agent: a static, dual-plane detector that weighs the validator's detonation
(`context["observed"]`) first. Standard library only, deterministic, and defensive (size
caps, no symlinks followed, a per-file failure never sinks the report); what it weighs and
why is in docs/agents.md.
"""

from .behavioural import behavioural_report
from .common import _thread_probe, collect_files
from .repositories import repository_report


def _empty_report(track: str, reason: str) -> dict:
    evidence: dict = (
        {"audit": {"files_analysed": 1, "lines_analysed": 0}, "vulnerabilities": []}
        if track == "repositories"
        else {
            "action_plane": {"capabilities": []},
            "context_plane": {"injected_instructions": []},
            "mcp_surface": {"tools": []},
            "lifecycle": {"hooks": []},
            "supply_chain": {"typosquat_of": None, "dependency_confusion": False},
        }
    )
    return {
        "verdict": {"decision": "WARN", "risk_score": 50, "confidence": 0.1, "summary": reason},
        "evidence": evidence,
        "findings": [],
    }


def agent_main(context: dict) -> dict:
    track = str(context.get("track", ""))
    if track != "repositories":
        _thread_probe(context)
    try:
        files = collect_files(str(context["artifact_dir"]))
        if track == "repositories":
            return repository_report(files)
        return behavioural_report(track, files, context.get("observed"))
    except (RecursionError, MemoryError, ValueError, OSError, KeyError) as exc:
        # Hostile input must never cost the run: an unreadable artifact is suspicious.
        return _empty_report(track, f"analysis failed: {type(exc).__name__}")
