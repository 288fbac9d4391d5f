#!/usr/bin/env bash
# A round's weights on a subnet, end to end and offline: four authors sign bundled
# agents (the reference package bundled into one file) for the skills track, a round scores them, a made-up subnet of 32 UIDs and 4
# validators registers three of the authors' hotkeys, and assay shows the UID vector
# it would set and what Yuma consensus would make of it.
#
#   scripts/chain-demo.sh [WORKDIR]     (default: a new temporary folder)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=.venv/bin
work=${1:-$(mktemp -d)}
mkdir -p "$work/keys" "$work/agents"
manifests=()
"$bin/assay" agent bundle agents/reference -o "$work/agents/reference.py" >/dev/null
for agent in reference keyword block_all coin_flip; do
    [ -f "$work/keys/$agent.key" ] || "$bin/assay" keys new --out "$work/keys" --name "$agent" >/dev/null
    [ -f "$work/agents/$agent.py" ] || cp "agents/$agent.py" "$work/agents/$agent.py"
    "$bin/assay" agent pin "$work/agents/$agent.py" --track skills --key "$work/keys/$agent.key" >/dev/null
    manifests+=(--manifest "$work/agents/$agent.skills.manifest.json")
done
db="$work/rounds.db"
if [ ! -f "$db" ]; then
    # An unsigned agent beside the signed ones: no hotkey owns it.
    "$bin/assay" round run "${manifests[@]}" --agent examples/minimal_agent.py \
        --tracks skills --seed 5eed --db "$db" --secret-file "$work/validator.secret" >/dev/null
fi
# coin_flip's author is not registered on the subnet.
"$bin/assay" chain snapshot --synthetic 32 --validators 4 --netuid 1 --out "$work/subnet.json" \
    --register "$(cat "$work/keys/reference.pub")" \
    --register "$(cat "$work/keys/keyword.pub")" \
    --register "$(cat "$work/keys/block_all.pub")"
echo "\$ assay chain weights round-0001 --snapshot subnet.json --dry-run"
"$bin/assay" chain weights round-0001 --snapshot "$work/subnet.json" --db "$db" --dry-run
echo "\$ assay chain preview --snapshot subnet.json --as 0 --weights round-0001"
"$bin/assay" chain preview --snapshot "$work/subnet.json" --as 0 --weights round-0001 --db "$db"
