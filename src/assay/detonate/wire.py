"""The two documents that cross the sandbox wall in a detonation: the plan the
validator writes for the harness, and the log the harness writes back.

Standard library only: the harness imports this module inside the sandbox, under
the sandbox's own Python. `from_json` checks every shape and raises `WireError`;
the log is written by a process the artifact shares a sandbox with, so the
validator reads it only through `HarnessLog.from_json` and records a log that
does not parse as a disturbed detonation.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

PLAN_FILE = "plan.json"


class WireError(ValueError):
    """A document is not what the other side of the wall writes."""


# --- reading JSON values, every shape checked ---------------------------------------------


def _obj(value: object, where: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise WireError(f"{where}: not an object")
    return value


def _list(value: object, where: str) -> list[object]:
    if not isinstance(value, list):
        raise WireError(f"{where}: not a list")
    return value


def _str(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise WireError(f"{where}: not a string")
    return value


def _int(value: object, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise WireError(f"{where}: not an integer")
    return value


def _opt_int(value: object, where: str) -> int | None:
    return None if value is None else _int(value, where)


def _num(value: object, where: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise WireError(f"{where}: not a number")
    return float(value)


def _bool(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise WireError(f"{where}: not a boolean")
    return value


def _strs(value: object, where: str) -> tuple[str, ...]:
    return tuple(_str(v, f"{where}[{n}]") for n, v in enumerate(_list(value, where)))


def _str_map(value: object, where: str) -> dict[str, str]:
    return {k: _str(v, f"{where}.{k}") for k, v in _obj(value, where).items()}


def _each(value: object, where: str) -> list[tuple[str, object]]:
    return [(f"{where}[{n}]", v) for n, v in enumerate(_list(value, where))]


# --- the plan: validator -> harness --------------------------------------------------------


@dataclass(frozen=True)
class PlannedFile:
    """A file of the fake home, staged and hard-linked into place."""

    path: str
    data: bytes
    mode: int

    def to_json(self) -> dict[str, object]:
        encoded = base64.b64encode(self.data).decode()
        return {"path": self.path, "data": encoded, "mode": self.mode}

    @classmethod
    def from_json(cls, value: object, where: str) -> PlannedFile:
        o = _obj(value, where)
        try:
            data = base64.b64decode(_str(o.get("data"), f"{where}.data"), validate=True)
        except binascii.Error as exc:
            raise WireError(f"{where}.data: not base64") from exc
        return cls(_str(o.get("path"), f"{where}.path"), data, _int(o.get("mode"), f"{where}.mode"))


@dataclass(frozen=True)
class McpClient:
    """How the harness talks to an MCP server: its bounds, the client it claims to
    be, and the canary it puts in string arguments."""

    init_timeout_s: float
    request_timeout_s: float
    call_timeout_s: float
    max_tools: int
    client_name: str
    client_version: str
    canary: str

    def to_json(self) -> dict[str, object]:
        return {
            "init_timeout_s": self.init_timeout_s,
            "request_timeout_s": self.request_timeout_s,
            "call_timeout_s": self.call_timeout_s,
            "max_tools": self.max_tools,
            "client": {"name": self.client_name, "version": self.client_version},
            "canary": self.canary,
        }

    @classmethod
    def from_json(cls, value: object, where: str) -> McpClient:
        o = _obj(value, where)
        client = _obj(o.get("client"), f"{where}.client")
        return cls(
            init_timeout_s=_num(o.get("init_timeout_s"), f"{where}.init_timeout_s"),
            request_timeout_s=_num(o.get("request_timeout_s"), f"{where}.request_timeout_s"),
            call_timeout_s=_num(o.get("call_timeout_s"), f"{where}.call_timeout_s"),
            max_tools=_int(o.get("max_tools"), f"{where}.max_tools"),
            client_name=_str(client.get("name"), f"{where}.client.name"),
            client_version=_str(client.get("version"), f"{where}.client.version"),
            canary=_str(o.get("canary"), f"{where}.canary"),
        )


@dataclass(frozen=True)
class PlannedStep:
    """One child process: a command run to completion, or an MCP server to talk to."""

    name: str
    argv: tuple[str, ...]
    cwd: str
    timeout_s: float
    stdin: str = ""
    env: Mapping[str, str] = field(default_factory=dict)  # on top of the plan's
    mcp: McpClient | None = None  # set for an MCP session

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "name": self.name,
            "argv": list(self.argv),
            "cwd": self.cwd,
            "timeout_s": self.timeout_s,
            "stdin": self.stdin,
            "env": dict(self.env),
        }
        if self.mcp is not None:
            out["mcp"] = self.mcp.to_json()
        return out

    @classmethod
    def from_json(cls, value: object, where: str) -> PlannedStep:
        o = _obj(value, where)
        mcp = o.get("mcp")
        return cls(
            name=_str(o.get("name"), f"{where}.name"),
            argv=_strs(o.get("argv"), f"{where}.argv"),
            cwd=_str(o.get("cwd"), f"{where}.cwd"),
            timeout_s=_num(o.get("timeout_s"), f"{where}.timeout_s"),
            stdin=_str(o.get("stdin"), f"{where}.stdin"),
            env=_str_map(o.get("env"), f"{where}.env"),
            mcp=None if mcp is None else McpClient.from_json(mcp, f"{where}.mcp"),
        )


@dataclass(frozen=True)
class HarnessPlan:
    """Everything one profile's harness run does, in order."""

    stage: str  # the harness's staging directory (canary files, hooks)
    files: tuple[PlannedFile, ...]
    dirs: tuple[str, ...]  # created before the steps
    placeholders: Mapping[str, str]  # sandbox path -> content, written directly
    copies: tuple[str, ...]  # where the artifact is copied (writable trees)
    links: Mapping[str, str]  # sandbox symlink -> its target
    user_site: str  # the fake home's user site-packages (the egress hook goes there)
    site_paths: tuple[str, ...]  # extra import paths for Python children
    scan_roots: tuple[str, ...]  # scanned for canary values after every step
    scan_skip: tuple[str, ...]
    needles: Mapping[str, tuple[str, ...]]  # canary name -> the forms it may take
    env: Mapping[str, str]  # every step's environment
    steps: tuple[PlannedStep, ...]
    deadline_s: float  # no step starts after this many seconds
    log_cap: int  # bytes the log may take

    def to_json(self) -> dict[str, object]:
        return {
            "stage": self.stage,
            "files": [f.to_json() for f in self.files],
            "dirs": list(self.dirs),
            "placeholders": dict(self.placeholders),
            "copies": list(self.copies),
            "links": dict(self.links),
            "user_site": self.user_site,
            "site_paths": list(self.site_paths),
            "scan_roots": list(self.scan_roots),
            "scan_skip": list(self.scan_skip),
            "needles": {name: list(forms) for name, forms in self.needles.items()},
            "env": dict(self.env),
            "steps": [s.to_json() for s in self.steps],
            "deadline_s": self.deadline_s,
            "log_cap": self.log_cap,
        }

    @classmethod
    def from_json(cls, value: object) -> HarnessPlan:
        o = _obj(value, "plan")
        needles = _obj(o.get("needles"), "plan.needles")
        return cls(
            stage=_str(o.get("stage"), "plan.stage"),
            files=tuple(
                PlannedFile.from_json(v, w) for w, v in _each(o.get("files"), "plan.files")
            ),
            dirs=_strs(o.get("dirs"), "plan.dirs"),
            placeholders=_str_map(o.get("placeholders"), "plan.placeholders"),
            copies=_strs(o.get("copies"), "plan.copies"),
            links=_str_map(o.get("links"), "plan.links"),
            user_site=_str(o.get("user_site"), "plan.user_site"),
            site_paths=_strs(o.get("site_paths"), "plan.site_paths"),
            scan_roots=_strs(o.get("scan_roots"), "plan.scan_roots"),
            scan_skip=_strs(o.get("scan_skip"), "plan.scan_skip"),
            needles={k: _strs(v, f"plan.needles.{k}") for k, v in needles.items()},
            env=_str_map(o.get("env"), "plan.env"),
            steps=tuple(
                PlannedStep.from_json(v, w) for w, v in _each(o.get("steps"), "plan.steps")
            ),
            deadline_s=_num(o.get("deadline_s"), "plan.deadline_s"),
            log_cap=_int(o.get("log_cap"), "plan.log_cap"),
        )


# --- the log: harness -> validator ---------------------------------------------------------


@dataclass(frozen=True)
class CanaryHit:
    """A canary value the harness found in a file of the writable areas."""

    canary: str
    path: str

    def to_json(self) -> dict[str, object]:
        return {"canary": self.canary, "path": self.path}

    @classmethod
    def from_json(cls, value: object, where: str) -> CanaryHit:
        o = _obj(value, where)
        return cls(_str(o.get("canary"), f"{where}.canary"), _str(o.get("path"), f"{where}.path"))


@dataclass(frozen=True)
class Egress:
    """What one connection redirected to the harness's sink carried."""

    peer: str  # the peer the artifact meant to reach
    size: int  # bytes sent
    http_method: str  # "" when it was not HTTP
    request_line: str
    canaries: tuple[str, ...]  # canary values found in what was sent

    def to_json(self) -> dict[str, object]:
        return {
            "peer": self.peer,
            "bytes": self.size,
            "http_method": self.http_method,
            "request_line": self.request_line,
            "canaries": list(self.canaries),
        }

    @classmethod
    def from_json(cls, value: object, where: str) -> Egress:
        o = _obj(value, where)
        return cls(
            peer=_str(o.get("peer"), f"{where}.peer"),
            size=_int(o.get("bytes"), f"{where}.bytes"),
            http_method=_str(o.get("http_method"), f"{where}.http_method"),
            request_line=_str(o.get("request_line"), f"{where}.request_line"),
            canaries=_strs(o.get("canaries"), f"{where}.canaries"),
        )


def _hits(o: Mapping[str, object], where: str) -> tuple[CanaryHit, ...]:
    return tuple(CanaryHit.from_json(v, w) for w, v in _each(o.get("canary_hits"), where))


def _egress(o: Mapping[str, object], where: str) -> tuple[Egress, ...]:
    return tuple(Egress.from_json(v, w) for w, v in _each(o.get("egress"), where))


@dataclass(frozen=True)
class McpTool:
    """A tool as the server listed it, its input schema cut down by the harness."""

    name: str
    description: str
    input_schema: Mapping[str, object]

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        }

    @classmethod
    def from_json(cls, value: object, where: str) -> McpTool:
        o = _obj(value, where)
        return cls(
            name=_str(o.get("name"), f"{where}.name"),
            description=_str(o.get("description"), f"{where}.description"),
            input_schema=_obj(o.get("inputSchema"), f"{where}.inputSchema"),
        )


@dataclass(frozen=True)
class McpCall:
    """One tools/call: how it ended, and what the harness saw right after it."""

    tool: str
    outcome: str  # ok | error | tool_error | malformed | timeout | closed | flood | skipped: ...
    canary_hits: tuple[CanaryHit, ...] = ()
    egress: tuple[Egress, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "tool": self.tool,
            "outcome": self.outcome,
            "canary_hits": [h.to_json() for h in self.canary_hits],
            "egress": [e.to_json() for e in self.egress],
        }

    @classmethod
    def from_json(cls, value: object, where: str) -> McpCall:
        o = _obj(value, where)
        return cls(
            tool=_str(o.get("tool"), f"{where}.tool"),
            outcome=_str(o.get("outcome"), f"{where}.outcome"),
            canary_hits=_hits(o, f"{where}.canary_hits"),
            egress=_egress(o, f"{where}.egress"),
        )


@dataclass(frozen=True)
class McpSessionEnd:
    """How the server's session ended."""

    crashed: bool  # exited non-zero before the harness closed it
    exit: int | None
    malformed_lines: int
    flooded: bool  # wrote more than the harness reads
    tools_changed: int  # notifications/tools/list_changed received
    stdout_bytes: int

    def to_json(self) -> dict[str, object]:
        return {
            "crashed": self.crashed,
            "exit": self.exit,
            "malformed_lines": self.malformed_lines,
            "flooded": self.flooded,
            "tools_changed": self.tools_changed,
            "stdout_bytes": self.stdout_bytes,
        }

    @classmethod
    def from_json(cls, value: object, where: str) -> McpSessionEnd:
        o = _obj(value, where)
        return cls(
            crashed=_bool(o.get("crashed"), f"{where}.crashed"),
            exit=_opt_int(o.get("exit"), f"{where}.exit"),
            malformed_lines=_int(o.get("malformed_lines"), f"{where}.malformed_lines"),
            flooded=_bool(o.get("flooded"), f"{where}.flooded"),
            tools_changed=_int(o.get("tools_changed"), f"{where}.tools_changed"),
            stdout_bytes=_int(o.get("stdout_bytes"), f"{where}.stdout_bytes"),
        )


@dataclass(frozen=True)
class McpLog:
    """One MCP session: initialise, list, call every tool (and any list it changes to)."""

    initialize: str  # the initialize request's outcome
    session: McpSessionEnd
    tools: tuple[McpTool, ...] = ()
    calls: tuple[McpCall, ...] = ()
    list_failure: str = ""  # why tools/list could not be read
    changed_tools: tuple[McpTool, ...] = ()  # new tools after tools/list_changed

    def to_json(self) -> dict[str, object]:
        return {
            "initialize": self.initialize,
            "session": self.session.to_json(),
            "tools": [t.to_json() for t in self.tools],
            "calls": [c.to_json() for c in self.calls],
            "list_failure": self.list_failure,
            "changed_tools": [t.to_json() for t in self.changed_tools],
        }

    @classmethod
    def from_json(cls, value: object, where: str) -> McpLog:
        o = _obj(value, where)
        return cls(
            initialize=_str(o.get("initialize"), f"{where}.initialize"),
            session=McpSessionEnd.from_json(o.get("session"), f"{where}.session"),
            tools=tuple(
                McpTool.from_json(v, w) for w, v in _each(o.get("tools"), f"{where}.tools")
            ),
            calls=tuple(
                McpCall.from_json(v, w) for w, v in _each(o.get("calls"), f"{where}.calls")
            ),
            list_failure=_str(o.get("list_failure"), f"{where}.list_failure"),
            changed_tools=tuple(
                McpTool.from_json(v, w)
                for w, v in _each(o.get("changed_tools"), f"{where}.changed_tools")
            ),
        )

    def cut(self, keep: int) -> McpLog:
        return replace(
            self,
            tools=self.tools[:keep],
            calls=self.calls[:keep],
            changed_tools=self.changed_tools[:keep],
        )


@dataclass(frozen=True)
class StepLog:
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

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "exit": self.exit,
            "timed_out": self.timed_out,
            "output_bytes": self.output_bytes,
            "stderr_tail": self.stderr_tail,
            "error": self.error,
            "mcp": None if self.mcp is None else self.mcp.to_json(),
            "canary_hits": [h.to_json() for h in self.canary_hits],
            "egress": [e.to_json() for e in self.egress],
        }

    @classmethod
    def from_json(cls, value: object, where: str) -> StepLog:
        o = _obj(value, where)
        mcp = o.get("mcp")
        return cls(
            name=_str(o.get("name"), f"{where}.name"),
            exit=_opt_int(o.get("exit"), f"{where}.exit"),
            timed_out=_bool(o.get("timed_out"), f"{where}.timed_out"),
            output_bytes=_int(o.get("output_bytes"), f"{where}.output_bytes"),
            stderr_tail=_str(o.get("stderr_tail"), f"{where}.stderr_tail"),
            error=_str(o.get("error"), f"{where}.error"),
            mcp=None if mcp is None else McpLog.from_json(mcp, f"{where}.mcp"),
            canary_hits=_hits(o, f"{where}.canary_hits"),
            egress=_egress(o, f"{where}.egress"),
        )

    def cut(self, keep: int) -> StepLog:
        return replace(
            self,
            canary_hits=self.canary_hits[:keep],
            egress=self.egress[:keep],
            stderr_tail=self.stderr_tail[: keep * 8],
            mcp=None if self.mcp is None else self.mcp.cut(keep),
        )


@dataclass(frozen=True)
class HarnessLog:
    """Everything one harness run reports."""

    steps: tuple[StepLog, ...] = ()
    skipped: tuple[str, ...] = ()  # steps not started: the deadline had passed
    errors: tuple[str, ...] = ()  # what went wrong in the harness itself
    sink_port: int | None = None  # the egress sink's loopback port
    truncated: bool = False  # cut down to fit its cap
    elapsed_s: float = 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "steps": [s.to_json() for s in self.steps],
            "skipped": list(self.skipped),
            "errors": list(self.errors),
            "sink_port": self.sink_port,
            "truncated": self.truncated,
            "elapsed_s": self.elapsed_s,
        }

    @classmethod
    def from_json(cls, value: object) -> HarnessLog:
        o = _obj(value, "log")
        return cls(
            steps=tuple(StepLog.from_json(v, w) for w, v in _each(o.get("steps"), "log.steps")),
            skipped=_strs(o.get("skipped"), "log.skipped"),
            errors=_strs(o.get("errors"), "log.errors"),
            sink_port=_opt_int(o.get("sink_port"), "log.sink_port"),
            truncated=_bool(o.get("truncated"), "log.truncated"),
            elapsed_s=_num(o.get("elapsed_s"), "log.elapsed_s"),
        )

    def cut(self, keep: int) -> HarnessLog:
        """Per-step detail cut to `keep` items (the log said to be truncated)."""
        return replace(self, steps=tuple(s.cut(keep) for s in self.steps), truncated=True)
