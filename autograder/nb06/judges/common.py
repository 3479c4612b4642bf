"""Notebook 06's judges: what the kernel and Function judges share."""

from __future__ import annotations

import math

import torch

from ...judges.verdict import Part


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
