#!/usr/bin/env python3
"""Read-only access to one configured directory."""

import json
import sys
import os

NAME = 'fs-readonly'

TOOLS = [
    {
        "name": "read_file",
        "description": "Read a UTF-8 text file inside the shared folder.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {
                    "type": "string"
                }
            },
            "required": [
                "path"
            ]
        }
    },
    {
        "name": "list_dir",
        "description": "List the entries of a directory inside the shared folder.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {
                    "type": "string"
                }
            },
            "required": [
                "path"
            ]
        }
    }
]

ROOT = os.path.realpath(os.environ.get("FS_ROOT", os.getcwd()))


def _inside(path):
    # Resolve symlinks and '..' before the check, so nothing outside ROOT is reachable.
    full = os.path.realpath(os.path.join(ROOT, path))
    if full != ROOT and not full.startswith(ROOT + os.sep):
        raise ValueError("path is outside the shared folder")
    return full


def read_file(args):
    with open(_inside(str(args.get("path", ""))), encoding="utf-8") as handle:
        return handle.read(65536)


def list_dir(args):
    return "\n".join(sorted(os.listdir(_inside(str(args.get("path", "."))))))


HANDLERS = {"read_file": read_file, "list_dir": list_dir}


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
