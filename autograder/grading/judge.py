"""Deciding the scores, here in the grader's process: the probes' data read back from the run, each
check's judge run with the parameters of the instructor's copy of the test cell."""

from __future__ import annotations

import math
from pathlib import Path

from ..feedback import CheckFailed
from ..probes.channel import RECORD_MAX, ProbeRecord
from ..registry import CHECKS, FAILED

MAX_PROBE_BYTES = RECORD_MAX  # a probe sends no larger record (a larger one becomes a message that says so)
NOT_RECORDED = {
    FAILED: "This test did not record what your code returned: the notebook stopped before it "
    "finished, or something in your notebook removed the grader's record."
}

NOT_JUDGED = {
    FAILED: "The grader did not judge this test's record: the probe channel was written outside the check's own "
    "call (a record before or after its test cell, a second one, or one changed or removed). Your instructor has "
    "been told."
}
STOPPED_CELL = {
    "timeout": "Your code was stopped while this test ran: it took longer than the grader allows, so the test "
    "scores 0.",
    "error": "This test cell stopped with an error before its checks finished, so it scores 0. (The checks turn "
    "whatever your code raises into a message: an error here means something disturbed them.)",
}


def load_record(path: Path) -> tuple[ProbeRecord | None, str | None]:
    """(record, None) from one probe's record, as the grader kept it, or (None, why not)."""
    import torch

    try:
        size = path.stat().st_size
    except OSError:
        return None, None
    if size > MAX_PROBE_BYTES:
        return None, "The values your code returned were too large to record."
    try:
        payload = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as exc:  # noqa: BLE001
        return None, f"The values your code returned could not be read back ({type(exc).__name__})."
    try:
        return ProbeRecord.from_payload(payload), None
    except ValueError:
        return None, "The values your code returned could not be read back."


def read_channel(channel: Path, gid: str, count: int) -> tuple[list, list[str]]:
    """Each check call's data (a failure's message when its file is missing or unreadable), and what
    the probes found replaced in the kernel."""
    results, patched = [], []
    for k in range(count):
        record, problem = load_record(channel / ProbeRecord.file_name(gid, k))
        if record is None or not record.is_for(gid, k):
            results.append({FAILED: problem} if problem else NOT_RECORDED)
            continue
        results.append(record.data)
        patched += record.patched
    return results, patched


def judge_cell(calls: list, results: list, points: float, visible: int | None = None) -> tuple[float, list[str], bool]:
    """(score, messages, failed) for one test cell, decided here from its probes' data. `visible`: how many of
    the calls the learner's copy shows; the reports of the others are labelled as the hidden tests'."""
    messages, failed, partial, reports = [], False, [], []
    for i, call in enumerate(calls):
        check, expr, params = call.check, call.expr, call.params
        if i >= len(results):
            failed = True
            continue
        try:
            verdict = CHECKS[check].decide(results[i], **params)
        except CheckFailed as exc:
            failed = True
            messages.append(str(exc))
        except RecursionError:
            failed = True
            messages.append("The values your code returned could not be checked (they are nested too deeply).")
        except Exception as exc:  # noqa: BLE001 -- malformed data: the learner's values, not the grader, are at fault
            failed = True
            messages.append(
                f"The values your code returned for `{expr}` have an unexpected form, so they could not be "
                f"checked ({type(exc).__name__}: {str(exc)[:200]})."
            )
        else:
            if isinstance(verdict, (int, float)) and not isinstance(verdict, bool) and math.isfinite(verdict):
                partial.append(cell_score(verdict, points))
                # A partial verdict (nb03's Verdict) explains itself: keep its report for the feedback.
                if callable(getattr(verdict, "report", None)) and not getattr(verdict, "passed", True):
                    reports.append((visible is not None and i >= visible, verdict))
    if failed:
        return 0.0, list(dict.fromkeys(messages)), True
    if partial:
        score = max(0.0, min(points, min(partial)))
        return score, messages + partial_reports(reports), False
    return float(points), messages, False


def cell_score(verdict: float, points: float) -> float:
    """The cell's score from a verdict: the fraction it earned of its own points, times the cell's points (its
    nbgrader metadata: the one place points are written). A test cell without `points=` judges out of the
    check's default and still gives a right answer the cell's full points."""
    out_of = getattr(verdict, "points", None)
    if out_of:
        return float(verdict) / float(out_of) * points
    return float(verdict)


HIDDEN_LABEL = "Hidden tests (cases your notebook does not show)"


def partial_reports(reports: list) -> list[str]:
    """The reports of a partly right cell's verdicts (the cell's score, the lowest, is said where the feedback
    shows the cell): the hidden tests' reports labelled, and a hidden report that fails exactly the parts a shown
    one fails said in one line rather than repeated."""
    out = []
    shown_failures = {_failing(v) for hidden, v in reports if not hidden}
    for hidden, verdict in reports:
        if not hidden:
            out.append(verdict.report())
        elif _failing(verdict) in shown_failures:
            out.append(
                f"{HIDDEN_LABEL}: {verdict.title} fails the same parts on them as on the cases above "
                f"({float(verdict):g} of {verdict.points:g} points)."
            )
        else:
            out.append(f"{HIDDEN_LABEL} — {verdict.report()}")
    return out


def _failing(verdict) -> tuple:
    return tuple(sorted(p.name for p in verdict.parts if p.passed is False))
