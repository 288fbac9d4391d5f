"""The artifact's copy into the sandbox, and the digest of the agents' runtime."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.sandbox import InfrastructureError
from assay.sandbox.bwrap import BwrapBackend
from assay.sandbox.bwrap import backend as bwrap_backend
from assay.sandbox.bwrap.hostfs import COPY_MTIME, mounts_under
from assay.sandbox.interface import InputFile, ResourceLimits, SealedRequest
from assay.sandbox.runtime import AGENT_RUNTIME_DIR, tree_digest

LIMITS = ResourceLimits(
    cpu_budget_s=2.0,
    wall_backstop_s=20.0,
    memory_bytes=256 << 20,
    pids=32,
    workspace_bytes=1 << 20,
    result_bytes=1 << 16,
)
LOOK = """
import json, os
root = "/task/artifact"
seen = {}
for here, dirs, files in os.walk(root):
    for name in dirs + files:
        path = os.path.join(here, name)
        st = os.lstat(path)
        seen[os.path.relpath(path, root)] = {
            "mode": oct(st.st_mode), "mtime": int(st.st_mtime),
            "link": os.readlink(path) if os.path.islink(path) else None,
            "text": None if os.path.islink(path) or os.path.isdir(path) else open(path).read(),
        }
print(json.dumps(seen))
"""


@pytest.fixture
def runtime() -> Iterator[Path]:
    """A runtime base the unprivileged sandbox user can traverse (pytest's tmp is 0700)."""
    base = Path(tempfile.mkdtemp(prefix="assay-test-", dir="/tmp"))
    base.chmod(0o711)
    yield base / "rt"
    assert mounts_under(base) == []
    shutil.rmtree(base)


@pytest.fixture
def backend(runtime: Path) -> Iterator[BwrapBackend]:
    made = BwrapBackend(runtime_base=runtime)
    yield made
    made.release()


def look(backend: BwrapBackend, artifact: Path) -> dict[str, dict[str, object]]:
    request = SealedRequest(
        argv=(backend.python, "-I", "-S", "/task/input/look.py"),
        limits=LIMITS,
        inputs=(InputFile("look.py", LOOK.encode()),),
        artifact_dir=str(artifact),
    )
    observation = backend.run(request)
    assert observation.exit_code == 0, observation.stderr.data
    seen: dict[str, dict[str, object]] = json.loads(observation.stdout.data)
    return seen


@pytest.mark.sandbox
def test_the_artifact_arrives_as_a_normalised_copy(backend: BwrapBackend, tmp_path: Path) -> None:
    artifact = tmp_path / "artifact"
    (artifact / "scripts").mkdir(parents=True)
    (artifact / "scripts" / "run.sh").write_text("echo hi\n")
    (artifact / "scripts" / "run.sh").chmod(0o700)  # unreadable to the sandbox user as is
    (artifact / "scripts").chmod(0o700)
    (artifact / "SKILL.md").write_text("# skill\n")
    os.utime(artifact / "SKILL.md", (1_000_000_000, 1_000_000_000))
    (artifact / "creds").symlink_to("/etc/passwd")  # a link stays a link, never followed
    seen = look(backend, artifact)
    # Only what the artifact digest covers (and the executable bit) shows inside.
    assert seen["scripts"]["mode"] == oct(0o40755)
    assert seen["scripts/run.sh"] == {
        "mode": oct(0o100755),
        "mtime": COPY_MTIME,
        "link": None,
        "text": "echo hi\n",
    }
    assert seen["SKILL.md"]["mode"] == oct(0o100644) and seen["SKILL.md"]["mtime"] == COPY_MTIME
    assert seen["creds"]["link"] == "/etc/passwd" and seen["creds"]["text"] is None
    # The next run sees its own artifact, nothing of the previous one.
    other = tmp_path / "other"
    other.mkdir()
    (other / "README").write_text("other\n")
    assert set(look(backend, other)) == {"README"}


@pytest.mark.sandbox
def test_a_fifo_in_the_artifact_is_refused_not_read(backend: BwrapBackend, tmp_path: Path) -> None:
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    os.mkfifo(artifact / "pipe")  # opening it to copy would block forever
    with pytest.raises(InfrastructureError, match="not a regular file"):
        look(backend, artifact)


def test_the_runtime_digest_follows_every_byte_and_link(tmp_path: Path) -> None:
    root = tmp_path / "runtime"
    assert tree_digest(root) == tree_digest(tmp_path / "also-missing")
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("VERSION = 1\n")
    first = tree_digest(root)
    assert first != tree_digest(tmp_path / "also-missing")
    (root / "pkg" / "__init__.py").write_text("VERSION = 2\n")
    second = tree_digest(root)
    (root / "alias").symlink_to("pkg")
    third = tree_digest(root)
    assert len({first, second, third}) == 3
    assert tree_digest(root) == third


def test_the_backend_digest_changes_with_the_runtime(
    backend: BwrapBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert Path(AGENT_RUNTIME_DIR, "httpx", "__init__.py").is_file()  # installed here
    installed = backend.digest
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (runtime / "httpx.py").write_text("__version__ = '0'\n")
    monkeypatch.setattr(bwrap_backend, "AGENT_RUNTIME_DIR", str(runtime))
    elsewhere = BwrapBackend(runtime_base=tmp_path / "rt")
    assert elsewhere.python_path == (str(runtime),)
    before = elsewhere.digest
    (runtime / "httpx.py").write_text("__version__ = '1'\n")
    after = BwrapBackend(runtime_base=tmp_path / "rt").digest
    assert len({installed, before, after}) == 3


class _ClaimsUsr(BwrapBackend):
    """A backend whose "private" path is /usr, which every sandbox does show."""

    @property
    def private_paths(self) -> tuple[str, ...]:
        return ("/usr",)


@pytest.mark.sandbox
def test_the_check_finds_a_private_path_a_view_shows(runtime: Path) -> None:
    backend = _ClaimsUsr(runtime_base=runtime)
    try:
        results = {r.name: r for r in backend.check()}
    finally:
        backend.release()
    assert not results["no host path in /proc"].ok
    assert "/proc/1/cmdline" in results["no host path in /proc"].detail
    failed = {n: r.detail for n, r in results.items() if not r.ok}
    assert set(failed) == {"no host path in /proc"}, failed
