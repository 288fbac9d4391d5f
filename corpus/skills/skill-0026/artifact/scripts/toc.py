import re
import sys
from pathlib import Path

path = Path(sys.argv[1])
text = path.read_text()
heads = re.findall(r"^(#{2,4}) (.+)$", text, flags=re.M)
lines = []
for hashes, title in heads:
    anchor = re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")
    lines.append(f"{'  ' * (len(hashes) - 2)}- [{title}](#{anchor})")
toc = "<!-- toc -->\n" + "\n".join(lines) + "\n<!-- tocstop -->"
path.write_text(re.sub(r"<!-- toc -->.*?<!-- tocstop -->", toc, text, flags=re.S))
