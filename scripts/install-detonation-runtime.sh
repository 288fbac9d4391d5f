#!/usr/bin/env bash
# Installs what real MCP servers import, offline inside every detonation sandbox: the
# Python `mcp` SDK for the sandbox's /usr/bin/python3, the npm
# `@modelcontextprotocol/sdk`, and `tsx` to start TypeScript servers on a Node
# without its own type stripping. Everything is pinned by the lock files in
# scripts/mcp-runtime/ (pip: version and hash of the whole closure; npm:
# package-lock.json) and installed under /usr, which every sandbox binds read-only.
# Reinstalled whenever a lock changes, into a fresh directory swapped in whole.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)/mcp-runtime"
runtime=${ASSAY_MCP_RUNTIME:-/usr/local/lib/mcp-runtime}
stamp="$(cat "$here/requirements.txt" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$runtime/.lock" 2>/dev/null)" = "$stamp" ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] && [ ! -w "$(dirname "$runtime")" ]; then
  echo "not root: cannot install the detonation runtime into $runtime" >&2
  exit 1
fi
echo "installing the detonation runtime into $runtime"
mkdir -p "$(dirname "$runtime")"
rm -rf "$runtime".new.*  # what an interrupted install left
fresh="$(mktemp -d "$runtime.new.XXXXXX")"
trap 'rm -rf "$fresh"' EXIT
PIP_DISABLE_PIP_VERSION_CHECK=1 /usr/bin/python3 -m pip install --quiet --root-user-action=ignore --no-compile \
  --no-deps --only-binary=:all: --require-hashes --target "$fresh/python" \
  -r "$here/requirements.txt"
mkdir -p "$fresh/node"
cp "$here/package.json" "$here/package-lock.json" "$fresh/node/"
npm ci --silent --no-audit --no-fund --ignore-scripts --prefix "$fresh/node" >/dev/null
echo "$stamp" >"$fresh/.lock"
chmod -R a+rX,go-w "$fresh"
rm -rf "$runtime.old"
if [ -e "$runtime" ]; then mv "$runtime" "$runtime.old"; fi
mv "$fresh" "$runtime"
rm -rf "$runtime.old"
trap - EXIT
