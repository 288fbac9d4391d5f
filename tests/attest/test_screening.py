from __future__ import annotations

from pathlib import Path

import pytest

from assay.attest.screening import Entry, normalised_tokens, screen, similarity
from assay.schema.mechanism_file import pinned

AGENTS = Path(__file__).resolve().parents[2] / "agents"
THRESHOLD = pinned().copy_similarity


def code(name: str) -> bytes:
    return (AGENTS / name).read_bytes()


def test_a_renamed_reformatted_copy_is_identical_after_normalisation(
    renamed_keyword: bytes,
) -> None:
    assert renamed_keyword != code("keyword.py")
    assert normalised_tokens(renamed_keyword) == normalised_tokens(code("keyword.py"))
    assert similarity(renamed_keyword, code("keyword.py")) == 1.0


def test_genuinely_different_agents_stay_far_below_the_threshold() -> None:
    assert similarity(code("keyword.py"), code("coin_flip.py")) < 0.2
    # allow_all, block_all and coin_flip share one template yet are different agents.
    bundled = sorted(AGENTS.glob("*.py"))
    for i, a in enumerate(bundled):
        for b in bundled[i + 1 :]:
            assert similarity(a.read_bytes(), b.read_bytes()) < THRESHOLD - 0.3, (a.name, b.name)


def test_a_copy_with_small_real_edits_is_still_flagged(renamed_keyword: bytes) -> None:
    tweaked = renamed_keyword.replace(b"MAX_ITEMS = 64", b"MAX_ITEMS = 60")
    tweaked += b"\n\ndef unused_helper(x):\n    return x * 2\n"
    assert THRESHOLD <= similarity(tweaked, code("keyword.py")) < 1.0


def test_screen_flags_the_later_copy_and_names_the_original(renamed_keyword: bytes) -> None:
    entries = [
        Entry("coin_flip", code("coin_flip.py")),
        Entry("keyword", code("keyword.py")),
        Entry("copycat", renamed_keyword),
    ]
    (flag,) = screen(entries, THRESHOLD)
    assert (flag.copy, flag.original, flag.similarity) == ("copycat", "keyword", 1.0)
    assert "1.000 similar to keyword, which was submitted first" in flag.describe()
    # Whoever comes first is the original, whatever the names say.
    (flag,) = screen(list(reversed(entries)), THRESHOLD)
    assert (flag.copy, flag.original) == ("keyword", "copycat")


@pytest.mark.parametrize("text", [b"not python at all {{", b"\xff\xfe binary"])
def test_non_python_source_is_compared_as_words(text: bytes) -> None:
    assert similarity(text, text) == 1.0
    assert similarity(text, code("keyword.py")) < 0.1
