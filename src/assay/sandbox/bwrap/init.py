"""The init of a lived-in sandbox (stdlib only): pid 1, as a machine's is.

bubblewrap runs it as pid 1 (`--as-pid-1`) with the command after it. Before the
command starts it shows itself as a Debian machine's init reads in /proc/1 (its
command line `/sbin/init`, its name `systemd`), closes the rest of /proc/1 as a
root process's is closed to a user (not dumpable: its environment, executable and
descriptors are not readable), then starts the command, reaps every orphan the
tree leaves to it, and exits with the command's status once the command is gone
(the kernel then ends whatever is left in the namespace, as bubblewrap's own init
did). Without it, /proc/1/cmdline named bubblewrap, its descriptors and the command.

It is passed to the sandbox's Python with `-c`, so no file of it is in the sandbox.
"""

import ctypes
import os
import sys

_PR_SET_DUMPABLE = 4
_PR_SET_NAME = 15
TITLE = b"/sbin/init"
NAME = b"systemd"


def retitle(title: bytes, name: bytes) -> None:
    """Rewrite this process's command line in place (as setproctitle does: a NUL after
    the title and none at the end, so the kernel reads up to that NUL) and its name."""
    libc = ctypes.CDLL(None, use_errno=True)
    with open("/proc/self/stat", "rb") as handle:
        data = handle.read()
    fields = data[data.rfind(b")") + 2 :].split()
    start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end
    if end - start > len(title) + 1:
        ctypes.memmove(start, title + b"\0" + b" " * (end - start - len(title) - 1), end - start)
    libc.prctl(_PR_SET_NAME, name, 0, 0, 0)


def main() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    retitle(TITLE, NAME)
    command = os.fork()
    if command == 0:
        try:
            os.execv(sys.argv[1], sys.argv[1:])
        finally:
            os._exit(127)
    while True:
        pid, status = os.wait()
        if pid == command:
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main()
