import ipaddress
import subprocess

from flask import Blueprint, abort, request, send_from_directory

bp = Blueprint("netops", __name__)
REPORTS = "/srv/netops/reports"


@bp.route("/ping")
def ping():
    host = request.args.get("host", "127.0.0.1")
    try:
        address = str(ipaddress.ip_address(host))
    except ValueError:
        abort(400)
    status = subprocess.run(["ping", "-c", "1", address], capture_output=True).returncode
    return {"reachable": status == 0}


@bp.route("/reports")
def report():
    name = request.args.get("name", "latest.txt")
    return send_from_directory(REPORTS, name)
