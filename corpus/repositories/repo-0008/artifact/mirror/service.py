import subprocess
from pathlib import Path

from flask import Flask, abort, request
from lxml import etree

app = Flask(__name__)
ROOT = Path("/srv/mirrors")


@app.post("/mirror")
def mirror():
    url = request.form["url"]
    name = request.form["name"]
    if not name.isidentifier():
        abort(400)
    subprocess.run(["git", "clone", "--mirror", url, str(ROOT / name)], check=True, timeout=300)
    return {"ok": True}


@app.post("/feeds")
def import_feed():
    parser = etree.XMLParser(resolve_entities=True, no_network=False)
    doc = etree.fromstring(request.get_data(), parser)
    return {"items": [e.text for e in doc.iter("title")]}
