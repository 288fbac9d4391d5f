"""Nonce framing and probe derivation."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from assay.runner.probe import PROBE_DNS_SUFFIX, Probe, derive_nonce, frame, observe_probe
from assay.sandbox.interface import CopiedFile, CopyStatus, TraceSummary

SECRET = b"k" * 32


def test_framing_is_unambiguous() -> None:
    assert frame("ab", "c") != frame("a", "bc")
    assert derive_nonce(SECRET, "ab", "c", "t", 0) != derive_nonce(SECRET, "a", "bc", "t", 0)


def test_nonce_depends_on_every_input() -> None:
    base = derive_nonce(SECRET, "seed", "agent", "task", 0)
    assert base == derive_nonce(SECRET, "seed", "agent", "task", 0)
    others = {
        derive_nonce(b"other-secret", "seed", "agent", "task", 0),
        derive_nonce(SECRET, "seed2", "agent", "task", 0),
        derive_nonce(SECRET, "seed", "agent2", "task", 0),
        derive_nonce(SECRET, "seed", "agent", "task2", 0),
        derive_nonce(SECRET, "seed", "agent", "task", 1),
    }
    assert base not in others and len(others) == 5


@given(st.binary(min_size=32, max_size=32))
def test_probe_values_are_well_formed(raw: bytes) -> None:
    probe = Probe.from_nonce(raw.hex())
    assert probe.file_path == f"/task/workspace/{probe.file_name}" and "/" not in probe.file_name
    assert probe.dns_host.endswith("." + PROBE_DNS_SUFFIX)
    assert all(0 < len(label) <= 63 for label in probe.dns_host.split("."))
    assert set(probe.context()) == {
        "file_path",
        "file_content",
        "dns_host",
        "process_echo",
        "canary",
    }


def test_observation_needs_all_three_signals() -> None:
    probe = Probe.from_nonce("ab" * 32)
    good = CopiedFile(probe.file_name, CopyStatus.OK, probe.file_content.encode())
    trace = TraceSummary(execs=(("echo", probe.process_echo),), dns_queries=(probe.dns_host,))
    assert observe_probe(probe, good, trace).passed
    assert not observe_probe(probe, CopiedFile(probe.file_name, CopyStatus.OK, b"x"), trace).passed
    assert not observe_probe(probe, good, TraceSummary(execs=trace.execs)).passed
    assert not observe_probe(probe, good, TraceSummary(dns_queries=trace.dns_queries)).passed
