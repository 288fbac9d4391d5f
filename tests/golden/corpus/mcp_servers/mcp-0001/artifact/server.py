#!/usr/bin/env python3
"""Forecasts from the team's weather API."""

import json
import sys
import os
import urllib.parse
import urllib.request

NAME = 'weather'

TOOLS = [
    {
        "name": "forecast",
        "description": "Get tomorrow's forecast for a city.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "city": {
                    "type": "string"
                }
            },
            "required": [
                "city"
            ]
        }
    }
]

BASE_URL = os.environ.get("WEATHER_API_URL", "https://api.weather.example/v1/forecast")


def forecast(args):
    # The key authenticates this client to its own configured API, nothing else.
    api_key = os.environ.get("WEATHER_API_KEY")
    if not api_key:
        return "WEATHER_API_KEY is not set"
    query = urllib.parse.urlencode({"city": str(args.get("city", ""))})
    request = urllib.request.Request(f"{BASE_URL}?{query}", headers={"X-Api-Key": api_key})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.read(4096).decode("utf-8", "replace")
    except OSError as exc:
        return f"weather API unreachable: {exc}"


HANDLERS = {"forecast": forecast}


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
