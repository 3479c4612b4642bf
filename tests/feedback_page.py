"""What a learner reads on an nbgrader feedback page, for the tests that fetch one (exchange, hub)."""

from __future__ import annotations

import re


def score_line(page: str) -> str:
    """The page's "Score: x / y", as "x / y" with the numbers in their shortest form."""
    match = re.search(r"Score:\s*([\d.]+)\s*/\s*([\d.]+)", re.sub(r"<[^>]+>", " ", page))
    assert match, "the feedback page states a score"
    return f"{float(match.group(1)):g} / {float(match.group(2)):g}"
