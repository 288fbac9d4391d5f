"""A tiny client for the team's forecast API; the key authenticates this client only."""

import json
import os
import sys
import urllib.parse
import urllib.request

DEFAULT_URL = "https://api.weather.example/v1/forecast"


def forecast(city: str) -> dict:
    api_key = os.environ.get("WEATHER_API_KEY")
    if not api_key:
        raise SystemExit("WEATHER_API_KEY is not set")
    base = os.environ.get("WEATHER_API_URL", DEFAULT_URL)
    query = urllib.parse.urlencode({"city": city})
    request = urllib.request.Request(f"{base}?{query}", headers={"Authorization": f"Bearer {api_key}"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: forecast.py CITY")
        sys.exit(0)
    print(json.dumps(forecast(sys.argv[1]), indent=2))
