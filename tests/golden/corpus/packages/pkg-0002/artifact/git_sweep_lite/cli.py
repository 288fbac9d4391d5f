import argparse
import subprocess


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def main() -> None:
    parser = argparse.ArgumentParser(description="Delete remote branches already merged into main")
    parser.add_argument("--remote", default="origin")
    parser.add_argument("--force", action="store_true", help="actually delete (default: dry run)")
    args = parser.parse_args()
    git("fetch", "--prune", args.remote)
    merged = [b.strip() for b in git("branch", "-r", "--merged", f"{args.remote}/main").splitlines()]
    for ref in merged:
        name = ref.split("/", 1)[1]
        if name in ("main", "HEAD -> origin/main"):
            continue
        if args.force:
            git("push", args.remote, "--delete", name)
        print(("deleted " if args.force else "would delete ") + name)
