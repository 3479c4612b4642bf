"""Judges of notebook 03 (custom autograd Functions).

For each Function exercise, what it must compute with native torch operations only (reference
gradients come from PyTorch's autograd on them: no backward formula of the exercises is written
here), and hints for known mistakes; then the judges of the other checks.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

import torch

from ..feedback import CheckFailed
from ..judges import answers
from ..judges.function import FunctionReference, add_reference
from ..registry import ProbeData, decides
from .cases import (
    GRADCHECK_PROBLEMS,
    gradcheck_problem,
    jacobian_problem,
    training_problem,
)

# ---------------------------------------------------------------- hidden cases, drawn at grading time


def draw_jacobian_problems(rng: random.Random, count: int) -> dict:
    names = ["product_sine", "matrix_vector", "sum_of_squares", "softmax"]
    return {"problems": (names * count)[:count], "seed": rng.randrange(1, 10**6)}


def draw_gradcheck_problems(rng: random.Random, count: int) -> dict:
    names = list(GRADCHECK_PROBLEMS)
    rng.shuffle(names)
    return {"problems": (names * count)[:count], "seed": rng.randrange(1, 10**6)}


def draw_training_cases(rng: random.Random, count: int) -> dict:
    cases = []
    for _ in range(count):
        rows, cols = rng.randint(2, 5), rng.randint(2, 6)
        cases.append(
            (
                rng.randrange(1, 10**6),
                (rows, cols),
                rng.randint(0, cols),
                rng.choice((0.5, 1.0, 2.0)),
                rng.randint(5, 15),
            )
        )
    return {"cases": cases}


def _linear_reference(x, W, b=None):
    return torch.addmm(b, x, W) if b is not None else torch.matmul(x, W)


def _hint_untransposed_weight(args, grad_outputs, index, got, expected):
    """grad of X computed with W where W-transpose was needed (only tells apart when W is square)."""
    if index != 0 or args[1].shape[0] != args[1].shape[1]:
        return None
    if got.shape == expected.shape and torch.allclose(got, grad_outputs[0] @ args[1], rtol=1e-6, atol=1e-9):
        return "the gradient for x multiplies grad_output by W itself: Y = XW, so check which factor is transposed."
    return None


def _kill_reference(x, n):
    columns = torch.arange(x.shape[1])
    return torch.where(columns >= n, x, torch.zeros((), dtype=x.dtype))


def _hint_rows(args, got, expected):
    x, n = args
    rows = torch.arange(x.shape[0]).unsqueeze(1)
    if got[0].shape == x.shape and torch.allclose(got[0], torch.where(rows >= n, x, torch.zeros((), dtype=x.dtype))):
        return "the first n *rows* are zeroed; KillHead zeroes the first n *columns* (x[:, :n])."
    if got[0].shape == x.shape and torch.allclose(got[0], x * (torch.arange(x.shape[1]) >= n - 1)):
        return "one column too few survive: x[:, :n] is columns 0 .. n-1."
    if got[0].shape == x.shape and torch.allclose(got[0], x * (torch.arange(x.shape[1]) >= n + 1)):
        return "one column too many are zeroed: x[:, :n] is columns 0 .. n-1."
    return None


def _hint_weight_from_x_not_x_transposed(args, grad_outputs, index, got, expected):
    """grad of W computed as x @ G (runs only when batch = inputs) where x^T @ G was needed."""
    x = args[0]
    if index != 1 or x.shape[0] != x.shape[1] or got.shape != expected.shape:
        return None
    if torch.allclose(got, x @ grad_outputs[0], rtol=1e-6, atol=1e-9):
        return (
            "the gradient for W multiplies x by grad_output as they are. That runs only because the batch size "
            "equals the number of inputs here: check which factor is transposed (the gradient of W has W's shape, "
            "(inputs, outputs), for every batch size)."
        )
    return None


_LINEAR_HINTS = (_hint_untransposed_weight, _hint_weight_from_x_not_x_transposed)
add_reference(FunctionReference(name="mul", reference=lambda a, b: a * b))
add_reference(FunctionReference(name="exp", reference=torch.exp, saves="output"))
add_reference(
    FunctionReference(name="linear", reference=_linear_reference, needs_input_grad=True, gradient_hints=_LINEAR_HINTS)
)
add_reference(
    FunctionReference(
        name="linear_batch_equals_inputs",
        reference=_linear_reference,
        needs_input_grad=True,
        gradient_hints=_LINEAR_HINTS,
    )
)
add_reference(FunctionReference(name="kill_head", reference=_kill_reference, forward_hints=(_hint_rows,)))


def _hint_abs_without_sign(args, grad_outputs, index, got, expected):
    """d|uv|/du = sign(u)|v|, written as |v| (or sign(v)|u| as |u|): right where the other factor's sign is +."""
    other = args[1 - index]
    if got.shape != expected.shape or not torch.allclose(got, grad_outputs[0] * other.abs(), rtol=1e-6, atol=1e-9):
        return None
    names = ("u", "v")
    return (
        f"the gradient for {names[index]} is right where {names[index]} > 0 and has the wrong sign where "
        f"{names[index]} < 0: the factor that "
        f"multiplies |{names[1 - index]}| is the sign of {names[index]}, the slope of |t| at t = u·v."
    )


add_reference(
    FunctionReference(
        name="abs_product", reference=lambda u, v: torch.abs(u * v), gradient_hints=(_hint_abs_without_sign,)
    )
)
add_reference(
    FunctionReference(
        name="numerical_logsumexp",
        reference=lambda x: torch.logsumexp(x, dim=1),
        ref_rtol=1e-07,
        ref_atol=1e-08,
        float32_gradients=False,
    )
)


@decides("check_numerical_jacobian", draw=draw_jacobian_problems)
def judge_numerical_jacobian(data: ProbeData, problems: Sequence[str], eps: float = 1e-6, seed: int = 0) -> None:
    for name, got in zip(problems, answers.per_case(data, problems)):
        _valid_jacobian_answer(got, name)
        f, inputs = jacobian_problem(name, seed)
        call = f"numerical_jacobian(f, inputs, eps={eps}) for the test function '{name}'"
        out_numel = f(*inputs).numel()
        jac = torch.autograd.functional.jacobian(f, inputs)
        if got["inputs_changed"]:
            raise CheckFailed(
                f"`{call}` changed the inputs it was given: perturb copies (x.clone()), or put each entry back."
            )
        if len(got["jacobians"]) != len(inputs):
            raise CheckFailed(
                f"`{call}` returned {len(got['jacobians'])} Jacobian(s) for {len(inputs)} input(s): one per input."
            )
        expected_calls = 2 * sum(x.numel() for x in inputs)
        refusal = (
            f"This exercise is the numerical Jacobian that gradcheck compares autograd with: central differences, "
            f"two evaluations of f per input entry ({expected_calls} here), and no autograd."
        )
        _refuse_exact_differentiation(got, call, refusal)
        for i, (J, want, x) in enumerate(zip(got["jacobians"], jac, inputs)):
            _compare_jacobian(J, want.reshape(out_numel, x.numel()), i, call)
        if got["calls"] < expected_calls:
            raise CheckFailed(
                f"`{call}` has the right numbers but evaluated f only {got['calls']} time(s): "
                f"autograd (torch.func.jacrev, ...) computes them exactly. {refusal}"
            )
        if got["calls"] > expected_calls + 1:
            raise CheckFailed(
                f"`{call}` evaluated f {got['calls']} times; a central-difference Jacobian needs "
                f"{expected_calls} (two per input entry)."
            )


def _valid_jacobian_answer(got, name: str) -> None:
    answers.entry(got, name, ("jacobians", "calls", "calls_with_grad", "inputs_changed", "sweeps", "forward_sweeps"))
    answers.integer(got["calls"], "calls"), answers.flag(got["inputs_changed"], "inputs_changed")
    answers.integer(got["calls_with_grad"], "calls_with_grad")
    answers.integer(got["sweeps"], "sweeps"), answers.integer(got["forward_sweeps"], "forward_sweeps")
    if not isinstance(got["jacobians"], list):
        raise CheckFailed(answers.MISMATCH.format(why="a list of Jacobians was expected"))
    for J in got["jacobians"]:
        answers.tensor(J, "a Jacobian")


def _refuse_exact_differentiation(got, call: str, refusal: str) -> None:
    if got["forward_sweeps"] and not got["calls_with_grad"]:
        raise CheckFailed(
            f"`{call}` differentiated f in forward mode (torch.func.jacfwd, torch.func.jvp, dual numbers "
            f"of torch.autograd.forward_ad, ...), which gives the Jacobian exactly. {refusal}"
        )
    if got["calls_with_grad"] or got["sweeps"]:
        raise CheckFailed(
            f"`{call}` called f on inputs that require grad: that is autograd "
            f"(torch.autograd.functional.jacobian, backward, ...), which differentiates f exactly. {refusal}"
        )


def _compare_jacobian(J, want, i: int, call: str) -> None:
    if tuple(J.shape) != tuple(want.shape):
        transposed = tuple(J.shape) == tuple(want.shape)[::-1]
        hint = " It looks transposed: rows are output entries, columns are input entries." if transposed else ""
        raise CheckFailed(
            f"`{call}`: the Jacobian for input {i} has shape {tuple(J.shape)}; it should be "
            f"(number of output entries, number of input entries) = {tuple(want.shape)}.{hint}"
        )
    err = (J - want).abs()
    bad = err > 1e-8 + 1e-7 * want.abs()  # a central difference in float64 is good to ~1e-10 here
    if not bad.any():
        return
    hints = []
    if torch.allclose(J, 2 * want, rtol=1e-5, atol=1e-6):
        hints.append("every entry is twice too large: x + eps and x - eps are 2·eps apart.")
    elif torch.allclose(J, -want, rtol=1e-5, atol=1e-6):
        hints.append("the sign is flipped: the difference must follow the direction of the step.")
    elif float(err.max()) < 1e-4:
        hints.append(
            "small errors (of the order of eps) look like a one-sided difference: step both ways, "
            "x + eps and x - eps, and divide by 2·eps."
        )
    entries = [f"[{r}, {c}]" for r, c in torch.nonzero(bad)[:6].tolist()]
    raise CheckFailed(
        f"`{call}`: the Jacobian for input {i} is wrong in entries {', '.join(entries)} "
        f"(largest error {float(err.max()):.3g})." + "".join(f"\nHint: {h}" for h in hints)
    )


@decides("check_my_gradcheck", draw=draw_gradcheck_problems)
def judge_my_gradcheck(data: ProbeData, problems: Sequence[str], seed: int = 0) -> None:
    wrong = []
    for name, got in zip(problems, answers.per_case(data, problems)):
        answers.flag(got, f"the answer on {name}")
        fn, inputs = gradcheck_problem(name, seed)
        expected = torch.autograd.gradcheck(fn, inputs, raise_exception=False)
        if got != expected:
            wrong.append((name, got, expected))
    if not wrong:
        return None
    lines = []
    for name, got, expected in wrong:
        what = "a correct backward" if expected else "a wrong backward"
        lines.append(f"  - on '{name}' ({what}) my_gradcheck returned {got}.")
    hints = []
    if any(n == "correct_with_zeros" for n, _, _ in wrong):
        hints.append(
            "where the true derivative is 0, a purely relative test can never pass: accept "
            "|analytical - numerical| <= atol + rtol·|numerical|, as gradcheck does."
        )
    if any(n in ("small_relative_error", "one_entry_off") for n, _, _ in wrong):
        hints.append("a small error in one entry must still fail: compare every entry, not a sum or a mean.")
    if all(n.startswith("correct") for n, _, _ in wrong):
        hints.append(
            "your check rejects correct Functions: are the two Jacobians laid out the same way "
            "(rows = output entries, columns = input entries)?"
        )
    raise CheckFailed(
        "my_gradcheck disagrees with torch.autograd.gradcheck:\n"
        + "\n".join(lines)
        + "".join(f"\nHint: {h}" for h in hints)
    )


def _reference_training(x0, target, n, lr, steps):
    keep = (torch.arange(x0.shape[1]) >= n).to(x0.dtype)
    x = x0.clone().requires_grad_()
    losses = []
    for _ in range(steps):
        loss = torch.mean((x * keep - target) ** 2)
        (g,) = torch.autograd.grad(loss, x)
        with torch.no_grad():
            x -= lr * g
        losses.append(float(loss.detach()))
    return x.detach(), losses


@decides("check_kill_head_training", draw=draw_training_cases)
def judge_kill_head_training(data: ProbeData, cases: Sequence[Any]) -> None:
    for (seed, shape, n, lr, steps), got in zip(cases, answers.per_case(data, cases)):
        answers.entry(got, "answer", ("x", "losses", "x0_changed"))
        (
            answers.tensor(got["x"], "x"),
            answers.numbers(got["losses"], "losses"),
            answers.flag(got["x0_changed"], "x0_changed"),
        )
        x0, target = training_problem(seed, shape, n)
        x_ref, losses_ref = _reference_training(x0, target, n, lr, steps)
        call = f"train_kill_head(x0, target, n={n}, lr={lr}, steps={steps})"
        if got["x0_changed"]:
            raise CheckFailed(f"`{call}` changed x0: train a copy (x0.clone().requires_grad_()).")
        losses = got["losses"]
        if len(losses) != steps:
            raise CheckFailed(f"`{call}` returned {len(losses)} losses; it should return one per step ({steps}).")
        if tuple(got["x"].shape) != tuple(shape):
            raise CheckFailed(f"`{call}` returned x of shape {tuple(got['x'].shape)}; x has shape {tuple(shape)}.")
        head = got["x"][:, :n]
        if n and not torch.allclose(head, x0[:, :n], rtol=0, atol=1e-12):
            raise CheckFailed(
                f"`{call}` changed the first {n} column(s) of x: KillHead zeroes them, so their gradient is 0 "
                "and SGD must leave them where they started."
            )
        ok = [math.isclose(a, b, rel_tol=1e-8, abs_tol=1e-12) for a, b in zip(losses, losses_ref)]
        if not all(ok):
            first = ok.index(False)
            hints = []
            if all(math.isclose(a, b, rel_tol=1e-8, abs_tol=1e-12) for a, b in zip(losses, losses_ref[1:])):
                hints.append(
                    "your losses are one step ahead: record the loss of the step before calling optimizer.step()."
                )
            elif len(losses) > 1 and math.isclose(losses[1], losses[0], rel_tol=1e-12):
                hints.append(
                    "the loss does not move: call loss.backward() and optimizer.step() every step, and "
                    "optimizer.zero_grad() before backward."
                )
            elif first >= 2:
                hints.append(
                    "the first steps agree and later ones drift: are old gradients accumulating? call "
                    "optimizer.zero_grad() before loss.backward() in every step."
                )
            elif first == 0:
                hints.append(
                    "the very first loss differs: the loss is the mean of the squared differences between "
                    "KillHead.apply(x, n) and target."
                )
            raise CheckFailed(
                f"`{call}`: the loss at step {first} is off by {abs(losses[first] - losses_ref[first]):.3g} "
                f"(relative {abs(losses[first] - losses_ref[first]) / max(abs(losses_ref[first]), 1e-12):.2g})."
                + "".join(f"\nHint: {h}" for h in hints)
            )
        if not torch.allclose(got["x"], x_ref, rtol=1e-8, atol=1e-10):
            raise CheckFailed(f"`{call}` returned the right losses but a different x: return the tensor you trained.")
