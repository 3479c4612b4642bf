"""Notebook 02's judges: the hidden cases' drawers and the helpers every judge of the engine shares."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ...feedback import CheckFailed, close, mismatch
from ...judges import answers
from ...probes.nb02_cases import (
    forms,
)
from ...registry import ProbeData

# ---------------------------------------------------------------- hidden cases, drawn at grading time


def _value(rng, low=-3.0, high=3.0) -> float:
    return round(rng.uniform(low, high), 3)


def draw_pairs(rng: random.Random, count: int) -> dict:
    """(a, b) pairs: mostly random, one with a == b, one with a zero numerator."""
    pairs = [(_value(rng), _value(rng, 0.2, 3.0) * rng.choice((-1, 1))) for _ in range(count)]
    if count >= 3:
        pairs[1] = (pairs[1][1], pairs[1][1])
        pairs[2] = (0.0, pairs[2][1])
    return {"cases": pairs}


def draw_pow_cases(rng: random.Random, count: int) -> dict:
    """A positive base with any exponent, negative bases with whole exponents (no complex results), a zero base."""
    cases = [
        (_value(rng, 0.2, 3.0), _value(rng, -2.0, 2.0))
        if i % 2 == 0
        else (_value(rng, -3.0, -0.2), float(rng.randint(1, 3)))
        for i in range(count)
    ]
    if count >= 3:  # a zero base with a positive exponent: 0 for every exponent, so d/db is 0 (not undefined)
        cases[2] = (0.0, _value(rng, 0.5, 3.0))
    return {"cases": cases}


def draw_tanh_points(rng: random.Random, count: int) -> dict:
    return {"at": [_value(rng, -3.0, 3.0) for _ in range(count)]}


_ARITY = {"smooth": 2, "tanh_squared": 1, "exp_scaled": 2, "swapped_product": 2, "flat": 2, "tiny": 1}


def draw_gradient_check_cases(rng: random.Random, count: int) -> dict:
    names = list(_ARITY)
    return {
        "cases": [(name, [_value(rng, -2.0, 2.0) for _ in range(_ARITY[name])]) for name in (names * count)[:count]]
    }


def draw_neuron_cases(rng: random.Random, count: int) -> dict:
    cases = []
    for _ in range(count):
        n = rng.randint(1, 4)
        cases.append(
            (
                [_value(rng, -1.5, 1.5) for _ in range(n)],
                _value(rng, -0.5, 0.5),
                [_value(rng, -2.0, 2.0) for _ in range(n)],
                _value(rng, -1.0, 1.0),
            )
        )
    return {"cases": cases}


_SEED_FORMS = (
    ("tanh", "half_square"),
    ("published_tanh", "half_square"),
    ("tanh", "published_cost"),
    ("published_tanh", "published_cost"),
)


def draw_seed_neuron_cases(rng: random.Random, count: int) -> dict:
    """Seed 002's neuron with other weights: each pairing of the right and the published activation and cost."""
    return {
        "cases": [
            (*_SEED_FORMS[i % len(_SEED_FORMS)], _value(rng, -1.5, 1.5), _value(rng, -1.0, 1.0)) for i in range(count)
        ]
    }


# gradient_check's test functions on tensors: the true derivatives come from autograd on these.
TORCH_CHECK_FUNCTIONS: dict[str, Callable] = {
    "smooth": lambda t: torch.sin(t[0]) * t[1] + t[1] ** 3,
    "tanh_squared": lambda t: torch.tanh(t[0]),
    "exp_scaled": lambda t: torch.exp(t[0]) * t[1],
    "swapped_product": lambda t: t[0] * t[1],
    "flat": lambda t: 0.0 * t[0] + 0.0 * t[1] + 3.0,
    "tiny": lambda t: 1e-6 * t[0] ** 2,
}


def describe(what: str, got: float, expected: float) -> str:
    if math.isnan(expected) and not math.isnan(got):
        return f"{what} should not exist here (PyTorch gives nan), but yours is a finite number."
    if math.isnan(got):
        return f"{what} is nan, but it exists here."
    return mismatch(what, got, expected)


def agree_with(got: float, expected: float, rtol: float = 1e-9, atol: float = 1e-12) -> bool:
    if math.isnan(expected) or math.isnan(got):
        return math.isnan(expected) and math.isnan(got)
    if math.isinf(expected) or math.isinf(got):
        return got == expected
    return close(got, expected, rtol=rtol, atol=atol)


def fail_with(problems: list[str], hints: list[str], intro: str = "Some numbers are wrong:") -> None:
    if problems:
        text = "\n".join(f"  - {p}" for p in problems[:6])
        more = f"\n  ... and {len(problems) - 6} more" if len(problems) > 6 else ""
        extra = "".join(f"\nHint: {h}" for h in dict.fromkeys(hints))
        raise CheckFailed(f"{intro}\n{text}{more}{extra}")


def _reference_form(fn: Callable, a: float, b: float) -> tuple[float, list[float]]:
    x = torch.tensor(float(a), dtype=torch.float64, requires_grad=True)
    y = torch.tensor(float(b), dtype=torch.float64, requires_grad=True)
    out = fn(x, y, float(a), float(b))
    grads = torch.autograd.grad(out, [x, y], allow_unused=True)
    return float(out.detach()), [0.0 if g is None else float(g) for g in grads]


def _op_hints(op: str, text: str, a: float, b: float, which: int, got: float, expected: float) -> list[str]:
    hints = []
    if op == "mul" and text == "x * y" and which == 0 and agree_with(got, a) and not agree_with(a, b):
        hints.append("∂(x·y)/∂x is the *other* factor: record y's value for x and x's value for y.")
    if op == "truediv" and text in ("x / y", "a / y") and which == 1 and b != 0:
        if agree_with(got, -a / b):
            hints.append("∂(x/y)/∂y = −x/y²: the denominator is squared.")
        elif agree_with(got, -1 / (b * b)):
            hints.append("∂(x/y)/∂y = −x/y²: you left out the factor x.")
    if op == "pow" and which == 0 and a != 0:
        if agree_with(got, b * a**b):
            hints.append("The exponent drops by one: ∂(a^b)/∂a = b·a^(b−1).")
        elif agree_with(got, a ** (b - 1)):
            hints.append("∂(a^b)/∂a = b·a^(b−1): multiply by the exponent b.")
    if op == "pow" and which == 1 and a < 0 and not math.isnan(got) and agree_with(got, a**b * math.log(-a), rtol=1e-7):
        hints.append(
            "That is a^b·ln|a|. For a < 0 the derivative with respect to the exponent does not exist "
            "(a^b is not defined for the b around it): record math.nan, as PyTorch does. ln|a| gives a "
            "finite number that is wrong."
        )
    if op == "pow" and which == 1 and a > 0 and math.isnan(got):
        hints.append("Here a > 0, so ln a exists: ∂(a^b)/∂b = a^b·ln a.")
    if op == "pow" and which == 1 and a == 0 and b > 0 and got != 0:
        hints.append(
            "At a = 0 and b > 0, a^b is 0 for every b nearby, so it does not change with b: "
            "the derivative with respect to the exponent is 0 (a·ln a → 0), not nan."
        )
    if op == "tanh" and which == 0:
        t = math.tanh(a)
        if agree_with(got, t * t):
            hints.append(
                "That is tanh², a classic slip (a published tutorial makes it). Derive the derivative "
                "again from tanh = sinh/cosh with the quotient rule, and only then write it in terms of "
                "the output t; your gradient_check (section 5) will confirm it."
            )
        elif agree_with(got, 1 - a * a):
            hints.append(
                "That formula is written with the input a; the derivative of tanh is a formula in the output t = "
                "tanh(a)."
            )
    return hints


def judge_op(op: str, data: ProbeData, cases: Sequence[Any]) -> None:
    problems, hints = [], []
    for case, results in zip(cases, answers.per_case(data, cases)):
        a, b = (case, 1.0) if op == "tanh" else case
        expressions = forms(op, a, b)
        for (text, fn), got in zip(expressions, answers.per_case(results, expressions)):
            answers.entry(got, text, ("form", "value", "grads"))
            answers.number(got["value"], "value"), answers.numbers(got["grads"], "grads", 2)
            if got["form"] != text:
                raise CheckFailed(
                    answers.MISMATCH.format(why=f"an answer for {got['form']!r} where {text!r} was asked")
                )
            value, grads = _reference_form(fn, a, b)
            where = f"`{text}` at x = {a}" + ("" if op == "tanh" else f", y = {b}")
            if not agree_with(got["value"], value, rtol=1e-12):
                problems.append(describe(f"The value of {where}", got["value"], value))
                continue
            for which, symbol in enumerate(("x", "y")):
                if op == "tanh" and which == 1:
                    continue
                if not agree_with(got["grads"][which], grads[which]):
                    problems.append(
                        describe(
                            f"The derivative of {where} with respect to {symbol}", got["grads"][which], grads[which]
                        )
                    )
                    hints += _op_hints(op, text, a, b, which, got["grads"][which], grads[which])
    fail_with(problems, hints)
