"""Notebook 04's probes: the only code of its checks that runs in the grading sandbox."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..feedback import CheckFailed
from ..probes.apply import base_apply, function_apply, function_class
from ..probes.call import call_learner
from ..registry import ProbeData
from .cases import (
    DT,
    OPCHECK_TESTS,
    TWICE_OUTPUTS,
    hvp_problem,
    inputs_elementwise,
    inputs_linear,
    inputs_training,
    linear_cases,
    shapes_of,
)

# PyTorch's own tools the probes lean on, taken when this module is imported (before any learner code runs): one the
# learner's code replaces later (torch.vmap = ...) does not answer for them; the kernel's watch flags the replacement.
_vmap, _gradcheck, _gradgradcheck = torch.vmap, torch.autograd.gradcheck, torch.autograd.gradgradcheck


_opcheck, _compile, _equal = torch.library.opcheck, torch.compile, torch.equal


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
        result_only = lambda t, checked=checked: checked(t)[0] if outputs > 1 else checked(t)  # noqa: E731
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

            def compiled_run(x0=x0, u=u):
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
