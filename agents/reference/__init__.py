"""Reference agent: a static, dual-plane detector that uses the validator's detonation too.

Standard library only, one file, deterministic (no clock, no randomness), and
defensive: every file is read with a size cap, symlinks are never followed, and
any per-file failure is swallowed so one hostile file cannot sink the report.

Behavioural tracks (skills, mcp_servers, packages) combine:
- the action plane: secret-file reads, bulk harvesting of secret environment
  variables, network egress, shell execution, remote code fetch, persistence
  (shell profiles, cron, systemd), obfuscated payloads (decoded and re-scanned),
  install hooks, typosquats and dependency confusion, evasive gates (date,
  CI/environment, argv) that hide dangerous code;
- the context plane: hidden Unicode (tag characters, zero-width, bidi controls),
  HTML-comment instructions, instruction overrides, tool-description poisoning
  and tool shadowing, deceptive documentation;
- `context["observed"]`, the validator's own detonation, when present.
Evidence is weighed, not counted: a credential read next to egress, persistence,
or an injected instruction blocks; an SDK reading its own API key does not.
Behaviour is judged against the stated purpose (an SSH library's key reads, a scanner's
list of attacks are expected). Repositories: Python through `ast` with intraprocedural
taint from request/argv/environment and library parameters to SQL, shell, eval, path,
deserialisation, SSRF, redirect and HTML sinks; JavaScript through line-level taint,
prototype pollution; hard-coded secrets; CI workflow injection (docs/agents.md).
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
