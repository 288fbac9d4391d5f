"""Run one command sealed and report what happened (knows nothing about agents)."""

import functools

from assay.sandbox.interface import InfrastructureError, SandboxBackend


@functools.cache
def default_backend() -> SandboxBackend:
    """The backend rounds use: bubblewrap, one per process (it keeps sandboxes
    started ahead of their runs). Never falls back to running unsandboxed."""
    from assay.sandbox.bwrap import BwrapBackend

    return BwrapBackend()


__all__ = ["InfrastructureError", "SandboxBackend", "default_backend"]
