"""Notebook 01's probes: the only code of its checks that runs in the grading sandbox."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from ..feedback import CheckFailed, as_float
from ..probes.call import call_learner
from ..registry import ProbeData
from .cases import (
    SCALAR_FUNCTIONS,
    TRACE,
    gradient_problem,
    jacobian_problem,
)


def _as_trace(result, name: str, call: str) -> dict:
    if not isinstance(result, Mapping):
        raise CheckFailed(
            f"`{call}` should return a dict with keys {', '.join(TRACE)}; it returned a {type(result).__name__}."
        )
    missing = [k for k in TRACE if k not in result]
    if missing:
        raise CheckFailed(
            f"The dict returned by `{call}` has no entry for {', '.join(missing)}. "
            f"It needs one entry per node of the trace: {', '.join(TRACE)}."
        )
    return {k: as_float(result[k], f"entry '{k}' of `{call}`") for k in TRACE}


def _probe_traces(fn: Any, name: str, calls: Sequence[Any]) -> list:
    """Call the learner's trace function on each argument tuple; return its dicts as floats."""
    results = []
    for args in calls:
        call = f"{name}({', '.join(map(str, args))})"
        results.append(_as_trace(call_learner(fn, *args, name=name), name, call))
    return results


def probe_primal_trace(primal_trace: Any, at: Sequence[Any]) -> ProbeData:
    return _probe_traces(primal_trace, "primal_trace", at)


def probe_adjoint_trace(adjoint_trace: Any, at: Sequence[Any]) -> ProbeData:
    return _probe_traces(adjoint_trace, "adjoint_trace", at)


def probe_tangent_trace(tangent_trace: Any, cases: Sequence[Any]) -> ProbeData:
    return _probe_traces(tangent_trace, "tangent_trace", cases)


def _inside(module: str) -> bool:
    """Whether code of `module` is on the stack (a CPU backward runs on the thread that asked for it)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__") == module:
            return True
        frame = frame.f_back
    return False


def sweep_counter(counter: dict) -> Callable[[torch.Tensor], torch.Tensor]:
    """An identity Function that counts the sweeps through it into `counter`: reverse (backward) and
    forward (jvp). It has setup_context, jvp and a generated vmap rule, so that torch.func's jvp, jacrev
    and jacfwd work through it too (a vectorised sweep over all rows at once counts once). The counter
    is reached through the closure: torch.func copies non-tensor arguments."""

    class CountSweeps(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(y):
            return y.clone()

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, grad):
            counter["sweeps"] += 1
            if "library_sweeps" in counter:  # sweeps that torch.autograd.functional ran for the caller
                counter["library_sweeps"] += _inside("torch.autograd.functional")
            return grad

        @staticmethod
        def jvp(ctx, y_tangent):
            counter["forward_sweeps"] += 1
            return y_tangent

    return CountSweeps.apply


def probe_jacobian_reverse(jacobian_reverse: Any, cases: Sequence[Any]) -> ProbeData:
    data = []
    for n, m, seed in cases:
        A, x = jacobian_problem(n, m, seed)
        counter = {"sweeps": 0, "forward_sweeps": 0, "library_sweeps": 0}
        count_sweeps = sweep_counter(counter)

        def F(v, A=A, count_sweeps=count_sweeps):
            return count_sweeps(A @ torch.tanh(v))

        J = call_learner(jacobian_reverse, F, x.clone(), name="jacobian_reverse")
        if not isinstance(J, torch.Tensor):
            raise CheckFailed(
                f"`jacobian_reverse(F, x)` should return a torch.Tensor; it returned a {type(J).__name__}."
            )
        data.append(
            {
                "J": J.detach().to("cpu", torch.float64).clone(),
                "sweeps": int(counter["sweeps"]),
                "forward_sweeps": int(counter["forward_sweeps"]),
                "library_sweeps": int(counter["library_sweeps"]),
            }
        )
    return data


def probe_central_difference(central_difference: Any, cases: Sequence[Any]) -> ProbeData:
    data = []
    for fname, x, h in cases:
        f = SCALAR_FUNCTIONS[fname]
        calls = []

        def counted(v, f=f, calls=calls):
            calls.append(v)
            return f(v)

        call = f"central_difference({fname}, {x}, h={h})"
        got = as_float(call_learner(central_difference, counted, x, h, name="central_difference"), f"`{call}`")
        data.append({"value": got, "evaluations": len(calls)})
    return data


def probe_numerical_gradient(numerical_gradient: Any, cases: Sequence[Any]) -> ProbeData:
    data = []
    for n, seed in cases:
        a, x = gradient_problem(n, seed)
        evaluations, counter = [], {"sweeps": 0, "forward_sweeps": 0}
        count_sweeps = sweep_counter(counter)  # autograd through f, however it is reached, is counted

        def f(v, a=a, evaluations=evaluations, count_sweeps=count_sweeps):
            evaluations.append(1)
            return count_sweeps(torch.sum(a * torch.sin(v)) + 0.5 * torch.sum(v**2))

        x_before = x.clone()
        g = call_learner(numerical_gradient, f, x, 1e-6, name="numerical_gradient")
        if not isinstance(g, torch.Tensor):
            raise CheckFailed(
                f"`numerical_gradient(f, x, h=1e-6)` should return a torch.Tensor; it returned a {type(g).__name__}."
            )
        data.append(
            {
                "gradient": g.detach().to("cpu", torch.float64).clone(),
                "evaluations": len(evaluations),
                "x_changed": not torch.equal(x, x_before),
                "sweeps": int(counter["sweeps"]),
                "forward_sweeps": int(counter["forward_sweeps"]),
            }
        )
    return data
