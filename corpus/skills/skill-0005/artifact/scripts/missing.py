import json
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else "locales")
base = json.loads((root / "en.json").read_text(encoding="utf-8"))
for name in ("he", "ar", "fa"):
    path = root / f"{name}.json"
    have = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    missing = sorted(set(base) - set(have))
    print(f"{name}: {len(missing)} missing" + (": " + ", ".join(missing[:10]) if missing else ""))
