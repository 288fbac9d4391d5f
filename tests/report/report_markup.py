"""A small reader of the report's markup, so tests assert on elements rather than substrings."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser


@dataclass
class Element:
    tag: str
    classes: frozenset[str]
    section: str | None  # id of the enclosing <section>
    attrs: dict[str, str]
    parent_classes: frozenset[str]
    text: str = ""


class Page(HTMLParser):
    VOID = frozenset({"meta", "br", "img", "link", "input", "hr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self._stack: list[Element] = []
        self._section: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "section":
            self._section = values.get("id")
        parent = self._stack[-1].classes if self._stack else frozenset()
        element = Element(
            tag, frozenset(values.get("class", "").split()), self._section, values, parent
        )
        self.elements.append(element)
        if tag not in self.VOID:
            self._stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID:
            self._stack.pop()

    def handle_endtag(self, tag: str) -> None:
        if tag == "section":
            self._section = None
        while self._stack:
            if self._stack.pop().tag == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._stack:
            self._stack[-1].text += data

    def find(self, tag: str, cls: str | None = None, section: str | None = None) -> list[Element]:
        return [
            e
            for e in self.elements
            if e.tag == tag
            and (cls is None or cls in e.classes)
            and (section is None or e.section == section)
        ]

    def titles(self, parent_class: str, section: str | None = None) -> list[str]:
        """The hover text of every element of `parent_class` (its SVG <title> child)."""
        return [
            e.text for e in self.find("title", section=section) if parent_class in e.parent_classes
        ]

    def count(self, tag: str, section: str | None = None) -> Counter[str]:
        """How many elements of `tag` carry each class."""
        counts: Counter[str] = Counter()
        for e in self.find(tag, section=section):
            counts.update(e.classes)
        return counts


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    return page
