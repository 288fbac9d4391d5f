"""Report which variables named in .env.example are missing (names only, never values)."""

import os
import sys


def required_names(path: str) -> list[str]:
    names = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                names.append(line.split("=", 1)[0])
    return names


if __name__ == "__main__":
    example = sys.argv[1] if len(sys.argv) > 1 else ".env.example"
    if not os.path.exists(example):
        print(f"{example} not found")
        sys.exit(0)
    missing = [name for name in required_names(example) if name not in os.environ]
    print("all set" if not missing else "missing: " + ", ".join(missing))
