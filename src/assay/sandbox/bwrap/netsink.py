"""A run's own network: a namespace where every connection reaches the validator's sink.

The validator starts the sink (`netsink_server.py`) in a fresh network namespace it
makes for the run, before the sandbox: `lo` up, every IPv4 destination local (an AnyIP
route), and nftables rules that send every TCP connection not to loopback to the sink
and every UDP datagram to port 53 to its DNS responder. bubblewrap then joins that
namespace instead of an empty one of its own. The sink is the namespace's first process
and no part of the sandbox's process tree or pid namespace: the artifact can neither see
nor stop it, and what it records (`NetworkLog`) is seen from outside whatever program
sent it, through whatever API.

The namespace has no name: it lives while the sink, the sandbox or the validator's
descriptor on it does, so nothing of it outlasts the run (or a killed validator, whose
death kills the sink).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import os
import select
import signal
import subprocess
import tempfile
from importlib import resources

from assay.sandbox.interface import Flow, InfrastructureError, NameQuery, NetworkLog

SINK_PORT = 8053  # where the rules send TCP (loopback of the run's namespace)
DNS_PORT = 5353  # where they send DNS
READY_S = 5.0  # the sink's start-up, rules included
STOP_S = 3.0  # for it to read what the run left queued and record connections still open
_READ_CAP = 3 << 20  # more than the sink ever writes (its RECORD_BYTES and slack)
_MAX_FLOWS = 1024
_MAX_QUERIES = 4096
# SSH is refused, as many networks' firewalls do: its content is encrypted, so the sink
# would learn nothing past the connect (which the tracer sees and the name, which the
# resolver records), and a client that reaches a server loads the user's keys, which
# would read as the artifact stealing them (a benign `git fetch` over ssh).
_RULES = f"""
table inet assay {{
  chain refused {{
    type filter hook output priority -200; policy accept;
    ip daddr != 127.0.0.0/8 tcp dport 22 reject with tcp reset
    ip6 daddr != ::1 tcp dport 22 reject with tcp reset
  }}
  chain output {{
    type nat hook output priority -100; policy accept;
    ip daddr != 127.0.0.0/8 meta l4proto tcp redirect to :{SINK_PORT}
    ip6 daddr != ::1 meta l4proto tcp redirect to :{SINK_PORT}
    udp dport 53 redirect to :{DNS_PORT}
  }}
}}
"""
# Run by root in the fresh namespace, then as the sink's user: unshare execs this shell,
# which execs the sink, so the validator is the parent of each in turn. IPv6 is the
# host's to have: without it, nothing of the artifact's reaches an IPv6 address either.
_SETUP = (
    "ip link set lo up && ip route add local 0.0.0.0/0 dev lo table local"
    " && { [ ! -e /proc/net/if_inet6 ] || ip -6 route add local ::/0 dev lo table local; }"
    ' && nft -f "$1" && shift && exec "$@"'
)


class NetSink:
    """The sink of one run and the namespace it holds."""

    def __init__(self, python: str, uid: int, gid: int) -> None:
        """Start it and wait until its rules are in place and it listens; an
        `InfrastructureError` when it cannot (a run is never unobserved)."""
        self.records = tempfile.TemporaryFile(prefix="assay-net-")  # noqa: SIM115 (closed by kill)
        self.netns_fd = -1
        ready_r, ready_w = os.pipe()
        rules_fd = os.memfd_create("assay-net-rules", 0)
        os.write(rules_fd, _RULES.encode())
        source = resources.files("assay.sandbox.bwrap").joinpath("netsink_server.py")
        drop = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
        sink = [python, "-I", "-S", "-c", source.read_text(), str(SINK_PORT), str(DNS_PORT)]
        argv = [
            "unshare",
            "--net",
            "--",
            "/bin/sh",
            "-c",
            _SETUP,
            "sh",
            f"/proc/self/fd/{rules_fd}",
        ]
        try:
            self.process = subprocess.Popen(
                [*argv, *drop, "--no-new-privs", *sink, str(ready_w), str(os.getpid())],
                stdin=subprocess.DEVNULL,
                stdout=self.records,
                stderr=subprocess.PIPE,
                pass_fds=(ready_w, rules_fd),
                cwd="/",
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
                start_new_session=True,
            )
        except OSError as exc:
            self.records.close()
            raise InfrastructureError(f"cannot start the network sink: {exc}") from exc
        finally:
            os.close(ready_w)
            os.close(rules_fd)
        try:
            self._wait_ready(ready_r)
            self.netns_fd = os.open(f"/proc/{self.process.pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        except BaseException:
            self.kill()
            raise
        finally:
            os.close(ready_r)

    def _wait_ready(self, ready_r: int) -> None:
        readable, _, _ = select.select([ready_r], [], [], READY_S)
        said = os.read(ready_r, 16) if readable else b""
        if said == b"ready\n":
            return
        self.process.kill()
        _, err = self.process.communicate(timeout=5)
        why = err.decode(errors="replace").strip()[-300:] or "it did not start in time"
        raise InfrastructureError(f"the network sink could not be set up: {why}")

    def nsenter(self) -> list[str]:
        """The command prefix that runs a program in the sink's namespace (the launcher
        must be passed `netns_fd`)."""
        return ["nsenter", f"--net=/proc/self/fd/{self.netns_fd}", "--"]

    def collect(self) -> NetworkLog:
        """Stop the sink (it records connections still open) and read what it saw; an
        `InfrastructureError` if it died before (what it missed is unknown)."""
        if self.process.poll() is not None:
            raise InfrastructureError(
                f"the network sink died during the run (exit {self.process.returncode})"
            )
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(STOP_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.records.seek(0)
        return parse_records(self.records.read(_READ_CAP))

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()
        if self.netns_fd >= 0:
            os.close(self.netns_fd)
            self.netns_fd = -1
        self.records.close()


def parse_records(data: bytes) -> NetworkLog:
    """The sink's records. The sink is the validator's own, but what it quotes is the
    artifact's: every field is checked, and a line that is not a record is skipped."""
    flows: list[Flow] = []
    queries: list[NameQuery] = []
    truncated = False
    for line in data.splitlines():
        with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError, binascii.Error):
            record = json.loads(line)
            kind = record["kind"]
            truncated |= kind in ("capped", "refused") or bool(record.get("cut"))
            if kind == "tcp" and len(flows) < _MAX_FLOWS:
                flows.append(_flow(record))
            elif kind == "dns" and record.get("name") and len(queries) < _MAX_QUERIES:
                queries.append(
                    NameQuery(float(record["t"]), str(record["name"]), str(record["type"]))
                )
    truncated |= len(flows) >= _MAX_FLOWS or len(queries) >= _MAX_QUERIES
    return NetworkLog(tuple(flows), tuple(queries), truncated)


def _flow(record: dict[str, object]) -> Flow:
    http = record.get("http")
    fields = http if isinstance(http, dict) else {}
    port = record["port"]
    if not isinstance(port, int):
        raise TypeError("port")
    return Flow(
        at=float(str(record["t"])),
        address=str(record["address"]),
        port=port,
        name=str(record.get("name", "")),
        size=int(str(record["size"])),
        data=base64.b64decode(str(record.get("data", "")), validate=True),
        http_method=str(fields.get("method", "")),
        http_host=str(fields.get("host", "")),
        http_path=str(fields.get("path", "")),
        tls_name=str(record.get("tls_name", "")),
    )
