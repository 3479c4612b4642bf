"""Late submissions, assessed as `nbgrader autograde` assesses them: seconds late from the submission's timestamp and
the assignment's due date (plus the learner's extension, if the gradebook has one), and each notebook's penalty from
nbgrader's own `AssignLatePenalties` with the plugin the course configures in its `nbgrader_config.py`
(`c.LateSubmissionPlugin.penalty_method = 'zero'`, or a plugin class of the instructor's:
`c.AssignLatePenalties.plugin_class = 'late.SubMarks'`, a module beside the config, as nbgrader's docs show).

The instructor's plugin is the instructor's code: it runs in the grader (never in a learner's sandbox), on the score
the grader decided.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

from ..coursedir import course_config


@dataclass(frozen=True)
class Deadline:
    """What a submission is measured against: its seconds late (0: on time, or no due date) and the due date."""

    seconds_late: float = 0.0
    due: str = ""  # the due date with the learner's extension, as the learner reads it ("" when there is none)


def deadline(db_url: str, assignment: str, student: str, timestamp_text: str | None) -> Deadline:
    """The submission's lateness by the gradebook's due date and extension, as nbgrader's
    `SubmittedAssignment.total_seconds_late` computes it."""
    from nbgrader.utils import parse_utc

    from autograder.gradebook import Gradebook, MissingEntry

    if not timestamp_text:
        return Deadline()
    with Gradebook(db_url) as gb:
        try:
            due = gb.find_assignment(assignment).duedate
        except MissingEntry:
            return Deadline()
        try:
            extension = gb.find_submission(assignment, student).extension
        except MissingEntry:
            extension = None
    if due is None:
        return Deadline()
    due = due + (extension or timedelta(0))
    try:
        submitted: datetime = parse_utc(timestamp_text.strip())
    except (ValueError, TypeError, OverflowError):
        return Deadline()
    late = max(0.0, (submitted - due).total_seconds())
    return Deadline(late, f"{due:%Y-%m-%d %H:%M} UTC")


def penalty(config_dir: str | Path, student: str, score: float, seconds_late: float) -> float | None:
    """The points a notebook scoring `score` loses for being `seconds_late`: nbgrader's `AssignLatePenalties` with
    the course's plugin, clamped as nbgrader clamps it (never below 0, never above the score); None: no penalty."""
    if seconds_late <= 0:
        return None
    from nbgrader.preprocessors import AssignLatePenalties

    folder = str(Path(config_dir).resolve())
    sys.path.insert(0, folder)  # a plugin class named by module, as nbgrader finds it beside the config
    try:
        assigner = AssignLatePenalties(config=course_config(Path(folder)))
        assigner.init_plugin()
        points = assigner.plugin_inst.late_submission_penalty(student, score, seconds_late)
        if points is None:
            return None
        return float(assigner._check_late_penalty(SimpleNamespace(score=score), float(points)))
    finally:
        sys.path.remove(folder)


def message(deadline: Deadline, lost: float | None, score: float) -> str:
    """What the learner's feedback says of a late notebook."""
    late = _duration(deadline.seconds_late)
    if lost:
        cost = f"the course's late penalty takes {lost:g} of this notebook's {score:g} points"
    else:
        cost = "the course sets no penalty for it"
    return f"Handed in {late} after the due date ({deadline.due}): {cost}."


def _duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    days, hours, mins = minutes // 1440, minutes // 60 % 24, minutes % 60
    parts = [f"{n} {unit}" for n, unit in ((days, "d"), (hours, "h"), (mins, "min")) if n]
    return " ".join(parts) or f"{int(seconds)} s"
