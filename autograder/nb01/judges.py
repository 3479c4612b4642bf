"""Judges of notebook 01 (reverse accumulation by hand).

References come from PyTorch's own autograd and forward-mode AD on the same trace, never from
hand-written derivative formulas, so this module does not contain the exercises' answers.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

import torch

from ..feedback import CheckFailed, close, mismatch
from ..judges import answers
from ..registry import ProbeData, decides
from .cases import (
    SCALAR_FUNCTIONS,
    TRACE,
    gradient_problem,
    jacobian_problem,
)

# ---------------------------------------------------------------- hidden cases, drawn at grading time


def _value(rng, low=-3.0, high=3.0) -> float:
    return round(rng.uniform(low, high), 3)


def draw_points(rng: random.Random, count: int) -> dict:
    return {"at": [(_value(rng), _value(rng)) for _ in range(count)]}


def draw_tangent_cases(rng: random.Random, count: int) -> dict:
    return {"cases": [(_value(rng), _value(rng), _value(rng, -2, 2), _value(rng, -2, 2)) for _ in range(count)]}


def draw_jacobian_cases(rng: random.Random, count: int) -> dict:
    return {"cases": [(rng.randint(1, 8), rng.randint(1, 7), rng.randrange(10**6)) for _ in range(count)]}


def draw_difference_cases(rng: random.Random, count: int) -> dict:
    names = sorted(SCALAR_FUNCTIONS)
    return {
        "cases": [(names[i % len(names)], _value(rng, -2, 2), rng.choice((1e-2, 1e-3, 1e-4))) for i in range(count)]
    }


def draw_gradient_cases(rng: random.Random, count: int) -> dict:
    sizes = (1, 10, 40, 3, 25)
    return {"cases": [(sizes[i % len(sizes)], rng.randrange(10**6)) for i in range(count)]}


def _trace(x1, x2):
    w1, w2 = x1, x2
    w3 = w1 * w2
    w4 = torch.sin(w1)
    return w1, w2, w3, w4, w3 + w4


def reference_primal(x1: float, x2: float) -> dict:
    values = _trace(torch.tensor(x1, dtype=torch.float64), torch.tensor(x2, dtype=torch.float64))
    return {k: float(v) for k, v in zip(TRACE, values)}


def reference_adjoints(x1: float, x2: float) -> dict:
    w1 = torch.tensor(x1, dtype=torch.float64, requires_grad=True)
    w2 = torch.tensor(x2, dtype=torch.float64, requires_grad=True)
    values = _trace(w1, w2)
    grads = torch.autograd.grad(values[-1], values)
    return {k: float(g) for k, g in zip(TRACE, grads)}


def reference_tangents(x1: float, x2: float, dx1: float, dx2: float) -> dict:
    t = lambda v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
    _, tangents = torch.func.jvp(_trace, (t(x1), t(x2)), (t(dx1), t(dx2)))
    return {k: float(v) for k, v in zip(TRACE, tangents)}


def _compare(got: dict, expected: dict, call: str, symbol: str) -> list[str]:
    return [
        mismatch(f"{symbol}{k[1]} from `{call}`", got[k], expected[k])
        for k in TRACE
        if not close(got[k], expected[k], rtol=1e-9, atol=1e-12)
    ]


def _fail(problems: list[str], hints: list[str]) -> None:
    if problems:
        text = "\n".join(f"  - {p}" for p in problems)
        extra = "".join(f"\nHint: {h}" for h in dict.fromkeys(hints))
        raise CheckFailed(f"Some entries are wrong:\n{text}{extra}")


def _traces(data, cases) -> list[dict]:
    """One dict of five numbers per case, or a failure."""
    return [
        {k: answers.number(v, f"entry {k} of answer {i}") for k, v in answers.entry(got, f"answer {i}", TRACE).items()}
        for i, got in enumerate(answers.per_case(data, cases))
    ]


@decides("check_primal_trace", draw=draw_points)
def judge_primal_trace(data: ProbeData, at: Sequence[Any]) -> None:
    problems, hints = [], []
    for (x1, x2), got in zip(at, _traces(data, at)):
        expected = reference_primal(x1, x2)
        problems += _compare(got, expected, f"primal_trace({x1}, {x2})", "w")
        if not close(got["w4"], expected["w4"]) and close(got["w4"], math.sin(math.radians(x1))):
            hints.append("math.sin takes radians: do not convert x1 to degrees.")
        if not close(got["w5"], expected["w5"]) and close(got["w5"], got["w3"] + got["w4"]):
            hints.append("w5 = w3 + w4 is right given your w3 and w4: fix those first.")
    _fail(problems, hints)


@decides("check_adjoint_trace", draw=draw_points)
def judge_adjoint_trace(data: ProbeData, at: Sequence[Any]) -> None:
    problems, hints = [], []
    for (x1, x2), got in zip(at, _traces(data, at)):
        expected = reference_adjoints(x1, x2)
        problems += _compare(got, expected, f"adjoint_trace({x1}, {x2})", "w̄")
        if not close(got["w5"], 1.0):
            hints.append("The reverse sweep starts from the seed w̄5 = ∂f/∂w5, and f is w5 itself.")
        w1_wrong = not close(got["w1"], expected["w1"])
        only_one_path = close(got["w1"], got["w3"] * x2) or close(got["w1"], got["w4"] * math.cos(x1))
        if w1_wrong and only_one_path:
            hints.append(
                "w1 is used by two operations (the product w3 and the sine w4). Its adjoint "
                "collects one contribution along each path out of w1: add them up."
            )
        if w1_wrong and close(got["w1"], expected["w2"]) and close(got["w2"], expected["w1"]):
            hints.append("It looks as if w̄1 and w̄2 are swapped: ∂w3/∂w2 is the *other* factor of the product.")
    _fail(problems, hints)


@decides("check_tangent_trace", draw=draw_tangent_cases)
def judge_tangent_trace(data: ProbeData, cases: Sequence[Any]) -> None:
    problems, hints = [], []
    for (x1, x2, dx1, dx2), got in zip(cases, _traces(data, cases)):
        expected = reference_tangents(x1, x2, dx1, dx2)
        problems += _compare(got, expected, f"tangent_trace({x1}, {x2}, {dx1}, {dx2})", "ẇ")
        if not close(got["w4"], expected["w4"]) and close(got["w4"], math.cos(x1)):
            hints.append("ẇ4 is the chain rule: the local derivative cos(w1) times the tangent ẇ1 coming in.")
        if not close(got["w3"], expected["w3"]) and (close(got["w3"], dx1 * x2) or close(got["w3"], x1 * dx2)):
            hints.append("The product rule has two terms: ẇ3 = ẇ1·w2 + w1·ẇ2.")
    _fail(problems, hints)


@decides("check_jacobian_reverse", draw=draw_jacobian_cases)
def judge_jacobian_reverse(data: ProbeData, cases: Sequence[Any]) -> None:
    for i, ((n, m, seed), got) in enumerate(zip(cases, answers.per_case(data, cases))):
        A, x = jacobian_problem(n, m, seed)
        answers.entry(got, f"answer {i}", ("J", "sweeps", "forward_sweeps", "library_sweeps"))
        J, _ = answers.tensor(got["J"], "J"), answers.integer(got["sweeps"], "sweeps")
        (
            answers.integer(got["forward_sweeps"], "forward_sweeps"),
            answers.integer(got["library_sweeps"], "library_sweeps"),
        )
        call = f"jacobian_reverse(F, x) for F: R^{n} -> R^{m}"
        if tuple(J.shape) != (m, n):
            hint = (
                " It looks transposed: row i of the Jacobian holds the gradient of output i."
                if tuple(J.shape) == (n, m)
                else ""
            )
            raise CheckFailed(
                f"`{call}` returned shape {tuple(J.shape)}; a Jacobian of R^{n} -> R^{m} "
                f"has one row per output and one column per input: ({m}, {n}).{hint}"
            )
        expected = A * (1 - torch.tanh(x) ** 2)
        err = (J - expected).abs()
        if not torch.allclose(J, expected, rtol=1e-9, atol=1e-12):
            rows = sorted({int(i) for i in torch.nonzero(err > 1e-9 + 1e-9 * expected.abs())[:, 0]})
            raise CheckFailed(
                f"`{call}` has wrong entries in rows {rows[:8]} (largest error {float(err.max()):.3g}). "
                "Row i should be the gradient of output i: a reverse sweep seeded with the i-th unit vector."
            )
        _judge_sweeps(got, call, m)


def _judge_sweeps(got, call: str, m: int) -> None:
    """Right numbers: were they made the way the exercise asks (m reverse sweeps written by hand)?"""
    if got["sweeps"] == 0 and got.get("forward_sweeps", 0):
        raise CheckFailed(
            f"`{call}` gave the right numbers with forward mode (Jacobian-vector products, as "
            "torch.func.jacfwd and torch.func.jvp compute them) and no reverse sweep. "
            "This exercise is about reverse mode: one torch.autograd.grad call per output, seeded "
            "with a unit vector."
        )
    if got["forward_sweeps"]:
        raise CheckFailed(
            f"`{call}` gave the right numbers with forward mode (Jacobian-vector products, as "
            "torch.func.jacfwd and torch.func.jvp compute them), whatever reverse sweeps it ran beside. "
            "This exercise is about reverse mode: one torch.autograd.grad call per output, seeded "
            "with a unit vector, and its rows are the Jacobian."
        )
    if got["library_sweeps"]:
        raise CheckFailed(
            f"`{call}` gave the right numbers with torch.autograd.functional.jacobian, which runs the "
            "reverse sweeps for you. This exercise asks you to write them: one torch.autograd.grad "
            "call per output, seeded with a unit vector."
        )
    if got["sweeps"] == 0:
        raise CheckFailed(
            f"`{call}` gave the right numbers without any sweep through F. This exercise "
            "is about reverse mode: one torch.autograd.grad call per output, seeded with a unit vector."
        )
    if got["sweeps"] < m:
        raise CheckFailed(
            f"`{call}` gave the right numbers with {got['sweeps']} vectorised reverse sweep(s) for "
            f"m = {m} outputs: all rows at once, as torch.func.jacrev or is_grads_batched=True do. "
            "That is reverse mode done for you; this exercise asks you to write the sweeps: one "
            "torch.autograd.grad call per output, seeded with a unit vector."
        )
    if got["sweeps"] > m:
        raise CheckFailed(
            f"`{call}` ran {got['sweeps']} reverse sweeps; reverse mode needs only m = {m}, one per output."
        )


DERIVATIVES = {"sin": math.cos, "exp": math.exp, "cube": lambda x: 3 * x**2}


@decides("check_central_difference", draw=draw_difference_cases)
def judge_central_difference(data: ProbeData, cases: Sequence[Any]) -> None:
    for i, ((fname, x, h), got) in enumerate(zip(cases, answers.per_case(data, cases))):
        answers.entry(got, f"answer {i}", ("value", "evaluations"))
        answers.number(got["value"], "value"), answers.integer(got["evaluations"], "evaluations")
        f, df = SCALAR_FUNCTIONS[fname], DERIVATIVES[fname]
        value, call = got["value"], f"central_difference({fname}, {x}, h={h})"
        central = (f(x + h) - f(x - h)) / (2 * h)
        if close(value, central, rtol=1e-10, atol=1e-14):
            if got["evaluations"] != 2:
                raise CheckFailed(
                    f"`{call}` evaluated f {got['evaluations']} times; a central difference needs exactly 2."
                )
            continue
        hints = []
        if close(value, (f(x + h) - f(x)) / h, rtol=1e-10) or close(value, (f(x) - f(x - h)) / h, rtol=1e-10):
            hints.append("That is a one-sided difference. The central difference steps both ways, to x + h and x - h.")
        elif close(value, 2 * central, rtol=1e-10):
            hints.append("The two evaluation points are 2h apart: divide by 2h.")
        elif close(value, -central, rtol=1e-10):
            hints.append("Subtract f(x - h) from f(x + h), not the other way round.")
        raise CheckFailed(mismatch(f"`{call}`", value, df(x)) + "".join(f"\nHint: {hint}" for hint in hints))


@decides("check_numerical_gradient", draw=draw_gradient_cases)
def judge_numerical_gradient(data: ProbeData, cases: Sequence[Any]) -> None:
    for i, ((n, seed), got) in enumerate(zip(cases, answers.per_case(data, cases))):
        answers.entry(got, f"answer {i}", ("gradient", "evaluations", "x_changed", "sweeps", "forward_sweeps"))
        answers.tensor(got["gradient"], "gradient"), answers.integer(got["evaluations"], "evaluations")
        answers.flag(got["x_changed"], "x_changed")
        answers.integer(got["sweeps"], "sweeps"), answers.integer(got["forward_sweeps"], "forward_sweeps")
        a, x = gradient_problem(n, seed)
        g, call = got["gradient"], f"numerical_gradient(f, x, h=1e-6) with x of shape ({n},)"
        if got["x_changed"]:
            raise CheckFailed(
                f"`{call}` changed x. Perturb a copy (x.clone()) so the caller's tensor is left as it was."
            )
        if tuple(g.shape) != (n,):
            raise CheckFailed(f"`{call}` returned shape {tuple(g.shape)}; the gradient has x's shape ({n},).")
        if got["sweeps"] or got["forward_sweeps"]:
            mode = "reverse" if got["sweeps"] else "forward"
            raise CheckFailed(
                f"`{call}` differentiated f with autograd ({mode} mode through f: torch.autograd.grad, "
                ".backward(), torch.func, ...), which gives the exact gradient. This exercise is the "
                "numerical gradient: central differences, two evaluations of f per input, no autograd."
            )
        expected = a * torch.cos(x) + x
        err = (g - expected).abs()
        bad = torch.nonzero(err > 1e-6 * (1 + expected.abs())).flatten().tolist()
        if bad:
            hint = ""
            if torch.allclose(g, 2 * expected, rtol=1e-5):
                hint = "\nHint: every entry is twice too large: the two evaluation points are 2h apart."
            raise CheckFailed(
                f"`{call}` is wrong in entries {bad[:10]} (largest error {float(err.max()):.3g}). "
                f"Entry i should be (f(x + h·e_i) - f(x - h·e_i)) / 2h.{hint}"
            )
        if got["evaluations"] != 2 * n:
            raise CheckFailed(
                f"`{call}` evaluated f {got['evaluations']} times; the central-difference gradient "
                f"needs exactly 2n = {2 * n} evaluations (two per input)."
            )
