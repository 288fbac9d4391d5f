from __future__ import annotations

import json
import stat
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import _register, app
from assay.corpus.native import NativeCorpus
from assay.corpus.phylax import PhylaxImportError, ZipLimits, import_phylax
from assay.mechanism.spec import Track


def _zip(path: Path, members: dict[str, bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def _phylax(root: Path, bad_member: dict[str, bytes] | None = None) -> Path:
    """A two-track Phylax corpus; `bad_member` is added to the skills-0002 zip."""
    skills = root / "skills"
    skills.mkdir(parents=True)
    (skills / "skills.csv").write_text(
        "ref,label,artifact_file,notes\n"
        "skills-0001,malicious,artifacts/skills-0001.zip,x\n"
        "skills-0002,safe,artifacts/skills-0002.zip,y\n"
    )
    _zip(skills / "artifacts" / "skills-0001.zip", {"SKILL.md": b"# s\n", "run.sh": b"id\n"})
    _zip(skills / "artifacts" / "skills-0002.zip", {"SKILL.md": b"# t\n", **(bad_member or {})})
    findings = [
        {"category": "exfiltration", "file": "run.sh", "title": "Runs id", "plane": "action"}
    ]
    (skills / "artifacts" / "skills-0001.expected_findings.json").write_text(json.dumps(findings))
    repos = root / "repositories"
    repos.mkdir()
    (repos / "repositories.csv").write_text(
        "ref,label,artifact_file\n"
        "repositories-py-0001,malicious,repositories-py-0001.zip\n"
        "repositories-py-0002,safe,repositories-py-0002.zip\n"
    )
    _zip(repos / "artifacts" / "repositories-py-0001.zip", {"app.py": b"a\nos.system(x)\n"})
    _zip(repos / "artifacts" / "repositories-py-0002.zip", {"app.py": b"a\n"})
    truth = {
        "vulnerabilities": [
            {"file": "app.py", "line": 2, "cwe": "CWE-78", "title": "cmd", "description": "d"}
        ]
    }
    (repos / "artifacts" / "repositories-py-0001.ground_truth.json").write_text(json.dumps(truth))
    return root


def test_import_converts_to_native(tmp_path: Path) -> None:
    summary = import_phylax(_phylax(tmp_path / "src"), tmp_path / "dest")
    assert summary.tasks == {Track.SKILLS: 2, Track.REPOSITORIES: 2}
    corpus = NativeCorpus(tmp_path / "dest")
    skills = corpus.tasks(Track.SKILLS)
    assert [t.task_id for t in skills] == ["skills-0001", "skills-0002"]
    assert skills[0].expected_findings[0].file == "run.sh"
    assert (skills[0].artifact_dir / "run.sh").read_bytes() == b"id\n"
    repo = corpus.tasks(Track.REPOSITORIES)[0]
    assert repo.vulnerabilities[0].line == 2 and repo.vulnerabilities[0].cwe == "CWE-78"


def test_empty_ground_truth_means_nothing_planted(tmp_path: Path) -> None:
    """Phylax publishes `{}` beside a clean repository; it imports as nothing planted."""
    src = _phylax(tmp_path / "src")
    (src / "repositories" / "artifacts" / "repositories-py-0002.ground_truth.json").write_text("{}")
    import_phylax(src, tmp_path / "dest")
    clean = NativeCorpus(tmp_path / "dest").tasks(Track.REPOSITORIES)[1]
    assert clean.task_id == "repositories-py-0002"
    assert clean.label == "safe" and clean.vulnerabilities == ()


def test_ground_truth_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    src = _phylax(tmp_path / "src")
    (src / "repositories" / "artifacts" / "repositories-py-0002.ground_truth.json").write_text("[]")
    with pytest.raises(PhylaxImportError) as caught:
        import_phylax(src, tmp_path / "dest")
    assert "repositories-py-0002" in str(caught.value)
    assert not (tmp_path / "dest").exists()


def _symlink_member(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    info = zipfile.ZipInfo("link")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr(info, "/etc/passwd")


@pytest.mark.parametrize(
    ("member", "message"),
    [
        ({"../../escape.sh": b"x"}, "escapes its root"),
        ({"/etc/cron.d/evil": b"x"}, "absolute path"),
        ({"dir\\..\\..\\x": b"x"}, "backslash"),
        ({"bomb.bin": b"\0" * (4 << 20)}, "zip bomb refused"),
    ],
)
def test_hostile_archives_are_refused(
    tmp_path: Path, member: dict[str, bytes], message: str
) -> None:
    src = _phylax(tmp_path / "src", member)
    limits = ZipLimits(max_total_bytes=1 << 20)
    with pytest.raises(PhylaxImportError) as excinfo:
        import_phylax(src, tmp_path / "dest", limits)
    assert "skills-0002" in str(excinfo.value) and message in str(excinfo.value)
    assert not (tmp_path / "dest").exists()  # all-or-nothing
    assert not list(tmp_path.glob(".phylax-import-*"))


def test_symlink_member_refused(tmp_path: Path) -> None:
    src = _phylax(tmp_path / "src")
    _symlink_member(src / "skills" / "artifacts" / "skills-0002.zip")
    with pytest.raises(PhylaxImportError, match="symlinks are not allowed"):
        import_phylax(src, tmp_path / "dest")


def test_too_many_files_refused(tmp_path: Path) -> None:
    members = {f"f{i}.txt": b"x" for i in range(20)}
    src = _phylax(tmp_path / "src", members)
    with pytest.raises(PhylaxImportError, match="21 entries exceed the cap of 10"):
        import_phylax(src, tmp_path / "dest", ZipLimits(max_files=10))


def test_bomb_with_lying_declared_size_refused(tmp_path: Path) -> None:
    """The headers claim 10 bytes; the deflate stream really holds 2 MiB of zeros."""
    src = _phylax(tmp_path / "src", {"liar.bin": b"\0" * (2 << 20)})
    path = src / "skills" / "artifacts" / "skills-0002.zip"
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("liar.bin")
    local, central = info.header_offset, raw.rfind(b"PK\x01\x02")
    raw[local + 22 : local + 26] = (10).to_bytes(4, "little")
    raw[central + 24 : central + 28] = (10).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    with pytest.raises(PhylaxImportError) as excinfo:
        import_phylax(src, tmp_path / "dest")
    assert "liar.bin" in str(excinfo.value) or "corrupt" in str(excinfo.value)
    assert not (tmp_path / "dest").exists()


def test_declared_bomb_refused_by_ratio(tmp_path: Path) -> None:
    src = _phylax(tmp_path / "src", {"zeros.bin": b"\0" * (8 << 20)})
    with pytest.raises(PhylaxImportError, match="inflates"):
        import_phylax(src, tmp_path / "dest")


def test_non_empty_destination_refused(tmp_path: Path) -> None:
    (tmp_path / "dest").mkdir()
    (tmp_path / "dest" / "keep").write_text("")
    with pytest.raises(PhylaxImportError, match="not empty"):
        import_phylax(_phylax(tmp_path / "src"), tmp_path / "dest")


def test_cli_import(tmp_path: Path) -> None:
    _register()
    src = _phylax(tmp_path / "src")
    result = CliRunner().invoke(app, ["corpus", "import-phylax", str(src), str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    # Rich wraps the line at the terminal's width, which the temporary path's length decides.
    said = " ".join(result.output.split())
    assert "skills: 2" in said and "corpus is valid" in said
    bad = _phylax(tmp_path / "src2", {"../x": b""})
    refused = CliRunner().invoke(app, ["corpus", "import-phylax", str(bad), str(tmp_path / "e")])
    assert refused.exit_code == 1 and "nothing was written" in refused.output
