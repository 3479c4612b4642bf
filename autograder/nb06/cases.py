"""Notebook 06's cases: the inputs its probes feed and its judges regenerate, from the same params."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from ..feedback import CheckFailed

# how far a peak in a later chunk stands above the first chunk: exp of the gap overflows the dtype, so a maximum
# never updated after the first chunk (its exp(x - m) of the peak) cannot give a finite answer
LATE_PEAK_GAP = {"float64": 800.0, "float32": 100.0, "bfloat16": 100.0, "float16": 100.0}


def row_case(seed: int, rows: int, V: int, dtype: str, peak_at: int, chunk: int | None = None) -> torch.Tensor:
    """Logits whose every row peaks at column peak_at, one above the row's other values (so where the maximum is
    decides whether a running sum must be rescaled, and every entry still counts in the sum); in float32, a peak of
    100 in the first row, whose exp overflows float32. With `chunk`, a peak past the first chunk stands
    LATE_PEAK_GAP above it."""
    gen = torch.Generator().manual_seed(1_000_003 * seed + 1009 * rows + 31 * V + peak_at)
    x = 3 * torch.randn(rows, V, generator=gen, dtype=torch.float64)
    x[:, peak_at] = x.max(dim=1).values + 1.0
    if chunk is not None and peak_at >= chunk:
        x[:, peak_at] = x[:, :chunk].max(dim=1).values + LATE_PEAK_GAP[dtype]
    if dtype != "float64":
        x[0, peak_at] = max(100.0, float(x[0, peak_at]))
    return x.to(getattr(torch, dtype))


def ce_targets(seed: int, rows: int, V: int, ignored: int, ignore_index: int) -> torch.Tensor:
    """Targets of the rows (int64); `ignored` rows, anywhere in the batch, carry ignore_index (not only the last
    ones: a kernel that reads the row before or after its own must meet an ignored row's neighbours)."""
    gen = torch.Generator().manual_seed(7919 * seed + 13 * rows + V)
    target = torch.randint(0, V, (rows,), generator=gen)
    if ignored:
        target[torch.randperm(rows, generator=gen)[:ignored]] = ignore_index
    return target


def column_chunks(x: torch.Tensor, chunk: int) -> Iterator[torch.Tensor]:
    """x's columns `chunk` at a time (the last chunk narrower where chunk does not divide the width), as a kernel's
    loop loads them: once, each chunk valid until the next arrives. They share one buffer, so a list of them holds
    the last chunk's values over and over."""
    buffer = torch.empty(x.shape[0], chunk, dtype=x.dtype)
    for start in range(0, x.shape[1], chunk):
        width = min(chunk, x.shape[1] - start)
        buffer[:, :width] = x[:, start : start + width]
        yield buffer[:, :width]


# --------------------------------------------------------------------------------------------- memory and bf16


def saved_problem(name: str, seed: int) -> tuple[Any, tuple[torch.Tensor, ...]]:
    """(fn, inputs) of a problem whose saved memory the learner's measurement reports. Seed 0: the cases the notebook
    shows. Any other seed (drawn from the grader's secret): a problem of the same idea drawn so that recognising the
    shown ones does not help (`drawn_saved_problem`)."""
    if seed:
        return drawn_saved_problem(name, seed)
    gen = torch.Generator().manual_seed(97 * seed + len(name))
    rows, V, dtype = 6, 40, torch.float64
    x = torch.randn(rows, V, generator=gen, dtype=dtype, requires_grad=True)
    if name == "exp":  # saves its output: new memory
        return torch.exp, (x,)
    if name == "mul":  # saves both inputs: nothing new
        y = torch.randn(rows, V, generator=gen, dtype=dtype, requires_grad=True)
        return torch.mul, (x, y)
    if name == "view_sin":  # saves a view of its input: the input's memory
        return (lambda t: torch.sin(t.view(-1))), (x,)
    if name == "composed_ce":  # log_softmax's output, saved by log_softmax and by nll_loss: one N×V block
        target = torch.randint(0, V, (rows,), generator=gen)
        return (lambda z: torch.nn.functional.nll_loss(torch.log_softmax(z, dim=1), target)), (x,)
    raise CheckFailed(f"no saved-memory problem named {name!r}")


# What a hidden problem is, for the judge's messages (its sizes and functions are drawn).
DRAWN_SAVED = {
    "exp": "an element-wise function that saves its output, on some columns of x",
    "mul": "a product of some columns of x and a new tensor",
    "view_sin": "sin of a view of x, beside an element-wise function of some columns of x",
    "composed_ce": "log_softmax and nll_loss on some columns of the logits",
}


def drawn_saved_problem(name: str, seed: int) -> tuple[Any, tuple[torch.Tensor, ...]]:
    """A hidden problem for `name`'s idea. Its inputs' sizes and dtype are drawn, and so are its function and the
    width of the new memory it keeps (k columns of V, 0 < k < V: no function of the inputs' sizes); every one keeps
    new memory beside what the idea is about (an input or a view of it, memory saved twice), and returns a scalar.
    So a table of the shown answers, a constant (0 for the problems whose shown answer is 0), or formulas fitted to
    the shown problems and picked by recognising them, all fail: only a measurement answers."""
    gen = torch.Generator().manual_seed(97 * seed + sum(map(ord, name)))  # each problem its own draw
    draw = lambda low, high: int(torch.randint(low, high, (), generator=gen))  # noqa: E731
    rows, V = draw(2, 13), draw(8, 97)
    dtype = (torch.float32, torch.float64)[draw(0, 2)]
    k = draw(1, V)  # the columns of new memory
    saves_output = (torch.exp, torch.sigmoid, torch.tanh)[draw(0, 3)]
    x = torch.randn(rows, V, generator=gen, dtype=dtype, requires_grad=True)
    if name == "exp":  # saves its output: new memory
        return (lambda t: saves_output(t[:, :k]).sum()), (x,)
    if name == "mul":  # saves a view of an input (nothing new) and a new tensor
        y = torch.randn(rows, V, generator=gen, dtype=dtype, requires_grad=True)
        scale = 0.5 + draw(0, 8)
        return (lambda a, b: (a[:, :k] * (b[:, :k] * scale)).sum()), (x, y)
    if name == "view_sin":  # saves a view of its input (nothing new), and an output (new)
        view = (lambda t: t.view(-1), lambda t: t.t(), lambda t: t[1:])[draw(0, 3)]
        return (lambda t: torch.sin(view(t)).sum() + saves_output(t[:, :k]).sum()), (x,)
    if name == "composed_ce":  # log_softmax's output on k columns, saved by log_softmax and by nll_loss: once
        target = torch.randint(0, k, (rows,), generator=gen)
        return (lambda z: torch.nn.functional.nll_loss(torch.log_softmax(z[:, :k], dim=1), target)), (x,)
    raise CheckFailed(f"no saved-memory problem named {name!r}")


SAVED_PROBLEMS = ("exp", "mul", "view_sin", "composed_ce")


def bf16_case(seed: int, rows: int, V: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(31337 * seed + V)
    x = (3 * torch.randn(rows, V, generator=gen)).to(torch.bfloat16)
    return x, torch.randint(0, V, (rows,), generator=gen)


def linear_case(seed: int, N: int, D: int, V: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(4099 * seed + 31 * N + V)
    hidden = torch.randn(N, D, generator=gen, dtype=torch.float64)
    weight = torch.randn(V, D, generator=gen, dtype=torch.float64) / D**0.5
    return hidden, weight, torch.randint(0, V, (N,), generator=gen)


# How many numbers per row the judge looks through for the per-row results a kernel wrote: enough for every honest
# layout (a loss and a log-sum-exp per row, in one buffer or two, per chunk), too few for a table of guesses.
LEFT_PER_ROW = 16
