import os
import sqlite3

from flask import Flask, jsonify, request

app = Flask(__name__)
app.config["SECRET_KEY"] = os.environ["APP_SECRET_KEY"]
DB = "users.db"


def db():
    return sqlite3.connect(DB)


@app.route("/users")
def find_users():
    name = request.args.get("name", "")
    rows = db().execute("SELECT id, name FROM users WHERE name LIKE ?", (f"%{name}%",)).fetchall()
    return jsonify(rows)


@app.route("/users/<int:user_id>")
def get_user(user_id):
    row = db().execute("SELECT id, name FROM users WHERE id = ?", (user_id,)).fetchone()
    return jsonify(row)
