"""Where a test cell's hidden tests are: the one reader of nbgrader's BEGIN/END HIDDEN TESTS markers, used by the
grader (outside the sandbox) and by the learner-side checks (which label a hidden case's report)."""

from __future__ import annotations

BEGIN, END = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
VISIBLE, HIDDEN, MARKER = "visible", "hidden", "marker"


def line_kinds(source: str) -> list[str]:
    """For each line of the cell: visible, hidden (between the markers), or marker (a marker line itself)."""
    kinds, hidden = [], False
    for line in source.splitlines():
        if BEGIN in line:
            hidden = True
            kinds.append(MARKER)
        elif END in line:
            hidden = False
            kinds.append(MARKER)
        else:
            kinds.append(HIDDEN if hidden else VISIBLE)
    return kinds


def hidden_line_numbers(source: str) -> set[int]:
    """1-based numbers of the lines between the markers."""
    return {number for number, kind in enumerate(line_kinds(source), start=1) if kind == HIDDEN}


def visible_source(source: str) -> str:
    """The cell without its hidden tests and without the markers."""
    return "\n".join(line for line, kind in zip(source.splitlines(), line_kinds(source)) if kind == VISIBLE)


def hidden_source_lines(source: str) -> list[str]:
    return [line for line, kind in zip(source.splitlines(), line_kinds(source)) if kind == HIDDEN]
