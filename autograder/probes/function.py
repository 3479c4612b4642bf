"""The probe of a learner's ``torch.autograd.Function``: forward, backward, the interface, double backward, CUDA.

:func:`probe_function` is the only code that calls the learner's Function. It calls ``apply`` on
the exercise's inputs (:mod:`autograder.probes.function_cases`), then calls the learner's
``backward`` through the node ``apply`` put in the graph (``out.grad_fn.apply(*grad_outputs)``), so
that it sees exactly what backward returned (autograd itself would silently sum a wrong-shaped bias
gradient, or cast a wrong dtype). It returns plain data: numbers, strings, lists, dicts and CPU tensors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..feedback import CheckFailed
from ..registry import NotebookChecks, ProbeData, show_verdict
from .apply import engine_agrees, function_apply, function_class
from .call import call_learner
from .function_cases import (
    EPS,
    as_outputs,
    case_args,
    fresh_args,
    inputs_for,
    is_float_tensor,
    numel_out,
    random_directions,
    random_grad_outputs,
    tensor_slots,
    unit_grad_outputs,
    use_full_jacobian,
)
from .torch_errors import translate

# The probe's own reference, taken at import (before any learner code): a torch.equal replaced in the kernel
# (always True) cannot hide a grad_output changed in place or change what forward is seen to save.
_equal = torch.equal


def _learner_call(fn: Callable, *args: Any, name: str) -> Any:
    """feedback.call_learner, with PyTorch's errors translated."""
    try:
        return call_learner(fn, *args, name=name)
    except CheckFailed as failure:
        cause = failure.__cause__
        if cause is None or "not written yet" in str(failure):
            raise
        raise CheckFailed(
            f"`{name}` raised an error: {translate(cause)}\n"
            f"Run it on small inputs in a cell of your own to see where it fails."
        ) from cause


def _summary(value: Any, keep_value: bool = True) -> dict:
    if value is None:
        return {"kind": "none"}
    if isinstance(value, torch.Tensor):
        out = {
            "kind": "tensor",
            "shape": list(value.shape),
            "dtype": str(value.dtype).replace("torch.", ""),
            "device": value.device.type,
        }
        if keep_value:
            out["value"] = (
                value.detach().to("cpu", torch.float64).clone()
                if value.is_floating_point() or not value.is_complex()
                else None
            )
        return out
    return {"kind": "other", "type": type(value).__name__, "repr": repr(value)[:60]}


def _learner_callable(obj: Any, name: str):
    """A Function subclass, called through PyTorch's own apply; anything else is refused (a plain function would
    have autograd differentiate it, and the exercise is the Function's backward)."""
    if isinstance(obj, type) and issubclass(obj, torch.autograd.Function):
        return function_apply(obj, name)
    function_class(obj, name)  # raises, saying what was passed instead
    raise AssertionError("unreachable")


def _forward(fn, args, name) -> tuple:
    outputs = as_outputs(_learner_call(fn, *args, name=name))
    bad = [type(o).__name__ for o in outputs if not isinstance(o, torch.Tensor)]
    if bad:
        raise CheckFailed(
            f"`{name}(...)` should return a tensor; it returned a {bad[0]}. "
            "forward works on tensors: use torch operations and return a torch.Tensor."
        )
    return outputs


def _backward_once(fn, args, grad_outputs, name, retain=False):
    """Call the learner's backward with these grad_outputs, directly and (on a fresh forward) through autograd's
    engine. Returns (outputs, raw returns tuple, grad_output_modified)."""
    outputs = _forward(fn, args, f"{name}.forward")
    kept = [g.clone() for g in grad_outputs]
    node = outputs[0].grad_fn
    if node is None:
        raise CheckFailed(
            f"The output of `{name}.apply` is not connected to the graph (no grad_fn): "
            "return a tensor computed by forward, not a detached copy."
        )
    raw = _learner_call(node.apply, *grad_outputs, name=f"{name}.backward")
    returns = tuple(raw) if isinstance(raw, (tuple, list)) else (raw,)
    slots = [i for i, a in enumerate(args) if is_float_tensor(a) and a.requires_grad]

    def again() -> tuple:
        inputs = fresh_args(args, [i in slots for i in range(len(args))])
        return _forward(fn, inputs, f"{name}.forward"), inputs

    engine_agrees(again, kept, returns, name)  # (the grad_outputs as they were before backward)
    modified = any(not _equal(g, k) for g, k in zip(grad_outputs, kept))
    return outputs, returns, modified


def _flat_outputs(outputs) -> torch.Tensor:
    return torch.cat([o.detach().reshape(-1).to("cpu", torch.float64) for o in outputs])


def _probe_case(fn, name, spec, seed, case, double_backward, cuda) -> dict:
    args = case_args(spec, seed, case)
    slots = tensor_slots(args)
    label = f"{name}.forward"
    data: dict[str, Any] = {"case": case}
    outputs = _forward(fn, fresh_args(args), label)
    data["outputs"] = [o.detach().to("cpu").clone() for o in outputs]
    data["output_dtypes"] = [str(o.dtype).replace("torch.", "") for o in outputs]
    data["node"] = type(outputs[0].grad_fn).__name__ if outputs[0].grad_fn is not None else None
    shapes = [tuple(o.shape) for o in outputs]
    full = use_full_jacobian(args, numel_out(outputs))
    data["mode"] = "full" if full else "fast"
    data["saved"] = _saved(outputs, args, slots) if outputs[0].grad_fn is not None else None
    calls = unit_grad_outputs(shapes) if full else random_grad_outputs(shapes, seed, case, count=2)
    data["returns"], data["grad_output_modified"], data["backward_error"] = [], False, None
    for grad_outputs in calls:
        try:
            _, returns, modified = _backward_once(fn, fresh_args(args), grad_outputs, name)
        except CheckFailed as failure:
            data["backward_error"] = str(failure)
            break
        data["returns"].append([_summary(r) for r in returns])
        data["grad_output_modified"] |= modified
    data["perturbed"] = _perturbed_outputs(fn, label, args, slots, full, numel_out(outputs), seed, case)
    if data["backward_error"] is None:
        data["needs_input_grad"] = _needs_input_grad(fn, name, args, slots, shapes)
        data["float32"] = _float32(fn, name, args, shapes)
    else:
        data["needs_input_grad"], data["float32"] = [], None
    data["double_backward"] = _probe_double_backward(fn, name, args, shapes, seed, case) if double_backward else None
    data["cuda"] = _probe_cuda(fn, name, args, shapes) if cuda else None
    return data


def _saved(outputs, args, slots) -> list[dict]:
    """What forward kept for backward (a Function's node is its ctx): shapes, and whether each is the output or
    an input."""
    try:
        saved = outputs[0].grad_fn.saved_tensors
        return [
            {
                "shape": list(s.shape),
                "equals_output": bool(s.shape == outputs[0].shape and _equal(s.detach(), outputs[0].detach())),
                "equals_input": [i for i in slots if s.shape == args[i].shape and _equal(s.detach(), args[i])],
            }
            for s in saved
            if isinstance(s, torch.Tensor)
        ]
    except Exception:  # saved tensors already freed or unreadable: nothing to report
        return []


def _perturbed_outputs(fn, label, args, slots, full, out_numel, seed, case) -> list:
    """The learner's forward at inputs moved by ±EPS: what the numerical Jacobian is made of (entry by entry in
    full mode, along a random direction in fast mode)."""
    perturbed: list = [None] * len(args)
    directions = random_directions(args, seed, case)
    with torch.no_grad():
        for i in slots:
            if full:
                rows = torch.empty(2, args[i].numel(), out_numel, dtype=torch.float64)
                for k in range(args[i].numel()):
                    for side, sign in enumerate((1.0, -1.0)):
                        moved = list(fresh_args(args, [False] * len(args)))
                        moved[i].view(-1)[k] += sign * EPS
                        rows[side, k] = _flat_outputs(_forward(fn, tuple(moved), label))
            else:
                rows = torch.empty(2, out_numel, dtype=torch.float64)
                for side, sign in enumerate((1.0, -1.0)):
                    moved = list(fresh_args(args, [False] * len(args)))
                    moved[i] = moved[i] + sign * EPS * directions[i]
                    rows[side] = _flat_outputs(_forward(fn, tuple(moved), label))
            perturbed[i] = rows
    return perturbed


def _needs_input_grad(fn, name, args, slots, shapes) -> list[dict]:
    """Each tensor input in turn not requiring a gradient: what backward returned for it."""
    found = []
    ones = [torch.ones(s, dtype=torch.float64) for s in shapes]
    for i in slots if len(slots) > 1 else []:
        requires = [k != i for k in range(len(args))]
        try:
            _, returns, _ = _backward_once(fn, fresh_args(args, requires), [g.clone() for g in ones], name)
            found.append({"off": i, "returned": [_summary(r, keep_value=False)["kind"] for r in returns]})
        except CheckFailed as failure:
            found.append({"off": i, "error": str(failure)})
    return found


def _float32(fn, name, args, shapes) -> dict:
    """float32 inputs, grad_outputs of ones: the outputs and the gradients, their dtypes (float32 both, for a right
    answer) and their values."""
    try:
        f32 = fresh_args(args, dtype=torch.float32)
        outs32, returns32, _ = _backward_once(fn, f32, [torch.ones(s, dtype=torch.float32) for s in shapes], name)
        return {
            "output_dtypes": [str(o.dtype).replace("torch.", "") for o in outs32],
            "grad_dtypes": [_summary(r, keep_value=False).get("dtype") for r in returns32],
            # the values too: a float32 answer is judged on what it computes, not only on its dtype
            "outputs": [o.detach().to("cpu", torch.float64).clone() for o in outs32],
            "grads": [
                r.detach().to("cpu", torch.float64).clone() if isinstance(r, torch.Tensor) else None for r in returns32
            ],
        }
    except CheckFailed as failure:
        return {"error": str(failure)}


def _probe_double_backward(fn, name, args, shapes, seed, case) -> dict:
    """The gradient of (u . f) as a function of the inputs, differentiated again: analytically (autograd through
    the learner's backward, create_graph=True) and numerically (the learner's backward at perturbed inputs)."""
    u = random_grad_outputs(shapes, seed, case + 1000, count=1)[0]
    slots = tensor_slots(args)
    label = f"{name}.forward"

    def vjp(values, create_graph):
        inputs = fresh_args(values)
        outs = _forward(fn, inputs, label)
        seeds = [t.clone().requires_grad_(create_graph) for t in u]  # like gradgradcheck: grad_output is an input too
        grads = torch.autograd.grad(
            outs, [inputs[i] for i in slots], seeds, create_graph=create_graph, allow_unused=True
        )
        return inputs, grads

    try:
        inputs, grads = vjp(args, True)
        sizes = [args[i].numel() for i in slots]
        total = sum(sizes)
        if total > 200:
            return {"skipped": f"inputs too large for a full second-derivative check ({total} entries)"}
        if any(g is None for g in grads):
            return {"error": "backward returned None for an input that requires a gradient"}
        flat = torch.cat([g.reshape(-1) for g in grads])
        if not flat.requires_grad:
            return {"error": "not differentiable"}
        analytic = torch.zeros(total, total, dtype=torch.float64)
        for r in range(total):
            row = torch.autograd.grad(flat[r], [inputs[i] for i in slots], retain_graph=True, allow_unused=True)
            analytic[r] = torch.cat(
                [(z if z is not None else torch.zeros_like(inputs[i])).reshape(-1).detach() for z, i in zip(row, slots)]
            )
        numeric = torch.empty(2, total, total, dtype=torch.float64)
        col = 0
        for i in slots:
            for k in range(args[i].numel()):
                for side, sign in enumerate((1.0, -1.0)):
                    moved = list(fresh_args(args, [False] * len(args)))
                    moved[i].view(-1)[k] += sign * EPS
                    _, g = vjp(tuple(moved), False)
                    numeric[side, :, col] = torch.cat([z.detach().reshape(-1) for z in g])
                col += 1
        return {"analytic": analytic, "perturbed": numeric}
    except CheckFailed as failure:
        return {"error": str(failure)}
    except Exception as exc:
        return {"error": translate(exc)}


def _probe_cuda(fn, name, args, shapes) -> dict:
    if not torch.cuda.is_available():
        return {"skipped": f"no CUDA device is visible to torch {torch.__version__}: the CUDA part is not run"}
    try:
        on_gpu = fresh_args(args, device="cuda")
        ones = [torch.ones(s, dtype=torch.float64, device="cuda") for s in shapes]
        outs, returns, modified = _backward_once(fn, on_gpu, ones, name)
        return {
            "output_devices": [o.device.type for o in outs],
            "outputs": [o.detach().cpu() for o in outs],
            "returns": [_summary(r) for r in returns],
            "grad_output_modified": modified,
        }
    except CheckFailed as failure:
        return {"error": str(failure)}


def probe_function(
    obj: Any,
    reference: str,
    seed: int = 0,
    cases: int | None = None,
    double_backward: bool = False,
    cuda: bool = True,
    points: float = 1,
    name: str | None = None,
) -> ProbeData:
    """Plain data about the learner's Function on the spec's inputs; one dict per case:

    - ``outputs``: forward's outputs (CPU tensors); ``output_dtypes``; ``node``: the grad_fn's class name;
      ``mode``: "full" or "fast";
    - ``returns``: for each backward call (unit grad_outputs, one per output entry, in "full" mode; two random
      grad_outputs in "fast" mode), what backward returned, slot by slot: ``{"kind": "tensor", "shape", "dtype",
      "device", "value"}``, ``{"kind": "none"}`` or ``{"kind": "other", "type", "repr"}``;
      ``grad_output_modified``; ``backward_error``: the learner-facing message when backward failed, else None;
    - ``perturbed``: per argument, None or the flattened outputs at input +/- EPS: in "full" mode a tensor
      (2, numel(input), numel(outputs)) for each entry of the input, in "fast" mode (2, numel(outputs)) along
      the judge-known random direction;
    - ``saved``: what ctx.saved_tensors holds (shape, equals the output?, equals which inputs?);
    - ``needs_input_grad``: per tensor input switched off, ``{"off": i, "returned": [kind per slot]}``;
    - ``float32``: for float32 inputs and grad_outputs of ones, ``output_dtypes``, ``grad_dtypes``, and the values
      ``outputs`` and ``grads`` (float64 copies; None where backward returned no tensor);
    - ``double_backward`` (when asked): ``{"analytic": (N, N), "perturbed": (2, N, N)}``,
      or ``{"error"}`` / ``{"skipped"}``;
    - ``cuda``: ``{"output_devices", "outputs", "returns", "grad_output_modified"}`` or ``{"skipped": reason}``.
    """
    spec = inputs_for(reference)
    name = name or str(getattr(obj, "__name__", spec.title.split(".")[0]))
    fn = _learner_callable(obj, name)
    data = []
    for case in range(cases or spec.cases):
        data.append(_probe_case(fn, name, spec, seed, case, double_backward and spec.double_backward, cuda))
    return {"name": name, "function_class": True, "cases": data}


# One generic check for every Function exercise of every notebook (judge: autograder/judges/function.py). By hand:
# the backward is the learner's own formula, so one handed to torch.autograd is flagged.
check_function = NotebookChecks(__name__, judges="autograder.judges.function", show=show_verdict).add(
    "check_function", probe_function, by_hand=True
)
