"""Grade one submission: the work of one worker process.

    python -m autograder.grading.worker --serve     (started by autograder.grading.pool; reads job paths)
    python -m autograder.grading.worker JOB.json    (one job, for debugging)

Each notebook goes through one short pipeline, like nbgrader's preprocessors:
read -> flag -> assemble -> execute -> judge -> write.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import shutil
import sys
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from ..judges import kernel_runs, launch_evidence
from ..registry import CHECKS
from . import intake, late, sandbox, warm
from .assemble import build_execution
from .execute import execute
from .flags import static_patches, structural_flags
from .jobs import CellGrade, Flag, Job, NotebookResult, SubmissionResult
from .judge import NOT_JUDGED, STOPPED_CELL, judge_cell, read_channel
from .kernel_sandbox import SandboxedRunner
from .read import Unreadable, find_notebooks, nbgrader_meta, normalized, read_notebook
from .records import RecordCollector
from .screen import screen
from .spec import (
    AssignmentSpec,
    CheckCall,
    NotebookSpec,
    check_modules,
    hidden_lines,
)
from .write import ALL_HIDDEN, write_autograded, write_feedback

STOP_MESSAGES = {
    "died": "The notebook's kernel stopped at the cell shown (it crashed, ran out of memory, or your code called "
    "os._exit / killed the process). Tests after that point could not run and score 0.",
    "crashed": "The Python kernel crashed while cell {cells} of the graded notebook ran (a segmentation fault, an "
    "abort, os._exit or running out of memory). That cell was skipped and the rest of the notebook ran "
    "in a fresh kernel.",
    "deadline": "Your notebook ran longer than the {timeout} s the grader allows for the whole notebook, so it was "
    "stopped. Tests after that point could not run and score 0. Look for an infinite loop or a very slow cell.",
}


@dataclass
class Plan:
    """The assembled run: the notebook, where its graded test and probe cells are, what each probe calls."""

    notebook: nbformat.NotebookNode
    # grade_id -> its concrete CheckCalls (hidden cases drawn), None: untrusted
    calls: dict[str, list[CheckCall] | None]
    untrusted: list[str]
    test_index: dict[str, int]
    records: RecordCollector  # takes each test cell's records out of the kernel's reach as the cell ends


# ------------------------------------------------------------------------------------ the pipeline


def grade_notebook(
    name: str, path: Path | None, spec_nb: NotebookSpec, job: Job, scratch: Path, out_dir: Path
) -> tuple[NotebookResult, NotebookNode | None]:
    """Everything about one notebook of the submission: scores per grade_id, messages, flags; and the
    autograded notebook written (None when there was no notebook to grade)."""
    result = empty_result(name, spec_nb)
    nb = read(name, path, result)
    if nb is None:
        return result, None
    assert path is not None  # read() found the notebook
    state = flag(nb, spec_nb, result, own_modules(path.parent))
    plan = assemble(nb, spec_nb, state, result, job, scratch)
    report = execute(plan.notebook, scratch, job, plan.records)
    explain_stops(report, job, result)
    with kernel_runs.using(kernel_runner(job, warm.current())):  # the kernels' texts run in this submission's sandbox
        judge(plan, report, spec_nb, result)
    return result, write(plan, report, nb, spec_nb, result, job, out_dir)


def kernel_runner(job: Job, factory: warm.Factory | None = None) -> SandboxedRunner:
    """Where this submission's kernel texts run and compile (its uid, its limits; the worker's warm factory runs
    them where there is one)."""
    info = sandbox.SandboxInfo(job.sandbox.tool, job.sandbox.as_root, job.sandbox.drop_uid)
    return SandboxedRunner(info, job.limits, job.kernel_uid, job.threads, [Path(p) for p in job.hide], factory)


def empty_result(name: str, spec_nb: NotebookSpec) -> NotebookResult:
    result = NotebookResult(notebook=name)
    for c in spec_nb.cells:
        if c.grade:
            result.grades[c.grade_id] = CellGrade(score=0.0, max=float(c.points))
        if c.solution:
            result.comments[c.grade_id] = None
    return result


def read(name: str, path: Path | None, result: NotebookResult) -> NotebookNode | None:
    if path is None:
        result.status = "missing"
        result.messages.append(
            f"{name}.ipynb is missing from your submission, so none of its tests could run "
            "(0 points). Submit the notebook under that name."
        )
        return None
    try:
        return read_notebook(path, notes=result.messages)
    except Unreadable as exc:
        result.status = "unreadable"
        result.messages.append(str(exc) + " Its tests could not run (0 points).")
        return None


OWN_FILE_LIMIT = 64 * 2**20  # the learner's files larger than this do not travel with the notebook (grade_submission)


def own_modules(folder: Path) -> dict[str, str]:
    """The learner's own .py files next to the notebook (module name -> source): they travel with it into the
    sandbox, where its cells can import them, so the screen reads them too."""
    out = {}
    for item in sorted(folder.iterdir()):
        if (
            item.suffix == ".py"
            and item.stem.isidentifier()
            and item.is_file()
            and item.stat().st_size <= OWN_FILE_LIMIT
        ):
            out[item.stem] = item.read_text(errors="replace")
    return out


def flag(
    nb: NotebookNode, spec_nb: NotebookSpec, result: NotebookResult, modules: dict[str, str] | None = None
) -> dict[str, str]:
    """Structural and static flags; answer cells left as released get "No response". Returns how each
    grade_id was found (present, deleted, stripped, missing)."""
    flags, state = structural_flags(nb, spec_nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            for target in static_patches(cell.source):
                flags.append(Flag("patched", f"the learner's code assigns to {target}"))
    result.flags += flags
    answered = {nbgrader_meta(c).get("grade_id"): c for c in nb.cells if nbgrader_meta(c).get("grade_id")}
    for spec_cell in spec_nb.cells:
        if spec_cell.grade_id and spec_cell.solution:
            cell = answered.get(spec_cell.grade_id)
            if cell is None or normalized(cell.source) == normalized(spec_cell.release_source):
                result.comments[spec_cell.grade_id] = "No response."
    result.flags += screen(nb, spec_nb, CHECKS, modules)
    if not any(c.cell_type == "code" and c.source.strip() for c in nb.cells):
        result.messages.append(f"{result.notebook}.ipynb has no code in it: nothing to grade (0 points).")
    return state


def assemble(
    nb: NotebookNode, spec_nb: NotebookSpec, state: dict[str, str], result: NotebookResult, job: Job, scratch: Path
) -> Plan:
    grade_cells = [c for c in spec_nb.cells if c.grade]
    calls: dict[str, list[CheckCall] | None] = {}
    untrusted: list[str] = []
    for c in grade_cells:
        if not c.has_calls:
            continue
        try:
            if c.untrusted is not None:
                raise ValueError(c.untrusted)
            calls[c.grade_id] = [
                replace(
                    call, params=CHECKS[call.check].drawn(call.params, hidden_rng(job, result.notebook, c.grade_id, k))
                )
                for k, call in enumerate(c.calls)
            ]
        except ValueError as exc:  # unreadable, or draw= on a check without a drawer
            calls[c.grade_id] = None
            untrusted.append(c.grade_id)
            result.flags.append(
                Flag("grader_error", f"{c.grade_id}: the instructor's test cell cannot be graded: {exc}")
            )
    modules = sorted({m for c in grade_cells for m in check_modules(c.source)})
    channel = scratch / "probe"
    channel.mkdir(parents=True, exist_ok=True)
    run_nb, test_index = build_execution(nb, spec_nb, state, calls, modules, str(channel))
    tests = {index: (gid, len(calls[gid] or [])) for gid, index in test_index.items() if calls.get(gid)}
    # the records' folder is in the worker's folder, beside what the sandbox holds, never in it
    records = RecordCollector(channel, Path(job.scratch) / f"{scratch.name}.records", tests)
    return Plan(run_nb, calls, untrusted, test_index, records)


def hidden_rng(job: Job, notebook: str, gid: str, k: int) -> random.Random:
    """The generator of one check call's hidden cases: from the gradebook's secret and the submission's
    content (job.draw_key), so a regrade draws the same cases and a changed submission new ones."""
    return random.Random(f"{job.draw_key}/{notebook}/{gid}/{k}")


def explain_stops(report: dict, job: Job, result: NotebookResult) -> None:
    status, stopped = report["status"], report["stopped"]
    if stopped and stopped.startswith("kernel_start"):
        result.messages.append(
            "The grader could not start Python for your notebook, so no test ran (0 points). "
            "Your instructor has the details."
        )
        result.flags.append(Flag("grader_error", stopped[:500]))
    elif stopped:
        reason = "died" if stopped.startswith("died") else "deadline"
        where = next((i for i, s in status.items() if s in ("died", "timeout")), None)
        result.messages.append(
            STOP_MESSAGES[reason].format(timeout=job.limits.timeout_s)
            + (f" (cell {where} of the graded notebook)" if where is not None else "")
        )
    where = next((i for i, s in status.items() if s in ("died", "timeout")), None) if stopped else None
    crashed = [i for i in report.get("recovered", []) if i != where]  # the cell the run stopped at is said above
    if crashed:
        result.messages.append(STOP_MESSAGES["crashed"].format(cells=", ".join(map(str, crashed))))
    timed = [i for i, s in status.items() if s == "timeout"]
    if timed:
        result.messages.append(
            f"{len(timed)} cell(s) ran longer than {job.limits.cell_timeout_s} s and were interrupted."
        )
    if report["truncated"]:
        result.messages.append("Some cells printed more output than the grader keeps; the rest of it was dropped.")


def _shown_grade(calls: list[CheckCall], results: list, points: float, shown: int | None) -> CellGrade:
    """The cell judged on the check calls the learner's copy shows alone: what the learner could have run."""
    if not shown:
        return CellGrade(0.0, 0.0, [ALL_HIDDEN])  # out of 0: the shown total leaves it out
    score, msgs, _ = judge_cell(calls[:shown], results[:shown], points, visible=shown)
    return CellGrade(score, points, msgs)


def judge(plan: Plan, report: dict, spec_nb: NotebookSpec, result: NotebookResult) -> None:
    """Each graded test cell's score, decided here by the judges from the probes' data."""
    status = report["status"]
    by_id = {c.grade_id: c for c in spec_nb.cells if c.grade_id}
    patched = set()
    for gid, tindex in plan.test_index.items():
        points = float(by_id[gid].points)
        if gid in plan.untrusted:
            result.grades[gid] = CellGrade(
                0.0, points, ["This test could not be graded; your instructor has been told."]
            )
            result.shown[gid] = result.grades[gid]
            continue
        calls = plan.calls[gid]
        assert calls is not None  # untrusted cells were scored above
        shown_grade = None
        if status[tindex] == "not_run":
            score, msgs = 0.0, ["This test did not run: the notebook stopped before reaching it."]
        elif status[tindex] == "died":
            hints = list(dict.fromkeys(CHECKS[c.check].crash_hint for c in calls if CHECKS[c.check].crash_hint))
            score, msgs = (
                0.0,
                [
                    "Your code crashed the Python kernel while this test ran (0 points for it); the rest of "
                    "the notebook was graded in a fresh kernel." + "".join(f" Hint: {h}." for h in hints)
                ],
            )
        else:
            results, found = read_channel(plan.records.collected, gid, len(calls))
            refused = plan.records.refused.get(gid, set())
            results = [NOT_JUDGED if k in refused else r for k, r in enumerate(results)]
            patched.update(found)
            shown = by_id[gid].shown_calls
            # the stand-in kernels' launches the judges read: the grader's log, of this cell's launches only
            with launch_evidence.using(plan.records.launch_log, gid):
                score, msgs, _ = judge_cell(calls, results, points, visible=shown)
                shown_grade = _shown_grade(calls, results, points, shown)
            if status[tindex] in ("timeout", "error"):  # no honest test cell ends so: its probes' work was disturbed
                score, shown_grade = 0.0, CellGrade(0.0, shown_grade.max, shown_grade.messages)
                msgs.append(STOPPED_CELL[status[tindex]])
        result.grades[gid] = CellGrade(score, points, msgs)
        result.shown[gid] = shown_grade or result.grades[gid]
    result.flags += [Flag("patched", f"replaced in the kernel: {p}") for p in sorted(patched)]
    result.flags += channel_flags(plan.records)


def channel_flags(records: RecordCollector) -> list[Flag]:
    """What the learner's process did to the probe channel: a record written outside its probe's own call (never
    judged), or the channel read."""
    codes = {"forged": "record_forged", "read": "reaches_for_grader"}
    return [Flag(codes[p.kind], f"the probe channel: {p.describe()}") for p in records.problems]


def write(
    plan: Plan, report: dict, nb: NotebookNode, spec_nb: NotebookSpec, result: NotebookResult, job: Job, out_dir: Path
) -> NotebookNode:
    if os.environ.get("REVAD_DEBUG"):
        nbformat.write(plan.notebook, out_dir / f"{result.notebook}.run.ipynb")
        (out_dir / f"{result.notebook}.status.json").write_text(json.dumps(report, default=str))
    by_id = {c.grade_id: c for c in spec_nb.cells if c.grade_id}
    secrets = [line for c in spec_nb.cells if c.grade for line in hidden_lines(c.source)]
    return write_autograded(
        plan.notebook, nb, result, by_id, plan.test_index, report, secrets, job.limits.cell_timeout_s, out_dir
    )


# ------------------------------------------------------------------------------------ one submission


def grade_submission(job: Job) -> SubmissionResult:
    start = time.monotonic()
    spec = AssignmentSpec.from_json(Path(job.spec).read_text())
    for module in spec.modules:
        importlib.import_module(module)
    submitted, out_dir = Path(job.submission), Path(job.out)
    taken = take_in(submitted, Path(job.scratch) / ".intake")
    taken.add_left_out(job.left_out)
    folder = taken.folder  # from here on only the copy is read: it holds no links
    found, messages = find_notebooks(folder, {name: set(nb.by_id) for name, nb in spec.notebooks.items()})
    result = SubmissionResult(
        job.student, spec.assignment, messages=taken.messages() + messages, sandbox=job.sandbox_text
    )
    if taken.WHOLE in taken.refused:
        pass  # the submission folder itself was a link: its message says so
    elif not folder.is_dir() or not any(folder.iterdir()):
        result.messages.append("Your submission is empty: no files were handed in (0 points).")
    elif not any(p for p in found.values()):
        listing = ", ".join(sorted(p.name for p in folder.iterdir())[:10]) or "nothing"
        result.messages.append(
            f"None of the assignment's notebooks ({', '.join(n + '.ipynb' for n in spec.notebooks)}) "
            f"is in your submission (found: {listing})."
        )
    info = sandbox.SandboxInfo(job.sandbox.tool, job.sandbox.as_root, job.sandbox.drop_uid)
    factory = warm.factory_for(info, job.limits, job.threads, [Path(p) for p in job.hide])
    if runs_kernels(spec):  # its kernel runners start while the notebook runs
        kernel_runner(job, factory).prestart()
    for name, spec_nb in spec.notebooks.items():
        # a warm kernel's scratch folder lives where its factory's sandbox holds it; the records never do
        scratch = (factory.kernels_dir if factory else Path(job.scratch)) / name.replace("/", "_")[:40]
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)
        (scratch / "work").mkdir(parents=True)
        scratch.chmod(0o700)
        if found[name] is not None:
            for item in folder.iterdir():  # the learner's own files travel with the notebook
                if item.is_file() and item.stat().st_size <= OWN_FILE_LIMIT and item.suffix != ".ipynb":
                    shutil.copy2(item, scratch / "work" / item.name)
        try:
            nb_result, graded = grade_notebook(name, found[name], spec_nb, job, scratch, out_dir)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
            shutil.rmtree(Path(job.scratch) / f"{scratch.name}.records", ignore_errors=True)
        nb_result.flags += [Flag(**f) for f in taken.flags()]
        if found[name] is None and taken.refuses(f"{name}.ipynb"):
            nb_result.status, nb_result.messages = "refused", []  # not "missing": the learner's message says why
        result.notebooks[name] = nb_result
        if job.seconds_late > 0:
            charge_lateness(job, nb_result)
        write_feedback(name, nb_result, graded, out_dir, result.messages)
    shutil.rmtree(taken.folder, ignore_errors=True)
    result.seconds = round(time.monotonic() - start, 2)
    return result


def charge_lateness(job: Job, nb_result: NotebookResult) -> None:
    """The course's late penalty on the notebook's score, said in its feedback (nbgrader's plugin decides it)."""
    deadline = late.Deadline(job.seconds_late, job.due)
    nb_result.late_penalty = late.penalty(job.late_config, job.student, nb_result.score, job.seconds_late)
    nb_result.messages.insert(0, late.message(deadline, nb_result.late_penalty, nb_result.score))


def runs_kernels(spec: AssignmentSpec) -> bool:
    """Whether a check of the assignment runs a kernel's text (its probe records the kernel: triton_kernels)."""
    return any(
        CHECKS[call.check].probe.__name__ == "record_kernel"
        for notebook in spec.notebooks.values()
        for cell in notebook.cells
        for call in cell.calls
        if call.check in CHECKS
    )


def take_in(submitted: Path, copy: Path) -> intake.Intake:
    """A copy of the submission made without following a single link (the grader runs as root)."""
    shutil.rmtree(copy, ignore_errors=True)
    try:
        return intake.snapshot(submitted.parent.parent, submitted.parent.name, submitted.name, copy)
    except intake.SubmissionRefused as exc:
        return intake.Intake.refused_whole(copy, str(exc))


def run_job(job_path: str) -> int:
    job = Job.read(job_path)
    out = Path(job.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        result = grade_submission(job)
    except Exception:  # noqa: BLE001 -- the parent records a zero with this, and grading goes on
        (out / "error.txt").write_text(traceback.format_exc())
        return 1
    tmp = out / "result.json.tmp"
    tmp.write_text(result.to_json())
    os.replace(tmp, out / "result.json")
    return 0


def serve() -> int:
    """A long-lived worker: one job file path per line on stdin, "done <rc> <path>" on stdout when graded.
    (Importing nbclient, nbconvert and torch costs seconds: pay it once per worker, not per submission.)"""
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stray prints from libraries go to the log, not into the protocol
    import nbclient  # noqa: F401  -- warm up
    import nbconvert  # noqa: F401
    import torch  # noqa: F401

    protocol.write("ready\n")
    for line in sys.stdin:
        path = line.strip()
        if not path:
            continue
        rc = run_job(path)
        protocol.write(f"done {rc} {path}\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--serve":
        return serve()
    return run_job(argv[0])


if __name__ == "__main__":
    sys.exit(main())
