"""Deciding the scores, here in the grader's process: the probes' data read back from the run, each
check's judge run with the parameters of the instructor's copy of the test cell."""
from __future__ import annotations

import math
from pathlib import Path

from ..feedback import CheckFailed
from ..registry import CHECKS, FAILED

MAX_PROBE_BYTES = 32 * 2**20
NOT_RECORDED = {FAILED: "This test did not record what your code returned: the notebook stopped before it "
                        "finished, or something in your notebook removed the grader's record."}


def load_payload(path: Path) -> tuple[dict | None, str | None]:
    """(payload, None) from one probe's channel file, or (None, why not)."""
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
    if not isinstance(payload, dict) or not isinstance(payload.get("results"), list) or len(payload["results"]) != 1:
        return None, "The values your code returned could not be read back."
    return payload, None


def read_channel(channel: Path, gid: str, count: int) -> tuple[list, list[str]]:
    """Each check call's data (a failure's message when its file is missing or unreadable), and what
    the probes found replaced in the kernel."""
    results, patched = [], []
    for k in range(count):
        payload, problem = load_payload(channel / f"{gid}.{k}.pt")
        if payload is None or payload.get("cell") != gid or payload.get("call") != k:
            results.append({FAILED: problem} if problem else NOT_RECORDED)
            continue
        results.append(payload["results"][0])
        patched += [p for p in payload.get("patched", []) if isinstance(p, str)]
    return results, patched


def judge_cell(calls: list, results: list, points: float) -> tuple[float, list[str], bool]:
    """(score, messages, failed) for one test cell, decided here from its probes' data."""
    messages, failed, partial = [], False, []
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
            messages.append(f"The values your code returned for `{expr}` have an unexpected form, so they could not be "
                            f"checked ({type(exc).__name__}: {str(exc)[:200]}).")
        else:
            if isinstance(verdict, (int, float)) and not isinstance(verdict, bool) and math.isfinite(verdict):
                partial.append(float(verdict))
                # A partial verdict (nb03's Verdict) explains itself: keep its report for the feedback.
                report = getattr(verdict, "report", None)
                if callable(report) and not getattr(verdict, "passed", True):
                    messages.append(str(report()))
    if failed:
        return 0.0, list(dict.fromkeys(messages)), True
    if partial:
        return max(0.0, min(points, min(partial))), messages, False
    return float(points), messages, False
