"""Syscall-level events of one profile run → canonical capabilities with evidence.

The harness's own activity is left out: its exec and the steps it started
(exact planned argv), and writes under the prefixes it owns (staging, copies,
install targets) or to the placeholder files it created.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from assay.detonate.canaries import CANARY_FILES, HOME, CanarySet, canary_named
from assay.detonate.model import Evidence
from assay.detonate.wire import Egress, HarnessLog, McpCall, StepLog
from assay.sandbox.interface import Peer, TraceSummary

_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "fish", "ash"}
_NETWORK_TOOLS = {"curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "ftp", "telnet"}
_POST_FLAGS = (
    *("-d", "--data", "--data-binary", "--data-raw", "--data-urlencode", "-F", "--form"),
    *("-T", "--upload-file", "--post-data", "--post-file", "--json"),
)
_IGNORED_PREFIXES = ("/dev/", "/proc/", "/sys/")
_SHELL_PROFILES = {
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".config/fish/config.fish",
}
# Writes that make something run later, relative to HOME or absolute.
_SCHEDULERS = (
    re.compile(r"^~/\.config/systemd/user/"),
    re.compile(r"^~/\.config/autostart/"),
    re.compile(r"^~/Library/LaunchAgents/"),
    re.compile(r"^/etc/systemd/"),
    re.compile(r"^/(etc/cron|var/spool/cron)"),
    re.compile(r"^/etc/crontab$"),
)
# Secret-looking reads beyond the planted canaries (attempts count: the file may be absent).
_SECRET_READS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^~/\.ssh/[^/]*\.pub$"), ""),  # public keys are public
    (re.compile(r"^~/\.ssh/(id_[^/]*|[^/]*_key)$"), "READ_SSH_KEY"),
    (re.compile(r"^~/\.(aws|azure)/"), "READ_CLOUD_CREDENTIALS"),
    (re.compile(r"^~/\.config/gcloud/"), "READ_CLOUD_CREDENTIALS"),
    (re.compile(r"^~/\.kube/config$"), "READ_CLOUD_CREDENTIALS"),
    (re.compile(r"^~/\.(git-credentials|netrc|npmrc|pypirc|pgpass|env)$"), "READ_SECRET"),
    (re.compile(r"^~/\.docker/config\.json$"), "READ_SECRET"),
    (
        re.compile(r"^~/\.config/(google-chrome|chromium|BraveSoftware)/.*/(Cookies|Login Data)$"),
        "READ_SECRET",
    ),
    (re.compile(r"^~/\.mozilla/firefox/.*(cookies\.sqlite|logins\.json|key4\.db)$"), "READ_SECRET"),
    (re.compile(r"^~/\.local/share/keyrings/"), "READ_KEYCHAIN"),
    (re.compile(r"^~/\.(bitcoin|ethereum|electrum|monero)/"), "ACCESS_WALLET"),
    (re.compile(r"^~/\.config/solana/"), "ACCESS_WALLET"),
    (re.compile(r"^~/\.gnupg/(private-keys|secring)"), "READ_PRIVATE_KEY"),
    (re.compile(r"^/etc/(shadow|gshadow|sudoers)"), "READ_SECRET"),
)


@dataclass(frozen=True)
class Attribution:
    """What belongs to the harness in one profile run, and the canaries it planted."""

    profile: str
    canaries: CanarySet
    harness_argvs: frozenset[tuple[str, ...]]
    harness_prefixes: tuple[str, ...]
    harness_files: frozenset[str]
    runner_programs: tuple[str, ...] = ()  # the pinned runner's own helpers (esbuild)
    runner_scripts: tuple[str, ...] = ()  # an installer's helper scripts (argv[1])

    def is_harness_write(self, path: str) -> bool:
        return path in self.harness_files or path.startswith(self.harness_prefixes)

    def is_harness_exec(self, argv: tuple[str, ...]) -> bool:
        own = bool(argv) and bool(self.runner_programs) and argv[0].startswith(self.runner_programs)
        helper = (
            len(argv) > 1 and bool(self.runner_scripts) and argv[1].startswith(self.runner_scripts)
        )
        return argv in self.harness_argvs or own or helper


def home_relative(path: str) -> str:
    """`~/...` for paths inside the fake home, the normalised path otherwise."""
    path = posixpath.normpath(path) if path.startswith("/") else path
    if path == HOME or path.startswith(HOME + "/"):
        return "~" + path[len(HOME) :]
    return path


def secret_read_capability(path: str) -> str | None:
    shown = home_relative(path)
    for pattern, capability in _SECRET_READS:
        if pattern.search(shown):
            return capability or None
    if not shown.startswith("/"):  # relative: e.g. opened after chdir(~/.ssh)
        for item in CANARY_FILES:
            if shown == item.relpath or item.relpath.endswith("/" + shown.lstrip("./")):
                return item.capability
    return None


def write_capability(path: str) -> str:
    shown = home_relative(path)
    relative = shown[2:] if shown.startswith("~/") else None
    if relative in _SHELL_PROFILES:
        return "WRITE_SHELL_PROFILE"
    if any(p.search(shown) for p in _SCHEDULERS):
        return "SCHEDULE_JOB"
    if "/.git/hooks/" in shown:
        return "MODIFY_GIT_HOOKS"
    if "/.github/workflows/" in shown or shown.endswith(".gitlab-ci.yml"):
        return "MODIFY_CI_WORKFLOW"
    if shown == "/etc/hosts":
        return "MODIFY_HOSTS_FILE"
    if shown.startswith("~/.ssh/") or shown.startswith("~/.aws/"):
        return "WRITE_SECRET"
    return "WRITE_FILE"


def exec_capabilities(argv: tuple[str, ...]) -> list[tuple[str, str]]:
    """(capability, detail) pairs one exec stands for."""
    if not argv:
        return []
    program = posixpath.basename(argv[0])
    words = argv[1:]
    out: list[tuple[str, str]] = []
    if program in _SHELLS:
        out.append(("EXEC_SHELL", "shell command" if "-c" in words else "shell"))
    else:
        out.append(("CREATE_PROCESS", program))
    out.extend(_intent(program, words))
    return out


def _intent(program: str, words: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    joined = " ".join(words)
    pip = program in ("pip", "pip3") or (program.startswith("python") and "-m pip" in joined)
    if pip and "install" in words:
        yield ("INSTALL_PACKAGE", "pip install")
    if program in ("npm", "yarn", "pnpm") and any(w in ("install", "i", "add") for w in words):
        yield ("INSTALL_PACKAGE", f"{program} install")
    if program in ("apt", "apt-get", "dnf", "yum", "apk") and "install" in words:
        yield ("INSTALL_PACKAGE", f"{program} install")
    if program == "git":
        verb = _git_verb(words)
        git = {"push": "PUSH_REMOTE", "commit": "COMMIT", "clone": "CLONE_REPOSITORY"}
        if verb in git:
            yield (git[verb], f"git {verb}")
    if program == "crontab" or (program == "systemctl" and "enable" in words):
        yield ("SCHEDULE_JOB", program)
    if program in ("chmod", "chown", "setfacl"):
        yield ("CHANGE_PERMISSIONS", program)
    if program in ("sudo", "su", "doas", "pkexec"):
        yield ("ESCALATE_PRIVILEGE", program)
    if program in ("docker", "podman") and "run" in words:
        yield ("RUN_CONTAINER", f"{program} run")
    if program in ("curl", "wget"):
        posting = any(w.startswith(_POST_FLAGS) for w in words) or "POST" in words
        yield ("POST_WEB", f"{program} upload") if posting else ("FETCH_WEB", program)


def _git_verb(words: tuple[str, ...]) -> str:
    """git's subcommand, past global options (some of which take a value)."""
    takes_value = {"-C", "-c", "--git-dir", "--work-tree", "--namespace"}
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in takes_value:
            skip = True
        elif not word.startswith("-"):
            return word
    return ""


def _external(peer: Peer) -> bool:
    if peer.family not in ("inet", "inet6") or not peer.address:
        return False
    loopback = peer.address.startswith("127.") or peer.address in ("::1", "0.0.0.0", "::")
    return not loopback


def _peer_text(peer: Peer) -> str:
    return f"{peer.address}:{peer.port}" if peer.port is not None else peer.address


def map_trace(trace: TraceSummary, who: Attribution) -> list[Evidence]:
    found: list[Evidence] = []
    found += _reads(trace.reads, who)
    found += _writes(trace, who)
    found += _execs(trace.execs, who)
    found += _network(trace, who)
    return found


def _reads(paths: Iterable[str], who: Attribution) -> Iterator[Evidence]:
    for path in paths:
        capability = secret_read_capability(path)
        if capability is not None:
            yield Evidence(capability, who.profile, "read", path=home_relative(path))


def _writes(trace: TraceSummary, who: Attribution) -> Iterator[Evidence]:
    written = [(p, "write") for p in trace.writes] + [(dst, "rename") for _, dst in trace.renames]
    for path, event in written:
        if who.is_harness_write(path) or path.startswith(_IGNORED_PREFIXES):
            continue
        yield Evidence(write_capability(path), who.profile, event, path=home_relative(path))
    for path in trace.unlinks:
        if not (who.is_harness_write(path) or path.startswith(_IGNORED_PREFIXES)):
            yield Evidence("DELETE_FILE", who.profile, "unlink", path=home_relative(path))


def _execs(execs: Iterable[tuple[str, ...]], who: Attribution) -> Iterator[Evidence]:
    for argv in execs:
        if who.is_harness_exec(argv):
            continue
        for capability, detail in exec_capabilities(argv):
            yield Evidence(capability, who.profile, "exec", argv=argv, detail=detail)
        leaked = who.canaries.names_in("\0".join(argv))
        for name in leaked:
            yield from _leak(name, who.profile, "exec", argv=argv, outbound=_is_network(argv))


def _is_network(argv: tuple[str, ...]) -> bool:
    """A network tool, or a shell command line that runs one (`echo $KEY | curl -d @- ...`)."""
    if not argv:
        return False
    program = posixpath.basename(argv[0])
    if program in _SHELLS and "-c" in argv:
        command = argv[argv.index("-c") + 1] if argv.index("-c") + 1 < len(argv) else ""
        return any(
            posixpath.basename(w) in _NETWORK_TOOLS for w in re.split(r"[\s|;&()]+", command)
        )
    return program in _NETWORK_TOOLS


def _network(trace: TraceSummary, who: Attribution) -> Iterator[Evidence]:
    for peer in trace.connects:
        if _external(peer):
            yield Evidence("OPEN_SOCKET", who.profile, "connect", peer=_peer_text(peer))
    for name in trace.dns_queries:
        yield Evidence("RESOLVE_DNS", who.profile, "dns", peer=name.rstrip("."))
        for leaked in who.canaries.names_in(name):
            yield from _leak(leaked, who.profile, "dns", peer=name, outbound=True)


def _leak(
    name: str,
    profile: str,
    event: str,
    *,
    argv: tuple[str, ...] = (),
    peer: str = "",
    path: str = "",
    outbound: bool = False,
    source: str = "trace",
) -> Iterator[Evidence]:
    """A canary value seen where it should not be: which secret it came from, and
    whether it was on its way out."""
    detail = f"canary {name} appeared"
    if name.startswith("env:"):
        yield Evidence("READ_ENV_SECRET", profile, event, path, argv, peer, detail, source)
    else:
        item = canary_named(name)
        if item is not None:
            yield Evidence(item.capability, profile, event, path, argv, peer, detail, source)
    if outbound:
        yield Evidence("EXFILTRATE_DATA", profile, event, path, argv, peer, detail, source)


def _records(log: HarnessLog) -> Iterator[tuple[str, StepLog | McpCall]]:
    """Each step record and each MCP call record of a harness log, with where it happened."""
    for step in log.steps:
        where = f"step {step.name}"
        yield where, step
        for call in step.mcp.calls if step.mcp is not None else ():
            yield f"{where}, tool {call.tool}", call


def map_harness(log: HarnessLog, profile: str) -> list[Evidence]:
    """What the harness saw: canary values in files the artifact wrote, and what its
    redirected connections carried (HTTP requests, canary values)."""
    return [e for where, record in _records(log) for e in harness_evidence(record, where, profile)]


def harness_evidence(record: StepLog | McpCall, where: str, profile: str) -> list[Evidence]:
    """What the harness saw after one step or tool call (`where` names it)."""
    found: list[Evidence] = []
    for hit in record.canary_hits:
        path = home_relative(hit.path)
        for e in _leak(hit.canary, profile, "canary_in_file", path=path):
            found.append(replace(e, detail=f"{e.detail} ({where})", source="harness"))
    for egress in record.egress:
        found += _egress(egress, where, profile)
    return found


def _egress(egress: Egress, where: str, profile: str) -> list[Evidence]:
    peer = egress.peer
    found: list[Evidence] = []
    if egress.http_method in ("POST", "PUT", "PATCH"):
        detail = f"{egress.request_line} with {egress.size} bytes ({where})"
        found.append(
            Evidence("POST_WEB", profile, "send", peer=peer, detail=detail, source="harness")
        )
    for name in egress.canaries:
        for e in _leak(name, profile, "send", peer=peer, outbound=True):
            found.append(replace(e, detail=f"{e.detail} in data sent ({where})", source="harness"))
    return found


def map_uploads(
    execs: Iterable[tuple[str, ...]], log: HarnessLog, who: Attribution
) -> list[Evidence]:
    """A network tool handed a file the harness found canary values in: the secret is
    on its way out (e.g. `curl --data-binary @~/.cache/stash`), even though the sandbox
    has no network for it to arrive anywhere."""
    loaded = _canary_files(log)
    found: list[Evidence] = []
    for argv in execs:
        if who.is_harness_exec(argv) or not _is_network(argv):
            continue
        for word in argv[1:]:
            path = word.partition("=")[2] if word.startswith("--") else word
            for name in loaded.get(path.lstrip("@"), ()):
                detail = f"uploads {home_relative(path.lstrip('@'))}, which holds canary {name}"
                found.append(
                    Evidence("EXFILTRATE_DATA", who.profile, "exec", argv=argv, detail=detail)
                )
    return found


def _canary_files(log: HarnessLog) -> dict[str, list[str]]:
    """Sandbox path → canary names the harness found in it."""
    out: dict[str, list[str]] = {}
    for _, record in _records(log):
        for hit in record.canary_hits:
            out.setdefault(hit.path, []).append(hit.canary)
    return out
