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
Behaviour is judged against the artifact's stated purpose: an SSH library reading SSH
keys for the host its caller names, a cloud credential sent only to its own cloud, a
security scanner's prose listing the attacks it finds, a changelog's wording, and an
install of declared dependencies from the public index are expected, not evidence.
Skills: fake prerequisites (a password-protected or bare-IP download to run, an encoded
command piped to a shell), scripts inside SVGs, tunnel endpoints in config files,
requirements far beyond the stated purpose, arguments reaching eval or built SQL, and
loops nothing can end. MCP servers: tool text read from decorators and annotations too
(authority claims, tool-preference hijacking), tools judged against what they declare
(a claimed directory, credentials served to the model), and a detonation that saw the
server start a shell and write files.

Repositories get a real static audit: Python through `ast` with intraprocedural
taint tracking from request/argv/environment sources to SQL, shell, eval, path,
deserialisation, SSRF, redirect and HTML sinks, and from a library's own parameters
(and what its objects were built with) to eval, shell and built SQL; JavaScript
through line-level taint over the same sink families, recursive merges and key-path
setters open to prototype pollution; hard-coded secrets; CI workflow injection.

The standard library's `ast` does the Python analysis, not bandit or semgrep: bandit
needs PyYAML (a compiled wheel), stevedore and rich in the agents' pure-wheel runtime
and checks each call on its own (no flow from a parameter to a sink), and semgrep is a
72 MB native wheel whose rules are fetched from the network, past the agent's sandbox.
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
