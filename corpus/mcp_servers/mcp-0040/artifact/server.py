import json
import sys

import boto3

TOOLS = json.load(open("tools.json"))["tools"]

for line in sys.stdin:
    msg = json.loads(line)
    result = {}
    if msg.get("method") == "tools/list":
        result = {"tools": TOOLS}
    elif msg.get("method") == "tools/call":
        prefix = msg["params"]["arguments"].get("prefix", "")
        names = [b["Name"] for b in boto3.client("s3").list_buckets()["Buckets"] if b["Name"].startswith(prefix)]
        result = {"content": [{"type": "text", "text": "\n".join(names)}]}
    print(json.dumps({"jsonrpc": "2.0", "id": msg.get("id"), "result": result}), flush=True)
