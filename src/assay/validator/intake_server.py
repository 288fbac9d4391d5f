"""The intake's HTTP server: uvicorn's h11 protocol with the two limits it lacks.

uvicorn caps neither the connections it holds nor the time a connection may take to send
its request headers (its keep-alive timeout starts only after a first response), so
connections that never finish their headers hold file descriptors for ever. This
protocol adds both, at the transport, before any request reaches the app:

- a header deadline: a connection whose request headers have not all arrived within
  `header_s` of its opening (or of its previous response) is closed;
- a connection cap: when a new connection would pass `max_connections`, the oldest
  connection still waiting for its headers is closed to make room, so a flood of idle
  connections cannot lock out a client that sends its request at once; when every
  connection is inside a request, the newcomer is closed instead.

The body's own deadline, size cap and the bodies in flight are the app's (http_intake).
The cap is kept below the process's file limit, which is raised to its hard limit.
"""

from __future__ import annotations

import asyncio
import resource
import threading
from dataclasses import dataclass
from typing import ClassVar

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

# File descriptors kept for everything but connections: the store, logs, the sandbox.
_FD_RESERVE = 256


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = 4096
    header_s: float = 10.0


class _DoorProtocol(H11Protocol):
    limits: ClassVar[ConnectionLimits]
    # Connections whose request headers have not arrived, oldest first (a dict keeps
    # insertion order); shared by one server's connections, touched on its loop only.
    waiting: ClassVar[dict[_DoorProtocol, asyncio.TimerHandle]]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections and not self._evict_oldest():
            transport.abort()
            return
        self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._headers_arrived()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and not self.cycle.response_complete:
            self._headers_arrived()

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            self._await_headers()  # a keep-alive connection's next request has its deadline
        super().on_response_complete()

    def _await_headers(self) -> None:
        self._headers_arrived()
        self.waiting[self] = self.loop.call_later(self.limits.header_s, self._headers_late)

    def _headers_arrived(self) -> None:
        deadline = self.waiting.pop(self, None)
        if deadline is not None:
            deadline.cancel()

    def _headers_late(self) -> None:
        if self.waiting.pop(self, None) is not None:
            self.transport.abort()

    def _evict_oldest(self) -> bool:
        oldest = next(iter(self.waiting), None)
        if oldest is None:
            return False
        oldest._headers_arrived()
        oldest.transport.abort()
        return True


def _door_protocol(limits: ConnectionLimits) -> type[_DoorProtocol]:
    """A protocol class of its own per server, so two servers share no state."""
    return type("IntakeProtocol", (_DoorProtocol,), {"limits": limits, "waiting": {}})


def _within_file_limit(limits: ConnectionLimits) -> ConnectionLimits:
    """The soft file limit raised to the hard one; the cap kept below what remains."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
    room = max(1, soft - _FD_RESERVE) if soft != resource.RLIM_INFINITY else limits.max_connections
    return ConnectionLimits(min(limits.max_connections, room), limits.header_s)


def start_server(app: ASGIApp, port: int, limits: ConnectionLimits) -> uvicorn.Server:
    """`app` served on 127.0.0.1 from a daemon thread; `should_exit` stops it."""
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        http=_door_protocol(_within_file_limit(limits)),
        log_level="warning",
        lifespan="off",
    )
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, name="intake", daemon=True).start()
    return server
