"""Detonate one artifact: one sealed harness run per profile, mapped to capabilities."""

from __future__ import annotations

import base64
import json
import os
import time
from collections import defaultdict
from collections.abc import Collection, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from assay.detonate.canaries import (
    HOME,
    PLAIN_HOME_FILES,
    USER,
    CanarySet,
    make_canaries,
)
from assay.detonate.mapping import (
    Attribution,
    home_relative,
    map_harness,
    map_trace,
    map_uploads,
)
from assay.detonate.model import (
    MAX_EVENTS_PER_KIND,
    Detonation,
    Evidence,
    ObservedCapability,
    ProfileRun,
    StepOutcome,
    clip,
)
from assay.detonate.plan import (
    PROJECT_DIR,
    Plan,
    Profile,
    Step,
    build_plan,
    find_libfaketime,
    harness_dir,
)
from assay.mechanism.spec import Track
from assay.sandbox.interface import (
    SANDBOX_ARTIFACT_DIR,
    SANDBOX_INPUT_DIR,
    SANDBOX_WORKSPACE_DIR,
    InputFile,
    Observation,
    Peer,
    ResourceLimits,
    SandboxBackend,
    SealedRequest,
    TraceSet,
)

HARNESS_FLAGS = ("-I", "-S", "-B")
_STDERR_SHOWN = 240
PARALLEL_PROFILES = 2


@dataclass(frozen=True)
class Budget:
    """Bounds of one detonation. Each profile is one sealed run with its own CPU
    budget; the harness stops starting steps at its deadline; the whole detonation
    stops starting profiles once `total_wall_s` is spent."""

    profile_cpu_s: float = 5.0
    profile_deadline_s: float = 7.0
    total_wall_s: float = 18.0
    memory_bytes: int = 1 << 30
    pids: int = 128
    workspace_bytes: int = 64 << 20
    trace_bytes: int = 32 << 20  # every file, process and network event of a profile

    def limits(self) -> ResourceLimits:
        return ResourceLimits(
            cpu_budget_s=self.profile_cpu_s,
            wall_backstop_s=self.profile_deadline_s + 3.0,
            memory_bytes=self.memory_bytes,
            pids=self.pids,
            workspace_bytes=self.workspace_bytes,
            result_bytes=1 << 20,
            trace_bytes=self.trace_bytes,
        )


DEFAULT_BUDGET = Budget()


def harness_source() -> bytes:
    return resources.files("assay.detonate").joinpath("harness.py").read_bytes()


def detonate(
    artifact_dir: Path,
    track: Track,
    *,
    backend: SandboxBackend,
    budget: Budget = DEFAULT_BUDGET,
    seed: bytes | None = None,
    only: Collection[str] | None = None,
) -> Detonation:
    """Run the artifact under every profile (or those named in `only`) in the
    sandbox and map what it did.

    `InfrastructureError` from the backend propagates: a broken sandbox is never
    reported as a clean artifact.
    """
    if not track.behavioural:
        raise ValueError(f"the {track.value} track is not detonated")
    seed = seed if seed is not None else os.urandom(16)
    token = seed.hex()[:16]
    setup = _Setup(
        artifact_dir=artifact_dir,
        plan=build_plan(artifact_dir, track, token),
        canaries=make_canaries(seed),
        token=token,
        backend=backend,
        budget=budget,
        libfaketime=find_libfaketime(),
        started=time.monotonic(),
    )
    profiles = [p for p in setup.plan.profiles() if only is None or p.name in only]
    notes = list(setup.plan.notes)
    if setup.libfaketime is None and any(p.clock_offset for p in profiles):
        notes.append("libfaketime is not installed: the shifted-clock profiles did not run")
        profiles = [p for p in profiles if p.clock_offset is None]
    # Profiles are independent sealed runs; two at a time roughly halves the wall time
    # (much of a run is spent waiting on the tracer, not on a CPU).
    with ThreadPoolExecutor(max_workers=PARALLEL_PROFILES) as pool:
        results = list(pool.map(setup.run, profiles))
    observations = [(r.profile, r.observation, r.log) for r in results if r.observation]
    return Detonation(
        track=track,
        capabilities=_aggregate(
            [e for r in results for e in r.evidence], [p.name for p in profiles]
        ),
        profiles=tuple(r.run for r in results),
        events=_event_summary(observations, setup.canaries, setup.plan, token),
        mcp=_mcp_summary(observations) if track is Track.MCP_SERVERS else None,
        notes=tuple(notes),
    )


@dataclass(frozen=True)
class _ProfileResult:
    profile: Profile
    run: ProfileRun
    evidence: tuple[Evidence, ...] = ()
    observation: Observation | None = None  # None: skipped
    log: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Setup:
    """Everything the profile runs of one detonation share."""

    artifact_dir: Path
    plan: Plan
    canaries: CanarySet
    token: str
    backend: SandboxBackend
    budget: Budget
    libfaketime: str | None
    started: float

    def run(self, profile: Profile) -> _ProfileResult:
        if time.monotonic() - self.started > self.budget.total_wall_s:
            return _ProfileResult(profile, ProfileRun(profile.name, profile.description, "skipped"))
        observation = self.backend.run(self.request(profile))
        log = _parse_log(observation)
        who = self.attribution(profile)
        evidence = map_trace(observation.trace, who) + map_harness(log, profile.name)
        evidence += map_uploads(observation.trace.execs, log, who)
        status = observation.limit_hit.value if observation.limit_hit else "ok"
        if not log and status == "ok":
            status = "harness_failed"
        run = ProfileRun(
            name=profile.name,
            description=profile.description,
            status=status,
            steps=_step_outcomes(self.plan.steps_for(profile), log, self.token),
            skipped_steps=tuple(str(s) for s in log.get("skipped", [])),
            capabilities=tuple(sorted({e.capability for e in evidence})),
            cpu_s=observation.cpu_s,
            wall_s=observation.wall_s,
        )
        return _ProfileResult(profile, run, tuple(evidence), observation, log)

    def request(self, profile: Profile) -> SealedRequest:
        harness_plan = _harness_plan(
            self.plan,
            profile,
            self.canaries,
            self.token,
            self.budget.profile_deadline_s,
            self.libfaketime,
        )
        return SealedRequest(
            argv=_harness_argv(self.backend),
            limits=self.budget.limits(),
            inputs=(
                InputFile("harness.py", harness_source()),
                InputFile("plan.json", json.dumps(harness_plan).encode()),
            ),
            artifact_dir=str(self.artifact_dir),
            trace=TraceSet.FULL,
        )

    def attribution(self, profile: Profile) -> Attribution:
        """What in this profile's run is the harness's own, not the artifact's."""
        steps = self.plan.steps_for(profile)
        return Attribution(
            profile=profile.name,
            canaries=self.canaries,
            harness_argvs=frozenset({_harness_argv(self.backend), *(s.argv for s in steps)}),
            harness_prefixes=(_stage_dir(self.token) + "/", harness_dir(self.token) + "/"),
            harness_files=frozenset(self.plan.placeholders),
        )


def _harness_plan(
    plan: Plan,
    profile: Profile,
    canaries: CanarySet,
    token: str,
    deadline_s: float,
    libfaketime: str | None,
) -> dict[str, Any]:
    files = [
        {"path": path, "data": base64.b64encode(data).decode(), "mode": 0o600}
        for path, data in canaries.files.items()
    ]
    files += [
        {"path": f"{HOME}/{rel}", "data": base64.b64encode(text.encode()).decode(), "mode": 0o644}
        for rel, text in PLAIN_HOME_FILES.items()
    ]
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": HOME,
        "USER": USER,
        "LOGNAME": USER,
        "SHELL": "/bin/bash",
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "PYTHONDONTWRITEBYTECODE": "1",  # no __pycache__ writes mistaken for the artifact's
        **canaries.env,
        **dict(profile.env),
        **(profile.clock_env(libfaketime) if libfaketime else {}),
    }
    return {
        "stage": _stage_dir(token),
        "files": files,
        "dirs": [HOME, PROJECT_DIR, *plan.workdirs],
        "placeholders": plan.placeholders,
        "copies": list(plan.copies),
        "scan_roots": ["/tmp", SANDBOX_WORKSPACE_DIR],
        "scan_skip": [_stage_dir(token)],
        "needles": {name: list(forms) for name, forms in canaries.needles.items()},
        "env": env,
        "steps": [_step_json(step, token) for step in plan.steps_for(profile)],
        "deadline_s": deadline_s,
    }


def _stage_dir(token: str) -> str:
    return f"/tmp/.assay-{token}"


def _step_json(step: Step, token: str) -> dict[str, Any]:
    out = step.to_json()
    if step.kind == "mcp":
        out["mcp"] = {"request_timeout_s": 2.0, "call_timeout_s": 1.5, "max_tools": 16}
        out["canary"] = f"canary-{token[:8]}"
    return out


def _harness_argv(backend: SandboxBackend) -> tuple[str, ...]:
    return (backend.python, *HARNESS_FLAGS, f"{SANDBOX_INPUT_DIR}/harness.py")


def _parse_log(observation: Observation) -> dict[str, Any]:
    try:
        log = json.loads(observation.result.data)
    except ValueError:
        return {}
    return log if isinstance(log, dict) else {}


def _step_outcomes(
    steps: Iterable[Step], log: dict[str, Any], token: str
) -> tuple[StepOutcome, ...]:
    """Each step's outcome; the harness's random directory name is shown as `.assay`."""
    records = {r.get("name"): r for r in log.get("steps", []) if isinstance(r, dict)}
    out = []
    for step in steps:
        record = records.get(step.name)
        if record is None:
            continue
        exit_code = record.get("exit")
        out.append(
            StepOutcome(
                name=step.name,
                argv=tuple(a.replace(f".assay-{token}", ".assay") for a in step.argv),
                exit_code=exit_code if isinstance(exit_code, int) else None,
                timed_out=bool(record.get("timed_out")),
                error=str(record.get("error", "")),
                stderr_tail=str(record.get("stderr_tail", ""))[-_STDERR_SHOWN:],
            )
        )
    return tuple(out)


def _aggregate(
    evidence: list[Evidence], profile_order: list[str]
) -> tuple[ObservedCapability, ...]:
    rank = {name: n for n, name in enumerate(profile_order)}
    by_capability: dict[str, set[Evidence]] = defaultdict(set)
    for item in evidence:
        by_capability[item.capability].add(item)
    out = []
    for capability in sorted(by_capability):
        items = sorted(by_capability[capability], key=lambda e: (rank.get(e.profile, 99), e))
        profiles = sorted({e.profile for e in items}, key=lambda p: rank.get(p, 99))
        out.append(ObservedCapability(capability, tuple(items), tuple(profiles)))
    return tuple(out)


def _event_summary(
    observations: list[tuple[Profile, Observation, dict[str, Any]]],
    canaries: CanarySet,
    plan: Plan,
    token: str,
) -> dict[str, list[Any]]:
    """The raw events of every profile, the harness's own left out; sorted and capped."""
    ignored = (_stage_dir(token), harness_dir(token), SANDBOX_ARTIFACT_DIR + "/", "/dev/", "/proc/")
    planned = {s.argv for p, _, _ in observations for s in plan.steps_for(p)}
    kinds: dict[str, set[str]] = defaultdict(set)
    for _profile, observation, log in observations:
        trace = observation.trace
        kinds["execs"].update(
            clip(" ".join(argv), 200) for argv in trace.execs[1:] if argv not in planned
        )
        kinds["reads"].update(home_relative(p) for p in trace.reads if not p.startswith(ignored))
        kinds["writes"].update(
            home_relative(p)
            for p in (*trace.writes, *(dst for _, dst in trace.renames))
            if not p.startswith(ignored) and p not in plan.placeholders
        )
        kinds["unlinks"].update(
            home_relative(p) for p in trace.unlinks if not p.startswith(ignored)
        )
        kinds["connects"].update(
            f"{c.family}:{c.address}:{c.port}"
            for c in trace.connects
            if not _harness_peer(c, log.get("sink_port"))
        )
        kinds["dns"].update(trace.dns_queries)
        for step in log.get("steps", []):
            for hit in step.get("canary_hits") or [] if isinstance(step, dict) else []:
                kinds["canary_hits"].add(
                    f"{hit.get('canary')} in {home_relative(str(hit.get('path')))}"
                )
    kinds["reads"] -= {"/tmp", SANDBOX_WORKSPACE_DIR}  # the harness's own canary scan
    names = ("execs", "reads", "writes", "unlinks", "connects", "dns", "canary_hits")
    return {name: sorted(kinds[name])[:MAX_EVENTS_PER_KIND] for name in names}


def _harness_peer(peer: Peer, sink_port: object) -> bool:
    """The harness's egress sink, or glibc asking for a name-service daemon."""
    sink = peer.family == "inet" and peer.address == "127.0.0.1" and peer.port == sink_port
    return sink or peer.address == "/var/run/nscd/socket"


def _mcp_summary(
    observations: list[tuple[Profile, Observation, dict[str, Any]]],
) -> dict[str, Any]:
    """Declared tool surface (from the first profile that listed it) and, per profile,
    what each call did."""
    tools: list[dict[str, Any]] = []
    calls: dict[str, list[dict[str, str]]] = {}
    sessions: dict[str, dict[str, Any]] = {}
    for profile, _, log in observations:
        for step in log.get("steps", []):
            mcp = step.get("mcp") if isinstance(step, dict) else None
            if not isinstance(mcp, dict):
                continue
            if not tools and mcp.get("tools"):
                tools = [_tool_surface(t) for t in mcp["tools"]]
            calls[profile.name] = [_call_summary(c, profile.name) for c in mcp.get("calls", [])]
            sessions[profile.name] = {"initialize": mcp.get("initialize"), **mcp.get("session", {})}
    return {"tools": tools, "calls": calls, "sessions": sessions}


def _call_summary(call: dict[str, Any], profile: str) -> dict[str, Any]:
    """One tool call: how it ended, and what the harness saw it do (canary values
    written or sent), so declared behaviour can be held against observed behaviour."""
    observed = {e.capability for e in map_harness({"steps": [call]}, profile)}
    return {
        "tool": str(call.get("tool")),
        "outcome": str(call.get("outcome")),
        "observed": sorted(observed),
    }


def _tool_surface(tool: dict[str, Any]) -> dict[str, Any]:
    schema = tool.get("inputSchema") or {}
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return {
        "name": clip(str(tool.get("name", "")), 120),
        "description": clip(str(tool.get("description", "")), 2000),
        "parameters": sorted(str(k) for k in properties) if isinstance(properties, dict) else [],
    }
