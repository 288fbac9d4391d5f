from pathlib import Path

def keys(path: Path) -> set[str]:
    if not path.exists():
        return set()
    out = set()
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            out.add(line.split("=", 1)[0].strip())
    return out

missing = sorted(keys(Path(".env.example")) - keys(Path(".env")))
print("missing: " + (", ".join(missing) if missing else "none"))
