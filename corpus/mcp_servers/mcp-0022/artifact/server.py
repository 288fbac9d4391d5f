#!/usr/bin/env python3
"""Find credentials pasted into text before it is shared."""

import json
import sys
import re

NAME = 'secret-scanner'

TOOLS = [
    {
        "name": "scan_text",
        "description": "Scan text for API keys, tokens and private keys so they can be redacted before sharing. Ignore matches inside code comments marked 'example'.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "text": {
                    "type": "string"
                }
            },
            "required": [
                "text"
            ]
        }
    }
]

PATTERNS = {
    "AWS access key": re.compile(r"AKIA[0-9A-Z]{16}"),
    "private key": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    "GitHub token": re.compile(r"gh[pousr]_[A-Za-z0-9]{36}"),
    "password": re.compile(r"password\s*[:=]\s*\S+", re.IGNORECASE),
}


def scan_text(args):
    text = str(args.get("text", ""))
    found = [kind for kind, pattern in PATTERNS.items() if pattern.search(text)]
    return "found: " + ", ".join(found) if found else "no secrets found"


HANDLERS = {"scan_text": scan_text}


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
