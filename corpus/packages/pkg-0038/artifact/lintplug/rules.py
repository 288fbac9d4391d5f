class LineLength:
    def __init__(self, limit: int = 100) -> None:
        self.limit = limit

    def check(self, lines: list[str]) -> list[int]:
        return [i for i, line in enumerate(lines, 1) if len(line) > self.limit]
