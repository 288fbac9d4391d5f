"""Do three honest validators agree? The same agents on the same corpus and subnet snapshot,
three validators (each its own store, secret and `assay round run` process; the third on
the Ray executor), first with the shared draw anchored on the snapshot's anchor block,
then with independent draws (the snapshot without its anchor: each validator draws with a
random seed and its own id, as before chain-mode rounds drew alike).

For each way it prints, side by side: whether the three drew the same tasks, whether
their weight vectors (the round's and the UID vector `chain weights` sets) are identical,
and each validator's vtrust from `chain preview` on one snapshot holding all three rows.

    python benchmarks/validator_agreement.py [--tasks 5] [--work DIR]

Heavy (three rounds of sandboxed reps per way): run it under the shared lock.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ASSAY = str(Path(sys.executable).with_name("assay"))
# Agents that judge what an artifact does. coin_flip hashes the bytes it is shown, and in
# chain mode each validator shows its own variant (keyed by its secret): it would disagree
# by design, as a memoriser does.
AGENTS = ("reference", "keyword", "block_all")
VALIDATORS = (("v-a", "local"), ("v-b", "local"), ("v-c", "ray"))


def assay(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run([ASSAY, *args], capture_output=True, text=True, cwd=cwd, check=False)
    if done.returncode != 0:
        raise SystemExit(f"assay {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def signed_agents(work: Path) -> tuple[list[str], list[str]]:
    """Each agent pinned for skills by its own author key: manifests and author keys."""
    keys, agents = work / "keys", work / "agents"
    keys.mkdir(parents=True)
    agents.mkdir()
    assay("agent", "bundle", str(ROOT / "agents" / "reference"), "-o", str(agents / "reference.py"))
    manifests, authors = [], []
    for name in AGENTS:
        if name != "reference":
            shutil.copy(ROOT / "agents" / f"{name}.py", agents / f"{name}.py")
        assay("keys", "new", "--out", str(keys), "--name", name)
        key = keys / f"{name}.key"
        assay("agent", "pin", str(agents / f"{name}.py"), "--track", "skills", "--key", str(key))
        manifests.append(str(agents / f"{name}.skills.manifest.json"))
        authors.append((keys / f"{name}.pub").read_text().strip())
    return manifests, authors


def subnet(work: Path, authors: list[str]) -> dict[str, Path]:
    """A 16-UID subnet whose first three UIDs are the validators, the authors registered
    after them; and the same file without its anchor block."""
    shared = work / "subnet-shared.json"
    register = [a for author in authors for a in ("--register", author)]
    assay("chain", "snapshot", "--synthetic", "16", "--validators", "3", "--netuid", "5",
          *register, "--out", str(shared))  # fmt: skip
    data = json.loads(shared.read_text())
    data["anchor_block"] = data["block_hash"] = None
    independent = work / "subnet-independent.json"
    independent.write_text(json.dumps(data, indent=2))
    return {"shared draw": shared, "independent draws": independent}


def one_way(work: Path, snapshot: Path, manifests: list[str], tasks: int) -> dict[str, Any]:
    hotkeys = [n["hotkey"] for n in json.loads(snapshot.read_text())["neurons"][:3]]
    work.mkdir(parents=True)
    combined = work / "combined.json"
    shutil.copy(snapshot, combined)
    rounds, vectors = [], []
    for (name, executor), hotkey in zip(VALIDATORS, hotkeys, strict=True):
        home = work / name
        home.mkdir(parents=True)
        run = ["round", "run", "--snapshot", str(snapshot), "--tracks", "skills"]
        run += [a for m in manifests for a in ("--manifest", m)]
        run += ["--tasks", str(tasks), "--db", str(home / "rounds.db"), "--json"]
        run += ["--secret-file", str(home / "secret"), "--validator-id", name]
        run += ["--executor", executor, "--jobs", "2"]
        rounds.append(json.loads(assay(*run)))
        weights = ["chain", "weights", rounds[-1]["round_id"], "--snapshot", str(combined)]
        weights += ["--db", str(home / "rounds.db"), "--hotkey", hotkey, "--json"]
        vectors.append(json.loads(assay(*weights)))
    preview = json.loads(
        assay("chain", "preview", "--snapshot", str(combined), "--as", "0", "--json")
    )
    return {
        "draws": [r["draw"]["skills"] for r in rounds],
        "seeds": [r["round_seed"] for r in rounds],
        "round_weights": [r["weights"] for r in rounds],
        "uid_vectors": [(v["uids"], v["weights"]) for v in vectors],
        "vtrust": [float(preview["vtrust"][str(uid)]) for uid in range(3)],
    }


def same(values: list[Any]) -> str:
    return "identical" if all(v == values[0] for v in values) else "different"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=5, help="skills tasks per round")
    parser.add_argument("--work", type=Path, help="keep the rounds here")
    options = parser.parse_args()
    work = options.work or Path(tempfile.mkdtemp(prefix="agreement-"))
    manifests, authors = signed_agents(work)
    ways = {
        way: one_way(work / way.replace(" ", "-"), path, manifests, options.tasks)
        for way, path in subnet(work, authors).items()
    }
    names = [name for name, _ in VALIDATORS]
    print(f"three validators ({', '.join(f'{n} {e}' for n, e in VALIDATORS)}), "
          f"{len(AGENTS)} agents, skills, {options.tasks} tasks each")  # fmt: skip
    print(f"{'':28}" + "".join(f"{way:>22}" for way in ways))
    for label, show in (
        ("task draws", lambda r: same(r["draws"])),
        ("round weights (per agent)", lambda r: same(r["round_weights"])),
        ("UID vectors (u16)", lambda r: same(r["uid_vectors"])),
        ("tasks in common (all 3)", lambda r: str(len(set.intersection(*map(set, r["draws"]))))),
    ):
        print(f"{label:28}" + "".join(f"{show(result):>22}" for result in ways.values()))
    for i, name in enumerate(names):
        cells = "".join(f"{result['vtrust'][i]:>22.4f}" for result in ways.values())
        print(f"{'vtrust ' + name:28}" + cells)
    for way, result in ways.items():
        for name, draw in zip(names, result["draws"], strict=True):
            print(f"{way}: {name} drew {', '.join(draw)}")
    print(f"rounds kept in {work}")


if __name__ == "__main__":
    main()
