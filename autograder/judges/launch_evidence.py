"""What a Function's kernels did, as the launcher logged it (autograder/probes/launches.py): never what the learner's
process says of them.

A probe names, for each forward and each backward it ran, the numbers its stand-in launches were answered with.
Those numbers are the learner's process's word; what they lead to is not: while a submission is graded the log is
the grader's (grading/launch_service.py), it holds what each launch stored, and a number that is no launch's, or
another cell's, leads nowhere.

    with launch_evidence.using(log, cell="test_fused_ce"):   # the grader's log, while a submission's cell is judged
        launches = launch_evidence.of(numbers, {"ce_backward_kernel"})
        launch_evidence.produced(launches, gradient, layout)   # handed back what one of them stored?

Anywhere else (a learner's notebook, the self-check, the tests) the log is the process's own (`launches.LOCAL`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from ..probes.launches import DTYPES, LOCAL, Launch, LaunchLog

_installed: list[tuple[LaunchLog, str | None]] = []


@contextmanager
def using(log: LaunchLog | None, cell: str | None) -> Iterator[None]:
    """The judges in the body read `log`, and only the launches that came while `cell` ran."""
    _installed.append((log if log is not None else LaunchLog(), cell))
    try:
        yield
    finally:
        _installed.pop()


def of(numbers: Any, names: set[str]) -> list[Launch]:
    """The launches of `names` these numbers lead to, in order, each once."""
    log, cell = _installed[-1] if _installed else (LOCAL, None)
    return log.of(numbers, names, cell)


def window(record: Any, name: str) -> list:
    """The launch numbers a probe's record names for window `name` ("forward", "backward")."""
    named = record.get("launch_ids") if isinstance(record, dict) else None
    numbers = named.get(name) if isinstance(named, dict) else None
    return numbers if isinstance(numbers, list) else []


def produced(launches: Sequence[Launch], value: Any, layout: Any, times: Any = None) -> bool:
    """Whether `value` (a tensor the Function handed back, as the probe recorded it: float64, with `layout` its dtype
    and strides) is, bit for bit, what one of the launches stored, read from the first entry of a view it wrote with
    those strides; with `times`, what one stored times `times` (a kernel's gradient that backward scaled by
    grad_output with PyTorch is the kernel's)."""
    if not isinstance(value, torch.Tensor) or not isinstance(layout, dict):
        return False
    dtype, stride = DTYPES.get(layout.get("dtype")), layout.get("stride")  # type: ignore[arg-type]
    if dtype is None or not isinstance(stride, list) or len(stride) != value.dim():
        return False
    if not all(type(s) is int and s >= 0 for s in stride):
        return False
    reach = sum((n - 1) * s for n, s in zip(value.shape, stride)) + 1 if value.numel() else 0
    for launch in launches:
        for memory in launch.stored:
            if memory.dtype != dtype or memory.numel() < reach:
                continue
            view = torch.as_strided(memory, tuple(value.shape), tuple(stride))
            try:
                candidate = view * times if times is not None else view
            except RuntimeError:  # shapes that do not broadcast: not this launch's
                continue
            if candidate.shape == value.shape and torch.equal(candidate.to(torch.float64), value.to(torch.float64)):
                return True
    return False


def left(launches: Sequence[Launch], size: int, most: int) -> torch.Tensor:
    """The values the launches wrote in views of at most `size` entries (per-row buffers, chunks of logits), launch
    by launch, as one float64 tensor: at most `most` + 1 of them (one more than a judge accepts, so that it can tell
    too many)."""
    values = [t for launch in launches for t in launch.written if t.numel() <= size]
    return torch.cat([torch.empty(0, dtype=torch.float64), *values])[: most + 1]


def as_dtype(value: Any, dtype_name: Any) -> Any:
    """A recorded float64 tensor back in the dtype it was recorded from (exact: it was widened)."""
    dtype = DTYPES.get(dtype_name) if isinstance(dtype_name, str) else None
    return value.to(dtype) if isinstance(value, torch.Tensor) and dtype is not None else value


def reading(launches: Sequence[Launch], rows: torch.Tensor, rtol: float = 0.0) -> list[Launch]:
    """The launches that computed from rows of `rows` only (a row kernel's logits): each row they read equal to one
    of its rows (within `rtol` of each entry; 0: bit for bit). A launch of the course's kernel on numbers other than
    the case's -- PyTorch's per-row losses handed in as one-column logits, rows made up to give chosen results -- is
    not the case's."""
    table = rows.detach().to(torch.float64)
    if table.dim() != 2:
        return []
    tolerance = rtol * table.abs()
    kept = []
    for launch in launches:
        reads = launch.read
        if reads and all(r.dim() == 2 and r.shape[1] == table.shape[1] for r in reads):
            if all(bool(((r[:, None, :] - table[None]).abs() <= tolerance[None]).all(-1).any(-1).all()) for r in reads):
                kept.append(launch)
    return kept
