import argparse
import collections
import subprocess

parser = argparse.ArgumentParser()
parser.add_argument("--since", default="4 weeks ago")
args = parser.parse_args()

log = subprocess.run(
    ["git", "log", f"--since={args.since}", "--format=%aN|%cs"],
    capture_output=True, text=True, check=True,
).stdout
by_author = collections.Counter(line.split("|", 1)[0] for line in log.splitlines() if line)
for author, count in by_author.most_common():
    print(f"{count:5}  {author}")
