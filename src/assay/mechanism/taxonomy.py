"""The canonical capability taxonomy (DESIGN §7).

Every observed or reported action maps to one canonical capability carrying a
protection level; severity follows from the level. Aliases used by Phylax agents
are accepted and mapped, so their reports count unmodified.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from assay.mechanism.spec import Track


class Protection(StrEnum):
    NORMAL = "normal"
    DANGEROUS = "dangerous"
    SYSTEM = "system"
    REDACT = "redact"

    @property
    def severity(self) -> float:
        return _SEVERITY[self]


_SEVERITY = {
    Protection.NORMAL: 0.1,
    Protection.DANGEROUS: 0.6,
    Protection.SYSTEM: 0.85,
    Protection.REDACT: 1.0,
}

_LEVELS = {"n": Protection.NORMAL, "d": Protection.DANGEROUS, "s": Protection.SYSTEM}
_LEVELS["r"] = Protection.REDACT


@dataclass(frozen=True)
class Capability:
    name: str
    group: str
    protection: Protection

    @property
    def severity(self) -> float:
        return self.protection.severity


# group -> "NAME level [ALIAS ...]" entries, exactly the table of DESIGN §7.
_TABLE: dict[str, tuple[str, ...]] = {
    "Filesystem": (
        "READ_FILE n",
        "LIST_DIRECTORY n",
        "WRITE_FILE d",
        "DELETE_FILE d",
        "CHANGE_PERMISSIONS d",
        "WRITE_SHELL_PROFILE s",
    ),
    "Process and Execution": (
        "CREATE_PROCESS d",
        "EXEC_SHELL d",
        "EVAL_CODE d",
        "LOAD_NATIVE_CODE d",
        "START_REPL d",
        "RUN_CONTAINER s",
    ),
    "Network": (
        "RESOLVE_DNS n",
        "FETCH_WEB n",
        "POST_WEB d",
        "OPEN_SOCKET d",
        "LISTEN_PORT d",
        "EXFILTRATE_DATA r",
    ),
    "Secrets and Credentials": (
        "READ_SECRET r READ_SECRETS",
        "READ_ENV_SECRET r READ_ENV_SECRETS",
        "READ_SSH_KEY r",
        "READ_CLOUD_CREDENTIALS r",
        "READ_KEYCHAIN r",
        "WRITE_SECRET r WRITE_SECRETS",
    ),
    "Database": (
        "CONNECT_DB n DB_CONNECT",
        "QUERY_DB d DB_READ",
        "WRITE_DB d DB_WRITE",
        "DUMP_DB r DB_EXPORT",
    ),
    "Cryptography and Keys": (
        "ENCRYPT_DATA n",
        "GENERATE_KEY n",
        "SIGN_DATA d",
        "READ_PRIVATE_KEY r",
        "ACCESS_WALLET r",
        "SEND_TRANSACTION s",
    ),
    "System and Host": (
        "READ_ENV n",
        "SET_ENV_VAR d",
        "INSTALL_PACKAGE s",
        "SCHEDULE_JOB s",
        "ACCESS_DEVICE s",
        "MODIFY_HOSTS_FILE s",
        "ESCALATE_PRIVILEGE s",
    ),
    "Source and Repository": (
        "READ_REPOSITORY n READ_SOURCE_HISTORY",
        "CLONE_REPOSITORY n",
        "WRITE_REPOSITORY d",
        "COMMIT d",
        "PUSH_REMOTE s PUSH_COMMIT",
        "MODIFY_CI_WORKFLOW s",
        "MODIFY_GIT_HOOKS s",
    ),
    "Agent and Tooling": (
        "INVOKE_TOOL n",
        "SPAWN_SUBAGENT d DELEGATE_SUBAGENT",
        "CONNECT_MCP_SERVER d",
        "SHADOW_TOOL s TOOL_SHADOW",
        "MODIFY_POLICY s",
        "MODIFY_HOOKS s",
    ),
    "Context and Reasoning": (
        "LOAD_EXTERNAL_CONTENT d LOAD_EXTERNAL_CONTEXT",
        "INJECT_INSTRUCTION s",
        "OVERRIDE_SYSTEM_PROMPT s",
        "HIDE_INSTRUCTION s",
        "POISON_MEMORY s",
    ),
}


def _build() -> tuple[dict[str, Capability], dict[str, str]]:
    capabilities: dict[str, Capability] = {}
    aliases: dict[str, str] = {}
    for group, entries in _TABLE.items():
        for entry in entries:
            name, level, *alias_names = entry.split()
            capabilities[name] = Capability(name, group, _LEVELS[level])
            aliases.update({alias: name for alias in alias_names})
    return capabilities, aliases


_CAPABILITIES, _ALIASES = _build()

CAPABILITIES: Mapping[str, Capability] = MappingProxyType(_CAPABILITIES)
ALIASES: Mapping[str, str] = MappingProxyType(_ALIASES)
GROUPS: tuple[str, ...] = tuple(_TABLE)

# Which groups each track is expected to speak about. Every track may name any
# canonical capability; the vocabulary says which ones a track's evidence centres on.
_TRACK_GROUPS: dict[Track, tuple[str, ...]] = {
    Track.SKILLS: GROUPS,
    Track.MCP_SERVERS: GROUPS,
    Track.PACKAGES: tuple(g for g in GROUPS if g != "Context and Reasoning"),
    Track.REPOSITORIES: (
        "Filesystem",
        "Process and Execution",
        "Network",
        "Secrets and Credentials",
        "Database",
        "Source and Repository",
    ),
}

TRACK_VOCABULARY: Mapping[Track, frozenset[str]] = MappingProxyType(
    {
        track: frozenset(n for n, c in _CAPABILITIES.items() if c.group in groups)
        for track, groups in _TRACK_GROUPS.items()
    }
)


# The finding categories the corpus's labels use. A finding's category is free text,
# matched by its words (`credential_theft` ~ `credential-leak`), so any other is
# accepted; these are the ones an expected finding can carry.
FINDING_CATEGORIES: tuple[str, ...] = (
    "command_execution",
    "credential_theft",
    "dependency_confusion",
    "destructive",
    "evasion",
    "exfiltration",
    "install_hook",
    "obfuscation",
    "persistence",
    "prompt_injection",
    "remote_code_execution",
    "tool_poisoning",
    "tool_shadowing",
    "typosquat",
)


def normalise(name: object) -> str | None:
    """The canonical capability for a name or alias, or None when it is not one.

    Case, surrounding space and `-`/space separators are forgiven
    ("read-ssh-key" → READ_SSH_KEY); anything else outside the taxonomy is None.
    """
    if not isinstance(name, str):
        return None
    key = name.strip().upper().replace("-", "_").replace(" ", "_")
    if key in _CAPABILITIES:
        return key
    return _ALIASES.get(key)


def capability(name: str) -> Capability:
    """The capability for a canonical name or alias; KeyError when unknown."""
    canonical = normalise(name)
    if canonical is None:
        raise KeyError(name)
    return _CAPABILITIES[canonical]


def manifest_severity(names: Iterable[object]) -> float:
    """Severity of a capability manifest: the highest level among its known members.

    Unknown names are ignored; an empty manifest has severity 0.0.
    """
    levels = [_CAPABILITIES[c].severity for c in map(normalise, names) if c is not None]
    return max(levels, default=0.0)
