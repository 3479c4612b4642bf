"""A submission as a Celery task carries it: its files' bytes with their sha256, nothing else.

The broker carries no hidden tests or references (the workers hold the course source) and no more
than :data:`MAX_PAYLOAD_BYTES`. Files are read without following links (autograder.grading.intake), and
written back on the worker only under the submission's folder.
"""

from __future__ import annotations

import base64
import hashlib
import json
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from ..grading import intake

MAX_PAYLOAD_BYTES = 32 * 2**20  # a submission's files, before base64; larger ones are refused with a message


class PayloadRefused(ValueError):
    """The submission cannot travel as a task; the message is for the learner and the instructor."""


@dataclass(frozen=True)
class SubmittedFile:
    path: str  # relative, POSIX
    data: str  # base64
    sha256: str

    def content(self) -> bytes:
        raw = base64.b64decode(self.data.encode("ascii"), validate=True)
        if hashlib.sha256(raw).hexdigest() != self.sha256:
            raise PayloadRefused(f"{self.path}: its bytes do not match their sha256 (damaged on the way)")
        return raw


@dataclass(frozen=True)
class Payload:
    assignment: str
    student: str
    submitted_at: str  # ISO 8601, UTC: nbgrader's timestamp.txt, else the time it was queued
    files: list[SubmittedFile] = field(default_factory=list)
    # what reading the submission left out (links, special files, files too large): Intake.left_out(); the
    # worker's copy has none of it, and grading reports it as the local command does
    left_out: dict = field(default_factory=dict)

    @property
    def sha256(self) -> str:
        """The submission's identity: its files' names and contents (and what was left out, if anything)."""
        digest = hashlib.sha256()
        for f in sorted(self.files, key=lambda f: f.path):
            digest.update(f"{f.path}\0{f.sha256}\0".encode())
        if any(self.left_out.values()):
            digest.update(json.dumps(self.left_out, sort_keys=True).encode())
        return digest.hexdigest()

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Payload:
        files = [SubmittedFile(**f) for f in data["files"]]
        left_out = data.get("left_out") or {}
        payload = cls(str(data["assignment"]), str(data["student"]), str(data["submitted_at"]), files, left_out)
        payload.check()
        for f in files:
            f.content()  # refused here, with its message, if damaged
        return payload

    def check(self) -> None:
        size = sum(len(f.data) * 3 // 4 for f in self.files)
        if size > MAX_PAYLOAD_BYTES:
            raise PayloadRefused(too_large(size))
        for name in (self.assignment, self.student):
            if not name or "/" in name or name in (".", "..") or "\0" in name:
                raise PayloadRefused(f"not a valid assignment or student name: {name!r}")
        if not _plain_left_out(self.left_out):
            raise PayloadRefused("its note of what was left out is not in the expected form")
        for f in self.files:
            parts = PurePosixPath(f.path).parts
            if not parts or PurePosixPath(f.path).is_absolute() or ".." in parts or "\0" in f.path:
                raise PayloadRefused(f"not a path inside the submission: {f.path!r}")

    def write_into(self, folder: Path) -> None:
        """The files, under `folder` (created), checked against their sha256."""
        self.check()
        folder.mkdir(parents=True, exist_ok=True)
        for f in self.files:
            target = folder / f.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(f.content())


def _plain_left_out(notes) -> bool:
    """Intake.left_out()'s shape: lists of paths and a dict of refused notebook -> message, all short strings."""
    if not isinstance(notes, dict) or set(notes) - {"dropped", "refused", "skipped"}:
        return False
    dropped, refused, skipped = notes.get("dropped", []), notes.get("refused", {}), notes.get("skipped", [])
    if not isinstance(dropped, list) or not isinstance(refused, dict) or not isinstance(skipped, list):
        return False
    listed = [*dropped, *refused, *refused.values(), *skipped]
    return len(listed) <= 10_000 and all(isinstance(s, str) and len(s) <= 4096 for s in listed)


def too_large(size: int) -> str:
    return (
        f"The submission is {size / 2**20:.1f} MiB; the grading service takes at most "
        f"{MAX_PAYLOAD_BYTES / 2**20:.0f} MiB. Remove large files (data, model checkpoints) from the "
        "assignment folder and submit again."
    )


def submitted_at(timestamp_text: str | None) -> str:
    """nbgrader's timestamp (e.g. '2026-11-24 21:05:03.123456 UTC') as ISO 8601 UTC; now if there is none."""
    if timestamp_text:
        from nbgrader.utils import parse_utc

        try:
            return parse_utc(timestamp_text.strip()).replace(tzinfo=timezone.utc).isoformat()
        except (ValueError, TypeError, OverflowError):
            pass
    return datetime.now(timezone.utc).isoformat()


def from_submission(submitted: Path, student: str, assignment: str) -> Payload:
    """The payload of submitted/<student>/<assignment>, read as the local grader reads it (no link followed)."""
    files = []
    with tempfile.TemporaryDirectory(prefix="revad-payload-") as scratch:
        copy = Path(scratch) / "copy"
        try:
            taken = intake.snapshot(submitted, student, assignment, copy)
        except intake.SubmissionRefused as refused:
            raise PayloadRefused(str(refused)) from None
        total = 0
        for path in sorted(p for p in copy.rglob("*") if p.is_file()):
            raw = path.read_bytes()
            total += len(raw)
            if total > MAX_PAYLOAD_BYTES:
                raise PayloadRefused(too_large(sum(p.stat().st_size for p in copy.rglob("*") if p.is_file())))
            files.append(
                SubmittedFile(
                    path.relative_to(copy).as_posix(),
                    base64.b64encode(raw).decode("ascii"),
                    hashlib.sha256(raw).hexdigest(),
                )
            )
    stamp = intake.read_timestamp(submitted, student, assignment)
    return Payload(assignment, student, submitted_at(stamp), files, taken.left_out())
