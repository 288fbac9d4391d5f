"""The network a detonated artifact reaches: every TCP connection and every DNS query.

Run by the validator (`assay.sandbox.bwrap.netsink`) inside a run's own network
namespace, outside the sandbox's process tree and pid namespace, as an unprivileged
user, with the standard library alone (`python3 -I -S -c`). The namespace's rules send
every TCP connection not to loopback here (its original destination recovered with
SO_ORIGINAL_DST) and every UDP datagram to port 53 to the responder. Everything the
artifact sends is hostile: sizes, counts and time are bounded, and malformed input is
recorded as far as it goes, never a crash.

Records are JSON lines on stdout (a file the validator opened), each written when its
connection or query is done; the file never grows past RECORD_BYTES (past it, records
keep only their addresses, then one `capped` line ends it). On SIGTERM, connections
still open are recorded as they are and the sink exits.

A thread per connection, not asyncio: importing asyncio was most of the sink's start-up,
which every profile of every detonation pays.
"""

from __future__ import annotations

import binascii
import ctypes
import json
import math
import os
import signal
import socket
import struct
import sys
import threading
import time

SO_ORIGINAL_DST = 80  # linux/netfilter_ipv4.h
PR_SET_PDEATHSIG = 1
CONN_BYTES = 64 * 1024  # kept of what one connection sends (the rest is counted)
RECORD_BYTES = 2 << 20  # what all records together may take
RECORD_SLACK = 256 * 1024  # past RECORD_BYTES, address-only records up to this much more
IDLE_S = 1.0  # a connection quiet this long is done
STOP_GRACE_S = 1.5  # at the sink's stop, for connections the run left to be read
CONN_S = 10.0  # no connection is read for longer
CONNECTIONS = 1024  # connections served; later ones are closed at once, and counted
OPEN_AT_ONCE = 256  # connections read at once (each holds up to CONN_BYTES); as above
NAMES = 16384  # names handed an address; later ones are refused
# Handed out one per name: the benchmarking range 198.18.0.0/15 (RFC 2544), routed
# nowhere real and not a private range an artifact would read as a sandbox's.
POOL_BASE = struct.unpack("!I", socket.inet_aton("198.18.0.0"))[0]
HTTP_METHODS = (b"GET", b"POST", b"PUT", b"PATCH", b"DELETE", b"HEAD", b"OPTIONS")
HTTP_BODY = b"<html><head><title>OK</title></head><body>OK</body></html>\n"
HTTP_REPLY = (
    b"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/html; charset=utf-8\r\n"
    b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(HTTP_BODY)
) + HTTP_BODY
LOOPBACKS = ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1"))
QTYPES = {1: "A", 2: "NS", 5: "CNAME", 12: "PTR", 15: "MX", 16: "TXT", 28: "AAAA", 33: "SRV"}


class Records:
    """The bounded JSON-lines record file."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.written = 0
        self.capped = False
        self.lock = threading.Lock()

    def write(self, record: dict[str, object], *, cut: tuple[str, ...] = ()) -> None:
        with self.lock:
            self._write(record, cut)

    def _write(self, record: dict[str, object], cut: tuple[str, ...]) -> None:
        if self.capped:
            return
        line = _line(record)
        if self.written + len(line) > RECORD_BYTES:
            line = _line({k: v for k, v in record.items() if k not in cut} | {"cut": True})
        if self.written + len(line) > RECORD_BYTES + RECORD_SLACK:
            self.capped = True
            line = _line({"kind": "capped"})
        os.write(self.fd, line)
        self.written += len(line)


def _line(record: dict[str, object]) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


class Names:
    """One address of the pool per name, and the name behind each address."""

    def __init__(self) -> None:
        self.by_name: dict[str, str] = {}
        self.by_address: dict[str, str] = {}
        self.lock = threading.Lock()

    def address(self, name: str) -> str | None:
        key = name.lower()
        with self.lock:
            if key not in self.by_name:
                if len(self.by_name) >= NAMES:
                    return None
                address = socket.inet_ntoa(struct.pack("!I", POOL_BASE + len(self.by_name) + 1))
                self.by_name[key] = address
                self.by_address[address] = key
            return self.by_name[key]

    def name_of(self, address: str) -> str:
        with self.lock:
            return self.by_address.get(address, "")


# --- DNS -------------------------------------------------------------------------------


def parse_question(packet: bytes) -> tuple[int, int, str, int, int] | None:
    """(id, flags, name, qtype, end of the question) of a query, or None when it is not
    one. Only the question is read: a query's question is never compressed."""
    if len(packet) < 12:
        return None
    ident, flags, qdcount = struct.unpack_from("!HHH", packet)
    if flags & 0x8000 or qdcount < 1:
        return None  # a response, or no question
    labels: list[str] = []
    at = 12
    while True:
        if at >= len(packet):
            return None
        size = packet[at]
        at += 1
        if size == 0:
            break
        if size > 63 or at + size > len(packet) or len(labels) >= 127:
            return None
        labels.append(packet[at : at + size].decode("ascii", "backslashreplace"))
        at += size
    if at + 4 > len(packet):
        return None
    qtype, _qclass = struct.unpack_from("!HH", packet, at)
    return ident, flags, ".".join(labels), qtype, at + 4


def answer(packet: bytes, names: Names, records: Records, via: str) -> bytes | None:
    """The reply to one query (an A record from the pool for an A query; no data for any
    other type), recording the name; None for what is not a query. AAAA gets no data,
    as on an IPv4-only network: a name with both kinds of address has clients race them
    (happy eyeballs) by timing, so what a detonation records would hang on the host's
    load. An IPv6 address the artifact names itself still reaches the sink."""
    parsed = parse_question(packet)
    if parsed is None:
        records.write({"kind": "dns", "t": time.monotonic(), "via": via, "malformed": True})
        return None
    ident, flags, name, qtype, end = parsed
    address = names.address(name) if name else None
    qname = QTYPES.get(qtype, str(qtype))
    records.write({"kind": "dns", "t": time.monotonic(), "via": via, "name": name, "type": qname})
    rcode = 0 if address else 5  # REFUSED past the cap
    reply_flags = 0x8000 | 0x0400 | (flags & 0x0100) | 0x0080 | rcode  # QR AA RD RA
    answers = b""
    if address and qtype == 1:
        # The name by a pointer to the question (offset 12), class IN, a minute's TTL.
        answers = struct.pack("!HHHIH", 0xC00C, 1, 1, 60, 4) + socket.inet_aton(address)
    header = struct.pack("!HHHHHH", ident, reply_flags, 1, 1 if answers else 0, 0, 0)
    return header + packet[12:end] + answers


def respond(sock: socket.socket, names: Names, records: Records) -> None:
    """Answer every query that reaches the responder's socket."""
    while True:
        try:
            data, peer = sock.recvfrom(4096)
            reply = answer(data, names, records, "udp")
            if reply is not None:
                sock.sendto(reply, peer)
        except OSError:
            continue


# --- TCP -------------------------------------------------------------------------------


def original_destination(sock: socket.socket) -> tuple[str, int]:
    """Where the artifact connected before the namespace's rules redirected it here."""
    try:
        if sock.family == socket.AF_INET6:  # a sockaddr_in6: port, flow info, address
            raw = sock.getsockopt(socket.IPPROTO_IPV6, SO_ORIGINAL_DST, 28)
            port, packed = struct.unpack_from("!2xH4x16s", raw)
            return socket.inet_ntop(socket.AF_INET6, packed), port
        raw = sock.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
        port, packed = struct.unpack_from("!2xH4s", raw)
        return socket.inet_ntoa(packed), port
    except OSError:
        host, port = sock.getsockname()[:2]  # reached the sink's own address directly
        return str(host), int(port)


def http_request(data: bytes) -> tuple[dict[str, str], bool] | None:
    """The request line and Host of an HTTP request, and whether all of it (headers and
    a Content-Length body, or a chunked body's end) has arrived; None if not HTTP."""
    method = data.split(b" ", 1)[0]
    if method not in HTTP_METHODS:
        return None
    head, sep, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    words = lines[0].split(b" ")
    fields = {
        "method": method.decode(),
        "path": words[1][:512].decode("latin-1", "replace") if len(words) > 1 else "",
    }
    length, chunked = 0, False
    for line in lines[1:]:
        key, _, value = line.partition(b":")
        key, value = key.strip().lower(), value.strip()
        if key == b"host":
            fields["host"] = value[:256].decode("latin-1", "replace")
        elif key == b"content-length" and value.isdigit():
            length = int(value[:12])
        elif key == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if not sep:
        return fields, False
    done = body.endswith(b"0\r\n\r\n") if chunked else len(body) >= length
    return fields, done or len(data) >= CONN_BYTES


def tls_server_name(data: bytes) -> str:
    """The server name a TLS ClientHello asks for (SNI), or "" (the sink never answers
    TLS, so this name and the destination are all it learns of an HTTPS request)."""
    try:
        if data[0] != 0x16 or data[5] != 0x01:  # a handshake record holding a ClientHello
            return ""
        at = 5 + 4 + 2 + 32  # record and handshake headers, version, random
        at += 1 + data[at]  # session id
        at += 2 + struct.unpack_from("!H", data, at)[0]  # cipher suites
        at += 1 + data[at]  # compression methods
        end = at + 2 + struct.unpack_from("!H", data, at)[0]
        at += 2
        while at + 4 <= min(end, len(data)):
            kind, size = struct.unpack_from("!HH", data, at)
            at += 4
            if kind == 0:  # server_name: list length, name type, name length, name
                length = struct.unpack_from("!H", data, at + 3)[0]
                return data[at + 5 : at + 5 + min(length, 255)].decode("ascii", "replace")
            at += size
    except (IndexError, struct.error):
        pass
    return ""


class Sink:
    """Accepts every connection, a thread reading each; records what each sent."""

    def __init__(self, names: Names, records: Records) -> None:
        self.names, self.records = names, records
        self.served = 0
        self.refused = 0
        self.open: dict[int, Flow] = {}
        self.lock = threading.Lock()

    def accept(self, listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # out of descriptors: the open connections end first
                time.sleep(0.05)
                continue
            if flow := self._admit(conn):
                threading.Thread(target=self.serve, args=(conn, flow), daemon=True).start()

    def _admit(self, conn: socket.socket) -> Flow | None:
        """The connection's flow, counted as open from its accept on (a `stop` before its
        reader thread runs still records it), or None when it is refused."""
        address, port = original_destination(conn)
        flow = Flow(address, port, self.names.name_of(address))
        with self.lock:
            admitted = self.served < CONNECTIONS and len(self.open) < OPEN_AT_ONCE
            self.served += admitted
            self.refused += not admitted
            if admitted:
                self.open[id(flow)] = flow
        if not admitted:
            conn.close()
            return None
        return flow

    def serve(self, conn: socket.socket, flow: Flow, until: float = math.inf) -> None:
        try:
            flow.read(conn, self.names, self.records, until)
        except OSError:
            pass
        finally:
            conn.close()
            self._done(flow)

    def _done(self, flow: Flow) -> None:
        with self.lock:
            ended = self.open.pop(id(flow), None)
        if ended is not None:  # not yet recorded by `stop`
            self.records.write(flow.record(), cut=("data",))

    def stop(self, listeners: list[socket.socket]) -> None:
        """Record every connection, and how many were refused. The run has ended when the
        sink is stopped, so its connections were closed with its processes: those still
        queued (a loaded host's accept can lag a short-lived client) are read now, those
        being read get until STOP_GRACE_S to reach their end, the rest are recorded as
        they are."""
        deadline = time.monotonic() + STOP_GRACE_S
        for listener in listeners:
            listener.settimeout(0)
            while time.monotonic() < deadline:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    break
                if flow := self._admit(conn):
                    self.serve(conn, flow, until=deadline)
        while self.open and time.monotonic() < deadline:
            time.sleep(0.01)
        with self.lock:
            still, self.open = list(self.open.values()), {}
        for flow in still:
            self.records.write(flow.record(), cut=("data",))
        if self.refused:
            self.records.write({"kind": "refused", "count": self.refused})


class Flow:
    """One connection: where it was meant to go and what it sent."""

    def __init__(self, address: str, port: int, name: str) -> None:
        self.address, self.port, self.name = address, port, name
        self.at = time.monotonic()
        self.data = bytearray()
        self.size = 0
        self.http: dict[str, str] | None = None

    def read(self, conn: socket.socket, names: Names, records: Records, until: float) -> None:
        deadline = min(self.at + CONN_S, until)
        while (left := deadline - time.monotonic()) > 0:
            conn.settimeout(min(IDLE_S, left))
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                return
            if not chunk:
                return
            self.size += len(chunk)
            self.data += chunk[: CONN_BYTES - len(self.data)]
            if self.port == 53:
                conn.sendall(self._dns_over_tcp(names, records))
                continue
            request = http_request(bytes(self.data)) if self.http is None else None
            if request is not None and request[1]:
                self.http = request[0]
                conn.sendall(HTTP_REPLY)
                return

    def _dns_over_tcp(self, names: Names, records: Records) -> bytes:
        """The replies to each whole length-prefixed query that has arrived."""
        replies = b""
        while len(self.data) >= 2:
            size = struct.unpack_from("!H", self.data)[0]
            if len(self.data) < 2 + size:
                break
            query, self.data = bytes(self.data[2 : 2 + size]), self.data[2 + size :]
            reply = answer(query, names, records, "tcp")
            if reply is not None:
                replies += struct.pack("!H", len(reply)) + reply
        return replies

    def record(self) -> dict[str, object]:
        data = bytes(self.data)
        record: dict[str, object] = {
            "kind": "tcp",
            "t": self.at,
            "address": self.address,
            "port": self.port,
            "name": self.name,
            "size": self.size,
            "data": binascii.b2a_base64(data, newline=False).decode(),
        }
        http = self.http
        if http is None and self.port != 53:
            partial = http_request(data)  # what arrived of a request cut short
            http = partial[0] if partial else None
        if http is not None:
            record["http"] = http
        if server_name := tls_server_name(data):
            record["tls_name"] = server_name
        return record


def main(tcp_port: int, dns_port: int, ready_fd: int, records: Records) -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # waited for below
    names = Names()
    sink = Sink(names, records)
    listeners = []
    for family, loopback in LOOPBACKS:
        try:
            listener = socket.create_server((loopback, tcp_port), family=family, backlog=256)
            resolver = socket.socket(family, socket.SOCK_DGRAM)
            resolver.bind((loopback, dns_port))
        except OSError:
            if family == socket.AF_INET:
                raise
            continue  # no IPv6 on this host: no IPv6 address is reached either
        listeners.append(listener)
        threading.Thread(target=sink.accept, args=(listener,), daemon=True).start()
        threading.Thread(target=respond, args=(resolver, names, records), daemon=True).start()
    os.write(ready_fd, b"ready\n")
    os.close(ready_fd)
    signal.sigwait({signal.SIGTERM})
    sink.stop(listeners)
    os._exit(0)  # the connection threads are not waited for: what they saw is recorded


if __name__ == "__main__":
    # Dies with the validator that started it (its parent through every exec).
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != int(sys.argv[4]):
        sys.exit(1)
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), Records(1))
