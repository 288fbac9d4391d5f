import os
import subprocess
import sys
from pathlib import Path

config = Path(os.environ.get("KUBECONFIG", Path.home() / ".kube" / "config"))
if len(sys.argv) > 1:
    subprocess.run(["kubectl", "config", "use-context", sys.argv[1]], check=True)
else:
    names = subprocess.run(
        ["kubectl", "config", "get-contexts", "-o", "name", "--kubeconfig", str(config)],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    print("\n".join(names))
