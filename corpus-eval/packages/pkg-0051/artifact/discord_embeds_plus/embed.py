class Embed:
    def __init__(self, title: str, colour: int = 0x5865F2) -> None:
        self.title = title
        self.colour = colour
        self.fields: list[dict] = []

    def add_field(self, name: str, value: str, inline: bool = False) -> "Embed":
        self.fields.append({"name": name, "value": value, "inline": inline})
        return self

    def to_dict(self) -> dict:
        return {"title": self.title, "color": self.colour, "fields": self.fields}
