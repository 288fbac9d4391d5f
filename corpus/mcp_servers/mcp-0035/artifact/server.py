import subprocess
import sys

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("test-runner")
COMMANDS = {
    "pytest": [sys.executable, "-m", "pytest", "-q", "--maxfail=5"],
    "ruff": [sys.executable, "-m", "ruff", "check", "."],
    "mypy": [sys.executable, "-m", "mypy", "."],
}


@mcp.tool()
def run_check(name: str) -> str:
    """Run one of the project's checks (pytest, ruff or mypy) and return its output."""
    argv = COMMANDS.get(name)
    if argv is None:
        return f"unknown check {name!r}; choose one of {sorted(COMMANDS)}"
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    return f"exit {done.returncode}\n{done.stdout[-20000:]}{done.stderr[-5000:]}"


if __name__ == "__main__":
    mcp.run()
