"""The course's grading command: grade submissions into nbgrader's gradebook, in parallel, resumably.

    python -m autograder grade NN-slug [--student S ...] [--workers N] [--require-sandbox] ...

For each submission a worker process (autograder.runner) runs the learner's notebook in a sandbox
(autograder.sandbox) and decides the scores itself from the data the learner's code produced;
this process records the results in nbgrader's gradebook (autograder.record), moves the autograded
notebooks and feedback HTML into nbgrader's folders, and shows progress. The gradebook,
``autograded/``, ``feedback/`` and the CSV export are nbgrader's own: whatever an instructor already
knows about nbgrader still holds.
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import record, sandbox
from .coursedir import nbgrader_api, quiet_nbgrader, require_success

RUNNER_VERSION = "1"  # bump when grading changes, so that every submission is graded again


@dataclass
class SubmissionScore:
    student: str
    assignment: str
    score: float
    max_score: float
    by_cell: dict[str, tuple[float, float]] = field(default_factory=dict)  # grade_id -> (score, max)
    message: str = ""
    flags: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)


def submitted_students(course_root: Path, assignment: str) -> list[str]:
    submitted = course_root / "submitted"
    if not submitted.is_dir():
        return []
    return sorted(p.name for p in submitted.iterdir() if (p / assignment).is_dir())


def autograde(api, assignment: str, students: list[str]) -> dict[str, str]:
    """Stock nbgrader autograde, one student at a time (the benchmark's baseline). student -> error text."""
    errors = {}
    with quiet_nbgrader():
        for student in students:
            result = api.autograde(assignment, student, force=True, create=True)
            if not result.get("success"):
                errors[student] = (result.get("error") or result.get("log") or "autograde failed").strip()
    return errors


# ---------------------------------------------------------------------------------- the assignment

def assignment_spec(course_root: Path, assignment: str, db_url: str, source: str, release: str) -> dict:
    """What the workers need to know about the assignment: per notebook, its nbgrader cells in release
    order, with the release's source and the instructor's (hidden tests included, from the gradebook)."""
    import nbformat
    from nbgrader.api import Gradebook, MissingEntry

    release_dir = Path(course_root) / release / assignment
    with Gradebook(db_url) as gb:
        try:
            gb_assignment = gb.find_assignment(assignment)
        except MissingEntry:
            gb_assignment = None
        if gb_assignment is None or not gb_assignment.notebooks or not release_dir.is_dir():
            gb_assignment = None
    if gb_assignment is None:  # record the assignment's cells the way nbgrader does: generate_assignment
        api = nbgrader_api(Path(course_root), source=source, release=release, db_url=db_url)
        with quiet_nbgrader():
            require_success(api.generate_assignment(assignment, force=True, create=True),
                            f"generate_assignment {assignment}")
    notebooks = {}
    with Gradebook(db_url) as gb:
        for nb_row in gb.find_assignment(assignment).notebooks:
            path = release_dir / f"{nb_row.name}.ipynb"
            released = nbformat.read(path, as_version=4)
            cells = []
            for cell in released.cells:
                meta = cell.metadata.get("nbgrader", {})
                gid = meta.get("grade_id")
                if not gid:
                    continue
                try:
                    instructor = gb.find_source_cell(gid, nb_row.name, assignment).source
                except MissingEntry:
                    instructor = cell.source
                points = 0.0
                if meta.get("grade"):
                    try:
                        points = float(gb.find_graded_cell(gid, nb_row.name, assignment).max_score)
                    except MissingEntry:
                        points = float(meta.get("points", 0))
                clean_meta = {k: v for k, v in meta.items() if k != "checksum"}
                cells.append({"grade_id": gid, "cell_type": cell.cell_type, "grade": bool(meta.get("grade")),
                              "solution": bool(meta.get("solution")), "locked": bool(meta.get("locked")),
                              "points": points, "release_source": cell.source, "source": instructor,
                              "metadata": clean_meta})
            notebooks[nb_row.name] = {"cells": cells}
    from .runner import check_modules
    modules = sorted({m for nb in notebooks.values() for c in nb["cells"] if c["grade"] for m in check_modules(c["source"])})
    return {"assignment": assignment, "notebooks": dict(sorted(notebooks.items())), "modules": modules}


def submission_hash(folder: Path, spec_text: str) -> str:
    h = hashlib.sha256((RUNNER_VERSION + spec_text).encode())
    if folder.is_dir():
        for path in sorted(folder.rglob("*")):
            if path.is_file() and ".ipynb_checkpoints" not in path.parts:
                h.update(str(path.relative_to(folder)).encode() + b"\0")
                with path.open("rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        h.update(chunk)
    return h.hexdigest()


def zero_result(spec: dict, student: str, message: str, flag: dict | None = None) -> dict:
    notebooks = {}
    for name, nb in spec["notebooks"].items():
        notebooks[name] = {"notebook": name, "status": "error", "messages": [], "flags": [flag] if flag else [],
                           "grades": {c["grade_id"]: {"score": 0.0, "max": c["points"], "messages": []}
                                      for c in nb["cells"] if c["grade"]},
                           "comments": {c["grade_id"]: None for c in nb["cells"] if c["solution"]}}
    return {"student": student, "assignment": spec["assignment"], "notebooks": notebooks, "messages": [message],
            "sandbox": ""}


# ------------------------------------------------------------------------------------------- running

class Progress:
    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.enabled = total, 0, enabled
        self.tty = sys.stderr.isatty()
        self.start = time.perf_counter()

    def update(self, student: str, text: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        bar = "#" * filled + "-" * (width - filled)
        elapsed = time.perf_counter() - self.start
        line = f"[{bar}] {self.done}/{self.total}  {elapsed:4.0f} s  {student}: {text}"
        if self.tty:
            sys.stderr.write("\r\033[K" + line + ("\n" if self.done == self.total else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _die_with_parent():
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001
        pass


class _Worker:
    """A long-lived `python -m autograder.runner --serve` process; replaced when it dies or hangs."""

    def __init__(self, slot: int, state_dir: Path):
        self.slot, self.state_dir = slot, state_dir
        self.proc = None
        self.job = None
        self.uid = None
        self.started = 0.0
        self._buffer = b""

    def _spawn(self) -> None:
        log = open(self.state_dir / f"worker-{self.slot}.log", "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "autograder.runner", "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=log, start_new_session=True,
                                     preexec_fn=_die_with_parent)
        log.close()
        os.set_blocking(self.proc.stdout.fileno(), False)
        self._buffer = b""

    def submit(self, student: str, job_dir: Path) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self._spawn()
        self.job = (student, job_dir)
        self.started = time.monotonic()
        try:
            self.proc.stdin.write(f"{job_dir / 'job.json'}\n".encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass

    def poll(self, limit: float) -> str:
        """running | done | died | overdue"""
        try:
            chunk = self.proc.stdout.read()
        except (OSError, ValueError):
            chunk = None
        if chunk:
            self._buffer += chunk
        if b"done " in self._buffer:
            self._buffer = self._buffer.split(b"\n")[-1] if self._buffer.endswith(b"\n") is False else b""
            return "done"
        if self.proc.poll() is not None:
            self.proc = None
            return "died"
        if time.monotonic() - self.started > limit:
            self.stop()
            return "overdue"
        return "running"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self.proc = None


def _read_timestamp(folder: Path) -> str | None:
    path = folder / "timestamp.txt"
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if not text or len(text) > 64:
        return None
    from nbgrader.utils import parse_utc
    try:
        parse_utc(text)
    except Exception:  # noqa: BLE001
        return None
    return text


def _install_outputs(course_root: Path, assignment: str, student: str, out: Path, folder: Path) -> None:
    """autograded/<student>/<assignment>/ and feedback/<student>/<assignment>/, as nbgrader lays them out."""
    for kind in ("autograded", "feedback"):
        target = course_root / kind / student / assignment
        staged = out / kind
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        if staged.is_dir():
            for item in staged.iterdir():
                shutil.copy2(item, target / item.name)
        if (folder / "timestamp.txt").is_file() and kind == "autograded":
            shutil.copy2(folder / "timestamp.txt", target / "timestamp.txt")


def grade_assignment(course_root: Path, assignment: str, students: list[str] | None = None, *,
                     db_url: str | None = None, source: str = "source", release: str = "release",
                     workers: int | None = None, require_sandbox: bool = False, force: bool = False,
                     limits: sandbox.Limits | None = None, progress: bool = True,
                     log=print) -> list[SubmissionScore]:
    """Grade `students` (default: all who submitted), write feedback; return their scores."""
    course_root = Path(course_root).resolve()
    db_url = db_url or f"sqlite:///{course_root / 'gradebook.db'}"
    limits = limits or sandbox.Limits()
    workers = max(1, workers or os.cpu_count() or 1)
    info = sandbox.detect(course_root)
    log(info.describe())
    if require_sandbox and info.protections_off():
        raise SystemExit("Refusing to grade: --require-sandbox was given and these protections are off: "
                         + "; ".join(info.protections_off()))
    all_students = submitted_students(course_root, assignment)
    students = list(dict.fromkeys(students)) if students else all_students
    unknown = [s for s in students if s not in all_students]
    if unknown:
        log(f"No submission of {assignment} from: {', '.join(unknown)} (looked in {course_root / 'submitted'}).")
        students = [s for s in students if s in all_students]

    spec = assignment_spec(course_root, assignment, db_url, source, release)
    spec_text = json.dumps(spec, sort_keys=True)
    state_dir = course_root / ".grading" / "work" / assignment
    state_dir.mkdir(parents=True, exist_ok=True)
    spec_path = state_dir / "spec.json"
    spec_path.write_text(spec_text)

    done = record.completed(db_url, assignment)
    hashes = {s: submission_hash(course_root / "submitted" / s / assignment, spec_text) for s in students}
    todo = [s for s in students if force or done.get(s) != hashes[s]]
    skipped = len(students) - len(todo)
    if skipped:
        log(f"{skipped} submission(s) already graded and unchanged: skipped (use --force to grade them again).")
    log(f"Grading {len(todo)} submission(s) of {assignment} with {min(workers, max(len(todo), 1))} worker(s) ...")

    # each job gets a uid of its own; a random start keeps concurrent grading runs on one machine apart
    seq = int.from_bytes(os.urandom(2), "little") % sandbox.UID_RANGE
    scratch_base = Path(tempfile.mkdtemp(prefix="rg-", dir="/tmp" if Path("/tmp").is_dir() else None))
    os.chmod(scratch_base, 0o711)
    bar = Progress(len(todo), progress)
    pending = list(todo)
    pool = [_Worker(slot, state_dir) for slot in range(min(workers, max(len(todo), 1)))]
    per_submission = limits.timeout_s * max(1, len(spec["notebooks"])) + 300
    try:
        while pending or any(w.job for w in pool):
            for worker in pool:
                if worker.job is None and pending:
                    student = pending.pop(0)
                    job_dir = state_dir / student
                    if job_dir.exists():
                        shutil.rmtree(job_dir)
                    (job_dir / "out").mkdir(parents=True)
                    seq += 1
                    job = {"student": student, "spec": str(spec_path), "slot": worker.slot, "uid_seq": seq,
                           "submission": str(course_root / "submitted" / student / assignment),
                           "out": str(job_dir / "out"), "scratch": str(scratch_base / str(worker.slot)),
                           "limits": limits.to_dict(), "hide": [str(course_root)],
                           "sandbox": {"tool": info.tool, "as_root": info.as_root, "drop_uid": info.drop_uid},
                           "sandbox_text": info.describe(), "threads": 1 if workers > 1 else 2}
                    (job_dir / "job.json").write_text(json.dumps(job))
                    worker.submit(student, job_dir)
                    worker.uid = sandbox.slot_uid(info, seq)
            for worker in pool:
                if worker.job is None:
                    continue
                state = worker.poll(per_submission)
                if state == "running":
                    continue
                student, job_dir = worker.job
                worker.job = None
                sandbox.kill_uid(worker.uid)
                text = _finish(course_root, assignment, student, job_dir, spec, db_url, hashes[student], state == "overdue")
                bar.update(student, text)
            time.sleep(0.05)
    finally:
        for worker in pool:
            worker.stop()
            sandbox.kill_uid(worker.uid)
        shutil.rmtree(scratch_base, ignore_errors=True)
    rows = read_scores(db_url, assignment, students)
    return rows


def _finish(course_root, assignment, student, job_dir: Path, spec, db_url, content_hash, overdue) -> str:
    out = job_dir / "out"
    folder = course_root / "submitted" / student / assignment
    result_path = out / "result.json"
    result = None
    if result_path.is_file():
        try:
            result = json.loads(result_path.read_text())
        except (OSError, json.JSONDecodeError):
            result = None
    if result is None:
        detail = ""
        for name in ("error.txt",):
            p = out / name
            if p.is_file():
                detail += p.read_text(errors="replace")[-2000:]
        why = "took too long" if overdue else "failed"
        result = zero_result(spec, student, f"The grader itself {why} on this submission, so it scores 0 for now; "
                             "your instructor has been told and will look at it.",
                             {"code": "grader_error", "detail": detail[-1500:] or why})
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
    _install_outputs(course_root, assignment, student, out, folder)
    score, max_score = record.record(db_url, result, content_hash, _read_timestamp(folder))
    flags = record.all_flags(result)
    shutil.rmtree(job_dir, ignore_errors=True)
    return f"{score:g}/{max_score:g}" + (f"  FLAGGED: {', '.join(sorted({f['code'] for f in flags}))}" if flags else "")


# ------------------------------------------------------------------------------ reading and reporting

def read_scores(db_url: str, assignment: str, students: list[str]) -> list[SubmissionScore]:
    from nbgrader.api import Gradebook, MissingEntry

    extra = record.graded_rows(db_url, assignment)
    rows = []
    with Gradebook(db_url) as gb:
        for student in students:
            try:
                sub = gb.find_submission(assignment, student)
            except MissingEntry:
                continue
            by_cell = {}
            for notebook in sub.notebooks:
                for grade in notebook.grades:
                    by_cell[grade.name] = (float(grade.score), float(grade.max_score))
            info = extra.get((assignment, student), {})
            flags = [f"{f['code']}: {f['detail']}" for f in info.get("flags", [])]
            messages = info.get("messages", [])
            rows.append(SubmissionScore(student, assignment, float(sub.score), float(sub.max_score), by_cell,
                                        "\n".join(messages), flags, messages))
    return rows


def export_csv(db_url: str, path: Path) -> Path:
    """nbgrader's CSV export, with two more columns: flags and messages."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins import CsvExportPlugin

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".nbgrader.csv")
    with Gradebook(db_url) as gb:
        CsvExportPlugin(to=str(tmp)).export(gb)
    extra = record.graded_rows(db_url)
    with tmp.open(newline="") as fh:
        reader = csv.DictReader(fh)
        fields = list(reader.fieldnames or []) + ["flags", "messages"]
        rows = list(reader)
    for row in rows:
        info = extra.get((row.get("assignment"), row.get("student_id")), {})
        row["flags"] = "; ".join(f"{f['code']} ({f['notebook']}: {f['detail']})" for f in info.get("flags", []))
        row["messages"] = " | ".join(m.replace("\n", " ") for m in info.get("messages", []))
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    tmp.unlink()
    return path


def format_table(rows: list[SubmissionScore]) -> str:
    """The score table: one block per assignment, then each submission's flags and messages."""
    if not rows:
        return "(no graded submissions)"
    assignments = list(dict.fromkeys(r.assignment for r in rows))
    if len(assignments) > 1:
        return "\n\n".join(_format_one([r for r in rows if r.assignment == a]) for a in assignments)
    return _format_one(rows)


def _format_one(rows: list[SubmissionScore]) -> str:
    cells = list(dict.fromkeys(name for row in rows for name in row.by_cell))
    header = ["student", "assignment", "score"] + cells + ["flags"]
    lines = [[r.student, r.assignment, f"{r.score:g} / {r.max_score:g}"]
             + [f"{r.by_cell[c][0]:g}/{r.by_cell[c][1]:g}" if c in r.by_cell else "-" for c in cells]
             + [", ".join(sorted({f.split(':')[0] for f in r.flags})) or "-"] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    fmt = lambda cols: "  ".join(str(c).ljust(w) for c, w in zip(cols, widths)).rstrip()  # noqa: E731
    out = [fmt(header), fmt(["-" * w for w in widths])] + [fmt(l) for l in lines]
    notes = []
    for r in rows:
        for f in r.flags:
            notes.append(f"  {r.student} / {r.assignment}  FLAG {f}")
        for m in r.messages:
            notes.append(f"  {r.student} / {r.assignment}  {m.splitlines()[0] if m else ''}")
    if notes:
        out += ["", "Flags and messages:"] + notes
    return "\n".join(out)
