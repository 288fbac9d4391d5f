#!/usr/bin/env bash
# Installs the MCP SDKs that real MCP servers import, pinned, into a validator-owned
# directory under /usr (bound read-only into every detonation sandbox, which has no
# network): Python `mcp` for the sandbox's /usr/bin/python3, the npm
# `@modelcontextprotocol/sdk`, and `tsx` to start TypeScript servers on a Node
# without its own type stripping. Re-running with the same pins does nothing.
set -euo pipefail
RUNTIME=${ASSAY_MCP_RUNTIME:-/usr/local/lib/mcp-runtime}
PY_MCP=mcp==1.30.0
NPM_SDK=@modelcontextprotocol/sdk@1.32.2
NPM_TSX=tsx@4.23.15
STAMP="$RUNTIME/.pins"
PINS="$PY_MCP $NPM_SDK $NPM_TSX"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$PINS" ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] && [ ! -w "$(dirname "$RUNTIME")" ]; then
  echo "not root: cannot install the detonation runtime into $RUNTIME" >&2
  exit 1
fi
echo "installing the detonation runtime into $RUNTIME: $PINS"
staging=$(mktemp -d "$(dirname "$RUNTIME")/.mcp-runtime.XXXXXX")
trap 'rm -rf "$staging"' EXIT
/usr/bin/python3 -m pip install --quiet --disable-pip-version-check --no-compile \
  --only-binary=:all: --target "$staging/python" "$PY_MCP"
mkdir -p "$staging/node"
npm install --silent --no-audit --no-fund --no-save --ignore-scripts \
  --prefix "$staging/node" "$NPM_SDK" "$NPM_TSX" >/dev/null
echo "$PINS" >"$staging/.pins"
chmod -R a+rX,go-w "$staging"
rm -rf "$RUNTIME"
mv "$staging" "$RUNTIME"
trap - EXIT
