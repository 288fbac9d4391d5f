"""What changed in the home and the project, as the validator's own records of them
before and after a profile's run show it, mapped to the capabilities a traced write
maps to.

The records are taken from outside the sandbox (`SealedRequest.compare_trees`), so a
write shows whatever path reached it: a rename relative to a working directory the
tracer lost, a symlink, `..`, a descriptor. What the harness laid out itself (the
project's clone, the artifact's copies, its placeholders) was in place before its
layout stamp (`HarnessLog.layout_done_ns`): an entry whose change time is no later
is the harness's, untouched since, for no program can set a change time back. A
write the trace shows only an installer's own process making (npm's bookkeeping) is
the installer's. Every other change is the artifact's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from assay.detonate.canaries import canary_at
from assay.detonate.mapping import Attribution, home_relative, write_capability
from assay.detonate.model import Evidence, clip
from assay.sandbox.interface import ComparedTree, TraceSummary, TreeEntry

_DETAIL = "seen by comparing the tree before and after the run"
_SOURCE = "files"  # the validator's own records of the trees


@dataclass(frozen=True)
class FileChange:
    path: str  # in the sandbox
    event: str  # created | modified | mode | deleted


def changes(tree: ComparedTree, layout_done_ns: int) -> Iterator[FileChange]:
    """The entries of `tree` written after the harness's layout: new or changed files,
    links and other entries (a new directory is seen by what is written into it), and
    every entry removed."""
    before, after = tree.before.entries, tree.after.entries
    for relative, entry in after.items():
        old = before.get(relative)
        if old == entry or entry.changed_ns <= layout_done_ns:
            continue
        event = _event(old, entry)
        if event:
            yield FileChange(f"{tree.path}/{relative}", event)
    for relative in before.keys() - after.keys():
        yield FileChange(f"{tree.path}/{relative}", "deleted")


def _event(old: TreeEntry | None, new: TreeEntry) -> str:
    if old is None:
        return "" if new.kind == "dir" else "created"
    if old.kind != new.kind or old.digest != new.digest:
        return "modified"
    return "mode"


def map_files(
    trees: Iterable[ComparedTree],
    layout_done_ns: int,
    trace: TraceSummary,
    who: Attribution,
    known: Iterable[Evidence] = (),
) -> tuple[list[Evidence], list[str]]:
    """Evidence of what the artifact changed in the compared trees that `known`
    evidence does not already show (the same capability at the same path), and why the
    comparison may not show everything (a record cut at its cap, no layout stamp)."""
    trees = tuple(trees)
    if trees and not layout_done_ns:
        return [], [
            "the home and the project were not compared: the harness never said when its "
            "own layout was done"
        ]
    seen = {(e.capability, e.path) for e in known}
    installer = who.installer_paths(trace)
    found: list[Evidence] = []
    reasons: list[str] = []
    for tree in trees:
        cut = tree.before.cut or tree.after.cut
        if cut:
            reasons.append(f"the record of {home_relative(tree.path)} was cut short: {clip(cut)}")
            continue
        for change in changes(tree, layout_done_ns):
            # The installer's own tree (a throw-away venv in the project) is the
            # harness's, as its traced writes are; a placeholder changed still counts.
            if change.path in installer or change.path.startswith(who.harness_prefixes):
                continue
            capability = _capability(change)
            shown = home_relative(change.path)
            if (capability, shown) in seen:
                continue
            seen.add((capability, shown))
            found.append(
                Evidence(
                    capability, who.profile, change.event, shown, detail=_DETAIL, source=_SOURCE
                )
            )
    return found, reasons


def _capability(change: FileChange) -> str:
    planted = canary_at(change.path)
    if planted is not None:
        return "WRITE_SECRET"  # a planted secret changed or removed
    if change.event == "deleted":
        return "DELETE_FILE"
    if change.event == "mode":
        return "CHANGE_PERMISSIONS"
    return write_capability(change.path)
