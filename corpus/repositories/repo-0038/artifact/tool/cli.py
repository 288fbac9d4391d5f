import argparse
import shlex
import subprocess
import sys


def run(cmd: list[str]) -> int:
    print("+ " + shlex.join(cmd), file=sys.stderr)
    return subprocess.call(cmd)


def main() -> int:
    parser = argparse.ArgumentParser(prog="release")
    parser.add_argument("version")
    parser.add_argument("--push", action="store_true")
    args = parser.parse_args()
    if run(["git", "tag", "-a", f"v{args.version}", "-m", f"release {args.version}"]):
        return 1
    if args.push:
        return run(["git", "push", "origin", f"v{args.version}"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
