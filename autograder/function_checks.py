"""Checks of a learner's ``torch.autograd.Function``: forward, backward, the interface, double backward, CUDA.

One generic check, ``check_function(LearnerFunction, reference="<spec>", points=N, ...)``. A *spec*
(registered by a notebook's module, e.g. :mod:`autograder.nb03`) says how to make the inputs and how
to compute the reference forward with native torch ops; reference gradients always come from
PyTorch's autograd on that reference, never from hand-written backward formulas.

The check is a probe and a judge (see :mod:`autograder.registry`):

* :func:`probe_function` is the only code that calls the learner's Function. It calls ``apply`` on
  inputs chosen from the params, then calls the learner's ``backward`` through the node ``apply``
  put in the graph (``out.grad_fn.apply(*grad_outputs)``), so that it sees exactly what backward
  returned (autograd itself would silently sum a wrong-shaped bias gradient, or cast a wrong dtype).
  It returns plain data: numbers, strings, lists, dicts and CPU tensors -- see ``probe_function``.
* :func:`judge_function` regenerates the same inputs from the params, computes the reference, the
  numerical Jacobian (from the probe's forward values at perturbed inputs: the central-difference
  criterion of ``torch.autograd.gradcheck``, eps = 1e-6, atol = 1e-5, rtol = 1e-3, full Jacobian
  when inputs x outputs is small, gradcheck's fast mode -- random u^T J v -- when it is large) and
  decides. It returns a :class:`Verdict`: a ``float`` (the points earned, what nbgrader reads as the
  test cell's partial score) carrying the per-part results and the report. When every part fails it
  raises :class:`CheckFailed` with the report.

In a notebook, ``check_function(...)`` runs both, prints the report on stdout, shows the numerical
and analytical Jacobians side by side when a small case is wrong, and returns the verdict.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from .feedback import CheckFailed, call_learner
from .registry import CHECKS, FAILED, Check

EPS, ATOL, RTOL = 1e-6, 1e-5, 1e-3          # torch.autograd.gradcheck's defaults
FULL_LIMIT = 1500                           # sum over inputs of numel(input) x numel(outputs): full Jacobian up to here
PICTURE_LIMIT = 400                         # Jacobians up to this many entries are drawn
WEIGHTS = {"forward": 1.0, "gradcheck": 2.0, "reference": 1.0, "interface": 1.0, "double_backward": 1.0, "cuda": 1.0}
PART_TITLES = {
    "forward": "forward agrees with the reference",
    "gradcheck": "backward agrees with the numerical Jacobian (gradcheck)",
    "reference": "backward agrees with the reference backward",
    "interface": "backward's interface (one gradient per input, None for non-tensors, shapes, dtypes, grad_output untouched)",
    "double_backward": "double backward (gradgradcheck)",
    "cuda": "CUDA tensors",
}


# --------------------------------------------------------------------------------------------- specs

@dataclass(frozen=True)
class FunctionSpec:
    """What one exercise's Function must compute, and on which inputs it is tried.

    make_args(gen, case) -> tuple of arguments (float64 CPU tensors and plain values), random from
    `gen` and away from kinks. reference(*args) -> the output(s), with native torch ops only.
    """

    name: str
    title: str                                  # how the learner calls it, e.g. "LinearFunction.apply(x, W, b)"
    arg_names: tuple[str, ...]
    make_args: Callable[[torch.Generator, int], tuple]
    reference: Callable[..., Any]
    cases: int = 2
    needs_input_grad: bool = False              # the exercise asks for `ctx.needs_input_grad` to be used
    saves: str | None = None                    # "output": the exercise asks to save the output
    ref_rtol: float = 1e-7
    ref_atol: float = 1e-9
    fwd_rtol: float = 1e-9
    fwd_atol: float = 1e-11
    gradient_hints: tuple[Callable, ...] = ()   # (args, grad_outputs, index, got, expected) -> str | None
    forward_hints: tuple[Callable, ...] = ()    # (args, got_outputs, expected_outputs) -> str | None
    double_backward: bool = True                # whether a correct answer is expected to be twice differentiable


SPECS: dict[str, FunctionSpec] = {}


def add_spec(spec: FunctionSpec) -> FunctionSpec:
    SPECS[spec.name] = spec
    return spec


def _spec(reference: str) -> FunctionSpec:
    if reference not in SPECS:
        raise ValueError(f"no reference named {reference!r}; known: {sorted(SPECS)}")
    return SPECS[reference]


def _generator(seed: int, case: int, salt: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(1_000_003 * int(seed) + 101 * int(case) + salt)


def case_args(spec: FunctionSpec, seed: int, case: int) -> tuple:
    """The arguments of one case, regenerated identically by probe and judge."""
    return tuple(spec.make_args(_generator(seed, case), case))


def _grad_outputs(shapes: list, seed: int, case: int, count: int) -> list[list[torch.Tensor]]:
    gen = _generator(seed, case, salt=7)
    return [[torch.randn(s, generator=gen, dtype=torch.float64) for s in shapes] for _ in range(count)]


def _directions(args: tuple, seed: int, case: int) -> list:
    gen = _generator(seed, case, salt=11)
    return [torch.randn(a.shape, generator=gen, dtype=torch.float64) if _is_float_tensor(a) else None for a in args]


def _is_float_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def _tensor_slots(args: tuple) -> list[int]:
    return [i for i, a in enumerate(args) if _is_float_tensor(a)]


def _as_outputs(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _numel_out(outputs: Sequence[torch.Tensor]) -> int:
    return sum(o.numel() for o in outputs)


def use_full_jacobian(args: tuple, out_numel: int) -> bool:
    return sum(args[i].numel() for i in _tensor_slots(args)) * out_numel <= FULL_LIMIT


# --------------------------------------------------------------------------------------------- translating PyTorch

_TRANSLATIONS = [
    (r"returned an incorrect number of gradients \(expected (\d+), got (\d+)\)",
     "backward must return one value per argument of forward (ctx not counted): a gradient for each tensor, "
     "None for everything else."),
    (r"returned a gradient different than None at position (\d+), but the corresponding forward input was not a Variable",
     "backward returned a gradient for an argument that is not a tensor: return None in that position."),
    (r"returned an invalid gradient at index (\d+) - got \[?(.*?)\]? but expected shape compatible with \[?(.*?)\]?$",
     "a gradient returned by backward does not have the shape of its input."),
    (r"modified by an inplace operation",
     "a tensor saved for backward was changed in place after it was saved (e.g. `x += ...` or `x.mul_()`); "
     "work on a copy, or save the tensor after the change."),
    (r"a leaf Variable that requires grad is being used in an in-place operation",
     "forward changes its input in place; compute the result in a new tensor (e.g. start from `x.clone()`)."),
    (r"Trying to backward through the graph a second time",
     "the graph was already used by an earlier backward; pass retain_graph=True to the first call if you need it twice."),
    (r"does not require grad and does not have a grad_fn",
     "something that should be differentiable is not: a value was detached, converted to a Python number or NumPy, "
     "or computed under torch.no_grad()."),
    (r"mat1 and mat2 shapes cannot be multiplied|size mismatch|shapes cannot be multiplied|must match the size of tensor|"
     r"The size of tensor a|inconsistent tensor size|expected .* to have size",
     "two tensors in this computation have shapes that do not fit together. Write down the shape of every tensor in the "
     "formula: a transposed matrix is the usual culprit."),
    (r"expected scalar type|expected both vectors to have same dtype|Float and Double|Double and Float|dtype",
     "tensors of different dtypes meet. Create new tensors like their inputs (torch.zeros_like(x), or dtype=x.dtype)."),
    (r"Expected all tensors to be on the same device|cuda|device",
     "tensors on different devices meet. Create new tensors on the input's device (torch.zeros_like(x), or device=x.device)."),
    (r"save_for_backward can only save variables",
     "ctx.save_for_backward takes tensors (or None) only; keep other values as attributes, e.g. ctx.n = n."),
    (r"object has no attribute 'saved_tensors'|saved_tensors",
     "read what forward saved with `ctx.saved_tensors` (a tuple), after saving it with `ctx.save_for_backward(...)` in forward."),
]


def translate(exc: BaseException) -> str:
    """A PyTorch error in the learner's terms, followed by PyTorch's own first line."""
    raw = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    for pattern, meaning in _TRANSLATIONS:
        if re.search(pattern, raw):
            return f"{meaning}\n    (PyTorch said: {type(exc).__name__}: {raw[:300]})"
    return f"{type(exc).__name__}: {raw[:300]}"


def _learner_call(fn: Callable, *args: Any, name: str) -> Any:
    """feedback.call_learner, with PyTorch's errors translated."""
    try:
        return call_learner(fn, *args, name=name)
    except CheckFailed as failure:
        cause = failure.__cause__
        if cause is None or "not written yet" in str(failure):
            raise
        raise CheckFailed(f"`{name}` raised an error: {translate(cause)}\n"
                          f"Run it on small inputs in a cell of your own to see where it fails.") from cause


# --------------------------------------------------------------------------------------------- probe

def _summary(value: Any, keep_value: bool = True) -> dict:
    if value is None:
        return {"kind": "none"}
    if isinstance(value, torch.Tensor):
        out = {"kind": "tensor", "shape": list(value.shape), "dtype": str(value.dtype).replace("torch.", ""),
               "device": value.device.type}
        if keep_value:
            out["value"] = value.detach().to("cpu", torch.float64).clone() if value.is_floating_point() or not value.is_complex() else None
        return out
    return {"kind": "other", "type": type(value).__name__, "repr": repr(value)[:60]}


def _learner_callable(obj: Any, name: str):
    """(callable, is_function_class). A Function subclass is called through apply."""
    if isinstance(obj, type) and issubclass(obj, torch.autograd.Function):
        return obj.apply, True
    if isinstance(obj, torch.autograd.Function):
        raise CheckFailed(f"`{name}` is an instance of a Function; pass the class itself (`{type(obj).__name__}`), "
                          "the check calls its `apply`.")
    if callable(obj):
        return obj, False
    raise CheckFailed(f"`{name}` should be a subclass of torch.autograd.Function (or a function built on one), "
                      f"but it is a {type(obj).__name__}.")


def _forward(fn, args, name) -> tuple:
    outputs = _as_outputs(_learner_call(fn, *args, name=name))
    bad = [type(o).__name__ for o in outputs if not isinstance(o, torch.Tensor)]
    if bad:
        raise CheckFailed(f"`{name}(...)` should return a tensor; it returned a {bad[0]}. "
                          "forward works on tensors: use torch operations and return a torch.Tensor.")
    return outputs


def _fresh(args: tuple, requires: Sequence[bool] | None = None, dtype=None, device=None) -> tuple:
    out = []
    for i, a in enumerate(args):
        if _is_float_tensor(a):
            t = a.detach().clone()
            if dtype is not None or device is not None:
                t = t.to(device=device or t.device, dtype=dtype or t.dtype)
            out.append(t.requires_grad_(True if requires is None else bool(requires[i])))
        else:
            out.append(a)
    return tuple(out)


def _backward_once(fn, is_function, args, grad_outputs, name, retain=False):
    """Call the learner's backward with these grad_outputs. Returns (raw returns tuple, grad_output_modified)."""
    outputs = _forward(fn, args, f"{name}.forward" if is_function else name)
    kept = [g.clone() for g in grad_outputs]
    if is_function:
        node = outputs[0].grad_fn
        if node is None:
            raise CheckFailed(f"The output of `{name}.apply` is not connected to the graph (no grad_fn): "
                              "return a tensor computed by forward, not a detached copy.")
        raw = _learner_call(node.apply, *grad_outputs, name=f"{name}.backward")
        returns = tuple(raw) if isinstance(raw, (tuple, list)) else (raw,)
    else:
        tensors = [a for a in args if _is_float_tensor(a) and a.requires_grad]
        try:
            grads = torch.autograd.grad(outputs, tensors, grad_outputs, allow_unused=True, retain_graph=retain)
        except Exception as exc:  # the learner's backward ran inside autograd
            raise CheckFailed(f"The backward of `{name}` raised an error: {translate(exc)}") from exc
        it = iter(grads)
        returns = tuple(next(it) if _is_float_tensor(a) and a.requires_grad else None for a in args)
    modified = any(not torch.equal(g, k) for g, k in zip(grad_outputs, kept))
    return outputs, returns, modified


def _flat_outputs(outputs) -> torch.Tensor:
    return torch.cat([o.detach().reshape(-1).to("cpu", torch.float64) for o in outputs])


def _probe_case(fn, is_function, name, spec, seed, case, double_backward, cuda) -> dict:
    args = case_args(spec, seed, case)
    slots = _tensor_slots(args)
    data: dict[str, Any] = {"case": case}
    outputs = _forward(fn, _fresh(args), f"{name}.forward" if is_function else name)
    data["outputs"] = [o.detach().to("cpu").clone() for o in outputs]
    data["output_dtypes"] = [str(o.dtype).replace("torch.", "") for o in outputs]
    data["node"] = type(outputs[0].grad_fn).__name__ if outputs[0].grad_fn is not None else None
    shapes = [tuple(o.shape) for o in outputs]
    out_numel = _numel_out(outputs)
    full = use_full_jacobian(args, out_numel)
    data["mode"] = "full" if full else "fast"

    # Saved tensors (a Function's node is its ctx): what forward kept for backward.
    if is_function and outputs[0].grad_fn is not None:
        try:
            saved = outputs[0].grad_fn.saved_tensors
            data["saved"] = [{"shape": list(s.shape),
                              "equals_output": bool(s.shape == outputs[0].shape and torch.equal(s.detach(), outputs[0].detach())),
                              "equals_input": [i for i in slots if s.shape == args[i].shape and torch.equal(s.detach(), args[i])]}
                             for s in saved if isinstance(s, torch.Tensor)]
        except Exception:  # saved tensors already freed or unreadable: nothing to report
            data["saved"] = []
    else:
        data["saved"] = None

    # Backward with unit grad_outputs (full) or random ones (fast): what backward returned, raw.
    if full:
        unit_calls = []
        for k in range(out_numel):
            flat = torch.zeros(out_numel, dtype=torch.float64)
            flat[k] = 1.0
            parts, start = [], 0
            for s in shapes:
                n = math.prod(s)
                parts.append(flat[start:start + n].reshape(s).clone())
                start += n
            unit_calls.append(parts)
        calls = unit_calls
    else:
        calls = _grad_outputs(shapes, seed, case, count=2)
    data["returns"], data["grad_output_modified"], data["backward_error"] = [], False, None
    for grad_outputs in calls:
        try:
            _, returns, modified = _backward_once(fn, is_function, _fresh(args), grad_outputs, name)
        except CheckFailed as failure:
            data["backward_error"] = str(failure)
            break
        data["returns"].append([_summary(r) for r in returns])
        data["grad_output_modified"] |= modified

    # The learner's forward at perturbed inputs: what the numerical Jacobian is made of.
    perturbed: list = [None] * len(args)
    directions = _directions(args, seed, case)
    with torch.no_grad():
        for i in slots:
            if full:
                rows = torch.empty(2, args[i].numel(), out_numel, dtype=torch.float64)
                for k in range(args[i].numel()):
                    for side, sign in enumerate((1.0, -1.0)):
                        moved = list(_fresh(args, [False] * len(args)))
                        moved[i].view(-1)[k] += sign * EPS
                        rows[side, k] = _flat_outputs(_forward(fn, tuple(moved), f"{name}.forward" if is_function else name))
                perturbed[i] = rows
            else:
                rows = torch.empty(2, out_numel, dtype=torch.float64)
                for side, sign in enumerate((1.0, -1.0)):
                    moved = list(_fresh(args, [False] * len(args)))
                    moved[i] = moved[i] + sign * EPS * directions[i]
                    rows[side] = _flat_outputs(_forward(fn, tuple(moved), f"{name}.forward" if is_function else name))
                perturbed[i] = rows
    data["perturbed"] = perturbed

    if data["backward_error"] is None:
        # needs_input_grad: each tensor input in turn does not require a gradient.
        data["needs_input_grad"] = []
        ones = [torch.ones(s, dtype=torch.float64) for s in shapes]
        for i in slots if len(slots) > 1 else []:
            requires = [k != i for k in range(len(args))]
            try:
                _, returns, _ = _backward_once(fn, is_function, _fresh(args, requires), [g.clone() for g in ones], name)
                data["needs_input_grad"].append({"off": i, "returned": [_summary(r, keep_value=False)["kind"] for r in returns]})
            except CheckFailed as failure:
                data["needs_input_grad"].append({"off": i, "error": str(failure)})
        # float32 inputs: outputs and gradients should be float32 too.
        try:
            f32 = _fresh(args, dtype=torch.float32)
            outs32, returns32, _ = _backward_once(fn, is_function, f32, [torch.ones(s, dtype=torch.float32) for s in shapes], name)
            data["float32"] = {"output_dtypes": [str(o.dtype).replace("torch.", "") for o in outs32],
                               "grad_dtypes": [_summary(r, keep_value=False).get("dtype") for r in returns32]}
        except CheckFailed as failure:
            data["float32"] = {"error": str(failure)}
    else:
        data["needs_input_grad"], data["float32"] = [], None

    data["double_backward"] = _probe_double_backward(fn, name, is_function, args, shapes, seed, case) if double_backward else None
    data["cuda"] = _probe_cuda(fn, is_function, name, args, shapes) if cuda else None
    return data


def _probe_double_backward(fn, name, is_function, args, shapes, seed, case) -> dict:
    """The gradient of (u . f) as a function of the inputs, differentiated again: analytically (autograd through
    the learner's backward, create_graph=True) and numerically (the learner's backward at perturbed inputs)."""
    u = _grad_outputs(shapes, seed, case + 1000, count=1)[0]
    slots = _tensor_slots(args)
    label = f"{name}.forward" if is_function else name

    def vjp(values, create_graph):
        inputs = _fresh(values)
        outs = _forward(fn, inputs, label)
        seeds = [t.clone().requires_grad_(create_graph) for t in u]   # like gradgradcheck: grad_output is an input too
        grads = torch.autograd.grad(outs, [inputs[i] for i in slots], seeds, create_graph=create_graph, allow_unused=True)
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
            analytic[r] = torch.cat([(z if z is not None else torch.zeros_like(inputs[i])).reshape(-1).detach()
                                     for z, i in zip(row, slots)])
        numeric = torch.empty(2, total, total, dtype=torch.float64)
        col = 0
        for i in slots:
            for k in range(args[i].numel()):
                for side, sign in enumerate((1.0, -1.0)):
                    moved = list(_fresh(args, [False] * len(args)))
                    moved[i].view(-1)[k] += sign * EPS
                    _, g = vjp(tuple(moved), False)
                    numeric[side, :, col] = torch.cat([z.detach().reshape(-1) for z in g])
                col += 1
        return {"analytic": analytic, "perturbed": numeric}
    except CheckFailed as failure:
        return {"error": str(failure)}
    except Exception as exc:
        return {"error": translate(exc)}


def _probe_cuda(fn, is_function, name, args, shapes) -> dict:
    if not torch.cuda.is_available():
        return {"skipped": f"no CUDA device is visible to torch {torch.__version__}: the CUDA part is not run"}
    try:
        on_gpu = _fresh(args, device="cuda")
        ones = [torch.ones(s, dtype=torch.float64, device="cuda") for s in shapes]
        outs, returns, modified = _backward_once(fn, is_function, on_gpu, ones, name)
        return {"output_devices": [o.device.type for o in outs], "outputs": [o.detach().cpu() for o in outs],
                "returns": [_summary(r) for r in returns], "grad_output_modified": modified}
    except CheckFailed as failure:
        return {"error": str(failure)}


def probe_function(obj, reference, seed=0, cases=None, double_backward=False, cuda=True, points=1, name=None):
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
    - ``float32``: output and gradient dtypes for float32 inputs;
    - ``double_backward`` (when asked): ``{"analytic": (N, N), "perturbed": (2, N, N)}`` or ``{"error"}`` / ``{"skipped"}``;
    - ``cuda``: ``{"output_devices", "outputs", "returns", "grad_output_modified"}`` or ``{"skipped": reason}``.
    """
    spec = _spec(reference)
    name = name or getattr(obj, "__name__", spec.title.split(".")[0])
    fn, is_function = _learner_callable(obj, name)
    data = []
    for case in range(cases or spec.cases):
        data.append(_probe_case(fn, is_function, name, spec, seed, case, double_backward and spec.double_backward, cuda))
    return {"name": name, "function_class": is_function, "cases": data}


# --------------------------------------------------------------------------------------------- verdict

@dataclass
class Part:
    name: str
    weight: float
    passed: bool | None = True            # None: skipped (not scored), with the reason in messages
    messages: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)

    def fail(self, message: str, *hints: str | None) -> None:
        self.passed = False
        if message not in self.messages:
            self.messages.append(message)
        for h in hints:
            if h and h not in self.hints:
                self.hints.append(h)


class Verdict(float):
    """The points earned (a float, nbgrader's partial score), with the parts and the report attached."""

    def __new__(cls, points_earned: float, *, points: float, parts: list[Part], title: str, pictures=None):
        self = super().__new__(cls, points_earned)
        self.points, self.parts, self.title, self.pictures = float(points), parts, title, pictures or []
        return self

    def __reduce__(self):
        return (float, (float(self),))

    @property
    def passed(self) -> bool:
        return all(p.passed is not False for p in self.parts)

    def as_dict(self) -> dict:
        return {"score": float(self), "points": self.points, "title": self.title,
                "parts": [{"name": p.name, "weight": p.weight, "passed": p.passed, "messages": list(p.messages),
                           "hints": list(p.hints)} for p in self.parts]}

    def report(self) -> str:
        lines = [f"{self.title}: {float(self):g} of {self.points:g} points"]
        for p in self.parts:
            mark = {True: "ok  ", False: "FAIL", None: "skip"}[p.passed]
            lines.append(f"  [{mark}] {PART_TITLES.get(p.name, p.name)}")
            if p.passed is not True:
                for m in p.messages:
                    lines += ["         " + line for line in m.splitlines()]
                for h in p.hints:
                    lines.append(f"         Hint: {h}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return repr(float(self))


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
    rel = (f"largest relative error {max_rel:.3g}" if math.isfinite(max_rel)
           else "the right value of every wrong entry is 0, so no relative error")
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
        return ["the gradient has the wrong sign everywhere: check the sign of each term in your derivative."]
    denom = float((want * want).sum())
    c = float((got * want).sum()) / denom
    if abs(c) > 1e-9 and abs(c - 1) > 1e-6 and torch.allclose(got, c * want, atol=tol, rtol=1e-6):
        return [f"every entry is off by the same factor (about {c:.3g}): look for a missing or extra constant in your derivative."]
    if per_call_rows and got.shape[0] > 1:
        same = torch.allclose(got, got[:1].expand_as(got), atol=tol, rtol=1e-6)
        want_same = torch.allclose(want, want[:1].expand_as(want), atol=tol, rtol=1e-6)
        if same and not want_same:
            hints.append("backward returns the same gradient whatever grad_output is: multiply your local derivative "
                         "by grad_output (the chain rule).")
    if torch.count_nonzero(got) == 0:
        hints.append("this gradient is all zeros.")
    return hints


def _gradient_matrix(data_case, slot: int, in_shape) -> torch.Tensor | None:
    """Rows = backward calls, columns = entries of input `slot`; None if some call gave something unusable."""
    rows = []
    for returns in data_case["returns"]:
        if slot >= len(returns):
            return None
        r = returns[slot]
        if r["kind"] != "tensor" or list(r["shape"]) != list(in_shape):
            return None
        rows.append(r["value"].reshape(-1))
    return torch.stack(rows) if rows else None


def _reference_outputs(spec, args):
    with torch.no_grad():
        return tuple(o.detach() for o in _as_outputs(spec.reference(*args)))


def _reference_vjps(spec, args, grad_output_calls) -> list[list]:
    """Per call, per argument: the reference gradient (autograd on the reference), or None for non-tensors."""
    slots = _tensor_slots(args)
    out = []
    for gos in grad_output_calls:
        inputs = _fresh(args)
        outs = _as_outputs(spec.reference(*inputs))
        grads = torch.autograd.grad(outs, [inputs[i] for i in slots], gos, allow_unused=True)
        row = [None] * len(args)
        for i, g in zip(slots, grads):
            row[i] = torch.zeros_like(args[i]) if g is None else g.detach()
        out.append(row)
    return out


def _unit_grad_outputs(shapes) -> list[list[torch.Tensor]]:
    total = sum(math.prod(s) for s in shapes)
    calls = []
    for k in range(total):
        flat = torch.zeros(total, dtype=torch.float64)
        flat[k] = 1.0
        parts, start = [], 0
        for s in shapes:
            n = math.prod(s)
            parts.append(flat[start:start + n].reshape(s))
            start += n
        calls.append(parts)
    return calls


def _judge_case(spec, data, seed, parts, pictures, name, double_backward):
    case = data["case"]
    args = case_args(spec, seed, case)
    slots = _tensor_slots(args)
    expected = _reference_outputs(spec, args)
    shapes = [tuple(o.shape) for o in expected]
    names = spec.arg_names
    where = f"(case {case + 1}, inputs {', '.join(_argument_shape(n, a) for n, a in zip(names, args))})"

    # 1. forward
    got_outputs = data["outputs"]
    fwd = parts["forward"]
    if len(got_outputs) != len(expected):
        fwd.fail(f"forward returned {len(got_outputs)} tensors; it should return {len(expected)} {where}.")
    else:
        for j, (g, e) in enumerate(zip(got_outputs, expected)):
            if tuple(g.shape) != tuple(e.shape):
                fwd.fail(f"forward's output has shape {tuple(g.shape)}; it should have shape {tuple(e.shape)} {where}.")
                continue
            bad, max_abs, max_rel = _compare(g.to(torch.float64), e, spec.fwd_rtol, spec.fwd_atol)
            if bad.any():
                entries = ", ".join(_output_index([tuple(e.shape)], int(k)) for k in torch.nonzero(bad.reshape(-1)).flatten()[:6])
                hints = [h(args, got_outputs, expected) for h in spec.forward_hints]
                fwd.fail(f"forward's output is wrong in {int(bad.sum())} of {bad.numel()} entries {where}: {entries}; "
                         f"{_errors(max_abs, max_rel)}.", *hints)
    if data["output_dtypes"][0] != "float64":
        fwd.fail(f"forward returned a {data['output_dtypes'][0]} tensor for float64 inputs: keep the input's dtype.")

    interface = parts["interface"]
    if data["backward_error"]:
        for key in ("gradcheck", "reference", "interface"):
            parts[key].fail(data["backward_error"])
        return

    # 2. backward: raw returns, interface
    n_args = len(args)
    returns = data["returns"]
    counts = {len(r) for r in returns}
    if data.get("function_class", True):
        for r in returns[:1]:
            extra_not_none = [k for k in range(n_args, len(r)) if r[k]["kind"] != "none"]
            if len(r) < n_args or extra_not_none:
                interface.fail(f"backward returned {len(r)} value(s); forward takes {n_args} argument(s) "
                               f"({', '.join(names)}), so backward must return {n_args}: a gradient for each tensor, "
                               "None for each argument that is not a tensor.",
                               "wrong number of returned gradients: count the arguments of forward after ctx.")
    del counts
    for i, a in enumerate(args):
        if i in slots:
            continue
        for r in returns[:1]:
            if i < len(r) and r[i]["kind"] != "none":
                interface.fail(f"backward returned a {r[i].get('type', r[i]['kind'])} for `{names[i]}`, which is "
                               f"{'None' if a is None else 'a ' + type(a).__name__}, not a tensor: its gradient must be None.",
                               "a gradient for a non-tensor argument: autograd raises an error; return None in that position.")
    for i in slots:
        first = returns[0][i] if returns and i < len(returns[0]) else {"kind": "missing"}
        if first["kind"] == "none":
            interface.fail(f"backward returned None for `{names[i]}`, which requires a gradient.",
                           "when ctx.needs_input_grad says an input needs a gradient, return one for it.")
        elif first["kind"] == "tensor":
            if list(first["shape"]) != list(args[i].shape):
                hint = None
                if len(first["shape"]) == 2 and list(first["shape"]) == list(args[i].shape)[::-1]:
                    hint = "this gradient looks transposed: a gradient has the shape of its input (check the matrix products)."
                elif len(first["shape"]) == args[i].dim() + 1 and list(first["shape"][1:]) == list(args[i].shape):
                    hint = "the bias gradient still has a batch dimension: sum it over the batch (dim 0)."
                interface.fail(f"the gradient returned for `{names[i]}` has shape {tuple(first['shape'])}; "
                               f"`{names[i]}` has shape {tuple(args[i].shape)}, and its gradient must have the same shape.", hint)
            if first["dtype"] != "float64":
                interface.fail(f"the gradient for `{names[i]}` is {first['dtype']} but `{names[i]}` is float64.",
                               "create new tensors like their inputs: torch.zeros_like(x), or dtype=x.dtype.")
            if first["device"] != "cpu":
                interface.fail(f"the gradient for `{names[i]}` is on {first['device']} but `{names[i]}` is on cpu.")
        elif first["kind"] == "other":
            interface.fail(f"backward returned a {first['type']} for `{names[i]}`; it should return a tensor.")
    if data["grad_output_modified"]:
        interface.fail("backward changed grad_output in place. grad_output belongs to autograd (other nodes may use it): "
                       "compute new tensors, e.g. grad_output * y, not grad_output.mul_(y) or grad_output *= y.")
    f32 = data.get("float32")
    if f32 and "error" in f32:
        interface.fail(f"with float32 inputs: {f32['error']}")
    elif f32:
        if any(d != "float32" for d in f32["output_dtypes"]):
            interface.fail("with float32 inputs forward returned a different dtype: keep the input's dtype.")
        wrong = [names[i] for i in slots if i < len(f32["grad_dtypes"]) and f32["grad_dtypes"][i] not in (None, "float32")]
        if wrong:
            interface.fail(f"with float32 inputs the gradient for {', '.join(wrong)} is not float32.",
                           "create new tensors like their inputs: torch.zeros_like(x), or dtype=x.dtype — "
                           "not torch.zeros(shape), which uses the default dtype.")
    for entry in data.get("needs_input_grad", []):
        off = entry["off"]
        if "error" in entry:
            interface.fail(f"when `{names[off]}` does not require a gradient, backward fails: {entry['error']}")
        elif spec.needs_input_grad and off < len(entry["returned"]) and entry["returned"][off] != "none":
            interface.fail(f"when `{names[off]}` does not require a gradient (ctx.needs_input_grad[{off}] is False), "
                           "backward still computes one.",
                           "skip the work autograd does not need: `if ctx.needs_input_grad[i]: ...`, else return None.")
    if spec.saves == "output" and data.get("saved") is not None:
        saved = data["saved"]
        if not saved:
            interface.fail("forward saved nothing with ctx.save_for_backward.",
                           "save the tensor backward needs with ctx.save_for_backward(...), not as an attribute of ctx.")
        elif not any(s["equals_output"] for s in saved):
            interface.fail("this exercise asks forward to save its *output* for backward; it saves something else.",
                           "the derivative of exp is exp itself: save the result of forward and reuse it.")

    # 3. backward against the numerical Jacobian and the reference
    mode = data["mode"]
    calls = _unit_grad_outputs(shapes) if mode == "full" else _grad_outputs(shapes, seed, case, count=2)
    ref = _reference_vjps(spec, args, calls)
    directions = _directions(args, seed, case)
    for i in slots:
        label, shape = names[i], tuple(args[i].shape)
        got = _gradient_matrix(data, i, shape)
        want = torch.stack([row[i].reshape(-1) for row in ref])
        pert = data["perturbed"][i]
        if got is None:
            msg = f"the gradient for `{label}` cannot be compared: it is missing or has the wrong shape {where}."
            hints = _shape_hints(data, i, ref, args)
            parts["gradcheck"].fail(msg, *hints)
            parts["reference"].fail(msg, *hints)
            continue
        if mode == "full":
            numerical = ((pert[0] - pert[1]) / (2 * EPS)).T            # (numel(out), numel(input))
            bad, max_abs, max_rel = _compare(got, numerical, RTOL, ATOL)
            hints = _generic_hints(got, want, True) + _spec_hints(spec, args, calls, i, data, ref)
            if bad.any():
                parts["gradcheck"].fail(
                    f"the gradient for `{label}` disagrees with the numerical Jacobian {where} in {int(bad.sum())} of "
                    f"{bad.numel()} entries: {_describe_entries(bad, shapes, label, shape)}; "
                    f"{_errors(max_abs, max_rel)}.", *hints)
                if got.numel() <= PICTURE_LIMIT:
                    pictures.append({"title": f"{name}: d outputs / d {label} {where}", "numerical": numerical,
                                     "analytical": got, "bad": bad})
            bad, max_abs, max_rel = _compare(got, want, spec.ref_rtol, spec.ref_atol)
            if bad.any():
                parts["reference"].fail(
                    f"the gradient for `{label}` disagrees with the reference backward {where} in {int(bad.sum())} of "
                    f"{bad.numel()} Jacobian entries: {_describe_entries(bad, shapes, label, shape)}; "
                    f"{_errors(max_abs, max_rel)}.", *hints)
        else:
            # gradcheck's fast mode: u^T J v, analytically (the VJP dotted with v) and numerically.
            v = directions[i].reshape(-1)
            for call, (gos, vjp) in enumerate(zip(calls, got)):
                u = torch.cat([g.reshape(-1) for g in gos])
                analytic = float(vjp @ v)
                numeric = float(u @ ((pert[0] - pert[1]) / (2 * EPS)))
                if abs(analytic - numeric) > ATOL + RTOL * abs(numeric):
                    parts["gradcheck"].fail(
                        f"the gradient for `{label}` disagrees with the numerical Jacobian {where}: for a random "
                        f"grad_output u and direction v, u·J·v differs by {abs(analytic - numeric):.3g} "
                        f"(relative {abs(analytic - numeric) / max(abs(numeric), 1e-12):.3g}).",
                        *(_generic_hints(got, want, True) + _spec_hints(spec, args, calls, i, data, ref)))
                    break
            bad, max_abs, max_rel = _compare(got, want, spec.ref_rtol, spec.ref_atol)
            if bad.any():
                parts["reference"].fail(
                    f"the gradient for `{label}` disagrees with the reference backward {where} in "
                    f"{_describe_grad_entries(bad.any(0), label, shape)}; {_errors(max_abs, max_rel)}.", *(_generic_hints(got, want, True) + _spec_hints(spec, args, calls, i, data, ref)))

    # 4. double backward
    if double_backward and spec.double_backward:
        _judge_double_backward(spec, data.get("double_backward"), args, shapes, seed, case, parts["double_backward"], where)


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
        if value.dim() == 2 and tuple(value.shape) == tuple(want.shape)[::-1] and torch.allclose(value.T, want, rtol=1e-6, atol=1e-9):
            hints.append("this gradient is the transpose of the right one: swap the order of the matrix product and transpose its factors.")
        elif value.dim() == want.dim() + 1 and tuple(value.shape[1:]) == tuple(want.shape) and torch.allclose(value.sum(0), want, rtol=1e-6, atol=1e-9):
            hints.append("the bias is added to every row of the batch, so its gradient is the sum over the batch: sum over dim 0.")
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
    got_rows = [returns[i]["value"].reshape(-1) for returns in data["returns"]
                if i < len(returns) and returns[i]["kind"] == "tensor" and returns[i]["shape"] == list(args[i].shape)]
    if len(got_rows) == len(data["returns"]) and got_rows:
        got = torch.stack(got_rows)
        mine = torch.stack([row[i].reshape(-1) for row in ref])
        for j in _tensor_slots(args):
            if j != i and args[j].shape == args[i].shape:
                other = torch.stack([row[j].reshape(-1) for row in ref])
                if not torch.allclose(got, mine, rtol=1e-6, atol=1e-9) and torch.allclose(got, other, rtol=1e-6, atol=1e-9):
                    hints.append(f"the gradient returned for `{spec.arg_names[i]}` is the one that belongs to "
                                 f"`{spec.arg_names[j]}`: check the order of the values backward returns, and which "
                                 "factor goes with which input.")
    # transposed, same shape (square matrices)
    for returns, row in zip(data["returns"][:4], ref[:4]):
        r = returns[i] if i < len(returns) else None
        if r and r["kind"] == "tensor" and r["value"].dim() == 2 and r["value"].shape[0] == r["value"].shape[1]:
            want = row[i]
            if not torch.allclose(r["value"], want, rtol=1e-6, atol=1e-9) and torch.allclose(r["value"].T, want, rtol=1e-6, atol=1e-9):
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
            part.fail(f"the gradients backward returns cannot be differentiated again {where}.",
                      "write backward with differentiable torch operations on tensors (no .detach(), .item(), NumPy or "
                      "in-place changes) so that autograd can record it too.")
        else:
            part.fail(f"double backward failed {where}: {got['error']}")
        return
    slots = _tensor_slots(args)
    u = _grad_outputs(shapes, seed, case + 1000, count=1)[0]
    inputs = _fresh(args)
    outs = _as_outputs(spec.reference(*inputs))
    grads = torch.autograd.grad(outs, [inputs[i] for i in slots], u, create_graph=True, allow_unused=True)
    flat = torch.cat([g.reshape(-1) for g in grads])
    total = flat.numel()
    want = torch.zeros(total, total, dtype=torch.float64)
    for r in range(total):
        if flat.requires_grad:
            row = torch.autograd.grad(flat[r], [inputs[i] for i in slots], retain_graph=True, allow_unused=True)
            want[r] = torch.cat([(z if z is not None else torch.zeros_like(inputs[i])).reshape(-1) for z, i in zip(row, slots)])
    analytic = got["analytic"]
    numerical = (got["perturbed"][0] - got["perturbed"][1]) / (2 * EPS)
    bad, max_abs, max_rel = _compare(analytic, numerical, RTOL, ATOL)
    if bad.any():
        part.fail(f"the second derivatives through your backward disagree with finite differences of your backward {where} "
                  f"in {int(bad.sum())} of {bad.numel()} entries; largest absolute error {max_abs:.3g}.",
                  "backward must be written with differentiable torch operations for double backward to be right.")
    bad, max_abs, _ = _compare(analytic, want, 1e-6, 1e-8)
    if bad.any():
        part.fail(f"the second derivatives through your backward disagree with the reference {where} in "
                  f"{int(bad.sum())} of {bad.numel()} entries; largest absolute error {max_abs:.3g}.")


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
            part.fail("for CUDA inputs forward returned a tensor on another device: create new tensors on the input's device.")
        expected = _reference_outputs(spec, args)
        for g, e in zip(got["outputs"], expected):
            if g.shape != e.shape or not torch.allclose(g.to(torch.float64), e, rtol=1e-7, atol=1e-9):
                part.fail("for CUDA inputs forward gives different values than on the CPU.")
        for i in _tensor_slots(args):
            r = got["returns"][i] if i < len(got["returns"]) else {"kind": "missing"}
            if r["kind"] == "tensor" and r["device"] != "cuda":
                part.fail(f"for CUDA inputs the gradient for `{names[i]}` is on {r['device']}: create it on the input's device.")
        if got["grad_output_modified"]:
            part.fail("on CUDA, backward changed grad_output in place.")


def judge_function(data, reference, seed=0, cases=None, double_backward=False, cuda=True, points=1, name=None):
    spec = _spec(reference)
    name = data.get("name") or name or spec.title
    parts = {k: Part(k, WEIGHTS[k]) for k in ("forward", "gradcheck", "reference", "interface")}
    if double_backward and spec.double_backward:
        parts["double_backward"] = Part("double_backward", WEIGHTS["double_backward"])
    if cuda:
        parts["cuda"] = Part("cuda", WEIGHTS["cuda"])
    pictures: list = []
    for case_data in data["cases"]:
        case_data = {**case_data, "function_class": data.get("function_class", True)}
        _judge_case(spec, case_data, seed, parts, pictures, name, double_backward)
    if cuda:
        _judge_cuda(spec, data["cases"], seed, parts["cuda"], spec.arg_names)
    db = parts.get("double_backward")
    if db is not None and db.passed is True:
        if getattr(db, "checked", 0) == 0:
            db.passed = None          # every case too large: not scored, and the report says why
        else:
            db.messages.clear()
    # The CUDA part can only take points away: a machine with a GPU and one without give a correct answer
    # the same score, and a wrong answer the same score too unless it is wrong on CUDA only.
    scored = [p for p in parts.values() if p.passed is not None and p.name != "cuda"]
    total = sum(p.weight for p in scored)
    earned = sum(p.weight for p in scored if p.passed)
    if cuda and parts["cuda"].passed is False:
        earned = max(0.0, earned - parts["cuda"].weight)
    score = round(points * earned / total, 2) if total else float(points)
    verdict = Verdict(score, points=points, parts=list(parts.values()), title=f"{name} ({spec.title})", pictures=pictures[:2])
    if earned == 0:
        failure = CheckFailed(verdict.report())
        failure.verdict = verdict
        raise failure
    return verdict


# --------------------------------------------------------------------------------------------- in the notebook

def draw_jacobians(picture: dict):
    """The numerical and analytical Jacobians side by side; wrong entries outlined. Returns the figure."""
    import matplotlib.pyplot as plt

    numerical, analytical, bad = picture["numerical"], picture["analytical"], picture["bad"]
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4), squeeze=True)
    lim = float(max(numerical.abs().max(), analytical.abs().max(), 1e-12))
    for ax, matrix, title in zip(axes, (numerical, analytical), ("numerical (finite differences)", "analytical (your backward)")):
        image = ax.imshow(matrix.numpy(), cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("input entry (flattened)")
    axes[0].set_ylabel("output entry (flattened)")
    for ax in axes:
        for r, c in torch.nonzero(bad).tolist():
            ax.add_patch(plt.Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=1.5))
    fig.colorbar(image, ax=list(axes), shrink=0.8)
    fig.suptitle(picture["title"] + " — wrong entries outlined", fontsize=9)
    return fig


def _show_pictures(pictures) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return
    if get_ipython() is None or not pictures:
        return
    import warnings

    import matplotlib.pyplot as plt
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import io

        from IPython.display import Image
        for picture in pictures:
            fig = draw_jacobians(picture)
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")   # a PNG whatever the backend
            plt.close(fig)
            display(Image(data=buffer.getvalue(), format="png"))


@dataclass(frozen=True)
class ReportingCheck(Check):
    """A check that, called in a notebook, prints its report on stdout and shows the Jacobian pictures."""

    def __call__(self, obj: Any, **params: Any) -> Any:
        data = self.collect(obj, **params)
        try:
            verdict = self.decide(data, **params)
        except CheckFailed as failure:
            _show_pictures(getattr(getattr(failure, "verdict", None), "pictures", []))
            raise
        if isinstance(verdict, Verdict):
            print(verdict.report() if not verdict.passed else f"{verdict.title}: all parts pass "
                  f"({float(verdict):g} of {verdict.points:g} points).")
            for p in verdict.parts if verdict.passed else []:
                if p.passed is None:
                    print("  skipped: " + "; ".join(p.messages))
            _show_pictures(verdict.pictures)
        return verdict


def register_reporting(name: str, probe: Callable, judge: Callable) -> ReportingCheck:
    if name in CHECKS:
        raise ValueError(f"a check named {name} is already registered")
    CHECKS[name] = ReportingCheck(name, probe, judge)
    return CHECKS[name]


check_function = register_reporting("check_function", probe_function, judge_function)

__all__ = ["FunctionSpec", "SPECS", "add_spec", "check_function", "probe_function", "judge_function", "Verdict",
           "translate", "draw_jacobians", "case_args", "FAILED"]
