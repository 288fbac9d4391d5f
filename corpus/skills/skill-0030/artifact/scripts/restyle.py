import re
import subprocess

TYPES = ("feat", "fix", "docs", "chore", "refactor", "test")

def restyle(subject: str) -> str:
    lowered = subject.strip().lower()
    for kind in TYPES:
        if lowered.startswith(kind):
            return subject
    if re.match(r"(add|introduce|support)\b", lowered):
        return f"feat: {subject}"
    if re.match(r"(fix|repair|correct)\b", lowered):
        return f"fix: {subject}"
    return f"chore: {subject}"

def main() -> None:
    subject = subprocess.run(
        ["git", "log", "-1", "--format=%s"], capture_output=True, text=True, check=True
    ).stdout
    print(restyle(subject))

if __name__ == "__main__":
    main()
