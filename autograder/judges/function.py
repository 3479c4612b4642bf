"""The judge of a learner's ``torch.autograd.Function`` (the probe is :mod:`autograder.probes.function`).

:func:`judge_function` regenerates the same inputs from the params, computes the reference (native
torch ops, registered per exercise with :func:`add_reference`), the numerical Jacobian (from the
probe's forward values at perturbed inputs: the central-difference criterion of
``torch.autograd.gradcheck``, eps = 1e-6, atol = 1e-5, rtol = 1e-3, full Jacobian when inputs x
outputs is small, gradcheck's fast mode -- random u^T J v -- when it is large) and decides. It returns a
:class:`~autograder.judges.verdict.Verdict`: a ``float`` (the points earned, what nbgrader reads as
the test cell's partial score) carrying the per-part results and the report. When every part fails
it raises :class:`CheckFailed` with the report. Reference gradients always come from PyTorch's
autograd on the reference, never from hand-written backward formulas.
"""

from __future__ import annotations

import importlib
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, fields
from types import SimpleNamespace
from typing import Any

import torch

from ..feedback import CheckFailed
from ..probes.function_cases import (
    ATOL,
    EPS,
    RTOL,
    as_outputs,
    case_args,
    fresh_args,
    inputs_for,
    random_directions,
    random_grad_outputs,
    tensor_slots,
    unit_grad_outputs,
)
from ..registry import CHECKS, ProbeData, decides, import_notebook_modules, unavailable_note
from . import answers
from .verdict import Part, Verdict, verdict_of

PICTURE_LIMIT = 400  # Jacobians up to this many entries are drawn


@dataclass(frozen=True)
class FunctionReference:
    """What one exercise's Function must compute (native torch ops only), and the hints for known mistakes."""

    name: str
    reference: Callable[..., Any]
    needs_input_grad: bool = False  # the exercise asks for `ctx.needs_input_grad` to be used
    saves: str | None = None  # "output": the exercise asks to save the output
    ref_rtol: float = 1e-7
    ref_atol: float = 1e-9
    fwd_rtol: float = 1e-9
    fwd_atol: float = 1e-11
    # the float32 run's gradients are compared with the reference too, except where the exercise's backward is itself
    # numerical (central differences in float32 are as far off as the step makes them: the dtype is still checked)
    float32_gradients: bool = True
    gradient_hints: tuple[Callable, ...] = ()  # (args, grad_outputs, index, got, expected) -> str | None
    forward_hints: tuple[Callable, ...] = ()  # (args, got_outputs, expected_outputs) -> str | None


REFERENCES: dict[str, FunctionReference] = {}


def add_reference(reference: FunctionReference) -> FunctionReference:
    REFERENCES[reference.name] = reference
    return reference


def import_notebook_judges() -> None:
    """Import every notebook's judges: where the Function exercises' references are added (nbNN/judges)."""
    import_notebook_modules()
    for module in sorted({check.judges_module for check in CHECKS.values()}):
        importlib.import_module(module)


def exercise(name: str) -> SimpleNamespace:
    """Inputs and reference of one exercise, as one object (the notebooks' judge modules load on first use)."""
    if name not in REFERENCES:
        import_notebook_judges()
    if name not in REFERENCES:
        raise ValueError(f"no reference named {name!r}; known: {sorted(REFERENCES)}{unavailable_note()}")
    inputs, reference = inputs_for(name), REFERENCES[name]
    merged = {f.name: getattr(inputs, f.name) for f in fields(inputs)}
    merged.update({f.name: getattr(reference, f.name) for f in fields(reference)})
    return SimpleNamespace(**merged)


def _index(shape, flat: int) -> str:
    if not shape:
        return ""
    idx = []
    for s in reversed(shape):
        idx.append(flat % s)
        flat //= s
    return "[" + ", ".join(map(str, reversed(idx))) + "]"


def _output_index(shapes, k: int) -> str:
    for j, s in enumerate(shapes):
        n = math.prod(s)
        if k < n:
            return ("out" if len(shapes) == 1 else f"out{j}") + _index(s, k)
        k -= n
    return f"out[{k}]"


def _compare(got: torch.Tensor, want: torch.Tensor, rtol: float, atol: float):
    """(wrong entries, largest absolute error, largest relative error among wrong entries whose value is not 0)."""
    err = (got - want).abs()
    bad = err > atol + rtol * want.abs()
    nonzero = bad & (want.abs() > atol)
    rel = err / want.abs().clamp_min(1e-300)
    return bad, float(err.max()) if err.numel() else 0.0, float(rel[nonzero].max()) if nonzero.any() else math.inf


def _errors(max_abs: float, max_rel: float) -> str:
    rel = (
        f"largest relative error {max_rel:.3g}"
        if math.isfinite(max_rel)
        else "the right value of every wrong entry is 0, so no relative error"
    )
    return f"largest absolute error {max_abs:.3g}, {rel}"


def _describe_entries(bad: torch.Tensor, out_shapes, in_name, in_shape, limit=6) -> str:
    where = torch.nonzero(bad)
    shown = [f"d{_output_index(out_shapes, int(r))}/d{in_name}{_index(in_shape, int(c))}" for r, c in where[:limit]]
    more = f" and {len(where) - limit} more" if len(where) > limit else ""
    return ", ".join(shown) + more


def _describe_grad_entries(bad: torch.Tensor, in_name, in_shape, limit=6) -> str:
    where = torch.nonzero(bad.reshape(-1)).flatten()
    shown = [f"{in_name}{_index(in_shape, int(k))}" for k in where[:limit]]
    return ", ".join(shown) + (f" and {len(where) - limit} more" if len(where) > limit else "")


def _generic_hints(got: torch.Tensor, want: torch.Tensor, per_call_rows: bool) -> list[str]:
    """Hints from the shape of the error, for a Jacobian (rows = backward calls) or stacked VJPs."""
    hints = []
    scale = float(want.abs().max()) if want.numel() else 0.0
    if scale == 0:
        return hints
    tol = 1e-6 * scale
    if torch.allclose(got, -want, atol=tol, rtol=1e-6):
        return ["the gradient has the wrong sign in every entry here: check the sign of each term in your derivative."]
    denom = float((want * want).sum())
    c = float((got * want).sum()) / denom
    if abs(c) > 1e-9 and abs(c - 1) > 1e-6 and torch.allclose(got, c * want, atol=tol, rtol=1e-6):
        return [
            f"every entry is off by the same factor (about {c:.3g}): look for a missing or extra constant in "
            "your derivative."
        ]
    if per_call_rows and got.shape[0] > 1:
        same = torch.allclose(got, got[:1].expand_as(got), atol=tol, rtol=1e-6)
        want_same = torch.allclose(want, want[:1].expand_as(want), atol=tol, rtol=1e-6)
        if same and not want_same:
            hints.append(
                "backward returns the same gradient whatever grad_output is: multiply your local derivative "
                "by grad_output (the chain rule)."
            )
    if torch.count_nonzero(got) == 0:
        hints.append("this gradient is all zeros.")
    return hints


def _as_autograd_uses_it(value: torch.Tensor, in_shape) -> torch.Tensor | None:
    """The gradient as autograd passes it on: of the input's shape; summed down to it when the input's shape
    broadcasts to the returned one (a bias gradient left with its batch dimension); None when autograd would
    raise. The shape itself is the interface part's business."""
    if list(value.shape) == list(in_shape):
        return value
    try:
        if list(torch.broadcast_shapes(tuple(in_shape), tuple(value.shape))) == list(value.shape):
            return value.sum_to_size(*in_shape) if len(in_shape) else value.sum()
    except RuntimeError:
        pass
    return None


def _gradient_matrix(data_case, slot: int, in_shape) -> torch.Tensor | None:
    """Rows = backward calls, columns = entries of input `slot`; None if some call gave something unusable.
    A gradient autograd would sum down to the input's shape is compared summed: one mistake, one part."""
    rows = []
    for returns in data_case["returns"]:
        if slot >= len(returns):
            return None
        r = returns[slot]
        value = _as_autograd_uses_it(r["value"], in_shape) if r["kind"] == "tensor" else None
        if value is None:
            return None
        rows.append(value.reshape(-1))
    return torch.stack(rows) if rows else None


def _reference_outputs(spec, args):
    with torch.no_grad():
        return tuple(o.detach() for o in as_outputs(spec.reference(*args)))


def _reference_vjps(spec, args, grad_output_calls) -> list[list]:
    """Per call, per argument: the reference gradient (autograd on the reference), or None for non-tensors."""
    slots = tensor_slots(args)
    out = []
    for gos in grad_output_calls:
        inputs = fresh_args(args)
        outs = as_outputs(spec.reference(*inputs))
        grads = torch.autograd.grad(outs, [inputs[i] for i in slots], gos, allow_unused=True)
        row = [None] * len(args)
        for i, g in zip(slots, grads):
            row[i] = torch.zeros_like(args[i]) if g is None else g.detach()
        out.append(row)
    return out


@dataclass
class _Case:
    """One case of a Function check, as every part of the judgement sees it."""

    number: int
    args: list
    slots: list[int]  # the positions of the tensor arguments
    expected: list[torch.Tensor]  # the reference outputs
    names: list[str]
    where: str

    @property
    def shapes(self) -> list[tuple]:
        return [tuple(o.shape) for o in self.expected]


def _judge_case(spec, data, seed, parts, pictures, name, double_backward):
    number = data["case"]
    args = case_args(spec, seed, number)
    names = spec.arg_names
    where = f"(case {number + 1}, inputs {', '.join(_argument_shape(n, a) for n, a in zip(names, args))})"
    case = _Case(number, args, tensor_slots(args), _reference_outputs(spec, args), names, where)
    _judge_forward(spec, data, case, parts["forward"])
    if data["backward_error"]:
        for key in ("gradcheck", "reference", "interface"):
            parts[key].fail(data["backward_error"])
        return
    _judge_returns(data, case, parts["interface"])
    _judge_conventions(spec, data, case, parts["interface"])
    _judge_gradients(spec, data, seed, case, parts, pictures, name)
    _judge_float32_values(spec, data.get("float32"), case, parts)
    if double_backward and spec.double_backward:
        _judge_double_backward(
            spec, data.get("double_backward"), args, case.shapes, seed, number, parts["double_backward"], where
        )


def _judge_forward(spec, data, case: _Case, fwd: Part) -> None:
    got_outputs, expected, where = data["outputs"], case.expected, case.where
    if len(got_outputs) != len(expected):
        fwd.fail(f"forward returned {len(got_outputs)} tensors; it should return {len(expected)} {where}.")
    else:
        for g, e in zip(got_outputs, expected):
            if tuple(g.shape) != tuple(e.shape):
                fwd.fail(f"forward's output has shape {tuple(g.shape)}; it should have shape {tuple(e.shape)} {where}.")
                continue
            bad, max_abs, max_rel = _compare(g.to(torch.float64), e, spec.fwd_rtol, spec.fwd_atol)
            if bad.any():
                entries = ", ".join(
                    _output_index([tuple(e.shape)], int(k)) for k in torch.nonzero(bad.reshape(-1)).flatten()[:6]
                )
                hints = [h(case.args, got_outputs, expected) for h in spec.forward_hints]
                fwd.fail(
                    f"forward's output is wrong in {int(bad.sum())} of {bad.numel()} entries {where}: {entries}; "
                    f"{_errors(max_abs, max_rel)}.",
                    *hints,
                )
    if data["output_dtypes"][0] != "float64":
        fwd.fail(f"forward returned a {data['output_dtypes'][0]} tensor for float64 inputs: keep the input's dtype.")


NEW_TENSOR_HINT = "a new tensor takes the default dtype unless you say otherwise: make gradients like their inputs."


def _judge_returns(data, case: _Case, interface: Part) -> None:
    """What backward returned, position by position: one value per forward argument, None for non-tensors, a
    gradient of its input's shape, dtype and device for each tensor."""
    args, names, n_args = case.args, case.names, len(case.args)
    returns = data["returns"]
    if data.get("function_class", True):
        for r in returns[:1]:
            extra_not_none = [k for k in range(n_args, len(r)) if r[k]["kind"] != "none"]
            if len(r) < n_args or extra_not_none:
                interface.fail(
                    f"backward returned {len(r)} value(s); forward takes {n_args} argument(s) "
                    f"({', '.join(names)}), so backward must return {n_args}: a gradient for each tensor, "
                    "None for each argument that is not a tensor.",
                    "wrong number of returned gradients: count the arguments of forward after ctx.",
                )
    for i, a in enumerate(args):
        if i in case.slots:
            continue
        for r in returns[:1]:
            if i < len(r) and r[i]["kind"] != "none":
                interface.fail(
                    f"backward returned a {r[i].get('type', r[i]['kind'])} for `{names[i]}`, which is "
                    f"{'None' if a is None else 'a ' + type(a).__name__}, not a tensor: its gradient must be None.",
                    "a gradient for a non-tensor argument: autograd raises an error; return None in that position.",
                )
    for i in case.slots:
        first = returns[0][i] if returns and i < len(returns[0]) else {"kind": "missing"}
        if first["kind"] == "none":
            interface.fail(
                f"backward returned None for `{names[i]}`, which requires a gradient.",
                "when ctx.needs_input_grad says an input needs a gradient, return one for it.",
            )
        elif first["kind"] == "tensor":
            _judge_gradient_like_input(first, args[i], names[i], interface)
        elif first["kind"] == "other":
            interface.fail(f"backward returned a {first['type']} for `{names[i]}`; it should return a tensor.")


def _judge_gradient_like_input(first: dict, arg: torch.Tensor, label: str, interface: Part) -> None:
    if list(first["shape"]) != list(arg.shape):
        hint = None
        if len(first["shape"]) == 2 and list(first["shape"]) == list(arg.shape)[::-1]:
            hint = "this gradient looks transposed: a gradient has the shape of its input (check the matrix products)."
        elif len(first["shape"]) == arg.dim() + 1 and list(first["shape"][1:]) == list(arg.shape):
            hint = (
                "the bias gradient still has a batch dimension. Autograd sums it down for you, so training "
                "works, but backward should return the gradient of the bias itself: the sum over the batch "
                "(dim 0)."
            )
        interface.fail(
            f"the gradient returned for `{label}` has shape {tuple(first['shape'])}; "
            f"`{label}` has shape {tuple(arg.shape)}, and its gradient must have the same shape.",
            hint,
        )
    if first["dtype"] != "float64":
        interface.fail(f"the gradient for `{label}` is {first['dtype']} but `{label}` is float64.", NEW_TENSOR_HINT)
    if first["device"] != "cpu":
        interface.fail(f"the gradient for `{label}` is on {first['device']} but `{label}` is on cpu.")


def _judge_conventions(spec, data, case: _Case, interface: Part) -> None:
    """grad_output left alone, float32 kept float32, needs_input_grad honoured, the output saved (where asked)."""
    names = case.names
    if data["grad_output_modified"]:
        interface.fail(
            "backward changed grad_output in place. grad_output belongs to autograd (other nodes may use it): "
            "compute new tensors, e.g. grad_output * y, not grad_output.mul_(y) or grad_output *= y."
        )
    f32 = data.get("float32")
    if f32 and "error" in f32:
        interface.fail(f"with float32 inputs: {f32['error']}")
    elif f32:
        if any(d != "float32" for d in f32["output_dtypes"]):
            interface.fail("with float32 inputs forward returned a different dtype: keep the input's dtype.")
        dtypes = f32["grad_dtypes"]
        wrong = [names[i] for i in case.slots if i < len(dtypes) and dtypes[i] not in (None, "float32")]
        if wrong:
            interface.fail(f"with float32 inputs the gradient for {', '.join(wrong)} is not float32.", NEW_TENSOR_HINT)
    for entry in data.get("needs_input_grad", []):
        off = entry["off"]
        if "error" in entry:
            interface.fail(f"when `{names[off]}` does not require a gradient, backward fails: {entry['error']}")
        elif spec.needs_input_grad and off < len(entry["returned"]) and entry["returned"][off] != "none":
            interface.fail(
                f"when `{names[off]}` does not require a gradient (ctx.needs_input_grad[{off}] is False), "
                "backward still computes one.",
                "skip the work autograd does not need: `if ctx.needs_input_grad[i]: ...`, else return None.",
            )
    if spec.saves == "output" and data.get("saved") is not None:
        saved = data["saved"]
        if not saved:
            interface.fail(
                "forward saved nothing with ctx.save_for_backward.",
                "save the tensor backward needs with ctx.save_for_backward(...), not as an attribute of ctx.",
            )
        elif not any(s["equals_output"] for s in saved):
            interface.fail(
                "this exercise asks forward to save its *output* for backward; it saves something else.",
                "the derivative of exp is exp itself: save the result of forward and reuse it.",
            )


F32_RTOL, F32_ATOL = 1e-3, 1e-4  # float32 arithmetic on these small cases: errors near 1e-6, far inside this


def _judge_float32_values(spec, f32, case: _Case, parts) -> None:
    """The float32 run's values against the reference on the same (float32-rounded) inputs: forward's outputs cost
    the forward part, the gradients the reference part (the part a wrong float64 gradient costs: one idea, once)."""
    if not f32 or "error" in f32 or "outputs" not in f32:
        return
    rounded = [a.to(torch.float32).to(torch.float64) if i in case.slots else a for i, a in enumerate(case.args)]
    expected = _reference_outputs(spec, rounded)
    for got, want in zip(f32["outputs"], expected):
        if tuple(got.shape) == tuple(want.shape) and _compare(got, want, F32_RTOL, F32_ATOL)[0].any():
            parts["forward"].fail(f"with float32 inputs forward's output is wrong {case.where}.")
            break
    if not spec.float32_gradients:
        return
    ones = [torch.ones(e.shape, dtype=torch.float64) for e in expected]
    reference = _reference_vjps(spec, rounded, [ones])[0]
    for i in case.slots:
        got = f32["grads"][i] if i < len(f32["grads"]) else None
        want = reference[i]
        if got is None or want is None or tuple(got.shape) != tuple(want.shape):
            continue  # the interface part judges a missing or misshapen gradient
        if _compare(got, want, F32_RTOL, F32_ATOL)[0].any():
            parts["reference"].fail(
                f"with float32 inputs the gradient for `{case.names[i]}` is wrong {case.where}, though backward "
                "must compute the same derivative in every dtype.",
                "write backward without branching on the dtype; keep its arithmetic in the inputs' dtype.",
            )


class _Hints:
    """The hints for a wrong gradient, worked out once and only when a part fails."""

    def __init__(self, find: Callable[[], list[str]]):
        self.find, self.found = find, None

    def __call__(self) -> list[str]:
        if self.found is None:
            self.found = self.find()
        return self.found


def _judge_gradients(spec, data, seed, case: _Case, parts, pictures, name) -> None:
    """backward against the numerical Jacobian (gradcheck) and against the reference backward."""
    shapes, where = case.shapes, case.where
    mode = data["mode"]
    calls = unit_grad_outputs(shapes) if mode == "full" else random_grad_outputs(shapes, seed, case.number, count=2)
    ref = _reference_vjps(spec, case.args, calls)
    directions = random_directions(case.args, seed, case.number)
    for i in case.slots:
        label, shape = case.names[i], tuple(case.args[i].shape)
        got = _gradient_matrix(data, i, shape)
        want = torch.stack([row[i].reshape(-1) for row in ref])
        pert = data["perturbed"][i]
        if got is None:
            msg = f"the gradient for `{label}` cannot be compared: it is missing or has the wrong shape {where}."
            hints = _shape_hints(data, i, ref, case.args)
            parts["gradcheck"].fail(msg, *hints)
            parts["reference"].fail(msg, *hints)
            continue
        hints = _Hints(
            lambda i=i, got=got, want=want: (
                _spec_hints(spec, case.args, calls, i, data, ref) or _generic_hints(got, want, True)
            )
        )
        if mode == "full":
            numerical = ((pert[0] - pert[1]) / (2 * EPS)).T  # (numel(out), numel(input))
            bad, max_abs, max_rel = _compare(got, numerical, RTOL, ATOL)
            if bad.any():
                parts["gradcheck"].fail(
                    f"the gradient for `{label}` disagrees with the numerical Jacobian {where} in {int(bad.sum())} of "
                    f"{bad.numel()} entries: {_describe_entries(bad, shapes, label, shape)}; "
                    f"{_errors(max_abs, max_rel)}.",
                    *hints(),
                )
                if got.numel() <= PICTURE_LIMIT:
                    title = f"{name}: d outputs / d {label} {where}"
                    pictures.append({"title": title, "numerical": numerical, "analytical": got, "bad": bad})
            bad, max_abs, max_rel = _compare(got, want, spec.ref_rtol, spec.ref_atol)
            if bad.any():
                parts["reference"].fail(
                    f"the gradient for `{label}` disagrees with the reference backward {where} in {int(bad.sum())} of "
                    f"{bad.numel()} Jacobian entries: {_describe_entries(bad, shapes, label, shape)}; "
                    f"{_errors(max_abs, max_rel)}.",
                    *hints(),
                )
        else:
            _judge_fast_mode(spec, got, want, pert, directions[i], calls, label, shape, where, parts, hints)


def _judge_fast_mode(spec, got, want, pert, direction, calls, label, shape, where, parts, hints) -> None:
    """gradcheck's fast mode: u^T J v, analytically (the VJP dotted with v) and numerically; then the reference."""
    v = direction.reshape(-1)
    for gos, vjp in zip(calls, got):
        u = torch.cat([g.reshape(-1) for g in gos])
        analytic = float(vjp @ v)
        numeric = float(u @ ((pert[0] - pert[1]) / (2 * EPS)))
        if abs(analytic - numeric) > ATOL + RTOL * abs(numeric):
            parts["gradcheck"].fail(
                f"the gradient for `{label}` disagrees with the numerical Jacobian {where}: for a random "
                f"grad_output u and direction v, u·J·v differs by {abs(analytic - numeric):.3g} "
                f"(relative {abs(analytic - numeric) / max(abs(numeric), 1e-12):.3g}).",
                *hints(),
            )
            break
    bad, max_abs, max_rel = _compare(got, want, spec.ref_rtol, spec.ref_atol)
    if bad.any():
        parts["reference"].fail(
            f"the gradient for `{label}` disagrees with the reference backward {where} in "
            f"{_describe_grad_entries(bad.any(0), label, shape)}; {_errors(max_abs, max_rel)}.",
            *hints(),
        )


def _argument_shape(name, value) -> str:
    if isinstance(value, torch.Tensor):
        return f"{name}: {tuple(value.shape)}"
    return f"{name}={value!r}"


def _shape_hints(data, i, ref, args) -> list[str]:
    hints = []
    for returns, row in zip(data["returns"], ref):
        r = returns[i] if i < len(returns) else None
        if r is None or r["kind"] != "tensor":
            continue
        value, want = r["value"], row[i]
        if (
            value.dim() == 2
            and tuple(value.shape) == tuple(want.shape)[::-1]
            and torch.allclose(value.T, want, rtol=1e-6, atol=1e-9)
        ):
            hints.append(
                "this gradient is the transpose of the right one: swap the order of the matrix product and transpose "
                "its factors."
            )
        elif (
            value.dim() == want.dim() + 1
            and tuple(value.shape[1:]) == tuple(want.shape)
            and torch.allclose(value.sum(0), want, rtol=1e-6, atol=1e-9)
        ):
            hints.append(
                "the bias is added to every row of the batch, so its gradient is the sum over the batch: sum over "
                "dim 0."
            )
        break
    return hints


def _spec_hints(spec, args, calls, i, data, ref) -> list[str]:
    hints = []
    for hint in spec.gradient_hints:
        for gos, returns, row in zip(calls[:4], data["returns"][:4], ref[:4]):
            r = returns[i] if i < len(returns) else None
            got = r["value"] if r and r["kind"] == "tensor" else None
            if got is None:
                continue
            message = hint(args, gos, i, got, row[i])
            if message:
                hints.append(message)
                break
    # the gradient of another input with the same shape
    got_rows = [
        returns[i]["value"].reshape(-1)
        for returns in data["returns"]
        if i < len(returns) and returns[i]["kind"] == "tensor" and returns[i]["shape"] == list(args[i].shape)
    ]
    if len(got_rows) == len(data["returns"]) and got_rows:
        got = torch.stack(got_rows)
        mine = torch.stack([row[i].reshape(-1) for row in ref])
        for j in tensor_slots(args):
            if j != i and args[j].shape == args[i].shape:
                other = torch.stack([row[j].reshape(-1) for row in ref])
                if not torch.allclose(got, mine, rtol=1e-6, atol=1e-9) and torch.allclose(
                    got, other, rtol=1e-6, atol=1e-9
                ):
                    hints.append(
                        f"the gradient returned for `{spec.arg_names[i]}` is the one that belongs to "
                        f"`{spec.arg_names[j]}`: check the order of the values backward returns, and which "
                        "factor goes with which input."
                    )
    # transposed, same shape (square matrices)
    for returns, row in zip(data["returns"][:4], ref[:4]):
        r = returns[i] if i < len(returns) else None
        if r and r["kind"] == "tensor" and r["value"].dim() == 2 and r["value"].shape[0] == r["value"].shape[1]:
            want = row[i]
            if not torch.allclose(r["value"], want, rtol=1e-6, atol=1e-9) and torch.allclose(
                r["value"].T, want, rtol=1e-6, atol=1e-9
            ):
                hints.append("this gradient is the transpose of the right one: check the order of the matrix product.")
                break
    return hints


def _judge_double_backward(spec, got, args, shapes, seed, case, part, where):
    if got is None:
        part.fail("double backward was not probed.")
        return
    if "skipped" in got:
        if got["skipped"] not in part.messages:
            part.messages.append(got["skipped"])
        return
    part.checked = getattr(part, "checked", 0) + 1
    if "error" in got:
        if got["error"] == "not differentiable":
            part.fail(
                f"the gradients backward returns cannot be differentiated again {where}.",
                "write backward with differentiable torch operations on tensors (no .detach(), .item() or NumPy) "
                "so that autograd can record it too. In-place writes are fine on a tensor backward made itself "
                "(e.g. a clone of grad_output), not on grad_output or a saved tensor.",
            )
        else:
            part.fail(f"double backward failed {where}: {got['error']}")
        return
    slots = tensor_slots(args)
    u = random_grad_outputs(shapes, seed, case + 1000, count=1)[0]
    inputs = fresh_args(args)
    outs = as_outputs(spec.reference(*inputs))
    grads = torch.autograd.grad(outs, [inputs[i] for i in slots], u, create_graph=True, allow_unused=True)
    flat = torch.cat([g.reshape(-1) for g in grads])
    total = flat.numel()
    want = torch.zeros(total, total, dtype=torch.float64)
    for r in range(total):
        if flat.requires_grad:
            row = torch.autograd.grad(flat[r], [inputs[i] for i in slots], retain_graph=True, allow_unused=True)
            want[r] = torch.cat(
                [(z if z is not None else torch.zeros_like(inputs[i])).reshape(-1) for z, i in zip(row, slots)]
            )
    analytic = got["analytic"]
    numerical = (got["perturbed"][0] - got["perturbed"][1]) / (2 * EPS)
    bad, max_abs, max_rel = _compare(analytic, numerical, RTOL, ATOL)
    if bad.any():
        part.fail(
            f"the second derivatives through your backward disagree with finite differences of your backward {where} "
            f"in {int(bad.sum())} of {bad.numel()} entries; largest absolute error {max_abs:.3g}.",
            "backward must be written with differentiable torch operations for double backward to be right.",
        )
    bad, max_abs, _ = _compare(analytic, want, 1e-6, 1e-8)
    if bad.any():
        part.fail(
            f"the second derivatives through your backward disagree with the reference {where} in "
            f"{int(bad.sum())} of {bad.numel()} entries; largest absolute error {max_abs:.3g}."
        )


def _judge_cuda(spec, data, seed, part, names):
    for case_data in data:
        got = case_data.get("cuda")
        if got is None:
            return
        if "skipped" in got:
            part.passed = None
            part.messages = [got["skipped"]]
            return
        if "error" in got:
            part.fail(f"on CUDA tensors: {got['error']}")
            return
        args = case_args(spec, seed, case_data["case"])
        if any(d != "cuda" for d in got["output_devices"]):
            part.fail(
                "for CUDA inputs forward returned a tensor on another device: create new tensors on the input's device."
            )
        expected = _reference_outputs(spec, args)
        for g, e in zip(got["outputs"], expected):
            if g.shape != e.shape or not torch.allclose(g.to(torch.float64), e, rtol=1e-7, atol=1e-9):
                part.fail("for CUDA inputs forward gives different values than on the CPU.")
        for i in tensor_slots(args):
            r = got["returns"][i] if i < len(got["returns"]) else {"kind": "missing"}
            if r["kind"] == "tensor" and r["device"] != "cuda":
                part.fail(
                    f"for CUDA inputs the gradient for `{names[i]}` is on {r['device']}: create it on the input's "
                    "device."
                )
        if got["grad_output_modified"]:
            part.fail("on CUDA, backward changed grad_output in place.")


def draw_seed(rng: random.Random, count: int) -> dict[str, Any]:
    """Function checks take their inputs from a seed: a fresh one (the call keeps its own `cases=`)."""
    return {"seed": rng.randrange(1, 10**6)}


@decides("check_function", draw=draw_seed)
def judge_function(
    data: ProbeData,
    reference: str,
    seed: int = 0,
    cases: int | None = None,
    double_backward: bool = False,
    cuda: bool = True,
    points: float = 1,
    name: str | None = None,
) -> Verdict:
    spec = exercise(reference)
    name = data.get("name") or name or spec.title
    parts = {k: Part(k) for k in ("forward", "gradcheck", "reference", "interface")}
    if double_backward and spec.double_backward:
        parts["double_backward"] = Part("double_backward")
    if cuda:
        parts["cuda"] = Part("cuda")
    pictures: list = []
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise CheckFailed(answers.MISMATCH.format(why="the Function's data is not a dict of cases"))
    asked = list(range(cases or spec.cases))
    for i, case_data in enumerate(answers.per_case(data["cases"], asked)):
        if not isinstance(case_data, dict) or case_data.get("case") != i:
            raise CheckFailed(answers.MISMATCH.format(why=f"case {i} is missing or out of order"))
    for case_data in data["cases"]:
        case_data = {**case_data, "function_class": data.get("function_class", True)}
        _judge_case(spec, case_data, seed, parts, pictures, name, double_backward)
    if cuda:
        _judge_cuda(spec, data["cases"], seed, parts["cuda"], spec.arg_names)
    db = parts.get("double_backward")
    if db is not None and db.passed is True:
        if getattr(db, "checked", 0) == 0:
            db.passed = None  # every case too large: not scored, and the report says why
        else:
            db.messages.clear()
    return verdict_of(list(parts.values()), points, f"{name} ({spec.title})", pictures[:2])
