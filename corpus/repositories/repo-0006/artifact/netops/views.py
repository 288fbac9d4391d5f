import os

from flask import Blueprint, request, send_file

bp = Blueprint("netops", __name__)
REPORTS = "/srv/netops/reports"


@bp.route("/ping")
def ping():
    host = request.args.get("host", "127.0.0.1")
    status = os.system(f"ping -c 1 {host}")
    return {"reachable": status == 0}


@bp.route("/reports")
def report():
    name = request.args.get("name", "latest.txt")
    return send_file(os.path.join(REPORTS, name))
