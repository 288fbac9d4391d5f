"""Planning a detonation on the validator's host: how its cost grows with the artifact.

A skill of N helper scripts and two ~250 KB documents naming every seventh of them is
planned at N = 400 and N = 4,900, side by side in one run; the ratio of the two times
beside the ratio of N shows whether planning grows linearly (issue 33: it grew with
scripts times documented words, about 12 minutes at 4,900).

    .venv/bin/python benchmarks/detonate_plan.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from assay.detonate.steps import build_plan
from assay.mechanism.spec import Track


def skill(root: Path, scripts: int) -> Path:
    (root / "scripts").mkdir(parents=True)
    for n in range(scripts):
        (root / "scripts" / f"s{n}.py").write_text(f"print({n})\n")
    line = " ".join(f"`python3 scripts/s{n}.py --x{n} a{n}.md`" for n in range(0, scripts, 7))
    doc = ("## usage\n" + line + "\n") * (250_000 // (len(line) + 10) + 1)
    for name in ("SKILL.md", "README.md"):
        (root / name).write_text(doc[:250_000])
    return root


def planning_s(scripts: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        root = skill(Path(tmp), scripts)
        start = time.perf_counter()
        build_plan(root, Track.SKILLS, "0" * 16)
        return time.perf_counter() - start


def main() -> None:
    small, large = planning_s(400), planning_s(4_900)
    print(f"planning 400 scripts:   {small:.2f} s")
    print(f"planning 4,900 scripts: {large:.2f} s")
    print(f"time ratio {large / small:.1f} for {4_900 / 400:.1f} times the scripts")


if __name__ == "__main__":
    main()
