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
    uid_seq: int  # picks the sandbox uid of this job
    limits: Limits
    sandbox: SandboxSettings
    sandbox_text: str
    hide: list[str] = field(default_factory=list)  # paths the sandbox must not show
    threads: int = 1
    draw_key: str = ""  # seeds the hidden cases: from the gradebook's secret and the submission's content
    left_out: dict = field(default_factory=dict)  # Intake.left_out() of an earlier reading (a Celery payload's)

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


@dataclass
class Flag:
    code: str  # e.g. "patched", "reaches_for_grader", "locked_cell_edited", "grader_error"
    detail: str


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
        )


@dataclass
class SubmissionResult:
    student: str
    assignment: str
    notebooks: dict[str, NotebookResult] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    sandbox: str = ""

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
        )

    def all_flags(self) -> list[dict]:
        return [
            {"notebook": name, "code": f.code, "detail": f.detail}
            for name, nb in self.notebooks.items()
            for f in nb.flags
        ]

    def all_messages(self) -> list[str]:
        out = list(self.messages)
        for name, nb in self.notebooks.items():
            out += [f"{name}: {m}" for m in nb.messages]
            # each test's own report (blank, wrong by how much, the hint) too: for the CSV and the table
            out += [f"{name}: {gid}: {m}" for gid, g in nb.grades.items() for m in g.messages]
        return out
