"""A validator's watchdog: when the validator dies, however it dies, its sandboxes die.

The parent-death signals along the run's process chain (setpriv, strace, bwrap's
--die-with-parent) each take effect only once their process has set them. A
validator killed in the window before one of them is set leaves a sandbox with no
parent to die with, and bubblewrap reads the closed --block-fd as its go. So each
validator also starts a watchdog: a shell blocked on a pipe that only the
validator holds. The kernel closes that pipe when the validator exits; the shell
then runs this module, which kills everything in the validator's cgroups, removes
them (so a launcher that has not yet joined cannot join), kills its tracers and
removes its runtime directory. A validator that releases its sandboxes normally
stands the watchdog down first.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

from assay.sandbox.bwrap import hostfs
from assay.sandbox.bwrap.cgroups import detect_driver
from assay.sandbox.interface import InfrastructureError
from assay.sandbox.owners import owner_tag

_STAND_DOWN = b"stand-down"
# sh waits on the pipe: a few hundred KiB of memory, where an idle Python would
# take tens of MiB. Only when the pipe closes without a stand-down is Python run.
_REAP = f"import sys; from {__name__} import reap; reap(*sys.argv[1:])"
_GUARD = f'read -r word; [ "$word" = {_STAND_DOWN.decode()} ] || exec "$@"'


class Watchdog:
    """Started once a validator has sandboxes to lose; stood down when it has none."""

    def __init__(self, runtime_base: Path) -> None:
        self._base = runtime_base
        self._process: subprocess.Popen[bytes] | None = None

    def ensure(self) -> None:
        if self._process is not None and self._process.poll() is None:
            return
        reaper = [sys.executable, "-P", "-c", _REAP, str(self._base), owner_tag()]
        try:
            self._process = subprocess.Popen(
                ["/bin/sh", "-c", _GUARD, "sh", *reaper],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                start_new_session=True,  # not in the validator's process group: Ctrl-C
                cwd="/",
            )
        except OSError as exc:
            raise InfrastructureError(f"cannot start the sandbox watchdog: {exc}") from exc

    def stand_down(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        assert process.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            process.stdin.write(_STAND_DOWN + b"\n")
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
        process.wait()


def reap(base: str, owner: str) -> None:
    """Remove what the (dead) validator `owner` left: its cgroups' processes and the
    groups, its tracers and its runtime directory."""
    with hostfs.host_lock(Path(base)):
        detect_driver().remove_owner(owner)
        hostfs.RuntimeTree(Path(base)).remove_owner(owner)
