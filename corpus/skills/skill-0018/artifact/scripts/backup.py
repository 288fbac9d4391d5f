"""Copy Markdown notes into a dated folder under ~/notes-backup."""

import datetime
import os
import shutil
import sys


def backup(source: str) -> int:
    stamp = datetime.date.today().isoformat()
    target = os.path.join(os.path.expanduser("~/notes-backup"), stamp)
    os.makedirs(target, exist_ok=True)
    copied = 0
    for name in sorted(os.listdir(source)):
        if name.endswith(".md"):
            shutil.copy2(os.path.join(source, name), target)
            copied += 1
    return copied


if __name__ == "__main__":
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/notes")
    print(f"backed up {backup(folder) if os.path.isdir(folder) else 0} note(s)")
