"""Where a round's variants are made: on each drawn task's snapshot copy, after it is
copied and before it is sealed and digested (`assay.validator.snapshot`). The bytes are
the pure transform's (`assay.corpus.variants`); reading and writing them is here."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from assay.corpus.interface import ARTIFACT_TREE, artifact_digest
from assay.corpus.variants.keyed import Keyed, variant_key
from assay.corpus.variants.transform import VariedFile, benign_file, vary_file
from assay.mechanism.spec import Track
from assay.schema.boundedfs import walk

# Files past this are left as they are: a variant is read whole into memory.
MAX_VARIED_FILE_BYTES = 16 << 20
# A file another one signs or sums (`x.tar.gz` beside `x.tar.gz.asc`) keeps its bytes:
# new ones would fail the check a user's tools make.
_SIGNED_BY = (".asc", ".sig", ".sign", ".minisig", ".sha256", ".sha512", ".md5")


def round_variant_key(round_seed: str, secret: bytes) -> Keyed:
    """The one place a round's variant key takes its seed from: the seed the plan
    records as `RoundPlan.round_seed`, however the round came to it."""
    return variant_key(round_seed, secret)


def task_variant_key(round_key: Keyed, track: Track, task_id: str) -> Keyed:
    return round_key.child(f"task:{track.value}/{task_id}")


@dataclass
class Variation:
    """One task's variant, made in place on its unsealed snapshot copy; what was changed
    is kept for the plan (the original digest, the moved lines)."""

    track: Track
    keyed: Keyed
    original_digest: str = ""
    varied: dict[str, VariedFile] = field(default_factory=dict)
    added: str | None = None

    def __call__(self, tree: Path) -> None:
        self.original_digest = artifact_digest(tree)
        for entry in list(walk(tree, ARTIFACT_TREE)):
            if not entry.is_file or entry.is_symlink or entry.size > MAX_VARIED_FILE_BYTES:
                continue
            if any(os.path.lexists(f"{entry.path}{suffix}") for suffix in _SIGNED_BY):
                continue
            relative = entry.relative.as_posix()
            variant = vary_file(relative, entry.path.read_bytes(), self.keyed)
            if variant is not None:
                _rewrite(entry.path, variant.data)
                self.varied[relative] = variant
        benign = benign_file(self.track, self.keyed, lambda name: os.path.lexists(tree / name))
        if benign is not None:
            name, data = benign
            with (tree / name).open("xb") as out:
                out.write(data)
            self.added = name


def _rewrite(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
