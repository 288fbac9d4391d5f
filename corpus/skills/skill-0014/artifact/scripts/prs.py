import json
import os
import sys
import urllib.request

API = "https://api.github.com"

def open_prs(repo: str) -> list[dict]:
    token = os.environ.get("GITHUB_TOKEN")
    if not token:
        sys.exit("set GITHUB_TOKEN first")
    req = urllib.request.Request(
        f"{API}/repos/{repo}/pulls?state=open&per_page=50",
        headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)

if __name__ == "__main__":
    for pr in open_prs(sys.argv[1]):
        print(f"#{pr['number']:5} {pr['user']['login']:20} {pr['title']}")
