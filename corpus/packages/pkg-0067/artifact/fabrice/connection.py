import shlex
import subprocess


class Connection:
    def __init__(self, host: str, user: str = "root") -> None:
        self.host, self.user = host, user

    def run(self, command: str) -> str:
        argv = ["ssh", f"{self.user}@{self.host}", shlex.quote(command)]
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout
