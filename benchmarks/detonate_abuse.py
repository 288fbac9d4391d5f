"""What hostile artifacts and corpora cost the validator, against benign ones.

Each case runs in its own fresh validator process, which reports its own CPU time
(the validator's, not the sandboxed children's), wall time and peak RSS. The
hostile cases are the stall and memory classes of detonation and import; each is
paired with a benign control of the same shape, run side by side, and the ratios
printed (target <= 2 for both).

    python benchmarks/detonate_abuse.py          # all pairs
Last line: worst_cpu_ratio=<x> worst_rss_ratio=<y>
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from assay.corpus.phylax import PhylaxImportError, ZipLimits, import_phylax
from assay.detonate import detonate
from assay.detonate.steps import build_plan
from assay.mechanism.spec import Track
from assay.sandbox.bwrap import BwrapBackend

MCP_SERVER = """
import json, sys
sys.setrecursionlimit(10_000)
TOOLS = json.loads(open(sys.argv[1]).read())
for line in sys.stdin:
    request = json.loads(line)
    method = request.get("method")
    if "id" not in request:
        continue
    result = {"tools": TOOLS} if method == "tools/list" else {"content": [], "capabilities": {}}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + "\\n")
    sys.stdout.flush()
"""


def _mcp(root: Path, tools_json: str) -> None:
    (root / "server.py").write_text(MCP_SERVER)
    (root / "tools.json").write_text(tools_json)
    (root / "mcp.json").write_text('{"command": "python3", "args": ["server.py", "tools.json"]}')


def deep_schema(root: Path, hostile: bool) -> None:
    depth = 984 if hostile else 3
    nested = '{"type": "object", "properties": {"x": ' * depth + '{"type": "string"}' + "}}" * depth
    _mcp(root, '[{"name": "lookup", "description": "d", "inputSchema": ' + nested + "}]")


def many_tools(root: Path, hostile: bool) -> None:
    """Tools with long descriptions, to push the harness log toward its cap."""
    count = 64 if hostile else 1
    tools = [{"name": f"t{n}", "description": "x" * 4000, "inputSchema": {}} for n in range(count)]
    _mcp(root, json.dumps(tools))


def hostile_tree(root: Path, hostile: bool) -> None:
    """A sparse 1 GB file with no suffix, a symlink loop and a 1,200-deep tree."""
    (root / "SKILL.md").write_text("# x\n")
    (root / "run.py").write_text("print(1)\n")
    with (root / "data").open("wb") as handle:
        handle.truncate(1 << 30 if hostile else 4096)
    if hostile:
        (root / "loop").symlink_to(root / "loop")
        nested = str(root / "z")
        for _ in range(1200):
            nested += "/d"
            os.mkdir(nested) if os.path.isdir(os.path.dirname(nested)) else os.makedirs(nested)


EVADER = """
import os
home = os.environ["HOME"]
for i in range({count} // 10):
    os.symlink(home, f"/tmp/.l{{i}}")
    open(f"{{home}}/.e{{i}}", "w").close()
    open(home + ("/.ssh/id_rsa" if i % 2 else "/.aws/credentials"), "rb").read(1)
for i in range({count}):
    try:
        open(f"/nonexistent/{{i % 64}}/{{i}}")
    except OSError:
        pass
"""


def evasion_flood(root: Path, hostile: bool) -> None:
    """Failing opens, links to the home, new home entries and alternating secret reads
    by the ten thousand: the trace's path resolution, the link map and the home watch."""
    (root / "SKILL.md").write_text("# x\n")
    (root / "run.py").write_text(EVADER.format(count=20_000 if hostile else 10))


def _phylax(root: Path, rows: int, entries: int, shared: bool) -> None:
    """`rows` rows naming one archive (`shared`, which the import refuses after the first
    row) or an archive each."""
    skills = root / "skills"
    (skills / "artifacts").mkdir(parents=True)
    names = ["a.zip" if shared else f"{n}.zip" for n in range(rows)]
    lines = [f"skills-{n:04d},{'malicious' if n % 2 else 'safe'},{z}" for n, z in enumerate(names)]
    (skills / "skills.csv").write_text("ref,label,artifact_file\n" + "\n".join(lines) + "\n")
    for name in dict.fromkeys(names):
        with zipfile.ZipFile(skills / "artifacts" / name, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("SKILL.md", "# a\n")
            archive.writestr("blob", os.urandom(1 << 20))
            for n in range(entries):
                archive.writestr(f"e/{n:07d}", b"")


def _detonate(track: Track) -> Callable[[Path], None]:
    def run(root: Path) -> None:
        detonate(root, track, backend=BwrapBackend(prestart=False), only=("baseline",))

    return run


def _plan(root: Path) -> None:
    build_plan(root, Track.SKILLS, "t0k3n")


def _import(root: Path) -> None:
    # A refused import is an outcome like any other; only its cost is measured here.
    with contextlib.suppress(PhylaxImportError):
        import_phylax(root, root.parent / "dest", ZipLimits(max_files=2_000))


def _corpus(rows: int, entries: int, shared: bool = False) -> Callable[[Path, bool], None]:
    def prepare(root: Path, hostile: bool) -> None:
        # The control: two rows, an archive each, which import.
        _phylax(root, rows if hostile else 2, entries if hostile else 0, shared and hostile)

    return prepare


# name -> (prepare the artifact or corpus at a path, what the validator does with it)
CASES: dict[str, tuple[Callable[[Path, bool], None], Callable[[Path], None]]] = {
    "detonate: schema nested 984 deep": (deep_schema, _detonate(Track.MCP_SERVERS)),
    "detonate: 64 tools x 4 KB descriptions": (many_tools, _detonate(Track.MCP_SERVERS)),
    "detonate: 20,000 failing opens, 2,000 links, home entries, secret reads": (
        evasion_flood,
        _detonate(Track.SKILLS),
    ),
    "plan: sparse 1 GB file, link loop, 1,200-deep tree": (hostile_tree, _plan),
    "import: one zip named by 40 rows": (_corpus(40, 0, shared=True), _import),
    "import: 100,000-entry central directory": (_corpus(2, 100_000, shared=True), _import),
}


def _one(name: str, root: Path) -> dict[str, float]:
    started = time.monotonic()
    CASES[name][1](root)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "wall_s": time.monotonic() - started,
        "rss_mb": usage.ru_maxrss / 1024,
    }


def _measure(name: str, hostile: bool) -> dict[str, float]:
    """Prepare, then measure in a fresh validator process that does only the work.

    Both run as their own processes: Linux carries a parent's peak RSS into a
    forked child, so this process stays small and does neither."""
    with tempfile.TemporaryDirectory(prefix="abuse-") as tmp:
        root = Path(tmp) / "input"
        root.mkdir()
        kind = "hostile" if hostile else "benign"
        _self("--prepare", name, kind, str(root))
        out = _self("--one", name, str(root))
        _remove_deep(root)
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def _self(*args: str) -> str:
    return subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True, timeout=900
    ).stdout


def _remove_deep(root: Path) -> None:
    """Remove the 1,200-deep chain bottom-up (shutil.rmtree would recurse that deep)."""
    nested = root / "z"
    if not nested.is_dir():
        return
    path = str(nested)
    while os.path.isdir(path + "/d"):
        path += "/d"
    while path != str(root):
        os.rmdir(path)
        path = os.path.dirname(path)


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--one":
        print(json.dumps(_one(sys.argv[2], Path(sys.argv[3]))))
        return
    if len(sys.argv) == 5 and sys.argv[1] == "--prepare":
        CASES[sys.argv[2]][0](Path(sys.argv[4]), sys.argv[3] == "hostile")
        return
    worst_cpu = worst_rss = 0.0
    print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
    for name in CASES:
        benign, hostile = _measure(name, False), _measure(name, True)
        cpu = hostile["cpu_s"] / max(benign["cpu_s"], 1e-3)
        rss = hostile["rss_mb"] / max(benign["rss_mb"], 1e-3)
        worst_cpu, worst_rss = max(worst_cpu, cpu), max(worst_rss, rss)
        print(
            f"{name}: validator cpu {benign['cpu_s']:.2f}s -> {hostile['cpu_s']:.2f}s "
            f"(x{cpu:.2f}), wall {benign['wall_s']:.2f}s -> {hostile['wall_s']:.2f}s, "
            f"peak rss {benign['rss_mb']:.0f} MB -> {hostile['rss_mb']:.0f} MB (x{rss:.2f})"
        )
    print(f"worst_cpu_ratio={worst_cpu:.2f} worst_rss_ratio={worst_rss:.2f}")


if __name__ == "__main__":
    main()
