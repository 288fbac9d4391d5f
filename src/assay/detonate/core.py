"""Detonate one artifact: one sealed harness run per profile, mapped to capabilities."""

from __future__ import annotations

import functools
import os
import re
from collections import defaultdict
from collections.abc import Collection, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path, PurePosixPath

from assay.detonate.canaries import (
    FAKETIME_RC,
    GIT_EMAIL,
    GIT_NAME,
    HOME,
    PLAIN_HOME_FILES,
    SHELL_PROFILES,
    USER,
    CanarySet,
    Disguise,
    make_canaries,
    make_disguise,
)
from assay.detonate.files import map_files
from assay.detonate.harness import BACKSTOP_FACTOR, env_refused
from assay.detonate.mapping import (
    Attribution,
    exec_capabilities,
    harness_evidence,
    home_relative,
    map_harness,
    map_home,
    map_trace,
    map_uploads,
    secret_read_capability,
    write_capability,
)
from assay.detonate.model import (
    MAX_EVENTS_PER_KIND,
    Detonation,
    Evidence,
    ObservedCapability,
    ProfileRun,
    StepOutcome,
    clip,
    quoted,
)
from assay.detonate.network import attach, map_network
from assay.detonate.steps import (
    MCP_SAMPLE_FILE,
    PROFILES,
    PROJECT_DIR,
    PYTHON,
    WORKSPACE,
    DetonationPlan,
    Profile,
    Step,
    build_plan,
    find_libfaketime,
    harness_dir,
)
from assay.detonate.wire import (
    PLAN_FILE,
    HarnessLog,
    HarnessPlan,
    McpCall,
    McpClient,
    McpLog,
    McpTool,
    PlannedStep,
    ProjectRepo,
    StepLog,
    WireError,
)
from assay.mechanism.spec import Track
from assay.records.observed import (
    EVENT_KINDS,
    CallSummary,
    EventKind,
    McpSummary,
    SessionSummary,
    ToolSurface,
)
from assay.sandbox.interface import (
    Home,
    HomeFile,
    InfrastructureError,
    InputFile,
    Observation,
    ObserverKind,
    Peer,
    ResourceLimits,
    SandboxBackend,
    SealedRequest,
    TraceSet,
)
from assay.sandbox.script import python_script, script_argv
from assay.schema.boundedjson import JsonLimitError, parse_bounded

HARNESS = "harness.py"
# What the artifact may write that a user would care about, recorded from outside the
# sandbox before and after each profile's run (`assay.detonate.files`).
COMPARED_TREES = (HOME, PROJECT_DIR)
LOG_CAP = 1 << 20  # bytes of harness log a profile may return
_LOG_DEPTH = 40  # the harness bounds what it logs; deeper means it did not write this
_STDERR_SHOWN = 240
PARALLEL_PROFILES = 2


@dataclass(frozen=True)
class Budget:
    """Bounds of one detonation. Each profile is one sealed run with its own CPU,
    memory and wall budget, and every profile runs: one slow profile cannot starve
    another (what a slowdown costs is its own profile's completeness, recorded as
    interference). The harness stops starting steps at its deadline."""

    profile_cpu_s: float = 5.0
    profile_deadline_s: float = 9.0  # CPU seconds after which the harness starts no step
    memory_bytes: int = 1 << 30
    pids: int = 128
    workspace_bytes: int = 64 << 20
    # Every file, process and network event of a profile. The bundled corpus's profiles
    # write at most 0.7 MiB without an installer and 2.4 MiB with pip, npm or a Go build
    # (2-4 MiB); a trace that reaches the cap is summarised up to it, so the cap bounds
    # what a flood costs the validator (benchmarks/tracer_abuse.py: at 4 MiB a flood of
    # failed opens cost it 2.2 times a quiet profile of the same wall, at 2 MiB 1.8).
    trace_bytes: int = 2 << 20

    def limits(self) -> ResourceLimits:
        return ResourceLimits(
            cpu_budget_s=self.profile_cpu_s,
            # The harness's own wall backstop, and time to write its log: a busy host
            # makes a profile slower, never shorter (detonate.harness.LoadClock).
            wall_backstop_s=self.profile_deadline_s * BACKSTOP_FACTOR + 5.0,
            memory_bytes=self.memory_bytes,
            pids=self.pids,
            workspace_bytes=self.workspace_bytes,
            result_bytes=LOG_CAP,
            trace_bytes=self.trace_bytes,
        )


DEFAULT_BUDGET = Budget()
# A real installer (pip with its build backend, npm) or a server's build (Go) costs
# seconds of CPU under the tracer before the artifact's own code runs.
INSTALL_BUDGET = Budget(profile_cpu_s=14.0, profile_deadline_s=24.0, trace_bytes=8 << 20)


def _shipped(name: str) -> InputFile:
    return InputFile(name, resources.files("assay.detonate").joinpath(name).read_bytes())


def harness_files() -> tuple[InputFile, InputFile]:
    """The harness, and the module of the plan and log types it imports."""
    return _shipped(HARNESS), _shipped("wire.py")


# The observer detonation uses unless told otherwise. eBPF sees from below (paths as the
# kernel resolved them, programs by content, survivors, no per-call stop), and with one
# bpftrace per backend it costs about what strace does (benchmarks/detonate_observer.py,
# pkg-0002's whole detonation on the 2-core host: 4.7 s and 6.1 CPU-s on a running
# session against 4.5 s and 5.5 CPU-s under strace; 7.5 s and 8.4 CPU-s on a fresh
# backend, which pays bpftrace's 2.2-2.4 CPU-s start). It is not the default yet: the
# bundled detonations match their goldens under it, but no cgroup-v2 host has run it,
# and the suite has not yet run every detonation under it in parallel.
DEFAULT_OBSERVER = ObserverKind.STRACE


def detonate(
    artifact_dir: Path,
    track: Track,
    *,
    backend: SandboxBackend,
    budget: Budget | None = None,
    seed: bytes | None = None,
    only: Collection[str] | None = None,
    observer: ObserverKind = DEFAULT_OBSERVER,
) -> Detonation:
    """Run the artifact under every profile (or those named in `only`) in the
    sandbox and map what it did; `budget` defaults to what its plan needs.

    `InfrastructureError` from the backend propagates: a broken sandbox is never
    reported as a clean artifact. Anything else the artifact provokes ends as a
    detonation with `complete = false` and the reason, never as an exception.
    """
    if not track.behavioural:
        raise ValueError(f"the {track.value} track is not detonated")
    seed = seed if seed is not None else os.urandom(16)
    try:
        return _detonate(artifact_dir, track, backend, budget, seed, only, observer)
    except InfrastructureError:
        raise
    except Exception as exc:
        return Detonation.failed(track, f"detonation failed: {type(exc).__name__}: {exc}")


def _detonate(
    artifact_dir: Path,
    track: Track,
    backend: SandboxBackend,
    budget: Budget | None,
    seed: bytes,
    only: Collection[str] | None,
    observer: ObserverKind,
) -> Detonation:
    token = seed.hex()[:16]
    plan = build_plan(artifact_dir, track, token)
    budget = budget or (INSTALL_BUDGET if plan.installs else DEFAULT_BUDGET)
    setup = _Setup(
        artifact_dir=artifact_dir,
        plan=plan,
        canaries=make_canaries(seed),
        disguise=make_disguise(seed),
        token=token,
        backend=backend,
        budget=budget,
        libfaketime=find_libfaketime(),
        observer=observer,
    )
    profiles = [p for p in setup.plan.profiles() if only is None or p.name in only]
    notes = list(setup.plan.notes)
    notes += _env_notes(
        setup.plan.core + setup.plan.variations, profiles, setup.canaries, setup.libfaketime
    )
    interference = list(setup.plan.interference)
    if setup.libfaketime is None and any(p.clock_offset for p in profiles):
        skipped = [p.name for p in profiles if p.clock_offset]
        interference.append(f"profiles {', '.join(skipped)} not run: libfaketime is not installed")
        profiles = [p for p in profiles if p.clock_offset is None]
    if setup.plan.steps_for(PROFILES[0]) or setup.plan.variations:
        # Profiles are independent sealed runs; two at a time roughly halves the wall time
        # (much of a run is spent waiting on the tracer, not on a CPU).
        with ThreadPoolExecutor(max_workers=PARALLEL_PROFILES) as pool:
            results = list(pool.map(setup.run, profiles))
    else:
        results = []  # nothing to run: the plan's notes and interference say why
    observations = [(r.profile, r.observation, r.log) for r in results]
    for r in results:
        interference.extend(f"{r.profile.name}: {reason}" for reason in r.interference)
        notes.extend(f"{r.profile.name}: {note}" for note in load_notes(r.log))
    return Detonation(
        track=track,
        capabilities=_aggregate(
            [e for r in results for e in r.evidence], [p.name for p in profiles]
        ),
        profiles=tuple(r.run for r in results),
        events=_event_summary(results, setup.plan, token),
        mcp=_mcp_summary(observations) if track is Track.MCP_SERVERS else None,
        notes=tuple(notes),
        interference=tuple(dict.fromkeys(interference)),
    )


@dataclass(frozen=True)
class _ProfileResult:
    profile: Profile
    run: ProfileRun
    observation: Observation
    evidence: tuple[Evidence, ...]
    log: HarnessLog
    interference: tuple[str, ...]
    installer: frozenset[str] = frozenset()  # paths only the installer's own processes wrote


@dataclass(frozen=True)
class _Setup:
    """Everything the profile runs of one detonation share."""

    artifact_dir: Path
    plan: DetonationPlan
    canaries: CanarySet
    disguise: Disguise
    token: str
    backend: SandboxBackend
    budget: Budget
    libfaketime: str | None
    observer: ObserverKind

    def run(self, profile: Profile) -> _ProfileResult:
        observation = self.backend.run(self.request(profile))
        log, unreadable = read_log(observation.result.data)
        log, before_steps = attach(log, observation.network, self.canaries)
        who = self.attribution(profile)
        evidence = map_trace(observation.trace, who) + map_harness(log, profile.name)
        evidence += map_network(observation.network, before_steps, self.canaries, profile.name)
        evidence += map_home(observation.home_events, profile.name, evidence)
        compared, uncompared = map_files(
            observation.trees, log.layout_done_ns, observation.trace, who, evidence
        )
        evidence += compared
        evidence += map_uploads(observation.trace.executed, log, who)
        status = observation.limit_hit.value if observation.limit_hit else "ok"
        if unreadable and status == "ok":
            status = "harness_failed"
        steps = _step_outcomes(self.plan.steps_for(profile), log, self.token)
        run = ProfileRun(
            name=profile.name,
            description=profile.description,
            status=status,
            steps=steps,
            skipped_steps=tuple(clip(s, 160) for s in log.skipped),
            capabilities=tuple(sorted({e.capability for e in evidence})),
            cpu_s=observation.cpu_s,
            wall_s=observation.wall_s,
        )
        disturbed = _interference(observation, log, unreadable, run) + tuple(uncompared)
        disturbed += _failed_steps(self.plan.steps_for(profile), log)
        installer = who.installer_paths(observation.trace)
        seen = tuple(evidence)
        return _ProfileResult(profile, run, observation, seen, log, disturbed, installer)

    def request(self, profile: Profile) -> SealedRequest:
        harness_plan = _harness_plan(
            self.plan,
            profile,
            self.canaries,
            self.disguise,
            self.token,
            self.budget.profile_deadline_s,
            self.libfaketime,
        )
        harness, wire = harness_files()
        plan = {PLAN_FILE: harness_plan.to_json()}
        inputs = _input_dir(self.token)
        run = python_script(self.backend, harness, plan, (wire,), inputs)
        return SealedRequest(
            argv=run.argv,
            limits=self.budget.limits(),
            inputs=run.inputs,
            artifact_dir=str(self.artifact_dir),
            input_dir=inputs,
            artifact_path=self.plan.artifact,
            trace=TraceSet.FULL,
            hostname=self.disguise.hostname(profile.name),
            home=planted_home(self.canaries, profile, self.disguise),
            boot_time_shift_s=offset_seconds(profile.clock_offset),
            harness_command=True,
            observer=self.observer,
            network_sink=True,
            compare_trees=COMPARED_TREES,
        )

    def attribution(self, profile: Profile) -> Attribution:
        """What in this profile's run is the harness's own, not the artifact's."""
        steps = self.plan.steps_for(profile)
        return Attribution(
            profile=profile.name,
            canaries=self.canaries,
            harness_argvs=frozenset(
                {script_argv(self.backend, HARNESS, _input_dir(self.token))}
                | {s.argv for s in steps}
                | set(self.plan.runner_argvs)
            ),
            harness_prefixes=(
                _stage_dir(self.token) + "/",
                harness_dir(self.token) + "/",
                *self.plan.runner_writes,
            ),
            harness_files=frozenset(self.plan.placeholders),
            runner_programs=self.plan.runner_programs,
            runner_scripts=self.plan.runner_scripts,
            installer_argvs=frozenset(self.plan.installer_argvs),
            installer_scripts=self.plan.installer_scripts,
        )


def _interference(
    observation: Observation, log: HarnessLog, unreadable: str, run: ProfileRun
) -> tuple[str, ...]:
    """Why this profile's run may not show everything the artifact would do."""
    found: list[str] = []
    if observation.limit_hit is not None:
        found.append(f"stopped by its {observation.limit_hit.value} limit")
    if unreadable:
        found.append(unreadable)
    if observation.result.truncated:
        found.append(f"harness log over its {LOG_CAP}-byte cap")
    if observation.trace.truncated:
        found.append("trace summary capped: the artifact did more than the summary keeps")
    if log.truncated:
        found.append("harness log cut down to fit its cap")
    found += [clip(e, 200) for e in log.errors][:4]
    # Reading what tells a sandbox from a host (or timing the tracer) is how an artifact
    # decides to stay dormant: what it then did not do is not seen.
    found += [f"sandbox fingerprinted: {clip(p, 160)}" for p in observation.trace.probes][:4]
    alive = observation.trace.survivors
    found += [f"process still alive at the end: {clip(' '.join(a), 160)}" for a in alive][:4]
    if observation.home_watch_lost:
        found.append("the watch on the home lost events: its queue overflowed")
    if observation.network.truncated:
        found.append("network records capped: the artifact sent more than the sink keeps")
    if run.skipped_steps:
        found.append(f"{len(run.skipped_steps)} step(s) not run: profile deadline reached")
    found += [
        f"process still alive at the end, what it did next not seen: {quoted(c, 160)}"
        for c in log.survivors[:4]
    ]
    walled = {s.name for s in log.steps if s.stopped == "wall"}
    found += [
        f"step {s.name!r} still working at its wall backstop, twice: the host was too busy "
        "for it, and what it would have done next is not seen"
        if s.name in walled
        else f"step {s.name!r} timed out"
        for s in run.steps
        if s.timed_out
    ][:4]
    failed = [s for s in run.steps if s.error][:4]
    found += [f"step {s.name!r} could not run: {clip(s.error, 120)}" for s in failed]
    for step in log.steps:
        mcp = step.mcp
        if mcp is None:
            continue
        if mcp.initialize != "ok":
            found.append(f"MCP server did not initialise ({clip(mcp.initialize, 40)})")
        if mcp.list_failure:
            found.append(f"MCP tools/list failed ({clip(mcp.list_failure, 40)})")
        skipped = [c for c in mcp.calls if c.outcome == "skipped: deadline"]
        if skipped:
            found.append(f"{len(skipped)} MCP tool call(s) not made: deadline reached")
        over = [c.tool for c in mcp.calls if c.outcome == "skipped: tool cap"]
        if over:
            found.append(f"{len(over)} declared MCP tool(s) not called: over the tool cap")
        if mcp.variations_left_out:
            found.append(
                f"{mcp.variations_left_out} MCP argument variation(s) not tried: "
                "over the per-tool cap"
            )
        if mcp.session.flooded:
            found.append("MCP server flooded its output past the cap")
        found += _uncalled_tools(mcp)
        if mcp.read_failure:
            found.append(f"MCP {clip(mcp.read_failure, 60)} failed, though declared")
        unread = [r.tool for r in mcp.reads if r.outcome != "ok"]
        if unread:
            shown = ", ".join(quoted(n, 60) for n in unread[:4])
            found.append(f"{len(unread)} declared MCP resource(s) or prompt(s) unread: {shown}")
    return tuple(found)


# What a crash leaves at the end of a step's stderr: Python's traceback (or its last line
# when the tail cut the header off) and Node's uncaught-exception footer.
_RAISED = re.compile(
    r"Traceback \(most recent call last\)|^[A-Za-z_][\w.]*(Error|Exception): |^Node\.js v\d",
    re.M,
)


def _failure(step: Step, record: StepLog) -> str:
    """How a step that ran did not run to its end ("" when it did). A step that could
    not start or timed out is said by `_interference`."""
    code = record.exit
    if record.error or record.timed_out or code is None or code == 0 or step.failure == "none":
        return ""
    if code < 0:
        return f"killed by signal {-code}"
    if step.failure == "exit":
        return f"exit {code}"
    if step.failure == "crash" and _RAISED.search(record.stderr_tail):
        return f"raised, exit {code}"
    return ""


def _uncalled_tools(mcp: McpLog) -> list[str]:
    """Declared tools no call reached the end of: what each does when it works is not
    seen (calls skipped for the deadline or the cap are said on their own)."""
    tried = {c.tool for c in mcp.calls if not c.outcome.startswith("skipped")}
    worked = {c.tool for c in mcp.calls if c.outcome == "ok"}
    failed = sorted(tried - worked)
    if not failed:
        return []
    outcomes = {c.tool: c.outcome for c in mcp.calls if c.tool in failed}
    shown = ", ".join(f"{clip(t, 60)!r} ({clip(outcomes[t], 20)})" for t in failed[:6])
    more = " …" if len(failed) > 6 else ""
    return [f"{len(failed)} MCP tool(s) never called successfully: {shown}{more}"]


def _failed_steps(steps: Iterable[Step], log: HarnessLog) -> tuple[str, ...]:
    """Steps that failed (an install, a loader, a script that raised): what was behind
    the failure never ran. The last line of its output (pip's, the compiler's, the
    traceback's own word) says why; when later steps needed it, they were not run."""
    planned = {s.name: s for s in steps}
    found = []
    for record in log.steps:
        step = planned.get(record.name)
        how = _failure(step, record) if step is not None else ""
        if not how:
            continue
        assert step is not None
        last = next((line for line in reversed(record.stderr_tail.splitlines()) if line), "")
        said = f" {quoted(last, 160)}" if last else ""
        after = ": the steps after it were not run" if step.needed else ""
        found.append(f"step {record.name!r} failed ({how}){said}{after}")
    return tuple(found)


def load_notes(log: HarnessLog) -> list[str]:
    """Steps a busy host slowed past their wall backstop once, run again to the end: the
    trace holds both runs (a quiet host's would hold one)."""
    return [
        f"step {clip(s.name, 120)!r} ran twice: its first run was still working at its wall "
        "backstop (a busy host)"
        for s in log.steps
        if s.attempts > 1 and s.stopped != "wall"
    ]


def _harness_plan(
    plan: DetonationPlan,
    profile: Profile,
    canaries: CanarySet,
    disguise: Disguise,
    token: str,
    deadline_s: float,
    libfaketime: str | None,
) -> HarnessPlan:
    return HarnessPlan(
        stage=_stage_dir(token),
        # Never opened by the harness: the watch on them is the artifact's alone.
        planted=planted_paths(planted_home(canaries, profile, disguise)),
        dirs=(HOME, PROJECT_DIR, *plan.workdirs),
        placeholders=plan.placeholders,
        copies=plan.copies,
        links=plan.links,
        user_site=user_site(),
        site_paths=plan.site_paths,
        scan_roots=("/tmp", "/var/tmp", WORKSPACE, HOME),
        scan_skip=(_stage_dir(token),),
        needles={name: tuple(forms) for name, forms in canaries.needles.items()},
        env=_profile_env(profile, canaries, libfaketime),
        steps=tuple(_planned_step(step, disguise) for step in plan.steps_for(profile)),
        deadline_s=deadline_s,
        log_cap=LOG_CAP,
        repo=project_repo(disguise),
        artifact=plan.artifact,
        inputs=_input_dir(token),
    )


# The project a user works in: a clone of their own repository (scripts that run `git log`
# or `git diff` in it, as skills and CLIs do, find a repository with history).
PROJECT_FILES = {
    "README.md": "# project\n\nInternal tools and notes.\n",
    ".gitignore": "node_modules/\n__pycache__/\n.env\n.venv/\n",
    "notes.md": "# Notes\n\n- ship the release\n",
}


def project_repo(disguise: Disguise) -> ProjectRepo:
    return ProjectRepo(
        path=PROJECT_DIR,
        files=PROJECT_FILES,
        author=GIT_NAME,
        email=GIT_EMAIL,
        age_s=disguise.home_age_s // 3,
        remote=f"git@github.com:{USER}/{PurePosixPath(PROJECT_DIR).name}.git",
    )


def offset_seconds(offset: str | None) -> int:
    """A libfaketime relative offset ("+35d", "-2h", "+90") in seconds; 0 for none."""
    if not offset:
        return 0
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "y": 365 * 86400}
    scale = units.get(offset[-1], 1)
    return int(float(offset.rstrip("smhdy")) * scale)


def planted_home(canaries: CanarySet, profile: Profile, disguise: Disguise) -> Home:
    """The fake home the validator plants for one profile's run: the canary secrets
    and a developer's ordinary files, dated back, the secrets and shell profiles
    watched by inode, and the home itself for shell profiles written fresh."""
    plain = {
        **PLAIN_HOME_FILES,
        # libfaketime reads its offset from here when FAKETIME is unset: no clock marker
        # in the environment.
        **({FAKETIME_RC: f"{profile.clock_offset}\n"} if profile.clock_offset else {}),
    }
    files = [
        HomeFile(path.removeprefix(HOME + "/"), data, 0o600, watched=True)
        for path, data in canaries.files.items()
    ]
    files += [
        HomeFile(rel, text.encode(), 0o644, watched=rel in SHELL_PROFILES)
        for rel, text in plain.items()
    ]
    return Home(USER, tuple(files), age_s=disguise.home_age_s, new_entries=("",))


def planted_paths(home: Home) -> tuple[str, ...]:
    return tuple(f"{home.path}/{item.path}" for item in home.files)


def _profile_env(profile: Profile, canaries: CanarySet, libfaketime: str | None) -> dict[str, str]:
    """Every step's environment under `profile` (the harness adds its Node hook)."""
    return {
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


def _env_notes(
    steps: Iterable[Step], profiles: Iterable[Profile], canaries: CanarySet, libfaketime: str | None
) -> list[str]:
    """What steps' own environments (a server's `env`) tried to set that the observation
    depends on: not applied (the harness keeps its own), and said."""
    base = {key for p in profiles for key in _profile_env(p, canaries, libfaketime or "preload")}
    notes = []
    for step in dict.fromkeys(steps):
        refused = sorted(k for k, _ in step.env if env_refused(base, k))
        if refused:
            shown = ", ".join(clip(k, 40) for k in refused[:8])
            notes.append(
                f"step {step.name!r} asked to set {shown}: the observation's own, "
                "kept as the harness set them"
            )
    return notes


@functools.cache
def user_site() -> str:
    """The fake home's user site-packages of the sandbox's Python (the host's, bound
    read-only): every Python child the artifact starts reads it by itself."""
    version = Path(PYTHON).resolve().name  # python3.11
    return f"{HOME}/.local/lib/{version}/site-packages"


def _stage_dir(token: str) -> str:
    return f"/tmp/tmp{token[:8]}"  # named like any tempfile.mkdtemp() directory


def _input_dir(token: str) -> str:
    """Where the harness and its plan are written, which it removes once read."""
    return f"/tmp/tmp{token[8:16]}"


def _planned_step(step: Step, disguise: Disguise) -> PlannedStep:
    client = None
    if step.kind == "mcp":
        client = McpClient(
            # Starting a server (Node, a TypeScript runner, an SDK) under the tracer
            # takes longer than answering a request once started.
            init_timeout_s=5.0,
            request_timeout_s=2.0,
            call_timeout_s=1.5,
            max_tools=16,
            client_name=disguise.client_name,
            client_version=disguise.client_version,
            canary=disguise.argument,
            sample_file=MCP_SAMPLE_FILE,
            project=PROJECT_DIR,
        )
    return PlannedStep(
        name=step.name,
        argv=step.argv,
        cwd=step.cwd,
        timeout_s=step.timeout_s,
        stdin=step.stdin,
        env=dict(step.env),
        mcp=client,
        needed=step.needed,
    )


def read_log(data: bytes) -> tuple[HarnessLog, str]:
    """The harness log, and why it could not be read ("" when it could). The artifact
    shares the harness's sandbox: any log that is not one is a disturbed run."""
    if not data:
        return HarnessLog(), "no harness log: the harness was killed or crashed"
    try:
        return HarnessLog.from_json(
            parse_bounded(data, max_bytes=LOG_CAP, max_depth=_LOG_DEPTH)
        ), ""
    except (JsonLimitError, WireError) as exc:
        return HarnessLog(), f"harness log unreadable: {clip(str(exc), 120)}"


def _step_outcomes(steps: Iterable[Step], log: HarnessLog, token: str) -> tuple[StepOutcome, ...]:
    """Each step's outcome, the harness's random directory names shown as placeholders."""
    records = {r.name: r for r in log.steps}
    out = []
    for step in steps:
        record = records.get(step.name)
        if record is None:
            continue
        out.append(
            StepOutcome(
                name=step.name,
                argv=tuple(_shown(a, token) for a in step.argv),
                exit_code=record.exit,
                timed_out=record.timed_out,
                error=record.error,
                stderr_tail=record.stderr_tail[-_STDERR_SHOWN:],
            )
        )
    return tuple(out)


def _shown(arg: str, token: str) -> str:
    return arg.replace(harness_dir(token), "<work>").replace(_stage_dir(token), "<stage>")


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
    results: list[_ProfileResult], plan: DetonationPlan, token: str
) -> dict[EventKind, tuple[str, ...]]:
    """The raw events of every profile, the harness's own left out; capped, the most
    security-relevant kept first (so decoys cannot push a key read out of the sample)."""
    ignored = (
        _stage_dir(token),
        harness_dir(token),
        plan.artifact + "/",
        "/dev/",
        "/proc/",
        user_site(),
        f"{HOME}/{FAKETIME_RC}",
        *plan.runner_writes,
    )
    planned = {s.argv for r in results for s in plan.steps_for(r.profile)}
    planned |= set(plan.runner_argvs)
    planned |= {
        argv
        for observation in (r.observation for r in results)
        for argv in observation.trace.execs
        if (plan.runner_programs and argv and argv[0].startswith(plan.runner_programs))
        or (plan.runner_scripts and len(argv) > 1 and argv[1].startswith(plan.runner_scripts))
    }
    kinds: dict[EventKind, set[str]] = defaultdict(set)
    for result in results:
        observation, log, trace = result.observation, result.log, result.observation.trace
        kinds["execs"].update(
            clip(" ".join(argv), 200) for argv in trace.execs[1:] if argv not in planned
        )
        kinds["reads"].update(
            home_relative(p)
            for p in trace.reads
            if not p.startswith(ignored) and p != plan.artifact  # its clone is not a reach
        )
        kinds["writes"].update(
            home_relative(p)
            for p in (*trace.writes, *(dst for _, dst in trace.renames))
            if not p.startswith(ignored)
            and p not in plan.placeholders
            and p not in result.installer
        )
        # What only the comparison of the trees saw (its paths are shown already).
        compared = [e for e in result.evidence if e.source == "files"]
        kinds["writes"].update(e.path for e in compared if e.event != "deleted")
        kinds["unlinks"].update(e.path for e in compared if e.event == "deleted")
        kinds["unlinks"].update(
            home_relative(p) for p in trace.unlinks if not p.startswith(ignored)
        )
        watched = observation.home_events  # seen by inode, whatever path was used
        kinds["reads"].update(home_relative(e.path) for e in watched if e.event == "read")
        kinds["writes"].update(
            home_relative(e.path)
            for e in watched
            if e.event == "write" or write_capability(e.path) == "WRITE_SHELL_PROFILE"
        )
        kinds["connects"].update(
            f"{c.family}:{c.address}:{c.port}" for c in trace.connects if not _name_service(c)
        )
        kinds["dns"].update(trace.dns_queries)
        kinds["dns"].update(q.name for q in observation.network.queries)
        for step in log.steps:
            kinds["canary_hits"].update(
                f"{hit.canary} in {home_relative(hit.path)}" for hit in step.canary_hits
            )
    return {kind: _sample(kind, kinds[kind]) for kind in EVENT_KINDS}


def _sample(kind: str, events: set[str]) -> tuple[str, ...]:
    ranked = sorted(events, key=lambda event: (relevance(kind, event), event))
    return tuple(clip(e) for e in ranked[:MAX_EVENTS_PER_KIND])


def relevance(kind: str, event: str) -> int:
    """0 for events that stand for a capability beyond the ordinary, 1 otherwise."""
    if kind == "reads":
        return 0 if secret_read_capability(event) else 1
    if kind in ("writes", "unlinks"):
        return 0 if write_capability(event) != "WRITE_FILE" else 1
    if kind == "execs":
        found = exec_capabilities(tuple(event.split()))
        return 0 if any(c != "CREATE_PROCESS" for c, _ in found) else 1
    return 0


def _name_service(peer: Peer) -> bool:
    """glibc asking for a name-service daemon (of every program that resolves a name)."""
    return peer.address == "/var/run/nscd/socket"


def _mcp_summary(observations: list[tuple[Profile, Observation, HarnessLog]]) -> McpSummary:
    """Declared tool surface (from the first profile that listed it) and, per profile,
    what each call did."""
    tools: tuple[ToolSurface, ...] = ()
    changed: tuple[ToolSurface, ...] = ()
    calls: dict[str, tuple[CallSummary, ...]] = {}
    sessions: dict[str, SessionSummary] = {}
    for profile, _, log in observations:
        for step in log.steps:
            mcp = step.mcp
            if mcp is None:
                continue
            tools = tools or tuple(_tool_surface(t) for t in mcp.tools)
            changed = changed or tuple(_tool_surface(t) for t in mcp.changed_tools)
            calls[profile.name] = tuple(_call_summary(c, profile.name) for c in mcp.calls)
            end = mcp.session
            sessions[profile.name] = SessionSummary(
                initialize=mcp.initialize,
                crashed=end.crashed,
                exit=end.exit,
                malformed_lines=end.malformed_lines,
                flooded=end.flooded,
                tools_changed=end.tools_changed,
                stdout_bytes=end.stdout_bytes,
            )
    return McpSummary(tools=tools, calls=calls, sessions=sessions, tools_after_change=changed)


def _call_summary(call: McpCall, profile: str) -> CallSummary:
    """One tool call: how it ended, and what the harness saw it do (canary values
    written or sent), so declared behaviour can be held against observed behaviour."""
    observed = {e.capability for e in harness_evidence(call, "", profile)}
    return CallSummary(
        tool=call.tool,
        outcome=call.outcome,
        observed=tuple(sorted(observed)),
        variation=quoted(call.variation, 100) if call.variation else "",
    )


def _tool_surface(tool: McpTool) -> ToolSurface:
    properties = tool.input_schema.get("properties")
    return ToolSurface(
        name=clip(tool.name, 120),
        description=quoted(tool.description, 2000),
        parameters=tuple(sorted(clip(str(k), 120) for k in properties)[:64])
        if isinstance(properties, dict)
        else (),
    )
