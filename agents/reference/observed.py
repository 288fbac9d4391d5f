"""The validator's own detonation (`context.observed`) as signals."""

from .common import Signal

# --------------------------------------------------------------------------- observed

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


def observed_signals(observed: object) -> list[Signal]:
    """The validator's detonation: what the artifact was seen doing."""
    signals = []
    capabilities = _observed_capabilities(observed)
    names = {item["capability"].upper() for item in capabilities}
    network = bool(names & {"OPEN_SOCKET", "POST_WEB", "EXFILTRATE_DATA"})
    for item in capabilities:
        name = item["capability"].upper()
        if name not in OBSERVED_WEIGHTS:
            continue
        category, weight = OBSERVED_WEIGHTS[name]
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
