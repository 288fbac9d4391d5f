import io
import tarfile
from pathlib import Path

import yaml
from flask import Flask, jsonify, request

app = Flask(__name__)
DATA = Path("/var/lib/importer")


@app.post("/bundles")
def upload_bundle():
    archive = tarfile.open(fileobj=io.BytesIO(request.get_data()), mode="r:gz")
    archive.extractall(DATA / "bundles", filter="data")
    return jsonify(ok=True, files=archive.getnames())


@app.post("/pipelines")
def create_pipeline():
    spec = yaml.safe_load(request.get_data(as_text=True))
    name = str(spec.get("name", ""))
    if not name.isidentifier():
        return jsonify(error="bad name"), 400
    (DATA / "pipelines" / f"{name}.yaml").write_text(yaml.safe_dump(spec))
    return jsonify(ok=True)
