"""Checks of notebook 05 (custom Functions on the GPU): the names its test cells import, and their probes.

Each probe runs inside the grading sandbox: it calls the learner's object on the cases its params name and
returns plain data (numbers, strings, lists, dicts, CPU tensors); nothing here knows a right answer. The judges
(:mod:`autograder.judges.nb05`) regenerate the inputs, compute every reference and decide. Every check runs on a
CPU: Triton kernels in Triton's interpreter, device-agnosticism on the meta device, autocast with CPU autocast. A
GPU, where there is one, adds nothing the score depends on.

A learner's Triton kernel runs compiled on the GPU where there is one, and in Triton's interpreter on CPU
tensors where there is none (re-wrapped as ``InterpretedFunction(kernel.fn)`` if the notebook imported Triton
in compiled mode, its ``tl`` helpers then run as Python). Its output tensor sits between two guard zones, so a
store past the end (a missing or wrong mask) lands in memory the probe owns and is reported, instead of
corrupting the process.

The Triton Function (TritonSiLU) is checked with the course's stand-in kernels (:mod:`autograder.course_kernels`)
bound to the notebook's kernel names: that exercise grades the Function around the kernels, which have their own.
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from coursetools.device import triton_mode

from .course_kernels import StandInKernel
from .feedback import CheckFailed, not_written
from .probes.call import call_learner
from .probes.function import probe_function
from .probes.function_cases import FunctionInputs, add_inputs
from .registry import NotebookChecks, ProbeData, show_verdict

EPS = 1e-6  # the central-difference step (gradcheck's)
GUARD_VALUE = -12345.0  # what the guard zones around a kernel's output hold
# as imported, before any learner code runs (replaced later, they are flagged, and do not answer for the probes)
_saved_tensors_hooks, _equal = torch.autograd.graph.saved_tensors_hooks, torch.equal

# --------------------------------------------------------------------------------------------- inputs

_SHAPES = [(7,), (3, 5), (2, 3, 4), (33,), (4, 9)]


def generator(seed: int, case: int, salt: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(1_000_003 * int(seed) + 101 * int(case) + salt)


def elementwise_case(seed: int, case: int) -> dict[str, torch.Tensor]:
    """The float64 inputs of one case of an element-wise Function: x, a grad_output u, and the
    layouts used for the non-contiguous parts (a strided slice of a wider tensor, a transposed u)."""
    gen = generator(seed, case)
    shape = _SHAPES[case % len(_SHAPES)]
    x = 3 * torch.randn(shape, generator=gen, dtype=torch.float64)
    u = torch.randn(shape, generator=gen, dtype=torch.float64)
    rows, cols = 3 + case % 3, 4 + case % 4
    wide = 3 * torch.randn(rows, 2 * cols, generator=gen, dtype=torch.float64)  # x_strided = wide[:, ::2]
    x2 = 3 * torch.randn(rows, cols, generator=gen, dtype=torch.float64)
    u_transposed = torch.randn(cols, rows, generator=gen, dtype=torch.float64)  # u2 = u_transposed.t()
    return {"x": x, "u": u, "wide": wide, "x2": x2, "u_transposed": u_transposed}


def kernel_case(seed: int, n: int, dtype: str) -> dict[str, torch.Tensor]:
    gen = generator(seed, n, salt=5)
    return {
        "x": 3 * torch.randn(n, generator=gen, dtype=torch.float64).to(getattr(torch, dtype)),
        "g": torch.randn(n, generator=gen, dtype=torch.float64).to(getattr(torch, dtype)),
    }


def gather_case(gen: torch.Generator, case: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(weight, index) with repeated rows in index: their gradients must add up."""
    rows, dim, picks = [(5, 3, 7), (4, 2, 9), (6, 4, 6)][case % 3]
    weight = torch.randn(rows, dim, generator=gen, dtype=torch.float64)
    index = torch.randint(0, rows, (picks,), generator=gen)
    index[-1] = index[0]  # at least one row taken twice
    return weight, index


add_inputs(
    FunctionInputs(
        name="gather_rows",
        title="GatherRows.apply(weight, index)",
        arg_names=("weight", "index"),
        make_args=gather_case,
    )
)


def linear_case(seed: int, case: int) -> dict[str, torch.Tensor]:
    gen = generator(seed, case, salt=9)
    n, fan_in, fan_out = [(8, 64, 16), (16, 128, 8), (4, 256, 32)][case % 3]
    return {
        "x": torch.randn(n, fan_in, generator=gen, dtype=torch.float64),
        "W": torch.randn(fan_in, fan_out, generator=gen, dtype=torch.float64) / math.sqrt(fan_in),
        "b": torch.randn(fan_out, generator=gen, dtype=torch.float64),
        "u": torch.randn(n, fan_out, generator=gen, dtype=torch.float64),
    }


def _mlp_weights():
    gen = torch.Generator().manual_seed(505)
    return torch.randn(4, 6, generator=gen, dtype=torch.float64), torch.randn(6, 3, generator=gen, dtype=torch.float64)


def composed_gelu(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def recompute_problem(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The functions a learner's Checkpoint is tried on (all built from torch operations)."""
    if name == "gelu_chain":
        return lambda x: composed_gelu(composed_gelu(composed_gelu(x)))
    if name == "sin_exp":
        return lambda x: torch.sin(x) * torch.exp(-x * x)
    if name == "mlp":
        W1, W2 = _mlp_weights()
        return lambda x: torch.tanh(x @ W1.to(x.dtype)) @ W2.to(x.dtype)
    raise ValueError(f"unknown function {name!r}")


RECOMPUTE_PROBLEMS = ("gelu_chain", "sin_exp", "mlp")


def recompute_input(name: str, seed: int) -> torch.Tensor:
    gen = generator(seed, sum(map(ord, name)), salt=13)
    shape = (5, 4) if name == "mlp" else (11,)
    return torch.randn(shape, generator=gen, dtype=torch.float64)


def saved_bytes_problem(name: str) -> tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]:
    """(fn, inputs) for a learner's saved_bytes(fn, *inputs)."""
    gen = torch.Generator().manual_seed(sum(map(ord, name)))
    x = torch.randn(1000, generator=gen, dtype=torch.float32, requires_grad=True)
    if name == "silu_composed":
        return (lambda x: x * torch.sigmoid(x)), (x,)
    if name == "gelu_composed":
        return composed_gelu, (x,)
    if name == "exp_twice":  # exp saves its output: two tensors
        return (lambda x: torch.exp(torch.exp(x))), (x,)
    if name == "square_by_product":  # x * x saves x twice: one storage
        return (lambda x: x * x), (x,)
    if name == "matmul":
        A = torch.randn(64, 32, generator=gen, dtype=torch.float64, requires_grad=True)
        B = torch.randn(32, 16, generator=gen, dtype=torch.float64, requires_grad=True)
        return (lambda A, B: A @ B), (A, B)
    if name == "no_grad_needed":  # nothing requires grad: nothing is saved
        return (lambda x: x * torch.sigmoid(x)), (x.detach(),)
    if name == "half_precision":
        return (lambda x: torch.tanh(x)), (x.detach().to(torch.bfloat16).requires_grad_(),)
    raise ValueError(f"unknown problem {name!r}")


SAVED_BYTES_PROBLEMS = (
    "silu_composed",
    "gelu_composed",
    "exp_twice",
    "square_by_product",
    "matmul",
    "no_grad_needed",
    "half_precision",
)


# --------------------------------------------------------------------------------------------- helpers


def count_saved(fn: Callable, *args: Any) -> tuple[Any, list[dict]]:
    """Run fn(*args) under saved-tensor hooks; (result, one record per distinct storage saved)."""
    seen: dict[int, dict] = {}

    def pack(t):
        storage = t.untyped_storage()
        seen.setdefault(
            storage.data_ptr(), {"bytes": storage.nbytes(), "shape": list(t.shape), "ptr": storage.data_ptr()}
        )
        return t

    with _saved_tensors_hooks(pack, lambda t: t):
        result = fn(*args)
    return result, list(seen.values())


def _plain(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "ptr"} for r in records]  # addresses stay in the kernel


@contextmanager
def _nothing():
    yield


def attribute_tensors(node: Any, saved: list[dict]) -> list[dict]:
    """Tensors forward kept as attributes of ctx (ctx.s = ..., also inside a list, tuple or dict), other than the
    storages it saved: memory kept for backward that saved-tensor hooks never see. One record per storage."""
    seen = {s.get("ptr") for s in saved}
    out: dict[int, dict] = {}

    def visit(name: str, value: Any, depth: int = 0) -> None:
        if isinstance(value, torch.Tensor):
            if value.device.type == "meta":
                return
            storage = value.untyped_storage()
            if storage.data_ptr() not in seen:
                out.setdefault(storage.data_ptr(), {"attribute": name, "bytes": storage.nbytes()})
        elif depth < 3 and isinstance(value, (list, tuple)):
            for v in value:
                visit(name, v, depth + 1)
        elif depth < 3 and isinstance(value, dict):
            for v in value.values():
                visit(name, v, depth + 1)

    try:
        attributes = dict(vars(node))
    except TypeError:
        return []
    for name, value in attributes.items():
        visit(name, value)
    return list(out.values())


def function_apply(obj: Any, name: str) -> Callable:
    if isinstance(obj, type) and issubclass(obj, torch.autograd.Function):
        return obj.apply
    if isinstance(obj, torch.autograd.Function):
        raise CheckFailed(f"`{name}` is an instance of a Function; pass the class itself, the check calls its `apply`.")
    raise CheckFailed(f"`{name}` should be a subclass of torch.autograd.Function, but it is a {type(obj).__name__}.")


def _cpu(t: Any) -> Any:
    return t.detach().to("cpu", torch.float64).clone() if isinstance(t, torch.Tensor) else None


def _describe(value: Any) -> dict:
    if isinstance(value, torch.Tensor):
        return {
            "kind": "tensor",
            "shape": list(value.shape),
            "dtype": str(value.dtype).replace("torch.", ""),
            "device": value.device.type,
            "value": _cpu(value) if value.device.type != "meta" else None,
        }
    if value is None:
        return {"kind": "none"}
    return {"kind": "other", "type": type(value).__name__}


def _returns(raw: Any) -> list[dict]:
    return [_describe(r) for r in (raw if isinstance(raw, (tuple, list)) else (raw,))]


def call_kernel(fn: Callable, *args: Any, name: str) -> Any:
    """call_learner, with the Triton interpreter's wrapping taken off a blank stub's NotImplementedError."""
    try:
        # call= given: building the default description repr()s every tensor argument (~20 ms each).
        return call_learner(fn, *args, name=name, call=f"{name}(…)")
    except CheckFailed as failure:
        cause = failure.__cause__
        while cause is not None:
            if isinstance(cause, NotImplementedError) or "NotImplementedError" in type(cause).__name__:
                raise not_written(name) from None
            cause = cause.__cause__ or cause.__context__
        if "NotImplementedError" in str(failure):
            raise not_written(name) from None
        raise


def backward_of(node: Any, grad_output: torch.Tensor, name: str) -> Any:
    """The learner's backward, called through its node as autograd's engine calls it: with recording off."""
    with torch.no_grad():
        return call_kernel(node.apply, grad_output, name=name)


def _apply_and_backward(apply: Callable, x: torch.Tensor, u: torch.Tensor, name: str, triton: bool = False) -> dict:
    """Forward on x (requiring grad), what forward saved, then backward with u: raw returns. triton: also how many
    Triton kernels forward and backward launched."""
    x = x.detach().clone().requires_grad_(True)
    forward_launches, backward_launches = {"n": 0}, {"n": 0}
    with counting_launches(forward_launches) if triton else _nothing():
        out, saved = count_saved(lambda t: call_kernel(apply, t, name=f"{name}.forward"), x)
    result = {"output": _describe(out), "saved_storages": _plain(saved)}
    if triton:
        result["launches"] = {"forward": forward_launches["n"], "backward": 0}
    if not isinstance(out, torch.Tensor):
        return result
    node = out.grad_fn
    result["attribute_tensors"] = attribute_tensors(node, saved) if node is not None else []
    if node is None:
        result["backward_error"] = (
            f"the output of `{name}.apply` is not connected to the graph (no grad_fn): "
            "return the tensor forward computed, not a detached copy."
        )
        return result
    try:
        saved = [s for s in node.saved_tensors if isinstance(s, torch.Tensor)]
    except RuntimeError:
        saved = []
    result["saved_tensors"] = [list(s.shape) for s in saved]
    result["saved_is_input"] = [
        bool(s.device.type != "meta" and s.shape == x.shape and _equal(s.detach(), x.detach())) for s in saved
    ]
    kept = u.clone()
    try:
        with counting_launches(backward_launches) if triton else _nothing():
            raw = backward_of(node, u, name=f"{name}.backward")
    except CheckFailed as failure:
        result["backward_error"] = str(failure)
        return result
    finally:
        if triton:
            result["launches"]["backward"] = backward_launches["n"]
    result["returns"] = _returns(raw)
    result["grad_output_modified"] = bool(u.device.type != "meta" and not _equal(u, kept))
    return result


# --------------------------------------------------------------------------------------------- Triton

# The launch methods as Triton defines them, taken before any learner code runs (the grader's kernel setup imports
# this module before the notebook's first cell). Importing triton decides how its own library functions (tl.sigmoid)
# run, so the mode is set first, by the notebook's own rule: the interpreter when there is no GPU.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
try:
    from triton.runtime.interpreter import InterpretedFunction as _Interpreted
    from triton.runtime.jit import JITFunction as _Jit

    _LAUNCHERS: tuple = ((_Interpreted, _Interpreted.run), (_Jit, _Jit.run))
except ImportError:  # pragma: no cover - triton is pinned in requirements.txt
    _LAUNCHERS = ()
_LAUNCHERS += ((StandInKernel, StandInKernel.run),)  # the course's stand-ins launch like kernels


@contextmanager
def counting_launches(counter: dict) -> Iterator[dict]:
    """Count in counter["n"] the Triton kernels the body launches (interpreted or compiled): a Function that is to
    wrap kernels must launch some. Launches go through Triton's own run methods, whatever the learner's code did
    to them (a replaced run is flagged by the kernel's watch)."""

    def counted(run):
        def launch(self, *args, **kwargs):
            if not kwargs.get("warmup"):
                counter["n"] += 1
            return run(self, *args, **kwargs)

        return launch

    before = [(cls, cls.__dict__.get("run")) for cls, _ in _LAUNCHERS]
    for cls, run in _LAUNCHERS:
        cls.run = counted(run)
    try:
        yield counter
    finally:
        for cls, old in before:
            cls.run = old


def kernel_device() -> str:
    """Where tensors handed to the learner's Triton Function must live."""
    return "cpu" if triton_mode() == "interpreter" else "cuda"


def kernel_launcher(kernel: Any, name: str) -> tuple[Any, str, Callable[[], Any]]:
    """(launcher, device, context) for running the learner's kernel: compiled on the GPU where there is one and
    Triton runs compiled; else in the interpreter on the CPU, in a context where Triton's own @jit helpers
    (tl.sigmoid, tl.softmax ...) run as Python, which they do not when Triton was imported in compiled mode."""
    from triton.runtime.jit import JITFunction

    if isinstance(kernel, JITFunction) and torch.cuda.is_available() and triton_mode() != "interpreter":
        return kernel, "cuda", _nothing
    return interpreted(kernel, name), "cpu", helpers_as_python


@contextmanager
def _nothing():
    yield


@contextmanager
def helpers_as_python() -> Iterator[None]:
    """While an interpreted kernel runs: a @triton.jit function it calls (compiled-mode object) runs its Python body."""
    from triton.runtime.jit import JITFunction

    before = JITFunction.__dict__.get("__call__")
    JITFunction.__call__ = lambda self, *args, **kwargs: self.fn(*args, **kwargs)
    try:
        yield
    finally:
        if before is None:
            del JITFunction.__call__
        else:
            JITFunction.__call__ = before


def interpreted(kernel: Any, name: str) -> Any:
    """The learner's kernel as an interpreted Triton function (whatever mode the notebook compiled it in)."""
    try:
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction
    except ImportError:  # pragma: no cover - triton is pinned in requirements.txt
        raise CheckFailed("Triton is not installed in this environment: `pip install -r requirements.txt`.") from None
    if isinstance(kernel, InterpretedFunction):
        return kernel
    if isinstance(kernel, JITFunction):
        return InterpretedFunction(kernel.fn)
    raise CheckFailed(
        f"`{name}` should be a Triton kernel (a function decorated with @triton.jit), "
        f"but it is a {type(kernel).__name__}."
    )


def _guarded(values: torch.Tensor, guard: int, fill: float, device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """(buffer, view): values in the middle of a buffer with `guard` entries of `fill` on each side."""
    buffer = torch.full((values.numel() + 2 * guard,), fill, dtype=values.dtype, device=device)
    buffer[guard : guard + values.numel()] = values
    return buffer, buffer[guard : guard + values.numel()]


def probe_kernel(
    kernel: Any,
    kind: str = "forward",
    sizes: Sequence[Any] = ((10, 16),),
    seed: int = 0,
    dtypes: Sequence[str] = ("float64", "float32"),
) -> ProbeData:
    """Launch the learner's kernel (interpreted) on inputs of n elements with BLOCK_SIZE = block.

    forward kernels:  kernel[grid](x_ptr, y_ptr, n_elements, BLOCK_SIZE=block)
    backward kernels: kernel[grid](x_ptr, grad_out_ptr, grad_in_ptr, n_elements, BLOCK_SIZE=block)
    For each (n, block, dtype): the written values, how many guard entries before and after the
    output were overwritten, and whether the inputs changed.
    """
    name = getattr(kernel, "__name__", None) or getattr(getattr(kernel, "fn", None), "__name__", f"{kind} kernel")
    launcher, device, context = kernel_launcher(kernel, name)
    data = []
    for n, block in sizes:
        for dtype in dtypes:
            case = kernel_case(seed, n, dtype)
            guard = max(block, 16)
            x_buf, x = _guarded(case["x"], guard, float("nan"), device)
            g_buf, g = _guarded(case["g"], guard, float("nan"), device)
            out_buf, out = _guarded(torch.zeros(n, dtype=case["x"].dtype), guard, GUARD_VALUE, device)
            out.fill_(GUARD_VALUE)
            x_before, g_before = x_buf.clone(), g_buf.clone()
            grid = (math.ceil(n / block),)
            args = (x, out, n) if kind == "forward" else (x, g, out, n)
            with context():
                call_kernel(lambda *a: launcher[grid](*a, BLOCK_SIZE=block), *args, name=name)
            data.append(
                {
                    "n": n,
                    "block": block,
                    "dtype": dtype,
                    "values": out.to(torch.float64).cpu().clone(),
                    "written_before": int((out_buf[:guard] != GUARD_VALUE).sum()),
                    "written_after": int((out_buf[guard + n :] != GUARD_VALUE).sum()),
                    "inputs_changed": not (
                        _equal(x_buf.nan_to_num(7.0), x_before.nan_to_num(7.0))
                        and _equal(g_buf.nan_to_num(7.0), g_before.nan_to_num(7.0))
                    ),
                }
            )
    return data


# --------------------------------------------------------------------------------------------- element-wise Functions


def probe_elementwise(
    obj: Any,
    activation: str = "silu",
    seed: int = 0,
    cases: int = 2,
    triton: bool = False,
    points: float = 1,
    name: str | None = None,
) -> ProbeData:
    """An element-wise Function (x -> f(x)) on float64 cases: forward, what it saves, backward with a random
    grad_output, forward at x +/- EPS (the numerical derivative, entry by entry), a strided input, a
    transposed grad_output, float32, and (PyTorch Functions) the meta device: does it stay on x's device?"""
    name = name or str(getattr(obj, "__name__", "your Function"))
    apply = function_apply(obj, name)
    device = kernel_device() if triton else "cpu"
    data: dict[str, Any] = {"name": name, "device": device, "cases": []}
    with course_kernels(obj) if triton else _nothing() as replaced:
        data["course_kernels"] = replaced or []
        _probe_elementwise_cases(data, apply, seed, cases, triton, name, device)
    return data


@contextmanager
def course_kernels(obj: Any) -> Iterator[list[str]]:
    """While the Function is checked, the notebook's kernel names (silu_forward_kernel ...) that its forward and
    backward read as globals are bound to the course's kernels; the learner's are put back after. Yields the
    names replaced."""
    from .course_kernels import STAND_INS

    namespaces: list[dict] = []
    for method in ("forward", "backward"):
        fn = inspect.getattr_static(obj, method, None)
        fn = getattr(fn, "__func__", fn)
        space = getattr(fn, "__globals__", None)
        if isinstance(space, dict) and not any(space is seen for seen in namespaces):
            namespaces.append(space)
    replaced = [(space, key, space[key]) for space in namespaces for key in STAND_INS if key in space]
    for space, key, _ in replaced:
        space[key] = STAND_INS[key]
    try:
        yield sorted({key for _, key, _ in replaced})
    finally:
        for space, key, learners in replaced:
            space[key] = learners


def _probe_elementwise_cases(data: dict, apply: Callable, seed: int, cases: int, triton: bool, name: str, device: str):
    for case in range(cases):
        inputs = {k: v.to(device) for k, v in elementwise_case(seed, case).items()}
        x, u = inputs["x"], inputs["u"]
        record = _apply_and_backward(apply, x, u, name, triton)
        with torch.no_grad():
            record["plus"] = _describe(call_kernel(apply, x + EPS, name=f"{name}.forward"))
            record["minus"] = _describe(call_kernel(apply, x - EPS, name=f"{name}.forward"))
        data["cases"].append(record)
    # Layouts: a strided input (every other column of a wider tensor) and a transposed grad_output.
    inputs = {k: v.to(device) for k, v in elementwise_case(seed, 0).items()}
    strided = inputs["wide"][:, ::2]
    data["strided_forward"] = _describe(call_kernel(apply, strided, name=f"{name}.forward"))
    data["transposed_grad"] = _apply_and_backward(apply, inputs["x2"], inputs["u_transposed"].t(), name, triton)
    data["strided_both"] = _apply_and_backward(apply, strided, inputs["u_transposed"].t(), name, triton)
    # float32 in, float32 out.
    x32 = inputs["x"].to(torch.float32)
    data["float32"] = _apply_and_backward(apply, x32, inputs["u"].to(torch.float32), name, triton)
    # A device no real data lives on: a Function that creates tensors on the default device fails here.
    if not triton:
        meta = torch.empty(5, 3, device="meta")
        try:
            data["meta"] = _apply_and_backward(apply, meta, torch.empty(5, 3, device="meta"), name)
        except CheckFailed as failure:
            data["meta"] = {"error": str(failure)}


# --------------------------------------------------------------------------------------------- GatherRows


def probe_gather_rows(
    obj: Any, seed: int = 0, cases: int = 2, points: float = 1, double_backward: bool = False
) -> ProbeData:
    """check_function's probe on the gather_rows inputs, and GatherRows on the meta device and in bfloat16.
    cuda=False: the device part runs on the meta device, on every machine alike."""
    return {
        "function": probe_function(
            obj,
            reference="gather_rows",
            seed=seed,
            cases=cases,
            points=points,
            double_backward=double_backward,
            cuda=False,
        ),
        "devices": probe_gather_devices(obj, name=getattr(obj, "__name__", "GatherRows")),
    }


def probe_gather_devices(obj: Any, name: str = "GatherRows") -> ProbeData:
    """GatherRows on the meta device and in bfloat16: where and in which dtype do output and gradient come back."""
    apply = function_apply(obj, name)
    out: dict[str, Any] = {}
    for label, device, dtype in (("meta", "meta", torch.float32), ("bfloat16", "cpu", torch.bfloat16)):
        weight = (
            torch.randn(5, 3, dtype=dtype, device=device)
            if device != "meta"
            else torch.empty(5, 3, dtype=dtype, device="meta")
        )
        index = torch.tensor([0, 2, 2, 4], device=device)
        try:
            weight.requires_grad_(True)
            result = call_kernel(apply, weight, index, name=f"{name}.forward")
            entry = {"output": _describe(result)}
            if isinstance(result, torch.Tensor) and result.grad_fn is not None:
                grad_output = torch.ones(result.shape, dtype=result.dtype, device=result.device)
                entry["returns"] = _returns(backward_of(result.grad_fn, grad_output, name=f"{name}.backward"))
            out[label] = entry
        except CheckFailed as failure:
            out[label] = {"error": str(failure)}
    return out


# --------------------------------------------------------------------------------------------- Checkpoint


def probe_recompute(
    obj: Any, problems: Sequence[str] = RECOMPUTE_PROBLEMS, seed: int = 0, points: float = 1, name: str = "Checkpoint"
) -> ProbeData:
    """Checkpoint.apply(fn, x) on each problem: how many calls of fn forward and backward make, what forward saves."""
    apply = function_apply(obj, name)
    data = []
    for problem in problems:
        fn = recompute_problem(problem)
        calls = {"n": 0}

        def counted(t, fn=fn, calls=calls):
            calls["n"] += 1
            return fn(t)

        x = recompute_input(problem, seed).requires_grad_(True)
        out, saved = count_saved(lambda t: call_kernel(apply, counted, t, name=f"{name}.forward"), x)
        forward_calls = calls["n"]
        entry = {
            "problem": problem,
            "saved_storages": _plain(saved),
            "forward_calls": forward_calls,
            "output": _describe(out),
            "requires_grad": bool(isinstance(out, torch.Tensor) and out.requires_grad),
            "attribute_tensors": attribute_tensors(out.grad_fn, saved) if isinstance(out, torch.Tensor) else [],
        }
        if isinstance(out, torch.Tensor) and out.grad_fn is not None:
            u = torch.randn(out.shape, generator=generator(seed, len(problem), salt=17), dtype=out.dtype)
            try:
                entry["returns"] = _returns(backward_of(out.grad_fn, u, name=f"{name}.backward"))
            except CheckFailed as failure:
                entry["backward_error"] = str(failure)
            entry["backward_calls"] = calls["n"] - forward_calls
        data.append(entry)
    return data


# --------------------------------------------------------------------------------------------- autocast


def autocast_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def probe_autocast_linear(
    obj: Any, seed: int = 0, cases: int = 2, points: float = 1, name: str = "Linear32"
) -> ProbeData:
    """Linear32.apply(x, W, b): in float64 without autocast (values and gradients), then with bfloat16 x under
    autocast, backward called inside the autocast region: the dtypes and values that come back."""
    apply = function_apply(obj, name)
    device = autocast_device()
    data = []
    for case in range(cases):
        c = {k: v.to(device) for k, v in linear_case(seed, case).items()}
        entry: dict[str, Any] = {}
        x, W, b = (c[k].clone().requires_grad_(True) for k in ("x", "W", "b"))
        out = call_kernel(apply, x, W, b, name=f"{name}.forward")
        entry["float64"] = {"output": _describe(out)}
        if isinstance(out, torch.Tensor) and out.grad_fn is not None:
            try:  # an error here is data: forward's dtypes are often the cause (the judge says which)
                entry["float64"]["returns"] = _returns(backward_of(out.grad_fn, c["u"], name=f"{name}.backward"))
            except CheckFailed as failure:
                if "not written yet" in str(failure):
                    raise
                entry["float64"]["backward_error"] = str(failure).splitlines()[0][:400]
        x = c["x"].to(torch.bfloat16).requires_grad_(True)
        W = c["W"].to(torch.float32).requires_grad_(True)
        b = c["b"].to(torch.float32).requires_grad_(True)
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            out = call_kernel(apply, x, W, b, name=f"{name}.forward")
            auto = {"output": _describe(out)}
            if isinstance(out, torch.Tensor) and out.grad_fn is not None:
                u = c["u"].to(out.dtype)
                auto["returns"] = _returns(backward_of(out.grad_fn, u, name=f"{name}.backward"))
        entry["autocast"] = auto
        data.append(entry)
    return {"device": device, "cases": data}


# --------------------------------------------------------------------------------------------- saved_bytes, bandwidth


def probe_saved_bytes(saved_bytes: Any, problems: Sequence[str] = SAVED_BYTES_PROBLEMS) -> ProbeData:
    data = []
    for problem in problems:
        fn, inputs = saved_bytes_problem(problem)
        result = call_kernel(saved_bytes, fn, *inputs, name="saved_bytes")
        if isinstance(result, torch.Tensor) and result.numel() == 1:
            result = result.item()
        if isinstance(result, bool) or not isinstance(result, (int, float)):
            raise CheckFailed(
                f"`saved_bytes(fn, *inputs)` should return a number of bytes (an int); "
                f"for the test function '{problem}' it returned a {type(result).__name__}."
            )
        data.append(float(result))
    return data


def probe_bandwidth(effective_bandwidth: Any, cases: Sequence[Any] = ((1 << 24, 4, 1e-3, "forward"),)) -> ProbeData:
    data = []
    for n, size, seconds, direction in cases:
        result = call_kernel(effective_bandwidth, n, size, seconds, direction, name="effective_bandwidth")
        if isinstance(result, torch.Tensor) and result.numel() == 1:
            result = result.item()
        if isinstance(result, bool) or not isinstance(result, (int, float)):
            raise CheckFailed(
                f"`effective_bandwidth(...)` should return a number (GB/s); it returned a {type(result).__name__}."
            )
        data.append(float(result))
    return data


# ------------------------------------------------------------------ the checks
# The grader's hint when a test of a Triton exercise kills the kernel (the rest of the notebook gets a fresh one).
CRASH_HINT = (
    "likely an unmasked tl.load/tl.store: a block that reaches past the end of a tensor reads or writes memory that "
    "is not the tensor's"
)

# judges in autograder/judges/nb05.py. by_hand: the Function's backward is the learner's own formula (or kernel), so
# one handed to torch.autograd is flagged; Checkpoint's backward is autograd on the recomputed fn by design, and the
# rest are not Functions. show=False: the checks whose report is text only.
checks = NotebookChecks(__name__, show=show_verdict)
triton = NotebookChecks(__name__, crash_hint=CRASH_HINT, names=checks.names)
check_gather_rows = checks.add("check_gather_rows", probe_gather_rows, by_hand=True)
check_saved_bytes = checks.add("check_saved_bytes", probe_saved_bytes, by_hand=False, show=False)
check_fused_activation = checks.add("check_fused_activation", probe_elementwise, by_hand=True)
check_recompute = checks.add("check_recompute", probe_recompute, by_hand=False)
check_forward_kernel = triton.add("check_forward_kernel", probe_kernel, by_hand=False)
check_backward_kernel = triton.add("check_backward_kernel", probe_kernel, by_hand=False)
check_triton_function = checks.add("check_triton_function", probe_elementwise, by_hand=True, crash_hint=CRASH_HINT)
check_autocast_linear = checks.add("check_autocast_linear", probe_autocast_linear, by_hand=True)
check_bandwidth = checks.add("check_bandwidth", probe_bandwidth, by_hand=False, show=False)

__all__ = [*checks.names, "triton_mode", "CRASH_HINT"]
