"""Start coverage in a child process when the parent asked for it."""

import os


def process_startup() -> None:
    config = os.environ.get("COVERAGE_PROCESS_START")
    if not config:
        return
    try:
        import coverage
    except ImportError:
        return
    coverage.process_startup()
