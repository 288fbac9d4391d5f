"""Official client for the Acme API. Credentials come from the environment, like boto3."""

import json
import os
import urllib.request

DEFAULT_ENDPOINT = "https://api.acme.example/v2"


class Client:
    def __init__(self, api_key=None, endpoint=None):
        # Read lazily at construction, never at import, and only for this client's own API.
        self.api_key = api_key or os.environ.get("ACME_API_KEY")
        self.api_secret = os.environ.get("ACME_API_SECRET")
        self.endpoint = endpoint or os.environ.get("ACME_ENDPOINT", DEFAULT_ENDPOINT)

    def get(self, resource):
        request = urllib.request.Request(
            f"{self.endpoint}/{resource}",
            headers={"Authorization": f"Bearer {self.api_key}", "X-Acme-Secret": self.api_secret or ""},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)
