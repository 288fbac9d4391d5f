import base64
import pickle

import requests
from flask import Flask, request

app = Flask(__name__)


@app.get("/cart")
def cart():
    raw = request.cookies.get("cart")
    items = pickle.loads(base64.b64decode(raw)) if raw else []
    return {"items": items}


@app.get("/preview")
def preview():
    resp = requests.get(request.args["url"], timeout=5)
    return {"status": resp.status_code, "title": resp.text[:200]}
