"""Notebook 04's judges of higher derivatives: a twice-differentiable Function and the
Hessian-vector product."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ...judges.verdict import Part, Verdict
from ...registry import ProbeData, decides
from ..cases import (
    TWICE_OUTPUTS,
    hvp_problem,
    inputs_elementwise,
    shapes_of,
)
from .common import (
    HVP_ENTRY,
    Parts,
    case_data,
    draw_elementwise_cases,
    draw_hvp_problems,
    same_values,
    twice_entry,
    vjp,
    wrong_tensor,
)

# ------------------------------------------------------------------------------------------ twice differentiable

_REFERENCES = {"tanh": (torch.tanh, "Tanh"), "sinh": (lambda t: (torch.sinh(t), torch.exp(t), torch.exp(-t)), "Sinh")}


@decides("check_twice_differentiable", draw=draw_elementwise_cases)
def judge_twice_differentiable(
    data: ProbeData, reference: str, seed: int = 0, cases: int | Sequence[Any] = 2, points: float = 3
) -> Verdict:
    ref, title = _REFERENCES[reference]
    count = TWICE_OUTPUTS[reference]
    names = ("values", "intermediates", "second_derivatives") if count > 1 else ("values", "second_derivatives")
    p = Parts(f"{title} (a backward that is itself differentiable)", *names)
    first_only = lambda t: ref(t)[0] if count > 1 else ref(t)  # noqa: E731
    shapes = shapes_of(cases)
    ignored_extra = None  # "intermediates" once backward is seen ignoring the extra outputs' gradients
    for case, got in enumerate(case_data(data, shapes, title, twice_entry(count))):
        shape = shapes[case]
        x, u = inputs_elementwise(seed, case, shape=shape)
        v = inputs_elementwise(seed + 1000, case, shape=shape)[1]
        where = f"(case {case + 1}, x of shape {tuple(x.shape)})"
        want_first = vjp(first_only, x, u)
        _judge_twice_values(got, ref(x) if count > 1 else (ref(x),), want_first, where, p["values"])
        if count > 1:
            us = [u] + [inputs_elementwise(seed + 2000 + k, case, shape=shape)[1] for k in range(1, count)]
            xr = x.clone().requires_grad_()
            (want_all,) = torch.autograd.grad(ref(xr), xr, us)
            if _judge_intermediates(got, want_all, want_first, where, p["intermediates"]):
                ignored_extra = "intermediates"
        elif got["grad_all_error"]:
            p["values"].fail(f"backward raised {got['grad_all_error']} {where}.")
        xr = x.clone().requires_grad_()
        (first,) = torch.autograd.grad(first_only(xr), xr, u, create_graph=True)
        (want_hvp,) = torch.autograd.grad(first, xr, v)
        _judge_second_derivatives(got, want_hvp, count, where, p["second_derivatives"], ignored_extra)
    return p.verdict(points)


def _judge_twice_values(got, wants, want_first, where: str, part: Part) -> None:
    names = ["the output", "the second output (e^x)", "the third output (e^-x)"]
    for k, (o, w) in enumerate(zip(got["outputs"], wants)):
        problem = wrong_tensor(o, w, f"{names[k]} {where}")
        if problem:
            part.fail(problem)
    if got["first"] is not None:
        problem = wrong_tensor(got["first"], want_first, f"backward's gradient {where}")
        if problem:
            part.fail(problem)


def _judge_intermediates(got, want_all, want_first, where: str, part: Part) -> bool:
    """The gradient with a grad_output for every output; True when backward ignores the extra outputs' ones."""
    if got["grad_all_error"]:
        part.fail(f"backward raised {got['grad_all_error']} with a gradient for every output {where}.")
        return False
    problem = wrong_tensor(got["grad_all"], want_all, f"the gradient with a grad_output for every output {where}")
    if not problem:
        return False
    ignores = got["grad_all"] is not None and same_values(got["grad_all"], want_first)
    hint = (
        "backward ignores the gradients that arrive for the extra outputs: each output that depends "
        "on x adds its own term to x's gradient (the chain rule, summed over the outputs). Double "
        "backward sends gradients through them."
        if ignores
        else None
    )
    part.fail(problem, hint)
    return ignores


def _judge_second_derivatives(got, want_hvp, count: int, where: str, part: Part, same: str | None) -> None:
    if got["second_error"]:
        hint = None
        if "once_differentiable" in got["second_error"]:
            hint = "@once_differentiable forbids exactly this: remove it and write backward with torch operations."
        elif "does not require grad" in got["second_error"] or "not differentiable" in got["second_error"]:
            hint = (
                "autograd could not record backward: compute it from tensors saved with save_for_backward "
                "(inputs or outputs), with torch operations, without .detach(), .item() or NumPy."
            )
        part.fail(f"differentiating the gradient again failed {where}: {got['second_error']}", hint)
        return
    problem = wrong_tensor(
        got["hvp"], want_hvp, f"the second derivative (u·J differentiated along v) {where}", rtol=1e-6, atol=1e-8
    )
    if problem:
        hint = None
        if got["hvp"] is not None and bool((got["hvp"].abs() < 1e-12).all()):
            hint = (
                "the second derivative is zero: autograd sees backward's formula as a constant (detached, or "
                "an intermediate it cannot connect to x). Save the output, or return intermediates as outputs."
            )
        elif count > 1:
            hint = (
                "under double backward gradients flow into the extra outputs too: backward must use every "
                "gradient it receives, one per output."
            )
        part.fail(problem, hint, same_mistake_as=same)
    if got["gradgradcheck"] is not True:
        detail = "" if got["gradgradcheck"] is False else f": {got['gradgradcheck']}"
        part.fail(f"torch.autograd.gradgradcheck fails on your Function {where}{detail}.", same_mistake_as=same)


@decides("check_hvp", draw=draw_hvp_problems)
def judge_hvp(data: ProbeData, problems: Sequence[str], seed: int = 0, size: int = 4, points: float = 2) -> Verdict:
    p = Parts("hessian_vector_product(f, x, v)", "values")
    for name, got in zip(problems, case_data(data, problems, "hessian_vector_product", HVP_ENTRY)):
        f, x, v = hvp_problem(name, seed, size)
        _, want = torch.autograd.functional.hvp(f, x, v)
        call = f"hessian_vector_product(f, x, v) for the test function '{name}'"
        if got["inputs_changed"]:
            p["values"].fail(f"`{call}` changed x or v in place: work on x.detach().requires_grad_() instead.")
            continue
        problem = wrong_tensor(got["hvp"], want, f"`{call}`", rtol=1e-6, atol=1e-8)
        if problem:
            g = got["hvp"]
            x_ = x.clone().requires_grad_()
            (grad,) = torch.autograd.grad(f(x_), x_)
            hint = None
            if g is not None and same_values(g, grad):
                hint = (
                    "this is the gradient, not the Hessian-vector product: differentiate (gradient · v) a second time."
                )
            elif g is not None and same_values(g, -want):
                hint = "the sign is flipped."
            p["values"].fail(problem, hint)
    return p.verdict(points)
