"""Notebook 02's judges of the Variable operations: mul, truediv, pow, tanh, the seeded neuron."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ...judges import answers
from ...probes.nb02_cases import (
    SEED_X,
    SEED_Y,
)
from ...registry import ProbeData, decides
from .common import (
    agree_with,
    describe,
    draw_pairs,
    draw_pow_cases,
    draw_seed_neuron_cases,
    draw_tanh_points,
    fail_with,
    judge_op,
)


@decides("check_mul", draw=draw_pairs)
def judge_mul(data: ProbeData, cases: Sequence[Any]) -> None:
    return judge_op("mul", data, cases)


@decides("check_truediv", draw=draw_pairs)
def judge_truediv(data: ProbeData, cases: Sequence[Any]) -> None:
    return judge_op("truediv", data, cases)


@decides("check_pow", draw=draw_pow_cases)
def judge_pow(data: ProbeData, cases: Sequence[Any]) -> None:
    return judge_op("pow", data, cases)


@decides("check_tanh", draw=draw_tanh_points)
def judge_tanh(data: ProbeData, at: Sequence[Any]) -> None:
    return judge_op("tanh", data, at)


@decides("check_seed_neuron", draw=draw_seed_neuron_cases)
def judge_seed_neuron(data: ProbeData, cases: Sequence[Any]) -> None:
    for (activation, cost, w, b), got in zip(cases, answers.per_case(data, cases)):
        answers.entry(got, "answer", ("loss", "dw", "check"))
        for key in ("loss", "dw", "check"):
            answers.number(got[key], f"report['{key}']")
        tw = torch.tensor(float(w), dtype=torch.float64, requires_grad=True)
        s = tw * SEED_X + float(b)
        y_hat = torch.tanh(s)
        loss = 0.5 * (y_hat - SEED_Y) ** 2 if cost == "half_square" else 0.5 * (y_hat - SEED_Y**2)
        (true_dw,) = torch.autograd.grad(loss, tw)
        true_dw, loss = float(true_dw), loss.detach()
        t = float(y_hat.detach())
        # what backward() gives: the product of the recorded local derivatives along the chain
        act_local = t * t if activation == "published_tanh" else 1.0 - t * t
        cost_local = (t - SEED_Y) if cost == "half_square" else 0.5
        backward_dw = SEED_X * act_local * cost_local
        scale = max(abs(backward_dw), abs(true_dw))
        check = 0.0 if scale == 0 else abs(backward_dw - true_dw) / scale
        where = f"seed_neuron_report with {activation} and {cost} at w = {w}, b = {b}"
        problems = []
        if not agree_with(got["loss"], float(loss), rtol=1e-9):
            problems.append(
                describe("report['loss']", got["loss"], float(loss))
                + " It is the value of cost(activation(weighted_sum(w, b)))."
            )
        if not agree_with(got["dw"], backward_dw, rtol=1e-6, atol=1e-12):
            problems.append(
                describe("report['dw']", got["dw"], backward_dw)
                + " It is w.grad after one backward() from the loss (grads starting at 0)."
            )
        if check < 1e-6:
            if not 0 <= got["check"] <= 1e-6:
                problems.append(
                    f"report['check'] is {got['check']:.2g}, but this neuron's backward is right: your "
                    "gradient_check's relative error for w should be tiny."
                )
        elif not abs(got["check"] - check) <= 1e-4 * check + 1e-9:
            problems.append(
                f"report['check'] is {got['check']:.3g}: "
                f"{'too small' if got['check'] < check else 'too large'} for this backward (off by "
                f"{abs(got['check'] - check):.2g}). It is gradient_check(loss, [w, b])[0]."
            )
        fail_with(problems, [], intro=f"{where}:")
