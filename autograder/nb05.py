"""Checks of notebook 05 (custom Functions on the GPU): the names its test cells import, and their probes.

Each probe runs inside the grading sandbox: it calls the learner's object on the cases its params name and
returns plain data (numbers, strings, lists, dicts, CPU tensors); nothing here knows a right answer. The judges
(below the judges line) regenerate the inputs, compute every reference and decide. Every check runs on a
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
from coursetools.gpu_compile import kernel_record, launch_signature

from .course_kernels import StandInKernel
from .feedback import CheckFailed, not_written
from .probes.apply import engine_agrees, function_apply
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


def saved_bytes_problem(name: str, seed: int = 0) -> tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]:
    """(fn, inputs) for a learner's saved_bytes(fn, *inputs). Seed 0: the cases the notebook shows (1 000 float32
    entries); any other seed (drawn from the grader's secret) draws the sizes and the dtype, so that no table of
    answers fits the hidden cases."""
    gen = torch.Generator().manual_seed(sum(map(ord, name)) + 7919 * seed)
    n, dtype, (m, k, p) = 1000, torch.float32, (64, 32, 16)
    if seed:
        n = int(torch.randint(50, 3000, (), generator=gen))
        dtype = (torch.float32, torch.float64)[int(torch.randint(0, 2, (), generator=gen))]
        m, k, p = (int(v) for v in torch.randint(4, 80, (3,), generator=gen))
    x = torch.randn(n, generator=gen, dtype=dtype, requires_grad=True)
    if name == "silu_composed":
        return (lambda x: x * torch.sigmoid(x)), (x,)
    if name == "gelu_composed":
        return composed_gelu, (x,)
    if name == "exp_twice":  # exp saves its output: two tensors
        return (lambda x: torch.exp(torch.exp(x))), (x,)
    if name == "square_by_product":  # x * x saves x twice: one storage
        return (lambda x: x * x), (x,)
    if name == "matmul":
        wide = torch.float64 if not seed else dtype
        A = torch.randn(m, k, generator=gen, dtype=wide, requires_grad=True)
        B = torch.randn(k, p, generator=gen, dtype=wide, requires_grad=True)
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
        # a launch counts when its memory is what the Function hands back: outputs computed with PyTorch beside a
        # launch (or written over after it) are not the kernels' work
        made = forward_launches["n"] if written_by_launch(forward_launches, out) else 0
        result["launches"] = {"forward": made, "backward": 0, "forward_any": forward_launches["n"]}
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
            result["launches"]["backward_any"] = backward_launches["n"]
    if triton:
        first = raw[0] if isinstance(raw, (tuple, list)) and raw else raw
        result["launches"]["backward"] = backward_launches["n"] if written_by_launch(backward_launches, first) else 0
    result["returns"] = _returns(raw)
    result["grad_output_modified"] = bool(u.device.type != "meta" and not _equal(u, kept))

    def again() -> tuple:
        fresh = x.detach().clone().requires_grad_(True)
        return call_kernel(apply, fresh, name=f"{name}.forward"), (fresh,)

    try:
        engine_agrees(again, kept, raw, name)
    except CheckFailed as failure:
        result["backward_error"] = str(failure)
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
            if kwargs.get("warmup"):
                return run(self, *args, **kwargs)
            counter["n"] += 1
            result = run(self, *args, **kwargs)
            for value in (*args, *kwargs.values()):  # what the launch left in each tensor it was handed
                if isinstance(value, torch.Tensor) and value.device.type != "meta":
                    storage = value.untyped_storage()
                    counter.setdefault("written", {})[storage.data_ptr()] = storage.clone()
            return result

        return launch

    before = [(cls, cls.__dict__.get("run")) for cls, _ in _LAUNCHERS]
    for cls, run in _LAUNCHERS:
        cls.run = counted(run)
    try:
        yield counter
    finally:
        for cls, old in before:
            cls.run = old


def _as_bytes(storage: Any) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)


def written_by_launch(counter: dict, tensor: Any) -> bool:
    """Whether `tensor` lies in memory a counted launch was handed, and holds exactly what that launch left there
    (a tensor computed with PyTorch, or overwritten after the launch, does not)."""
    if not isinstance(tensor, torch.Tensor) or tensor.device.type == "meta":
        return False
    storage = tensor.untyped_storage()
    snapshot = counter.get("written", {}).get(storage.data_ptr())
    return (
        snapshot is not None
        and snapshot.nbytes() == storage.nbytes()
        and _equal(_as_bytes(snapshot), _as_bytes(storage))
    )


def kernel_device() -> str:
    """Where tensors handed to the learner's Triton Function must live."""
    return "cpu" if triton_mode() == "interpreter" else "cuda"


def kernel_launcher(kernel: Any, name: str) -> tuple[Any, str, Callable[[], Any]]:
    """(launcher, device, context) for running the learner's kernel: compiled on the GPU where there is one and
    Triton runs compiled; else in the interpreter on the CPU, in a context where Triton's own @jit helpers
    (tl.sigmoid, tl.softmax ...) run as Python, which they do not when Triton was imported in compiled mode."""
    from triton.runtime.jit import JITFunction

    if type(kernel) is JITFunction and torch.cuda.is_available() and triton_mode() != "interpreter":
        return JITFunction(kernel.fn), "cuda", _nothing  # the probe's own wrapper of the learner's function
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
    # exactly what @triton.jit makes (a subclass could run anything), re-wrapped by the probe around the learner's
    # own Python function: what runs is that function, in Triton's interpreter
    if type(kernel) in (InterpretedFunction, JITFunction) and callable(getattr(kernel, "fn", None)):
        return InterpretedFunction(kernel.fn)
    raise CheckFailed(
        f"`{name}` should be a Triton kernel (a function decorated with @triton.jit, as Triton makes it), "
        f"but it is a {type(kernel).__name__}."
    )


def kernel_source(kernel: Any) -> dict:
    """The kernel's source as Triton's compiler reads it, with its helpers and globals, for the judge's compile
    for a GPU (which runs outside the sandbox). A kernel whose source cannot be read records none."""
    try:
        return kernel_record(kernel)
    except Exception:  # noqa: BLE001 - an unreadable kernel is reported by the compile part, not here
        name = getattr(getattr(kernel, "fn", None), "__name__", "kernel")
        return {"entry": name, "functions": {name: ""}, "globals": {}}


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
    output were overwritten, and whether the inputs changed; and the kernel's source (for the compile part).
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
    return {"launches": data, "kernel": kernel_source(kernel)}


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


def probe_saved_bytes(saved_bytes: Any, problems: Sequence[str] = SAVED_BYTES_PROBLEMS, seed: int = 0) -> ProbeData:
    data = []
    for problem in problems:
        fn, inputs = saved_bytes_problem(problem, seed)
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

# judges below the judges line. by_hand: the Function's backward is the learner's own formula (or kernel), so
# one handed to torch.autograd is flagged; Checkpoint's backward is autograd on the recomputed fn by design, and the
# rest are not Functions. show=False: the checks whose report is text only.
checks = NotebookChecks(__name__, show=show_verdict)
triton = NotebookChecks(__name__, show=show_verdict, crash_hint=CRASH_HINT, names=checks.names)
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


# ==== judges: decided outside the grading sandbox; the sandbox's copy of this module ends at this line ====
# Judges of notebook 05: they recompute every reference from the params and decide, outside the learner's process.
#
# References come from PyTorch's own operations and autograd (``F.silu``, ``F.gelu(approximate="tanh")``,
# ``weight[index]``, ``x @ W + b``) in float64 on the CPU; the byte counts of the composed expressions
# from saved-tensor hooks run here. No backward formula of the exercises is written in this module
# except where a hint recognises a known mistake.

import random

import torch.nn.functional as F

from .judges import kernel_compile
from .judges.answers import MISMATCH, entry, number, per_case, tensor
from .judges.function import FunctionReference, add_reference, draw_seed, judge_function
from .judges.verdict import Part, Verdict, verdict_of
from .registry import decides

# --------------------------------------------------------------------------------------------- drawers (hidden cases)
# draw_x(rng, N) -> params: the grader seeds rng from the gradebook's secret and the submission (CONTRIBUTING.md).


def draw_saved_bytes_problems(rng: random.Random, count: int) -> dict:
    names = list(SAVED_BYTES_PROBLEMS)
    rng.shuffle(names)
    return {"problems": (names * count)[:count], "seed": rng.randrange(1, 10**6)}


def draw_recompute_problems(rng: random.Random, count: int) -> dict:
    names = list(RECOMPUTE_PROBLEMS)
    rng.shuffle(names)
    return {"problems": (names * count)[:count], "seed": rng.randrange(1, 10**6)}


def draw_kernel_sizes(rng: random.Random, count: int) -> dict:
    """Sizes below, at and above a block, a single element, several programs with a ragged last block."""
    sizes = []
    for k in range(count):
        block = rng.choice((8, 16, 32, 64, 128))
        n = [1, block, rng.randint(2, block - 1), rng.randint(block + 1, 12 * block)][k % 4]
        sizes.append((n, block))
    return {"sizes": sizes, "seed": rng.randrange(1, 10**6)}


def draw_bandwidth_cases(rng: random.Random, count: int) -> dict:
    return {
        "cases": [
            (
                rng.choice((1, 3, 4096, 1 << 20, 1 << 24)),
                rng.choice((2, 4, 8)),
                rng.choice((1e-6, 3e-5, 2e-4, 1e-3, 1.0)),
                rng.choice(("forward", "backward")),
            )
            for _ in range(count)
        ]
    }


ATOL, RTOL = 1e-5, 1e-3  # gradcheck's tolerances
TITLES = {
    "forward": "forward agrees with the reference",
    "gradcheck": "backward agrees with the numerical derivative (central differences of your forward)",
    "reference": "backward agrees with the reference backward",
    "interface": "backward's interface (one gradient of x's shape and dtype; grad_output untouched; float32 stays "
    "float32)",
    "layout": "non-contiguous tensors (a strided input, a transposed grad_output)",
    "memory": "memory: forward saves exactly one tensor, of the input's shape",
    "device": "device-agnostic: output and gradient on the input's device (tried on the meta device) and in its dtype",
    "calls": "recomputation: fn runs once in forward and once in backward",
    "autocast": "under autocast (bfloat16): forward computes in float32",
    "autocast_backward": "under autocast: backward computes in float32 too",
}
COMPOSED = {"silu": lambda x: x * torch.sigmoid(x), "gelu_tanh": composed_gelu}
REFERENCE = {"silu": F.silu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh")}
NAMES = {"silu": "SiLU", "gelu_tanh": "tanh-GELU"}


# --------------------------------------------------------------------------------------------- helpers


def _reference_and_vjp(activation: str, x: torch.Tensor, u: torch.Tensor):
    x = x.detach().to(torch.float64).clone().requires_grad_(True)
    y = REFERENCE[activation](x)
    (g,) = torch.autograd.grad(y, x, u.to(torch.float64))
    return y.detach(), g


def composed_saved_bytes(activation: str, shape: Sequence[int], dtype: torch.dtype | None = torch.float64) -> int:
    """Bytes the composed PyTorch expression keeps for backward (each storage once), measured here."""
    storages: dict[int, int] = {}

    def pack(t):
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    x = torch.randn(shape, dtype=dtype, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        COMPOSED[activation](x)
    return sum(storages.values())


def _wrong_entries(got: torch.Tensor, want: torch.Tensor, rtol: float, atol: float) -> tuple[torch.Tensor, float]:
    err = (got - want).abs()
    bad = ~(err <= atol + rtol * want.abs())  # NaN counts as wrong
    return bad, float(err[bad].max()) if bad.any() and not err[bad].isnan().all() else float(
        "nan"
    ) if bad.any() else 0.0


def _index_list(bad: torch.Tensor, limit: int = 5) -> str:
    where = torch.nonzero(bad)
    shown = ["[" + ", ".join(map(str, idx)) + "]" for idx in where[:limit].tolist()]
    return ", ".join(shown) + (f" and {len(where) - limit} more" if len(where) > limit else "")


def _tensor_return(returns: list[dict], shape) -> tuple[torch.Tensor | None, str | None]:
    """The single gradient backward returned, or a description of what is wrong with it."""
    if len(returns) != 1 and not (len(returns) > 1 and all(r["kind"] == "none" for r in returns[1:])):
        return None, (
            f"backward returned {len(returns)} values; forward takes one tensor, so backward returns one gradient."
        )
    r = returns[0]
    if r["kind"] != "tensor":
        return (
            None,
            f"backward returned {'None' if r['kind'] == 'none' else 'a ' + r.get('type', '?')} instead of a tensor.",
        )
    if list(r["shape"]) != list(shape):
        return None, f"backward returned a gradient of shape {tuple(r['shape'])}; x has shape {tuple(shape)}."
    return r["value"], None


def _verdict(parts: dict[str, Part], points: float, title: str) -> Verdict:
    for p in parts.values():  # the report shows these titles (this notebook's gradcheck is central differences)
        p.title = p.title or TITLES.get(p.name)
    return verdict_of(list(parts.values()), points, title)


def _derivative_hints(activation: str, x: torch.Tensor, u: torch.Tensor, got: torch.Tensor) -> list[str]:
    """Known mistakes in the derivative of SiLU / tanh-GELU, recognised from the gradient returned."""
    x = x.to(torch.float64)
    _, want = _reference_and_vjp(activation, x, u)
    close = lambda a: a.shape == got.shape and torch.allclose(got, a, rtol=1e-6, atol=1e-9)  # noqa: E731
    hints = []
    if close(want / u):
        hints.append("backward returns the local derivative alone: multiply it by grad_output (the chain rule).")
    elif close(-want):
        hints.append("the gradient has the wrong sign.")
    elif activation == "silu" and close(u * torch.sigmoid(x)):
        hints.append("d/dx [x·σ(x)] has two terms (product rule): σ(x) + x·σ(x)·(1 − σ(x)).")
    elif activation == "silu" and close(u * torch.sigmoid(x) * (1 - torch.sigmoid(x))):
        hints.append("that is the derivative of σ(x) alone; SiLU is x·σ(x): use the product rule.")
    elif activation == "gelu_tanh":
        c = math.sqrt(2 / math.pi)
        t = torch.tanh(c * (x + 0.044715 * x**3))
        if close(u * 0.5 * (1 + t)):
            hints.append(
                "0.5·x·(1 + tanh(…)) is a product: its derivative also has the term 0.5·x·(1 − tanh²(…))·(…)'."
            )
        elif close(u * (0.5 * (1 + t) + 0.5 * x * (1 - t**2) * c * (1 + 0.044715 * x**2))):
            hints.append("the derivative of x + 0.044715·x³ is 1 + 3·0.044715·x²: the factor 3 is missing.")
    return hints


# --------------------------------------------------------------------------------------------- element-wise Functions


@decides("check_fused_activation", "check_triton_function", draw=draw_seed)
def judge_elementwise(
    data: ProbeData,
    activation: str = "silu",
    seed: int = 0,
    cases: int = 2,
    triton: bool = False,
    points: float = 1,
    name: str | None = None,
) -> Verdict:
    name = data.get("name") or name or "your Function"
    act = NAMES[activation]
    names = ["forward", "gradcheck", "reference", "interface", "layout", "memory"] + ([] if triton else ["device"])
    parts = {k: Part(k) for k in names}
    if len(data["cases"]) != cases:
        raise CheckFailed(f"{name}: the answer covers {len(data['cases'])} cases; {cases} were asked for.")
    if triton:
        _require_kernels(data, name)
    for case, got in enumerate(data["cases"]):
        inputs = elementwise_case(seed, case)
        x, u = inputs["x"], inputs["u"]
        where = f"(case {case + 1}, x of shape {tuple(x.shape)})"
        want_y, want_g = _reference_and_vjp(activation, x, u)
        if _judge_elementwise_forward(got["output"], x, want_y, activation, where, parts["forward"]):
            _judge_elementwise_backward(got, x, u, want_g, activation, where, parts)

    # A wrong forward or derivative is those parts' mistake: the layout part then judges only what layouts change
    # (errors, shapes), not values that are wrong for contiguous tensors as well.
    _judge_layouts(
        data,
        activation,
        seed,
        parts["layout"],
        triton,
        forward_wrong=parts["forward"].passed is False,
        contiguous_wrong=parts["reference"].passed is False,
    )
    _judge_float32(data.get("float32") or {}, parts["interface"])
    _judge_memory(
        data["cases"][0] if data["cases"] else {}, activation, elementwise_case(seed, 0)["x"], parts["memory"]
    )
    if not triton:
        _judge_meta(data.get("meta") or {}, parts["device"])
    stand_ins = [k for k in ("silu_backward_kernel", "silu_forward_kernel") if k in data.get("course_kernels", [])]
    ran = (
        f", run with the course's {' and '.join(stand_ins)} (your kernels have their own exercises)"
        if stand_ins
        else ""
    )
    return _verdict(parts, points, f"{name} ({act}{ran})")


def _judge_elementwise_forward(out: dict, x, want_y, activation: str, where: str, part: Part) -> bool:
    """Forward's output against the reference; False when there is no tensor to go on with."""
    if out["kind"] != "tensor":
        part.fail(f"forward returned {out.get('type', out['kind'])}, not a tensor {where}.")
        return False
    if list(out["shape"]) != list(x.shape):
        part.fail(f"forward returned shape {tuple(out['shape'])}; x has shape {tuple(x.shape)} {where}.")
        return True
    bad, err = _wrong_entries(out["value"], want_y, 1e-8, 1e-10)
    if out["dtype"] != "float64":
        part.fail(f"forward returned a {out['dtype']} tensor for a float64 x: make the output like x, with x's dtype.")
    elif bad.any():
        sigmoid_only = activation == "silu" and torch.allclose(out["value"], torch.sigmoid(x), rtol=1e-6, atol=1e-9)
        part.fail(
            f"{NAMES[activation]} forward is wrong in {int(bad.sum())} of {bad.numel()} entries {where}: "
            f"{_index_list(bad)}; largest error {err:.3g}.",
            "that is σ(x); SiLU is x·σ(x)." if sigmoid_only else None,
        )
    return True


def _judge_elementwise_backward(got: dict, x, u, want_g, activation: str, where: str, parts: dict[str, Part]) -> None:
    """Backward's gradient: its interface, against the central difference of the learner's own forward
    (gradcheck), and against the reference."""
    if "backward_error" in got:
        for key in ("gradcheck", "reference", "interface"):
            parts[key].fail(got["backward_error"])
        return
    if "returns" not in got:
        return
    grad, problem = _tensor_return(got["returns"], x.shape)
    if problem:
        for key in ("gradcheck", "reference", "interface"):
            parts[key].fail(problem + f" {where}")
        return
    if got["returns"][0]["dtype"] != "float64":
        parts["interface"].fail(f"backward returned a {got['returns'][0]['dtype']} gradient for a float64 x {where}.")
    if got.get("grad_output_modified"):
        parts["interface"].fail(
            f"backward changed grad_output in place {where}: autograd may pass the same tensor "
            "to other nodes; compute into a new tensor."
        )
    hints = _derivative_hints(activation, x, u, grad)
    plus, minus = got["plus"], got["minus"]
    # (a forward in another dtype is the forward part's mistake: its rounding would spoil the central difference)
    if (
        plus["kind"] == "tensor"
        and minus["kind"] == "tensor"
        and list(plus["shape"]) == list(x.shape)
        and plus.get("dtype", "float64") == "float64"
    ):
        numerical = u * (plus["value"] - minus["value"]) / (2 * EPS)
        bad, err = _wrong_entries(grad, numerical, RTOL, ATOL)
        if bad.any():
            parts["gradcheck"].fail(
                f"the gradient disagrees with the central difference of your forward in "
                f"{int(bad.sum())} of {bad.numel()} entries {where}: {_index_list(bad)}; "
                f"largest error {err:.3g}.",
                *hints,
            )
    bad, err = _wrong_entries(grad, want_g, 1e-7, 1e-9)
    if bad.any():
        parts["reference"].fail(
            f"the gradient disagrees with the reference backward in {int(bad.sum())} of "
            f"{bad.numel()} entries {where}: {_index_list(bad)}; largest error {err:.3g}.",
            *hints,
        )


def answers_mismatch(why: str) -> str:
    return MISMATCH.format(why=why)


def _require_kernels(data, name):
    """A Function that is to wrap Triton kernels launches one in forward and one in backward, in every run the
    probe made: computed with PyTorch operations instead, the exercise is not done (0 points)."""
    records = list(data["cases"]) + [data[k] for k in ("transposed_grad", "strided_both", "float32")]
    missing = []
    for record in records:
        launches = record.get("launches")
        if not isinstance(launches, dict) or not all(isinstance(launches.get(k), int) for k in ("forward", "backward")):
            raise CheckFailed(answers_mismatch(f"{name}'s data has no count of Triton launches"))
        if record.get("output", {}).get("kind") == "tensor" and launches["forward"] < 1:
            missing.append("forward")
        if "returns" in record and launches["backward"] < 1:
            missing.append("backward")
    if missing:
        which = " and ".join(dict.fromkeys(m for m in ("forward", "backward") if m in missing))
        raise CheckFailed(
            f"{name}'s {which} handed back no tensor a Triton kernel wrote: this exercise wraps your kernels in a "
            "Function, so the numbers must come from them, not from PyTorch operations.\nHint: forward launches the "
            "forward kernel on enough programs to cover x, writing into a new output tensor, and returns that "
            "tensor; backward launches the backward kernel, writing into a new gradient tensor, and returns it."
        )


def _judge_layouts(data, activation, seed, part, triton, forward_wrong=False, contiguous_wrong=False):
    inputs = elementwise_case(seed, 0)
    strided = inputs["wide"][:, ::2]
    fix = (
        "a kernel reads n_elements values in memory order and ignores strides: every tensor whose memory you hand "
        "to a kernel (x in forward, grad_output in backward) must be laid out contiguously first."
        if triton
        else "compute with torch operations on the tensors themselves (no .view() on a tensor whose memory is not "
        "in order, no reading of .data_ptr() / storage())."
    )
    out = data.get("strided_forward") or {}
    want, _ = _reference_and_vjp(activation, strided, torch.ones_like(strided))
    if out.get("kind") != "tensor" or list(out["shape"]) != list(strided.shape):
        part.fail(
            f"for a non-contiguous x (every other column of a {tuple(inputs['wide'].shape)} tensor) forward returned "
            f"{'shape ' + str(tuple(out['shape'])) if out.get('kind') == 'tensor' else 'no tensor'}.",
            fix,
        )
    elif not forward_wrong and not torch.allclose(out["value"], want, rtol=1e-8, atol=1e-10):
        bad, err = _wrong_entries(out["value"], want, 1e-8, 1e-10)
        part.fail(
            f"for a non-contiguous x (x = wide[:, ::2]) forward is wrong in {int(bad.sum())} of {bad.numel()} "
            f"entries: {_index_list(bad)}; largest error {err:.3g}.",
            fix,
        )
    for key, x, label in (
        ("transposed_grad", inputs["x2"], "a contiguous x and a transposed grad_output"),
        ("strided_both", strided, "a strided x and a transposed grad_output"),
    ):
        got = data.get(key) or {}
        u = inputs["u_transposed"].t()
        _, want_g = _reference_and_vjp(activation, x, u)
        if "backward_error" in got:
            part.fail(f"with {label}: {got['backward_error']}", fix)
            continue
        if "returns" not in got:
            part.fail(f"with {label} forward did not return a tensor connected to the graph.", fix)
            continue
        grad, problem = _tensor_return(got["returns"], x.shape)
        if problem:
            part.fail(f"with {label}: {problem}", fix)
        elif not contiguous_wrong and not torch.allclose(grad, want_g, rtol=1e-7, atol=1e-9):
            bad, err = _wrong_entries(grad, want_g, 1e-7, 1e-9)
            part.fail(
                f"with {label} the gradient is wrong in {int(bad.sum())} of {bad.numel()} entries: "
                f"{_index_list(bad)}; largest error {err:.3g}.",
                fix,
            )


def _judge_float32(got, part):
    if not got:
        return
    if "backward_error" in got:
        part.fail(f"with a float32 x: {got['backward_error']}")
        return
    out = got.get("output", {})
    if out.get("dtype") != "float32":
        part.fail(
            f"for a float32 x forward returned {out.get('dtype', 'no tensor')}: create outputs like x, "
            "with x's dtype, not with a fixed one."
        )
    returns = got.get("returns") or []
    if returns and returns[0].get("dtype") != "float32":
        part.fail(
            f"for a float32 x backward returned a {returns[0].get('dtype', returns[0]['kind'])} gradient: "
            "the gradient has its input's dtype."
        )


RECOMPUTED = {"silu": "σ(x)", "gelu_tanh": "tanh(√(2/π)(x + 0.044715x³))"}


def _judge_memory(got, activation, x, part):
    saved = got.get("saved_tensors")
    storages = got.get("saved_storages") or []
    shape = list(x.shape)
    if saved is None:
        return
    _judge_attributes(got, part)
    if len(saved) == 0:
        part.fail(
            "forward saved no tensor with ctx.save_for_backward.",
            "keep x with ctx.save_for_backward(x): a tensor kept as an attribute of ctx (ctx.x = x) escapes "
            "autograd's checks and its saved-tensor hooks, so its memory is invisible.",
        )
    elif len(saved) != 1 or saved[0] != shape:
        part.fail(
            f"forward saved {len(saved)} tensor(s) of shape(s) {', '.join(str(tuple(s)) for s in saved)}; "
            f"a fused {NAMES[activation]} saves one, x itself (shape {tuple(shape)}).",
            f"save only x: everything else backward needs ({RECOMPUTED[activation]}) is cheap to recompute from x, "
            "and every saved tensor stays in memory until backward.",
        )
    elif got.get("saved_is_input") != [True]:
        part.fail(
            "forward saved one tensor of x's shape, but not x: backward needs x, so x is what to save.",
            "a tensor kept as an attribute of ctx (ctx.x = x) is memory too, only invisible: save x itself "
            "with ctx.save_for_backward(x).",
        )
    # Bytes, not only tensors: a saved "x" that is a view into a larger buffer (x and σ(x) side by side) keeps the
    # whole buffer. Triton Functions too: they save x (its contiguous copy), nothing more.
    mine = sum(s["bytes"] for s in storages)
    composed = composed_saved_bytes(activation, tuple(shape))
    limit = {"silu": 0.5, "gelu_tanh": 0.25}[activation]
    if mine > limit * composed:
        hinted = bool(part.hints)  # the shape message above already says what to save
        part.fail(
            f"forward keeps {mine} bytes for backward (measured with saved-tensor hooks); the composed PyTorch "
            f"expression keeps {composed}, and the fused one should keep at most {limit:g} of that.",
            None if hinted else "save x only and recompute the rest in backward.",
        )


def _judge_attributes(got, part) -> int:
    """Fails `part` when forward kept tensors as attributes of ctx; returns their bytes."""
    kept = got.get("attribute_tensors") or []
    if kept:
        names = ", ".join(dict.fromkeys(f"ctx.{k['attribute']}" for k in kept))
        part.fail(
            f"forward keeps {sum(k['bytes'] for k in kept)} bytes for backward as attributes of ctx ({names}): "
            "memory all the same, only invisible to autograd's saved-tensor hooks and version checks.",
            "save tensors with ctx.save_for_backward(...) only, and recompute the rest in backward.",
        )
    return sum(k["bytes"] for k in kept)


def _judge_meta(got, part):
    fix = (
        "a new tensor takes the default device and dtype unless you say otherwise: make new tensors on the "
        "input's device and with its dtype."
    )
    if "error" in got:
        part.fail("on a tensor of another device (meta) your Function failed: " + got["error"].splitlines()[0], fix)
        return
    if "backward_error" in got:
        part.fail("on a tensor of another device (meta) backward failed: " + got["backward_error"].splitlines()[0], fix)
        return
    out = got.get("output", {})
    if out.get("device") != "meta":
        part.fail(f"for an x on the meta device forward returned a tensor on {out.get('device', 'no device')}.", fix)
    returns = got.get("returns") or []
    if returns and returns[0].get("device") != "meta":
        part.fail(f"for an x on the meta device backward returned a gradient on {returns[0].get('device')}.", fix)


# --------------------------------------------------------------------------------------------- Triton kernels


@decides("check_forward_kernel", "check_backward_kernel", draw=draw_kernel_sizes)
def judge_kernel(
    data: ProbeData,
    kind: str = "forward",
    sizes: Sequence[Any] = ((10, 16),),
    seed: int = 0,
    dtypes: Sequence[str] = ("float64", "float32"),
) -> None:
    expected_runs = [(n, block, dtype) for n, block in sizes for dtype in dtypes]
    launches, record = kernel_compile.split_answer(data)
    data = [
        entry(d, f"launch {i}", ("n", "block", "dtype", "values", "written_before", "written_after", "inputs_changed"))
        for i, d in enumerate(per_case(launches, expected_runs))
    ]
    if [(d["n"], d["block"], d["dtype"]) for d in data] != [tuple(r) for r in expected_runs]:
        raise CheckFailed("the kernel's results do not answer the launches the check asked for.")
    for i, (d, (n, _, _)) in enumerate(zip(data, expected_runs)):
        tensor(d["values"], f"launch {i}'s values", (n,))
    what = "silu_forward_kernel" if kind == "forward" else "silu_backward_kernel"
    for got in data:
        n, block, dtype = got["n"], got["block"], got["dtype"]
        launch = f"{what}[(cdiv({n}, {block}),)](…, n_elements={n}, BLOCK_SIZE={block}) on {dtype}"
        _judge_writes(got, launch)
        case = kernel_case(seed, n, dtype)
        x, g = case["x"].to(torch.float64), case["g"].to(torch.float64)
        want_y, want_g = _reference_and_vjp("silu", x, g)
        _judge_kernel_values(got, kind, x, g, want_y, want_g, launch)
    # right in the interpreter: the second idea, that the same kernel compiles for a GPU
    values = Part("values", title="the values, in every launch (Triton's interpreter)")
    compiles = kernel_compile.compile_part()
    pointers = 2 if kind == "forward" else 3
    kernel_compile.judge_compiles(
        compiles,
        record,
        [
            (
                f"{dtype} tensors, BLOCK_SIZE={block}",
                *launch_signature(record, [kernel_compile.pointer(dtype)] * pointers + ["i32"], {"BLOCK_SIZE": block}),
            )
            for block, dtype in dict.fromkeys((block, dtype) for _, block, dtype in expected_runs)
        ],
        others=[values],
    )
    return verdict_of([values, compiles], 1.0, what)


def _judge_writes(got, launch: str) -> None:
    """Where the kernel wrote: nothing outside the output (the guard zones), nothing into the inputs."""
    if got["written_after"]:
        raise CheckFailed(
            f"{launch} wrote {got['written_after']} value(s) past the end of the output tensor.\n"
            "Hint: likely an unmasked tl.store: the last block reaches past n_elements, and its programs "
            "must neither read nor write the entries beyond it. On a GPU this corrupts other tensors; in "
            "the interpreter it can crash Python."
        )
    if got["written_before"]:
        raise CheckFailed(
            f"{launch} wrote {got['written_before']} value(s) before the start of the output tensor.\n"
            "Hint: a program's offsets start at the beginning of its own block and only go up."
        )
    if got["inputs_changed"]:
        raise CheckFailed(f"{launch} wrote into one of its inputs: store into the output pointer only.")
    untouched = got["values"] == GUARD_VALUE
    if untouched.any():
        first = int(torch.nonzero(untouched)[0])
        raise CheckFailed(
            f"{launch} never wrote entries {_index_list(untouched)} of the output "
            f"(the first is {first}).\nHint: program p handles the block of entries that starts at p·BLOCK_SIZE: "
            "its offsets come from its program id and the block size."
        )


def _judge_kernel_values(got, kind: str, x, g, want_y, want_g, launch: str) -> None:
    n, block, dtype, values = got["n"], got["block"], got["dtype"], got["values"]
    want = want_y if kind == "forward" else want_g
    rtol, atol = (1e-9, 1e-12) if dtype == "float64" else (2e-5, 2e-6)
    bad, err = _wrong_entries(values, want, rtol, atol)
    if not bad.any():
        return
    hints = []
    if not bad[:block].any() and n > block:
        hints.append(
            "the first block is right and later ones are not: each program must work on its own block, its "
            "offsets computed from its program id."
        )
    close = lambda a: torch.allclose(values, a, rtol=1e-4, atol=1e-5)  # noqa: E731
    s = torch.sigmoid(x)
    if close(s):
        hints.append("that is σ(x); SiLU is x·σ(x).")
    elif kind == "backward" and close(want_g / g):
        hints.append("the local derivative alone: multiply it by grad_output, loaded from grad_out_ptr.")
    elif kind == "backward" and close(g * s):
        hints.append("d/dx [x·σ(x)] has two terms (product rule): σ(x) + x·σ(x)·(1 − σ(x)).")
    elif kind == "backward" and close(want_y):
        hints.append("that is the forward value: backward stores the gradient, grad_output·SiLU'(x).")
    if dtype == "float64" and torch.allclose(values, want, rtol=1e-5, atol=1e-6):
        hints.append(
            "right to about 6 digits only: a float64 input was computed in float32. Only the lower precisions "
            "are computed in float32; float64 stays float64."
        )
    raise CheckFailed(
        f"{launch} is wrong in {int(bad.sum())} of {n} entries: {_index_list(bad)}; largest error "
        f"{err:.3g}." + "".join(f"\nHint: {h}" for h in hints)
    )


# --------------------------------------------------------------------------------------------- GatherRows


@decides("check_gather_rows", draw=draw_seed)
def judge_gather(
    data: ProbeData, seed: int = 0, cases: int = 2, points: float = 1, double_backward: bool = False
) -> Verdict:
    try:
        base = judge_function(
            data["function"],
            reference="gather_rows",
            seed=seed,
            cases=cases,
            points=points,
            double_backward=double_backward,
            cuda=False,
        )
    except CheckFailed as failure:
        base = getattr(failure, "verdict", None)
        if base is None:
            raise
    parts = {p.name: p for p in base.parts}
    device = Part("device")
    fix = (
        "the gradient belongs to the weight: make it on the weight's device, with its dtype, whatever the default "
        "device and dtype are."
    )
    for label, got in data["devices"].items():
        want_device, want_dtype = ("meta", "float32") if label == "meta" else ("cpu", "bfloat16")
        if "error" in got:
            device.fail(f"with a {label} weight your Function failed: {got['error'].splitlines()[0]}", fix)
            continue
        out = got["output"]
        if out.get("device") != want_device or out.get("dtype") != want_dtype:
            device.fail(
                f"for a {label} weight forward returned a {out.get('dtype')} tensor on {out.get('device')}.", fix
            )
        returns = got.get("returns") or []
        if not returns or returns[0].get("kind") != "tensor":
            device.fail(f"for a {label} weight backward returned no gradient for the weight.", fix)
        elif returns[0]["device"] != want_device or returns[0]["dtype"] != want_dtype:
            device.fail(
                f"for a {label} weight the gradient is a {returns[0]['dtype']} tensor on {returns[0]['device']}.", fix
            )
    parts["device"] = device
    # A lost contribution of a repeated index is the classic mistake: name it.
    for p in (parts.get("gradcheck"), parts.get("reference")):
        if (
            p is not None
            and p.passed is False
            and data["function"]["cases"]
            and not any("raised" in m for m in p.messages)
        ):  # wrong numbers, not an error
            p.hints.append(
                "an index that appears twice must collect both contributions: an indexed assignment keeps only "
                "one of them; the gradient rows must be added up."
            )
            break
    return _verdict(parts, points, base.title)


def gather_reference(weight: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    return weight[index]


add_reference(FunctionReference(name="gather_rows", reference=gather_reference))


# --------------------------------------------------------------------------------------------- Checkpoint


@decides("check_recompute", draw=draw_recompute_problems)
def judge_recompute(
    data: ProbeData,
    problems: Sequence[str] = ("gelu_chain", "sin_exp", "mlp"),
    seed: int = 0,
    points: float = 1,
    name: str = "Checkpoint",
) -> Verdict:
    if [d["problem"] for d in data] != list(problems):
        raise CheckFailed("the answer does not cover exactly the functions the check asked for.")
    parts = {k: Part(k) for k in ("forward", "reference", "interface", "memory", "calls")}
    for got in data:
        problem = got["problem"]
        x = recompute_input(problem, seed).requires_grad_(True)
        want = recompute_problem(problem)(x)
        where = f"(fn = '{problem}', x of shape {tuple(x.shape)})"
        out = got["output"]
        if out["kind"] != "tensor" or list(out["shape"]) != list(want.shape):
            parts["forward"].fail(f"forward should return fn(x), a tensor of shape {tuple(want.shape)} {where}.")
            continue
        if not torch.allclose(out["value"], want.detach(), rtol=1e-10, atol=1e-12):
            parts["forward"].fail(f"forward's output is not fn(x) {where}.")
        if not got["requires_grad"]:
            parts["interface"].fail(f"the output does not require grad {where}: return the result of apply.")
        if "backward_error" in got:
            hint = (
                "backward runs with recording off, like forward: recomputing fn there records nothing for autograd "
                "to differentiate unless recording is switched back on for it."
                if "does not require grad" in got["backward_error"]
                else None
            )
            for key in ("reference", "interface"):
                parts[key].fail(got["backward_error"], hint)
            continue
        if got.get("returns") is None:
            parts["reference"].fail(f"no gradient came back {where}.")
            continue
        u = torch.randn(want.shape, generator=_recompute_generator(seed, problem), dtype=torch.float64)
        (want_g,) = torch.autograd.grad(want, x, u)
        _judge_recompute_gradient(got["returns"], want_g, x, where, parts)
        _judge_recompute_memory(got, x, where, parts)
    return _verdict(parts, points, f"{name}.apply(fn, x)")


def _judge_recompute_gradient(returns: list, want_g, x, where: str, parts: dict[str, Part]) -> None:
    if len(returns) != 2 or returns[0]["kind"] != "none":
        parts["interface"].fail(
            f"backward returned {len(returns)} value(s) starting with "
            f"{returns[0].get('type', returns[0]['kind'])}; forward takes (fn, x), so backward "
            "returns (None, grad_x): None for the function."
        )
    grad = returns[1] if len(returns) > 1 else returns[0]
    if grad["kind"] != "tensor" or list(grad["shape"]) != list(x.shape):
        parts["reference"].fail(f"the gradient for x is not a tensor of x's shape {where}.")
    elif not torch.allclose(grad["value"], want_g, rtol=1e-8, atol=1e-10):
        bad, err = _wrong_entries(grad["value"], want_g, 1e-8, 1e-10)
        hint = None
        if torch.count_nonzero(grad["value"]) == 0:
            hint = (
                "the gradient is all zeros: the recomputation recorded no graph from x; it needs its own copy of x "
                "that requires grad, with recording on."
            )
        parts["reference"].fail(
            f"the gradient for x is wrong in {int(bad.sum())} of {bad.numel()} entries {where}; "
            f"largest error {err:.3g}.",
            hint,
        )


def _judge_recompute_memory(got: dict, x, where: str, parts: dict[str, Part]) -> None:
    """What forward kept (x only, not fn's intermediates), and how often fn ran (once in each pass)."""
    storages = got["saved_storages"]
    x_bytes = x.numel() * x.element_size()
    kept = sum(s["bytes"] for s in storages)
    stored_graph = kept > x_bytes
    if stored_graph:
        parts["memory"].fail(
            f"forward keeps {kept} bytes for backward {where}; x alone is {x_bytes}: fn's intermediates were stored.",
            "run fn in forward without recording a graph (forward already runs with recording off: do not switch "
            "it back on) and save x only.",
        )
    elif not storages:
        parts["memory"].fail(
            f"forward saved nothing with ctx.save_for_backward {where}.",
            "backward needs x to recompute fn: save it for backward (fn itself is not a tensor and can stay on ctx).",
        )
    _judge_attributes(got, parts["memory"])
    # A forward that recorded fn's graph needs no recomputation: that is the memory part's mistake, not another.
    backward_calls_wrong = got.get("backward_calls") != 1 and not (stored_graph and got.get("backward_calls") == 0)
    if got["forward_calls"] != 1 or backward_calls_wrong:
        parts["calls"].fail(
            f"fn ran {got['forward_calls']} time(s) in forward and {got.get('backward_calls', 0)} "
            f"in backward {where}; recomputing means once each."
        )


def _recompute_generator(seed, problem):
    return generator(seed, len(problem), salt=17)


# --------------------------------------------------------------------------------------------- autocast


@decides("check_autocast_linear", draw=draw_seed)
def judge_autocast_linear(
    data: ProbeData, seed: int = 0, cases: int = 2, points: float = 1, name: str = "Linear32"
) -> Verdict:
    if len(data["cases"]) != cases:
        raise CheckFailed(f"the answer covers {len(data['cases'])} cases; {cases} were asked for.")
    parts = {k: Part(k) for k in ("forward", "reference", "autocast", "autocast_backward")}
    for case, got in enumerate(data["cases"]):
        c = linear_case(seed, case)
        where = f"(case {case + 1}, x {tuple(c['x'].shape)}, W {tuple(c['W'].shape)})"
        _judge_linear32_float64(got["float64"], c, where, parts)
        _judge_linear32_autocast(got["autocast"], c, where, parts)
    return _verdict(parts, points, f"{name}.apply(x, W, b)")


def _judge_linear32_float64(f64: dict, c: dict, where: str, parts: dict[str, Part]) -> None:
    """Without autocast, in float64: the output and the three gradients, in float64 and right."""
    x, W, b = (c[k].clone().requires_grad_(True) for k in ("x", "W", "b"))
    want = x @ W + b
    want_grads = torch.autograd.grad(want, (x, W, b), c["u"])
    out = f64["output"]
    # forward that converts its inputs itself (x.float()) turns float64 into float32 even without autocast
    own_cast = (
        "without autocast, Linear32 computes in its inputs' own dtype: converting them to float32 is "
        "autocast's business, done for forward only while autocast is on (what forward's decorator arranges)."
    )
    if (
        out["kind"] != "tensor"
        or list(out["shape"]) != list(want.shape)
        or not torch.allclose(out["value"], want.detach(), rtol=1e-9, atol=1e-10)
    ):
        parts["forward"].fail(
            f"in float64 without autocast, forward is not x @ W + b {where}"
            + (f": it returned {out['dtype']}." if out.get("dtype") not in (None, "float64") else "."),
            own_cast if out.get("dtype") == "float32" else None,
        )
    if f64.get("backward_error"):
        error = f64["backward_error"]
        demoted = out.get("dtype") == "float32"  # forward's own cast: backward then meets float32 and float64
        parts["reference"].fail(
            f"in float64 without autocast, backward raised {error} {where}.",
            own_cast if demoted or "dtype" in error or "!=" in error else None,
            same_mistake_as="forward" if demoted else None,
        )
    returns = f64.get("returns") or []
    for i, label in enumerate(() if f64.get("backward_error") else ("x", "W", "b")):
        r = returns[i] if i < len(returns) else {"kind": "missing"}
        if (
            r["kind"] != "tensor"
            or list(r["shape"]) != list(want_grads[i].shape)
            or not torch.allclose(r["value"], want_grads[i], rtol=1e-8, atol=1e-10)
        ):
            hint = (
                "the bias is added to every row: its gradient sums grad_output over the batch."
                if label == "b" and r["kind"] == "tensor" and list(r["shape"]) == list(c["u"].shape)
                else None
            )
            parts["reference"].fail(f"in float64 the gradient for {label} is wrong or missing {where}.", hint)


def _judge_linear32_autocast(auto: dict, c: dict, where: str, parts: dict[str, Part]) -> None:
    """Under autocast(bfloat16): forward computed in float32 from the values autocast was given, and backward
    under the autocast state forward had."""
    # Under autocast: compare with float64 products of the values autocast was given.
    xa, Wa, ba = (
        c["x"].to(torch.bfloat16).to(torch.float64).requires_grad_(True),
        c["W"].to(torch.float32).to(torch.float64).requires_grad_(True),
        c["b"].to(torch.float32).to(torch.float64).requires_grad_(True),
    )
    want_a = xa @ Wa + ba
    out = auto["output"]
    if out["kind"] != "tensor":
        parts["autocast"].fail(f"under autocast forward returned no tensor {where}.")
        return
    rel = float((out["value"] - want_a.detach()).abs().max() / want_a.detach().abs().max())
    if out["dtype"] != "float32" or rel > 1e-4:
        parts["autocast"].fail(
            f"under autocast(bfloat16) forward returned a {out['dtype']} tensor with relative error "
            f"{rel:.2g} {where}; computed in float32 it would be about 1e-7.",
            "autocast is still on inside forward, so the product is computed in bfloat16 whatever the inputs' "
            "dtype: forward must run with autocast off and its inputs in float32 (torch.amp has a decorator for "
            "forward that arranges both).",
        )
    u = c["u"].to(torch.float32 if out["dtype"] == "float32" else torch.bfloat16).to(torch.float64)
    want_ag = torch.autograd.grad(want_a, (xa, Wa, ba), u)
    returns = auto.get("returns") or []
    for i, label in enumerate(("x", "W", "b")):
        r = returns[i] if i < len(returns) else {"kind": "missing"}
        if r["kind"] != "tensor" or list(r["shape"]) != list(want_ag[i].shape):
            parts["autocast_backward"].fail(f"under autocast backward returned no gradient of {label}'s shape {where}.")
            continue
        rel = float((r["value"] - want_ag[i]).abs().max() / want_ag[i].abs().max().clamp_min(1e-30))
        if rel > 1e-4:
            parts["autocast_backward"].fail(
                f"under autocast the gradient for {label} has relative error {rel:.2g} {where}: it was computed in "
                "bfloat16.",
                "backward runs under whatever autocast state surrounds the .backward() call: it must run with "
                "the state forward had (torch.amp has a decorator for backward too).",
            )
            break


# --------------------------------------------------------------------------------------------- saved_bytes, bandwidth


def reference_saved_bytes(problem: str, seed: int = 0) -> tuple[int, int, int]:
    """(bytes counting each storage once, bytes counting every save, number of saves) for a problem."""
    fn, inputs = saved_bytes_problem(problem, seed)
    saves: list[tuple[int, int]] = []

    def pack(t):
        saves.append((t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*inputs)
    return sum(dict(saves).values()), sum(b for _, b in saves), len(saves)


@decides("check_saved_bytes", draw=draw_saved_bytes_problems)
def judge_saved_bytes(data: ProbeData, problems: Sequence[str] = (), seed: int = 0) -> None:
    data = [number(v, f"the answer for '{p}'") for v, p in zip(per_case(data, problems), problems)]
    for problem, got in zip(problems, data):
        want, every_save, saves = reference_saved_bytes(problem, seed)
        if got == want:
            continue
        call = f"saved_bytes(fn, *inputs) for the test function '{problem}'"
        hints = []
        if got == every_save:
            hints.append(
                "the same tensor can be saved more than once (x * x saves x for both factors; σ(x) is saved by "
                "sigmoid and by the product): count each storage once, e.g. by t.untyped_storage().data_ptr()."
            )
        elif got == saves:
            hints.append("that is the number of saved tensors; return their size in bytes (numel × element_size).")
        elif want and got * 4 == want * 2 and problem == "half_precision":
            hints.append("a bfloat16 tensor takes 2 bytes per entry: use t.element_size(), not 4.")
        elif problem == "no_grad_needed":
            hints.append(
                "when no input requires grad nothing is recorded and nothing is saved: measure what the pack "
                "hook of torch.autograd.graph.saved_tensors_hooks receives, not the inputs or outputs."
            )
        elif want and got * 8 == want and problem != "matmul":
            hints.append("count bytes, not bits.")
        raise CheckFailed(
            f"{call} returned {got:g}, which is too {'many' if got > want else 'few'} bytes."
            + "".join(f"\nHint: {h}" for h in hints)
        )
    return None


@decides("check_bandwidth", draw=draw_bandwidth_cases)
def judge_bandwidth(data: ProbeData, cases: Sequence[Any] = ()) -> None:
    data = [number(v, f"answer {i}") for i, v in enumerate(per_case(data, cases))]
    for (n, size, seconds, direction), got in zip(cases, data):
        moved = {"forward": 2, "backward": 3}[direction] * n * size
        want = moved / seconds / 1e9
        if math.isclose(got, want, rel_tol=1e-9):
            continue
        call = f"effective_bandwidth({n}, {size}, {seconds:g}, '{direction}')"
        hints = []
        if math.isclose(got * 2**30, want * 1e9, rel_tol=1e-9):
            hints.append("a GB here is 10⁹ bytes (as GPU data sheets count), not 2³⁰.")
        elif math.isclose(got, want * (3 / 2 if direction == "forward" else 2 / 3), rel_tol=1e-9):
            hints.append(
                "forward reads x and writes y (2·N·bytes); backward reads x and grad_output and writes grad_x "
                "(3·N·bytes)."
            )
        elif math.isclose(got * size, want, rel_tol=1e-9):
            hints.append("multiply the number of elements by the bytes per element.")
        elif math.isclose(got * want, (moved / 1e9) ** 2 / seconds * seconds, rel_tol=1e-6) or math.isclose(
            got, seconds / (moved / 1e9), rel_tol=1e-9
        ):
            hints.append("bandwidth is bytes per second: divide the bytes by the seconds.")
        raise CheckFailed(
            f"{call} returned {got:.4g} GB/s, which is too {'high' if got > want else 'low'}."
            + "".join(f"\nHint: {h}" for h in hints)
        )
    return None
