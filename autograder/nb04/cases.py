"""Notebook 04's cases: the inputs its probes feed and its judges regenerate, from the same params."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

DT = torch.float64


# ------------------------------------------------------------------------------------------ inputs


def _gen(seed: int, salt: int) -> torch.Generator:
    return torch.Generator().manual_seed(7919 * int(seed) + salt)


def _randn(gen, *shape):
    return torch.randn(shape, generator=gen, dtype=DT)  # a tuple: () makes a 0-dimensional tensor


def _away_from_zero(gen, *shape, low=0.2):
    magnitude = low + torch.rand(shape, generator=gen, dtype=DT)
    return torch.where(torch.rand(shape, generator=gen, dtype=DT) < 0.5, -magnitude, magnitude)


_SHAPES = [(5,), (2, 3), (3, 1, 2), (4,)]


def case_list(cases: int | Sequence[Any], standard: list) -> list:
    """The cases a check is asked for: `cases=N` names the first N standard ones (cycled); a list names
    them itself (hidden tests draw them: other shapes, other sizes)."""
    if isinstance(cases, int) and not isinstance(cases, bool):
        return [standard[k % len(standard)] for k in range(cases)]
    if not isinstance(cases, (list, tuple)):
        raise TypeError(f"cases should be a number or a list of cases, not {type(cases).__name__}")
    return [tuple(c) if isinstance(c, (list, tuple)) else c for c in cases]


def shapes_of(cases: int | Sequence[Any]) -> list[tuple]:
    """The input shapes of an elementwise check's cases."""
    return [tuple(int(n) for n in shape) for shape in case_list(cases, _SHAPES)]


def inputs_elementwise(
    seed: int, case: int, kinks: bool = False, shape: tuple | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(x, g): an input (away from 0 when the function has a kink there) and a grad_output. `shape`:
    the case's own shape (else the standard one of that case number)."""
    gen = _gen(seed, 11 + case)
    shape = _SHAPES[case % len(_SHAPES)] if shape is None else tuple(shape)
    x = _away_from_zero(gen, *shape) if kinks else _randn(gen, *shape)
    return x, _randn(gen, *shape)


_LINEAR_CASES = [(4, 3, 2, True), (3, 2, 3, False), (6, 4, 4, True), (2, 5, 1, True)]


def linear_cases(cases: int | Sequence[Any]) -> list[tuple]:
    """(batch, in, out, bias) of each FunctionalLinear case."""
    return [(int(b), int(i), int(o), bool(bias)) for b, i, o, bias in case_list(cases, _LINEAR_CASES)]


def inputs_linear(
    seed: int, case: int, sizes: tuple | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """(x, weight, bias or None, grad_output) for FunctionalLinear: weight is (out, in), as in nn.Linear.
    `sizes`: the case's own (batch, in, out, bias) (else the standard one of that case number)."""
    batch, fan_in, fan_out, bias = _LINEAR_CASES[case % len(_LINEAR_CASES)] if sizes is None else sizes
    gen = _gen(seed, 31 + case)
    x, w = _randn(gen, batch, fan_in), _randn(gen, fan_out, fan_in)
    b = _randn(gen, fan_out) if bias else None
    return x, w, b, _randn(gen, batch, fan_out)


def inputs_training(seed: int, fan_in: int, fan_out: int, batch: int = 32) -> tuple[torch.Tensor, ...]:
    """A generated regression problem and a starting point: (X, Y, weight0, bias0)."""
    gen = _gen(seed, 57)
    X = _randn(gen, batch, fan_in)
    true_w, true_b = _randn(gen, fan_out, fan_in), _randn(gen, fan_out)
    Y = X @ true_w.T + true_b + 0.1 * _randn(gen, batch, fan_out)
    return X, Y, 0.1 * _randn(gen, fan_out, fan_in), torch.zeros(fan_out, dtype=DT)


HVP_PROBLEMS = ("cubic", "sin_product", "quadratic_form", "log_sum_exp", "rosenbrock", "tanh_layer")


def hvp_problem(
    name: str, seed: int = 0, size: int = 4
) -> tuple[Callable[[torch.Tensor], torch.Tensor], torch.Tensor, torch.Tensor]:
    """(f, x, v): a scalar test function of one tensor of `size` entries, a point and a direction (from `seed`)."""
    if name not in HVP_PROBLEMS:
        raise ValueError(f"unknown hvp problem {name!r}")
    gen = _gen(sum(map(ord, name)) + 100_003 * int(seed), 3)
    n = int(size)
    x, v, A = _randn(gen, n), _randn(gen, n), _randn(gen, n, n)
    problems = {
        "cubic": lambda x: (x**3).sum(),
        "sin_product": lambda x: torch.sin(x).prod(),
        "quadratic_form": lambda x: x @ (A @ x),  # A is not symmetric: the Hessian is A + Aᵀ
        "log_sum_exp": lambda x: torch.logsumexp(x, dim=0),
        "rosenbrock": lambda x: (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum(),
        "tanh_layer": lambda x: torch.tanh(A @ x).pow(2).sum(),
    }
    return problems[name], x, v


TWICE_OUTPUTS = {"tanh": 1, "sinh": 3}  # Sinh returns (sinh x, e^x, e^-x): intermediates as outputs


# ------------------------------------------------------------------------------------------ torch.library.custom_op

OPCHECK_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor")
