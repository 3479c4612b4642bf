"""Due dates and late penalties, as `nbgrader autograde` applies them (issue 50): the same late and on-time
submissions graded by the course's command and by stock nbgrader, with a course's own late plugin (nbgrader's
documented example: a point an hour) and with nbgrader's `penalty_method = 'zero'`, give the same seconds late and
the same penalties in the gradebook; the learner's feedback says how late, and what it cost; the CSV has it."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

from autograder.coursedir import nbgrader_api
from autograder.gradebook import Gradebook
from autograder.grading import autograde, grade_assignment, late
from autograder.grading.report import export_csv
from benchmarks.grading import ASSIGNMENT, build

pytestmark = pytest.mark.slow  # grades small classes, and with stock nbgrader

DUE = "2026-11-01 10:00:00.000000 UTC"
SUBMITTED = {  # learner i's work is example i % 3: right, with mistakes, blank
    "learner000": "2026-11-01 09:59:00.000000 UTC",  # on time
    "learner001": "2026-11-01 12:30:00.000000 UTC",  # 2 h 30 min late, with mistakes
    "learner002": "2026-11-02 10:00:00.000000 UTC",  # a day late, blank: nothing to take
    "learner003": "2026-11-03 10:00:00.000000 UTC",  # two days late, right: the penalty stops at the score
}
PLUGIN = '''from nbgrader.plugins import BasePlugin


class PointAnHour(BasePlugin):
    def late_submission_penalty(self, student_id, score, total_seconds_late):
        return round(total_seconds_late / 3600, 0)
'''
CONFIGS = {
    "a point an hour": (
        "c.AssignLatePenalties.plugin_class = 'late_rules.PointAnHour'\n",
        {"AssignLatePenalties": {"plugin_class": "late_rules.PointAnHour"}},
    ),
    "zero": ("c.LateSubmissionPlugin.penalty_method = 'zero'\n", {"LateSubmissionPlugin": {"penalty_method": "zero"}}),
}


def late_course(root: Path, config_text: str) -> str:
    students = build(root, len(SUBMITTED))
    assert students == list(SUBMITTED)
    for student, when in SUBMITTED.items():
        (root / "submitted" / student / ASSIGNMENT / "timestamp.txt").write_text(when)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        gb.update_or_create_assignment(ASSIGNMENT, duedate=DUE)
    (root / "late_rules.py").write_text(PLUGIN)
    (root / "nbgrader_config.py").write_text(config_text)
    return f"sqlite:///{root / 'gradebook.db'}"


def lateness(db_url: str) -> dict[tuple[str, str], tuple[float, float | None, float]]:
    """(student, notebook) -> (seconds late, late_submission_penalty, raw score) as the gradebook has them."""
    with Gradebook(db_url) as gb:
        return {
            (sub.student.id, nb.name): (sub.total_seconds_late, nb.late_submission_penalty, float(nb.score))
            for sub in gb.find_assignment(ASSIGNMENT).submissions
            for nb in sub.notebooks
        }


@pytest.mark.parametrize("plugin", list(CONFIGS))
def test_late_penalties_are_nbgraders_own(plugin, tmp_path, grading_pool):
    config_text, config = CONFIGS[plugin]
    ours = late_course(tmp_path / "ours", config_text)
    grade_assignment(
        tmp_path / "ours", ASSIGNMENT, db_url=ours, workers=2, progress=False, log=lambda *_: None, pool=grading_pool
    )
    stock = late_course(tmp_path / "stock", config_text)
    sys.path.insert(0, str(tmp_path / "stock"))  # where nbgrader, run in the course's folder, finds late_rules
    try:
        errors = autograde(nbgrader_api(tmp_path / "stock", db_url=stock, extra=config), ASSIGNMENT, list(SUBMITTED))
    finally:
        sys.path.remove(str(tmp_path / "stock"))
    assert not errors, errors
    got, expected = lateness(ours), lateness(stock)
    assert got.keys() == expected.keys()
    compared = [k for k, v in expected.items() if v[1] and v[2] == got[k][2]]
    assert len(compared) >= 2, (got, expected)  # late notebooks both graders scored alike: their penalties compared
    for key, (seconds, penalty, score) in expected.items():
        # the raw scores may differ (stock nbgrader knows no partial credit): the penalty is the plugin's on each
        ours_seconds, ours_penalty, ours_score = got[key]
        assert ours_seconds == seconds
        if score == ours_score:
            assert ours_penalty == penalty, (key, got[key], expected[key])
        assert (ours_penalty is None) == (penalty is None), (key, got[key], expected[key])
    on_time = [k for k in got if k[0] == "learner000"]
    assert all(got[k][0] == 0 and got[k][1] is None for k in on_time)
    late_right = [v for k, v in got.items() if k[0] == "learner003"]
    assert all(penalty == score > 0 for _, penalty, score in late_right), late_right  # stopped at the score


def test_a_late_learner_reads_how_late_and_what_it_cost(tmp_path, grading_pool):
    db_url = late_course(tmp_path / "course", CONFIGS["a point an hour"][0])
    rows = grade_assignment(
        tmp_path / "course",
        ASSIGNMENT,
        db_url=db_url,
        workers=2,
        progress=False,
        log=lambda *_: None,
        pool=grading_pool,
    )
    by_student = {r.student: r for r in rows}
    graded = lateness(db_url)
    (notebook,) = {nb for _, nb in graded}
    seconds, penalty, raw = graded[("learner001", notebook)]
    assert seconds == 2.5 * 3600 and penalty == 2.0 and raw > 2
    assert by_student["learner001"].score == raw - 2.0
    page = (tmp_path / "course" / "feedback" / "learner001" / ASSIGNMENT / f"{notebook}.html").read_text()
    assert "Handed in 2 h 30 min after the due date (2026-11-01 10:00 UTC)" in page, page
    assert f"takes 2 of this notebook's {raw:g} points" in page and "Late submission penalty (Score: -2.0)" in page
    on_time = (tmp_path / "course" / "feedback" / "learner000" / ASSIGNMENT / f"{notebook}.html").read_text()
    assert "after the due date" not in on_time and "Late submission penalty" not in on_time
    with open(export_csv(db_url, tmp_path / "grades.csv")) as fh:
        row = next(r for r in csv.DictReader(fh) if r["student_id"] == "learner001")
    assert (float(row["raw_score"]), float(row["late_submission_penalty"]), float(row["score"])) == (raw, 2.0, raw - 2)


def test_an_extension_the_instructor_gave_is_kept_and_counted(tmp_path, grading_pool):
    db_url = late_course(tmp_path / "course", CONFIGS["a point an hour"][0])
    import datetime

    with Gradebook(db_url) as gb:
        gb.update_or_create_student("learner001")
        gb.add_submission(ASSIGNMENT, "learner001", extension=datetime.timedelta(hours=2))
    grade_assignment(
        tmp_path / "course",
        ASSIGNMENT,
        ["learner001"],
        db_url=db_url,
        progress=False,
        log=lambda *_: None,
        pool=grading_pool,
    )
    (value,) = lateness(db_url).values()
    assert value[:2] == (1800.0, 0.0), value  # 30 minutes after the extended date: round(0.5) is 0 points
    with Gradebook(db_url) as gb:
        assert gb.find_submission(ASSIGNMENT, "learner001").extension == datetime.timedelta(hours=2)


def test_no_due_date_no_lateness(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(db_url) as gb:
        gb.update_or_create_assignment(ASSIGNMENT)
    assert late.deadline(db_url, ASSIGNMENT, "someone", SUBMITTED["learner003"]) == late.Deadline()
    assert late.penalty(tmp_path, "someone", 5.0, 3600.0) is None  # no config: nbgrader's default, no penalty


def test_the_class_report_lists_the_late_submissions(tmp_path, grading_pool):
    from autograder.class_report import write_report

    db_url = late_course(tmp_path / "course", CONFIGS["zero"][0])
    grade_assignment(
        tmp_path / "course", ASSIGNMENT, db_url=db_url, progress=False, log=lambda *_: None, pool=grading_pool
    )
    page = write_report(tmp_path / "course", ASSIGNMENT, db_url, tmp_path / "report").read_text()
    assert "Due 2026-11-01 10:00 UTC: 3 late submission(s)" in page, page
    assert "2.5 h late, −10 points; 24.0 h late, −0 points; 48.0 h late, −15 points" in page, page
    assert "learner0" not in page  # the report names no learner


def test_the_grading_service_charges_lateness_as_the_local_command_does(tmp_path):
    """A Celery worker's task (called here without a broker, as tests/test_celery.py does): the payload's time
    against the gradebook's due date, the course folder's nbgrader_config.py for the penalty."""
    from autograder.grading.sandbox import Limits
    from autograder.scale import service
    from autograder.scale.payload import from_submission

    root = tmp_path / "course"
    db_url = late_course(root, CONFIGS["zero"][0])
    settings = service.WorkerSettings(root, db_url, "source", "release")
    for student in ("learner000", "learner001"):
        payload = from_submission(root / "submitted", student, ASSIGNMENT)
        assert (
            service.grade({**payload.to_dict(), "sha256": payload.sha256}, settings, Limits(timeout_s=60)) == "written"
        )
    graded = {student: value for (student, _), value in lateness(db_url).items()}
    assert graded["learner000"][:2] == (0.0, None)
    seconds, penalty, raw = graded["learner001"]
    assert (seconds, penalty) == (9000.0, raw) and raw > 0  # 'zero': the whole score
