"""Checks of notebook 04 (the ctx toolbox and higher derivatives): the names its test cells import, and their probes.

Each ``probe_x(obj, seed=..., ...)`` runs inside the grading sandbox: it calls the learner's object (only ever
through ``call_learner``) on inputs made from ``seed`` (by the ``inputs_x`` functions below, which the judges call
too) and returns plain data: numbers, strings, booleans, lists, dicts and CPU tensors. No reference answer lives
here: the judges (below the judges line) recompute them and decide, part by part. Called in a notebook, a
check prints which parts pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from .feedback import CheckFailed
from .probes.apply import base_apply, function_apply, function_class
from .probes.call import call_learner
from .registry import NotebookChecks, ProbeData, show_verdict

DT = torch.float64

# PyTorch's own tools the probes lean on, taken when this module is imported (before any learner code runs): one the
# learner's code replaces later (torch.vmap = ...) does not answer for them; the kernel's watch flags the replacement.
_vmap, _gradcheck, _gradgradcheck = torch.vmap, torch.autograd.gradcheck, torch.autograd.gradgradcheck
_opcheck, _compile, _equal = torch.library.opcheck, torch.compile, torch.equal


# ------------------------------------------------------------------------------------------ inputs


def _gen(seed: int, salt: int) -> torch.Generator:
    return torch.Generator().manual_seed(7919 * int(seed) + salt)


def _randn(gen, *shape):
    return torch.randn(shape, generator=gen, dtype=DT)  # a tuple: () makes a 0-dimensional tensor


def _away_from_zero(gen, *shape, low=0.2):
    magnitude = low + torch.rand(shape, generator=gen, dtype=DT)
    return torch.where(torch.rand(shape, generator=gen, dtype=DT) < 0.5, -magnitude, magnitude)


_SHAPES = [(5,), (2, 3), (3, 1, 2), (4,)]


def case_list(cases: int | Sequence[Any], standard: list) -> list:
    """The cases a check is asked for: `cases=N` names the first N standard ones (cycled); a list names
    them itself (hidden tests draw them: other shapes, other sizes)."""
    if isinstance(cases, int) and not isinstance(cases, bool):
        return [standard[k % len(standard)] for k in range(cases)]
    if not isinstance(cases, (list, tuple)):
        raise TypeError(f"cases should be a number or a list of cases, not {type(cases).__name__}")
    return [tuple(c) if isinstance(c, (list, tuple)) else c for c in cases]


def shapes_of(cases: int | Sequence[Any]) -> list[tuple]:
    """The input shapes of an elementwise check's cases."""
    return [tuple(int(n) for n in shape) for shape in case_list(cases, _SHAPES)]


def inputs_elementwise(
    seed: int, case: int, kinks: bool = False, shape: tuple | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(x, g): an input (away from 0 when the function has a kink there) and a grad_output. `shape`:
    the case's own shape (else the standard one of that case number)."""
    gen = _gen(seed, 11 + case)
    shape = _SHAPES[case % len(_SHAPES)] if shape is None else tuple(shape)
    x = _away_from_zero(gen, *shape) if kinks else _randn(gen, *shape)
    return x, _randn(gen, *shape)


_LINEAR_CASES = [(4, 3, 2, True), (3, 2, 3, False), (6, 4, 4, True), (2, 5, 1, True)]


def linear_cases(cases: int | Sequence[Any]) -> list[tuple]:
    """(batch, in, out, bias) of each FunctionalLinear case."""
    return [(int(b), int(i), int(o), bool(bias)) for b, i, o, bias in case_list(cases, _LINEAR_CASES)]


def inputs_linear(
    seed: int, case: int, sizes: tuple | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """(x, weight, bias or None, grad_output) for FunctionalLinear: weight is (out, in), as in nn.Linear.
    `sizes`: the case's own (batch, in, out, bias) (else the standard one of that case number)."""
    batch, fan_in, fan_out, bias = _LINEAR_CASES[case % len(_LINEAR_CASES)] if sizes is None else sizes
    gen = _gen(seed, 31 + case)
    x, w = _randn(gen, batch, fan_in), _randn(gen, fan_out, fan_in)
    b = _randn(gen, fan_out) if bias else None
    return x, w, b, _randn(gen, batch, fan_out)


def inputs_training(seed: int, fan_in: int, fan_out: int, batch: int = 32) -> tuple[torch.Tensor, ...]:
    """A generated regression problem and a starting point: (X, Y, weight0, bias0)."""
    gen = _gen(seed, 57)
    X = _randn(gen, batch, fan_in)
    true_w, true_b = _randn(gen, fan_out, fan_in), _randn(gen, fan_out)
    Y = X @ true_w.T + true_b + 0.1 * _randn(gen, batch, fan_out)
    return X, Y, 0.1 * _randn(gen, fan_out, fan_in), torch.zeros(fan_out, dtype=DT)


HVP_PROBLEMS = ("cubic", "sin_product", "quadratic_form", "log_sum_exp", "rosenbrock", "tanh_layer")


def hvp_problem(
    name: str, seed: int = 0, size: int = 4
) -> tuple[Callable[[torch.Tensor], torch.Tensor], torch.Tensor, torch.Tensor]:
    """(f, x, v): a scalar test function of one tensor of `size` entries, a point and a direction (from `seed`)."""
    if name not in HVP_PROBLEMS:
        raise ValueError(f"unknown hvp problem {name!r}")
    gen = _gen(sum(map(ord, name)) + 100_003 * int(seed), 3)
    n = int(size)
    x, v, A = _randn(gen, n), _randn(gen, n), _randn(gen, n, n)
    problems = {
        "cubic": lambda x: (x**3).sum(),
        "sin_product": lambda x: torch.sin(x).prod(),
        "quadratic_form": lambda x: x @ (A @ x),  # A is not symmetric: the Hessian is A + Aᵀ
        "log_sum_exp": lambda x: torch.logsumexp(x, dim=0),
        "rosenbrock": lambda x: (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum(),
        "tanh_layer": lambda x: torch.tanh(A @ x).pow(2).sum(),
    }
    return problems[name], x, v


# ------------------------------------------------------------------------------------------ helpers


def _apply(F, *args, name: str):
    return call_learner(function_apply(F, name), *args, name=f"{name}.apply")


def _outputs(value, count: int, name: str) -> tuple:
    outs = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if len(outs) != count or not all(isinstance(o, torch.Tensor) for o in outs):
        kinds = ", ".join(type(o).__name__ for o in outs)
        raise CheckFailed(
            f"`{name}.apply` should return {count} tensor(s); it returned {len(outs)} value(s) ({kinds})."
        )
    return outs


def _cpu(t):
    return None if t is None else t.detach().to("cpu").clone()


def _error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:400]}"


def _attempt(fn, *args, name: str, **kwargs):
    """call_learner(fn, ...) -> (result, None), or (None, the error in one line) when the learner's code raised:
    what went wrong is data for the judge. A blank stub still raises ("... is not written yet")."""
    try:
        return call_learner(fn, *args, name=name, **kwargs), None
    except CheckFailed as failure:
        if "not written yet" in str(failure):
            raise
        cause = failure.__cause__
        return None, (_error(cause) if cause is not None else str(failure).splitlines()[0][:400])


def _grad(outputs, inputs, grad_outputs, **kwargs):
    """torch.autograd.grad through the learner's backward; an error in it becomes data."""
    return _attempt(
        torch.autograd.grad,
        outputs,
        inputs,
        grad_outputs,
        name="backward",
        call="torch.autograd.grad through your backward",
        **kwargs,
    )


def _summary(value) -> dict:
    if value is None:
        return {"kind": "none"}
    if isinstance(value, torch.Tensor):
        return {
            "kind": "tensor",
            "shape": list(value.shape),
            "dtype": str(value.dtype).replace("torch.", ""),
            "value": _cpu(value).to(DT) if value.is_floating_point() else None,
        }
    return {"kind": "other", "type": type(value).__name__}


# ------------------------------------------------------------------------------------------ Cube: save_for_backward


def probe_saved_tensors(
    obj: Any, seed: int = 0, cases: int | Sequence[Any] = 2, points: float | None = None
) -> ProbeData:
    """Values of forward and backward, and what happens when the input is changed in place after forward."""
    F = function_class(obj, "Cube")
    data = []
    for case, shape in enumerate(shapes_of(cases)):
        x0, g = inputs_elementwise(seed, case, shape=shape)
        base = x0.clone().requires_grad_()
        x = base * 1.0
        y = _outputs(_apply(F, x, name="Cube"), 1, "Cube")[0]
        grads, err = _grad(y, base, g)
        entry = {"output": _cpu(y), "grad": _cpu(grads[0]) if grads else None, "backward_error": err}
        # The same again, then change x in place between forward and backward.
        base = x0.clone().requires_grad_()
        x = base * 1.0
        y = _outputs(_apply(F, x, name="Cube"), 1, "Cube")[0]
        with torch.no_grad():
            x.add_(1.0)
        grads, err = _grad(y, base, g)
        entry["after_inplace"] = {"error": err, "grad": _cpu(grads[0]) if grads else None}
        data.append(entry)
    return data


# ------------------------------------------------------------------------------------------ InplaceReLU: mark_dirty


def probe_inplace(obj: Any, seed: int = 0, cases: int | Sequence[Any] = 2, points: float | None = None) -> ProbeData:
    F = function_class(obj, "InplaceReLU")
    data = []
    for case, shape in enumerate(shapes_of(cases)):
        x0, g = inputs_elementwise(seed, case, kinks=True, shape=shape)
        base = x0.clone().requires_grad_()
        x = base * 1.0  # not a leaf: an in-place change of it is allowed
        version = x._version
        out = _outputs(_apply(F, x, name="InplaceReLU"), 1, "InplaceReLU")[0]
        entry = {
            "output": _cpu(out),
            "returns_input": out is x,
            "same_memory": out.data_ptr() == x.data_ptr(),
            "version_bumped": x._version > version,
            "input_after": _cpu(x),
        }
        grads, err = _grad(out, base, g, retain_graph=True)
        entry["grad"], entry["backward_error"] = (_cpu(grads[0]) if grads else None), err
        # Code after the call goes on using x: its gradient must go through the ReLU too.
        grads, err = _grad(x, base, g)
        entry["grad_through_input"], entry["input_error"] = (_cpu(grads[0]) if grads else None), err
        data.append(entry)
    return data


# -------------------------------------------------------------------------------- ReLUWithMask: mark_non_differentiable


def probe_non_differentiable(
    obj: Any, seed: int = 0, cases: int | Sequence[Any] = 2, points: float | None = None
) -> ProbeData:
    F = function_class(obj, "ReLUWithMask")
    data = []
    for case, shape in enumerate(shapes_of(cases)):
        x0, g = inputs_elementwise(seed, case, kinks=True, shape=shape)
        x = x0.clone().requires_grad_()
        y, mask = _outputs(_apply(F, x, name="ReLUWithMask"), 2, "ReLUWithMask")
        entry = {
            "output": _cpu(y),
            "mask": _cpu(mask).to(DT),
            "mask_dtype": str(mask.dtype).replace("torch.", ""),
            "mask_requires_grad": bool(mask.requires_grad),
        }
        grads, err = _grad(y, x, g, retain_graph=True)
        entry["grad"], entry["backward_error"] = (_cpu(grads[0]) if grads else None), err
        grads, err = _grad(mask.sum(), x, None) if mask.is_floating_point() else (None, "integer or bool mask")
        entry["mask_grad"], entry["mask_grad_error"] = (_cpu(grads[0]) if grads else None), err
        data.append(entry)
    return data


# --------------------------------------------------------------------------------- SinCos: set_materialize_grads(False)


def probe_materialize(
    obj: Any, seed: int = 0, cases: int | Sequence[Any] = 2, points: float | None = None
) -> ProbeData:
    F = function_class(obj, "SinCos")
    received: list = []

    class Spy(F):  # records what autograd hands the learner's backward, then calls it
        @staticmethod
        def backward(ctx, *grads):
            received.append(["none" if g is None else "tensor" for g in grads])
            return F.backward(ctx, *grads)

    data = []
    for case, shape in enumerate(shapes_of(cases)):
        x0, g = inputs_elementwise(seed, case, shape=shape)
        x = x0.clone().requires_grad_()
        s, c = _outputs(_apply(F, x, name="SinCos"), 2, "SinCos")
        entry = {"outputs": [_cpu(s), _cpu(c)], "calls": {}}
        for label, used in (
            ("both", (g, 2 * g)),
            ("sin_only", (g, None)),
            ("cos_only", (None, g)),
            ("neither", (None, None)),
        ):
            x = x0.clone().requires_grad_()
            s, c = _outputs(_apply(F, x, name="SinCos"), 2, "SinCos")
            node = s.grad_fn
            if node is None:
                raise CheckFailed(
                    "The outputs of `SinCos.apply` are not connected to the graph: return tensors computed by forward."
                )
            raw, err = _attempt(node.apply, *used, name="SinCos.backward")
            if err:
                entry["calls"][label] = {"error": err}
            else:
                raw = raw[0] if isinstance(raw, (tuple, list)) and len(raw) == 1 else raw
                entry["calls"][label] = {"returned": _summary(raw)}
        # Through autograd with only the sine used: does backward get None for the cosine?
        received.clear()
        x = x0.clone().requires_grad_()
        s, c = _outputs(_apply(Spy, x, name="SinCos"), 2, "SinCos")
        _, err = _grad(s, x, g)
        entry["received_when_sin_only"] = received[0] if received else None
        data.append(entry)
    return data


# ------------------------------------------------------------------------------------------ second derivatives


def _second_derivatives(fn, x0, u, v, name):
    """(first, hvp, error): the VJP u^T J at x0, and its derivative along v, by double backward. Like gradgradcheck,
    grad_output requires grad too, so that @once_differentiable reports itself."""

    def both():
        x = x0.clone().requires_grad_()
        seed = u.clone().requires_grad_()
        (first,) = torch.autograd.grad(fn(x), x, seed, create_graph=True)
        if not first.requires_grad:
            return first, None
        first.backward(v)  # the whole graph, so that an @once_differentiable node reports itself
        return first, torch.zeros_like(x0) if x.grad is None else x.grad

    result, err = _attempt(both, name=f"{name}.backward", call="differentiating your backward again")
    if err:
        return None, None, err
    first, second = result
    if second is None:
        return _cpu(first), None, "not differentiable: the gradient returned by backward does not require grad"
    return _cpu(first), _cpu(second), None


TWICE_OUTPUTS = {"tanh": 1, "sinh": 3}  # Sinh returns (sinh x, e^x, e^-x): intermediates as outputs


def probe_twice_differentiable(
    obj: Any, reference: str, seed: int = 0, cases: int | Sequence[Any] = 2, points: float | None = None
) -> ProbeData:
    """Forward, first and second derivatives (double backward) of a Function of one tensor; for a Function with
    several outputs (the first is the result, the others intermediates), the gradient through all outputs too."""
    F = function_class(obj, "the Function")
    outputs = TWICE_OUTPUTS[reference]
    name = F.__name__
    data = []
    for case, shape in enumerate(shapes_of(cases)):
        x0, u = inputs_elementwise(seed, case, shape=shape)
        v = inputs_elementwise(seed + 1000, case, shape=shape)[1]
        x = x0.clone().requires_grad_()
        outs = _outputs(_apply(F, x, name=name), outputs, name)
        entry = {"outputs": [_cpu(o) for o in outs]}
        # first derivative with a grad_output for every output (the extra ones matter for double backward)
        us = [u] + [inputs_elementwise(seed + 2000 + k, case, shape=shape)[1] for k in range(1, outputs)]
        grads, err = _grad(outs, x, us)
        entry["grad_all"], entry["grad_all_error"] = (_cpu(grads[0]) if grads else None), err
        checked = function_apply(F, name)
        result_only = lambda t: checked(t)[0] if outputs > 1 else checked(t)  # noqa: E731
        first, second, err = _second_derivatives(result_only, x0, u, v, name)
        entry.update(first=first, hvp=second, second_error=err)
        ok, err = _attempt(
            _gradgradcheck,
            result_only,
            (x0.clone().requires_grad_(),),
            raise_exception=False,
            name=f"{name}.backward",
            call="gradgradcheck on your Function",
        )
        entry["gradgradcheck"] = bool(ok) if err is None else err
        data.append(entry)
    return data


def _hvp_hint(exc: Exception) -> str:
    if "does not require grad and does not have a grad_fn" in str(exc):
        return (
            "\nHint: the gradient you differentiate a second time must itself have been recorded as a graph; "
            "whether it is, is decided by the first call that computes it."
        )
    return ""


def probe_hvp(
    hessian_vector_product: Any, problems: Sequence[str], seed: int = 0, size: int = 4, points: float | None = None
) -> ProbeData:
    data = []
    for name in problems:
        f, x, v = hvp_problem(name, seed, size)
        given_x, given_v = x.clone(), v.clone()
        result = call_learner(
            hessian_vector_product, f, given_x, given_v, name="hessian_vector_product", crash_hint=_hvp_hint
        )
        if not isinstance(result, torch.Tensor):
            raise CheckFailed(
                f"`hessian_vector_product(f, x, v)` should return a tensor; it returned a {type(result).__name__}."
            )
        data.append(
            {
                "hvp": _cpu(result).to(DT),
                "requires_grad": bool(result.requires_grad),
                "inputs_changed": not (_equal(given_x.detach(), x) and _equal(given_v.detach(), v)),
            }
        )
    return data


# ------------------------------------------------------------------------------------------ FunctionalLinear


def probe_functional_linear(
    obj: Any, seed: int = 0, cases: int | Sequence[Any] = 3, points: float | None = None
) -> ProbeData:
    F = function_class(obj, "FunctionalLinear")
    data = []
    for case, sizes in enumerate(linear_cases(cases)):
        x0, w0, b0, g = inputs_linear(seed, case, sizes)
        x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
        b = None if b0 is None else b0.clone().requires_grad_()
        y = _outputs(_apply(F, x, w, b, name="FunctionalLinear"), 1, "FunctionalLinear")[0]
        entry = {"output": _cpu(y)}
        if y.grad_fn is None:
            raise CheckFailed(
                "The output of `FunctionalLinear.apply` is not connected to the graph: return the tensor forward "
                "computed."
            )
        # what backward itself returns, before autograd reduces anything to the inputs' shapes
        raw, err = _attempt(y.grad_fn.apply, g.clone(), name="FunctionalLinear.backward")
        if err:
            entry["returned"], entry["backward_error"] = None, err
        else:
            raw = tuple(raw) if isinstance(raw, (tuple, list)) else (raw,)
            entry["returned"], entry["backward_error"] = [_summary(r) for r in raw], None
        # and what ends up in .grad after autograd has done its part
        x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
        b = None if b0 is None else b0.clone().requires_grad_()
        y = _apply(F, x, w, b, name="FunctionalLinear")
        wanted = [t for t in (x, w, b) if t is not None]
        grads, err = _grad(y, wanted, g, allow_unused=True)
        entry["grads"] = [_cpu(t) for t in grads] if grads else None
        entry["grads_error"] = err
        # without a bias, also the two-argument call FunctionalLinear.apply(x, weight): backward's ctx then
        # knows of two inputs only (ctx.needs_input_grad has two entries)
        entry["two_arguments"] = _two_argument_grads(F, x0, w0, g) if b0 is None else None
        data.append(entry)
    return data


def _two_argument_grads(F, x0, w0, g) -> dict:
    x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
    y, err = _attempt(function_apply(F, "FunctionalLinear"), x, w, name="FunctionalLinear.apply")
    if err:
        return {"grads": None, "error": err}
    if not isinstance(y, torch.Tensor) or y.grad_fn is None:
        return {"grads": None, "error": "apply(x, weight) did not return a tensor connected to the graph"}
    grads, err = _grad(y, [x, w], g, allow_unused=True)
    return {"grads": [_cpu(t) for t in grads] if grads else None, "error": err}


# ------------------------------------------------------------------------------------------ LinearLayer (nn.Module)


def probe_linear_layer(
    obj: Any,
    seed: int = 0,
    steps: int = 20,
    lr: float = 0.05,
    features: Sequence[int] = (3, 2),
    points: float | None = None,
) -> ProbeData:
    if not isinstance(obj, type) or not issubclass(obj, torch.nn.Module):
        raise CheckFailed("`LinearLayer` should be a subclass of torch.nn.Module (the class itself).")
    data: dict = {}
    torch.manual_seed(int(seed))
    big = call_learner(obj, 64, 32, name="LinearLayer")  # 2048 weights: enough to see the distribution, small to ship
    params = dict(big.named_parameters())
    data["parameters"] = {
        k: {"shape": list(p.shape), "is_parameter": isinstance(p, torch.nn.Parameter)} for k, p in params.items()
    }
    data["weight"] = (
        _cpu(getattr(big, "weight", None)) if isinstance(getattr(big, "weight", None), torch.Tensor) else None
    )
    data["bias"] = _cpu(getattr(big, "bias", None)) if isinstance(getattr(big, "bias", None), torch.Tensor) else None
    small = call_learner(obj, 3, 2, name="LinearLayer")
    data["repr"] = call_learner(small.extra_repr, name="LinearLayer.extra_repr")
    no_bias = call_learner(obj, 3, 2, bias=False, name="LinearLayer")
    data["repr_no_bias"] = call_learner(no_bias.extra_repr, name="LinearLayer.extra_repr")
    data["parameters_no_bias"] = sorted(k for k, _ in no_bias.named_parameters())
    data["bias_no_bias"] = repr(getattr(no_bias, "bias", "missing"))[:40]
    if not (isinstance(data["repr"], str) and isinstance(data["repr_no_bias"], str)):
        raise CheckFailed("`extra_repr()` should return a string.")

    data.update(_train_layer(obj, seed, steps, lr, features))
    return data


def _train_layer(obj, seed, steps, lr, features) -> dict:
    """Training on a generated problem, from a starting point the check chooses: the losses, the gradients'
    shapes, and the node the layer's output comes from."""
    fan_in, fan_out = (int(n) for n in features)
    X, Y, w0, b0 = inputs_training(seed, fan_in, fan_out)
    layer = call_learner(obj, fan_in, fan_out, name="LinearLayer")
    made = f"`LinearLayer({fan_in}, {fan_out})`"
    if not (
        isinstance(getattr(layer, "weight", None), torch.Tensor)
        and isinstance(getattr(layer, "bias", None), torch.Tensor)
    ):
        raise CheckFailed(f"{made} should have parameters `weight` (out_features, in_features) and `bias`.")
    layer = layer.to(DT)
    with torch.no_grad():
        if tuple(layer.weight.shape) != tuple(w0.shape) or tuple(layer.bias.shape) != tuple(b0.shape):
            raise CheckFailed(
                f"{made} has weight {tuple(layer.weight.shape)} and bias {tuple(layer.bias.shape)}; "
                f"they should be (out_features, in_features) = {(fan_out, fan_in)} and (out_features,) = "
                f"{(fan_out,)}, as in nn.Linear."
            )
        layer.weight.copy_(w0)
        layer.bias.copy_(b0)
    losses, grad_shapes = [], None
    for _ in range(steps):  # plain SGD, written out (torch.optim's first use costs seconds of imports)
        layer.weight.grad = layer.bias.grad = None
        out = call_learner(layer, X, name="LinearLayer.forward")
        if not isinstance(out, torch.Tensor):
            raise CheckFailed("`LinearLayer.forward` should return a tensor.")
        loss = torch.mean((out - Y) ** 2)
        _, err = _attempt(loss.backward, name="backward", call="loss.backward() through LinearLayer")
        if err:
            raise CheckFailed(f"Backward through `LinearLayer` raised {err}")
        grad_shapes = [None if t.grad is None else list(t.grad.shape) for t in (layer.weight, layer.bias)]
        with torch.no_grad():
            for t in (layer.weight, layer.bias):
                if t.grad is not None:  # a parameter without a gradient does not move (the judge will see it)
                    t -= lr * t.grad
        losses.append(float(loss.detach()))
    node = call_learner(layer, X, name="LinearLayer.forward").grad_fn
    return {
        "losses": losses,
        "grad_shapes": grad_shapes,
        "node": type(node).__name__,
        "node_inputs": _node_inputs(node, {"weight": layer.weight, "bias": layer.bias}),
    }


def _node_inputs(node, parameters: dict) -> list[str]:
    """What the node that made the layer's output takes as inputs: the layer's own parameters ("weight", "bias"), an
    input that needs no gradient ("none"), or another operation's output ("an operation": the Function was applied
    to something already computed, such as F.linear's output)."""
    out = []
    for fn, _ in getattr(node, "next_functions", ()) or ():
        variable = getattr(fn, "variable", None) if fn is not None else None
        name = next((k for k, p in parameters.items() if variable is not None and variable is p), None)
        out.append("none" if fn is None else name or "an operation")
    return out


# ------------------------------------------------------------------------------------------ setup_context + jvp + vmap


OUTPUT_AS_TANGENT = "jvp returned forward's own output as the tangent"


def _tangent_guarded(F):
    """F, with its jvp refused (a RuntimeError) when it hands back forward's own output as the output's tangent:
    autograd would make the output its own tangent, and the whole process dies (a segfault), losing every later
    test. Only for a Function written with setup_context (overriding it changes nothing else then)."""
    if "setup_context" not in dir(F) or F.setup_context is torch.autograd.Function.setup_context:
        return F
    setup, jvp = F.setup_context, F.jvp

    class Guarded(F):
        @staticmethod
        def setup_context(ctx, inputs, output):
            outs = output if isinstance(output, (tuple, list)) else (output,)
            ctx._revad_output_ptrs = {o.data_ptr() for o in outs if isinstance(o, torch.Tensor)}
            return setup(ctx, inputs, output)

        @staticmethod
        def jvp(ctx, *tangents):
            result = jvp(ctx, *tangents)
            for r in result if isinstance(result, (tuple, list)) else (result,):
                if isinstance(r, torch.Tensor) and r.data_ptr() in getattr(ctx, "_revad_output_ptrs", ()):
                    raise RuntimeError(OUTPUT_AS_TANGENT)
            return result

    Guarded.__name__ = Guarded.__qualname__ = F.__name__
    return Guarded


def _forward_mode(F, x0, t):
    import torch.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        dual = fwAD.make_dual(x0.clone(), t.clone())
        out = base_apply(F)(dual)
        return _cpu(fwAD.unpack_dual(out).tangent)


def _vmap_results(F, seed, case, shape):
    x0 = inputs_elementwise(seed, case, shape=shape)[0]
    batch = torch.stack([x0, -x0, 0.5 * x0])  # (3, *shape)
    moved = batch.movedim(0, -1)  # the batch dimension last
    out = {}
    for label, tensor, dim in (("in_dims=0", batch, 0), ("in_dims=-1", moved, -1)):
        result, err = _attempt(
            _vmap(base_apply(F), in_dims=dim, out_dims=dim),
            tensor,
            name=F.__name__,
            call=f"torch.vmap({F.__name__}.apply, in_dims={dim})",
        )
        out[label] = {"error": err} if err else {"value": _cpu(result.movedim(dim, 0))}
    return out


def _has_setup_context(F) -> bool:
    """The class, or a learner's class it derives from (not torch's own), defines setup_context."""
    return "setup_context" in F.__dict__ or any(
        "setup_context" in c.__dict__
        for c in F.__mro__[1:]
        if c is not torch.autograd.Function
        and issubclass(c, torch.autograd.Function)
        and c.__module__ != "torch.autograd.function"
    )


def probe_modern(
    obj: Any,
    seed: int = 0,
    cases: int | Sequence[Any] = 2,
    hand_written_vmap: bool = False,
    points: float | None = None,
) -> ProbeData:
    F = function_class(obj, "the Function")
    name = F.__name__
    calls = {"vmap": 0}
    data = {
        "has_setup_context": _has_setup_context(F),
        "generate_vmap_rule": bool(getattr(F, "generate_vmap_rule", False)),
        "cases": [],
    }
    if hand_written_vmap:
        if "vmap" not in F.__dict__:
            data["vmap_defined"] = False
        else:
            data["vmap_defined"] = True
            inner = F.__dict__["vmap"]
            inner = inner.__func__ if isinstance(inner, staticmethod) else inner

            class Counted(F):
                @staticmethod
                def vmap(info, in_dims, *args):
                    calls["vmap"] += 1
                    return inner(info, in_dims, *args)

            Counted.__name__ = Counted.__qualname__ = name  # messages name the learner's class
            F_vmap = Counted
    for case, shape in enumerate(shapes_of(cases)):
        x0, u = inputs_elementwise(seed, case, shape=shape)
        x = x0.clone().requires_grad_()
        y = _outputs(_apply(F, x, name=name), 1, name)[0]
        entry = {"output": _cpu(y)}
        grads, err = _grad(y, x, u)
        entry["grad"], entry["backward_error"] = (_cpu(grads[0]) if grads else None), err
        if hand_written_vmap:  # this exercise is about vmap only
            entry["vmap"] = _vmap_results(F_vmap if data["vmap_defined"] else F, seed, case, shape)
            data["cases"].append(entry)
            continue
        guarded = _tangent_guarded(F)
        entry["jvp"], entry["jvp_error"] = _attempt(
            _forward_mode, guarded, x0, u, name=f"{name}.jvp", call="forward-mode AD through your jvp"
        )
        ok, err = _attempt(
            _gradcheck,
            base_apply(guarded),
            (x0.clone().requires_grad_(),),
            check_forward_ad=True,
            raise_exception=False,
            name=name,
            call="gradcheck(..., check_forward_ad=True)",
        )
        entry["gradcheck_forward_ad"] = bool(ok) if err is None else err
        entry["vmap"] = _vmap_results(F, seed, case, shape)
        data["cases"].append(entry)
    data["vmap_calls"] = calls["vmap"]
    return data


# ------------------------------------------------------------------------------------------ torch.library.custom_op

OPCHECK_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor")


def probe_custom_op(obj: Any, seed: int = 0, cases: int | Sequence[Any] = 2, points: float | None = None) -> ProbeData:
    from torch._library.custom_ops import CustomOpDef

    if not isinstance(obj, CustomOpDef):
        raise CheckFailed(
            "`softplus_op` should be the function decorated with @torch.library.custom_op(...) "
            f"(a CustomOpDef); it is a {type(obj).__name__}."
        )
    data = {"name": str(getattr(obj, "_qualname", "")), "cases": []}
    for case, shape in enumerate(shapes_of(cases)):
        x0, u = inputs_elementwise(seed, case, shape=shape)
        x = x0.clone().requires_grad_()
        y = call_learner(obj, x, name="softplus_op")
        if not isinstance(y, torch.Tensor):
            raise CheckFailed("`softplus_op(x)` should return a tensor.")
        entry = {"output": _cpu(y)}
        grads, err = _grad(y, x, u)
        entry["grad"], entry["backward_error"] = (_cpu(grads[0]) if grads else None), err
        # opcheck's AOT-dispatch test is left to the real torch.compile run below (same tracing, half the time)
        result, err = _attempt(
            _opcheck,
            obj,
            (x0.clone().requires_grad_(),),
            test_utils=OPCHECK_TESTS,
            raise_exception=False,
            name="softplus_op",
            call="torch.library.opcheck(softplus_op, ...)",
        )
        entry["opcheck"] = (
            {"opcheck": err}
            if err
            else {
                k: ("SUCCESS" if v == "SUCCESS" else _error(v) if isinstance(v, BaseException) else str(v)[:300])
                for k, v in result.items()
            }
        )
        if case == 0:  # compiling costs ~0.5 s: once per check, on the first case

            def compiled_run():
                compiled = _compile(lambda t, w: (obj(t) * w).sum(), backend="aot_eager", fullgraph=True)
                xc = x0.clone().requires_grad_()
                loss = compiled(xc, u)
                loss.backward()
                return {"loss": float(loss.detach()), "grad": _cpu(xc.grad)}

            try:
                result, err = _attempt(
                    compiled_run,
                    name="softplus_op",
                    call="torch.compile(..., backend='aot_eager', fullgraph=True) through softplus_op",
                )
            finally:
                torch._dynamo.reset()  # forget the compiled graph: a re-registered op must be traced afresh
            entry["compiled"] = {"error": err} if err else result
        data["cases"].append(entry)
    return data


# ------------------------------------------------------------------ the checks
# judges below the judges line. by_hand: a Function's backward is the learner's own formula (as nb03's
# check_function), so a backward handed to torch.autograd is flagged; hessian_vector_product is autograd's own job,
# and LinearLayer only wraps FunctionalLinear, so neither is.
checks = NotebookChecks(__name__, show=show_verdict)
check_saved_tensors = checks.add("check_saved_tensors", probe_saved_tensors, by_hand=True)
check_inplace = checks.add("check_inplace", probe_inplace, by_hand=True)
check_non_differentiable = checks.add("check_non_differentiable", probe_non_differentiable, by_hand=True)
check_materialize = checks.add("check_materialize", probe_materialize, by_hand=True)
check_twice_differentiable = checks.add("check_twice_differentiable", probe_twice_differentiable, by_hand=True)
check_hvp = checks.add("check_hvp", probe_hvp, by_hand=False)
check_functional_linear = checks.add("check_functional_linear", probe_functional_linear, by_hand=True)
check_linear_layer = checks.add("check_linear_layer", probe_linear_layer, by_hand=False)
# the check refuses a jvp that returns forward's output as the tangent (it segfaults); other self-referential
# tangents may still kill the kernel: the grader then names the likely cause
check_modern = checks.add(
    "check_modern",
    probe_modern,
    by_hand=True,
    crash_hint="likely a jvp whose tangent is a tensor forward saved (a tangent is computed from the incoming one)",
)
check_custom_op = checks.add("check_custom_op", probe_custom_op, by_hand=True)

__all__ = checks.names


# ==== judges: decided outside the grading sandbox; the sandbox's copy of this module ends at this line ====
# Judges of notebook 04: they decide outside the learner's process, from the probes' data alone.
#
# Every reference is recomputed here with PyTorch's own operations and autograd (torch.sin, torch.tanh,
# torch.nn.functional.softplus, torch.autograd.functional.hvp, ...): no backward formula of the exercises
# is written here. Each check is split into parts that earn their share of the points, so that a
# Function that computes the right numbers but misses the property the exercise is about (mark_dirty,
# mark_non_differentiable, None gradients, double backward, parameter-shaped gradients, opcheck) loses
# exactly that part, with a hint.

import math
import random

import torch.nn.functional as nnf

from .judges import answers
from .judges.verdict import Part, Verdict, verdict_of
from .registry import decides

# ---------------------------------------------------------------------------------- hidden cases, drawn at grading time
# The visible tests use the standard cases (shapes (5,), (2, 3), (3, 1, 2), (4,); seed 0); the drawers add what
# they do not show: other seeds, a 0-dimensional tensor, longer and size-1 dimensions, other layer sizes.


def _draw_shape(rng) -> list[int]:
    return [rng.choice((1, 2, 3, 4, 5, 7)) for _ in range(rng.randint(1, 3))]


def draw_elementwise_cases(rng: random.Random, count: int) -> dict:
    """A fresh seed and `count` shapes, one of them a 0-dimensional tensor when there are two or more."""
    shapes = [_draw_shape(rng) for _ in range(count)]
    if count >= 2:
        shapes[rng.randrange(count)] = []
    return {"seed": rng.randrange(1, 10**6), "cases": shapes}


def draw_linear_cases(rng: random.Random, count: int) -> dict:
    """(batch, in, out, bias) cases: among them a square weight with batch != in (where a transposed weight runs
    and gives wrong numbers) and a batch of one (where a per-sample gradient is off by a leading 1 only)."""
    cases = [[rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 5), rng.random() < 0.7] for _ in range(count)]
    if count >= 1:
        n = rng.randint(2, 5)
        cases[0] = [n + rng.randint(1, 3), n, n, True]
    if count >= 2:
        cases[1][0] = 1
    rng.shuffle(cases)
    return {"seed": rng.randrange(1, 10**6), "cases": cases}


def draw_hvp_problems(rng: random.Random, count: int) -> dict:
    names = list(HVP_PROBLEMS)
    rng.shuffle(names)
    return {"problems": (names * count)[:count], "seed": rng.randrange(1, 10**6), "size": rng.randint(2, 7)}


def draw_layer_training(rng: random.Random, count: int) -> dict:
    """One training problem (`count` is not used: a layer is trained once) of another size, seed, length and rate."""
    return {
        "seed": rng.randrange(1, 10**6),
        "steps": rng.randint(10, 30),
        "lr": rng.choice((0.02, 0.05, 0.1)),
        "features": [rng.randint(1, 6), rng.randint(1, 4)],
    }


RTOL, ATOL = 1e-7, 1e-9


# ------------------------------------------------------------------------------------------ helpers


class Parts:
    """A check's named parts, one idea each; the verdict follows the one scoring rule (verdict.verdict_of)."""

    def __init__(self, title: str, *names: str):
        self.title = title
        self.parts = {name: Part(name) for name in names}

    def __getitem__(self, name: str) -> Part:
        return self.parts[name]

    def verdict(self, points: float) -> Verdict:
        return verdict_of(list(self.parts.values()), points, self.title)


def _tensor(value, what: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise CheckFailed(f"{what}: the data could not be read back (expected a tensor).")
    return value.to(DT)


def _wrong(got, want, what: str, rtol=RTOL, atol=ATOL) -> str | None:
    """None when got matches want; else a description that gives no expected value."""
    if got is None:
        return f"{what} is missing."
    got = _tensor(got, what)
    if tuple(got.shape) != tuple(want.shape):
        return f"{what} has shape {tuple(got.shape)}; it should have shape {tuple(want.shape)}."
    err = (got - want).abs()
    bad = err > atol + rtol * want.abs()
    if not bad.any():
        return None
    where = ", ".join(str(tuple(i)) if len(i) != 1 else f"[{i[0]}]" for i in torch.nonzero(bad)[:4].tolist())
    return (
        f"{what} is wrong in {int(bad.sum())} of {bad.numel()} entries ({where}); largest error {float(err.max()):.3g}."
    )


def _same(got, want, rtol=1e-6, atol=1e-9) -> bool:
    return (
        got is not None
        and tuple(got.shape) == tuple(want.shape)
        and torch.allclose(got.to(DT), want, rtol=rtol, atol=atol)
    )


def _vjp(fn, x, u):
    x = x.clone().requires_grad_()
    (g,) = torch.autograd.grad(fn(x), x, u)
    return g


def _values(part: Part, got: dict, x, g, reference, where: str, what="forward", error_hint=None, grad_hint=None):
    """The usual first part: forward's output against reference(x), backward's gradient against autograd's.
    grad_hint(got_grad) -> str | None names a known mistake."""
    problem = _wrong(got["output"], reference(x), f"{what}'s output {where}")
    if problem:
        part.fail(problem)
    if got["backward_error"]:
        part.fail(f"backward raised {got['backward_error']} {where}.", error_hint)
        return
    problem = _wrong(got["grad"], _vjp(reference, x, g), f"the gradient {where}")
    if problem:
        part.fail(problem, grad_hint(got["grad"]) if grad_hint and got["grad"] is not None else None)


# ------------------------------------------------------------------------------------------ the probes' data, validated
# A judge reads nothing it has not checked against the form its probe writes (answers.MISMATCH otherwise):
# a schema is a kind ("tensor", "text", "flag", "number", "int"; "tensor?" allows None), None (must be None),
# a dict (exactly these keys), a list (exactly these entries), or one of the classes below.


class ListOf:
    def __init__(self, item, length=None):
        self.item, self.length = item, length


class DictOf:
    def __init__(self, item):
        self.item = item


class OneOf:
    def __init__(self, *forms):
        self.forms = forms


class Literal:
    def __init__(self, value):
        self.value = value


def _mismatch(why: str) -> CheckFailed:
    return CheckFailed(answers.MISMATCH.format(why=why))


def _text(value, what):
    if not isinstance(value, str):
        raise _mismatch(f"{what} is a {type(value).__name__}, not a string")
    return value


_KINDS = {
    "tensor": answers.tensor,
    "text": _text,
    "flag": answers.flag,
    "number": answers.number,
    "int": answers.integer,
}


def valid(value: Any, schema: Any, what: str) -> Any:
    """`value` when it has the form `schema` describes; otherwise CheckFailed(answers.MISMATCH)."""
    if schema is None:
        if value is not None:
            raise _mismatch(f"{what} is a {type(value).__name__}, not None")
    elif isinstance(schema, str):
        if not (schema.endswith("?") and value is None):
            _KINDS[schema.rstrip("?")](value, what)
    elif isinstance(schema, dict):
        answers.entry(value, what, list(schema))
        for key, item in schema.items():
            valid(value[key], item, f"{what}[{key!r}]")
    elif isinstance(schema, list):
        if not isinstance(value, list) or len(value) != len(schema):
            raise _mismatch(f"{what} is not a list of {len(schema)}")
        for k, (v, item) in enumerate(zip(value, schema)):
            valid(v, item, f"{what}[{k}]")
    elif isinstance(schema, ListOf):
        if not isinstance(value, list) or (schema.length is not None and len(value) != schema.length):
            raise _mismatch(f"{what} is not a list" + ("" if schema.length is None else f" of {schema.length}"))
        for k, v in enumerate(value):
            valid(v, schema.item, f"{what}[{k}]")
    elif isinstance(schema, DictOf):
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise _mismatch(f"{what} is not a dict with string keys")
        for k, v in value.items():
            valid(v, schema.item, f"{what}[{k!r}]")
    elif isinstance(schema, OneOf):
        for form in schema.forms:
            try:
                return valid(value, form, what)
            except CheckFailed:
                pass
        raise _mismatch(f"{what} has none of the forms expected")
    elif isinstance(schema, Literal):
        if type(value) is not type(schema.value) or value != schema.value:
            raise _mismatch(f"{what} is not {schema.value!r}")
    else:
        raise TypeError(f"not a schema: {schema!r}")
    return value


def _case_data(data, cases: Sequence[Any], what: str, schema, schema_first=None) -> list:
    """The probe's list of per-case entries: exactly one per case, each of the form `schema`
    (`schema_first` for the first case, where it differs)."""
    items = answers.per_case(data, cases)
    for k, got in enumerate(items):
        valid(got, schema_first if k == 0 and schema_first is not None else schema, f"{what}'s case {k + 1}")
    return items


TENSOR, MAYBE_TENSOR, MAYBE_TEXT = "tensor", "tensor?", "text?"
SUMMARY = OneOf(
    {"kind": Literal("none")},
    {"kind": Literal("tensor"), "shape": ListOf("int"), "dtype": "text", "value": MAYBE_TENSOR},
    {"kind": Literal("other"), "type": "text"},
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
HVP_ENTRY = {"hvp": TENSOR, "requires_grad": "flag", "inputs_changed": "flag"}
LINEAR_ENTRY = {
    "output": TENSOR,
    "returned": OneOf(None, ListOf(SUMMARY)),
    "backward_error": MAYBE_TEXT,
    "grads": OneOf(None, ListOf(MAYBE_TENSOR)),
    "grads_error": MAYBE_TEXT,
    "two_arguments": OneOf(None, {"grads": OneOf(None, ListOf(MAYBE_TENSOR)), "error": MAYBE_TEXT}),
}
_SHAPE_OR_NONE = OneOf(None, ListOf("int"))
LAYER_DATA = {
    "parameters": DictOf({"shape": ListOf("int"), "is_parameter": "flag"}),
    "weight": MAYBE_TENSOR,
    "bias": MAYBE_TENSOR,
    "repr": "text",
    "repr_no_bias": "text",
    "parameters_no_bias": ListOf("text"),
    "bias_no_bias": "text",
    "losses": ListOf("number"),
    "grad_shapes": OneOf(None, [_SHAPE_OR_NONE] * 2),
    "node": "text",
    "node_inputs": ListOf("text"),
}
_VMAP_RESULT = OneOf({"error": "text"}, {"value": TENSOR})
_VMAP = {"in_dims=0": _VMAP_RESULT, "in_dims=-1": _VMAP_RESULT}
MODERN_ENTRY = {
    "output": TENSOR,
    "grad": MAYBE_TENSOR,
    "backward_error": MAYBE_TEXT,
    "jvp": MAYBE_TENSOR,
    "jvp_error": MAYBE_TEXT,
    "gradcheck_forward_ad": OneOf("flag", "text"),
    "vmap": _VMAP,
}
VMAP_ENTRY = {"output": TENSOR, "grad": MAYBE_TENSOR, "backward_error": MAYBE_TEXT, "vmap": _VMAP}
OP_ENTRY = {"output": TENSOR, "grad": MAYBE_TENSOR, "backward_error": MAYBE_TEXT, "opcheck": DictOf("text")}
OP_FIRST_ENTRY = {**OP_ENTRY, "compiled": OneOf({"error": "text"}, {"loss": "number", "grad": MAYBE_TENSOR})}


def _twice_entry(count: int) -> dict:
    return {
        "outputs": [TENSOR] * count,
        "grad_all": MAYBE_TENSOR,
        "grad_all_error": MAYBE_TEXT,
        "first": MAYBE_TENSOR,
        "hvp": MAYBE_TENSOR,
        "second_error": MAYBE_TEXT,
        "gradgradcheck": OneOf("flag", "text"),
    }


# ------------------------------------------------------------------------------------------ Cube


def _elementwise_cases(data, seed, cases, title, schema, kinks=False):
    """(got, x, g, where) for each case of an element-wise Function's data, validated against its probe's form."""
    shapes = shapes_of(cases)
    for case, got in enumerate(_case_data(data, shapes, title, schema)):
        x, g = inputs_elementwise(seed, case, kinks=kinks, shape=shapes[case])
        yield got, x, g, f"(case {case + 1}, x of shape {tuple(x.shape)})"


@decides("check_saved_tensors", draw=draw_elementwise_cases)
def judge_saved_tensors(data: ProbeData, seed: int = 0, cases: int | Sequence[Any] = 2, points: float = 2) -> Verdict:
    p = Parts("Cube (x³, saving x with ctx.save_for_backward)", "values", "version_counter")
    for got, x, g, where in _elementwise_cases(data, seed, cases, "Cube", SAVED_ENTRY):
        _values(
            p["values"],
            got,
            x,
            g,
            lambda t: t**3,
            where,
            grad_hint=lambda grad: (
                "backward returns the local derivative alone: multiply it by grad_output (the chain rule)."
                if _same(grad, 3 * x**2)
                else "the derivative of x³ is 3x²: a factor 3 is missing."
                if _same(grad, g * x**2)
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
        if after["grad"] is not None and _same(after["grad"], g * 3 * changed**2):
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
        _values(
            p["values"],
            got,
            x,
            g,
            torch.relu,
            where,
            grad_hint=lambda grad: (
                "backward lets the gradient through everywhere: it must be 0 where x was negative."
                if _same(grad, g)
                else None
            ),
        )
        if not got["version_bumped"]:
            p["in_place"].fail(
                f"forward left x unchanged and returned a new tensor {where}: this exercise asks for an in-place ReLU.",
                "change x itself (x.clamp_(min=0) or x[x < 0] = 0) and return x.",
            )
            continue  # x was not changed: nothing for mark_dirty to declare
        problem = _wrong(got["input_after"], want_out, f"x after the call {where}")
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
        elif got["grad"] is not None and not _same(got["grad_through_input"], got["grad"].to(DT)):
            hint = None
            if got["grad_through_input"] is not None and _same(got["grad_through_input"], g):
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
            _wrong(got["output"], torch.relu(x), f"the first output (relu) {where}"),
            _wrong(got["mask"], (x > 0).to(DT), f"the mask {where}"),
        ):
            if problem:
                p["values"].fail(problem)
        if got["backward_error"]:
            p["values"].fail(
                f"backward raised {got['backward_error']} {where}.",
                "backward receives one gradient per output: backward(ctx, grad_output, grad_mask).",
            )
        else:
            problem = _wrong(got["grad"], _vjp(torch.relu, x, g), f"the gradient of the relu output {where}")
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
            _wrong(got["outputs"][0], torch.sin(x), f"the first output (sin) {where}"),
            _wrong(got["outputs"][1], torch.cos(x), f"the second output (cos) {where}"),
        ):
            if problem:
                p["values"].fail(problem)
        calls = got["calls"]
        expected = {
            "both": _vjp(lambda t: (torch.sin(t) * g + torch.cos(t) * 2 * g).sum(), x, torch.ones(())),
            "sin_only": _vjp(torch.sin, x, g),
            "cos_only": _vjp(torch.cos, x, g),
        }
        both = calls["both"]
        derivative_wrong = "error" in both
        if "error" in both:
            p["values"].fail(f"backward(ctx, grad_sin, grad_cos) raised {both['error']} {where}.")
        else:
            problem = _wrong(
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
            problem = _wrong(call["returned"].get("value"), expected[label], f"the gradient when {words} {where}")
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
        both, sin_only, cos_only = (_tensor(v, "a gradient") for v in values)
        return both.shape == sin_only.shape == cos_only.shape and torch.allclose(
            both, sin_only + 2 * cos_only, rtol=1e-7, atol=1e-9
        )
    except (KeyError, TypeError, CheckFailed):
        return False


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
    for case, got in enumerate(_case_data(data, shapes, title, _twice_entry(count))):
        shape = shapes[case]
        x, u = inputs_elementwise(seed, case, shape=shape)
        v = inputs_elementwise(seed + 1000, case, shape=shape)[1]
        where = f"(case {case + 1}, x of shape {tuple(x.shape)})"
        want_first = _vjp(first_only, x, u)
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
        problem = _wrong(o, w, f"{names[k]} {where}")
        if problem:
            part.fail(problem)
    if got["first"] is not None:
        problem = _wrong(got["first"], want_first, f"backward's gradient {where}")
        if problem:
            part.fail(problem)


def _judge_intermediates(got, want_all, want_first, where: str, part: Part) -> bool:
    """The gradient with a grad_output for every output; True when backward ignores the extra outputs' ones."""
    if got["grad_all_error"]:
        part.fail(f"backward raised {got['grad_all_error']} with a gradient for every output {where}.")
        return False
    problem = _wrong(got["grad_all"], want_all, f"the gradient with a grad_output for every output {where}")
    if not problem:
        return False
    ignores = got["grad_all"] is not None and _same(got["grad_all"], want_first)
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
    problem = _wrong(
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
    for name, got in zip(problems, _case_data(data, problems, "hessian_vector_product", HVP_ENTRY)):
        f, x, v = hvp_problem(name, seed, size)
        _, want = torch.autograd.functional.hvp(f, x, v)
        call = f"hessian_vector_product(f, x, v) for the test function '{name}'"
        if got["inputs_changed"]:
            p["values"].fail(f"`{call}` changed x or v in place: work on x.detach().requires_grad_() instead.")
            continue
        problem = _wrong(got["hvp"], want, f"`{call}`", rtol=1e-6, atol=1e-8)
        if problem:
            g = got["hvp"]
            x_ = x.clone().requires_grad_()
            (grad,) = torch.autograd.grad(f(x_), x_)
            hint = None
            if g is not None and _same(g, grad):
                hint = (
                    "this is the gradient, not the Hessian-vector product: differentiate (gradient · v) a second time."
                )
            elif g is not None and _same(g, -want):
                hint = "the sign is flipped."
            p["values"].fail(problem, hint)
    return p.verdict(points)


# ------------------------------------------------------------------------------------------ FunctionalLinear


def _judge_two_arguments(p, got, want, where: str) -> None:
    """FunctionalLinear.apply(x, weight), with no bias argument at all: the same gradients."""
    if got is None:
        raise _mismatch("FunctionalLinear's data has no two-argument call for a case without a bias")
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
        raise _mismatch("FunctionalLinear's two-argument call has no gradient for each of its 2 inputs")
    for label, gk, wk in zip(("input", "weight"), got["grads"], want):
        problem = _wrong(gk, wk, f"the gradient of {label} through {call}")
        if problem:
            p["gradients"].fail(problem)


@decides("check_functional_linear", draw=draw_linear_cases)
def judge_functional_linear(
    data: ProbeData, seed: int = 0, cases: int | Sequence[Any] = 3, points: float = 4
) -> Verdict:
    p = Parts("FunctionalLinear (gradients with the parameters' shapes)", "forward", "gradients", "parameter_shapes")
    sizes = linear_cases(cases)
    for case, got in enumerate(_case_data(data, sizes, "FunctionalLinear", LINEAR_ENTRY)):
        x, w, b, g = inputs_linear(seed, case, sizes[case])
        bias_shape = "None" if b is None else tuple(b.shape)
        where = f"(case {case + 1}, x {tuple(x.shape)}, weight {tuple(w.shape)}, bias {bias_shape})"
        problem = _wrong(got["output"], nnf.linear(x, w, b), f"forward's output {where}")
        if problem:
            transposed = got["output"] is not None and w.shape[0] == w.shape[1]
            hint = (
                "it looks like the input times the weight as stored: the weight is (out_features, in_features), as "
                "in nn.Linear, so it enters the product transposed."
                if transposed and _same(got["output"], nnf.linear(x, w.T, b))
                else None
            )
            p["forward"].fail(problem, hint)
        xs = [x.clone().requires_grad_(), w.clone().requires_grad_()] + (
            [] if b is None else [b.clone().requires_grad_()]
        )
        want = torch.autograd.grad(nnf.linear(*xs, *([None] if b is None else [])), xs, g)
        if not got["grads_error"] and (got["grads"] is None or len(got["grads"]) != len(want)):
            raise _mismatch(f"FunctionalLinear's case {case + 1} has no gradient for each of its {len(want)} inputs")
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
        problem = _wrong(gk, wk, f"the gradient of {LINEAR_LABELS[k]} (after autograd) {where}")
        if problem:
            hint = None
            if k == 0 and gk is not None and w.shape[0] == w.shape[1] and _same(gk, g @ w.T):
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


# ------------------------------------------------------------------------------------------ setup_context, jvp, vmap


@decides("check_modern", draw=draw_elementwise_cases)
def judge_modern(
    data: ProbeData, seed: int = 0, cases: int | Sequence[Any] = 2, hand_written_vmap: bool = False, points: float = 3
) -> Verdict:
    title = "Softplus with a hand-written vmap" if hand_written_vmap else "Softplus (setup_context, jvp, vmap)"
    p = Parts(title, "values", *(("vmap",) if hand_written_vmap else ("forward_mode", "vmap")))
    shapes = shapes_of(cases)
    top = {
        "has_setup_context": "flag",
        "generate_vmap_rule": "flag",
        "vmap_calls": "int",
        "cases": ListOf(VMAP_ENTRY if hand_written_vmap else MODERN_ENTRY, length=len(shapes)),
    }
    valid(data, {**top, "vmap_defined": "flag"} if hand_written_vmap else top, f"{title}'s data")
    if not data["has_setup_context"]:
        p["values"].fail(
            "the Function has no setup_context: write forward(x) without ctx and setup_context(ctx, inputs, output)."
        )
    if hand_written_vmap:
        _judge_vmap_rule_defined(data, p["vmap"])
    for case, got in enumerate(answers.per_case(data["cases"], shapes)):
        x, u = inputs_elementwise(seed, case, shape=shapes[case])
        where = f"(case {case + 1}, x of shape {tuple(x.shape)})"
        _values(p["values"], got, x, u, nnf.softplus, where)
        if not hand_written_vmap:
            _judge_forward_mode(got, x, u, where, p["forward_mode"])
        _judge_vmap(got["vmap"], x, where, p["vmap"], hand_written_vmap)
    return p.verdict(points)


def _judge_vmap_rule_defined(data, part: Part) -> None:
    if not data["vmap_defined"]:
        part.fail(
            "the Function defines no `vmap` staticmethod of its own.",
            "the exercise asks for the rule written by hand, as a staticmethod of the class; a generated rule "
            "does not count here.",
        )
    elif data["generate_vmap_rule"]:
        part.fail("generate_vmap_rule is True, so PyTorch writes the rule and your vmap is never used.")
    elif data["vmap_calls"] == 0:
        part.fail("torch.vmap never called your vmap staticmethod.")


def _judge_forward_mode(got, x, u, where: str, part: Part) -> None:
    """The jvp's tangent against forward-mode AD through softplus, and gradcheck's forward-mode check."""
    import torch.autograd.forward_ad as fwAD

    if got["jvp_error"]:
        hint = None
        if "not enough values to unpack" in got["jvp_error"] or "saved" in got["jvp_error"]:
            hint = (
                "in jvp, ctx.saved_tensors holds only what setup_context saved for forward mode: that is a "
                "list of its own, apart from what it saved for backward."
            )
        elif "own output as the tangent" in got["jvp_error"]:
            hint = (
                "a tangent is a new tensor, computed from the tangent jvp receives; handing back a tensor "
                "forward saved makes the output its own tangent (which crashes Python outside the grader)."
            )
        elif "jvp" in got["jvp_error"]:
            hint = "forward mode needs a jvp rule: from the input's tangent, the output's tangent."
        part.fail(f"forward-mode AD raised {got['jvp_error']} {where}.", hint)
        return
    with fwAD.dual_level():
        want_t = fwAD.unpack_dual(nnf.softplus(fwAD.make_dual(x, u))).tangent
    problem = _wrong(got["jvp"], want_t, f"jvp's tangent {where}")
    if problem:
        unchanged = got["jvp"] is not None and _same(got["jvp"], u)
        hint = (
            "jvp returned the tangent unchanged: the output's tangent is the input's tangent times softplus's "
            "derivative."
            if unchanged
            else None
        )
        part.fail(problem, hint)
    elif got["gradcheck_forward_ad"] is not True:
        part.fail(f"gradcheck(..., check_forward_ad=True) fails {where}: {got['gradcheck_forward_ad']}")


def _judge_vmap(results: dict, x, where: str, part: Part, hand_written: bool) -> None:
    batch = torch.stack([x, -x, 0.5 * x])
    for label, result in results.items():
        if "error" in result:
            hint = (
                "vmap needs a rule for a Function: let PyTorch generate it (a class attribute says so) or write one."
                if "generate_vmap_rule" in result["error"] or "vmap staticmethod" in result["error"]
                else None
            )
            if hand_written and "out_dims" in result["error"].lower():
                hint = (
                    "a vmap rule returns the output and where its batch dimension is: softplus works entry by "
                    "entry, so the batch dimension stays where the input's was."
                )
            part.fail(f"torch.vmap with {label} raised {result['error']} {where}.", hint)
            continue
        problem = _wrong(result["value"], nnf.softplus(batch), f"torch.vmap's result with {label} {where}")
        if problem:
            part.fail(
                problem,
                "softplus works entry by entry: the output's batch dimension stays where the input's was, and "
                "the rule must say where that is."
                if hand_written
                else None,
            )


# ------------------------------------------------------------------------------------------ custom_op


@decides("check_custom_op", draw=draw_elementwise_cases)
def judge_custom_op(data: ProbeData, seed: int = 0, cases: int | Sequence[Any] = 2, points: float = 4) -> Verdict:
    p = Parts("softplus_op (torch.library.custom_op)", "values", "opcheck", "compile")
    shapes = shapes_of(cases)
    answers.entry(data, "softplus_op's data", ("name", "cases"))
    valid(data["name"], "text", "softplus_op's name")
    for case, got in enumerate(_case_data(data["cases"], shapes, "softplus_op", OP_ENTRY, OP_FIRST_ENTRY)):
        x, u = inputs_elementwise(seed, case, shape=shapes[case])
        where = f"(case {case + 1}, x of shape {tuple(x.shape)})"
        want = _vjp(nnf.softplus, x, u)
        register_hint = (
            "autograd does not know the op's backward: a custom op is opaque to autograd until its backward and "
            "setup_context are registered with it."
            if got["backward_error"]
            and ("autograd" in got["backward_error"] or "does not require grad" in got["backward_error"])
            else None
        )
        _values(p["values"], got, x, u, nnf.softplus, where, what="the op", error_hint=register_hint)
        opcheck = got["opcheck"]
        failed = {k: v for k, v in opcheck.items() if v != "SUCCESS"}
        missing = [t for t in OPCHECK_TESTS if t not in opcheck]
        if missing and "opcheck" not in opcheck:
            p["opcheck"].fail(f"opcheck did not run {', '.join(missing)}.")
        for test, message in failed.items():
            hint = None
            if "fake" in message.lower():
                hint = (
                    "opcheck and torch.compile run the op on fake tensors (shapes and dtypes, no data): the op needs a "
                    "fake implementation, one that makes an output of the right shape and dtype without computing it."
                )
            elif "alias" in message.lower():
                hint = "a custom op must return a new tensor, not its input or a view of it."
            p["opcheck"].fail(f"opcheck's {test} fails {where}: {message[:300]}", hint)
        compiled = got.get("compiled")  # the first case only (validated above)
        if compiled is None:
            continue
        if "error" in compiled:
            hint = (
                "torch.compile traces the op with fake tensors: the op needs a fake implementation."
                if "fake" in compiled["error"].lower()
                else None
            )
            p["compile"].fail(
                f"torch.compile(..., backend='aot_eager', fullgraph=True) failed {where}: {compiled['error'][:300]}",
                hint,
                same_mistake_as="opcheck" if hint else None,  # the missing fake fails opcheck too
            )
        else:
            # compiled, the op runs the same forward and backward: a mistake in them is the values part's
            same = "values" if p["values"].passed is False else None
            if not math.isclose(compiled["loss"], float((nnf.softplus(x) * u).sum()), rel_tol=1e-9, abs_tol=1e-12):
                p["compile"].fail(f"compiled, the op gives a different value {where}.", same_mistake_as=same)
            problem = _wrong(compiled["grad"], want, f"the compiled op's gradient {where}")
            if problem:
                p["compile"].fail(problem, same_mistake_as=same)
    return p.verdict(points)
