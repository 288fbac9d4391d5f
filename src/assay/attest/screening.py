"""Copy screening: refuse a submitted agent that contains an earlier one, or that the
validator cannot read.

Source is normalised before it is compared, so the cheap disguises cost a copier
nothing: comments and docstrings are dropped, formatting is what the tokenizer keeps
(no whitespace, no line breaks inside brackets), string literals are written one way,
and every name the file itself defines (variables, functions, classes, arguments,
import aliases, and attributes spelled like them) becomes one placeholder. Numbering
the names instead (`_v0`, `_v1`...) would let a copier shift every number by adding
one unused variable; a single placeholder keeps the shingles aligned. Names it does not
define (builtins, modules, library attributes) and string constants are kept: they
carry what the agent actually does. A string constant that is itself Python source
(an agent package bundled into one file carries its modules so) is screened as code.

The normalised token stream is cut into overlapping shingles. A new agent is a copy
of an earlier one when it *contains* at least the threshold of the earlier one's
shingles: padding a copy with dead code adds shingles to the copy, never takes any
from the original, so it cannot dilute the measure (whole-file Jaccard can). Which
earlier agents a new one may contain is found with datasketch's MinHash LSH Ensemble
(an index built for containment queries, near-linear in the number of submissions),
and every candidate is confirmed on the exact shingle sets.

Code built from data at import time (`exec` of decoded or decompressed bytes,
`marshal`, a module imported from a file the agent writes) is refused outright: the
validator cannot screen what it cannot read. The normalisation walks tokens and
`ast.walk` (no recursion), and any failure of it (a parser limit, memory) is that
submission's refusal, never the validator's.
"""

from __future__ import annotations

import ast
import hashlib
import io
import re
import tokenize
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datasketch import MinHash

SHINGLE = 5  # tokens per shingle: long enough that shared idioms alone stay rare
PLACEHOLDER = "_n"
# A string constant this long that parses as Python is screened as code (a bundled
# module); nested at most this deep.
_EMBEDDED_MIN_CHARS = 200
_EMBEDDED_DEPTH = 2
# MinHash permutations: 128 keeps the containment estimate within a few hundredths.
_PERMUTATIONS = 128
# The LSH index is asked for candidates below the threshold, so an estimate that errs
# low still reaches the exact check.
_CANDIDATE_SLACK = 0.75

# Builtins that turn data into running code.
_CODE_BUILDERS = frozenset({"exec", "eval", "compile", "__import__"})
# Modules whose only use in an agent is running code the file does not show.
_OPAQUE_MODULES = frozenset({"marshal", "pickle", "_pickle", "dill", "zipimport", "ctypes"})
# Modules that decode or decompress: beside a code builder, they carry hidden code.
_DECODERS = frozenset({"base64", "binascii", "zlib", "gzip", "bz2", "lzma", "codecs"})
# importlib calls that load a module from a file or a spec of the agent's own making.
_FILE_LOADERS = frozenset(
    {"spec_from_file_location", "SourceFileLoader", "SourcelessFileLoader", "module_from_spec"}
)


_LAYOUT = frozenset({tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE})


class Unscreenable(ValueError):
    """A submission copy screening cannot read; the message is the reason the miner reads."""


@dataclass(frozen=True)
class Fingerprint:
    """What screening knows of one agent: the digest of its normalised token stream
    (renamed and reformatted copies share it) and its hashed shingles."""

    digest: str
    shingles: frozenset[bytes]


@dataclass(frozen=True)
class Entry:
    """One submission, in the order the validator received them."""

    name: str
    owner: str  # a miner's own agents (another track, a new version) are never its copies
    fingerprint: Fingerprint


@dataclass(frozen=True)
class CopyFlag:
    copy: str
    original: str  # the earlier submission it contains most of
    containment: float

    def describe(self) -> str:
        return (
            f"copy screening: contains {self.containment:.3f} of {self.original}, "
            f"which arrived first"
        )


Nodes = list[ast.AST]  # every node of a tree, walked once


def _docstring_positions(nodes: Nodes) -> set[tuple[int, int]]:
    out = set()
    for node in nodes:
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                out.add((value.lineno, value.col_offset))
    return out


def _defined_names(nodes: Nodes) -> set[str]:
    """Names the file binds."""
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias) and node.asname:
            names.add(node.asname)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def _dotted(node: ast.expr) -> str:
    """`a.b.c` for a called name (what is left of it when the base is not a name)."""
    attributes: list[str] = []
    while isinstance(node, ast.Attribute):
        attributes.insert(0, node.attr)
        node = node.value
    base = [node.id] if isinstance(node, ast.Name) else []
    return ".".join(base + attributes)


def _imported_modules(nodes: Nodes) -> set[str]:
    out = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module.split(".")[0])
    return out


def _computed_names(nodes: Nodes) -> set[str]:
    """Names bound to the result of a call somewhere in the file: what a code builder
    fed one of them runs is not written in the file."""
    out = set()
    for node in nodes:
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
            value = node.value
            if value is not None and any(isinstance(n, ast.Call) for n in ast.walk(value)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                out |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return out


def _builds_code_from_data(nodes: Nodes) -> str | None:
    """Why the agent runs code its file does not show, or None."""
    imported = _imported_modules(nodes)
    if opaque := sorted(imported & _OPAQUE_MODULES):
        return f"it imports {opaque[0]}"
    computed: set[str] | None = None  # only a file that calls a code builder needs them
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        short = name.rsplit(".", 1)[-1]
        if short in _FILE_LOADERS:
            return f"it loads a module through {name}()"
        if name not in _CODE_BUILDERS and not (
            short in _CODE_BUILDERS and name.split(".")[0] in {"builtins", "__builtins__"}
        ):
            continue
        if decoders := sorted(imported & _DECODERS):
            return f"it calls {short}() in a file that imports {decoders[0]}"
        for arg in node.args[:1]:
            inner = [n for n in ast.walk(arg) if isinstance(n, ast.Call)]
            if any(_dotted(c.func) != "compile" for c in inner):
                return f"it calls {short}() on code computed at run time"
            computed = _computed_names(nodes) if computed is None else computed
            if any(isinstance(n, ast.Name) and n.id in computed for n in ast.walk(arg)):
                return f"it calls {short}() on a value computed at run time"
    return None


def _string_value(token: str) -> str | None:
    try:
        value = ast.literal_eval(token)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, str) else None


def _tokens(source: str, depth: int) -> Iterator[str]:
    nodes = list(ast.walk(ast.parse(source)))
    if why := _builds_code_from_data(nodes):
        raise Unscreenable(
            f"refused: {why}, so it builds code from data at import time; the validator "
            "cannot screen code it cannot read (ship the source as written)"
        )
    defined = _defined_names(nodes)
    docstrings = _docstring_positions(nodes)
    skip = {tokenize.NL, tokenize.COMMENT, tokenize.ENCODING, tokenize.ENDMARKER}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in skip or (tok.type == tokenize.STRING and tok.start in docstrings):
            continue
        if tok.type == tokenize.NAME and tok.string in defined:
            yield PLACEHOLDER
        elif tok.type == tokenize.STRING and (value := _string_value(tok.string)) is not None:
            yield from _string_tokens(value, depth)
        elif tok.type in _LAYOUT:
            yield tokenize.tok_name[tok.type]  # the structure, not the spaces spelling it
        else:
            yield tok.string


def _string_tokens(value: str, depth: int) -> Iterator[str]:
    if depth < _EMBEDDED_DEPTH and len(value) >= _EMBEDDED_MIN_CHARS:
        try:
            embedded = list(_tokens(value, depth + 1))
        except (SyntaxError, ValueError, tokenize.TokenError):
            pass  # prose, not code: one token like any other string
        else:
            yield from embedded
            return
    yield repr(value)


def normalised_tokens(code: bytes) -> list[str]:
    """The token stream two trivially different copies share; Unscreenable when the
    agent builds code from data or its source defeats the normaliser."""
    text = code.decode("utf-8", "replace")
    try:
        return list(_tokens(text, 0))
    except Unscreenable:
        raise
    except (SyntaxError, ValueError, tokenize.TokenError):
        # Not Python: compare raw words, still without whitespace differences.
        return re.findall(r"\w+|[^\w\s]", text)
    # Any other failure of the normaliser on hostile source (RecursionError, MemoryError,
    # a bug of the parser) costs this submission alone.
    except Exception as exc:
        raise Unscreenable(
            f"refused: copy screening could not read it ({type(exc).__name__}); simplify the source"
        ) from exc


def fingerprint(code: bytes) -> Fingerprint:
    tokens = normalised_tokens(code)
    digest = hashlib.sha256("\0".join(tokens).encode()).hexdigest()
    windows = (
        [tokens]
        if len(tokens) < SHINGLE
        else [tokens[i : i + SHINGLE] for i in range(len(tokens) - SHINGLE + 1)]
    )
    shingles = frozenset(
        hashlib.blake2b("\0".join(w).encode(), digest_size=8).digest() for w in windows
    )
    return Fingerprint(digest, shingles)


def containment(original: frozenset[bytes], new: frozenset[bytes]) -> float:
    """How much of `original` the `new` agent contains."""
    return len(original & new) / len(original) if original else 1.0


def similarity(original: bytes, new: bytes) -> float:
    return containment(fingerprint(original).shingles, fingerprint(new).shingles)


def _estimated_containment(jaccard: float, original: int, new: int) -> float:
    """|O ∩ N| / |O| from the Jaccard index: the intersection is J·(|O| + |N|) / (1 + J)."""
    return jaccard * (original + new) / ((1.0 + jaccard) * original) if original else 1.0


def _shingle_hash(shingle: bytes) -> int:
    """A shingle is already a BLAKE2b digest: its first 32 bits are the hash MinHash needs."""
    return int.from_bytes(shingle[:4], "little")


def _minhashes(entries: Sequence[Entry]) -> list[MinHash]:
    # Imported here, not with the module: datasketch loads scipy (2 s), which every
    # command that can admit an agent would pay, screening or not.
    from datasketch import MinHash

    hashes: list[MinHash] = MinHash.bulk(
        [e.fingerprint.shingles for e in entries], num_perm=_PERMUTATIONS, hashfunc=_shingle_hash
    )
    return hashes


def screen(entries: Sequence[Entry], threshold: float) -> list[CopyFlag]:
    """Each submission that contains at least `threshold` of an earlier one of another
    owner, against the earliest such original (the one containing most of it first)."""
    if len(entries) < 2:
        return []
    from datasketch import MinHashLSHEnsemble  # with MinHash, in _minhashes: why

    hashes = _minhashes(entries)
    index = MinHashLSHEnsemble(threshold=threshold * _CANDIDATE_SLACK, num_perm=_PERMUTATIONS)
    index.index(
        (i, m, len(e.fingerprint.shingles))
        for i, (e, m) in enumerate(zip(entries, hashes, strict=True))
    )
    best: dict[int, tuple[float, int]] = {}  # copy -> (containment, -original)
    for original, entry in enumerate(entries):
        shingles = entry.fingerprint.shingles
        for later in index.query(hashes[original], len(shingles)):
            other = entries[later]
            if later <= original or other.owner == entry.owner:
                continue
            # The index's candidates include many far below the threshold; the MinHash
            # estimate (within ~0.05 at 128 permutations) drops them before the exact check.
            estimate = _estimated_containment(
                hashes[original].jaccard(hashes[later]),
                len(shingles),
                len(other.fingerprint.shingles),
            )
            if estimate < threshold * _CANDIDATE_SLACK:
                continue
            share = containment(shingles, other.fingerprint.shingles)
            if share >= threshold and (share, -original) > best.get(later, (0.0, 0)):
                best[later] = (share, -original)
    return [
        CopyFlag(entries[copy].name, entries[-neg].name, share)
        for copy, (share, neg) in sorted(best.items())
    ]
