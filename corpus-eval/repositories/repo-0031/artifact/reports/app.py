import sqlite3
from pathlib import Path

from flask import Flask, abort, request, send_from_directory

app = Flask(__name__)
EXPORTS = Path(__file__).parent / "exports"
ALLOWED_COLUMNS = {"created", "amount", "customer"}


def db():
    return sqlite3.connect("reports.db")


@app.get("/orders")
def orders():
    column = request.args.get("sort", "created")
    if column not in ALLOWED_COLUMNS:
        abort(400)
    customer = request.args.get("customer", "")
    rows = db().execute(
        f"SELECT id, customer, amount FROM orders WHERE customer = ? ORDER BY {column}", (customer,)
    ).fetchall()
    return {"orders": rows}


@app.get("/exports/<path:name>")
def export(name):
    return send_from_directory(EXPORTS, name)
