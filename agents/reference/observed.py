"""The validator's own detonation (`context.observed`) as signals: what the artifact did
decides over what its code looks like; what the package manager does for itself does not."""

import re
from dataclasses import replace

from .common import Signal

OBSERVED_WEIGHTS = {
    "READ_SSH_KEY": ("credential_theft", 6.0),
    "READ_CLOUD_CREDENTIALS": ("credential_theft", 6.0),
    "READ_PRIVATE_KEY": ("credential_theft", 6.0),
    "ACCESS_WALLET": ("credential_theft", 6.0),
    "READ_KEYCHAIN": ("credential_theft", 6.0),
    "READ_SECRET": ("credential_theft", 3.0),
    "READ_ENV_SECRET": ("credential_theft", 1.0),
    "EXFILTRATE_DATA": ("exfiltration", 6.0),
    "WRITE_SHELL_PROFILE": ("persistence", 7.0),
    "SCHEDULE_JOB": ("persistence", 7.0),
    "MODIFY_GIT_HOOKS": ("persistence", 6.0),
    "MODIFY_HOOKS": ("persistence", 5.0),
    "MODIFY_CI_WORKFLOW": ("persistence", 5.0),
    "MODIFY_HOSTS_FILE": ("persistence", 5.0),
    "ESCALATE_PRIVILEGE": ("privilege_escalation", 5.0),
    "SHADOW_TOOL": ("tool_shadowing", 6.0),
    "INSTALL_PACKAGE": ("remote_code_execution", 2.0),
    "SEND_TRANSACTION": ("credential_theft", 6.0),
}
OBSERVED_TITLES = {
    "credential_theft": "Detonation read secrets",
    "exfiltration": "Detonation sent secret data to a remote host",
    "persistence": "Detonation installed persistence",
}


def _observed_capabilities(observed: object) -> list[dict]:
    if not isinstance(observed, dict):
        return []
    items = observed.get("capability_evidence")
    if not isinstance(items, list):
        items = observed.get("capabilities")
    if not isinstance(items, list):
        return []
    out = []
    for item in items[:256]:
        if isinstance(item, dict) and isinstance(item.get("capability"), str):
            out.append(item)
        elif isinstance(item, str):
            out.append({"capability": item})
    return out


def _evidence_text(item: dict) -> str:
    evidence = item.get("evidence")
    if isinstance(evidence, dict):
        keys = ("path", "argv", "peer", "event", "profile")
        return " ".join(str(evidence.get(k)) for k in keys if evidence.get(k))[:200]
    if isinstance(evidence, list):
        return " ".join(str(e) for e in evidence[:3])[:200]
    return str(evidence or "")[:200]


NETWORK_TOOL = re.compile(
    r"(?:^|[\s/;|&(`'\"])(curl|wget|nc|ncat|netcat|socat|dig|nslookup|telnet|ftp|scp|ssh|"
    r"Invoke-WebRequest|iwr|certutil)(?=$|[\s;|&)`'\"])"
)
FINGERPRINT = re.compile(
    r"\$\(\s*(?:hostname|whoami|id|uname|pwd|ifconfig|ip\s+a)|`\s*(?:hostname|whoami|id|uname)|"
    r"(?:^|[\s/;|&])(?:whoami|hostname|uname\s+-a|ifconfig)(?=$|[\s;|&])"
)
SYSTEM_WRITE = re.compile(r"^/(?:usr|etc|bin|sbin|lib|lib64|opt|boot|var/lib)/")
CLIENT_CONFIG = {"~/.npmrc": "npm", "~/.yarnrc": "yarn", "~/.pypirc": "pip", "~/.netrc": ""}
PACKAGE_CLIENT = re.compile(r"(?:^|[\s/])(?:pip3?|npm|yarn|easy_install)(?:\s|$)|-m pip\b")
# The package indexes the clients fetch from: a lookup of one is the client's own doing
# (npm checking for updates, pip resolving a build requirement), not the artifact's.
PACKAGE_INDEX = re.compile(
    r"^(?:registry\.npmjs\.org|registry\.yarnpkg\.com|pypi\.org|files\.pythonhosted\.org)"
    r"(?::\d+)?$"
)
LOOPBACK = re.compile(r"^(?:inet6?:)?(?:127\.|::1|\[::1\]|localhost|0\.0\.0\.0|netlink|unix|local)")


def _evidence_items(item: dict) -> list[dict]:
    evidence = item.get("evidence")
    if isinstance(evidence, dict):
        return [evidence]
    if isinstance(evidence, list):
        return [e for e in evidence[:64] if isinstance(e, dict)]
    return []


def _commands(observed: dict, capabilities: list[dict]) -> list[str]:
    """Every command line the artifact started, as text (the harness's own are left out
    by the validator already)."""
    found = []
    events = observed.get("events")
    if isinstance(events, dict) and isinstance(events.get("execs"), list):
        found += [str(e)[:2000] for e in events["execs"][:256]]
    for item in capabilities:
        for evidence in _evidence_items(item):
            argv = evidence.get("argv")
            if isinstance(argv, list) and argv:
                found.append(" ".join(str(a) for a in argv[:64])[:2000])
    return list(dict.fromkeys(found))


def _peers(observed: dict, capabilities: list[dict]) -> list[str]:
    """Hosts the artifact looked up or connected to, loopback and local sockets left out."""
    peers = []
    events = observed.get("events")
    for kind in ("dns", "connects"):
        values = events.get(kind) if isinstance(events, dict) else None
        peers += [str(v) for v in (values or [])[:256]]
    for item in capabilities:
        if str(item.get("capability", "")).upper() in ("RESOLVE_DNS", "OPEN_SOCKET"):
            peers += [str(e.get("peer")) for e in _evidence_items(item) if e.get("peer")]
    return [p for p in dict.fromkeys(peers) if p and not LOOPBACK.match(p)]


def _behaviour_signals(observed: dict, capabilities: list[dict]) -> list[Signal]:
    """Install-time behaviour no honest package shows, read from the raw detonation."""
    signals = []
    commands = _commands(observed, capabilities)
    tool = next((c for c in commands if NETWORK_TOOL.search(c)), None)
    fingerprint = next((c for c in commands if FINGERPRINT.search(c)), None)
    peers = _peers(observed, capabilities)
    if tool is not None:
        what = "fingerprints the machine and " if fingerprint else ""
        signals.append(
            _observed_signal(
                "exfiltration",
                f"Detonation: the artifact {what}runs a network tool ({_short(tool)})",
                8.0 if fingerprint else 6.0,
                "EXEC_SHELL",
                tool,
            )
        )
    elif fingerprint is not None:
        signals.append(
            _observed_signal(
                "reconnaissance",
                f"Detonation: the artifact fingerprints the machine ({_short(fingerprint)})",
                3.0 + (3.0 if peers else 0.0),
                "CREATE_PROCESS",
                fingerprint,
            )
        )
    if peers and tool is None:
        # setuptools fetching build requirements runs pip, which looks up the index: the
        # build's doing, not the package's, when pip or npm is all the artifact started.
        fetcher = bool(commands) and all(PACKAGE_CLIENT.search(c) for c in commands)
        fetcher = fetcher or all(PACKAGE_INDEX.match(p) for p in peers)
        signals.append(
            _observed_signal(
                "network",
                f"Detonation: the artifact reached out to {_short(peers[0])}",
                1.5 if fetcher else 3.0,
                "OPEN_SOCKET",
                " ".join(peers[:4]),
            )
        )
    for item in capabilities:
        for evidence in _evidence_items(item):
            path = str(evidence.get("path") or "")
            if evidence.get("event") == "write" and SYSTEM_WRITE.match(path):
                title = f"Detonation: the artifact rewrote a system file ({_short(path)})"
                return [*signals, _observed_signal("persistence", title, 7.0, "WRITE_FILE", path)]
    return signals


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def _observed_signal(category: str, title: str, weight: float, capability: str, excerpt: str):
    return Signal(
        category,
        "HIGH" if weight >= 5 else "MED",
        "action",
        title,
        None,
        None,
        weight,
        capability,
        excerpt=excerpt[:200],
    )


def _client_read(item: dict, commands: list[str]) -> bool:
    """A package manager reading its own configuration (npm and ~/.npmrc), as it does
    whenever the artifact's own lifecycle script runs it."""
    paths = [str(e.get("path") or "") for e in _evidence_items(item)]
    clients = {CLIENT_CONFIG.get(p) for p in paths}
    if not paths or None in clients:
        return False
    return all(
        client and any(re.search(rf"(?:^|[\s/]){client}(?:\s|$)", c) for c in commands)
        for client in clients
    )


# Tools that say they run things: a shell under them is their job.
RUNS_COMMANDS = re.compile(
    r"\b(?:commands?|shell|terminal|exec\w*|run(?:s|ning)?|scripts?|process(?:es)?|git|build|"
    r"compile|tests?|docker|kubectl|npm|pip|install|deploy|ssh|cli)\b",
    re.I,
)
# A shell that starts the server itself (`sh -c "node dist/index.js"`), not one it runs.
LAUNCHER = re.compile(r"^(?:exec\s+)?(?:node|python3?|npx|npm|uvx?|tsx|deno|bun|pnpm|yarn)\b")


def _served_shells(capabilities: list[dict]) -> list[str]:
    commands = [
        " ".join(str(a) for a in argv[2:3]) if argv[1:2] == ["-c"] else " ".join(map(str, argv))
        for item in capabilities
        if item["capability"].upper() == "EXEC_SHELL"
        for evidence in _evidence_items(item)
        if isinstance(argv := evidence.get("argv"), list) and argv
    ]
    return [c for c in commands if not LAUNCHER.match(c.strip())]


# Tools that say they talk to the network: a post out is their job.
USES_NETWORK = re.compile(
    r"\b(?:https?|web\w*|urls?|api|fetch\w*|download\w*|upload\w*|search\w*|send\w*|post\w*|"
    r"e-?mail|slack|github|gitlab|remote|cloud|request\w*|online|weather|browser|notif\w*)\b",
    re.I,
)


def _serving_signals(capabilities: list[dict], purpose: str) -> list[Signal]:
    """An MCP server seen starting a shell, or posting out, while driven: weighty when none
    of its tools says it does so; a shell is a hint when one does and it also wrote files."""
    posts = [item for item in capabilities if item["capability"].upper() == "POST_WEB"]
    signals = []
    if posts and not USES_NETWORK.search(purpose):
        title = "Detonation: the server posted data out though none of its tools uses the network"
        signals.append(
            _observed_signal("exfiltration", title, 6.0, "POST_WEB", _evidence_text(posts[0]))
        )
    return signals + _shell_signals(capabilities, purpose)


def _shell_signals(capabilities: list[dict], purpose: str) -> list[Signal]:
    shells = _served_shells(capabilities)
    if not shells:
        return []
    if not RUNS_COMMANDS.search(purpose):
        title = "Detonation: the server started a shell none of its tools says it runs"
        return [_observed_signal("command_injection", title, 6.0, "EXEC_SHELL", shells[0])]
    if "WRITE_FILE" not in {item["capability"].upper() for item in capabilities}:
        return []
    title = "Detonation: the server started a shell and wrote files while it was driven"
    return [_observed_signal("command_injection", title, 4.0, "EXEC_SHELL", shells[0])]


def _observed_tools(observed: dict) -> str:
    """Names and descriptions of the tools the detonation listed."""
    mcp = observed.get("mcp")
    tools = mcp.get("tools") if isinstance(mcp, dict) else None
    return " ".join(
        f"{t.get('name', '')} {t.get('description', '')}"[:2000]
        for t in (tools if isinstance(tools, list) else [])[:128]
        if isinstance(t, dict)
    )


def _from_the_index(observed: object, capabilities: list[dict]) -> bool:
    """Every host reached is a public package index (declared dependencies)."""
    if not isinstance(observed, dict):
        return False
    peers = _peers(observed, capabilities)
    return all(PACKAGE_INDEX.match(p.split(":")[0] if p.count(":") == 1 else p) for p in peers)


def observed_signals(observed: object, track: str = "", purpose: str = "") -> list[Signal]:
    """The validator's detonation: what the artifact was seen doing (`purpose`: what an MCP
    server's tools say they do)."""
    signals = []
    capabilities = _observed_capabilities(observed)
    if track == "mcp_servers" and isinstance(observed, dict):
        purpose = f"{purpose} {_observed_tools(observed)}"
        signals += _serving_signals(capabilities, purpose)
    commands = _commands(observed, capabilities) if isinstance(observed, dict) else []
    names = {item["capability"].upper() for item in capabilities}
    network = bool(names & {"OPEN_SOCKET", "POST_WEB", "EXFILTRATE_DATA"})
    if isinstance(observed, dict):
        behaviour = _behaviour_signals(observed, capabilities)
        if track == "mcp_servers" and USES_NETWORK.search(purpose):
            # A server whose tools fetch and post reaching a host is doing its job.
            behaviour = [
                replace(s, weight=1.5) if s.category == "network" else s for s in behaviour
            ]
        signals += behaviour
    for item in capabilities:
        name = item["capability"].upper()
        if name not in OBSERVED_WEIGHTS:
            continue
        if name == "READ_SECRET" and _client_read(item, commands):
            continue
        category, weight = OBSERVED_WEIGHTS[name]
        if name == "INSTALL_PACKAGE" and _from_the_index(observed, capabilities):
            weight = 0.5  # the artifact's declared dependencies, from the public index
        if name in ("READ_SECRET", "READ_ENV_SECRET") and network:
            weight += 2.0  # a secret read is only damning next to egress
        profile = ""
        evidence = item.get("evidence")
        if isinstance(evidence, dict) and evidence.get("profile"):
            profile = f" (under {evidence['profile']})"
        signals.append(
            Signal(
                category,
                "HIGH" if weight >= 5 else "MED",
                "action",
                f"{OBSERVED_TITLES.get(category, 'Detonation observed')}: "
                f"{name.lower().replace('_', ' ')}{profile}",
                None,
                None,
                weight,
                name,
                excerpt=_evidence_text(item),
            )
        )
    return signals
