"""The behavioural report: signals from both planes weighed into a verdict."""

import re
from dataclasses import replace

from .action import MAX_AST_BYTES, action_signals, analyse_code
from .common import (
    BLOCK_AT,
    MAX_FINDINGS,
    MAX_ITEMS,
    SEVERITY_RANK,
    WARN_AT,
    Signal,
    Source,
    _parse_python,
)
from .context import (
    deceptive_doc_signal,
    hidden_unicode_signals,
    html_comment_signals,
    important_tag_signals,
    override_signals,
)
from .directives import code_signals, prose_signals
from .facts import SECRET_KINDS, TOOL_HINT, Event, FileFacts
from .mcp import Tool, mcp_tools, skill_confinement_signals, tool_code_signals, tool_signals
from .observed import _evidence_text, _observed_capabilities, observed_signals
from .packages import (
    content_signals,
    find_manifest,
    npm_hook_signals,
    pth_signals,
    setup_hook_signals,
    supply_chain_signals,
    typosquat_of,
)
from .prerequisites import declares_scanning, prerequisite_signals, prose_commands


def _capability_items(signals: list[Signal], facts: dict[str, FileFacts], observed: object) -> list:
    items: list[dict] = []
    seen: set[tuple[str, str]] = set()

    def add(capability: str, file: str | None, line: int | None, ref: str) -> None:
        key = (capability, file or ref)
        if key in seen or len(items) >= MAX_ITEMS:
            return
        seen.add(key)
        item: dict = {"capability": capability, "evidence_ref": ref}
        if file is not None:
            item["file"] = file
        if line is not None:
            item["line"] = line
        items.append(item)

    for signal in signals:
        if signal.capability and signal.plane == "action" and signal.file is not None:
            add(signal.capability, signal.file, signal.line, f"{signal.file}:{signal.line}")
    for rel, fact in sorted(facts.items()):
        for event in fact.events:
            capability = _event_capability(event)
            if capability:
                add(capability, rel, event.line, f"{rel}:{event.line}")
    for item in _observed_capabilities(observed):
        add(item["capability"].upper(), None, None, f"observed:{_evidence_text(item)[:80]}")
    return items


def _event_capability(event: Event) -> str | None:
    if event.kind == "secret":
        return SECRET_KINDS[event.detail][1]
    return {
        "env_secret": "READ_ENV_SECRET",
        "env_bulk": "READ_ENV",
        "shell": "EXEC_SHELL",
        "process": "CREATE_PROCESS",
        "profile": "WRITE_SHELL_PROFILE",
        "schedule": "SCHEDULE_JOB",
        "obfuscated_exec": "EVAL_CODE",
        "dynamic_exec": "EVAL_CODE",
        "remote_exec": "EXEC_SHELL",
        "egress": "OPEN_SOCKET"
        if event.detail == "socket"
        else ("EXEC_SHELL" if event.detail == "shell" else "FETCH_WEB"),
    }.get(event.kind)


def _dedupe_findings(signals: list[Signal]) -> list[dict]:
    """One finding per category and file, most severe first, at most MAX_FINDINGS."""
    ranked = sorted(
        (s for s in signals if s.finding),
        key=lambda s: (-s.weight, -SEVERITY_RANK[s.severity], s.file or "", s.line or 0, s.title),
    )
    seen: set[tuple[str, str]] = set()
    out = []
    for signal in ranked:
        key = (signal.category, signal.file or "")
        if key in seen or _absorbed(signal, ranked):
            continue
        seen.add(key)
        out.append(signal.as_finding())
    return out[:MAX_FINDINGS]


# A finding of the key category at the same place already tells the story of these.
ABSORBS = {
    "install_hook": ("remote_code_execution", "command_injection"),
    "persistence": ("remote_code_execution",),
}


def _absorbed(signal: Signal, ranked: list[Signal]) -> bool:
    for other in ranked:
        if (
            signal.category in ABSORBS.get(other.category, ())
            and other.file == signal.file
            and other.line is not None
            and signal.line is not None
            and abs(other.line - signal.line) <= 2
        ):
            return True
    return False


def _decision(signals: list[Signal]) -> tuple[str, float, float]:
    # Evidence of one kind does not add up across files: a hundred harmless mentions of
    # `pip install` are still one weak hint. Distinct kinds of evidence do add up.
    strongest_per_category: dict[str, float] = {}
    for signal in signals:
        best = strongest_per_category.get(signal.category, 0.0)
        strongest_per_category[signal.category] = max(best, signal.weight)
    total = sum(strongest_per_category.values())
    strongest = max((s.weight for s in signals), default=0.0)
    if total >= BLOCK_AT or strongest >= BLOCK_AT:
        decision = "BLOCK"
        confidence = min(0.97, 0.7 + total / 60)
    elif total >= WARN_AT:
        decision = "WARN"
        confidence = 0.55
    else:
        decision = "ALLOW"
        confidence = 0.85 if total == 0 else 0.6
    return decision, min(100.0, round(total * 8.0, 1)), round(confidence, 2)


def _context_signals(files: list[Source], tool_file_lines: set, track: str) -> list:
    signals: list[Signal] = []
    budget = CONTEXT_BYTES
    # Prose first (that is where instructions to a model live), then code and config.
    for source in sorted(files, key=lambda s: (not s.is_prose, s.rel.count("/"), s.rel)):
        budget -= len(source.text)
        if budget < 0:
            break
        in_tool = {line for (rel, line) in tool_file_lines if rel == source.rel}
        signals += hidden_unicode_signals(source, in_tool)
        if source.is_prose or source.suffix in (".md", ".html") or _skill_data(source, track):
            signals += html_comment_signals(source)
            signals += override_signals(source)
            signals += important_tag_signals(source)
            signals += prose_signals(source)
        elif source.is_code or (source.suffix == ".json" and track == "mcp_servers"):
            tree = _parse_python(source.text) if source.is_python else None
            signals += code_signals(source, tree, track == "mcp_servers")
    return signals


# A skill's data files are read by the agent as its instructions are: text hidden there
# is judged as prose.
DATA_SUFFIXES = frozenset({".json", ".yaml", ".yml", ".toml", ".csv", ".tsv", ".xml", ".ini"})


def _skill_data(source: Source, track: str) -> bool:
    return track == "skills" and source.suffix in DATA_SUFFIXES


# Code analysed per task, so the CPU budget holds on huge artifacts (about 1 s per MB).
CONTEXT_BYTES = 8 << 20
BEHAVIOURAL_CODE_BYTES = 4 << 20
REPOSITORY_CODE_BYTES = 16 << 20


def _within_budget(files: list[Source], budget: int) -> list[Source]:
    """Code files to analyse, shallow ones first, until the byte budget is spent."""
    chosen = []
    for source in sorted(files, key=lambda s: (s.rel.count("/"), s.rel)):
        if not (source.is_code or source.suffix in (".yml", ".yaml")):
            continue
        budget -= len(source.text)
        if budget < 0:
            break
        chosen.append(source)
    return sorted(chosen, key=lambda s: s.rel)


def _wants_tree(track: str, source: Source) -> bool:
    """A skill's scripts and a server's tools are parsed whole: what a model passes them
    is followed to the sinks it reaches."""
    if track == "mcp_servers":
        return bool(TOOL_HINT.search(source.text)) or source.is_python
    return track == "skills" and source.is_python


def behavioural_report(track: str, files: list[Source], observed: object) -> dict:
    by_rel = {s.rel: s for s in files}
    facts = {
        s.rel: analyse_code(s, want_tree=_wants_tree(track, s))
        for s in _within_budget(files, BEHAVIOURAL_CODE_BYTES)
    }
    signals: list[Signal] = []
    for fact in facts.values():
        signals += action_signals(fact, track)
    tools: list[Tool] = []
    if track == "mcp_servers":
        manifests = [s for s in files if s.suffix == ".json" and len(s.text) < MAX_AST_BYTES]
        trees = {rel: fact.tree for rel, fact in facts.items()}
        tools = mcp_tools([fact.source for fact in facts.values()] + manifests, trees)
        signals += tool_code_signals(trees)
    tool_file_lines = {(t.file, t.line) for t in tools}
    signals += _context_signals(files, tool_file_lines, track)
    hidden = {(s.file, s.line) for s in signals if s.technique in ("unicode_tags", "zero_width")}
    signals += tool_signals(tools, hidden)
    evidence_extra: dict = {}
    if track == "packages":
        signals += _package_signals(files, by_rel, facts, evidence_extra)
        signals = _expected_of_purpose(signals, files, facts)
    if track == "skills":
        signals += prerequisite_signals(files)
        signals += _prose_command_signals(files)
        signals += skill_confinement_signals(files, {r: f.tree for r, f in facts.items()})
        if declares_scanning(files):
            signals = [_as_documented(s, by_rel) for s in signals]
    signals = [_as_documented(s, by_rel) if _is_record(s) else s for s in signals]
    signals += observed_signals(
        observed, track, " ".join(f"{t.name} {t.description}" for t in tools)
    )
    deceptive = deceptive_doc_signal(files, signals)
    if deceptive is not None:
        signals.append(deceptive)
    return _assemble(track, signals, facts, tools, observed, evidence_extra)


def _prose_command_signals(files: list[Source]) -> list[Signal]:
    """A skill's documents are code too where they have the agent run commands: a secret
    sent out, remote code planted to persist, root granted or a reverse shell. Setup steps
    (a service enabled, an installer piped to a shell) are weighed by prerequisite_signals."""
    signals = []
    for source in files:
        if not source.is_prose:
            continue
        facts = analyse_code(prose_commands(source))
        found = action_signals(facts, "skills")
        sends = any(s.category == "exfiltration" for s in found)
        runs = [e.line for e in facts.of("remote_exec")]
        remote_persistence = any(
            abs(e.line - line) <= 4 for e in facts.of("profile", "schedule") for line in runs
        )
        signals += [
            s
            for s in found
            if s.category in ("exfiltration", "privilege_escalation")
            or (s.category == "credential_theft" and sends)
            or (s.category == "persistence" and remote_persistence)
            or (s.category == "remote_code_execution" and facts.of("reverse_shell"))
        ]
    return signals


def _as_documented(signal: Signal, by_rel: dict[str, Source]) -> Signal:
    """A scanner's prose lists what it looks for: it weighs little (code is unchanged)."""
    source = by_rel.get(signal.file or "")
    if source is None or not source.is_prose or signal.weight <= DOCUMENTED_WEIGHT:
        return signal
    return replace(signal, weight=DOCUMENTED_WEIGHT)


DOCUMENTED_WEIGHT = 1.0
# A changelog records what changed ("the flag now ignores previous settings"); it is no
# instruction to an agent. Text hidden in it (tag characters, comments) still counts.
RECORD_FILE = re.compile(
    r"(?:^|/)(?:change[-_]?log|changes|history|news|release[-_]?notes?)(?:\.\w+)?$", re.I
)
HIDING = ("unicode", "zero_width", "bidi", "comment")


def _is_record(signal: Signal) -> bool:
    hidden = any(h in (signal.technique or "") for h in HIDING)
    return bool(signal.file and RECORD_FILE.search(signal.file)) and not hidden


# What a package says it is (its manifest's name, summary and description).
PURPOSE_FIELDS = re.compile(
    r"^(?:Name|Summary)\s*:\s*(.+)$|\b(?:name|description|summary)\s*[=:]\s*[\"']([^\"'\n]+)",
    re.M,
)
SSH_PURPOSE = re.compile(r"\b(?:ssh2?|sftp|scp)\b", re.I)
MANIFESTS = ("setup.py", "PKG-INFO", "pyproject.toml", "setup.cfg", "package.json")


def _expected_of_purpose(
    signals: list[Signal], files: list[Source], facts: dict[str, FileFacts]
) -> list[Signal]:
    """An SSH library's key reads for the host its caller names are its job; a file
    naming a host of its own is still theft."""
    purpose = " ".join(
        " ".join(m.groups(""))
        for source in files
        if source.base in MANIFESTS and source.rel.count("/") == 0
        for m in PURPOSE_FIELDS.finditer(source.text[:20000])
    )
    if not SSH_PURPOSE.search(purpose):
        return signals

    def own_host(rel: str | None) -> bool:
        fact = facts.get(rel or "")
        text = fact.source.text if fact else ""
        return fact is None or bool(fact.of("odd_host")) or bool(URL_OR_IP.search(text))

    return [
        s
        for s in signals
        if not (
            s.category in ("credential_theft", "exfiltration")
            and s.capability in ("READ_SSH_KEY", "OPEN_SOCKET")
            and not own_host(s.file)
        )
    ]


URL_OR_IP = re.compile(r"https?://[\w.-]+|[\"'](?:\d{1,3}\.){3}\d{1,3}[\"']")


def _package_signals(
    files: list[Source], by_rel: dict[str, Source], facts: dict[str, FileFacts], extra: dict
) -> list[Signal]:
    signals: list[Signal] = []
    manifest = find_manifest(files)
    hooks: list[dict] = []
    if manifest is not None:
        signals += supply_chain_signals(manifest)
        if manifest.ecosystem == "npm":
            signals += npm_hook_signals(manifest, by_rel, facts)
            hooks = manifest.hooks
    for source in files:
        if source.base == "setup.py" and source.rel in facts:
            signals += setup_hook_signals(source, facts[source.rel], hooks)
    signals += pth_signals(files)
    signals += content_signals(files)
    squat = typosquat_of(manifest.name) if manifest else None
    confusion = any(s.category == "dependency_confusion" for s in signals)
    extra["lifecycle"] = {"hooks": hooks}
    extra["supply_chain"] = {
        "ecosystem": manifest.ecosystem if manifest else None,
        "name": manifest.name if manifest else None,
        "version": manifest.version if manifest else None,
        "typosquat_of": squat,
        "dependency_confusion": confusion,
    }
    return signals


def _assemble(
    track: str,
    signals: list[Signal],
    facts: dict[str, FileFacts],
    tools: list[Tool],
    observed: object,
    extra: dict,
) -> dict:
    decision, risk, confidence = _decision(signals)
    findings = _dedupe_findings(signals) if decision != "ALLOW" else []
    capabilities = _capability_items(signals, facts, observed)
    injected = [
        {"file": s.file, "line": s.line, "technique": s.technique, "excerpt": s.excerpt}
        for s in signals
        if s.plane in ("context", "protocol") and s.technique
    ][:MAX_ITEMS]
    evidence: dict = {
        "action_plane": {"capabilities": capabilities},
        "context_plane": {"injected_instructions": injected},
    }
    if track == "mcp_servers":
        evidence["mcp_surface"] = {
            "tools": [
                {"name": t.name, "description_flags": t.flags, "file": t.file, "line": t.line}
                for t in tools
            ]
        }
    evidence.update(extra)
    ranked = sorted(signals, key=lambda s: (-s.weight, s.title))
    top = list(dict.fromkeys(s.title for s in ranked if s.weight >= 1))[:3]
    summary = f"{decision}: " + ("; ".join(top) if top else "no dangerous behaviour found")
    return {
        "verdict": {
            "decision": decision,
            "risk_score": risk,
            "confidence": confidence,
            "summary": summary[:400],
        },
        "evidence": evidence,
        "findings": findings,
        "policy": _policy(capabilities),
    }


def _policy(capabilities: list[dict]) -> dict:
    """A capability manifest a runtime could enforce: allow the benign, deny the rest."""
    benign = {
        "READ_FILE",
        "LIST_DIRECTORY",
        "READ_ENV",
        "RESOLVE_DNS",
        "FETCH_WEB",
        "CREATE_PROCESS",
    }
    seen = sorted({c["capability"] for c in capabilities})
    return {
        "allow": [c for c in seen if c in benign],
        "deny": [c for c in seen if c not in benign],
    }
