"""Learner-chosen text (student ids, messages) made harmless for the two places it is shown outside feedback:

spreadsheet_cell(value)  a CSV cell a spreadsheet shows as text, never runs as a formula (OWASP's rule:
                         a cell that starts with = + - @ tab or CR gets a leading apostrophe)
terminal_text(value)     a string with no control characters left live: an id cannot clear the
                         screen, move the cursor or forge table rows in the instructor's terminal
"""

from __future__ import annotations

import re

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?")


def spreadsheet_cell(value: object) -> object:
    """`value`, or its text with a leading apostrophe when a spreadsheet would read it as a formula.
    Numbers stay numbers (a negative score is a number, not a formula), also when read back as text."""
    if not isinstance(value, str) or _PLAIN_NUMBER.fullmatch(value):
        return value
    return "'" + value if value.startswith(FORMULA_STARTS) else value


def terminal_text(value: object) -> str:
    """str(value) with C0/C1 control characters, DEL and line/paragraph separators escaped (\\x1b, \\n, \\u2028)."""
    text = str(value)
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable() or ch == " ":
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    return "".join(out)
