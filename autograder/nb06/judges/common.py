"""Notebook 06's judges: what the kernel and Function judges share."""

from __future__ import annotations

import math
from typing import Any

import torch

from ...course_kernels import STAND_INS
from ...judges import launch_evidence
from ...judges.verdict import Part
from ...probes.launches import Launch


def titled_parts(titles: dict[str, str]) -> dict[str, Part]:
    """A check's parts, each with the title its report shows."""
    return {name: Part(name, title=title) for name, title in titles.items()}


def off_rows(values: torch.Tensor, expected: torch.Tensor, tol: float) -> tuple[int, str] | None:
    bad = ~torch.isclose(values, expected, rtol=tol, atol=tol)
    if not bad.any():
        return None
    row = int(bad.nonzero()[0])
    value = float(values[row])
    return row, "NaN" if math.isnan(value) else "infinite" if math.isinf(value) else "off"


def launched(entry: dict, window: str) -> list[Launch]:
    """The course kernels' launches the record names for `window` ("forward", "backward"), as the launcher logged
    them (autograder/judges/launch_evidence.py)."""
    return launch_evidence.of(launch_evidence.window(entry, window), set(STAND_INS))


def launched_the_gradient(entry: dict, grad: Any, times: torch.Tensor | None = None) -> int:
    """How many launches backward made, when the gradient it handed back is, bit for bit, what one of them stored
    (or that times `times`: a kernel launched with scale 1/counted, its gradient scaled by grad_output in PyTorch);
    0 when it is not (a launch for show beside PyTorch's gradient)."""
    launches, layout = launched(entry, "backward"), entry.get("grad_layout")
    if launch_evidence.produced(launches, grad, layout):
        return len(launches)
    if times is not None and launch_evidence.produced(launches, grad, layout, times=times):
        return len(launches)
    return 0
