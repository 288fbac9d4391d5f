"""An artifact's variant, file by file: archives packed again, seeded blank or comment
lines where each language allows them, and a seeded benign file on the tracks where a
new file can change neither the label nor the expected findings."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from assay.corpus.variants import archives
from assay.corpus.variants.interface import TextRules, split_lines
from assay.corpus.variants.keyed import Keyed
from assay.corpus.variants.python import PythonRules
from assay.corpus.variants.syntax_tree import JAVASCRIPT, SHELL, TSX, TYPESCRIPT
from assay.corpus.variants.trailing import TrailingRules
from assay.mechanism.matching import FindingItem, VulnerabilityItem
from assay.mechanism.spec import Track

# The first that handles a file decides; the trailing-lines rules take any other text.
RULES: tuple[TextRules, ...] = (PythonRules(), JAVASCRIPT, TYPESCRIPT, TSX, SHELL, TrailingRules())
# What an inserted line says (None: a blank line). Plain words: a line an agent could
# read as a hint (a token, an instruction, an HTML comment) would change its answer.
_WORDS: tuple[str | None, ...] = (None, None, "", "---", "see below", "helpers", "end of section")
# A blank line may hold spaces or a tab: a file with one place for lines (the end) still
# has many variants.
_BLANKS = ("", "", " ", "  ", "\t")
_MAX_EVENTS = 4

# A new file is inert where the tree is code run or audited by name: a package's or an
# MCP server's install and start never read an unlisted text file, and a repository's
# planted lines are in other files. A skill is different: every file of it is context
# the model may read, so a new one is new context, and its label could change.
BENIGN_TRACKS = frozenset({Track.PACKAGES, Track.MCP_SERVERS, Track.REPOSITORIES})
_BENIGN_NAMES = ("NOTES.txt", "MAINTAINERS.txt", "RELEASE-NOTES.txt", "CHANGES.txt")
_BENIGN_LINES = (
    "Release notes are kept with the project's history.",
    "Questions go to the maintainers through the issue tracker.",
    "This file lists nothing that the build reads.",
    "Thanks to everyone who reported problems and sent fixes.",
)


@dataclass(frozen=True)
class VariedFile:
    """A file's variant bytes, and the lines inserted: (index of the original line they
    precede, 0-based, or the line count for the end; how many)."""

    data: bytes
    inserted: tuple[tuple[int, int], ...] = ()

    def line(self, original: int) -> int:
        """Where the original (1-based) line `original` is in the variant."""
        return original + sum(count for at, count in self.inserted if at < original)


def vary_file(relative: str, data: bytes, keyed: Keyed) -> VariedFile | None:
    """The variant of the artifact file at `relative` (POSIX path), or None when the file
    stays as it is (a kind without rules, not UTF-8, unparseable, or reading itself)."""
    own = keyed.child(f"file:{relative}")
    if archives.handles(relative):
        packed = archives.repack(relative, data, own)
        return VariedFile(packed) if packed is not None and packed != data else None
    if b"\0" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    rules = next((r for r in RULES if r.handles(relative, text)), None)
    if rules is None:
        return None
    lines = split_lines(text)
    points = rules.points(text, lines) if lines is not None else ()
    if lines is None or not points:
        return None
    counts = Counter(own.pick(f"point:{i}", points) for i in range(1 + own.below("n", _MAX_EVENTS)))
    variant = _with_lines(text, lines, counts, rules, own)
    if not rules.same(text, variant):
        return None
    return VariedFile(variant.encode("utf-8"), tuple(sorted(counts.items())))


def _with_lines(
    text: str, lines: list[str], counts: Mapping[int, int], rules: TextRules, own: Keyed
) -> str:
    newline = "\r\n" if "\r\n" in text else "\n"
    pieces: list[str] = []
    for index in range(len(lines) + 1):
        following = lines[index] if index < len(lines) else ""
        if counts.get(index) and index == len(lines) and text and not text.endswith("\n"):
            pieces.append(newline)  # the last line ends before anything follows it
        for n in range(counts.get(index, 0)):
            words = own.pick(f"words:{index}:{n}", _WORDS)
            line = (rules.comment(words) if words is not None else None) or ""
            indent = following[: len(following) - len(following.lstrip(" \t"))]
            blank = own.pick(f"blank:{index}:{n}", _BLANKS)
            pieces.append((indent + line if line else blank) + newline)
        pieces.append(following)
    return "".join(pieces)


def benign_file(
    track: Track, keyed: Keyed, taken: Callable[[str], bool]
) -> tuple[str, bytes] | None:
    """A seeded plain-text file for the top of the artifact (name, bytes), or None on a
    track where a new file could change the truth, or when every name is taken."""
    if track not in BENIGN_TRACKS:
        return None
    own = keyed.child("benign")
    name = next((n for n in own.order("names", _BENIGN_NAMES) if not taken(n)), None)
    if name is None:
        return None
    sentences = own.order("lines", _BENIGN_LINES)[: 1 + own.below("count", len(_BENIGN_LINES))]
    body = "\n".join([name.removesuffix(".txt").replace("-", " ").title(), "", *sentences])
    return name, f"{body}\n\nReference: {own.hex('reference', 12)}\n".encode()


Item = TypeVar("Item", FindingItem, VulnerabilityItem)


def remap_lines(items: tuple[Item, ...], varied: Mapping[str, VariedFile]) -> tuple[Item, ...]:
    """Labels' line numbers moved to where their lines are in the variant."""
    out = []
    for item in items:
        file = (item.file or "").removeprefix("./")
        moved = varied.get(file)
        if moved is not None and isinstance(item.line, int) and not isinstance(item.line, bool):
            item = dataclasses.replace(item, line=moved.line(item.line))
        out.append(item)
    return tuple(out)
