"""Notebook 04's judges of the ctx toolbox: saved tensors, mark_dirty, non-differentiable outputs,
materialize_grads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ...feedback import CheckFailed
from ...judges.verdict import Verdict
from ...registry import ProbeData, decides
from ..cases import (
    DT,
    inputs_elementwise,
    shapes_of,
)
from .common import (
    MAYBE_TENSOR,
    MAYBE_TEXT,
    SUMMARY,
    TENSOR,
    ListOf,
    OneOf,
    Parts,
    case_data,
    draw_elementwise_cases,
    same_values,
    tensor_entry,
    values_entry,
    vjp,
    wrong_tensor,
)

SAVED_ENTRY = {
    "output": TENSOR,
    "grad": MAYBE_TENSOR,
    "backward_error": MAYBE_TEXT,
    "after_inplace": {"error": MAYBE_TEXT, "grad": MAYBE_TENSOR},
}


INPLACE_ENTRY = {
    "output": TENSOR,
    "returns_input": "flag",
    "same_memory": "flag",
    "version_bumped": "flag",
    "input_after": TENSOR,
    "grad": MAYBE_TENSOR,
    "backward_error": MAYBE_TEXT,
    "grad_through_input": MAYBE_TENSOR,
    "input_error": MAYBE_TEXT,
}


MASK_ENTRY = {
    "output": TENSOR,
    "mask": TENSOR,
    "mask_dtype": "text",
    "mask_requires_grad": "flag",
    "grad": MAYBE_TENSOR,
    "backward_error": MAYBE_TEXT,
    "mask_grad": MAYBE_TENSOR,
    "mask_grad_error": MAYBE_TEXT,
}


_SINCOS_CALL = OneOf({"error": "text"}, {"returned": SUMMARY})


SINCOS_ENTRY = {
    "outputs": [TENSOR, TENSOR],
    "calls": {k: _SINCOS_CALL for k in ("both", "sin_only", "cos_only", "neither")},
    "received_when_sin_only": OneOf(None, ListOf("text")),
}


# ------------------------------------------------------------------------------------------ Cube


def _elementwise_cases(data, seed, cases, title, schema, kinks=False):
    """(got, x, g, where) for each case of an element-wise Function's data, validated against its probe's form."""
    shapes = shapes_of(cases)
    for case, got in enumerate(case_data(data, shapes, title, schema)):
        x, g = inputs_elementwise(seed, case, kinks=kinks, shape=shapes[case])
        yield got, x, g, f"(case {case + 1}, x of shape {tuple(x.shape)})"


@decides("check_saved_tensors", draw=draw_elementwise_cases)
def judge_saved_tensors(data: ProbeData, seed: int = 0, cases: int | Sequence[Any] = 2, points: float = 2) -> Verdict:
    p = Parts("Cube (x³, saving x with ctx.save_for_backward)", "values", "version_counter")
    for got, x, g, where in _elementwise_cases(data, seed, cases, "Cube", SAVED_ENTRY):
        values_entry(
            p["values"],
            got,
            x,
            g,
            lambda t: t**3,
            where,
            grad_hint=lambda grad, x=x, g=g: (
                "backward returns the local derivative alone: multiply it by grad_output (the chain rule)."
                if same_values(grad, 3 * x**2)
                else "the derivative of x³ is 3x²: a factor 3 is missing."
                if same_values(grad, g * x**2)
                else None
            ),
        )
        after = got["after_inplace"]
        changed = x + 1.0
        if after["error"] and "modified by an inplace operation" in after["error"]:
            continue
        if after["error"]:
            p["version_counter"].fail(
                f"when x is changed in place between forward and backward, backward raised "
                f"{after['error']} {where}; autograd should have refused with its version-counter error."
            )
            continue
        hint = (
            "save tensors with ctx.save_for_backward(x), not as attributes (ctx.x = x): only saved tensors are "
            "version-checked."
        )
        if after["grad"] is not None and same_values(after["grad"], g * 3 * changed**2):
            p["version_counter"].fail(
                f"x was changed in place after forward and backward silently used the changed "
                f"values {where}: the gradient is wrong and nothing said so.",
                hint,
            )
        else:
            p["version_counter"].fail(
                f"x was changed in place after forward and backward did not notice {where}.",
                "save x itself with ctx.save_for_backward (not a copy, not an attribute), so that "
                "autograd can tell when it changed.",
            )
    return p.verdict(points)


# ------------------------------------------------------------------------------------------ InplaceReLU


@decides("check_inplace", draw=draw_elementwise_cases)
def judge_inplace(data: ProbeData, seed: int = 0, cases: int | Sequence[Any] = 2, points: float = 3) -> Verdict:
    p = Parts("InplaceReLU (an in-place forward with ctx.mark_dirty)", "values", "in_place", "mark_dirty")
    for got, x, g, where in _elementwise_cases(data, seed, cases, "InplaceReLU", INPLACE_ENTRY, kinks=True):
        want_out = torch.relu(x)
        values_entry(
            p["values"],
            got,
            x,
            g,
            torch.relu,
            where,
            grad_hint=lambda grad, g=g: (
                "backward lets the gradient through everywhere: it must be 0 where x was negative."
                if same_values(grad, g)
                else None
            ),
        )
        if not got["version_bumped"]:
            p["in_place"].fail(
                f"forward left x unchanged and returned a new tensor {where}: this exercise asks for an in-place ReLU.",
                "change x itself (x.clamp_(min=0) or x[x < 0] = 0) and return x.",
            )
            continue  # x was not changed: nothing for mark_dirty to declare
        problem = wrong_tensor(got["input_after"], want_out, f"x after the call {where}")
        if problem:
            p["in_place"].fail(problem + " After an in-place ReLU, x itself holds relu(x).")
        if not got["returns_input"]:
            p["mark_dirty"].fail(
                f"forward changed x in place, but `apply` returned a different tensor object {where}.",
                "forward must tell autograd which input it changed in place (ctx has a method for it): then apply "
                "returns that input itself, with its new grad_fn.",
            )
        if got["input_error"]:
            p["mark_dirty"].fail(f"using x after the call, backward raised {got['input_error']} {where}.")
        elif got["grad"] is not None and not same_values(got["grad_through_input"], got["grad"].to(DT)):
            hint = None
            if got["grad_through_input"] is not None and same_values(got["grad_through_input"], g):
                hint = (
                    "autograd still treats x as the value before the ReLU: its gradient skips the ReLU. Once forward "
                    "declares that it changed x (through ctx), later uses of x go through your backward."
                )
            p["mark_dirty"].fail(
                f"code that goes on using x after `InplaceReLU.apply(x)` does not differentiate through "
                f"your backward {where}.",
                hint,
            )
    return p.verdict(points)


# ------------------------------------------------------------------------------------------ ReLUWithMask


@decides("check_non_differentiable", draw=draw_elementwise_cases)
def judge_non_differentiable(
    data: ProbeData, seed: int = 0, cases: int | Sequence[Any] = 2, points: float = 3
) -> Verdict:
    p = Parts("ReLUWithMask (a non-differentiable mask output)", "values", "non_differentiable", "mask_dtype")
    for got, x, g, where in _elementwise_cases(data, seed, cases, "ReLUWithMask", MASK_ENTRY, kinks=True):
        for problem in (
            wrong_tensor(got["output"], torch.relu(x), f"the first output (relu) {where}"),
            wrong_tensor(got["mask"], (x > 0).to(DT), f"the mask {where}"),
        ):
            if problem:
                p["values"].fail(problem)
        if got["backward_error"]:
            p["values"].fail(
                f"backward raised {got['backward_error']} {where}.",
                "backward receives one gradient per output: backward(ctx, grad_output, grad_mask).",
            )
        else:
            problem = wrong_tensor(got["grad"], vjp(torch.relu, x, g), f"the gradient of the relu output {where}")
            if problem:
                p["values"].fail(problem)
        if got["mask_dtype"] != "float64":
            p["mask_dtype"].fail(
                f"the mask is {got['mask_dtype']}; the exercise asks for a mask of x's dtype (float64 here).",
                "(x > 0).to(x.dtype): a float mask can be multiplied and averaged; an integer or bool "
                "mask would be non-differentiable anyway, which is not what this exercise practises.",
            )
            continue
        if got["mask_requires_grad"]:
            p["non_differentiable"].fail(
                f"the mask requires grad {where}, so autograd would differentiate through it and quietly return zeros.",
                "call ctx.mark_non_differentiable(mask) in forward.",
            )
        elif not got["mask_grad_error"]:
            p["non_differentiable"].fail(f"torch.autograd.grad through the mask was not refused {where}.")
    return p.verdict(points)


# ------------------------------------------------------------------------------------------ SinCos


@decides("check_materialize", draw=draw_elementwise_cases)
def judge_materialize(data: ProbeData, seed: int = 0, cases: int | Sequence[Any] = 2, points: float = 3) -> Verdict:
    p = Parts("SinCos (two outputs, set_materialize_grads(False))", "values", "none_grads", "materialize")
    for got, x, g, where in _elementwise_cases(data, seed, cases, "SinCos", SINCOS_ENTRY):
        for problem in (
            wrong_tensor(got["outputs"][0], torch.sin(x), f"the first output (sin) {where}"),
            wrong_tensor(got["outputs"][1], torch.cos(x), f"the second output (cos) {where}"),
        ):
            if problem:
                p["values"].fail(problem)
        calls = got["calls"]
        expected = {
            "both": vjp(lambda t, g=g: (torch.sin(t) * g + torch.cos(t) * 2 * g).sum(), x, torch.ones(())),
            "sin_only": vjp(torch.sin, x, g),
            "cos_only": vjp(torch.cos, x, g),
        }
        both = calls["both"]
        derivative_wrong = "error" in both
        if "error" in both:
            p["values"].fail(f"backward(ctx, grad_sin, grad_cos) raised {both['error']} {where}.")
        else:
            problem = wrong_tensor(
                both["returned"].get("value"), expected["both"], f"the gradient with both outputs used {where}"
            )
            if problem:
                derivative_wrong = True
                p["values"].fail(problem, "d sin/dx = cos x and d cos/dx = -sin x; add the two contributions.")
        for label, words in (("sin_only", "grad_cos is None"), ("cos_only", "grad_sin is None")):
            call = calls[label]
            if "error" in call:
                p["none_grads"].fail(
                    f"backward raised {call['error']} when {words} {where}.",
                    "with set_materialize_grads(False) an unused output's gradient arrives as None, not as zeros: "
                    "backward must leave out the term of an output whose gradient is None.",
                )
                continue
            problem = wrong_tensor(call["returned"].get("value"), expected[label], f"the gradient when {words} {where}")
            if problem and not (derivative_wrong and _terms_add_up(calls)):
                p["none_grads"].fail(problem)
        neither = calls["neither"]
        if "error" in neither:
            p["none_grads"].fail(
                f"backward raised {neither['error']} when both gradients are None {where}.",
                "when both are None, return None (nothing flows back).",
            )
        elif neither["returned"]["kind"] == "tensor" and (
            neither["returned"]["value"] is None or bool((neither["returned"]["value"] != 0).any())
        ):
            p["none_grads"].fail(f"backward returned a non-zero gradient when both gradients are None {where}.")
        received = got["received_when_sin_only"]
        if received is None:
            p["materialize"].fail(f"backward was not called when only the sine was used {where}.")
        elif received != ["tensor", "none"]:
            p["materialize"].fail(
                f"when only the sine is used, autograd handed backward a tensor of zeros for the cosine "
                f"{where}: materialising gradients is still on.",
                "autograd materialises missing gradients as zeros unless forward tells it not to: this exercise is "
                "about receiving None for an unused output.",
            )
    return p.verdict(points)


def _terms_add_up(calls) -> bool:
    """Whether backward's answers with one gradient None are the two terms of its answer with both (grad_sin = g,
    grad_cos = 2g): then None is handled right, and a wrong derivative is the values part's mistake alone."""
    try:
        values = [calls[k]["returned"]["value"] for k in ("both", "sin_only", "cos_only")]
        both, sin_only, cos_only = (tensor_entry(v, "a gradient") for v in values)
        return both.shape == sin_only.shape == cos_only.shape and torch.allclose(
            both, sin_only + 2 * cos_only, rtol=1e-7, atol=1e-9
        )
    except (KeyError, TypeError, CheckFailed):
        return False
