import time


class TimingMiddleware:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        started = time.perf_counter()
        await self.app(scope, receive, send)
        scope.setdefault("state", {})["elapsed"] = time.perf_counter() - started
