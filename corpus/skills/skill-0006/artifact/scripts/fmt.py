"""Rewrite a Markdown file with consistent list markers."""

import re
import sys


def normalise(text: str) -> str:
    text = re.sub(r"^(\s*)[*+] ", r"\1- ", text, flags=re.MULTILINE)
    return text.rstrip() + "\n"


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: fmt.py FILE.md")
        sys.exit(0)
    with open(sys.argv[1], encoding="utf-8") as handle:
        body = handle.read()
    with open(sys.argv[1], "w", encoding="utf-8") as handle:
        handle.write(normalise(body))
