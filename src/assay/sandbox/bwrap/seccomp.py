"""The seccomp filter every sandboxed process runs under.

Compiled to classic BPF by libseccomp (through the `pyseccomp` ctypes binding)
rather than hand-written, so syscall numbers and architecture checks come from
the library that the kernel's own tooling uses. bubblewrap loads it last,
right before it executes the command.
"""

from __future__ import annotations

import errno
import functools
import socket
import tempfile

import pyseccomp

# Syscalls that reach beyond the sandbox or into the kernel's attack surface.
DENIED_SYSCALLS: tuple[str, ...] = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "kexec_load",
    "kexec_file_load",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "userfaultfd",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "setns",
    "unshare",
    "acct",
    "quotactl",
    "name_to_handle_at",
    "open_by_handle_at",
    "lookup_dcookie",
    "iopl",
    "ioperm",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "syslog",
    "personality",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "vhangup",
)

# Socket families a sandbox may open: local sockets, IP on its own loopback, and
# route netlink (NETLINK_ROUTE only), which glibc's getaddrinfo(AI_ADDRCONFIG),
# getifaddrs and if_nameindex read the namespace's addresses through. Every other
# family is refused; AF_VSOCK above all, which the network namespace does not
# isolate (a sandbox could bind a host vsock port), and families such as AF_ALG,
# AF_PACKET or AF_BLUETOOTH that only add kernel surface.
ALLOWED_FAMILIES = (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK)
_NETLINK_ROUTE = 0

_NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)


def _build_filter() -> pyseccomp.SyscallFilter:
    sf = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    for name in DENIED_SYSCALLS:
        sf.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
    # clone with any namespace flag is refused; clone3 passes its flags in memory
    # that seccomp cannot inspect, so it reports ENOSYS and libc falls back to clone.
    for flag in _NAMESPACE_FLAGS:
        sf.add_rule(
            pyseccomp.ERRNO(errno.EPERM), "clone", pyseccomp.Arg(0, pyseccomp.MASKED_EQ, flag, flag)
        )
    sf.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
    _restrict_sockets(sf)
    # ioctl(TIOCSTI) would push keystrokes into a terminal outside the sandbox.
    sf.add_rule(pyseccomp.ERRNO(errno.EPERM), "ioctl", pyseccomp.Arg(1, pyseccomp.EQ, 0x5412))
    return sf


def _restrict_sockets(sf: pyseccomp.SyscallFilter) -> None:
    refuse_family = pyseccomp.ERRNO(errno.EAFNOSUPPORT)
    top = max(ALLOWED_FAMILIES)
    for family in range(top):
        if family not in ALLOWED_FAMILIES:
            sf.add_rule(refuse_family, "socket", pyseccomp.Arg(0, pyseccomp.EQ, family))
    # Compared as 64-bit values, so a family with high bits set (the kernel reads
    # an int) falls here too.
    sf.add_rule(refuse_family, "socket", pyseccomp.Arg(0, pyseccomp.GT, top))
    sf.add_rule(
        pyseccomp.ERRNO(errno.EPROTONOSUPPORT),
        "socket",
        pyseccomp.Arg(0, pyseccomp.EQ, socket.AF_NETLINK),
        pyseccomp.Arg(2, pyseccomp.NE, _NETLINK_ROUTE),
    )
    # Only local socket pairs exist; refusing the rest keeps the family list whole.
    sf.add_rule(refuse_family, "socketpair", pyseccomp.Arg(0, pyseccomp.NE, socket.AF_UNIX))


@functools.cache
def compiled_filter() -> bytes:
    """The filter as the raw BPF program bubblewrap's `--seccomp FD` expects."""
    with tempfile.TemporaryFile() as out:
        _build_filter().export_bpf(out)
        out.seek(0)
        return out.read()
