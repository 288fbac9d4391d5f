"""Markdown changelog between two git refs (argv list, no shell)."""

import subprocess
import sys


def commits(start: str, end: str) -> list[str]:
    result = subprocess.run(
        ["git", "log", "--pretty=format:%h %s", f"{start}..{end}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return [line for line in result.stdout.splitlines() if line]


if __name__ == "__main__":
    args = sys.argv[1:3]
    start = args[0] if args else "HEAD~10"
    end = args[1] if len(args) > 1 else "HEAD"
    for entry in commits(start, end):
        print(f"- {entry}")
