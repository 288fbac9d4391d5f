"""Build corpus-real's skills and MCP-server tasks from public git repositories (issue 36).

Usage: python scripts/build_real_behavioural.py SOURCES.json MIRRORS DEST

SOURCES.json lists the tasks; MIRRORS holds one git checkout (bare or not) per project
as `<owner>+<name>/repo`. Each task is one folder (or one file) of one repository at one
commit, packed as a tarball of exactly the files git holds there, less the files the
task's `exclude` names (a test suite's expected-result sidecar, which states the label).
A malicious one is stored sealed like the malware samples (an encrypted zip), a safe one
as the tarball; both go through the importers' writer, so every task is read back and
test-unpacked before any is written. A task id is `skill-` or `mcp-` and a digest of the
repository, commit and path: it names neither the source nor the label. Every label
records the repository, the commit, the path, the files left out and `synthetic: false`.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from assay.corpus.importing import PackedTask, write_tasks
from assay.corpus.interface import Label
from assay.mechanism.spec import Track

PREFIX = {Track.SKILLS: "skill", Track.MCP_SERVERS: "mcp"}


def git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True).stdout


def task_id(track: Track, repository: str, commit: str, path: str) -> str:
    digest = hashlib.sha256(f"{repository}@{commit}:{path}".encode()).hexdigest()[:12]
    return f"{PREFIX[track]}-{digest}"


def tarball(repo: Path, commit: str, path: str, exclude: set[str], into: Path) -> list[str]:
    """The files under `path` at `commit` as `into` (a .tar.gz with fixed metadata, so the
    same commit always gives the same bytes); returns the paths packed."""
    when = int(git(repo, "show", "-s", "--format=%ct", commit).strip())
    listing = git(repo, "ls-tree", "-r", "-z", commit, "--", path).split(b"\0")
    top = PurePosixPath(path)
    folder = top.stem if len([e for e in listing if e]) == 1 else top.name
    packed = []
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for entry in filter(None, listing):
            meta, name = entry.decode().split("\t", 1)
            mode, kind, blob = meta.split()
            relative = PurePosixPath(name).relative_to(top) if name != path else top.name
            if kind != "blob" or mode == "120000" or str(relative) in exclude:
                continue  # links and submodules are not carried; excluded sidecars neither
            data = git(repo, "cat-file", "blob", blob)
            info = tarfile.TarInfo(f"{folder}/{relative}")
            info.size, info.mtime = len(data), when
            info.mode = 0o755 if mode == "100755" else 0o644
            archive.addfile(info, io.BytesIO(data))
            packed.append(name)
    into.write_bytes(gzip.compress(raw.getvalue(), mtime=0))
    return packed


def packed_task(task: dict[str, Any], mirrors: Path, workdir: Path) -> PackedTask:
    track, label = Track(task["track"]), Label(task["label"])
    repo = mirrors / task["repository"].replace("/", "+") / "repo"
    commit = git(repo, "rev-parse", f"{task['commit']}^{{commit}}").decode().strip()
    tid = task_id(track, task["repository"], commit, task["path"])
    archive = workdir / tid / f"{PurePosixPath(task['path']).stem}.tar.gz"
    archive.parent.mkdir(parents=True)
    exclude = set(task.get("exclude", []))
    files = tarball(repo, commit, task["path"], exclude, archive)
    if not files:
        raise SystemExit(f"{task['repository']}@{commit}: nothing at {task['path']}")
    source = {
        "origin": task["origin"],
        "repository": task["repository"],
        "commit": commit,
        "path": task["path"],
        "files": len(files),
        "packed_with": "git ls-tree + cat-file, as a tarball",
    }
    if exclude:
        source["left_out"] = sorted(exclude)
    return PackedTask(
        task_id=tid,
        label=label,
        archive=archive,
        source=source,
        notes=task["notes"],
        seal=label is Label.MALICIOUS,
        track=track,
    )


def main(argv: list[str]) -> int:
    sources, mirrors, dest = Path(argv[0]), Path(argv[1]), Path(argv[2])
    with tempfile.TemporaryDirectory(prefix="assay-real-behavioural-") as tmp:
        tasks = [
            packed_task(task, mirrors, Path(tmp))
            for task in json.loads(sources.read_text(encoding="utf-8"))["tasks"]
        ]
        summary = write_tasks(dest, tasks)
    print(", ".join(f"{t.value}: {n}" for t, n in summary.tasks.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
