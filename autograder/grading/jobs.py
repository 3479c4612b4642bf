"""The contract between the grading process and its workers: typed dataclasses, written as JSON.

The grading process writes a :class:`Job` (``job.json``) per submission; a worker grades it and
writes a :class:`SubmissionResult` (``result.json``) that the grading process records in the
gradebook. Both sides read and write them only through ``to_json`` / ``from_json``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .sandbox import Limits


@dataclass
class SandboxSettings:
    tool: str | None  # path of bwrap, or None when grading runs unsandboxed
    as_root: bool
    drop_uid: bool


@dataclass
class Job:
    student: str
    spec: str  # path of the assignment's spec.json (autograder.grading.spec)
    submission: str  # the submitted folder
    out: str  # where the worker writes result.json, autograded/ and feedback/
    scratch: str  # the worker's scratch folder (a copy of the submission runs there)
    slot: int
    kernel_uid: int | None  # the unprivileged uid the job's kernel runs as (None: no uid is dropped)
    limits: Limits
    sandbox: SandboxSettings
    sandbox_text: str
    hide: list[str] = field(default_factory=list)  # paths the sandbox must not show
    threads: int = 1
    draw_key: str = ""  # seeds the hidden cases: from the gradebook's secret and the submission's content
    left_out: dict = field(default_factory=dict)  # Intake.left_out() of an earlier reading (a Celery payload's)
    seconds_late: float = 0.0  # by the gradebook's due date (autograder.grading.late); 0: on time or none set
    due: str = ""  # that due date, as the learner reads it
    late_config: str = ""  # the folder of the course's nbgrader_config.py, whose plugin sets the late penalty

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Job:
        data = json.loads(text)
        data["limits"] = Limits(**data["limits"])
        data["sandbox"] = SandboxSettings(**data["sandbox"])
        return cls(**data)

    @classmethod
    def read(cls, path: str | Path) -> Job:
        return cls.from_json(Path(path).read_text())


@dataclass(frozen=True)
class FlagKind:
    learner: str  # what it means, in the learner's words (their feedback)
    instructor: str  # what it means and what to do, for the instructor (formgrader, the score table)


# Every flag the grader can raise: one code, one sentence for each reader. A flag never changes a score.
FLAG_KINDS = {
    "locked_cell_edited": FlagKind(
        "you edited a locked cell; the grader ran the original instead",
        "a locked cell was edited; the original ran in its place (the detail names it)",
    ),
    "locked_cell_deleted": FlagKind(
        "you deleted a locked cell; the grader put the original back",
        "a locked cell was deleted; the original was put back and ran",
    ),
    "points_changed": FlagKind(
        "the points of a cell were changed; the original points count",
        "a cell's points were changed in the submission; the release's points count",
    ),
    "metadata_stripped": FlagKind(
        "a cell lost its grading metadata",
        "a graded cell lost its nbgrader metadata; the grader matched it by its source",
    ),
    "metadata_changed": FlagKind(
        "a cell's grading metadata was changed",
        "a graded cell's nbgrader metadata was changed; the release's counts",
    ),
    "answer_cell_missing": FlagKind(
        "an answer cell is missing",
        "an answer cell of the release is not in the submission; its tests ran without it",
    ),
    "duplicated_cell": FlagKind(
        "a graded cell appears more than once",
        "a graded cell appears more than once; the first copy counts",
    ),
    "unknown_cell": FlagKind(
        "a cell claims to be a graded cell the assignment does not have",
        "a cell carries a grade_id the assignment does not have; it ran as an ordinary cell",
    ),
    "patched": FlagKind(
        "your code replaced something the checks rely on",
        "the submission replaced something the checks rely on (torch, builtins, the checks or the kernel): "
        "read the cell the detail names",
    ),
    "reaches_for_grader": FlagKind(
        "your code looks at or changes the grading machinery instead of computing its answer",
        "code that inspects or changes the grader's machinery (the detail names the exercise and what it "
        "reached for): read it before trusting the score",
    ),
    "record_forged": FlagKind(
        "a record of the grader's checks was written, changed or removed outside the check that makes it; those "
        "checks were not scored",
        "the probe channel changed outside a probe's own write (a record before or after its test cell, a second "
        "record for one call, a record rewritten or removed): those records were not judged; read the cell the "
        "detail names",
    ),
    "by_hand_with_autograd": FlagKind(
        "an exercise meant to be worked out by hand calls PyTorch's autograd",
        "a by-hand exercise's answer calls PyTorch's autograd; the score stands, the exercise's point may not",
    ),
    "memory_out_of_sight": FlagKind(
        "an exercise whose memory is measured uses NumPy, whose memory the check cannot see",
        "an answer to a memory-measured exercise uses NumPy (its allocations are not measured): check that it keeps "
        "no N×V array (the detail names where)",
    ),
    "symlink": FlagKind(
        "your submission holds links or special files, which the grader does not follow",
        "links or special files in the submission were left out, never followed (the detail lists them)",
    ),
    "grader_error": FlagKind(
        "the grader itself failed on this submission; your instructor will look at it",
        "the grader failed on this submission (its traceback is in the score table and the CSV): grade it by "
        "hand or report it",
    ),
}


@dataclass
class Flag:
    code: str  # one of FLAG_KINDS
    detail: str

    def __post_init__(self) -> None:
        if self.code not in FLAG_KINDS:
            raise ValueError(f"unknown flag code {self.code!r}: add it to FLAG_KINDS with its two sentences")

    @property
    def kind(self) -> FlagKind:
        return FLAG_KINDS[self.code]


@dataclass(frozen=True)
class NotebookFlag:
    """A flag as the gradebook keeps it, with the notebook it was raised on. Read back from a record an older grader
    wrote, its code may be one since retired: it is shown with its detail alone."""

    notebook: str
    code: str
    detail: str

    @property
    def instructor_line(self) -> str:
        """As the score table and formgrader show it: the code, what it means for the instructor, the detail."""
        kind = FLAG_KINDS.get(self.code)
        return f"{self.code}: {kind.instructor}: {self.detail}" if kind else f"{self.code}: {self.detail}"

    @property
    def csv_text(self) -> str:
        return f"{self.code} ({self.notebook}: {self.detail})"


@dataclass
class CellGrade:
    score: float
    max: float
    messages: list[str] = field(default_factory=list)


@dataclass
class NotebookResult:
    notebook: str
    status: str = "graded"  # graded | missing | unreadable | error
    grades: dict[str, CellGrade] = field(default_factory=dict)  # grade_id -> grade
    comments: dict[str, str | None] = field(default_factory=dict)  # answer cell grade_id -> auto comment
    messages: list[str] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    # grade_id -> the grade on the tests the learner's copy shows (hidden cases left out): "visible" feedback
    shown: dict[str, CellGrade] = field(default_factory=dict)
    late_penalty: float | None = None  # points the course's late penalty takes (nbgrader's late_submission_penalty)

    @property
    def score(self) -> float:
        return sum(g.score for g in self.grades.values())

    @property
    def max_score(self) -> float:
        return sum(g.max for g in self.grades.values())

    @classmethod
    def from_dict(cls, data: dict) -> NotebookResult:
        return cls(
            notebook=data["notebook"],
            status=data["status"],
            grades={k: CellGrade(**v) for k, v in data["grades"].items()},
            comments=dict(data["comments"]),
            messages=list(data["messages"]),
            flags=[Flag(**f) for f in data["flags"]],
            shown={k: CellGrade(**v) for k, v in data.get("shown", {}).items()},
            late_penalty=data.get("late_penalty"),
        )


@dataclass
class SubmissionResult:
    student: str
    assignment: str
    notebooks: dict[str, NotebookResult] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    sandbox: str = ""
    seconds: float = 0.0  # the submission's grading time, intake to feedback (what the class report shows)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> SubmissionResult:
        data = json.loads(text)
        return cls(
            student=data["student"],
            assignment=data["assignment"],
            notebooks={k: NotebookResult.from_dict(v) for k, v in data["notebooks"].items()},
            messages=list(data["messages"]),
            sandbox=data.get("sandbox", ""),
            seconds=float(data.get("seconds", 0.0)),
        )

    def all_flags(self) -> list[NotebookFlag]:
        return [NotebookFlag(name, f.code, f.detail) for name, nb in self.notebooks.items() for f in nb.flags]

    def all_messages(self) -> list[str]:
        out = list(self.messages)
        for name, nb in self.notebooks.items():
            out += [f"{name}: {m}" for m in nb.messages]
            # each test's own report (blank, wrong by how much, the hint) too: for the CSV and the table
            out += [f"{name}: {gid}: {m}" for gid, g in nb.grades.items() for m in g.messages]
        return out
