"""`assay --version` answers without importing any command: not the validator, not the
bittensor SDK, not Ray (what made it take seconds)."""

from __future__ import annotations

import subprocess
import sys

from assay import __version__

PROBE = """
import sys
sys.argv = ["assay", "--version"]
from assay.cli import main
try:
    main()
except SystemExit:  # typer's way of ending a command that succeeded
    pass
heavy = ("bittensor", "ray", "assay.validator", "assay.cli.round_cmd")
print(sorted(m for m in sys.modules if m.startswith(heavy)))
"""


def test_the_version_imports_no_command() -> None:
    shown = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    assert shown == [f"assay {__version__}", "[]"]
