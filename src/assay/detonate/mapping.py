"""Syscall-level events of one profile run → canonical capabilities with evidence.

The harness's own activity is left out: its exec and the steps it started
(exact planned argv), writes under the prefixes of its own scratch (staging, install
targets) or to the placeholder files it created, and what only the installer's own
processes wrote (told by the process that wrote it, not by where).
"""

from __future__ import annotations

import functools
import hashlib
import posixpath
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from assay.detonate.canaries import (
    CANARY_FILES,
    HOME,
    SHELL_PROFILES,
    CanarySet,
    canary_at,
    canary_named,
)
from assay.detonate.model import Evidence
from assay.detonate.wire import Egress, HarnessLog, McpCall, StepLog
from assay.sandbox.interface import Executed, HomeEvent, Link, Peer, TraceSummary
from assay.sandbox.paths import resolved

_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "fish", "ash"}
_NETWORK_TOOLS = {"curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "ftp", "telnet"}
_POST_FLAGS = (
    *("-d", "--data", "--data-binary", "--data-raw", "--data-urlencode", "-F", "--form"),
    *("-T", "--upload-file", "--post-data", "--post-file", "--json"),
)
_IGNORED_PREFIXES = ("/dev/", "/proc/", "/sys/")
_LINK_HOPS = 8  # links followed from one path, at most (the kernel's own limit is 40)
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
    # The installer's own processes, which run none of the artifact's code (npm itself,
    # node-gyp): what they alone write is the installer's, wherever it is.
    installer_argvs: frozenset[tuple[str, ...]] = frozenset()
    installer_scripts: tuple[str, ...] = ()  # argv[1] of the installer's own helpers

    def is_harness_write(self, path: str) -> bool:
        return path in self.harness_files or path.startswith(self.harness_prefixes)

    def installer_paths(self, trace: TraceSummary) -> frozenset[str]:
        """The paths only the installer's own processes were seen writing (a path
        anything else wrote, or whose writer is unknown, is not among them)."""
        mine: dict[str, bool] = {}
        for path, argv in trace.written_by:
            own = argv in self.installer_argvs or (
                len(argv) > 1
                and bool(self.installer_scripts)
                and argv[1].startswith(self.installer_scripts)
            )
            mine[path] = mine.get(path, True) and own
        return frozenset(path for path, own in mine.items() if own)

    def is_harness_exec(self, argv: tuple[str, ...], file: str | None = None) -> bool:
        """A step the harness started, or the runner's own helper; `file`, when known,
        must be the program argv[0] names (an artifact may reuse a step's argv)."""
        if file is not None and argv and posixpath.basename(file) != posixpath.basename(argv[0]):
            return False
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


# Pure functions of a path, asked again for every list a path is in (evidence, the
# events' ranking): a flood of distinct paths is capped upstream, so the cache is too.
@functools.lru_cache(maxsize=4096)
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


@functools.lru_cache(maxsize=4096)
def write_capability(path: str) -> str:
    shown = home_relative(path)
    relative = shown[2:] if shown.startswith("~/") else None
    if relative in SHELL_PROFILES:
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


def exec_capabilities(argv: tuple[str, ...], file: str | None = None) -> list[tuple[str, str]]:
    """(capability, detail) pairs one exec stands for: the program is the file the
    kernel ran when it is known (argv[0] is whatever the caller chose)."""
    if not argv:
        return []
    program = posixpath.basename(file or argv[0])
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


class _Links:
    """The links the traced tree made, followed the way the kernel would: a path
    through a symlink (or one that is a hard link) is the file it reaches."""

    def __init__(self, links: Iterable[Link]) -> None:
        self.targets = {link.path: link.target for link in links}

    def follow(self, path: str) -> str:
        for _ in range(_LINK_HOPS):
            hop = self._hop(path)
            if hop is None:
                return path
            path = hop
        return path

    def _hop(self, path: str) -> str | None:
        at = path
        while at not in ("/", ""):
            if at in self.targets:
                return resolved(self.targets[at] + path[len(at) :])
            at = posixpath.dirname(at)
        return None

    def shown(self, path: str) -> tuple[str, str]:
        """The path an access reached, and a note naming the link it went through."""
        target = self.follow(path)
        if target == path:
            return path, ""
        return target, f"through a link: {home_relative(path)}"


def map_trace(trace: TraceSummary, who: Attribution) -> list[Evidence]:
    links = _Links(trace.links)
    found: list[Evidence] = []
    found += _reads(trace.reads, who, links)
    found += _writes(trace, who, links)
    found += _execs(trace.executed, who, links)
    found += _network(trace, who)
    return found


def _reads(paths: Iterable[str], who: Attribution, links: _Links) -> Iterator[Evidence]:
    for path in paths:
        target, detail = links.shown(path)
        capability = secret_read_capability(target)
        if capability is not None:
            yield Evidence(
                capability, who.profile, "read", path=home_relative(target), detail=detail
            )


def _writes(trace: TraceSummary, who: Attribution, links: _Links) -> Iterator[Evidence]:
    written = [(p, "write") for p in trace.writes] + [(dst, "rename") for _, dst in trace.renames]
    written += [(p, "unlink") for p in trace.unlinks]
    installer = who.installer_paths(trace)
    for path, event in written:
        if who.is_harness_write(path) or path in installer or path.startswith(_IGNORED_PREFIXES):
            continue
        # Removing a link removes the link, not its target.
        target, detail = links.shown(path) if event != "unlink" else (path, "")
        capability = write_capability(target) if event != "unlink" else "DELETE_FILE"
        shown = home_relative(target)
        yield Evidence(capability, who.profile, event, path=shown, detail=detail)


def map_home(
    events: Iterable[HomeEvent], profile: str, known: Iterable[Evidence] = ()
) -> list[Evidence]:
    """What the kernel's watch on the planted home saw, whatever path was used: a
    secret read or changed, a shell profile written or made. What `known` evidence
    already shows (the same capability at the same path) is not repeated."""
    seen = {(e.capability, e.path) for e in known}
    found: list[Evidence] = []
    for event in events:
        item = canary_at(event.path)
        shown = home_relative(event.path)
        detail = "seen by the watch on the home" + (f" ({event.flags})" if event.flags else "")
        if item is not None and event.event == "read":
            capability = item.capability
        elif item is not None and event.event in ("write", "deleted", "moved"):
            capability = "WRITE_SECRET"
        elif event.event in ("write", "created", "deleted", "moved"):
            capability = write_capability(event.path)
            if capability != "WRITE_SHELL_PROFILE":
                continue  # the trace names the rest, with its process's view
        else:
            continue  # attributes or another name: how, not what, it was reached
        if (capability, shown) in seen:
            continue
        found.append(
            Evidence(capability, profile, event.event, path=shown, detail=detail, source="watch")
        )
    return found


# Host programs an artifact may copy under another name (`cp /usr/bin/curl updater`):
# the sandbox shows the host's /usr, so a copy has the same content as one of these.
_KNOWN_DIRS = ("/usr/bin", "/usr/sbin")


@functools.cache
def _programs_by_content() -> dict[str, str]:
    """sha256 -> name of the host's shells and network tools."""
    found: dict[str, str] = {}
    for name in sorted(_SHELLS | _NETWORK_TOOLS):
        for directory in _KNOWN_DIRS:
            path = posixpath.join(directory, name)
            try:
                with open(path, "rb") as handle:
                    found.setdefault(hashlib.file_digest(handle, "sha256").hexdigest(), name)
            except OSError:
                continue
    return found


def program_file(item: Executed, links: _Links) -> str:
    """The file an exec ran, named for what it is: a known program by its content
    (whatever its name), else the file the kernel ran through any link."""
    known = _programs_by_content().get(item.sha256) if item.sha256 else None
    file = links.follow(item.file)
    if known is not None and posixpath.basename(file) != known:
        return posixpath.join(posixpath.dirname(file), known)
    return file


def _execs(execs: Iterable[Executed], who: Attribution, links: _Links) -> Iterator[Evidence]:
    for item in execs:
        # The harness names its steps' programs as it execs them; what they are is the
        # file the kernel ran, through any link the artifact (or a venv) made, or the
        # program its content is.
        argv, file = item.argv, program_file(item, links)
        if who.is_harness_exec(argv, item.file):
            continue
        found = exec_capabilities(argv, file)
        disguised = found != exec_capabilities(argv)  # argv[0] would have said otherwise
        ran = links.follow(item.file)
        if posixpath.basename(ran) != posixpath.basename(file):
            ran += f", whose content is {posixpath.basename(file)},"
        for capability, detail in found:
            if disguised:
                detail = f"{detail} (ran {ran} as {argv[0]!r})"
            yield Evidence(capability, who.profile, "exec", argv=argv, detail=detail)
        leaked = who.canaries.names_in("\0".join(argv))
        outbound = _is_network(argv, file)
        for name in leaked:
            yield from leak(name, who.profile, "exec", argv=argv, outbound=outbound)


def _is_network(argv: tuple[str, ...], file: str) -> bool:
    """A network tool, or a shell command line that runs one (`echo $KEY | curl -d @- ...`)."""
    if not argv:
        return False
    program = posixpath.basename(file)
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
            yield from leak(leaked, who.profile, "dns", peer=name, outbound=True)


def leak(
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
        for read in step.mcp.reads if step.mcp is not None else ():
            yield f"{where}, {read.tool}", read


def map_harness(log: HarnessLog, profile: str) -> list[Evidence]:
    """What the harness saw (canary values in files the artifact wrote), and what the
    network sink saw sent during each step or call (`assay.detonate.network.attach`)."""
    return [e for where, record in _records(log) for e in harness_evidence(record, where, profile)]


def harness_evidence(record: StepLog | McpCall, where: str, profile: str) -> list[Evidence]:
    """What was seen after one step or tool call (`where` names it)."""
    found: list[Evidence] = []
    for hit in record.canary_hits:
        path = home_relative(hit.path)
        for e in leak(hit.canary, profile, "canary_in_file", path=path):
            found.append(replace(e, detail=f"{e.detail} ({where})", source="harness"))
    for egress in record.egress:
        found += egress_evidence(egress, where, profile)
    return found


def egress_evidence(egress: Egress, where: str, profile: str) -> list[Evidence]:
    """What one connection the network sink saw sent: a POST, canary values."""
    peer = egress.peer
    found: list[Evidence] = []
    if egress.http_method in ("POST", "PUT", "PATCH"):
        detail = f"{egress.request_line} with {egress.size} bytes ({where})"
        found.append(
            Evidence("POST_WEB", profile, "send", peer=peer, detail=detail, source="network")
        )
    for name in egress.canaries:
        for e in leak(name, profile, "send", peer=peer, outbound=True):
            found.append(replace(e, detail=f"{e.detail} in data sent ({where})", source="network"))
    return found


def map_uploads(execs: Iterable[Executed], log: HarnessLog, who: Attribution) -> list[Evidence]:
    """A network tool handed a file the harness found canary values in: the secret is
    on its way out (e.g. `curl --data-binary @~/.cache/stash`), even where what it sends
    is encrypted (HTTPS), which the network sink cannot read."""
    loaded = _canary_files(log)
    found: list[Evidence] = []
    for item in execs:
        argv = item.argv
        file = program_file(item, _Links(()))
        if who.is_harness_exec(argv, item.file) or not _is_network(argv, file):
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
