"""Notebook 02's judges of the training exercises: the gradient check and the neuron's loss."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from ...feedback import CheckFailed
from ...judges import answers
from ...probes.nb02_cases import (
    CHECK_FUNCTIONS,
)
from ...registry import ProbeData, decides
from .common import (
    TORCH_CHECK_FUNCTIONS,
    agree_with,
    describe,
    draw_gradient_check_cases,
    draw_neuron_cases,
    fail_with,
)


@decides("check_gradient_check", draw=draw_gradient_check_cases)
def judge_gradient_check(data: ProbeData, cases: Sequence[Any]) -> None:
    for (name, inputs), got in zip(cases, answers.per_case(data, cases)):
        got = answers.numbers(got, "relative errors", len(inputs))
        recorded, torch_fn = CHECK_FUNCTIONS[name][1], TORCH_CHECK_FUNCTIONS[name]
        t = torch.tensor([float(v) for v in inputs], dtype=torch.float64, requires_grad=True)
        true = torch.autograd.grad(torch_fn(t), t)[0].tolist()
        claimed = recorded([float(v) for v in inputs])
        call = f"gradient_check(f, {list(inputs)}) for the test function \"{name}\""
        for i, (e, a, n) in enumerate(zip(got, claimed, true)):
            scale = max(abs(a), abs(n))
            expected = 0.0 if scale == 0 else abs(a - n) / scale
            what = f"the relative error `{call}` reports for input {i}"
            if math.isnan(e):
                hint = (
                    " When both gradients are 0 the relative error is 0: check for that before dividing."
                    if scale == 0
                    else ""
                )
                raise CheckFailed(f"{what[0].upper() + what[1:]} is nan.{hint}")
            if e < 0:
                raise CheckFailed(
                    f"{what[0].upper() + what[1:]} is negative: an error is a size, take the absolute value."
                )
            if expected < 1e-6:  # the function's derivative is right: the check must say so, to many digits
                if e <= 1e-7:
                    continue
                hint = ""
                if e < 1e-2:
                    hint = (
                        "\nHint: that is the size of a one-sided difference's error. Step both ways: "
                        "(f(x + h) - f(x - h)) / 2h."
                    )
                raise CheckFailed(
                    f"This function's backward is correct, but {what} is {e:.2g}; a central difference "
                    f"in float64 agrees with a correct derivative to about 1e-9.{hint}"
                )
            if abs(e - expected) <= 1e-6 + 1e-4 * expected:
                continue
            hints = []
            if abs(e - abs(a - n)) <= 1e-6 * max(abs(a - n), 1e-30) + 1e-15:
                hints.append(
                    "That is the absolute error |backward - numeric|; divide it by the larger of the two magnitudes."
                )
            elif n != 0 and abs(e - abs(a - n) / abs(n)) <= 1e-4 * e:
                hints.append(
                    "You divided by the numerical gradient alone; divide by the larger of |backward| and |numeric|."
                )
            elif a != 0 and abs(e - abs(a - n) / abs(a)) <= 1e-4 * e:
                hints.append(
                    "You divided by the backward gradient alone; divide by the larger of |backward| and |numeric|."
                )
            raise CheckFailed(
                f"This function's backward is wrong for input {i}, and {what} is {e:.3g}: "
                f"{'too small' if e < expected else 'too large'} (off by {abs(e - expected):.2g})."
                + "".join(f"\nHint: {h}" for h in hints)
            )


_REPLAY = {
    "add": lambda a, b: a + b,
    "radd": lambda a, b: b + a,
    "sub": lambda a, b: a - b,
    "rsub": lambda a, b: b - a,
    "mul": lambda a, b: a * b,
    "rmul": lambda a, b: b * a,
    "div": lambda a, b: a / b,
    "rdiv": lambda a, b: b / a,
    "pow": lambda a, b: a**b,
    "rpow": lambda a, b: b**a,
    "neg": lambda a: -a,
    "tanh": torch.tanh,
    "exp": torch.exp,
    "log": torch.log,
    "sigmoid": torch.sigmoid,
    "relu": torch.relu,
}


def _replay(steps: list, returns_input, leaves: list) -> torch.Tensor:
    """The recorded expression on tensors, with PyTorch's own operations (and, for a node the learner
    built by hand, its own local derivatives)."""
    if returns_input is not None:
        return leaves[returns_input]
    values: list = []

    def get(ref):
        kind, x = ref
        if kind == "input":
            return leaves[int(x)]
        if kind == "step":
            return values[int(x)]
        return float(x)

    for step in steps:
        if step[0] == "op":
            args = [get(r) for r in step[2]]
            if not isinstance(args[0], torch.Tensor):
                args[0] = torch.tensor(args[0], dtype=torch.float64)
            values.append(_REPLAY[step[1]](*args))
        elif step[0] == "node":
            node = torch.tensor(step[1], dtype=torch.float64)
            for ref, local in step[2]:
                parent = get(ref)
                if isinstance(parent, torch.Tensor):
                    node = node + local * (parent - parent.detach())
            values.append(node)
        else:
            values.append(torch.tensor(step[1], dtype=torch.float64))
    return values[-1]


def _valid_neuron_answer(got, n_weights: int) -> None:
    answers.entry(got, "answer", ("value", "steps", "returns_input", "connected"))
    answers.number(got["value"], "value")
    if not isinstance(got["steps"], list):
        raise CheckFailed(answers.MISMATCH.format(why="steps should be the list of recorded operations"))
    returns_input = got["returns_input"]
    if returns_input is not None and answers.integer(returns_input, "returns_input") not in range(n_weights + 1):
        raise CheckFailed(answers.MISMATCH.format(why="returns_input names no weight or bias"))
    if not isinstance(got["connected"], list) or len(got["connected"]) != n_weights + 1:
        raise CheckFailed(answers.MISMATCH.format(why="connected should list one flag per weight and the bias"))


@decides("check_neuron_loss", draw=draw_neuron_cases)
def judge_neuron_loss(data: ProbeData, cases: Sequence[Any]) -> None:
    for (weights, bias, inputs, target), got in zip(cases, answers.per_case(data, cases)):
        _valid_neuron_answer(got, len(weights))
        tw = torch.tensor([float(v) for v in weights], dtype=torch.float64, requires_grad=True)
        tb = torch.tensor(float(bias), dtype=torch.float64, requires_grad=True)
        x = torch.tensor([float(v) for v in inputs], dtype=torch.float64)
        prediction = torch.tanh(torch.sum(tw * x) + tb)
        loss = (prediction - target) ** 2
        grad_w, grad_b = torch.autograd.grad(loss, [tw, tb])
        expected = grad_w.tolist() + [float(grad_b)]
        call = f"neuron_loss(weights={list(weights)}, bias={bias}, inputs={list(inputs)}, target={target})"
        y_hat, s, loss = float(prediction.detach()), float((torch.sum(tw * x) + tb).detach()), loss.detach()
        if not agree_with(got["value"], float(loss), rtol=1e-10):
            hints = []
            if agree_with(got["value"], 0.5 * float(loss), rtol=1e-10):
                hints.append("The loss here is (ŷ − y)², without a factor ½.")
            elif any(
                agree_with(got["value"], k * (y_hat - target**2) ** p, rtol=1e-10) for k in (0.5, 1.0) for p in (1, 2)
            ):
                hints.append("Square the difference (ŷ − y), not the target.")
            elif agree_with(got["value"], (s - target) ** 2, rtol=1e-10):
                hints.append("The prediction is tanh of the weighted sum plus the bias.")
            raise CheckFailed(
                describe(f"The value of `{call}`", got["value"], float(loss)) + "".join(f"\nHint: {h}" for h in hints)
            )
        # The learner's expression, replayed with PyTorch's operations: its gradient is right exactly when the
        # expression connects every weight and the bias to the loss the right way, whatever the local
        # derivatives of the learner's operations are (those have their own exercises).
        leaves = [torch.tensor(float(v), dtype=torch.float64, requires_grad=True) for v in list(weights) + [bias]]
        replayed = _replay(got["steps"], got.get("returns_input"), leaves)
        if not isinstance(replayed, torch.Tensor) or not replayed.requires_grad:
            replayed_grads = [0.0] * len(leaves)
        else:
            replayed_grads = [
                0.0 if g is None else float(g) for g in torch.autograd.grad(replayed, leaves, allow_unused=True)
            ]
        names = [f"weights[{i}]" for i in range(len(weights))] + ["bias"]
        problems = [
            describe(f"d loss / d {nm}", g, e)
            for nm, g, e in zip(names, replayed_grads, expected)
            if not agree_with(g, e, rtol=1e-8, atol=1e-12)
        ]
        if problems:
            if not all(got.get("connected", [True])):
                hint = (
                    "Some of the weights or the bias are not in the graph of the loss: the graph is broken. "
                    "Somewhere a plain float (`.value`, `math.tanh`, `float(...)`) was used where a Variable "
                    "operation was needed, so no gradient can flow back past it."
                )
            else:
                hint = (
                    "The value is right, but part of it does not depend on the weights through Variable "
                    "operations: somewhere a plain number (`.value`, `math.tanh`, `float(...)`) stands where a "
                    "Variable operation was needed, so gradients do not flow through that part."
                )
            fail_with(problems, [hint], intro=f"`{call}` (its expression replayed with PyTorch's operations):")
