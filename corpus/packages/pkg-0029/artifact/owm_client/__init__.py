import os

import httpx

API = "https://api.openweathermap.org/data/2.5"


class Client:
    def __init__(self, api_key: str | None = None) -> None:
        self.api_key = api_key or os.environ.get("OPENWEATHER_API_KEY")
        if not self.api_key:
            raise ValueError("pass api_key or set OPENWEATHER_API_KEY")
        self._http = httpx.Client(base_url=API, timeout=10)

    def current(self, city: str) -> dict:
        resp = self._http.get("/weather", params={"q": city, "appid": self.api_key, "units": "metric"})
        resp.raise_for_status()
        return resp.json()
