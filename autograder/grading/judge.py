"""Deciding the scores, here in the grader's process: the probes' data read back from the run, each
check's judge run with the parameters of the instructor's copy of the test cell."""
from __future__ import annotations

import base64
import io
import math

from ..feedback import CheckFailed
from ..registry import CHECKS
from .assemble import PROBE_MIME

MAX_PROBE_BYTES = 32 * 2**20


def load_payload(cell) -> tuple[dict | None, str | None]:
    import torch
    blobs = [o["data"][PROBE_MIME] for o in cell.get("outputs", [])
             if o.get("output_type") == "display_data" and PROBE_MIME in o.get("data", {})]
    if not blobs:
        return None, None
    blob = blobs[-1]
    if not isinstance(blob, str) or len(blob) > MAX_PROBE_BYTES:
        return None, "The values your code returned were too large to record."
    try:
        payload = torch.load(io.BytesIO(base64.b64decode(blob)), weights_only=True, map_location="cpu")
    except Exception as exc:  # noqa: BLE001
        return None, f"The values your code returned could not be read back ({type(exc).__name__})."
    if not isinstance(payload, dict) or not isinstance(payload.get("results"), list):
        return None, "The values your code returned could not be read back."
    return payload, None


def judge_cell(calls: list, payload: dict | None, points: float, visible: int | None = None) -> tuple[float, list[str], bool]:
    """(score, messages, failed) for one test cell, decided here from the probe's data. `visible`: how many of
    the calls the learner's copy shows; the reports of the others are labelled as the hidden tests'."""
    messages, failed, partial = [], False, []
    results = payload["results"] if payload else []
    for i, (check, expr, params) in enumerate(calls):
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
                    hidden = visible is not None and i >= visible
                    messages.append(("Hidden tests (cases your notebook does not show) — " if hidden else "") + str(report()))
    if failed:
        return 0.0, list(dict.fromkeys(messages)), True
    if partial:
        return max(0.0, min(points, min(partial))), messages, False
    return float(points), messages, False
