"""Notebook 04's judges of FunctionalLinear and the LinearLayer trained through it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as nnf

from ...judges.verdict import Part, Verdict
from ...registry import ProbeData, decides
from ..cases import (
    inputs_linear,
    inputs_training,
    linear_cases,
)
from .common import (
    LAYER_DATA,
    LINEAR_ENTRY,
    Parts,
    case_data,
    draw_layer_training,
    draw_linear_cases,
    mismatch_of,
    same_values,
    valid,
    wrong_tensor,
)

# ------------------------------------------------------------------------------------------ FunctionalLinear


def _judge_two_arguments(p, got, want, where: str) -> None:
    """FunctionalLinear.apply(x, weight), with no bias argument at all: the same gradients."""
    if got is None:
        raise mismatch_of("FunctionalLinear's data has no two-argument call for a case without a bias")
    call = f"FunctionalLinear.apply(x, weight), with no bias argument, {where}"
    if got["error"]:
        p["gradients"].fail(
            f"{call}: backward raised {got['error']}.",
            "called with two arguments, forward has two inputs: ctx.needs_input_grad then has two entries, and "
            "backward's third value must be None (or left out)."
            if "index" in got["error"] or "tuple" in got["error"] or "not a Variable" in got["error"]
            else None,
        )
        return
    if got["grads"] is None or len(got["grads"]) != 2:
        raise mismatch_of("FunctionalLinear's two-argument call has no gradient for each of its 2 inputs")
    for label, gk, wk in zip(("input", "weight"), got["grads"], want):
        problem = wrong_tensor(gk, wk, f"the gradient of {label} through {call}")
        if problem:
            p["gradients"].fail(problem)


@decides("check_functional_linear", draw=draw_linear_cases)
def judge_functional_linear(
    data: ProbeData, seed: int = 0, cases: int | Sequence[Any] = 3, points: float = 4
) -> Verdict:
    p = Parts("FunctionalLinear (gradients with the parameters' shapes)", "forward", "gradients", "parameter_shapes")
    sizes = linear_cases(cases)
    for case, got in enumerate(case_data(data, sizes, "FunctionalLinear", LINEAR_ENTRY)):
        x, w, b, g = inputs_linear(seed, case, sizes[case])
        bias_shape = "None" if b is None else tuple(b.shape)
        where = f"(case {case + 1}, x {tuple(x.shape)}, weight {tuple(w.shape)}, bias {bias_shape})"
        problem = wrong_tensor(got["output"], nnf.linear(x, w, b), f"forward's output {where}")
        if problem:
            transposed = got["output"] is not None and w.shape[0] == w.shape[1]
            hint = (
                "it looks like the input times the weight as stored: the weight is (out_features, in_features), as "
                "in nn.Linear, so it enters the product transposed."
                if transposed and same_values(got["output"], nnf.linear(x, w.T, b))
                else None
            )
            p["forward"].fail(problem, hint)
        xs = [x.clone().requires_grad_(), w.clone().requires_grad_()] + (
            [] if b is None else [b.clone().requires_grad_()]
        )
        want = torch.autograd.grad(nnf.linear(*xs, *([None] if b is None else [])), xs, g)
        if not got["grads_error"] and (got["grads"] is None or len(got["grads"]) != len(want)):
            raise mismatch_of(f"FunctionalLinear's case {case + 1} has no gradient for each of its {len(want)} inputs")
        _judge_linear_gradients(got, want, w, b, g, where, p["gradients"])
        if b is None:
            _judge_two_arguments(p, got["two_arguments"], want[:2], where)
        _judge_parameter_shapes(got, x, w, b, where, p["parameter_shapes"])
    return p.verdict(points)


LINEAR_LABELS = ["input", "weight", "bias"]


def _judge_linear_gradients(got, want, w, b, g, where: str, part: Part) -> None:
    """The gradients autograd delivers through the learner's backward."""
    if got["grads_error"]:
        error = got["grads_error"]
        part.fail(
            f"backward raised {error} {where}.",
            "bias may be None: then return None for it."
            if b is None and ("None" in error or "not a Variable" in error or "index 2" in error)
            else "each gradient has its input's shape: grad_weight must be (out, in), like the weight; "
            "look at the order of the factors in your product."
            if "invalid gradient at index 1" in error
            else None,
        )
        return
    for k, (gk, wk) in enumerate(zip(got["grads"], want)):
        problem = wrong_tensor(gk, wk, f"the gradient of {LINEAR_LABELS[k]} (after autograd) {where}")
        if problem:
            hint = None
            if k == 0 and gk is not None and w.shape[0] == w.shape[1] and same_values(gk, g @ w.T):
                hint = "grad_input used the weight's transpose: weight is (out, in) here, as in nn.Linear."
            part.fail(problem, hint)


def _judge_parameter_shapes(got, x, w, b, where: str, part: Part) -> None:
    """What backward itself returns for the weight and the bias, before autograd sums anything."""
    returned = got["returned"]
    if returned is None:
        part.fail(f"calling backward directly raised {got['backward_error']} {where}.")
        return
    if len(returned) < 3:
        part.fail(f"backward returned {len(returned)} value(s); it must return 3 (input, weight, bias).")
        return
    for k, target in ((1, w), (2, b)):
        r, label = returned[k], LINEAR_LABELS[k]
        if target is None:
            if r["kind"] != "none":
                part.fail(f"with bias=None backward returned a {r['kind']} for the bias; return None.")
        elif r["kind"] != "tensor":
            part.fail(f"backward returned {r['kind']} for the {label} {where}.")
        elif list(r["shape"]) != list(target.shape):
            per_sample = (
                len(r["shape"]) == target.dim() + 1
                and r["shape"][0] == x.shape[0]
                and list(r["shape"][1:]) == list(target.shape)
            )
            part.fail(
                f"backward returns a {label} gradient of shape {tuple(r['shape'])}; the {label} has shape "
                f"{tuple(target.shape)} {where}.",
                (
                    "that is one gradient per sample: autograd quietly sums it over the batch for you, after "
                    "you have paid for a (batch × out × in) tensor. Do that sum over the batch inside backward "
                    "(for the weight, one matrix product does it)."
                )
                if per_sample
                else None,
            )


# ------------------------------------------------------------------------------------------ LinearLayer


@decides("check_linear_layer", draw=draw_layer_training)
def judge_linear_layer(
    data: ProbeData,
    seed: int = 0,
    steps: int = 20,
    lr: float = 0.05,
    features: Sequence[int] = (3, 2),
    points: float = 3,
) -> Verdict:
    p = Parts(
        "LinearLayer (an nn.Module around FunctionalLinear)", "parameters", "initialisation", "extra_repr", "training"
    )
    valid(data, LAYER_DATA, "LinearLayer's data")
    _judge_layer_parameters(data, p["parameters"])
    _judge_layer_initialisation(data["weight"], data["bias"], p["initialisation"])
    _judge_layer_repr(data, p["extra_repr"])
    # a bias that is not a parameter gets no gradient and no step: training goes wrong for the same mistake
    same = "parameters" if "bias" not in data["parameters"] and p["parameters"].passed is False else None
    _judge_layer_training(data, seed, steps, lr, features, p["training"], same)
    return p.verdict(points)


def _judge_layer_parameters(data, part: Part) -> None:
    params = data["parameters"]
    if sorted(params) != ["bias", "weight"]:
        part.fail(
            f"LinearLayer(64, 32) has parameters {sorted(params)}; it should have exactly `weight` and `bias`.",
            "a tensor is a parameter of its module (seen by the optimiser, given a .grad by autograd) only when it "
            "is an nn.Parameter assigned to the module.",
        )
    elif params["weight"]["shape"] != [32, 64] or params["bias"]["shape"] != [32]:
        part.fail(
            f"LinearLayer(64, 32) has weight {tuple(params['weight']['shape'])} and bias "
            f"{tuple(params['bias']['shape'])}; they should be (32, 64) and (32,) (out, in), as in nn.Linear."
        )
    if data["parameters_no_bias"] != ["weight"] or data["bias_no_bias"] != "None":
        part.fail(
            f"LinearLayer(3, 2, bias=False) has parameters {data['parameters_no_bias']} and bias "
            f"{data['bias_no_bias']}; it should have only `weight`, and self.bias should be None.",
            "without a bias the layer still needs the attribute, set to None, and no parameter registered under "
            "that name.",
        )


def _judge_layer_initialisation(weight, bias, part: Part) -> None:
    fan_in = 64
    if weight is None or tuple(weight.shape) != (32, fan_in):
        part.fail("the weight could not be inspected (wrong shape or missing).")
    else:
        bound = math.sqrt(6.0 / fan_in)  # Kaiming uniform for ReLU: U(-b, b), b = gain·sqrt(3/fan_in), gain = sqrt(2)
        std, largest = float(weight.std()), float(weight.abs().max())
        if largest > bound * (1 + 1e-9) or abs(std - bound / math.sqrt(3)) > 0.1 * bound / math.sqrt(3):
            hint = None
            if abs(std - 1.0) < 0.1:
                hint = (
                    "the weight looks like a standard normal draw: the exercise asks for Kaiming-uniform "
                    "initialisation for ReLU, whose bounds come from the fan-in."
                )
            elif abs(std - 1 / math.sqrt(3 * fan_in)) < 0.1 / math.sqrt(3 * fan_in):
                hint = "this is nn.Linear's default (a = sqrt(5)); the exercise asks for Kaiming-uniform for ReLU."
            part.fail(
                f"the weight of LinearLayer(64, 32) has standard deviation {std:.3g} and largest "
                f"magnitude {largest:.3g}: that is not Kaiming-uniform initialisation for fan_in = {fan_in}.",
                hint,
            )
    if bias is None or bool((bias != 0).any()):
        part.fail("the bias should start at zero.")


def _judge_layer_repr(data, part: Part) -> None:
    if data["repr"].replace(" ", "") != "in_features=3,out_features=2,bias=True":
        part.fail(
            f"LinearLayer(3, 2).extra_repr() returns {data['repr'][:60]!r}; it should read "
            "'in_features=3, out_features=2, bias=True', like nn.Linear."
        )
    if data["repr_no_bias"].replace(" ", "") != "in_features=3,out_features=2,bias=False":
        part.fail(
            f"LinearLayer(3, 2, bias=False).extra_repr() returns {data['repr_no_bias'][:60]!r}; the bias "
            "entry should say False."
        )


def _sgd_losses(seed, steps, lr, train_in, train_out) -> list[float]:
    """The losses of plain SGD on the generated regression problem, with PyTorch's own linear layer."""
    X, Y, w0, b0 = inputs_training(seed, train_in, train_out)
    w, b = w0.clone().requires_grad_(), b0.clone().requires_grad_()
    losses = []
    for _ in range(steps):
        loss = torch.mean((nnf.linear(X, w, b) - Y) ** 2)
        gw, gb = torch.autograd.grad(loss, (w, b))
        with torch.no_grad():
            w -= lr * gw
            b -= lr * gb
        losses.append(float(loss.detach()))
    return losses


def _judge_layer_training(data, seed, steps, lr, features, part: Part, same: str | None) -> None:
    train_in, train_out = (int(n) for n in features)  # the layer trained (its init is checked on LinearLayer(64, 32))
    want, losses = _sgd_losses(seed, steps, lr, train_in, train_out), data["losses"]
    if len(losses) != steps:
        part.fail(f"training recorded {len(losses)} losses for {steps} steps.", same_mistake_as=same)
    else:
        bad = [k for k, (a, c) in enumerate(zip(losses, want)) if not math.isclose(a, c, rel_tol=1e-8, abs_tol=1e-12)]
        if bad:
            k = bad[0]
            part.fail(
                f"trained with SGD (lr={lr}) on a generated regression problem, the loss at step {k} is "
                f"off by {abs(losses[k] - want[k]):.3g} (relative "
                f"{abs(losses[k] - want[k]) / max(want[k], 1e-12):.2g}).",
                "the very first loss is wrong: forward computes x times the weight's transpose, plus the bias."
                if k == 0
                else "forward is right but the steps go wrong: check backward's weight and bias gradients.",
                same_mistake_as=same,
            )
    if data["grad_shapes"] != [[train_out, train_in], [train_out]]:
        part.fail(
            f"after backward the parameters' .grad of LinearLayer({train_in}, {train_out}) have shapes "
            f"{data['grad_shapes']}.",
            same_mistake_as=same,
        )
    through_function = "the layer's output must come from your Function, applied to the layer's own weight and bias."
    if not data["node"].endswith("Backward") or data["node"] in ("AddmmBackward0", "AddBackward0", "MmBackward0"):
        part.fail(f"LinearLayer.forward's output comes from {data['node']}, not from your Function.", through_function)
    elif "weight" not in data["node_inputs"] or "an operation" in data["node_inputs"]:
        part.fail(
            f"LinearLayer.forward's output comes from {data['node']}, applied to "
            f"{', '.join(data['node_inputs']) or 'nothing'}: the Function that makes the output should take "
            "the layer's weight and bias themselves, not the result of another operation.",
            through_function,
        )
