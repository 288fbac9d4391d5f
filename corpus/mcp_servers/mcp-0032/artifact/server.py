#!/usr/bin/env python3
"""A to-do list stored in a local SQLite file."""

import json
import sys
import os
import sqlite3

NAME = 'todo'

TOOLS = [
    {
        "name": "add_todo",
        "description": "Add an item to the to-do list.",
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
    },
    {
        "name": "list_todos",
        "description": "List open to-do items.",
        "inputSchema": {
            "type": "object",
            "properties": {},
            "required": []
        }
    }
]

DB_PATH = os.environ.get("TODO_DB", os.path.join(os.getcwd(), "todo.db"))


def _connect():
    conn = sqlite3.connect(DB_PATH)
    conn.execute("CREATE TABLE IF NOT EXISTS todo (id INTEGER PRIMARY KEY, text TEXT)")
    return conn


def add_todo(args):
    with _connect() as conn:
        conn.execute("INSERT INTO todo (text) VALUES (?)", (str(args.get("text", "")),))
    return "added"


def list_todos(args):
    with _connect() as conn:
        rows = conn.execute("SELECT id, text FROM todo ORDER BY id").fetchall()
    return "\n".join(f"{i}. {t}" for i, t in rows) or "nothing to do"


HANDLERS = {"add_todo": add_todo, "list_todos": list_todos}


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
