"""Notebook 05's probes: the only code of its checks that runs in the grading sandbox."""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from coursetools.kernel_text import real_modules

from ..feedback import CheckFailed, not_written
from ..probes import launches, triton_kernels
from ..probes.apply import engine_agrees, function_apply
from ..probes.call import call_learner
from ..probes.function import probe_function
from ..probes.memory_watch import Spans, watching
from ..probes.triton_kernels import kernel_device, kernel_launcher
from ..registry import ProbeData
from .cases import (
    EPS,
    GUARD_VALUE,
    RECOMPUTE_PROBLEMS,
    SAVED_BYTES_PROBLEMS,
    elementwise_case,
    generator,
    kernel_case,
    linear_case,
    recompute_input,
    recompute_problem,
    saved_bytes_problem,
)

# as imported, before any learner code runs (replaced later, they are flagged, and do not answer for the probes)
_saved_tensors_hooks, _equal = torch.autograd.graph.saved_tensors_hooks, torch.equal


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


def ctx_tensors(node: Any) -> list[tuple[str, torch.Tensor]]:
    """The tensors forward kept as attributes of ctx (ctx.s = ..., also inside a list, tuple or dict, three levels
    deep), each with its attribute's name: memory kept for backward that saved-tensor hooks never see."""
    found: list[tuple[str, torch.Tensor]] = []

    def visit(name: str, value: Any, depth: int = 0) -> None:
        if isinstance(value, torch.Tensor):
            if value.device.type != "meta":
                found.append((name, value))
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
    return found


def attribute_tensors(node: Any, saved: list[dict]) -> list[dict]:
    """The storages of the tensors forward kept as attributes of ctx, other than the storages it saved: one record
    per storage."""
    seen = {s.get("ptr") for s in saved}
    out: dict[int, dict] = {}
    for name, tensor in ctx_tensors(node):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in seen:
            out.setdefault(storage.data_ptr(), {"attribute": name, "bytes": storage.nbytes()})
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
    """Forward on x (requiring grad), what forward saved, then backward with u: raw returns. triton: also the numbers
    of the course's kernels' launches forward and backward made, and the layouts of what they handed back."""
    x = x.detach().clone().requires_grad_(True)
    with launches.window() if triton else _nothing() as forward_window:
        out, saved = count_saved(lambda t: call_kernel(apply, t, name=f"{name}.forward"), x)
    result = {"output": _describe(out), "saved_storages": _plain(saved)}
    if triton:
        # the numbers of the launches each window made: the judge looks up in the launcher's log what they stored
        # (a tensor computed with PyTorch beside a launch, or written over after it, is not one of them)
        result["launch_ids"] = {"forward": forward_window.numbers, "backward": []}
        result["layouts"] = {"output": launches.layout(out)}
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
    backward_window = launches.Window()  # (the window below replaces it: this one answers for a window not opened)
    try:
        with launches.window() if triton else _nothing() as backward_window:
            raw = backward_of(node, u, name=f"{name}.backward")
    except CheckFailed as failure:
        result["backward_error"] = str(failure)
        return result
    finally:
        if triton:
            result["launch_ids"]["backward"] = backward_window.numbers
    if triton:
        first = raw[0] if isinstance(raw, (tuple, list)) and raw else raw
        result["layouts"]["grad"] = launches.layout(first)
        result["grad_output"] = _describe(kept)  # a kernel's gradient scaled by it with PyTorch is the kernel's
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

# Importing triton decides how its own library functions (tl.sigmoid) run, so the mode is set first (the grader's
# kernel setup imports this module before the notebook's first cell), by the notebook's own rule: the interpreter
# when there is no GPU.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

try:
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    _KERNEL_TYPES: tuple = (JITFunction, InterpretedFunction)
except ImportError:  # pragma: no cover - triton is pinned in requirements.txt
    _KERNEL_TYPES = ()

real_modules()  # Triton's modules as imported here, before any learner code: a kernel's record names them by identity


def record_kernel(kernel: Any, **params: Any) -> ProbeData:
    """The kernel checks' probe: the kernel's text (triton_kernels.record); the judges run it on `params`' cases."""
    return triton_kernels.record(kernel)


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
    For each (n, block, dtype): the written values, how many guard entries before and after the output were
    overwritten, whether the inputs changed, how many entries were read outside the inputs and the output (seen in
    the interpreter), and how many stores aimed outside every tensor handed (not performed).
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
            inputs = [x] if kind == "forward" else [x, g]
            with context(), watching([x_buf, g_buf, out_buf], reads=Spans.of([*inputs, out])) as seen:
                call_kernel(lambda *a, grid=grid, block=block: launcher[grid](*a, BLOCK_SIZE=block), *args, name=name)
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
                    "read_outside": seen["reads_outside"],
                    "written_far": seen["refused_writes"],
                }
            )
    return {"launches": data}


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
    with course_kernels(obj, SILU_KERNELS) if triton else _nothing() as replaced:
        data["course_kernels"] = replaced or []
        _probe_elementwise_cases(data, apply, seed, cases, triton, name, device)
    return data


@contextmanager
def course_kernels(obj: Any, names: Sequence[str]) -> Iterator[list[str]]:
    """While the Function is checked, the notebook's kernels `names` (silu_forward_kernel ...) in the modules of its
    forward and backward and in their closures are the course's (autograder/course_kernels.py); the learner's are
    put back after. A kernel is one of them by its name (the global's, or its function's) or, under another name, by
    the number of arguments it takes before its block sizes (each of the course's kernels takes a different number:
    a Function that launches a kernel it named otherwise is judged as if it launched the notebook's). Yields the
    names replaced."""
    from ..course_kernels import LAUNCHERS, STAND_INS

    stand_ins = {name: {**STAND_INS, **LAUNCHERS}[name] for name in names}
    slots: list[tuple[Any, Any]] = []  # (namespace or closure cell, key) that may hold a kernel
    for method in ("forward", "backward"):
        fn = inspect.getattr_static(obj, method, None)
        fn = getattr(fn, "__func__", fn)
        space = getattr(fn, "__globals__", None)
        if isinstance(space, dict) and not any(holder is space for holder, _ in slots):
            slots += [(space, key) for key in list(space) if isinstance(key, str)]
        slots += [(cell, None) for cell in getattr(fn, "__closure__", None) or ()]
    replaced: list[tuple[Any, Any, str, Any]] = []
    for holder, key in slots:
        try:
            learners = holder[key] if key is not None else holder.cell_contents
        except (KeyError, ValueError):  # gone, or a cell not filled yet
            continue
        stand_in = key if key in stand_ins else _stand_in_for(learners, stand_ins)
        if stand_in is None or any(h is holder and k == key for h, k, _, _ in replaced):
            continue
        replaced.append((holder, key, stand_in, learners))
        _put(holder, key, stand_ins[stand_in].in_place_of(learners))  # launched as the learner's kernel would be
    try:
        yield sorted({stand_in for _, _, stand_in, _ in replaced})
    finally:
        for holder, key, _, learners in reversed(replaced):
            _put(holder, key, learners)


def _put(holder: Any, key: str | None, value: Any) -> None:
    if key is None:
        holder.cell_contents = value
    else:
        holder[key] = value


SILU_KERNELS = ("silu_forward_kernel", "silu_backward_kernel")


def _stand_in_for(value: Any, stand_ins: dict) -> str | None:
    """The course's kernel that stands in for `value` when it is a Triton kernel: the one of its function's name,
    else the one that takes as many arguments before the block sizes (None: not a kernel, or no such one)."""
    if not isinstance(value, _KERNEL_TYPES):
        return None
    fn = getattr(value, "fn", None)
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str):
        return None
    if name in stand_ins:
        return name
    try:
        parameters = inspect.signature(fn).parameters.values()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    takes = sum(1 for p in parameters if not _constexpr(p.annotation))
    same = [key for key, stand_in in stand_ins.items() if stand_in.takes == takes]
    return same[0] if len(same) == 1 else None


def _constexpr(annotation: Any) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return isinstance(text, str) and text.rsplit(".", 1)[-1] == "constexpr"


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
