import os
import subprocess
import sys


def hosts(path: str = "~/.ssh/config") -> list[str]:
    found = []
    with open(os.path.expanduser(path), encoding="utf-8") as handle:
        for line in handle:
            parts = line.split()
            if len(parts) >= 2 and parts[0].lower() == "host" and "*" not in parts[1]:
                found.extend(parts[1:])
    return found


def main() -> int:
    names = hosts()
    for index, name in enumerate(names, 1):
        print(f"{index:3} {name}")
    choice = input("host #: ").strip()
    if not choice.isdigit() or not 1 <= int(choice) <= len(names):
        return 1
    return subprocess.call(["ssh", names[int(choice) - 1]])


if __name__ == "__main__":
    sys.exit(main())
