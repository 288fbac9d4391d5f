"""Hostile corpora and labels: every one is a refused import or a validation problem
naming its path, never a traceback, a half-written destination or an unbounded cost.
Each is held against a benign control of the same shape."""

from __future__ import annotations

import json
import os
import shutil
import struct
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import _register, app
from assay.corpus.interface import CorpusError, artifact_digest
from assay.corpus.native import NativeCorpus
from assay.corpus.phylax import PhylaxImportError, ZipLimits, import_phylax
from assay.corpus.validate import validate_corpus
from assay.mechanism.spec import Track
from assay.records.agent import Agent
from assay.records.plan import RoundPlan
from assay.schema.mechanism_file import pinned
from assay.validator.planning import PlanError, make_plan

MakeTask = Callable[..., Path]
HEADER = "ref,label,artifact_file\n"


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _corpus(root: Path, rows: list[str], csv_bytes: bytes | None = None) -> Path:
    """A skills-only Phylax corpus whose rows name archives under artifacts/."""
    skills = root / "skills"
    skills.mkdir(parents=True)
    (skills / "skills.csv").write_bytes(csv_bytes or (HEADER + "".join(rows)).encode())
    return root


def _refused(src: Path, dest: Path, limits: ZipLimits | None = None) -> str:
    with pytest.raises(PhylaxImportError) as excinfo:
        import_phylax(src, dest, limits or ZipLimits())
    assert not dest.exists()  # all-or-nothing
    assert not list(dest.parent.glob(".phylax-*"))  # staging and unpacked archives removed
    return str(excinfo.value)


def _balanced_rows(zip_name: str, count: int) -> list[str]:
    return [
        f"skills-{n:04d},{'malicious' if n % 2 else 'safe'},artifacts/{zip_name}\n"
        for n in range(count)
    ]


def _distinct_rows(count: int) -> list[str]:
    """Balanced rows, each naming its own archive `<n>.zip`."""
    return [r.replace("a.zip", f"{n}.zip") for n, r in enumerate(_balanced_rows("a.zip", count))]


def _two_tasks(root: Path) -> Path:
    """A benign corpus of two skills, one archive each."""
    src = _corpus(root, _distinct_rows(2))
    for n in range(2):
        _zip(src / "skills" / "artifacts" / f"{n}.zip", {"SKILL.md": b"# %d\n" % n})
    return src


def test_an_archive_named_by_forty_rows_is_refused_having_been_unpacked_once(
    tmp_path: Path,
) -> None:
    """Import amplification: one archive named by many rows would be drawn and scored as
    many tasks (here with contradictory labels). The rows after the first are refused
    before anything is unpacked for them; two rows naming two archives import."""
    payload = os.urandom(256 * 1024)  # incompressible: the cost is real bytes
    control = _two_tasks(tmp_path / "control")
    hostile = _corpus(tmp_path / "hostile", _balanced_rows("a.zip", 40))
    _zip(hostile / "skills" / "artifacts" / "a.zip", {"SKILL.md": b"# a\n", "blob": payload})

    assert import_phylax(control, tmp_path / "out-control").tasks == {Track.SKILLS: 2}
    message = _refused(hostile, tmp_path / "out-hostile", ZipLimits(max_import_bytes=300_000))
    # Refused as taken, never as past the import's cap: a.zip was unpacked once.
    assert "inflated bytes" not in message
    assert message.count("a.zip is the artifact of skills-0000; one artifact is one task") == 39
    assert "skills-0039: a.zip is the artifact of skills-0000" in message


def test_two_archives_that_unpack_to_one_tree_are_one_task(tmp_path: Path) -> None:
    src = _corpus(tmp_path / "src", _distinct_rows(2))
    # The same tree, stored and deflated: different archive bytes.
    (src / "skills" / "artifacts").mkdir()
    with zipfile.ZipFile(src / "skills" / "artifacts" / "0.zip", "w") as archive:
        archive.writestr("SKILL.md", b"# same\n")
    _zip(src / "skills" / "artifacts" / "1.zip", {"SKILL.md": b"# same\n"})
    message = _refused(src, tmp_path / "dest")
    assert "skills-0001: 1.zip unpacks to the artifact of skills-0000" in message


def test_many_archives_past_the_import_cap_are_refused(tmp_path: Path) -> None:
    src = _corpus(tmp_path / "src", _distinct_rows(6))
    for n in range(6):
        _zip(src / "skills" / "artifacts" / f"{n}.zip", {"SKILL.md": os.urandom(40_000)})
    message = _refused(src, tmp_path / "dest", ZipLimits(max_import_bytes=150_000))
    assert "the import's total cap of 150000 inflated bytes" in message
    assert "skills-0003" in message


def test_a_huge_central_directory_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """30,000 entries would be parsed whole by zipfile (an object each, 15 times the
    small archive's); the end record is checked first, so refusing it costs what refusing
    a small archive does."""

    def peak(entries: int) -> int:
        src = _corpus(tmp_path / f"src{entries}", _balanced_rows("a.zip", 2))
        path = src / "skills" / "artifacts" / "a.zip"
        path.parent.mkdir(parents=True)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
            for n in range(entries):
                archive.writestr(f"{n:07d}", b"")
        tracemalloc.start()
        message = _refused(src, tmp_path / f"dest{entries}", ZipLimits(max_files=2_000))
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert f"{entries} entries exceed the cap of 2000" in message
        return top

    assert peak(30_000) <= 2 * peak(2_001)


@pytest.mark.parametrize(
    ("name", "patch", "reason"),
    [
        ("encrypted", "encrypt", "corrupt or unsupported zip"),
        ("non-utf8-name", "utf8_flag", "corrupt or unsupported zip"),
        ("deep", "deep", "deeper than 32 levels"),
    ],
)
def test_broken_archives_are_refused_with_a_reason(
    tmp_path: Path, name: str, patch: str, reason: str
) -> None:
    src = _corpus(tmp_path / "src", _balanced_rows("a.zip", 2))
    path = src / "skills" / "artifacts" / "a.zip"
    if patch == "deep":
        _zip(path, {"/".join(["d"] * 40) + "/x.py": b"x"})
    else:
        _zip(path, {"SKILL.md": b"# a\n", "n\xe9.txt": b"x"})
        raw = bytearray(path.read_bytes())
        for signature, flag_offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
            at = raw.find(signature)
            while at >= 0:
                flags = struct.unpack_from("<H", raw, at + flag_offset)[0]
                bit = 0x1 if patch == "encrypt" else 0x800
                struct.pack_into("<H", raw, at + flag_offset, flags | bit)
                at = raw.find(signature, at + 4)
        if patch == "utf8_flag":  # flagged UTF-8, and not UTF-8
            raw = raw.replace("n\xe9.txt".encode(), b"n\xff\xfe.txt")
        path.write_bytes(bytes(raw))
    assert reason in _refused(src, tmp_path / "dest")


def test_csv_decoding_and_field_errors_name_their_line(tmp_path: Path) -> None:
    latin = (HEADER + "skills-0001,safe,a.zip\nskills-0002,malicious,caf\xe9.zip\n").encode(
        "latin-1"
    )
    message = _refused(_corpus(tmp_path / "latin", [], latin), tmp_path / "d1")
    assert "line 3 is not UTF-8" in message
    huge = HEADER + "skills-0001,safe,a.zip\n" + f'skills-0002,safe,"{"x" * 200_000}"\n'
    message = _refused(_corpus(tmp_path / "huge", [], huge.encode()), tmp_path / "d2")
    assert "line 3" in message and "field larger than field limit" in message


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('[{"category": "x", "title": "t", "plane": "action", "line": NaN}]', "NaN"),
        ('{"vulnerabilities": [], "vulnerabilities": [1]}', "duplicate key"),
        ("[" + "9" * 5000 + "]", "outside 64 bits"),
        ("[" * 5000 + "]" * 5000, "nesting depth"),
    ],
    ids=["nan", "duplicate", "bigint", "deep"],
)
def test_hostile_sidecars_are_refused_with_their_path(
    tmp_path: Path, text: str, reason: str
) -> None:
    src = _two_tasks(tmp_path / "src")
    (src / "skills" / "artifacts" / "skills-0001.expected_findings.json").write_text(text)
    message = _refused(src, tmp_path / "dest")
    assert "skills-0001.expected_findings.json" in message and reason in message


def test_a_sidecar_that_is_a_link_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "host-secret.json"
    outside.write_text('[{"category": "x", "title": "secret", "plane": "action"}]')
    src = _two_tasks(tmp_path / "src")
    (src / "skills" / "artifacts" / "skills-0001.expected_findings.json").symlink_to(outside)
    assert "sidecar is a symlink" in _refused(src, tmp_path / "dest")


@pytest.mark.parametrize(
    ("label_text", "reason"),
    [
        ('{"track": "skills", "label": "safe", "notes": NaN}', "NaN"),
        ('{"track": "skills", "label": "safe", "label": "malicious"}', "duplicate key"),
        ('{"track": "skills", "label": "safe", "x": ' + "1" * 5000 + "}", "outside 64 bits"),
        ('{"track": "skills", "label": "safe", "x": ' + "[" * 3000 + "]" * 3000 + "}", "depth"),
    ],
    ids=["nan", "duplicate", "bigint", "deep"],
)
def test_hostile_labels_are_problems_with_their_path(
    make_task: MakeTask, tmp_path: Path, label_text: str, reason: str
) -> None:
    make_task("skills", "good", "malicious")
    bad = make_task("skills", "bad", "safe")
    (bad / "label.json").write_text(label_text)
    report = validate_corpus(tmp_path / "corpus")
    messages = [str(p) for p in report.problems]
    assert any("bad/label.json" in m and reason in m for m in messages), messages


def _remove_chain(deepest: Path, top: Path) -> None:
    """Remove a deep directory chain bottom-up (pytest's cleanup would recurse)."""
    while deepest != top / "artifact":
        deepest.rmdir()
        deepest = deepest.parent


def test_deep_trees_and_link_loops_are_problems_not_crashes(
    make_task: MakeTask, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    make_task("skills", "good", "malicious")
    deep = make_task("skills", "deep", "safe")
    nested = str(deep / "artifact")
    for _ in range(1200):  # os.makedirs would recurse this deep
        nested += "/d"
        os.mkdir(nested)
    request.addfinalizer(lambda: _remove_chain(Path(nested), deep))
    loop = make_task("skills", "loop", "safe")
    (loop / "artifact" / "a").symlink_to(loop / "artifact" / "b")
    (loop / "artifact" / "b").symlink_to(loop / "artifact" / "a")
    messages = [str(p) for p in validate_corpus(tmp_path / "corpus").problems]
    assert any("deep/artifact" in m and "deeper than 64 levels" in m for m in messages)
    assert not any("loop/" in m and "symlink leaves" in m for m in messages)  # stays inside
    with pytest.raises(CorpusError, match="deeper than 64 levels"):
        artifact_digest(deep / "artifact")
    assert len(artifact_digest(loop / "artifact")) == 64


def test_label_json_error_messages_are_one_line(make_task: MakeTask, tmp_path: Path) -> None:
    bad = make_task("skills", "bad", "safe")
    (bad / "label.json").write_bytes(b'{"track": "skills", \xff}')
    report = validate_corpus(tmp_path / "corpus")
    assert all("\n" not in str(p) for p in report.problems)
    assert any("not UTF-8" in str(p) for p in report.problems)
    assert json.dumps([str(p) for p in report.problems])


def test_terminal_output_shows_control_characters_as_escapes(
    make_task: MakeTask, tmp_path: Path
) -> None:
    """A task named to clear the screen and print a fake green verdict cannot."""
    _register()
    make_task("skills", "good", "malicious")
    make_task("skills", "evil\x1b[2J\x1b[32mcorpus is valid\x9b0m", "safe", track_override=1)
    result = CliRunner().invoke(app, ["corpus", "validate", str(tmp_path / "corpus")])
    assert result.exit_code == 1
    assert "\x1b[2J" not in result.output and "\x9b" not in result.output
    assert "evil\\x1b[2J\\x1b[32mcorpus is valid\\x9b0m" in result.output


def test_a_native_corpus_with_one_artifact_in_two_tasks_is_not_planned(
    make_task: MakeTask, tmp_path: Path
) -> None:
    """The same amplification in a native corpus (a copy, or the hard links an earlier
    import made): the round refuses to plan it; distinct artifacts plan."""
    same = {"SKILL.md": "# one skill\n"}
    make_task("skills", "skills-a", "malicious", same)
    make_task("skills", "skills-b", "safe", same)
    make_task("skills", "skills-c", "safe", {"SKILL.md": "# another\n"})
    agent = Agent(b"def agent_main(context):\n    return {}\n")

    def plan(corpus: Path, snapshots: str) -> RoundPlan:
        return make_plan(
            corpus=NativeCorpus(corpus),
            agents=[agent],
            tracks=[Track.SKILLS],
            round_seed="dup",
            validator_id="test",
            spec=pinned(),
            snapshots=tmp_path / snapshots,
            draw_all=True,
        )

    with pytest.raises(PlanError, match="tasks skills-a and skills-b have the same artifact"):
        plan(tmp_path / "corpus", "s1")
    shutil.rmtree(tmp_path / "corpus" / "skills" / "skills-b")
    assert len(plan(tmp_path / "corpus", "s2").tasks) == 2
