"""The two documents that cross the sandbox wall in a detonation: the plan the
validator writes for the harness, and the log the harness writes back.

Standard library only: the harness imports this module inside the sandbox, under
the sandbox's own Python. Each document is a tree of frozen dataclasses whose
JSON form follows their fields (tuples as lists); `from_json`
checks every value against its field's type and raises `WireError` naming where.
The log is written by a process the artifact shares a sandbox with, so the
validator reads it only through `HarnessLog.from_json`, and a log that does not
parse is recorded as a disturbed detonation.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

# `typing` is not imported at run time: the harness pays for every module it loads,
# under the tracer, out of the artifact's budget.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Self

PLAN_FILE = "plan.json"


class WireError(ValueError):
    """A document is not what the other side of the wall writes."""


class _Wire:
    """The JSON form of a frozen dataclass of wire types."""

    def to_json(self) -> dict[str, object]:
        return {f.name: _encode(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_json(cls, value: object, where: str = "") -> Self:
        decoded: Self = _decode(cls, value, where or cls.__name__)
        return decoded


def _encode(value: object) -> object:
    if isinstance(value, _Wire):
        return value.to_json()
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _encode(v) for k, v in value.items()}
    return value


def _decode(hint: Any, value: object, where: str) -> Any:
    """`value` as the type `hint` names (only the shapes the wire types use)."""
    if isinstance(hint, types.UnionType):  # X | None
        (inner,) = (a for a in hint.__args__ if a is not type(None))
        return None if value is None else _decode(inner, value, where)
    origin = getattr(hint, "__origin__", None)
    args: tuple[Any, ...] = getattr(hint, "__args__", ())
    if origin is tuple:  # tuple[X, ...]
        items = _checked(list, value, where, "a list")
        return tuple(_decode(args[0], v, f"{where}[{n}]") for n, v in enumerate(items))
    if origin is Mapping:  # Mapping[str, X]; Mapping[str, object] is any JSON object
        pairs = _checked(dict, value, where, "an object")
        if args[1] is object:
            return pairs
        return {k: _decode(args[1], v, f"{where}.{k}") for k, v in pairs.items()}
    if isinstance(hint, type) and issubclass(hint, _Wire):
        pairs = _checked(dict, value, where, "an object")
        hints = _field_types(hint)
        missing = [name for name in hints if name not in pairs]
        if missing:
            raise WireError(f"{where}.{missing[0]}: missing")
        return hint(**{k: _decode(t, pairs[k], f"{where}.{k}") for k, t in hints.items()})
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint in (str, bool, int, float):
        # bool is an int to Python, never to the other side of the wall.
        if isinstance(value, bool) != (hint is bool):
            raise WireError(f"{where}: not {_NAMES[hint]}")
        return _checked(hint, value, where, _NAMES[hint])
    raise TypeError(f"{hint!r} has no wire form")


_NAMES = {str: "a string", bool: "a boolean", int: "an integer", float: "a number"}


_FIELD_TYPES: dict[type[_Wire], dict[str, Any]] = {}


def _field_types(cls: type[_Wire]) -> dict[str, Any]:
    """Each field's type, in field order (annotations are strings until resolved)."""
    if cls not in _FIELD_TYPES:
        names = vars(sys.modules[cls.__module__])
        _FIELD_TYPES[cls] = {f.name: eval(str(f.type), names) for f in fields(cls)}  # type: ignore[arg-type]
    return _FIELD_TYPES[cls]


def _checked(kind: type, value: object, where: str, name: str) -> Any:
    if not isinstance(value, kind):
        raise WireError(f"{where}: not {name}")
    return value


# --- the plan: validator -> harness --------------------------------------------------------


@dataclass(frozen=True)
class McpClient(_Wire):
    """How the harness talks to an MCP server: its bounds, the client it claims to
    be, and the canary it puts in string arguments."""

    init_timeout_s: float
    request_timeout_s: float
    call_timeout_s: float
    max_tools: int
    client_name: str
    client_version: str
    canary: str
    # A file that exists in the server's folder, given to arguments that name a file;
    # the project folder, the client's root (`roots/list`).
    sample_file: str = ""
    project: str = ""


@dataclass(frozen=True)
class PlannedStep(_Wire):
    """One child process: a command run to completion, or an MCP server to talk to."""

    name: str
    argv: tuple[str, ...]
    cwd: str
    timeout_s: float
    stdin: str = ""
    env: Mapping[str, str] = field(default_factory=dict)  # on top of the plan's
    mcp: McpClient | None = None  # set for an MCP session
    needed: bool = False  # when it fails (an exit other than 0), no later step runs


@dataclass(frozen=True)
class ProjectRepo(_Wire):
    """The project folder as a user's clone: a git repository with one commit of these
    files, made `age_s` seconds ago by `author`, its `origin` at `remote`."""

    path: str
    files: Mapping[str, str]
    author: str
    email: str
    age_s: int
    remote: str


@dataclass(frozen=True)
class HarnessPlan(_Wire):
    """Everything one profile's harness run does, in order."""

    stage: str  # the harness's staging directory (its hooks)
    # Files the validator planted in the home (canaries, profiles): never opened by the
    # harness, whose scan skips them (the validator watches them by inode).
    planted: tuple[str, ...]
    dirs: tuple[str, ...]  # created before the steps
    placeholders: Mapping[str, str]  # sandbox path -> content, written directly
    copies: tuple[str, ...]  # where the artifact is copied (writable trees)
    links: Mapping[str, str]  # sandbox symlink -> its target
    user_site: str  # the fake home's user site-packages (`site_paths` are added there)
    site_paths: tuple[str, ...]  # extra import paths for Python children
    scan_roots: tuple[str, ...]  # scanned for canary values after every step
    scan_skip: tuple[str, ...]
    needles: Mapping[str, tuple[str, ...]]  # canary name -> the forms it may take
    env: Mapping[str, str]  # every step's environment
    steps: tuple[PlannedStep, ...]
    # No step starts once the harness's tree has used this many CPU seconds, or after
    # BACKSTOP_FACTOR times as many wall seconds (the host may be busy).
    deadline_s: float
    log_cap: int  # bytes the log may take
    repo: ProjectRepo | None = None  # made before the steps
    artifact: str = ""  # where the artifact's clone is, which `copies` are copied from
    # The harness's own input directory (this plan's), removed once read: "" to keep it.
    inputs: str = ""


# --- the log: harness -> validator ---------------------------------------------------------


@dataclass(frozen=True)
class CanaryHit(_Wire):
    """A canary value the harness found in a file of the writable areas."""

    canary: str
    path: str


@dataclass(frozen=True)
class Egress(_Wire):
    """What one connection carried, as the run's network sink saw it (the validator
    adds these to the step or call it happened in: `assay.detonate.network`)."""

    peer: str  # the peer the artifact meant to reach: host name, or else address, and port
    size: int  # bytes sent
    http_method: str  # "" when it was not HTTP
    request_line: str
    canaries: tuple[str, ...]  # canary values found in what was sent


@dataclass(frozen=True)
class McpTool(_Wire):
    """A tool as the server listed it, its input schema cut down by the harness."""

    name: str
    description: str
    input_schema: Mapping[str, object]


@dataclass(frozen=True)
class McpCall(_Wire):
    """One tools/call: how it ended, and what the harness saw right after it."""

    tool: str
    outcome: str  # ok | error | tool_error | malformed | timeout | closed | flood | skipped: ...
    canary_hits: tuple[CanaryHit, ...] = ()
    egress: tuple[Egress, ...] = ()
    variation: str = ""  # which argument differs from the base call ("" for the base call)
    started: float = 0.0  # CLOCK_MONOTONIC seconds (the network sink's clock)


@dataclass(frozen=True)
class McpSessionEnd(_Wire):
    """How the server's session ended."""

    crashed: bool  # exited non-zero before the harness closed it
    exit: int | None
    malformed_lines: int
    flooded: bool  # wrote more than the harness reads
    tools_changed: int  # notifications/tools/list_changed received
    stdout_bytes: int


@dataclass(frozen=True)
class McpLog(_Wire):
    """One MCP session: initialise, list, call every tool (and any list it changes to)."""

    initialize: str  # the initialize request's outcome
    session: McpSessionEnd
    tools: tuple[McpTool, ...] = ()
    calls: tuple[McpCall, ...] = ()
    list_failure: str = ""  # why tools/list could not be read
    changed_tools: tuple[McpTool, ...] = ()  # tools listed anew mid-session (a rug pull)
    variations_left_out: int = 0  # argument variations past the per-tool cap
    # resources/read of each listed resource and prompts/get of each listed prompt (the
    # `tool` field names the resource or prompt), when the server declared them.
    reads: tuple[McpCall, ...] = ()
    read_failure: str = ""  # why a declared resources/list or prompts/list could not be read
    server_requests: tuple[str, ...] = ()  # methods of the requests the server sent the client

    def cut(self, keep: int) -> McpLog:
        return replace(
            self,
            tools=self.tools[:keep],
            calls=self.calls[:keep],
            changed_tools=self.changed_tools[:keep],
            reads=self.reads[:keep],
            server_requests=self.server_requests[:keep],
        )


@dataclass(frozen=True)
class StepLog(_Wire):
    """What one planned step did: a child's exit and output, or an MCP session, or why
    it could not start; and what the harness found after it."""

    name: str
    exit: int | None = None  # None: killed at its timeout, or never started
    timed_out: bool = False
    output_bytes: int = 0
    stderr_tail: str = ""
    error: str = ""  # why it could not run
    mcp: McpLog | None = None
    canary_hits: tuple[CanaryHit, ...] = ()
    egress: tuple[Egress, ...] = ()
    # Why it was stopped: "" (it exited), cpu (its CPU budget spent), idle (asleep past
    # its timeout) or wall (still working at its wall backstop: the host was busy).
    stopped: str = ""
    attempts: int = 1  # 2: its first run was stopped at the wall backstop, and it ran again
    started: float = 0.0  # CLOCK_MONOTONIC seconds (the network sink's clock)

    def cut(self, keep: int) -> StepLog:
        return replace(
            self,
            canary_hits=self.canary_hits[:keep],
            egress=self.egress[:keep],
            stderr_tail=self.stderr_tail[: keep * 8],
            mcp=None if self.mcp is None else self.mcp.cut(keep),
        )


@dataclass(frozen=True)
class HarnessLog(_Wire):
    """Everything one harness run reports."""

    steps: tuple[StepLog, ...] = ()
    skipped: tuple[str, ...] = ()  # steps not started: the deadline had passed
    errors: tuple[str, ...] = ()  # what went wrong in the harness itself
    # Command lines of processes still alive once every step had ended (a detached
    # grandchild that waits out the watch): what they do next is not seen.
    survivors: tuple[str, ...] = ()
    truncated: bool = False  # cut down to fit its cap
    elapsed_s: float = 0.0
    # The change time (ns) of a file the harness made once it had laid out the home and
    # the project, before any step: no later write has one as early (0: never reached).
    layout_done_ns: int = 0

    def cut(self, keep: int) -> HarnessLog:
        """Per-step detail cut to `keep` items (the log said to be truncated)."""
        return replace(self, steps=tuple(s.cut(keep) for s in self.steps), truncated=True)
