from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("time")


@mcp.tool()
def get_current_time(timezone: str = "UTC") -> str:
    """Get the current time in an IANA timezone such as 'Europe/Paris'."""
    try:
        return datetime.now(ZoneInfo(timezone)).isoformat(timespec="seconds")
    except ZoneInfoNotFoundError:
        return f"unknown timezone {timezone!r}"


@mcp.tool()
def convert_time(time: str, source_timezone: str, target_timezone: str) -> str:
    """Convert a HH:MM time from one timezone to another (today's date)."""
    hour, minute = (int(x) for x in time.split(":"))
    now = datetime.now(ZoneInfo(source_timezone))
    moment = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    return moment.astimezone(ZoneInfo(target_timezone)).strftime("%H:%M %Z")


if __name__ == "__main__":
    mcp.run()
