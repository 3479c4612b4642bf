"""Notebook 03's probes: the only code of its checks that runs in the grading sandbox."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..feedback import CheckFailed, as_float
from ..nb01.probes import sweep_counter
from ..probes.call import call_learner
from ..probes.torch_errors import translate
from ..registry import ProbeData
from .cases import (
    gradcheck_problem,
    jacobian_problem,
    training_problem,
)


def probe_numerical_jacobian(
    numerical_jacobian: Any, problems: Sequence[str], eps: float = 1e-6, seed: int = 0
) -> ProbeData:
    data = []
    for name in problems:
        f, inputs = jacobian_problem(name, seed)
        given = tuple(x.clone() for x in inputs)
        count = {"calls": 0, "with_grad": 0, "sweeps": 0, "forward_sweeps": 0}
        count_sweeps = sweep_counter(count)  # autograd through f, reverse or forward mode, however reached, is counted

        def counted(*xs, f=f, count=count, count_sweeps=count_sweeps):
            count["calls"] += 1
            count["with_grad"] += torch.is_grad_enabled() and any(
                isinstance(x, torch.Tensor) and x.requires_grad for x in xs
            )
            return count_sweeps(f(*xs))

        result = call_learner(numerical_jacobian, counted, given, eps, name="numerical_jacobian")
        if isinstance(result, torch.Tensor):
            result = [result]
        if not isinstance(result, (list, tuple)) or not all(isinstance(r, torch.Tensor) for r in result):
            raise CheckFailed(
                f"`numerical_jacobian(f, inputs, eps)` should return a list of tensors, one per input; "
                f"it returned a {type(result).__name__}."
            )
        data.append(
            {
                "jacobians": [r.detach().to("cpu", torch.float64).clone() for r in result],
                "calls": count["calls"],
                "calls_with_grad": count["with_grad"],
                "sweeps": int(count["sweeps"]),
                "forward_sweeps": int(count["forward_sweeps"]),
                "inputs_changed": any(not torch.equal(a, b) for a, b in zip(inputs, given)),
            }
        )
    return data


def probe_my_gradcheck(my_gradcheck: Any, problems: Sequence[str], seed: int = 0) -> ProbeData:
    data = []
    for name in problems:
        fn, inputs = gradcheck_problem(name, seed)
        result = call_learner(my_gradcheck, fn, inputs, name="my_gradcheck")
        if not isinstance(result, (bool, int)) and not (isinstance(result, torch.Tensor) and result.numel() == 1):
            raise CheckFailed(
                f"`my_gradcheck(fn, inputs)` should return True or False; it returned a {type(result).__name__}."
            )
        data.append(bool(result))
    return data


def probe_kill_head_training(train_kill_head: Any, cases: Sequence[Any]) -> ProbeData:
    data = []
    for seed, shape, n, lr, steps in cases:
        x0, target = training_problem(seed, shape, n)
        x0_before = x0.clone()
        call = f"train_kill_head(x0, target, n={n}, lr={lr}, steps={steps})"
        result = call_learner(train_kill_head, x0, target.clone(), n, lr, steps, name="train_kill_head")
        if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], torch.Tensor)):
            raise CheckFailed(f"`{call}` should return a pair (x, losses): the trained tensor and the list of losses.")
        x, losses = result
        data.append(
            {
                "x": x.detach().to("cpu", torch.float64).clone(),
                "losses": [as_float(v, f"a loss returned by `{call}`") for v in losses],
                "x0_changed": not torch.equal(x0, x0_before),
            }
        )
    return data


def translate_error(exc: BaseException) -> str:
    """For the notebook: a PyTorch error in plain words (the same translation the checks use)."""
    return translate(exc)
