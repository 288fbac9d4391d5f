#!/bin/sh
set -eu
src="${1:?usage: deploy.sh DIR TARGET}"
target="${2:?usage: deploy.sh DIR TARGET}"
key="${DEPLOY_KEY_FILE:-$HOME/.ssh/id_ed25519}"
rsync -az --delete -e "ssh -i $key -o StrictHostKeyChecking=accept-new" "$src" "$target"
echo "deployed $src to $target"
