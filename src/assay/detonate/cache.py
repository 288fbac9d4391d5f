"""Detonations kept on disk between rounds: an artifact is detonated once a day.

A validator serving rounds on one corpus would otherwise detonate every behavioural
artifact again each round (minutes of sandbox time that change nothing). An entry is
keyed by what decides a detonation:

- the artifact's digest and track;
- the UTC day, since the shifted-clock profiles are placed relative to today (a time
  bomb armed for next week fires in a profile five weeks ahead only from some day on);
- the detonation code (this package and the sandbox's sources, and assay's version),
  so an upgraded validator never reads what older code saw.

Only complete detonations are kept: one a limit or a fault cut short is run again next
time. Each round still stores what it used, so a resumed round reads its own record,
never the cache. `ASSAY_DETONATION_CACHE` names the directory (default
`$XDG_CACHE_HOME/assay/detonations`); `off` turns the cache off.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import msgspec
from filelock import FileLock

import assay
from assay.mechanism.spec import Track
from assay.records import codec
from assay.records.observed import Observed

ENVIRONMENT = "ASSAY_DETONATION_CACHE"
# Entries of earlier days are never read again; they are removed after this long.
KEEP_SECONDS = 2 * 24 * 3600


class DetonationCache:
    """A directory of complete detonations; safe to share between validators on a host
    (one detonates a key while the others wait for its entry)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def configured(cls) -> DetonationCache | None:
        """The cache `ASSAY_DETONATION_CACHE` names, or None when it says `off`."""
        setting = os.environ.get(ENVIRONMENT, "")
        if setting == "off":
            return None
        if setting:
            return cls(Path(setting))
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return cls(Path(base) / "assay" / "detonations")

    def observe(
        self, track: Track, artifact_digest: str, detonate: Callable[[], Observed]
    ) -> Observed:
        """The day's detonation of the artifact: read, or run with `detonate` and kept
        if it is complete."""
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        key = entry_key(track, artifact_digest, datetime.datetime.now(datetime.UTC).date())
        entry = self.root / f"{key}.json"
        with FileLock(str(self.root / f"{key}.lock")):
            kept = _read(entry)
            if kept is not None:
                return kept
            observed = detonate()
            if observed.complete:
                _write(entry, observed)
                self._prune()  # once per entry written: reads stay one file each
        return observed

    def _prune(self) -> None:
        stale = time.time() - KEEP_SECONDS
        for path in self.root.iterdir():
            try:
                if path.stat().st_mtime < stale:
                    path.unlink()
            except OSError:
                continue  # taken by another validator's prune


def entry_key(track: Track, artifact_digest: str, day: datetime.date) -> str:
    parts = (detonation_code(), track.value, artifact_digest, day.isoformat())
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


@lru_cache(maxsize=1)
def detonation_code() -> str:
    """A digest of the code a detonation's result depends on."""
    package = Path(assay.__file__).parent
    digest = hashlib.sha256(assay.__version__.encode())
    for folder in ("detonate", "sandbox"):
        for source in sorted((package / folder).rglob("*.py")):
            digest.update(source.relative_to(package).as_posix().encode() + b"\0")
            digest.update(source.read_bytes())
    return digest.hexdigest()


def _read(entry: Path) -> Observed | None:
    try:
        return codec.decode(entry.read_bytes(), Observed)
    except FileNotFoundError:
        return None
    except (OSError, msgspec.DecodeError, msgspec.ValidationError, ValueError):
        return None  # a damaged entry is a miss; the detonation replaces it


def _write(entry: Path, observed: Observed) -> None:
    # Written whole under another name, then renamed: a reader never sees half an entry.
    with tempfile.NamedTemporaryFile(dir=entry.parent, suffix=".part", delete=False) as out:
        out.write(codec.encode(observed))
    os.replace(out.name, entry)
