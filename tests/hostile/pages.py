"""What in a rendered page (feedback HTML) or a notebook could run code the learner wrote."""
from __future__ import annotations

import html.parser

LIVE_TAGS = ("script", "iframe", "object", "embed", "svg", "math", "style", "base", "form")


def active_parts(page: str, marker: str = "pwn") -> list[str]:
    """Tags, event handlers and script URLs that carry `marker` (the attacks' payload), or are always live."""
    found = []

    class Finder(html.parser.HTMLParser):
        inside = None

        def handle_starttag(self, tag, attrs):
            self.inside = tag if tag in LIVE_TAGS else None
            if tag in ("iframe", "object", "embed"):
                found.append(f"<{tag}>")
            for name, value in attrs:
                value = (value or "").replace(" ", "").replace("\t", "").replace("\n", "").lower()
                if name.startswith("on") or value.startswith(("javascript:", "vbscript:", "data:text/html")):
                    found.append(f"<{tag} {name}={value[:60]}>")

        handle_startendtag = handle_starttag

        def handle_endtag(self, tag):
            self.inside = None

        def handle_data(self, data):
            if self.inside and marker in data:
                found.append(f"<{self.inside}>{data[:60]}")

    Finder(convert_charrefs=True).feed(page)
    return found
