"""The `assay` command run inside the test process, as `python -m assay` runs it.

`assay.cli.main` is called with the given arguments under click's CliRunner
isolation (standard streams captured apart, the environment patched) and in the
given directory; its `SystemExit` becomes the exit status, exactly as the
interpreter turns it into the process's. A cold `python -m assay` costs over a
second of CPU in imports alone; tests that need a real process (signals, kill -9,
the interpreter's own exit path, packaging) keep starting one.

The round's sandbox backend is per process (`assay.sandbox.default_backend`);
after each command it is released, as the command's own exit would release it,
so nothing of one test's sandboxes is left for the next.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from typer.testing import CliRunner

from assay import cli
from assay.sandbox import default_backend


def run_cli(
    args: Sequence[str],
    *,
    env: Mapping[str, str | None] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `assay ARGS` in this process; the result as `subprocess.run` would give it."""
    cli._register()
    argv = ["assay", *args]
    code: int
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        out, err, _ = stack.enter_context(CliRunner().isolation(env=env))
        saved_argv, sys.argv = sys.argv, argv
        try:
            cli.main()
            code = 0
        except SystemExit as exc:
            code = _exit_status(exc.code)
        finally:
            sys.argv = saved_argv
            _release_backend()
        sys.stdout.flush()
        sys.stderr.flush()
        stdout = out.getvalue().decode(errors="replace")
        stderr = err.getvalue().decode(errors="replace")
    return subprocess.CompletedProcess(argv, code, stdout, stderr)


def _exit_status(code: object) -> int:
    """What the interpreter makes of `sys.exit(code)`."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    sys.stderr.write(f"{code}\n")
    return 1


def _release_backend() -> None:
    if default_backend.cache_info().currsize:
        default_backend().release()
