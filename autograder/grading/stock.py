"""Stock nbgrader autograde: the baseline `make bench-grading` compares the course's command with."""

from __future__ import annotations

from typing import Any

from ..coursedir import quiet_nbgrader


def autograde(api: Any, assignment: str, students: list[str]) -> dict[str, str]:
    """Stock nbgrader autograde, one student at a time (the benchmark's baseline). student -> error text."""
    errors = {}
    with quiet_nbgrader():
        for student in students:
            result = api.autograde(assignment, student, force=True, create=True)
            if not result.get("success"):
                errors[student] = (result.get("error") or result.get("log") or "autograde failed").strip()
    return errors
