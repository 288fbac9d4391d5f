"""Flag lines that look like committed secrets in a directory the user names."""

import os
import re
import sys

PATTERNS = {
    "aws access key id": re.compile(r"AKIA[0-9A-Z]{16}"),
    "private key block": re.compile(r"-----BEGIN (RSA |EC |OPENSSH )?PRIVATE KEY-----"),
    "password assignment": re.compile(r"(password|passwd|secret|token)\s*=\s*['\"][^'\"]{8,}"),
}


def scan(root: str) -> list[str]:
    hits = []
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            try:
                with open(path, encoding="utf-8", errors="ignore") as handle:
                    for number, line in enumerate(handle, 1):
                        for kind, pattern in PATTERNS.items():
                            if pattern.search(line):
                                hits.append(f"{path}:{number}: {kind}")
            except OSError:
                continue
    return hits


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "."
    for hit in scan(target):
        print(hit)
