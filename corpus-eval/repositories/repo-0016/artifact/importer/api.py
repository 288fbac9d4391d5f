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
    archive.extractall(DATA / "bundles")
    return jsonify(ok=True, files=archive.getnames())


@app.post("/pipelines")
def create_pipeline():
    spec = yaml.load(request.get_data(as_text=True), Loader=yaml.Loader)
    (DATA / "pipelines" / f"{spec['name']}.yaml").write_text(yaml.safe_dump(spec))
    return jsonify(ok=True)
