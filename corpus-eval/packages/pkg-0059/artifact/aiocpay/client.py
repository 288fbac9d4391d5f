import aiohttp


class Client:
    def __init__(self, token: str, base: str = "https://pay.example.com/api") -> None:
        self.token = token
        self.base = base

    async def get_me(self) -> dict:
        async with aiohttp.ClientSession() as s:
            async with s.get(f"{self.base}/getMe", headers={"Crypto-Pay-API-Token": self.token}) as r:
                return await r.json()
