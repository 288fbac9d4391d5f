"""What to run inside the sandbox: steps per track, and the profiles they run under.

A step is one child process the harness starts (a script invocation, an install
hook, an import, an MCP session). A profile is one sealed run of the harness:
its own fresh fake home, environment and clock, so every trace event it records
is attributable to that profile.
"""

from __future__ import annotations

import glob
import json
import re
import shlex
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from assay.detonate.canaries import HOME
from assay.mechanism.spec import Track
from assay.sandbox.interface import SANDBOX_ARTIFACT_DIR, SANDBOX_WORKSPACE_DIR

PYTHON = "/usr/bin/python3"
NODE = "/usr/bin/node"
SH = "/bin/sh"
BASH = "/bin/bash"
PROJECT_DIR = f"{SANDBOX_WORKSPACE_DIR}/project"  # the working directory scripts run in
LIBFAKETIME_GLOB = "/usr/lib/*/faketime/libfaketime.so.1"  # /usr is the host's, bound read-only
MAX_SCRIPTS = 6
MAX_DOCUMENTED = 4
MAX_TRIGGER_FLAGS = 12
COMMON_FLAGS = ("--fast", "--all", "--force", "--yes", "--verbose", "--debug", "--install")
_SCRIPT_SUFFIXES = {".py": "python", ".sh": "sh", ".bash": "bash", ".js": "node", ".cjs": "node"}
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

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "argv": list(self.argv),
            "cwd": self.cwd,
            "kind": self.kind,
            "timeout_s": self.timeout_s,
            "stdin": self.stdin,
            "env": dict(self.env),
        }


@dataclass(frozen=True)
class Profile:
    """An environment and clock the steps run under; `variations` adds the trigger flags."""

    name: str
    description: str
    env: tuple[tuple[str, str], ...] = ()
    clock_offset: str | None = None  # libfaketime offset, e.g. "+35d"
    variations: bool = True  # run the trigger variations (flags) too

    def clock_env(self, libfaketime: str) -> dict[str, str]:
        if self.clock_offset is None:
            return {}
        # Monotonic clocks stay real so timeouts inside the artifact still work.
        return {
            "LD_PRELOAD": libfaketime,
            "FAKETIME": self.clock_offset,
            "DONT_FAKE_MONOTONIC": "1",
        }


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
class Plan:
    """All steps of one artifact, split into the always-run core and the variations."""

    core: tuple[Step, ...]
    variations: tuple[Step, ...] = ()
    copies: tuple[str, ...] = ()  # sandbox paths the artifact is copied to (writable trees)
    workdirs: tuple[str, ...] = ()  # directories the harness creates before the steps
    placeholders: dict[str, str] = field(default_factory=dict)  # sandbox path -> content
    notes: tuple[str, ...] = ()

    def steps_for(self, profile: Profile) -> tuple[Step, ...]:
        return self.core + (self.variations if profile.variations else ())

    def profiles(self) -> tuple[Profile, ...]:
        # Without variations the trigger-flag profile would only repeat the baseline.
        return tuple(p for p in PROFILES if self.variations or p.name != "trigger_flags")


def build_plan(artifact_dir: Path, track: Track, token: str) -> Plan:
    if track is Track.SKILLS:
        return _skill_plan(artifact_dir)
    if track is Track.MCP_SERVERS:
        return _mcp_plan(artifact_dir)
    if track is Track.PACKAGES:
        return _package_plan(artifact_dir, token)
    raise ValueError(f"the {track.value} track is not detonated")


# --- reading the artifact on the host ------------------------------------------------------


def _regular(artifact_dir: Path, path: Path) -> bool:
    """A regular file really inside the artifact: planning runs on the host (as the
    validator), so a symlink must never lead it to read anything else."""
    try:
        inside = path.resolve().is_relative_to(artifact_dir.resolve())
        return inside and stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def _read(artifact_dir: Path, path: Path) -> str:
    return path.read_text("utf-8", errors="replace") if _regular(artifact_dir, path) else ""


# --- skills ------------------------------------------------------------------------------


def _sandbox_path(relative: PurePosixPath | Path) -> str:
    return f"{SANDBOX_ARTIFACT_DIR}/{PurePosixPath(relative)}"


def _interpreter(artifact_dir: Path, path: Path) -> str | None:
    kind = _SCRIPT_SUFFIXES.get(path.suffix)
    if kind is None:
        first = _read(artifact_dir, path)[:128].split("\n", 1)[0]
        if not first.startswith("#!"):
            return None
        kind = next((k for k in ("python", "node", "bash", "sh") if k in first), None)
    return {"python": PYTHON, "node": NODE, "bash": BASH, "sh": SH}.get(kind or "")


def _scripts(artifact_dir: Path) -> list[tuple[Path, str]]:
    found: list[tuple[Path, str]] = []
    for path in sorted(artifact_dir.rglob("*")):
        relative = path.relative_to(artifact_dir)
        if not _regular(artifact_dir, path) or "node_modules" in relative.parts:
            continue
        interpreter = _interpreter(artifact_dir, path)
        if interpreter is not None:
            found.append((relative, interpreter))
    return found[:MAX_SCRIPTS]


def _doc_text(artifact_dir: Path) -> str:
    return "\n".join(_read(artifact_dir, artifact_dir / name) for name in ("SKILL.md", "README.md"))


def _documented_args(doc: str, script: Path) -> list[tuple[tuple[str, ...], bool]]:
    """Argument lists SKILL.md shows for `script`, and whether input is piped into it."""
    found: list[tuple[tuple[str, ...], bool]] = []
    for line in _command_lines(doc):
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        for n, word in enumerate(words):
            if word == str(script) or word.endswith("/" + str(script)) or word == script.name:
                args = tuple(_until_operator(words[n + 1 :]))
                piped = "|" in words[:n]
                if (args, piped) not in found:
                    found.append((args, piped))
                break
    return found[:MAX_DOCUMENTED]


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


def _until_operator(words: list[str]) -> Iterator[str]:
    for word in words:
        if word in _SHELL_OPERATORS or word.startswith((">", "2>")):
            return
        yield word.replace("~", HOME, 1) if word.startswith("~") else word


def _source_flags(artifact_dir: Path, path: Path) -> list[str]:
    """Long flags the script's own source names: the likeliest triggers."""
    text = _read(artifact_dir, path)
    return sorted(set(re.findall(r"""["'](--[a-z][a-z0-9-]{1,30})["']""", text)))


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


def _skill_plan(artifact_dir: Path) -> Plan:
    doc = _doc_text(artifact_dir)
    core: list[Step] = []
    variations: list[Step] = []
    placeholders: dict[str, str] = {}
    for relative, interpreter in _scripts(artifact_dir):
        base = (interpreter, _sandbox_path(relative))
        label = str(relative)
        core.append(Step(f"{label} (plain)", base))
        documented = _documented_args(doc, relative)
        for args, piped in documented:
            placeholders.update(_placeholders(args))
            stdin = _PLACEHOLDER_TEXT[".md"] if piped else ""
            core.append(Step(f"{label} {shlex.join(args)} (documented)", base + args, stdin=stdin))
        first_args = tuple(
            a for a in (documented[0][0] if documented else ()) if not a.startswith("-")
        )
        flags = list(
            dict.fromkeys([*COMMON_FLAGS, *_source_flags(artifact_dir, artifact_dir / relative)])
        )
        flags = [f for f in flags if f != "--help"][:MAX_TRIGGER_FLAGS]
        variations.append(Step(f"{label} --help", (*base, "--help")))
        variations.append(Step(f"{label} + trigger flags", base + first_args + tuple(flags)))
    unique_core = tuple(dict((s.argv, s) for s in core).values())
    unique_variations = tuple(
        s
        for s in dict((s.argv, s) for s in variations).values()
        if s.argv not in {c.argv for c in unique_core}
    )
    notes = () if core else ("no runnable script found",)
    return Plan(unique_core, unique_variations, placeholders=placeholders, notes=notes)


# --- MCP servers -------------------------------------------------------------------------


def _manifest(artifact_dir: Path) -> dict[str, object]:
    for name in ("mcp.json", "server.json", ".mcp.json"):
        try:
            data = json.loads(_read(artifact_dir, artifact_dir / name))
        except ValueError:
            continue
        if isinstance(data, dict):
            servers = data.get("mcpServers")
            if isinstance(servers, dict) and servers:
                first = next(iter(servers.values()))
                return first if isinstance(first, dict) else {}
            return data
    return {}


def _server_argv(artifact_dir: Path, manifest: dict[str, object]) -> tuple[str, ...] | None:
    command = manifest.get("command")
    args = manifest.get("args")
    words: list[str] = []
    if isinstance(command, list):
        words = [str(w) for w in command]
    elif isinstance(command, str):
        words = [command]
    if isinstance(args, list):
        words += [str(a) for a in args]
    if not words:
        for guess, interpreter in (("server.py", PYTHON), ("index.js", NODE), ("server.js", NODE)):
            if _regular(artifact_dir, artifact_dir / guess):
                return (interpreter, _sandbox_path(Path(guess)))
        return None
    return tuple(_resolve_word(artifact_dir, n, word) for n, word in enumerate(words))


def _resolve_word(artifact_dir: Path, position: int, word: str) -> str:
    if position == 0:
        name = PurePosixPath(word).name
        if name.startswith("python"):
            return PYTHON
        if name in ("node", "nodejs"):
            return NODE
        if name in ("sh", "bash"):
            return SH if name == "sh" else BASH
    relative = PurePosixPath(word)
    if (
        not relative.is_absolute()
        and ".." not in relative.parts
        and _regular(artifact_dir, artifact_dir / word)
    ):
        return _sandbox_path(relative)
    return word


def _mcp_plan(artifact_dir: Path) -> Plan:
    manifest = _manifest(artifact_dir)
    argv = _server_argv(artifact_dir, manifest)
    if argv is None:
        return Plan((), notes=("no MCP server command found",))
    env = manifest.get("env")
    step_env = (
        tuple(sorted((str(k), str(v)) for k, v in env.items())) if isinstance(env, dict) else ()
    )
    step = Step("mcp session", argv, kind="mcp", timeout_s=6.0, env=step_env)
    return Plan((step,))


# --- packages ----------------------------------------------------------------------------


def _package_plan(artifact_dir: Path, token: str) -> Plan:
    if _regular(artifact_dir, artifact_dir / "package.json"):
        return _npm_plan(artifact_dir, token)
    if any(_regular(artifact_dir, artifact_dir / n) for n in ("setup.py", "pyproject.toml")):
        return _pip_plan(artifact_dir, token)
    return Plan((), notes=("neither package.json nor setup.py/pyproject.toml found",))


def harness_dir(token: str) -> str:
    """The workspace directory the harness owns (copies, install targets)."""
    return f"{SANDBOX_WORKSPACE_DIR}/.assay-{token}"


# Installs the source tree the way pip does without an index or build isolation:
# setuptools' own `install` command (so setup.py runs, with every cmdclass and build
# hook), into a private target. pip itself is not used: under the tracer its start-up
# (platform probing, a metadata subprocess, wheel build and fallbacks) costs ~10 s.
_QUIET_SETUPTOOLS = (("PYTHONWARNINGS", "ignore"),)  # its deprecation notices bury real errors
_SETUPTOOLS_SHIM = "from setuptools import setup; setup()"
IMPORT_DRIVER = (
    "import importlib, os, sys\n"
    "site = sys.argv[1]\n"
    "sys.path.insert(0, site)\n"
    "for name in sorted(os.listdir(site)):\n"
    "    stem = name[:-3] if name.endswith('.py') else name\n"
    "    if name.endswith(('.egg-info', '.dist-info')) or not stem.isidentifier():\n"
    "        continue\n"
    "    if name.endswith('.py') or os.path.isfile(os.path.join(site, name, '__init__.py')):\n"
    "        try:\n"
    "            importlib.import_module(stem)\n"
    "        except Exception as exc:\n"
    "            print(f'import {stem} failed: {exc!r}', file=sys.stderr)\n"
)


def _pip_plan(artifact_dir: Path, token: str) -> Plan:
    source = f"{harness_dir(token)}/src"
    site = f"{harness_dir(token)}/site"
    has_setup_py = _regular(artifact_dir, artifact_dir / "setup.py")
    setup = ("setup.py",) if has_setup_py else ("-c", _SETUPTOOLS_SHIM)
    install = (
        PYTHON,
        *setup,
        "-q",
        # Absolute build and metadata directories: the tracer records the paths a
        # process names, and relative ones could not be told from the package's own.
        "egg_info",
        "--egg-base",
        f"{harness_dir(token)}/meta",
        "build",
        "--build-base",
        f"{harness_dir(token)}/build",
        "install",
        "--single-version-externally-managed",
        "--record",
        f"{harness_dir(token)}/installed.txt",
        "--root",
        "/",
        "--install-lib",
        site,
        "--install-scripts",
        f"{harness_dir(token)}/bin",
        "--install-data",
        f"{harness_dir(token)}/data",
        "--install-headers",
        f"{harness_dir(token)}/include",
    )
    steps = (
        Step("setup.py install (hooks)", install, cwd=source, timeout_s=8.0, env=_QUIET_SETUPTOOLS),
        Step("import the installed package", (PYTHON, "-c", IMPORT_DRIVER, site), timeout_s=3.0),
    )
    notes = () if has_setup_py else ("pyproject-only: setuptools reads [project]",)
    workdirs = tuple(f"{harness_dir(token)}/{name}" for name in ("meta", "build"))
    return Plan(steps, copies=(source,), workdirs=workdirs, notes=notes)


def _npm_plan(artifact_dir: Path, token: str) -> Plan:
    try:
        manifest = json.loads(_read(artifact_dir, artifact_dir / "package.json"))
    except ValueError:
        manifest = {}
    if not isinstance(manifest, dict):
        manifest = {}
    name = str(manifest.get("name") or "package").replace("/", "__")
    package_dir = f"{harness_dir(token)}/node_modules/{name}"
    scripts = manifest.get("scripts") if isinstance(manifest.get("scripts"), dict) else {}
    assert isinstance(scripts, dict)
    steps: list[Step] = []
    for event in _LIFECYCLE:
        command = scripts.get(event)
        if isinstance(command, str) and command.strip():
            env = (
                ("npm_lifecycle_event", event),
                ("npm_package_name", name),
                ("npm_package_version", str(manifest.get("version", ""))),
                ("INIT_CWD", PROJECT_DIR),
            )
            steps.append(
                Step(
                    f"npm {event}: {command[:80]}",
                    _lifecycle_argv(command),
                    cwd=package_dir,
                    env=env,
                )
            )
    require = f"require({json.dumps(package_dir)})"
    steps.append(Step("require the main module", (NODE, "-e", require), cwd=PROJECT_DIR))
    return Plan(tuple(steps), copies=(package_dir,))


def _lifecycle_argv(command: str) -> tuple[str, ...]:
    """npm runs lifecycle scripts with `sh -c`; a plain `node file.js` runs directly so
    the shell npm itself would start is not mistaken for the package's own."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = []
    simple = words and not any(c in command for c in "|&;<>$`()*?")
    if simple and words[0] == "node":
        return (NODE, *words[1:])
    return (SH, "-c", command)
