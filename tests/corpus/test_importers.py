"""The dataset importers on small fixtures in the datasets' own layouts, made here.

The "samples" are inert text shaped like packages: nothing in them runs, and the
tests never run them either; they check where bytes go and what labels say.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest
import pyzipper
from typer.testing import CliRunner

from assay.cli import _register, app
from assay.corpus.datadog import import_datadog
from assay.corpus.importing import ImportFailed
from assay.corpus.interface import CorpusError, Label
from assay.corpus.malregistry import import_malregistry
from assay.corpus.native import NativeCorpus
from assay.corpus.osv import import_osv
from assay.corpus.packed import materialised
from assay.mechanism.spec import Track

ADD = ("corpus", "add-benign")
SETUP = b"from setuptools import setup\nsetup(name='x')  # inert fixture\n"


def _sealed_zip(path: Path, members: dict[str, bytes], password: bytes = b"infected") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with pyzipper.AESZipFile(path, "w", encryption=pyzipper.WZ_AES) as archive:
        archive.setpassword(password)
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _tar(path: Path, members: dict[str, bytes], link: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        if link:
            info = tarfile.TarInfo(link)
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc/passwd"
            archive.addfile(info)
    return path


def _datadog(root: Path) -> Path:
    """The dataset's layout: sealed zips, each holding the sample's folder."""
    samples = root / "samples"
    _sealed_zip(
        samples / "pypi/malicious_intent/evilpkg/1.0/2024-01-02-evilpkg-v1.0.zip",
        {"2024-01-02-evilpkg-v1.0/evilpkg-1.0/setup.py": SETUP},
    )
    sdist = io.BytesIO()
    with tarfile.open(fileobj=sdist, mode="w:gz") as archive:
        info = tarfile.TarInfo("package/package.json")
        body = b'{"name": "left-padd", "version": "3.1.0"}'
        info.size = len(body)
        archive.addfile(info, io.BytesIO(body))
    _sealed_zip(
        samples / "npm/compromised_lib/left-padd/3.1.0/2024-02-03-left-padd-v3.1.0.zip",
        {"2024-02-03-left-padd-v3.1.0/left-padd-3.1.0.tgz": sdist.getvalue()},
    )
    _sealed_zip(samples / "pypi/2023-03-20-flatpkg-v0.2.zip", {"flat/setup.py": SETUP})
    # Not npm or PyPI: never read.
    _sealed_zip(samples / "ide_extensions/malicious_intent/e/1/e.zip", {"x.js": b"1"})
    return root


def test_datadog_import_keeps_samples_sealed_with_provenance(tmp_path: Path) -> None:
    src = _datadog(tmp_path / "dataset")
    summary = import_datadog(src, tmp_path / "corpus", commit="a" * 40)
    assert summary.tasks == {Track.PACKAGES: 3}
    tasks = {t.task_id: t for t in NativeCorpus(tmp_path / "corpus").tasks(Track.PACKAGES)}
    assert set(tasks) == {
        "pypi-evilpkg-1.0",
        "npm-left-padd-3.1.0",
        "pypi-flatpkg-0.2",
    }
    npm = tasks["npm-left-padd-3.1.0"]
    assert npm.label is Label.MALICIOUS
    assert dict(npm.source) | {"archive_sha256": "-"} == {
        "dataset": "DataDog/malicious-software-packages-dataset",
        "commit": "a" * 40,
        "path": "samples/npm/compromised_lib/left-padd/3.1.0/2024-02-03-left-padd-v3.1.0.zip",
        "ecosystem": "npm",
        "category": "compromised_lib",
        "package": "left-padd",
        "version": "3.1.0",
        "archive_sha256": "-",
        "synthetic": False,
    }
    # At rest the sample is the dataset's sealed zip, byte for byte.
    stored = npm.artifact_dir / "2024-02-03-left-padd-v3.1.0.zip"
    assert [p.name for p in npm.artifact_dir.iterdir()] == [stored.name]
    with zipfile.ZipFile(stored) as archive, pytest.raises((RuntimeError, NotImplementedError)):
        archive.read(archive.namelist()[0])
    # Unpacked for a round: the folder and the tarball inside peeled off.
    with materialised(npm.artifact_dir, npm.archive) as tree:
        assert json.loads((tree / "package.json").read_text())["name"] == "left-padd"
    evil = tasks["pypi-evilpkg-1.0"]
    with materialised(evil.artifact_dir, evil.archive) as tree:
        assert (tree / "setup.py").read_bytes() == SETUP
    assert tasks["pypi-flatpkg-0.2"].source["category"] == "unsorted"


def test_datadog_import_excludes_names_and_refuses_bad_samples(tmp_path: Path) -> None:
    src = _datadog(tmp_path / "dataset")
    excluded = import_datadog(src, tmp_path / "a", exclude=frozenset({"EvilPkg", "flatpkg"}))
    assert excluded.tasks == {Track.PACKAGES: 1}
    escaping = src / "samples/pypi/malicious_intent/slip/1/2024-01-01-slip-v1.zip"
    _sealed_zip(escaping, {"../../outside.py": b"x"})
    wrong = src / "samples/pypi/malicious_intent/locked/1/2024-01-01-locked-v1.zip"
    _sealed_zip(wrong, {"setup.py": SETUP}, password=b"not-the-documented-one")
    with pytest.raises(ImportFailed) as failed:
        import_datadog(src, tmp_path / "b")
    messages = "\n".join(str(p) for p in failed.value.problems)
    assert "slip" in messages and "escapes its root" in messages
    assert "locked" in messages
    assert not (tmp_path / "b").exists()  # all or nothing
    assert not (tmp_path / "outside.py").exists()


def _osv_records(root: Path) -> Path:
    pypi = {
        "id": "MAL-2024-1",
        "summary": "Malicious code in evilpkg (PyPI)",
        "affected": [{"package": {"ecosystem": "PyPI", "name": "Evil_Pkg"}, "versions": ["1.0"]}],
    }
    npm = {
        "id": "MAL-2024-2",
        "summary": "Malicious code in left-padd (npm)",
        "affected": [
            {
                "package": {"ecosystem": "npm", "name": "left-padd"},
                "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}]}],
            }
        ],
    }
    for record, where in ((pypi, "pypi/evil-pkg"), (npm, "npm/left-padd")):
        folder = root / "osv/malicious" / where
        folder.mkdir(parents=True)
        (folder / f"{record['id']}.json").write_text(json.dumps(record))
    return root


def _osv_artifacts(root: Path) -> Path:
    pkg_info = b"Metadata-Version: 2.1\nName: evil-pkg\nVersion: 1.0\n"
    _tar(
        root / "evil-pkg-1.0.tar.gz",
        {"evil-pkg-1.0/PKG-INFO": pkg_info, "evil-pkg-1.0/setup.py": SETUP},
    )
    manifest = b'{"name": "left-padd", "version": "9.9.9"}'
    _tar(root / "npm/left-padd-9.9.9.tgz", {"package/package.json": manifest})
    return root


def test_osv_import_joins_records_with_artifacts_and_seals_them(tmp_path: Path) -> None:
    records = _osv_records(tmp_path / "records")
    artifacts = _osv_artifacts(tmp_path / "artifacts")
    origin = "a-sample-collection@" + "c" * 40
    summary = import_osv(records, artifacts, tmp_path / "corpus", commit="b" * 40, origin=origin)
    assert summary.tasks == {Track.PACKAGES: 2}
    tasks = {t.task_id: t for t in NativeCorpus(tmp_path / "corpus").tasks(Track.PACKAGES)}
    evil = tasks["pypi-evil-pkg-1.0"]
    assert evil.source["record"] == "MAL-2024-1"
    assert evil.source["path"] == "osv/malicious/pypi/evil-pkg/MAL-2024-1.json"
    assert evil.source["synthetic"] is False and evil.source["commit"] == "b" * 40
    assert evil.archive is not None and evil.archive.password == "infected"
    stored = evil.artifact_dir / "evil-pkg-1.0.tar.gz.zip"
    assert stored.is_file() and b"setup(" not in stored.read_bytes()  # sealed at rest
    with materialised(evil.artifact_dir, evil.archive) as tree:
        assert (tree / "setup.py").read_bytes() == SETUP
    npm = tasks["npm-left-padd-9.9.9"]
    assert npm.source["record"] == "MAL-2024-2"  # a record of ranges names every version
    assert npm.source["artifact_file"] == "npm/left-padd-9.9.9.tgz"
    assert npm.source["artifact_origin"] == origin


def test_osv_import_refuses_artifacts_no_record_names(tmp_path: Path) -> None:
    records = _osv_records(tmp_path / "records")
    artifacts = _osv_artifacts(tmp_path / "artifacts")
    _tar(
        artifacts / "evil-pkg-2.0.tar.gz",
        {"evil-pkg-2.0/PKG-INFO": b"Name: evil-pkg\nVersion: 2.0\n"},
    )
    _tar(
        artifacts / "linked-1.0.tar.gz", {"linked-1.0/PKG-INFO": b"Name: linked\n"}, "linked-1.0/l"
    )
    with pytest.raises(ImportFailed) as failed:
        import_osv(records, artifacts, tmp_path / "corpus")
    messages = "\n".join(str(p) for p in failed.value.problems)
    assert "no MAL record names pypi evil-pkg 2.0" in messages
    assert "links and special files are not allowed" in messages
    assert not (tmp_path / "corpus").exists()


def test_one_archive_given_twice_is_one_task(tmp_path: Path) -> None:
    records = _osv_records(tmp_path / "records")
    artifacts = _osv_artifacts(tmp_path / "artifacts")
    shutil.copyfile(artifacts / "npm/left-padd-9.9.9.tgz", artifacts / "left-padd-copy.tgz")
    with pytest.raises(ImportFailed) as failed:
        import_osv(records, artifacts, tmp_path / "corpus")
    messages = "\n".join(str(p) for p in failed.value.problems)
    assert "is the archive of npm-left-padd-9.9.9; one artifact is one task" in messages
    assert not (tmp_path / "corpus").exists()


def test_add_benign_fetches_with_the_clients_and_records_digests(tmp_path: Path) -> None:
    """pip reads a local folder of sdists and npm packs a local folder: no network."""
    if shutil.which("npm") is None:
        pytest.fail("npm is part of the system tools (scripts/install-system-tools.sh)")
    setup = b"import setuptools\nsetuptools.setup(name='goodpkg', version='1.0')\n"
    links = tmp_path / "links"
    _tar(
        links / "goodpkg-1.0.tar.gz",
        {
            "goodpkg-1.0/setup.py": setup,
            "goodpkg-1.0/goodpkg.py": b"VALUE = 1\n",
            "goodpkg-1.0/PKG-INFO": b"Metadata-Version: 2.1\nName: goodpkg\nVersion: 1.0\n",
        },
    )
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "package.json").write_text('{"name": "tiny-fixture", "version": "2.0.1"}')
    (folder / "index.js").write_text("module.exports = 1;\n")
    _register()
    local = ("--find-links", str(links))
    result = CliRunner().invoke(
        app,
        [*ADD, str(tmp_path / "corpus"), "--pypi", "goodpkg==1.0", "--npm", str(folder), *local],
    )
    assert result.exit_code == 0, result.output
    tasks = {t.task_id: t for t in NativeCorpus(tmp_path / "corpus").tasks(Track.PACKAGES)}
    assert set(tasks) == {"pypi-goodpkg-1.0", "npm-tiny-fixture-2.0.1"}
    pypi = tasks["pypi-goodpkg-1.0"]
    assert pypi.label is Label.SAFE and pypi.archive is not None
    served = hashlib.sha256((links / "goodpkg-1.0.tar.gz").read_bytes()).hexdigest()
    assert pypi.source["registry_sha256"] == served and pypi.source["synthetic"] is False
    assert tasks["npm-tiny-fixture-2.0.1"].source["integrity"].startswith("sha512-")
    with materialised(pypi.artifact_dir, pypi.archive) as tree:
        assert (tree / "goodpkg.py").read_text() == "VALUE = 1\n"
    again = CliRunner().invoke(
        app,
        [*ADD, str(tmp_path / "corpus"), "--pypi", "goodpkg==1.0", "--find-links", str(links)],
    )
    assert again.exit_code == 1 and "task id taken" in again.output
    unpinned = CliRunner().invoke(app, ["corpus", "add-benign", str(tmp_path / "c"), "--pypi", "x"])
    assert unpinned.exit_code == 1 and "pin an exact version" in unpinned.output


def test_validate_refuses_a_packed_archive_that_does_not_unpack(tmp_path: Path) -> None:
    src = _datadog(tmp_path / "dataset")
    import_datadog(src, tmp_path / "corpus")
    task = tmp_path / "corpus/packages/pypi-evilpkg-1.0"
    label = json.loads((task / "label.json").read_text())
    label["archive"]["password"] = "wrong"
    (task / "label.json").write_text(json.dumps(label))
    _register()
    result = CliRunner().invoke(app, ["corpus", "validate", str(tmp_path / "corpus")])
    assert result.exit_code == 1 and "refused" in result.output
    evil = {t.task_id: t for t in NativeCorpus(tmp_path / "corpus").tasks(Track.PACKAGES)}[
        task.name
    ]
    with pytest.raises(CorpusError, match="refused"), materialised(evil.artifact_dir, evil.archive):
        pass


def test_malregistry_import_seals_the_picked_sdists(tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    for name, version in (("typo-squat", "1.0"), ("other", "0.1"), ("held", "2.0")):
        folder = f"{name}-{version}"
        _tar(registry / name / version / f"{folder}.tar.gz", {f"{folder}/setup.py": SETUP})
    picked, held = frozenset({"Typo_Squat", "held"}), frozenset({"HELD"})
    summary = import_malregistry(registry, tmp_path / "corpus", only=picked, exclude=held)
    assert summary.tasks == {Track.PACKAGES: 1}
    (task,) = NativeCorpus(tmp_path / "corpus").tasks(Track.PACKAGES)
    assert task.task_id == "pypi-typo-squat-1.0" and task.malicious
    assert task.source["path"] == "typo-squat/1.0/typo-squat-1.0.tar.gz"
    assert task.source["package_sha256"] != task.source["archive_sha256"]
    assert [p.name for p in task.artifact_dir.iterdir()] == ["typo-squat-1.0.tar.gz.zip"]
    with materialised(task.artifact_dir, task.archive) as tree:
        assert (tree / "setup.py").read_bytes() == SETUP


def test_add_benign_keeps_what_succeeded_and_names_what_was_refused(tmp_path: Path) -> None:
    """One package not found and one whose sdist the extractors refuse cost only
    themselves: the good one is written, and both failures are named."""
    links = tmp_path / "links"
    for name, link in (("goodpkg", None), ("linkpkg", "linkpkg-1.0/escape")):
        setup = f"import setuptools\nsetuptools.setup(name='{name}', version='1.0')\n"
        info = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
        _tar(
            links / f"{name}-1.0.tar.gz",
            {
                f"{name}-1.0/setup.py": setup.encode(),
                f"{name}-1.0/PKG-INFO": info.encode(),
            },
            link,
        )
    _register()
    specs = ("--pypi", "goodpkg==1.0", "--pypi", "absent==1.0", "--pypi", "linkpkg==1.0")
    result = CliRunner().invoke(
        app, [*ADD, str(tmp_path / "corpus"), *specs, "--find-links", str(links)]
    )
    assert result.exit_code == 1, result.output
    assert "'absent==1.0'" in result.output and "linkpkg" in result.output
    assert "2 refused; the rest were written" in result.output
    tasks = {t.task_id for t in NativeCorpus(tmp_path / "corpus").tasks(Track.PACKAGES)}
    assert tasks == {"pypi-goodpkg-1.0"}
