"""Archives inside an artifact (a vendored wheel, a bundled tarball) packed again: the
same members with the same bytes and modes, in a seeded order with seeded times, so the
archive's digest is new while what it unpacks to is not."""

from __future__ import annotations

import datetime
import gzip
import io
import tarfile
import zipfile
import zlib

from assay.corpus.variants.keyed import Keyed

ZIP_SUFFIXES = (".zip", ".whl", ".jar", ".egg")
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz")
MAX_UNPACKED_BYTES = 64 << 20  # past this an archive is left as it is
_EPOCH = datetime.datetime(2021, 1, 1, tzinfo=datetime.UTC)
_SPAN_S = 4 * 365 * 86400


def handles(name: str) -> bool:
    return name.lower().endswith(ZIP_SUFFIXES + TAR_SUFFIXES)


def repack(name: str, data: bytes, keyed: Keyed) -> bytes | None:
    """The archive packed again, or None when it is left as it is (encrypted, links or
    special members, another compression, too large, unreadable)."""
    try:
        if name.lower().endswith(ZIP_SUFFIXES):
            return _repack_zip(data, keyed)
        return _repack_tar(data, keyed)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, tarfile.TarError, zlib.error, EOFError):
        return None  # corrupt: the archive stays as it was, for the agents to judge
    except (OSError, ValueError, NotImplementedError, RuntimeError):
        return None  # a member this Python cannot read back (a method, a header)


def _moment(keyed: Keyed, member: str) -> datetime.datetime:
    # Even seconds: a zip's DOS time cannot hold odd ones.
    offset = keyed.below(f"time:{member}", _SPAN_S // 2) * 2
    return _EPOCH + datetime.timedelta(seconds=offset)


def _repack_zip(data: bytes, keyed: Keyed) -> bytes | None:
    with zipfile.ZipFile(io.BytesIO(data)) as source:
        infos = source.infolist()
        names = [info.filename for info in infos]
        if len(set(names)) != len(names) or sum(i.file_size for i in infos) > MAX_UNPACKED_BYTES:
            return None
        if any(i.flag_bits & 1 or i.compress_type not in _ZIP_METHODS for i in infos):
            return None
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as target:
            target.comment = source.comment
            for info in keyed.order("zip", infos, lambda info: info.filename):
                copy = zipfile.ZipInfo(info.filename, _moment(keyed, info.filename).timetuple()[:6])
                copy.compress_type = info.compress_type
                copy.external_attr = info.external_attr
                copy.create_system = info.create_system
                target.writestr(copy, source.read(info))
    return out.getvalue()


_ZIP_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})


def _repack_tar(data: bytes, keyed: Keyed) -> bytes | None:
    gzipped = data[:2] == b"\x1f\x8b"
    cap = MAX_UNPACKED_BYTES + (1 << 20)
    # Read at most the cap (a gzip bomb is refused before it is unpacked whole).
    raw = gzip.GzipFile(fileobj=io.BytesIO(data)).read(cap + 1) if gzipped else data
    if len(raw) > cap:
        return None
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as source:
        members = source.getmembers()
        if not all(m.isreg() or m.isdir() for m in members):
            return None  # a link's target must come before it: the order is not free
        with tarfile.open(fileobj=out, mode="w:", format=source.format) as target:
            for member in keyed.order("tar", members, lambda member: member.name):
                copy = member.replace(mtime=int(_moment(keyed, member.name).timestamp()))
                target.addfile(copy, source.extractfile(member) if member.isreg() else None)
    packed = out.getvalue()
    if not gzipped:
        return packed
    moment = _moment(keyed, "\0gzip").timestamp()
    return gzip.compress(packed, mtime=int(moment))
