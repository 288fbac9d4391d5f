from __future__ import annotations

import base64
import zlib
from pathlib import Path

import pytest

from assay.attest.screening import (
    Entry,
    Unscreenable,
    fingerprint,
    normalised_tokens,
    screen,
    similarity,
)
from assay.schema.mechanism_file import pinned

AGENTS = Path(__file__).resolve().parents[2] / "agents"
THRESHOLD = pinned().copy_similarity


def code(name: str) -> bytes:
    return (AGENTS / name).read_bytes()


def entry(name: str, source: bytes, owner: str | None = None) -> Entry:
    return Entry(name, owner or name, fingerprint(source))


def padded(source: bytes, lines: int = 400) -> bytes:
    dead = (f"def pad_{i}(x):\n    y = x + {i}\n    return y * {i % 7}\n" for i in range(lines))
    return source + b"\n" + "\n".join(dead).encode()


def test_a_renamed_reformatted_copy_is_identical_after_normalisation(
    renamed_keyword: bytes,
) -> None:
    assert renamed_keyword != code("keyword.py")
    assert normalised_tokens(renamed_keyword) == normalised_tokens(code("keyword.py"))
    assert fingerprint(renamed_keyword).digest == fingerprint(code("keyword.py")).digest


def test_genuinely_different_agents_stay_below_the_threshold() -> None:
    assert similarity(code("keyword.py"), code("coin_flip.py")) < 0.2
    # allow_all, block_all and coin_flip share one template yet are different agents.
    bundled = sorted(AGENTS.glob("*.py"))
    for a in bundled:
        for b in bundled:
            if a != b:
                assert similarity(a.read_bytes(), b.read_bytes()) < THRESHOLD - 0.1, (a, b)


def test_a_copy_with_small_real_edits_is_still_flagged(renamed_keyword: bytes) -> None:
    tweaked = renamed_keyword.replace(b"MAX_ITEMS = 64", b"MAX_ITEMS = 60")
    tweaked += b"\n\ndef unused_helper(x):\n    return x * 2\n"
    assert THRESHOLD <= similarity(code("keyword.py"), tweaked) < 1.0


def test_padding_cannot_dilute_containment(renamed_keyword: bytes) -> None:
    assert similarity(code("keyword.py"), padded(renamed_keyword)) == 1.0
    (flag,) = screen([entry("keyword", code("keyword.py")), entry("pad", padded(renamed_keyword))],
                     THRESHOLD)  # fmt: skip
    assert (flag.copy, flag.original, flag.containment) == ("pad", "keyword", 1.0)


def test_screen_flags_the_later_copy_and_names_the_original(renamed_keyword: bytes) -> None:
    entries = [
        entry("coin_flip", code("coin_flip.py")),
        entry("keyword", code("keyword.py")),
        entry("copycat", renamed_keyword),
    ]
    (flag,) = screen(entries, THRESHOLD)
    assert (flag.copy, flag.original, flag.containment) == ("copycat", "keyword", 1.0)
    assert "contains 1.000 of keyword, which arrived first" in flag.describe()
    # Whoever comes first is the original, whatever the names say.
    (flag,) = screen(list(reversed(entries)), THRESHOLD)
    assert (flag.copy, flag.original) == ("keyword", "copycat")


def test_an_owner_is_never_its_own_copy(renamed_keyword: bytes) -> None:
    entries = [
        entry("v1", code("keyword.py"), "alice"),
        entry("v2", padded(renamed_keyword), "alice"),
    ]
    assert screen(entries, THRESHOLD) == []


def _packed(source: bytes) -> bytes:
    blob = base64.b64encode(zlib.compress(source)).decode()
    return f"import base64, zlib\nexec(zlib.decompress(base64.b64decode({blob!r})))\n".encode()


@pytest.mark.parametrize(
    "source",
    [
        _packed(code("keyword.py")),
        b"exec(bytes.fromhex('7072696e742831290a').decode())\n",
        b"s = ''.join(map(chr, [112, 97, 115, 115]))\nexec(s)\n",
        b"import marshal\ncode = marshal.loads(b'...')\n",
        b"import builtins\nbuiltins.exec(open('x').read())\n",
        b"import importlib.util\nspec = importlib.util.spec_from_file_location('m', '/tmp/m.py')\n",
    ],
)
def test_code_built_from_data_is_refused_with_a_reason(source: bytes) -> None:
    with pytest.raises(Unscreenable, match="builds code from data at import time"):
        fingerprint(source)


def test_a_bundled_package_is_screened_through_its_modules() -> None:
    from assay.validator.config import bundled_agents

    (reference,) = [p for p in bundled_agents() if p.stem == "reference"]
    source = reference.read_bytes()
    assert len(fingerprint(source).shingles) > 10 * len(fingerprint(code("keyword.py")).shingles)


@pytest.mark.parametrize(
    "source",
    [
        b"X = " + b" + ".join(b'"a"' for _ in range(100_000)) + b"\n",
        b"X = " + b"-" * 100_000 + b"1\n",
    ],
)
def test_source_that_defeats_the_normaliser_is_its_own_refusal(source: bytes) -> None:
    with pytest.raises(Unscreenable, match="copy screening could not read it"):
        fingerprint(source)


def test_a_600_term_concatenation_is_screened() -> None:
    source = b"X = " + b" + ".join(b'"a%d"' % i for i in range(600)) + b"\n" + code("keyword.py")
    assert similarity(code("keyword.py"), source) == 1.0


@pytest.mark.parametrize("text", [b"not python at all {{", b"\xff\xfe binary"])
def test_non_python_source_is_compared_as_words(text: bytes) -> None:
    assert similarity(text, text) == 1.0
    assert similarity(text, code("keyword.py")) < 0.1
