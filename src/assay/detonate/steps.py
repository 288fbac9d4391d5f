"""What to run inside the sandbox: steps per track, and the profiles they run under.

A step is one child process the harness starts (a script invocation, an install
hook, an import, an MCP session). A profile is one sealed run of the harness:
its own fresh fake home, environment and clock, so every trace event it records
is attributable to that profile.
"""

from __future__ import annotations

import functools
import glob
import re
import shlex
import shutil
import subprocess
import tomllib
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from assay.detonate.canaries import HOME
from assay.mechanism.spec import Track
from assay.sandbox.interface import LIVED_IN_WORKSPACE_DIR
from assay.schema.boundedfs import (
    TreeLimitError,
    TreeLimits,
    read_capped,
    regular_file,
    walk,
)
from assay.schema.boundedjson import JsonLimitError, parse_bounded

PYTHON = "/usr/bin/python3"
NODE = "/usr/bin/node"
SH = "/bin/sh"
BASH = "/bin/bash"
# The lived-in sandbox's workspace holds the user's project, a clone where scripts run,
# and beside it the artifact, where its user cloned it (`artifact_place`).
WORKSPACE = LIVED_IN_WORKSPACE_DIR
PROJECT_DIR = f"{WORKSPACE}/project"
LIBFAKETIME_GLOB = "/usr/lib/*/faketime/libfaketime.so.1"  # /usr is the host's, bound read-only
MAX_SCRIPTS = 6
MAX_DOCUMENTED = 4
MAX_ONE_LINERS = 6
MAX_TRIGGER_FLAGS = 12
COMMON_FLAGS = ("--fast", "--all", "--force", "--yes", "--verbose", "--debug", "--install")
PERL = "/usr/bin/perl"
_SCRIPT_SUFFIXES = {
    ".py": "python",
    ".sh": "sh",
    ".bash": "bash",
    ".js": "node",
    ".cjs": "node",
    ".mjs": "node",
    ".pl": "perl",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
}
_INTERPRETERS = {"python": PYTHON, "node": NODE, "bash": BASH, "sh": SH, "perl": PERL}
# Script languages the sandbox has no interpreter for: such a file is named as not run,
# never passed over in silence.
_UNRUNNABLE_SUFFIXES = frozenset(
    (".rb", ".php", ".lua", ".ps1", ".zsh", ".fish", ".r", ".jl", ".tcl", ".swift", ".exs")
)
_NAMED_NOT_RUN = 8  # files named in one interference entry
_SHELL_OPERATORS = {"|", "||", "&&", ";", ">", ">>", "<", "2>", "&"}
_PLACEHOLDER_TEXT = {
    ".md": "# Notes\n\n## Section\n- item\n",
    ".csv": "name,value\nalpha,1\nbeta,2\n",
    ".json": '{"name": "example"}\n',
    ".txt": "example text\n",
    ".log": "2026-11-01 INFO started\n",
    ".yaml": "name: example\n",
    ".yml": "name: example\n",
    ".toml": 'name = "example"\n',
    ".py": "print('example')\n",
    ".html": "<html><body>example</body></html>\n",
}
_NPM_NAME = re.compile(r"(@[a-z0-9][\w.-]{0,100}/)?[a-z0-9][\w.-]{0,100}")
_LIFECYCLE = ("preinstall", "install", "postinstall", "prepare")


@dataclass(frozen=True)
class Step:
    name: str
    argv: tuple[str, ...]
    cwd: str = PROJECT_DIR
    kind: str = "run"  # run | mcp
    timeout_s: float = 3.0
    stdin: str = ""
    env: tuple[tuple[str, str], ...] = ()
    needed: bool = False  # the steps after it need it: when it fails, they are not run
    # What makes the step a failure, and the detonation incomplete: `exit`, any exit other
    # than 0 (an installer, a loader); `crash`, an uncaught exception or a signal (a
    # script's documented invocation, which may exit non-zero by design with a usage
    # message); `none` for the validator's own guesses at a trigger (flags, `--help`, a
    # bin started bare), which may fail on arguments the artifact never documented.
    failure: str = "exit"


@dataclass(frozen=True)
class Profile:
    """An environment and clock the steps run under; `variations` adds the trigger flags."""

    name: str
    description: str
    env: tuple[tuple[str, str], ...] = ()
    clock_offset: str | None = None  # libfaketime offset, e.g. "+35d"
    variations: bool = True  # run the trigger variations (flags) too

    def clock_env(self, libfaketime: str) -> dict[str, str]:
        """The preload, with monotonic clocks left real (Node's event loop and the
        processes it pairs with stall on a shifted one); the offset itself is in the
        fake home's ~/.faketimerc, not in the environment."""
        if self.clock_offset is None:
            return {}
        return {"LD_PRELOAD": libfaketime, "DONT_FAKE_MONOTONIC": "1"}


def find_libfaketime() -> str | None:
    """libfaketime (Debian's `libfaketime`), which shifts the clock of dynamically linked
    children through LD_PRELOAD; None when it is not installed."""
    found = sorted(glob.glob(LIBFAKETIME_GLOB))
    return found[0] if found else None


PROFILES: tuple[Profile, ...] = (
    Profile("baseline", "plain and documented invocations, today's clock", variations=False),
    Profile("trigger_flags", "trigger variations: --help, common and source-named flags"),
    Profile(
        "ci",
        "CI runner environment (CI=true, GITHUB_ACTIONS=true)",
        env=(("CI", "true"), ("GITHUB_ACTIONS", "true"), ("CONTINUOUS_INTEGRATION", "true")),
    ),
    Profile("clock_plus_5w", "clock shifted 35 days ahead", clock_offset="+35d"),
    Profile("clock_plus_13mo", "clock shifted 400 days ahead", clock_offset="+400d"),
)


@dataclass(frozen=True)
class DetonationPlan:
    """All steps of one artifact, split into the always-run core and the variations."""

    core: tuple[Step, ...]
    variations: tuple[Step, ...] = ()
    copies: tuple[str, ...] = ()  # sandbox paths the artifact is copied to (writable trees)
    artifact: str = ""  # where the artifact is in the sandbox (`artifact_place`)
    workdirs: tuple[str, ...] = ()  # directories the harness creates before the steps
    placeholders: dict[str, str] = field(default_factory=dict)  # sandbox path -> content
    links: dict[str, str] = field(default_factory=dict)  # sandbox symlink -> its target
    site_paths: tuple[str, ...] = ()  # extra import paths for Python children (SDKs)
    # What the pinned runner (tsx) does itself: programs it starts, files it caches.
    runner_programs: tuple[str, ...] = ()
    runner_writes: tuple[str, ...] = ()
    # Scripts of an installer (pip's build hooks, npm's node-gyp) an interpreter runs as the
    # installer's own helpers: argv[1] under one of these.
    runner_scripts: tuple[str, ...] = ()
    runner_argvs: tuple[tuple[str, ...], ...] = ()  # exact command lines of the installer's
    # The installer's own processes, which run none of the artifact's code: npm itself and
    # node-gyp, not the hooks they start, nor pip's build backend (the package's setup.py).
    # What only these write is the installer's (`mapping.Attribution.installer_paths`).
    installer_argvs: tuple[tuple[str, ...], ...] = ()
    installer_scripts: tuple[str, ...] = ()  # argv[1] prefixes of the installer's own helpers
    installs: bool = False  # runs a real installer or build: the larger budget applies
    notes: tuple[str, ...] = ()
    # What planning could not cover (a walk cut short, a server it cannot start): the
    # detonation is incomplete, never quietly empty.
    interference: tuple[str, ...] = ()

    def steps_for(self, profile: Profile) -> tuple[Step, ...]:
        return self.core + (self.variations if profile.variations else ())

    def profiles(self) -> tuple[Profile, ...]:
        # Without variations the trigger-flag profile would only repeat the baseline.
        return tuple(p for p in PROFILES if self.variations or p.name != "trigger_flags")


def build_plan(artifact_dir: Path, track: Track, token: str) -> DetonationPlan:
    place = artifact_place(artifact_dir, track)
    if track is Track.SKILLS:
        plan = _skill_plan(artifact_dir, place)
    elif track is Track.MCP_SERVERS:
        plan = _mcp_plan(artifact_dir, token, place)
    elif track is Track.PACKAGES:
        plan = _package_plan(artifact_dir, token)
    else:
        raise ValueError(f"the {track.value} track is not detonated")
    return replace(plan, artifact=place)


_CLONE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_DECLARED_NAME = re.compile(r"""(?m)^\s*name\s*[:=]\s*["']?([^"'\s]+)""")
# What else the workspace holds: the project, and the link to the pinned MCP SDKs.
_TAKEN_NAMES = frozenset({PurePosixPath(PROJECT_DIR).name, "node_modules"})
_NAMING_FILE = {Track.SKILLS: "SKILL.md"}  # else pyproject.toml, after package.json
_DEFAULT_CLONE = {Track.SKILLS: "skill", Track.MCP_SERVERS: "mcp-server", Track.PACKAGES: "lib"}


def artifact_place(artifact_dir: Path, track: Track) -> str:
    """Where the artifact is in the sandbox: a clone in the workspace beside the project,
    named as the artifact names itself (a package's name, a skill's), as `git clone`
    names one; never the task's name on the host, which would name the corpus."""
    declared = ""
    if track is not Track.SKILLS and _regular(artifact_dir, artifact_dir / "package.json"):
        manifest = _json(artifact_dir, artifact_dir / "package.json")
        declared = str(manifest.get("name") or "") if isinstance(manifest, dict) else ""
    else:
        text = _read(artifact_dir, artifact_dir / _NAMING_FILE.get(track, "pyproject.toml"))
        found = _DECLARED_NAME.search(text)
        declared = found.group(1) if found else ""
    name = declared.rsplit("/", 1)[-1].lower()
    if not _CLONE_NAME.fullmatch(name) or name in _TAKEN_NAMES:
        name = _DEFAULT_CLONE.get(track, "src")
    return f"{WORKSPACE}/{name}"


# --- reading the artifact on the host ------------------------------------------------------

# Planning reads the artifact on the host, as the validator: bounded walks and reads,
# never through a symlink, so no tree or file can stall, exhaust or mislead it.
PLAN_TREE = TreeLimits(max_depth=24, max_entries=5_000)
_READ_CAP = 256 * 1024  # bytes of a file planning looks at (manifests, scripts, docs)
_HEAD = 128  # bytes read to find a shebang


def _regular(artifact_dir: Path, path: Path) -> bool:
    try:
        relative = path.relative_to(artifact_dir)
    except ValueError:
        return False
    return regular_file(artifact_dir, relative.as_posix()) is not None


def _read(artifact_dir: Path, path: Path, limit: int = _READ_CAP) -> str:
    if not _regular(artifact_dir, path):
        return ""
    try:
        return read_capped(path, limit).decode("utf-8", errors="replace")
    except TreeLimitError:
        return ""


def _json(artifact_dir: Path, path: Path) -> object:
    """A small JSON document of the artifact, or None (unreadable, too big or too deep)."""
    if not _regular(artifact_dir, path):
        return None
    try:
        return parse_bounded(read_capped(path, _READ_CAP + 1), max_bytes=_READ_CAP)
    except (TreeLimitError, JsonLimitError):
        return None


def _files(artifact_dir: Path) -> tuple[list[PurePosixPath], str]:
    """Regular files of the artifact in sorted order, and why the walk stopped early."""
    found: list[PurePosixPath] = []
    try:
        for entry in walk(artifact_dir, PLAN_TREE):
            if entry.is_file:
                found.append(entry.relative)
    except TreeLimitError as exc:
        return sorted(found), f"artifact walk stopped: {exc}"
    return sorted(found), ""


# --- skills ------------------------------------------------------------------------------


def _runner_for(artifact_dir: Path, path: Path) -> tuple[tuple[str, ...], bool]:
    """How a file of the artifact is run (its interpreter's argv), or () and whether it
    is a script all the same (a language or shebang the sandbox cannot run)."""
    kind = _SCRIPT_SUFFIXES.get(path.suffix)
    if kind is None:
        first = _read(artifact_dir, path, _HEAD).split("\n", 1)[0]
        if not first.startswith("#!"):
            return (), path.suffix.lower() in _UNRUNNABLE_SUFFIXES
        kind = next((k for k in ("python", "node", "bash", "sh", "perl") if k in first), None)
        if kind is None:
            return (), True
    if kind == "typescript":
        runner = _typescript_runner()
        return runner, not runner
    return (_INTERPRETERS[kind],), False


def _typescript_runner() -> tuple[str, ...]:
    """Node with its own type stripping, else the pinned tsx loader; () with neither."""
    if node_strips_types():
        return (NODE, "--experimental-strip-types")
    if Path(_TSX_LOADER).is_file():
        return (NODE, "--import", f"file://{_TSX_LOADER}")
    return ()


def _scripts(
    artifact_dir: Path, commands: DocCommands
) -> tuple[list[tuple[PurePosixPath, tuple[str, ...]]], list[str]]:
    """The scripts to run, documented ones first, and what was left unrun and why."""
    files, stopped = _files(artifact_dir)
    problems = [stopped] if stopped else []
    runnable: list[tuple[PurePosixPath, tuple[str, ...]]] = []
    unrunnable: list[str] = []
    for relative in files:
        if "node_modules" in relative.parts:
            continue
        runner, is_script = _runner_for(artifact_dir, artifact_dir / relative)
        if runner:
            runnable.append((relative, runner))
        elif is_script:
            unrunnable.append(str(relative))
    if unrunnable:
        problems.append(
            f"{len(unrunnable)} script(s) in a language the sandbox cannot run, not run: "
            + _named(unrunnable)
        )
    documented = [r for r in runnable if commands.args_for(r[0])]
    chosen = {relative for relative, _ in documented}
    ordered = documented + [r for r in runnable if r[0] not in chosen]
    if len(ordered) > MAX_SCRIPTS:
        left = [str(relative) for relative, _ in ordered[MAX_SCRIPTS:]]
        problems.append(
            f"{len(left)} script(s) not run, over the {MAX_SCRIPTS}-script cap: " + _named(left)
        )
    return ordered[:MAX_SCRIPTS], problems


def clip_words(words: tuple[str, ...], limit: int = 80) -> str:
    joined = shlex.join(words)
    return joined if len(joined) <= limit else joined[: limit - 1] + "…"


def _named(names: list[str]) -> str:
    shown = ", ".join(n[:80] for n in names[:_NAMED_NOT_RUN])
    return shown + (" …" if len(names) > _NAMED_NOT_RUN else "")


def _doc_text(artifact_dir: Path) -> str:
    return "\n".join(_read(artifact_dir, artifact_dir / name) for name in ("SKILL.md", "README.md"))


# Planning's budget on documentation: it runs on the validator's host before any sandbox,
# so what it reads is bounded by count, not by time (a clock would make the plan depend on
# the host's load): command lines past the cap, or too long to be one, are not read, and
# the detonation says so.
MAX_DOC_COMMANDS = 4000
MAX_COMMAND_CHARS = 4096


@dataclass(frozen=True)
class DocCommands:
    """The words of every command line the documentation shows, indexed by word (and by
    each tail of a word after a `/`), so finding a script's invocations costs a lookup,
    not a pass over the documentation per script."""

    commands: tuple[tuple[str, ...], ...]
    exact: dict[str, tuple[tuple[int, int], ...]]  # word -> (command, position)
    tails: dict[str, tuple[tuple[int, int], ...]]  # "b/c.py" of "a/b/c.py" -> ...
    unread: str = ""  # what the budget left out

    @classmethod
    def of(cls, doc: str) -> DocCommands:
        commands: list[tuple[str, ...]] = []
        lines = too_long = 0
        for line in _command_lines(doc):
            lines += 1
            if len(line) > MAX_COMMAND_CHARS:
                too_long += 1
                continue
            if len(commands) >= MAX_DOC_COMMANDS:
                continue
            try:
                commands.append(tuple(shlex.split(line, comments=True)))
            except ValueError:
                continue
        exact: dict[str, list[tuple[int, int]]] = defaultdict(list)
        tails: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for c, words in enumerate(commands):
            for n, word in enumerate(words):
                exact[word].append((c, n))
                for at in (i for i, char in enumerate(word) if char == "/"):
                    tails[word[at + 1 :]].append((c, n))
        over = lines - too_long - MAX_DOC_COMMANDS
        unread = ", ".join(
            part
            for part in (
                f"{over} command line(s) past the {MAX_DOC_COMMANDS}-line cap" if over > 0 else "",
                f"{too_long} line(s) over {MAX_COMMAND_CHARS} characters" if too_long else "",
            )
            if part
        )
        return cls(
            tuple(commands),
            {k: tuple(v) for k, v in exact.items()},
            {k: tuple(v) for k, v in tails.items()},
            f"planning's budget: documentation not read: {unread}" if unread else "",
        )

    def args_for(self, script: PurePosixPath) -> list[tuple[tuple[str, ...], bool]]:
        """Argument lists the documentation shows for `script` (named by its path, a path
        ending in it, or its file name), and whether input is piped into it."""
        first: dict[int, int] = {}
        for key, index in ((str(script), self.exact), (script.name, self.exact)):
            for c, n in index.get(key, ()):
                first[c] = min(n, first.get(c, n))
        for c, n in self.tails.get(str(script), ()):
            first[c] = min(n, first.get(c, n))
        found: list[tuple[tuple[str, ...], bool]] = []
        for c in sorted(first):
            words, n = self.commands[c], first[c]
            args = tuple(_until_operator(words[n + 1 :]))
            piped = "|" in words[:n]
            if (args, piped) not in found:
                found.append((args, piped))
        return found


def _command_lines(doc: str) -> Iterator[str]:
    """Lines of code blocks, indented blocks and inline code spans."""
    fenced = False
    for raw in doc.splitlines():
        stripped = raw.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            continue
        if fenced or raw.startswith(("    ", "\t")):
            yield stripped.removeprefix("$ ")
        yield from re.findall(r"`([^`\n]+)`", raw)


def _until_operator(words: Iterable[str]) -> Iterator[str]:
    for word in words:
        if word in _SHELL_OPERATORS or word.startswith((">", "2>")):
            return
        yield word.replace("~", HOME, 1) if word.startswith("~") else word


def _source_flags(artifact_dir: Path, path: Path) -> list[str]:
    """Long flags the script's own source names: the likeliest triggers."""
    text = _read(artifact_dir, path)
    return sorted(set(re.findall(r"""["'](--[a-z][a-z0-9-]{1,30})["']""", text)))


# The interpreters a documented one-liner may name, and the flags that make it one: code
# inline (`python3 -c`, `node -e`) or a module of the skill's own (`python3 -m pkg`).
_ONE_LINER_FLAGS = {
    "python": ("-c", "-m"),
    "node": ("-e", "--eval", "-p", "--print"),
    "bash": ("-c",),
    "sh": ("-c",),
    "perl": ("-e", "-E"),
}


def _one_liners(commands: Iterable[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Documented command lines that run code the documentation itself carries, or a
    module of the skill (`python3 -m pkg`), as argv with the interpreter resolved."""
    found: list[tuple[str, ...]] = []
    for words in commands:
        words = words[1:] if words[:1] == ("$",) else words
        if len(words) < 3:
            continue
        program = PurePosixPath(words[0]).name
        kind = "python" if re.fullmatch(r"python(3(\.\d+)?)?", program) else program
        flags = _ONE_LINER_FLAGS.get(kind)
        if flags is None or words[1] not in flags:
            continue
        argv = (_INTERPRETERS[kind], *_until_operator(words[1:]))
        if len(argv) > 2 and argv not in found:
            found.append(argv)
    return found


def _placeholders(args: tuple[str, ...]) -> dict[str, str]:
    """Files named by documented arguments, created so the script gets past reading them."""
    out: dict[str, str] = {}
    for arg in args:
        if arg.startswith("-") or arg.startswith("/") or ".." in arg:
            continue
        suffix = PurePosixPath(arg).suffix.lower()
        if suffix in _PLACEHOLDER_TEXT:
            out[f"{PROJECT_DIR}/{arg}"] = _PLACEHOLDER_TEXT[suffix]
    return out


def _skill_plan(artifact_dir: Path, place: str) -> DetonationPlan:
    commands = DocCommands.of(_doc_text(artifact_dir))
    core: list[Step] = []
    variations: list[Step] = []
    placeholders: dict[str, str] = {}
    scripts, problems = _scripts(artifact_dir, commands)
    for relative, runner in scripts:
        base = (*runner, f"{place}/{PurePosixPath(relative)}")
        label = str(relative)
        core.append(Step(f"{label} (plain)", base, failure="crash"))
        documented = commands.args_for(relative)
        if len(documented) > MAX_DOCUMENTED:
            problems.append(
                f"{label}: {len(documented) - MAX_DOCUMENTED} documented invocation(s) not run, "
                f"over the {MAX_DOCUMENTED}-per-script cap"
            )
        for args, piped in documented[:MAX_DOCUMENTED]:
            placeholders.update(_placeholders(args))
            stdin = _PLACEHOLDER_TEXT[".md"] if piped else ""
            core.append(
                Step(
                    f"{label} {shlex.join(args)} (documented)",
                    base + args,
                    stdin=stdin,
                    failure="crash",
                )
            )
        first_args = tuple(
            a for a in (documented[0][0] if documented else ()) if not a.startswith("-")
        )
        flags = list(
            dict.fromkeys([*COMMON_FLAGS, *_source_flags(artifact_dir, artifact_dir / relative)])
        )
        flags = [f for f in flags if f != "--help"]
        if len(flags) > MAX_TRIGGER_FLAGS:
            left_out = flags[MAX_TRIGGER_FLAGS:]
            problems.append(
                f"{label}: {len(left_out)} trigger flag(s) its source names not tried, over "
                f"the {MAX_TRIGGER_FLAGS}-flag cap: {', '.join(left_out[:8])}"
            )
        flags = flags[:MAX_TRIGGER_FLAGS]
        variations.append(Step(f"{label} --help", (*base, "--help"), failure="none"))
        variations.append(
            Step(f"{label} + trigger flags", base + first_args + tuple(flags), failure="none")
        )
    if commands.unread:
        problems.append(commands.unread)
    one_liners = _one_liners(commands.commands)
    if len(one_liners) > MAX_ONE_LINERS:
        problems.append(
            f"{len(one_liners) - MAX_ONE_LINERS} documented one-liner(s) not run, over the "
            f"{MAX_ONE_LINERS}-line cap"
        )
    for n, argv in enumerate(one_liners[:MAX_ONE_LINERS], 1):
        # Run where a user runs them: in the skill's own directory (`-m` finds its modules).
        core.append(
            Step(
                f"documented one-liner {n}: {clip_words(argv[1:])}",
                argv,
                cwd=place,
                failure="crash",
            )
        )
    if not core:
        problems.append("nothing runnable found: no script and no documented one-liner")
    unique_core = tuple(dict((s.argv, s) for s in core).values())
    unique_variations = tuple(
        s
        for s in dict((s.argv, s) for s in variations).values()
        if s.argv not in {c.argv for c in unique_core}
    )
    typescript = any(runner[1:2] == ("--import",) for _, runner in scripts)
    return DetonationPlan(
        unique_core,
        unique_variations,
        placeholders=placeholders,
        runner_programs=(f"{MCP_RUNTIME}/",) if typescript else (),
        runner_writes=("/tmp/tsx-",) if typescript else (),
        interference=tuple(problems),
    )


# --- MCP servers -------------------------------------------------------------------------

# The pinned MCP SDKs and TypeScript runner (scripts/install-detonation-runtime.sh), under
# /usr so the sandbox sees them read-only at the same path.
MCP_RUNTIME = "/usr/local/lib/mcp-runtime"
_TSX_LOADER = f"{MCP_RUNTIME}/node/node_modules/tsx/dist/loader.mjs"
# The file an MCP client hands to a tool argument that names a file: one that exists, in
# the server's own folder (where a client starts it, and where servers that serve files
# are rooted by default).
MCP_SAMPLE_FILE = "notes.md"
MCP_SAMPLE_TEXT = "# Notes\n\n## Section\n- item\n"
_GO_CANDIDATES = ("/usr/bin/go", "/usr/lib/go/bin/go", "/usr/local/go/bin/go")
_SERVER_GUESSES = (
    "server.py",
    "main.py",
    "index.js",
    "server.js",
    "index.ts",
    "server.ts",
    "src/index.ts",
    "src/server.ts",
    "src/index.js",
    "main.go",
)
_NODE_RUNNERS = {"tsx", "ts-node", "node", "nodejs"}
_UNHOOKING_FLAGS = {"-s", "-S", "-E", "-I", "-sE", "-Es"}
_GO_REQUIRE = re.compile(r"^\s*(?:require\s+)?([a-z0-9.-]+\.[a-z]+/\S+)\s+v[\w.+-]+", re.M)
_GO_DIRECTIVE = re.compile(r"^go\s+(\d+)\.(\d+)", re.M)
_GO_RELEASE = re.compile(r"go(\d+)\.(\d+)")


def _manifest(artifact_dir: Path) -> dict[str, object]:
    for name in ("mcp.json", "server.json", ".mcp.json"):
        data = _json(artifact_dir, artifact_dir / name)
        if isinstance(data, dict):
            servers = data.get("mcpServers")
            if isinstance(servers, dict) and servers:
                first = next(iter(servers.values()))
                return first if isinstance(first, dict) else {}
            return data
    return {}


def _manifest_words(manifest: dict[str, object]) -> list[str]:
    command = manifest.get("command")
    args = manifest.get("args")
    words: list[str] = []
    if isinstance(command, list):
        words = [str(w) for w in command]
    elif isinstance(command, str):
        words = [command]
    if isinstance(args, list):
        words += [str(a) for a in args]
    return words[:64]


def _package_entry(artifact_dir: Path) -> str | None:
    """The script package.json names (`bin`, else `main`), as MCP servers on npm ship."""
    manifest = _json(artifact_dir, artifact_dir / "package.json")
    if not isinstance(manifest, dict):
        return None
    bin_field = manifest.get("bin")
    if isinstance(bin_field, dict) and bin_field:
        bin_field = next(iter(bin_field.values()))
    for candidate in (bin_field, manifest.get("main")):
        if isinstance(candidate, str) and candidate:
            return candidate.removeprefix("./")
    return None


# A Python file that imports an MCP SDK (and starts a server: `mcp.run()`, `server.run(`).
_MCP_IMPORT = re.compile(r"^\s*(?:from|import)\s+(?:mcp|fastmcp)\b", re.M)
_NOT_STDIO = ("sse", "http", "ws")  # transports a user starts a server for, not a client
_SERVER_FILES_READ = 64  # top-level scripts read, in name order, looking for a server


def _python_server_file(artifact_dir: Path) -> str | None:
    """A server shipped as a lone script (`echo_mcp.py`, `server_stdio.py`): the top-level
    Python file that imports an MCP SDK and runs a server, one over stdio first (a client
    starts that one; one over SSE or HTTP waits for connections)."""
    files, _ = _files(artifact_dir)  # the bounded walk: a flood of entries stops it
    scripts = [f.name for f in files if len(f.parts) == 1 and f.suffix == ".py"]
    found = [
        name
        for name in scripts[:_SERVER_FILES_READ]
        if _MCP_IMPORT.search(text := _read(artifact_dir, artifact_dir / name)) and ".run(" in text
    ]
    stdio = [n for n in found if "stdio" in n]
    other = [n for n in found if not any(t in n for t in _NOT_STDIO)]
    return next(iter(stdio + other + found), None)


_ENTRY_POINT = re.compile(r"([A-Za-z_][\w.]*):([A-Za-z_]\w*)")


def _console_script_server(artifact_dir: Path, root: str) -> _Server | None:
    """A Python package whose pyproject names a console script (`uvx mcp-server-x` runs
    it): its entry point called from the package's own tree (flat or `src/` layout), as
    the installed script would call it."""
    try:
        project = tomllib.loads(_read(artifact_dir, artifact_dir / "pyproject.toml"))
    except (tomllib.TOMLDecodeError, RecursionError):
        return None
    table = project.get("project")
    scripts = table.get("scripts") if isinstance(table, dict) else None
    if not isinstance(scripts, dict) or not scripts:
        return None
    name, target = next(iter(scripts.items()))
    entry = _ENTRY_POINT.fullmatch(str(target).replace(" ", ""))
    if entry is None:
        return None
    module, function = entry.groups()
    top = module.split(".")[0]
    for base in ("src", ""):
        package = artifact_dir / base / top
        if _regular(artifact_dir, package / "__init__.py") or _regular(
            artifact_dir, package.with_suffix(".py")
        ):
            where = f"{root}/{base}".rstrip("/")
            call = (
                f"import sys; sys.path.insert(0, {where!r}); from {module} import {function}; "
                f"sys.argv[0] = {name!r}; sys.exit({function}())"
            )
            return _Server((PYTHON, "-c", call))
    return None


def _source_for(artifact_dir: Path, name: str) -> str | None:
    """`name` when it is a file of the artifact; for a build output that was not shipped
    (dist/index.js), the TypeScript source it is built from (src/index.ts)."""
    if _regular(artifact_dir, artifact_dir / name):
        return name
    stem = PurePosixPath(name)
    if stem.suffix not in (".js", ".mjs", ".cjs"):
        return None
    tail = PurePosixPath(*stem.parts[1:]) if len(stem.parts) > 1 else stem
    for guess in (f"src/{tail.with_suffix('.ts')}", str(stem.with_suffix(".ts"))):
        if _regular(artifact_dir, artifact_dir / guess):
            return guess
    return None


@dataclass(frozen=True)
class _Server:
    """How to start one MCP server, or why it cannot be started."""

    argv: tuple[str, ...] = ()
    build: tuple[Step, ...] = ()
    not_run: str = ""
    runner: str = ""  # where the programs that build or start it live (tsx, Go)
    runner_writes: tuple[str, ...] = ()
    workdirs: tuple[str, ...] = ()


def _server(artifact_dir: Path, manifest: dict[str, object], root: str, work: str) -> _Server:
    words = _manifest_words(manifest)
    if words and PurePosixPath(words[0]).name == "npx":
        words = [w for w in words[1:] if not w.startswith("-")]  # npx -y tsx src/x.ts
    script: str | None = None
    if words:
        if PurePosixPath(words[0]).name == "go" or words[0].endswith(".go"):
            return _go_server(artifact_dir, root, work)
        program = PurePosixPath(words[0]).name
        interpreter = _interpreter_named(program)
        if interpreter is None and program not in _NODE_RUNNERS:
            return _Server(
                tuple(_resolve_word(artifact_dir, root, n, w) for n, w in enumerate(words))
            )
        args = words[1:]
        if interpreter == PYTHON and "-m" in args:  # python -m package, run from its copy
            # Flags that switch off the user site or the environment would drop the hooks.
            return _Server((PYTHON, *(a for a in args if a not in _UNHOOKING_FLAGS)))
        found = [(n, _source_for(artifact_dir, a)) for n, a in enumerate(args)]
        n, script = next(((n, f) for n, f in found if f), (0, None))
        if script is None:
            return _Server(not_run=f"server command {shlex.join(words)!r} names no artifact file")
        rest = tuple(args[n + 1 :])
    else:
        entry = _package_entry(artifact_dir)
        script = _source_for(artifact_dir, entry) if entry else None
        script = script or next(
            (g for g in _SERVER_GUESSES if _regular(artifact_dir, artifact_dir / g)), None
        )
        script = script or _python_server_file(artifact_dir)
        if script is None:
            console = _console_script_server(artifact_dir, root)
            return console or _Server(not_run="no MCP server command found")
        if script.endswith(".go"):
            return _go_server(artifact_dir, root, work)
        rest = ()
    return _script_server(script, root, rest)


def _interpreter_named(program: str) -> str | None:
    if program.startswith("python"):
        return PYTHON
    if program in ("sh", "bash"):
        return SH if program == "sh" else BASH
    return None


def _script_server(script: str, root: str, rest: tuple[str, ...]) -> _Server:
    path = f"{root}/{script}"
    if script.endswith(".py"):
        return _Server((PYTHON, path, *rest))
    if script.endswith((".sh", ".bash")):
        return _Server((BASH, path, *rest))
    if script.endswith((".ts", ".mts", ".cts")):
        runner = _typescript_runner()
        if not runner:
            return _Server(not_run=f"TypeScript server not run: {_TSX_LOADER} is not installed")
        tsx = runner[1:2] == ("--import",)
        return _Server(
            (*runner, path, *rest),
            runner=f"{MCP_RUNTIME}/" if tsx else "",
            runner_writes=("/tmp/tsx-",) if tsx else (),  # its transpile cache
        )
    return _Server((NODE, path, *rest))


@functools.cache
def node_strips_types() -> bool:
    """Node's own type stripping (22.6+): the validator's own Node, asked once."""
    try:
        out = subprocess.run((NODE, "--version"), capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    match = re.match(r"v(\d+)\.(\d+)", out.stdout)
    return match is not None and (int(match[1]), int(match[2])) >= (22, 6)


def go_toolchain() -> str | None:
    return next((g for g in _GO_CANDIDATES if Path(g).is_file()), None)


@functools.cache
def go_release(go: str) -> tuple[int, int] | None:
    """The toolchain's release (1, 19), from its GOROOT's VERSION file."""
    try:
        head = (Path(go).resolve().parent.parent / "VERSION").read_text()[:64]
    except OSError:
        return None
    match = _GO_RELEASE.match(head)
    return (int(match[1]), int(match[2])) if match else None


def _newer_go(go_mod: str, go: str) -> str:
    """The Go release go.mod asks for, when the toolchain is older (a toolchain before
    1.21 tries the build anyway; the SDKs a server needs use the newer language)."""
    asked, have = _GO_DIRECTIVE.search(go_mod), go_release(go)
    if asked is None or have is None or (int(asked[1]), int(asked[2])) <= have:
        return ""
    return f"; go.mod asks for Go {asked[1]}.{asked[2]}, the toolchain is Go {have[0]}.{have[1]}"


def _go_server(artifact_dir: Path, root: str, work: str) -> _Server:
    """Go servers are built inside the sandbox, offline, in their clone `root` from its
    own vendor tree, the build's caches and binary in the harness's `work`; the modules
    it needs and does not ship are named, never guessed at."""
    go = go_toolchain()
    if go is None:
        return _Server(not_run="Go server not run: the Go toolchain is not installed")
    go_mod = _read(artifact_dir, artifact_dir / "go.mod")
    required = _GO_REQUIRE.findall(go_mod)
    vendored = _read(artifact_dir, artifact_dir / "vendor" / "modules.txt")
    missing = sorted({m for m in required if f"# {m} " not in vendored})
    if missing:
        shown = ", ".join(missing[:8]) + (" …" if len(missing) > 8 else "")
        newer = _newer_go(go_mod, go)
        return _Server(not_run=f"Go server not built: needs modules {shown}{newer}")
    binary = f"{work}/server-bin"
    env = (
        ("GOFLAGS", "-mod=vendor" if vendored else "-mod=mod"),
        ("GOPROXY", "off"),
        ("GOTOOLCHAIN", "local"),
        ("GOCACHE", f"{work}/gocache"),
        ("GOPATH", f"{work}/gopath"),
        ("GOTMPDIR", f"{work}/gotmp"),
        ("CGO_ENABLED", "0"),
    )
    # -work: the build keeps its scratch directory, so none of its cleanup (unlinks by
    # relative name) is mistaken for the server deleting files.
    argv = (go, "build", "-work", "-o", binary, ".")
    build = Step("go build", argv, cwd=root, timeout_s=20.0, env=env, needed=True)
    goroot = str(Path(go).resolve().parent.parent)
    return _Server((binary,), build=(build,), runner=f"{goroot}/", workdirs=(f"{work}/gotmp",))


def _resolve_word(artifact_dir: Path, root: str, position: int, word: str) -> str:
    if position == 0:
        interpreter = _interpreter_named(PurePosixPath(word).name)
        if interpreter is not None:
            return interpreter
    if _regular(artifact_dir, artifact_dir / word):
        return f"{root}/{PurePosixPath(word)}"
    return word


def _mcp_plan(artifact_dir: Path, token: str, place: str) -> DetonationPlan:
    """The server runs from its clone at `place`, as its user runs it, whose parent holds
    the pinned SDKs (node_modules, found by Node's walk up from the clone), so `import`
    and `require` of the SDK resolve offline."""
    root = place
    manifest = _manifest(artifact_dir)
    server = _server(artifact_dir, manifest, root, harness_dir(token))
    if not server.argv:
        return DetonationPlan((), interference=(server.not_run,))
    env = manifest.get("env")
    step_env = (
        tuple(sorted((str(k), str(v)) for k, v in env.items()))[:64]
        if isinstance(env, dict)
        else ()
    )
    step = Step("mcp session", server.argv, cwd=root, kind="mcp", timeout_s=8.0, env=step_env)
    links: dict[str, str] = {}
    site: tuple[str, ...] = ()
    if Path(MCP_RUNTIME).is_dir():
        links[f"{PurePosixPath(place).parent}/node_modules"] = f"{MCP_RUNTIME}/node/node_modules"
        site = (f"{MCP_RUNTIME}/python",)
    return DetonationPlan(
        (*server.build, step),
        placeholders={f"{root}/{MCP_SAMPLE_FILE}": MCP_SAMPLE_TEXT},
        workdirs=server.workdirs,
        links=links,
        site_paths=site,
        runner_programs=(server.runner,) if server.runner else (),
        runner_writes=server.runner_writes,
        installs=bool(server.build),  # a compiler's trace and CPU are an installer's
    )


# --- packages ----------------------------------------------------------------------------


def _package_plan(artifact_dir: Path, token: str) -> DetonationPlan:
    if _regular(artifact_dir, artifact_dir / "package.json"):
        return _npm_plan(artifact_dir, token)
    if any(_regular(artifact_dir, artifact_dir / n) for n in ("setup.py", "pyproject.toml")):
        return _pip_plan(artifact_dir, token)
    wheels = _wheels(artifact_dir)
    if wheels:  # a wheel on its own, as downloaded: pip installs the file
        return _pip_plan(artifact_dir, token, wheels)
    return DetonationPlan(
        (),
        interference=("nothing runnable found: neither package.json nor setup.py/pyproject.toml",),
    )


def harness_dir(token: str) -> str:
    """The workspace directory the harness owns (copies, install targets)."""
    return f"{WORKSPACE}/.cache-{token[:8]}"


# The package is installed as a user would: the real `pip install` of the sandbox's Python
# (the host's, bound read-only), offline and without build isolation (the runtime's own
# setuptools and wheel build it), into a throw-away environment. So its build backend
# runs (setup.py with every cmdclass, or an in-tree `backend-path` backend), and what it
# installs (`.pth` files, entry points) is where Python finds it.
_PIP_ENV = (
    ("PIP_CONFIG_FILE", "/dev/null"),  # no user or system pip configuration applies
    ("PIP_NO_INPUT", "1"),
    ("PYTHONWARNINGS", "ignore"),  # setuptools' deprecation notices bury real errors
)
# Run by the environment's Python, freshly started after the install (so every `.pth`
# file the package installed runs), as a user's code would use the package: it imports
# each top-level module the package installed and every module its RECORD lists, touches
# every name of each module's `__all__` (so PEP 562 lazy submodules load), loads every
# entry point of every group (pytest11, plugins), and starts each console and GUI entry
# point, each in a forked child (no exec of the harness's to mistake for the package's)
# that the alarm ends. An import or load that raises is printed, and the step exits 1 with
# the first failure as its last line: the payload behind it never ran, so the detonation
# is incomplete (a console script started bare is an attempt: how it ends is only shown).
# The step's own budget bounds how many start (a step stopped by it is interference).
IMPORT_DRIVER = (
    "import importlib, importlib.metadata as md, os, signal, sys\n"
    "site = sys.argv[1]\n"
    "failed = []\n"
    "def load(what, call):\n"
    "    try:\n"
    "        return call()\n"
    "    except Exception as exc:\n"
    "        failed.append(f'{what} failed: {exc!r}'[:300])\n"
    "        print(failed[-1], file=sys.stderr)\n"
    "modules = set()\n"
    "for name in os.listdir(site):\n"
    "    stem = name[:-3] if name.endswith('.py') else name\n"
    "    if name.endswith(('.egg-info', '.dist-info')) or not stem.isidentifier():\n"
    "        continue\n"
    "    if name.endswith('.py') or os.path.isfile(os.path.join(site, name, '__init__.py')):\n"
    "        modules.add(stem)\n"
    "dists = list(md.distributions(path=[site]))\n"
    "for dist in dists:\n"
    "    for file in dist.files or ():\n"
    "        parts = list(file.parts)\n"
    "        if not parts or not parts[-1].endswith('.py'):\n"
    "            continue\n"
    "        parts[-1] = parts[-1][:-3]\n"
    "        if parts[-1] == '__init__':\n"
    "            parts.pop()\n"
    "        if parts and parts[-1] != '__main__' and all(p.isidentifier() for p in parts):\n"
    "            modules.add('.'.join(parts))\n"
    "for name in sorted(modules):\n"
    "    module = load(f'import {name}', lambda: importlib.import_module(name))\n"
    "    for attr in getattr(module, '__all__', ()) if module is not None else ():\n"
    "        if isinstance(attr, str):\n"
    "            load(f'{name}.{attr}', lambda: getattr(module, attr))\n"
    "points = [e for d in dists for e in d.entry_points]\n"
    "scripts = ('console_scripts', 'gui_scripts')\n"
    "for point in points:\n"
    "    if point.group not in scripts:\n"
    "        load(f'entry point {point.group}:{point.name}', point.load)\n"
    "for point in points:\n"
    "    if point.group not in scripts:\n"
    "        continue\n"
    "    child = os.fork()\n"
    "    if child == 0:\n"
    "        signal.alarm(2)\n"
    "        sys.argv = [point.name]\n"
    "        try:\n"
    "            point.load()()\n"
    "        except BaseException as exc:\n"
    "            print(f'entry point {point.name} ended: {exc!r}'[:300], file=sys.stderr)\n"
    "        os._exit(0)\n"
    "    os.waitpid(child, 0)\n"
    "if failed:\n"
    "    print(f'{len(failed)} load(s) failed, the first: {failed[0]}', file=sys.stderr)\n"
    "    sys.exit(1)\n"
)


# pip, with one change: its user agent (which it builds even offline, by running
# `lsb_release` and `uname`) is fixed, so no program of pip's looks like the package's.
_PIP_MAIN = (
    "import sys, pip._internal.network.session as s; s.user_agent = lambda: 'pip'; "
    "from pip._internal.cli.main import main; sys.argv[0] = 'pip'; sys.exit(main())"
)


@functools.cache
def pip_dir() -> str | None:
    """Where the sandbox's Python keeps pip (the host's, bound read-only): the build
    hooks pip starts from there are the installer's, not the package's."""
    try:
        out = subprocess.run(
            (PYTHON, "-c", "import os, pip; print(os.path.dirname(pip.__file__))"),
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = out.stdout.strip()
    return found + "/" if out.returncode == 0 and found.startswith("/") else None


def python_version() -> str:
    return Path(PYTHON).resolve().name  # python3.11


def _wheels(artifact_dir: Path) -> tuple[str, ...]:
    """The wheels at the top of the artifact, by name."""
    files, _ = _files(artifact_dir)
    return tuple(str(f) for f in files if len(f.parts) == 1 and f.suffix == ".whl")


def _pip_plan(artifact_dir: Path, token: str, wheels: tuple[str, ...] = ()) -> DetonationPlan:
    pip = pip_dir()
    if pip is None:
        return DetonationPlan((), interference=("package not installed: pip is not available",))
    work = harness_dir(token)
    # The environment is the project's own, where `python3 -m venv .venv` makes it.
    source, env = f"{work}/src", f"{PROJECT_DIR}/.venv"
    site = f"{env}/lib/{python_version()}/site-packages"
    python = f"{env}/bin/python3"  # named as the program it runs (the executed file)
    install = (
        *(python, "-c", _PIP_MAIN, "install", "--no-index", "--no-build-isolation", "--no-deps"),
        *("--no-compile", "--no-cache-dir", "--use-pep517", "--disable-pip-version-check"),
        "--quiet",
        *((f"{source}/{w}" for w in wheels) if wheels else (source,)),
    )
    venv = (PYTHON, "-m", "venv", "--without-pip", "--system-site-packages", env)
    steps = (
        Step("make a throw-away environment", venv),
        Step(
            "pip install (build backend, hooks)",
            install,
            timeout_s=20.0,
            env=(*_PIP_ENV, ("TMPDIR", f"{work}/tmp")),
        ),
        Step(
            "start Python, import the package, start its entry points",
            (python, f"{work}/load.py", site),
            timeout_s=6.0,
        ),
    )
    return DetonationPlan(
        steps,
        copies=(source,),
        # A file, not `-c`: the tracer keeps command lines to 512 bytes per argument, and
        # the harness's own argv must be recognised whole.
        placeholders={f"{work}/load.py": IMPORT_DRIVER},
        workdirs=(f"{work}/tmp",),
        runner_scripts=(pip,),
        installer_argvs=(venv, install),
        runner_writes=(f"{env}/",),  # the installer's, as the harness's directory's are
        installs=True,
    )


# npm's own CLI (the host's, bound read-only), run by Node directly: `npm` itself is a
# `#!/usr/bin/env node` script, whose extra exec would look like the package's.
NPM = "/usr/bin/npm"
NODE_HEADERS = "/usr/include/node/node.h"  # what node-gyp builds against, offline
# The implicit install step of a package with a binding.gyp and no install script, and the
# programs node-gyp runs for it (its helper scripts run from npm's directory).
_GYP_SCRIPT = "node-gyp rebuild"
_GYP_ARGVS = (
    ("node-gyp", "rebuild"),
    ("make", "BUILDTYPE=Release", "-C", "build"),
    ("uname",),
    # node-gyp finding its Python
    (PYTHON, "-c", 'import sys; print("%s.%s.%s" % sys.version_info[:3]);'),
    ("python3", "-c", "import sys; sys.stdout.buffer.write(sys.executable.encode('utf-8'));"),
)


@functools.cache
def npm_cli() -> str | None:
    found = Path(NPM).resolve()
    return str(found) if found.name == "npm-cli.js" and found.is_file() else None


def _gyp_missing() -> str:
    """What the implicit `node-gyp rebuild` needs and this host lacks ("" when nothing)."""
    missing = [name for name in ("make", "c++") if shutil.which(name) is None]
    if not Path(NODE_HEADERS).is_file():
        missing.append(f"the Node headers ({NODE_HEADERS})")
    return ", ".join(missing)


def _npm_plan(artifact_dir: Path, token: str) -> DetonationPlan:
    """The package is placed in a project's node_modules and npm's install step for it runs
    offline: `npm rebuild`, the part of `npm install` that runs after the files are in
    place (preinstall, install, postinstall and, for a binding.gyp without an install
    script, the implicit `node-gyp rebuild` against the runtime's own Node headers). A
    package's dependencies cannot be fetched offline; its own scripts all run. `prepare`,
    which npm runs only when installing from a source tree, runs as its own step."""
    cli = npm_cli()
    if cli is None:
        return DetonationPlan((), interference=(f"package not installed: no npm at {NPM}",))
    manifest = _json(artifact_dir, artifact_dir / "package.json")
    if not isinstance(manifest, dict):
        manifest = {}
    declared = str(manifest.get("name") or "")
    # The install directory is the harness's: a name such as "." or "../x" must not
    # choose where (or over what) the copy lands.
    name = declared.replace("/", "__") if _NPM_NAME.fullmatch(declared) else "package"
    work = harness_dir(token)
    # Installed in the project, as `npm install` in it places a package: npm runs from the
    # project (its INIT_CWD), so what the package's scripts write there is seen.
    package_dir = f"{PROJECT_DIR}/node_modules/{name}"
    scripts = manifest.get("scripts") if isinstance(manifest.get("scripts"), dict) else {}
    assert isinstance(scripts, dict)
    commands = {e: c for e in _LIFECYCLE if isinstance(c := scripts.get(e), str) and c.strip()}
    npm_env = (
        ("npm_config_cache", f"{work}/npm-cache"),
        ("npm_config_userconfig", "/dev/null"),
        ("npm_config_update_notifier", "false"),
        ("npm_config_nodedir", "/usr"),  # the runtime's headers: node-gyp fetches nothing
    )
    rebuild = (NODE, cli, "rebuild", "--offline", "--foreground-scripts", "--no-audit")
    npm_dir = str(Path(cli).parent.parent) + "/"  # npm's own code, node-gyp's with it
    steps = [
        Step(
            "npm install scripts (npm rebuild)",
            rebuild,
            cwd=PROJECT_DIR,
            timeout_s=20.0,
            env=npm_env,
        )
    ]
    if "prepare" in commands:
        steps.append(
            Step(
                f"npm prepare: {commands['prepare'][:80]}",
                (SH, "-c", commands["prepare"]),
                cwd=package_dir,
                env=(("npm_lifecycle_event", "prepare"), ("npm_package_name", name)),
            )
        )
    steps.append(
        Step(
            "load the package: require and import() its main and every exports subpath",
            (NODE, f"{work}/load.js", package_dir),
            cwd=PROJECT_DIR,
            timeout_s=6.0,
        )
    )
    bins = _npm_bins(artifact_dir, manifest)
    for command, relative in bins[:MAX_BINS]:
        runner, _ = _runner_for(artifact_dir, artifact_dir / relative)
        steps.append(
            Step(
                f"start the bin {command!r}",
                (*(runner or (NODE,)), f"{package_dir}/{relative}"),
                cwd=PROJECT_DIR,
                failure="none",
            )
        )
    left = [command for command, _ in bins[MAX_BINS:]]
    over = (f"{len(left)} bin(s) not started, over the {MAX_BINS}-bin cap: {_named(left)}",)
    shells = [*commands.values(), _GYP_SCRIPT]
    gyp = (
        _regular(artifact_dir, artifact_dir / "binding.gyp")
        and manifest.get("gypfile") is not False
        and not {"install", "preinstall"} & set(commands)
    )
    missing = _gyp_missing() if gyp else ""
    return DetonationPlan(
        tuple(steps),
        copies=(package_dir,),
        runner_argvs=(*((SH_NAME, "-c", c) for c in shells), *_run_directly(shells), *_GYP_ARGVS),
        runner_scripts=(npm_dir,),
        installer_argvs=(rebuild, *_GYP_ARGVS),
        installer_scripts=(npm_dir,),
        placeholders={f"{work}/load.js": NODE_LOADER},
        installs=True,
        interference=(
            *((f"binding.gyp not built: this host lacks {missing}",) if missing else ()),
            *(over if left else ()),
        ),
    )


MAX_BINS = 6


def _npm_bins(artifact_dir: Path, manifest: dict[str, object]) -> list[tuple[str, str]]:
    """The commands `bin` installs (a string is one named after the package), each with
    the file it runs, when that file is the package's own."""
    field = manifest.get("bin")
    name = str(manifest.get("name") or "package").rsplit("/", 1)[-1]
    pairs = {name: field} if isinstance(field, str) else field if isinstance(field, dict) else {}
    out = []
    for command, target in sorted(pairs.items()):
        relative = PurePosixPath(str(target))
        if relative.is_absolute() or ".." in relative.parts:
            continue
        if _regular(artifact_dir, artifact_dir / relative):
            out.append((str(command)[:80], str(relative)))
    return out


# Run by Node in the project, as code using the package would load it: its main through
# `require` and `import()`, then every `exports` subpath (each condition's file: `require`
# for CommonJS ones, `import()` for the rest and for an ES module `require` refuses). A
# load that throws is printed and the step exits 1: what was behind it never ran.
NODE_LOADER = r"""
const fs = require("fs"), path = require("path"), url = require("url");
const dir = process.argv[2];
const failed = [];
function targets(value, out) {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) value.forEach((v) => targets(v, out));
  else if (value && typeof value === "object") Object.values(value).forEach((v) => targets(v, out));
  return out;
}
async function load(file) {
  try {
    if (!/\.mjs$/.test(file)) {
      try { return require(file); } catch (e) { if (e.code !== "ERR_REQUIRE_ESM") throw e; }
    }
    return await import(url.pathToFileURL(file).href);
  } catch (e) {
    const said = String(e).split("\n")[0].slice(0, 200);
    failed.push(`load ${path.relative(dir, file) || "."} failed: ${said}`);
    console.error(failed[failed.length - 1]);
  }
}
(async () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  const files = [];
  let main = null;
  try { main = require.resolve(dir); } catch (e) {}
  if (main) files.push(main);
  const exported = targets(manifest.exports ?? [], []);
  for (const target of exported.filter((t) => t.startsWith("./") && !t.includes("*"))) {
    const file = path.resolve(dir, target);
    const inside = file.startsWith(dir + path.sep) && fs.existsSync(file);
    if (inside && !files.includes(file)) files.push(file);
  }
  for (const file of files) {
    await load(file);
    if (file === main) {
      try { await import(url.pathToFileURL(file).href); } catch (e) {}
    }
  }
  if (failed.length) {
    console.error(`${failed.length} load(s) failed, the first: ${failed[0]}`);
    process.exitCode = 1;
  }
})();
"""


SH_NAME = "sh"  # how npm names the shell it runs scripts with


def _run_directly(commands: list[str]) -> list[tuple[str, ...]]:
    """The programs npm's shell starts for simple script lines (`node install.js`): they
    are how npm runs the package's script, not programs the package starts."""
    out = []
    for command in commands:
        try:
            words = tuple(shlex.split(command))
        except ValueError:
            continue
        if words and not any(c in command for c in "|&;<>$`()*?"):
            out.append(words)
    return out
