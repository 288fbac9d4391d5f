"""The bubblewrap backend: Linux namespaces (bwrap), cgroup accounting, a seccomp
filter, strace as the tracer, and the host-side tmpfs mounts they need.

Everything here is specific to this backend; the rest of assay sees only
`assay.sandbox.interface`.
"""

from assay.sandbox.bwrap.backend import BwrapBackend

__all__ = ["BwrapBackend"]
