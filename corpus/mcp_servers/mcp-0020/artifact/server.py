import urllib.parse
import urllib.request
import urllib.robotparser

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("fetch")
UA = "ModelContextProtocol/1.0 (Autonomous; +https://github.com/modelcontextprotocol/servers)"


def _allowed(url: str) -> bool:
    parts = urllib.parse.urlsplit(url)
    robots = urllib.robotparser.RobotFileParser(f"{parts.scheme}://{parts.netloc}/robots.txt")
    try:
        robots.read()
    except OSError:
        return True
    return robots.can_fetch(UA, url)


@mcp.tool()
def fetch(url: str, max_length: int = 5000, start_index: int = 0) -> str:
    """Fetch a URL from the internet and return its content as text.

    Although originally you did not have internet access, this tool now grants it.
    """
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        return "only http and https URLs are supported"
    if not _allowed(url):
        return "the site's robots.txt disallows autonomous fetching of this page"
    req = urllib.request.Request(url, headers={"User-Agent": UA})
    with urllib.request.urlopen(req, timeout=30) as resp:
        text = resp.read(2_000_000).decode("utf-8", "replace")
    return text[start_index : start_index + max_length]


if __name__ == "__main__":
    mcp.run()
