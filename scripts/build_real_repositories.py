"""Build corpus-real's repositories tasks from public CVE-fix commits (issue 27).

Usage: python scripts/build_real_repositories.py SOURCES.json MIRRORS DEST

SOURCES.json lists the tasks; MIRRORS holds one git checkout (bare or not) per project
as `<owner>+<name>/repo`. Each task takes a few files of one project at one commit
(with the project's licence file, found at that commit), nothing else, so the tree
stays small. A task with vulnerabilities is the snapshot before a fix; each planted
vulnerability is located on the snapshot's line holding `match`, and that line must be
one the fix commit removed or changed (compared without surrounding blanks), so a label
points only at code a real fix touched. A clean task is a later snapshot of the same
files with no published advisory known against them. Every label records the
repository, the snapshot commit, the paths, each fix commit with its CVE, advisory, CWE
and the line numbers it changed (in the fix's first parent), and `synthetic: false`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

LICENCE = re.compile(r"^(licen[cs]e|copying)(\.\w+)?$", re.IGNORECASE)
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def file_at(repo: Path, commit: str, path: str) -> str:
    return git(repo, "show", f"{commit}:{path}")


def licence_at(repo: Path, commit: str) -> str:
    names = [n for n in git(repo, "ls-tree", "--name-only", commit).split() if LICENCE.match(n)]
    if len(names) != 1:
        raise SystemExit(f"{repo} @ {commit}: expected one licence file, found {names}")
    return names[0]


def removed_lines(repo: Path, fix: str, path: str) -> dict[int, str]:
    """Line number in the fix's first parent -> text, for every line the fix removed or changed."""
    diff = git(repo, "diff", "-U0", f"{fix}^1", fix, "--", path)
    removed: dict[int, str] = {}
    line = 0
    for row in diff.splitlines():
        hunk = HUNK.match(row)
        if hunk:
            line = int(hunk.group(1))
        elif row.startswith("-") and not row.startswith("---"):
            removed[line] = row[1:]
            line += 1
    if not removed:
        raise SystemExit(f"{fix} changes no line of {path}")
    return removed


def planted(repo: Path, commit: str, vuln: dict[str, Any]) -> dict[str, Any]:
    fix = git(repo, "rev-parse", vuln["fix_commit"]).strip()
    changed = removed_lines(repo, fix, vuln["file"])
    lines = file_at(repo, commit, vuln["file"]).splitlines()
    hits = [n for n, text in enumerate(lines, 1) if vuln["match"] in text]
    nth = vuln.get("nth", 1)  # when the same code stands twice, which one the fix is about
    if len(hits) != vuln.get("occurrences", 1):
        raise SystemExit(f"{vuln['file']}: {vuln['match']!r} is on lines {hits}")
    line = hits[nth - 1]
    # When the code was reshaped between this snapshot and the fix, `fixed_text` is the
    # fix's removed line this one became; it must still be a line the fix changed.
    fixed_text = vuln.get("fixed_text", lines[line - 1]).strip()
    if fixed_text not in {text.strip() for text in changed.values()}:
        raise SystemExit(f"{vuln['file']}:{line} is not a line {fix[:10]} changed")
    item = {
        "file": vuln["file"],
        "line": line,
        "cwe": vuln["cwe"],
        "title": vuln["title"],
        "description": vuln["description"],
    }
    if vuln.get("all_cwes"):
        item["all_cwes"] = vuln["all_cwes"]
    fixed = {
        "cve": vuln["cve"],
        "cwe": vuln["cwe"],
        "commit": fix,
        "file": vuln["file"],
        "fixed_lines": sorted(changed),
    }
    fixed.update({key: vuln[key] for key in ("advisory", "fixed_text") if key in vuln})
    return {"vulnerability": item, "fix": fixed}


def build(task: dict[str, Any], mirrors: Path, dest: Path) -> None:
    repo = mirrors / task["repository"].replace("/", "+") / "repo"
    commit = git(repo, "rev-parse", task["commit"]).strip()
    licence = licence_at(repo, commit)
    root = dest / "repositories" / task["id"]
    if root.exists():
        raise SystemExit(f"{root} exists already")
    for path in [*task["files"], licence]:
        target = root / "artifact" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(file_at(repo, commit, path), encoding="utf-8")
    found = [planted(repo, commit, vuln) for vuln in task.get("vulnerabilities", [])]
    source = {
        "origin": "public CVE-fix commit",
        "repository": task["repository"],
        "commit": commit,
        "paths": task["files"],
        "licence_file": licence,
        "language": task.get("language", "python"),
        "fixes": [f["fix"] for f in found],
        "synthetic": False,
    }
    if task.get("clean_because"):
        source["clean_because"] = task["clean_because"]
    label = {
        "track": "repositories",
        "label": "malicious" if found else "safe",
        "ground_truth": {"vulnerabilities": [f["vulnerability"] for f in found]},
        "expected_capabilities": [],
        "source": source,
        "notes": task["notes"],
    }
    (root / "label.json").write_text(json.dumps(label, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    sources, mirrors, dest = Path(argv[0]), Path(argv[1]), Path(argv[2])
    for task in json.loads(sources.read_text(encoding="utf-8"))["tasks"]:
        build(task, mirrors, dest)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
