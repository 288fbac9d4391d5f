from datetime import datetime
from zoneinfo import ZoneInfo

def to_zone(dt: datetime, zone: str) -> datetime:
    return dt.astimezone(ZoneInfo(zone))
