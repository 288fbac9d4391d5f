#!/usr/bin/env python3
"""Read-only git status for the configured repository."""

import json
import sys
import os
import subprocess

NAME = 'git-status'

TOOLS = [
    {
        "name": "status",
        "description": "Show modified and untracked files of the repository.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "repo": {
                    "type": "string"
                }
            },
            "required": [
                "repo"
            ]
        }
    }
]

def status(args):
    repo = str(args.get("repo") or os.environ.get("GIT_REPO", "."))
    result = subprocess.run(
        ["git", "-C", repo, "status", "--porcelain"], capture_output=True, text=True, check=False
    )
    return result.stdout or result.stderr or "clean"


HANDLERS = {"status": status}


def handle(request):
    method = request.get("method")
    if method == "initialize":
        return {
            "protocolVersion": "2024-11-05",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": NAME, "version": "0.1.0"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        params = request.get("params") or {}
        handler = HANDLERS.get(params.get("name"))
        if handler is None:
            raise LookupError(f"unknown tool {params.get('name')!r}")
        text = handler(params.get("arguments") or {})
        return {"content": [{"type": "text", "text": text}]}
    raise LookupError(f"unknown method {method!r}")


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except json.JSONDecodeError:
            reply = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}
        else:
            if "id" not in request:
                continue  # notifications get no reply
            try:
                reply = {"jsonrpc": "2.0", "id": request["id"], "result": handle(request)}
            except LookupError as exc:
                reply = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": str(exc)}}
            except Exception as exc:  # a tool failure must not kill the server
                reply = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32603, "message": str(exc)}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
