#!/usr/bin/env python3
"""Fetch documentation pages from allow-listed hosts."""

import json
import sys
import os
import urllib.parse
import urllib.request

NAME = 'http-fetch'

TOOLS = [
    {
        "name": "fetch",
        "description": "Fetch a documentation page (allow-listed hosts only) and return up to 64 KiB of text.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "url": {
                    "type": "string"
                }
            },
            "required": [
                "url"
            ]
        }
    }
]

ALLOWED = set(os.environ.get("FETCH_ALLOWED_HOSTS", "docs.python.org,developer.mozilla.org").split(","))


def fetch(args):
    url = str(args.get("url", ""))
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "https" or parts.hostname not in ALLOWED:
        return "refused: only https URLs on allow-listed hosts"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read(65536).decode("utf-8", "replace")
    except OSError as exc:
        return f"fetch failed: {exc}"


HANDLERS = {"fetch": fetch}


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
