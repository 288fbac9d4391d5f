"""What a profile's network sink saw, read into the detonation's evidence.

The sink runs outside the sandbox (`assay.sandbox.bwrap.netsink`), so what it records
does not depend on which program connected or how. Each connection is added to the
harness's record of the step or MCP call that was going on when the sink accepted it
(the last one started before it: the sink and the harness share CLOCK_MONOTONIC), as
`Egress`, so a call's summary shows what it sent; every connection and every DNS query
is also evidence of its own.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import replace

from assay.detonate.canaries import CanarySet
from assay.detonate.mapping import egress_evidence, leak
from assay.detonate.model import Evidence
from assay.detonate.wire import Egress, HarnessLog, McpCall, StepLog
from assay.sandbox.interface import Flow, NetworkLog

_REQUEST_LINE = 200
_BEFORE_STEPS = "before the first step"


def egress(flow: Flow, canaries: CanarySet) -> Egress:
    """One connection as the step records show it: its peer (`peer_of`), the canary
    values in what it sent."""
    request_line = ""
    if flow.http_method:
        request_line = flow.data.split(b"\r\n", 1)[0][:_REQUEST_LINE].decode("latin-1")
    return Egress(
        peer=peer_of(flow),
        size=flow.size,
        http_method=flow.http_method,
        request_line=request_line,
        canaries=tuple(canaries.names_in(flow.data.decode("latin-1"))),
    )


def peer_of(flow: Flow) -> str:
    """By the name resolved for its address, else the name its TLS handshake asked for,
    else its address."""
    return f"{flow.name or flow.tls_name or flow.address}:{flow.port}"


def attach(
    log: HarnessLog, network: NetworkLog, canaries: CanarySet
) -> tuple[HarnessLog, tuple[Egress, ...]]:
    """The log with each connection added to its step or call, and the connections
    made before any step started (none, unless the clocks disagree)."""
    slots = sorted(_slots(log))
    starts = [started for started, _ in slots]
    found: dict[tuple[int, str, int], list[Egress]] = {}
    before: list[Egress] = []
    for flow in network.flows:
        at = bisect.bisect_right(starts, flow.at) - 1
        sent = egress(flow, canaries)
        if at < 0:
            before.append(sent)
        else:
            found.setdefault(slots[at][1], []).append(sent)
    steps = tuple(_with_egress(n, step, found) for n, step in enumerate(log.steps))
    return replace(log, steps=steps), tuple(before)


def _slots(log: HarnessLog) -> Iterator[tuple[float, tuple[int, str, int]]]:
    """When each step, tool call and read started, with where it is in the log."""
    for n, step in enumerate(log.steps):
        yield step.started, (n, "step", 0)
        for kind in ("calls", "reads"):
            for m, call in enumerate(getattr(step.mcp, kind, ())):
                if call.started:  # a call never made (skipped) has no time
                    yield call.started, (n, kind, m)


def _with_egress(n: int, step: StepLog, found: dict[tuple[int, str, int], list[Egress]]) -> StepLog:
    def calls(kind: str, made: tuple[McpCall, ...]) -> tuple[McpCall, ...]:
        return tuple(
            replace(c, egress=c.egress + tuple(found.get((n, kind, m), ())))
            for m, c in enumerate(made)
        )

    step = replace(step, egress=step.egress + tuple(found.get((n, "step", 0), ())))
    if step.mcp is None:
        return step
    mcp = replace(
        step.mcp, calls=calls("calls", step.mcp.calls), reads=calls("reads", step.mcp.reads)
    )
    return replace(step, mcp=mcp)


def map_network(
    network: NetworkLog, before: tuple[Egress, ...], canaries: CanarySet, profile: str
) -> list[Evidence]:
    """Every connection (OPEN_SOCKET) and name resolved (RESOLVE_DNS, and canary values
    in the name: DNS exfiltration), and what connections made before any step sent."""
    found = [
        Evidence("OPEN_SOCKET", profile, "connect", peer=peer_of(f), source="network")
        for f in network.flows
    ]
    for query in network.queries:
        name = query.name.rstrip(".")
        found.append(Evidence("RESOLVE_DNS", profile, "dns", peer=name, source="network"))
        for leaked in canaries.names_in(name):
            found += leak(leaked, profile, "dns", peer=name, outbound=True, source="network")
    for sent in before:
        found += egress_evidence(sent, _BEFORE_STEPS, profile)
    return found
