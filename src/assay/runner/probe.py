"""Per-rep nonce and liveness probe, derived so nobody can precompute them.

nonce = HMAC-SHA256(secret, frame("assay/nonce/v1", round_seed, agent_hash, task_id, rep))
where every field is length-prefixed (8 bytes, big-endian) so no two different
tuples frame to the same bytes. Each probe value is HMAC-SHA256(nonce, label).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from assay.records.outcome import ProbeObservation
from assay.sandbox.interface import SANDBOX_WORKSPACE_DIR, CopiedFile, CopyStatus, TraceSummary

PROBE_DNS_SUFFIX = "probe.assay.invalid"


def frame(*fields: str | int) -> bytes:
    out = bytearray()
    for value in fields:
        data = str(value).encode("utf-8")
        out += len(data).to_bytes(8, "big") + data
    return bytes(out)


def derive_nonce(secret: bytes, round_seed: str, agent_hash: str, task_id: str, rep: int) -> str:
    message = frame("assay/nonce/v1", round_seed, agent_hash, task_id, rep)
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def _sub(nonce: str, label: str) -> str:
    return hmac.new(bytes.fromhex(nonce), label.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Probe:
    file_name: str
    file_content: str
    dns_host: str
    process_echo: str
    canary: str

    @classmethod
    def from_nonce(cls, nonce: str) -> Probe:
        return cls(
            file_name=f"probe-{_sub(nonce, 'file')[:16]}.txt",
            file_content=_sub(nonce, "content"),
            dns_host=f"n{_sub(nonce, 'dns')[:24]}.{PROBE_DNS_SUFFIX}",
            process_echo=f"assay-echo-{_sub(nonce, 'echo')[:24]}",
            canary=_sub(nonce, "canary")[:32],
        )

    @property
    def file_path(self) -> str:
        return f"{SANDBOX_WORKSPACE_DIR}/{self.file_name}"

    def context(self, workspace: str = SANDBOX_WORKSPACE_DIR) -> dict[str, str]:
        """The probe as the agent sees it in `context["probe"]`."""
        return {
            "file_path": f"{workspace}/{self.file_name}",
            "file_content": self.file_content,
            "dns_host": self.dns_host,
            "process_echo": self.process_echo,
            "canary": self.canary,
        }


def observe_probe(probe: Probe, copied: CopiedFile, trace: TraceSummary) -> ProbeObservation:
    matches = copied.status is CopyStatus.OK and hmac.compare_digest(
        copied.data, probe.file_content.encode()
    )
    return ProbeObservation(
        file_status=copied.status,
        file_matches=matches,
        dns_seen=trace.saw_dns(probe.dns_host),
        echo_seen=trace.saw_exec_with(probe.process_echo),
    )
