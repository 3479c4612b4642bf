"""Checks of notebook 06 (the capstone: a fused cross-entropy in Triton): the names its test cells import, and their
probes.

A kernel probe launches the learner's kernel as notebook 05's do (compiled on a GPU, else in Triton's interpreter)
on logits laid out in rows of stride V + BLOCK_V whose spare columns hold NaN: a kernel that reads past its row's end (a
missing or wrong mask on the last chunk) gets NaN into its sum. Its output sits between guard zones. The judges
(below the judges line) recompute every reference in float64 and decide, part by part. The Function
probes count the learner's Triton launches (notebook 05's counting_launches), record what forward saved, and, for
the linear cross-entropy, the largest block of memory PyTorch allocated. The Function probes run the learner's
Function with the course's stand-in kernels bound to the names `ce_forward_kernel` and `ce_backward_kernel`
(:mod:`autograder.course_kernels`, as notebook 05's TritonSiLU): a kernel mistake costs its kernel's exercise only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from .feedback import CheckFailed
from .nb05 import (
    GUARD_VALUE,
    attribute_tensors,
    backward_of,
    call_kernel,
    counting_launches,
    course_kernels,
    function_apply,
    kernel_device,
    kernel_launcher,
    kernel_source,
    written_by_launch,
)
from .probes.apply import engine_agrees
from .probes.call import call_learner
from .registry import NotebookChecks, ProbeData, show_verdict

# as imported, before any learner code runs (replaced later, they are flagged, and do not answer for the probe)
_saved_tensors_hooks, _no_grad = torch.autograd.graph.saved_tensors_hooks, torch.no_grad

GUARD = 16  # guard entries before and after an output


# how far a peak in a later chunk stands above the first chunk: exp of the gap overflows the dtype, so a maximum
# never updated after the first chunk (its exp(x - m) of the peak) cannot give a finite answer
LATE_PEAK_GAP = {"float64": 800.0, "float32": 100.0, "bfloat16": 100.0, "float16": 100.0}


def row_case(seed: int, rows: int, V: int, dtype: str, peak_at: int, chunk: int | None = None) -> torch.Tensor:
    """Logits whose every row peaks at column peak_at, one above the row's other values (so where the maximum is
    decides whether a running sum must be rescaled, and every entry still counts in the sum); in float32, a peak of
    100 in the first row, whose exp overflows float32. With `chunk`, a peak past the first chunk stands
    LATE_PEAK_GAP above it."""
    gen = torch.Generator().manual_seed(1_000_003 * seed + 1009 * rows + 31 * V + peak_at)
    x = 3 * torch.randn(rows, V, generator=gen, dtype=torch.float64)
    x[:, peak_at] = x.max(dim=1).values + 1.0
    if chunk is not None and peak_at >= chunk:
        x[:, peak_at] = x[:, :chunk].max(dim=1).values + LATE_PEAK_GAP[dtype]
    if dtype != "float64":
        x[0, peak_at] = max(100.0, float(x[0, peak_at]))
    return x.to(getattr(torch, dtype))


LEAD = 1  # guard rows before the first row: a read at a negative offset lands in memory the probe owns
SECOND_FILL = 2.0  # the guard memory's value in a kernel's second run (NaN in its first)


def padded_rows(
    x: torch.Tensor, device: str, block: int, fill: float = float("nan")
) -> tuple[torch.Tensor, torch.Tensor]:
    """(buffer, view): the rows of x in a buffer of row stride V + block whose other entries hold `fill`, with a
    guard row before them and V + 1 spare rows after them, so that a kernel reading or writing before a row, past a
    row's end, or along the wrong axis, stays in memory the probe owns (and, for NaN, poisons what it computes)."""
    rows, V = x.shape
    buffer = torch.full((LEAD + rows + V + 1, V + block), fill, dtype=x.dtype, device=device)
    buffer[LEAD : LEAD + rows, :V] = x
    return buffer, buffer[LEAD : LEAD + rows]


def guarded_vector(values: torch.Tensor, fill: float) -> torch.Tensor:
    """values (targets, log-sum-exps) in the middle of a buffer whose GUARD entries on each side hold `fill` (for
    integer targets: -1 in a kernel's first run, 0 in its second)."""
    if not values.is_floating_point():
        fill = -1 if fill != fill else 0  # (NaN, the first run's fill, is not an integer)
    buffer = torch.full((values.numel() + 2 * GUARD,), fill, dtype=values.dtype, device=values.device)
    buffer[GUARD : GUARD + values.numel()] = values
    return buffer[GUARD : GUARD + values.numel()]


def twice(run: Callable[[float], dict], keys: Sequence[str]) -> dict:
    """The first run's results (guard memory holding NaN), with "read_outside": whether a second run, its guard
    memory holding another value, gave other results in `keys`: then the kernel read memory that is not its
    tensors' (a load without the mask it needs, or at the wrong offset), whatever it did with what it read."""
    first, second = run(float("nan")), run(SECOND_FILL)
    first["read_outside"] = any(
        not torch.equal(first[k].nan_to_num(7.0, 7.0, 7.0), second[k].nan_to_num(7.0, 7.0, 7.0)) for k in keys
    )
    return first


def probe_row_lse(kernel: Any, cases: Sequence[Any], seed: int = 0, points: float | None = None) -> ProbeData:
    """kernel[(rows,)](logits_ptr, lse_ptr, row_stride, V, BLOCK_V=block) for each (rows, V, block, dtype, peak_at):
    the values written, how many guard entries were overwritten, whether the logits changed."""
    name = getattr(kernel, "__name__", None) or getattr(getattr(kernel, "fn", None), "__name__", "row_lse_kernel")
    launcher, device, context = kernel_launcher(kernel, name)
    data = []
    for rows, V, block, dtype, peak_at in cases:
        x = row_case(seed, rows, V, dtype, peak_at, block)

        def run(fill: float, x: torch.Tensor = x, rows: int = rows, V: int = V, block: int = block) -> dict:
            whole, logits = padded_rows(x, device, block, fill)
            before = whole.clone()
            out_buf = torch.full((rows + 2 * GUARD,), GUARD_VALUE, dtype=x.dtype, device=device)
            out = out_buf[GUARD : GUARD + rows]
            with context():
                call_kernel(
                    lambda *a: launcher[(rows,)](*a, BLOCK_V=block), logits, out, logits.stride(0), V, name=name
                )
            outside = (out_buf[:GUARD] != GUARD_VALUE).sum() + (out_buf[GUARD + rows :] != GUARD_VALUE).sum()
            return {
                "values": out.to(torch.float64).cpu().clone(),
                "written_outside": int(outside),
                "inputs_changed": not torch.equal(whole.nan_to_num(7.0), before.nan_to_num(7.0)),
            }

        data.append(twice(run, ("values",)))
    return {"launches": data, "kernel": kernel_source(kernel)}


def ce_targets(seed: int, rows: int, V: int, ignored: int, ignore_index: int) -> torch.Tensor:
    """Targets of the rows (int64); `ignored` rows, anywhere in the batch, carry ignore_index (not only the last
    ones: a kernel that reads the row before or after its own must meet an ignored row's neighbours)."""
    gen = torch.Generator().manual_seed(7919 * seed + 13 * rows + V)
    target = torch.randint(0, V, (rows,), generator=gen)
    if ignored:
        target[torch.randperm(rows, generator=gen)[:ignored]] = ignore_index
    return target


def probe_ce_forward(
    kernel: Any, cases: Sequence[Any], seed: int = 0, ignore_index: int = -100, points: float | None = None
) -> ProbeData:
    """kernel[(rows,)](logits_ptr, target_ptr, loss_ptr, lse_ptr, row_stride, V, ignore_index, BLOCK_V=block) for
    each (rows, V, block, dtype, ignored): the per-row losses and log-sum-exps written, guards, inputs."""
    name = getattr(kernel, "__name__", None) or getattr(getattr(kernel, "fn", None), "__name__", "forward kernel")
    launcher, device, context = kernel_launcher(kernel, name)
    data = []
    for rows, V, block, dtype, ignored in cases:
        x = row_case(seed, rows, V, dtype, 0)
        target = ce_targets(seed, rows, V, ignored, ignore_index).to(device)

        def run(fill: float, x=x, target=target, rows: int = rows, V: int = V, block: int = block) -> dict:
            whole, logits = padded_rows(x, device, block, fill)
            target = guarded_vector(target, fill)
            before, target_before = whole.clone(), target.clone()
            outputs = {}
            for key in ("loss", "lse"):
                buffer = torch.full((rows + 2 * GUARD,), GUARD_VALUE, dtype=x.dtype, device=device)
                outputs[key] = (buffer, buffer[GUARD : GUARD + rows])
            with context():
                call_kernel(
                    lambda *a: launcher[(rows,)](*a, BLOCK_V=block),
                    logits,
                    target,
                    outputs["loss"][1],
                    outputs["lse"][1],
                    logits.stride(0),
                    V,
                    ignore_index,
                    name=name,
                )
            outside = sum(
                int((b[:GUARD] != GUARD_VALUE).sum() + (b[GUARD + rows :] != GUARD_VALUE).sum())
                for b, _ in outputs.values()
            )
            return {
                "loss": outputs["loss"][1].to(torch.float64).cpu().clone(),
                "lse": outputs["lse"][1].to(torch.float64).cpu().clone(),
                "written_outside": outside,
                "inputs_changed": not (
                    torch.equal(whole.nan_to_num(7.0), before.nan_to_num(7.0)) and torch.equal(target, target_before)
                ),
            }

        data.append(twice(run, ("loss", "lse")))
    return {"launches": data, "kernel": kernel_source(kernel)}


def probe_ce_backward(
    kernel: Any,
    cases: Sequence[Any],
    seed: int = 0,
    ignore_index: int = -100,
    scale: float = 0.25,
    points: float | None = None,
) -> ProbeData:
    """kernel[(rows,)](logits_ptr, target_ptr, lse_ptr, grad_ptr, row_stride, V, ignore_index, scale,
    BLOCK_V=block) for each (rows, V, block, dtype, ignored, lse_shift): the gradient rows written (the grad buffer
    has the logits' layout, its padding columns hold the guard value: a store past V is seen), the padding's state,
    whether the inputs changed. lse is handed in as the rows' log-sum-exp plus lse_shift: a kernel that uses the
    saved value, as it should, follows the shift."""
    name = getattr(kernel, "__name__", None) or getattr(getattr(kernel, "fn", None), "__name__", "backward kernel")
    launcher, device, context = kernel_launcher(kernel, name)
    data = []
    for rows, V, block, dtype, ignored, lse_shift in cases:
        x = row_case(seed, rows, V, dtype, 0)
        target = ce_targets(seed, rows, V, ignored, ignore_index).to(device)
        lse = (torch.logsumexp(x.to(torch.float64), dim=1) + lse_shift).to(x.dtype).to(device)

        def run(fill: float, x=x, target=target, lse=lse, rows: int = rows, V: int = V, block: int = block) -> dict:
            whole, logits = padded_rows(x, device, block, fill)
            target, lse = guarded_vector(target, fill), guarded_vector(lse, fill)
            grad_whole, grad = padded_rows(torch.full_like(x, GUARD_VALUE), device, block, fill=GUARD_VALUE)
            inputs_before = (whole.clone(), target.clone(), lse.clone())
            with context():
                call_kernel(
                    lambda *a: launcher[(rows,)](*a, BLOCK_V=block),
                    logits,
                    target,
                    lse,
                    grad,
                    logits.stride(0),
                    V,
                    ignore_index,
                    scale,
                    name=name,
                )
            after = (whole, target, lse)
            written = grad_whole != GUARD_VALUE
            return {
                "grad": grad[:, :V].to(torch.float64).cpu().clone(),
                "written_past_V": int(written.sum() - written[LEAD : LEAD + rows, :V].sum()),
                "inputs_changed": not all(
                    torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0)) for a, b in zip(after, inputs_before)
                ),
            }

        data.append(twice(run, ("grad",)))
    return {"launches": data, "kernel": kernel_source(kernel)}


# --------------------------------------------------------------- log-sum-exp by hand, then chunk by chunk


def _learner_tensor(value: Any, name: str, shape: tuple) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise CheckFailed(
            f"`{name}` should return a tensor with one value per row; it returned a {type(value).__name__}."
        )
    if tuple(value.shape) != shape:
        raise CheckFailed(
            f"`{name}` should return one value per row, shape {shape}; it returned shape {tuple(value.shape)}."
        )
    return value.detach().to(torch.float64).cpu().clone()


def probe_logsumexp(
    logsumexp_stable: Any, cases: Sequence[Any], seed: int = 0, points: float | None = None
) -> ProbeData:
    """logsumexp_stable(x) for each (rows, V, dtype, peak_at): one value per row."""
    data = []
    for rows, V, dtype, peak_at in cases:
        x = row_case(seed, rows, V, dtype, peak_at)
        got = call_learner(
            logsumexp_stable, x.clone(), name="logsumexp_stable", call=f"logsumexp_stable(<{rows}×{V} {dtype}>)"
        )
        data.append(_learner_tensor(got, "logsumexp_stable", (rows,)))
    return data


def column_chunks(x: torch.Tensor, chunk: int) -> Iterator[torch.Tensor]:
    """x's columns `chunk` at a time (the last chunk narrower where chunk does not divide the width), as a kernel's
    loop loads them: once, each chunk valid until the next arrives. They share one buffer, so a list of them holds
    the last chunk's values over and over."""
    buffer = torch.empty(x.shape[0], chunk, dtype=x.dtype)
    for start in range(0, x.shape[1], chunk):
        width = min(chunk, x.shape[1] - start)
        buffer[:, :width] = x[:, start : start + width]
        yield buffer[:, :width]


def probe_online_lse(
    online_logsumexp: Any, cases: Sequence[Any], seed: int = 0, points: float | None = None
) -> ProbeData:
    """online_logsumexp(chunks) for each (rows, V, chunk, peak_at), float64, twice: on a list of the chunks (read
    as often as the learner likes) and on column_chunks (once, one buffer). One value per row each; the second
    run's error, if it raises, as text."""
    data = []
    for rows, V, chunk, peak_at in cases:
        x = row_case(seed, rows, V, "float64", peak_at, chunk)
        listed = [x[:, start : start + chunk].clone() for start in range(0, V, chunk)]
        call = f"online_logsumexp([<the columns of {rows}×{V} logits, {chunk} at a time>])"
        got = call_learner(online_logsumexp, listed, name="online_logsumexp", call=call)
        call = f"online_logsumexp(column_chunks(<{rows}×{V} logits>, {chunk}))"
        answer: dict[str, Any] = {"listed": _learner_tensor(got, "online_logsumexp", (rows,))}
        try:
            streamed = call_learner(
                online_logsumexp, column_chunks(x.clone(), chunk), name="online_logsumexp", call=call
            )
            answer["streamed"] = _learner_tensor(streamed, "online_logsumexp", (rows,))
        except CheckFailed as failure:
            answer["streamed"] = str(failure)
        data.append(answer)
    return data


# --------------------------------------------------------------------------------------------- the Function


def _saved_while(apply: Any, args: tuple, inputs: list[torch.Tensor], name: str) -> tuple[Any, list[dict], int]:
    """(output, what forward saved: shape and whether it is an input's memory, Triton launches) of apply(*args)."""
    own = {t.untyped_storage().data_ptr() for t in inputs}
    saved: list[dict] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.append({"shape": tuple(t.shape), "input": t.untyped_storage().data_ptr() in own})
        return t

    launches = {"n": 0}
    with counting_launches(launches), _saved_tensors_hooks(pack, lambda t: t):
        out = call_kernel(apply, *args, name=name)
    return out, saved, launches["n"]


def kept_on_ctx(node: Any, inputs: Sequence[torch.Tensor]) -> list[dict]:
    """Memory forward kept on ctx as attributes (ctx.x = ..., lists and dicts of them too), other than the inputs':
    [{"attribute", "bytes"}] per storage. save_for_backward is counted by the saved-tensor hooks."""
    return [
        {"attribute": str(r["attribute"]), "bytes": int(r["bytes"])}
        for r in attribute_tensors(node, [{"ptr": t.untyped_storage().data_ptr()} for t in inputs])
    ]


def probe_fused_ce(
    obj: Any,
    cases: Sequence[Any],
    seed: int = 0,
    ignore_index: int = -100,
    eps: float = 1e-6,
    points: float | None = None,
) -> ProbeData:
    """FusedCrossEntropy.apply(logits, target, ignore_index) on float64 cases (rows, V, ignored rows, grad_output,
    numeric): the loss, what forward saved, the Triton kernels forward and backward launched, backward's raw return
    (called through the node, as autograd calls it), and for numeric cases the loss at every logit moved by +/- eps
    (the judge's central differences)."""
    name = getattr(obj, "__name__", "your Function")
    apply = function_apply(obj, name)
    with course_kernels(obj):  # the Function is graded around the course's kernels: the learner's have their checks
        return _probe_fused_ce_cases(apply, name, cases, seed, ignore_index, eps)


def _probe_fused_ce_cases(apply: Any, name: str, cases: Sequence[Any], seed: int, ignore_index: int, eps: float):
    device = kernel_device()
    data = []
    for rows, V, ignored, grad_output, numeric in cases:
        x = row_case(seed, rows, V, "float64", 0).to(device)
        target = ce_targets(seed, rows, V, ignored, ignore_index).to(device)
        logits = x.clone().requires_grad_()
        loss, saved, forward_launches = _saved_while(apply, (logits, target, ignore_index), [logits], name)
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            raise CheckFailed(f"`{name}.apply(logits, target, ignore_index)` should return the mean loss, one number.")
        if loss.grad_fn is None:
            raise CheckFailed(f"The loss `{name}.apply` returned has no grad_fn: forward must return a tensor it made.")
        kept = kept_on_ctx(loss.grad_fn, (logits, target))
        launches, backward_error = {"n": 0}, None
        try:  # a backward that raises costs the backward's parts, as in notebook 05: forward is judged all the same
            with counting_launches(launches):
                grads = backward_of(loss.grad_fn, torch.full_like(loss, grad_output), name)
            fresh = x.clone().requires_grad_()
            engine_agrees(
                lambda: (call_kernel(apply, fresh, target, ignore_index, name=name), (fresh, target, ignore_index)),
                torch.full_like(loss, grad_output),
                grads,
                name,
            )
        except CheckFailed as failure:
            grads, backward_error = (), str(failure)
        grads = grads if isinstance(grads, tuple) else (grads,)
        # backward's launches count when the gradient it hands back is what a launch left (notebook 05's rule)
        backward_launches = launches["n"] if grads and written_by_launch(launches, grads[0]) else 0
        moved = []
        if numeric:
            with _no_grad():
                for i in range(rows):
                    for j in range(V):
                        for sign in (1, -1):
                            z = x.clone()
                            z[i, j] += sign * eps
                            moved.append(float(call_kernel(apply, z, target, ignore_index, name=name)))
        data.append(
            {
                "loss": float(loss.detach()),
                "saved": saved,
                "launches": [forward_launches, backward_launches],
                "returned": [
                    g.detach().to("cpu", torch.float64).clone() if isinstance(g, torch.Tensor) else None for g in grads
                ],
                "moved": moved,
                "backward_error": backward_error,
                "kept": kept,
            }
        )
    return {"cases": data, "layout": _layout_run(apply, name, cases[0], seed, ignore_index) if cases else None}


def _layout_run(apply: Any, name: str, case: Sequence[Any], seed: int, ignore_index: int) -> dict:
    """The first case again, its logits handed in as a transposed view (not contiguous): the loss and the logits'
    gradient, or what the Function raised."""
    rows, V, ignored, grad_output, _ = case
    leaf = row_case(seed, rows, V, "float64", 0).t().contiguous().to(kernel_device()).requires_grad_()
    target = ce_targets(seed, rows, V, ignored, ignore_index).to(leaf.device)
    try:
        loss = call_kernel(apply, leaf.t(), target, ignore_index, name=name)
        (grad,) = call_learner(torch.autograd.grad, loss * grad_output, leaf, name=name, call=f"{name}'s backward")
    except CheckFailed as failure:
        return {"loss": None, "grad": None, "error": str(failure)}
    return {"loss": float(loss.detach()), "grad": grad.t().detach().to("cpu", torch.float64).clone(), "error": None}


# --------------------------------------------------------------------------------------------- memory and bf16


def saved_problem(name: str, seed: int) -> tuple[Any, tuple[torch.Tensor, ...]]:
    """(fn, inputs) of a problem whose saved memory the learner's measurement reports."""
    gen = torch.Generator().manual_seed(97 * seed + len(name))
    rows, V, dtype = 6, 40, torch.float64  # seed 0: the cases the notebook shows
    if seed:  # drawn (from the grader's secret): no table of answers fits the hidden cases
        rows, V = int(torch.randint(2, 13, (), generator=gen)), int(torch.randint(8, 97, (), generator=gen))
        dtype = (torch.float32, torch.float64)[int(torch.randint(0, 2, (), generator=gen))]
    x = torch.randn(rows, V, generator=gen, dtype=dtype, requires_grad=True)
    if name == "exp":  # saves its output: new memory
        return torch.exp, (x,)
    if name == "mul":  # saves both inputs: nothing new
        y = torch.randn(rows, V, generator=gen, dtype=dtype, requires_grad=True)
        return torch.mul, (x, y)
    if name == "view_sin":  # saves a view of its input: the input's memory
        return (lambda t: torch.sin(t.view(-1))), (x,)
    if name == "composed_ce":  # log_softmax's output, saved by log_softmax and by nll_loss: one N×V block
        target = torch.randint(0, V, (rows,), generator=gen)
        return (lambda z: torch.nn.functional.nll_loss(torch.log_softmax(z, dim=1), target)), (x,)
    raise CheckFailed(f"no saved-memory problem named {name!r}")


SAVED_PROBLEMS = ("exp", "mul", "view_sin", "composed_ce")


def probe_new_saved_bytes(
    new_saved_bytes: Any, problems: Sequence[str] = SAVED_PROBLEMS, seed: int = 0, points: float | None = None
) -> ProbeData:
    """new_saved_bytes(fn, *inputs) for each problem: the bytes the learner's measurement reports."""
    data = []
    for name in problems:
        fn, inputs = saved_problem(name, seed)
        got = call_learner(new_saved_bytes, fn, *inputs, name="new_saved_bytes", call=f"new_saved_bytes(<{name}>, ...)")
        if isinstance(got, bool) or not isinstance(got, int):
            raise CheckFailed(f"`new_saved_bytes` should return a number of bytes (an int); it returned {got!r}.")
        data.append(got)
    return data


def bf16_case(seed: int, rows: int, V: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(31337 * seed + V)
    x = (3 * torch.randn(rows, V, generator=gen)).to(torch.bfloat16)
    return x, torch.randint(0, V, (rows,), generator=gen)


def probe_bf16(obj: Any, rows: int = 8, V: int = 4096, seed: int = 0, points: float | None = None) -> ProbeData:
    """FusedCrossEntropy.apply on bf16 logits: the loss and the logits' gradient, as the learner returns them."""
    name = getattr(obj, "__name__", "your Function")
    apply = function_apply(obj, name)
    x, target = bf16_case(seed, rows, V)
    logits = x.to(kernel_device()).requires_grad_()
    with course_kernels(obj):
        return _probe_bf16_run(apply, name, logits, target.to(logits.device))


def _probe_bf16_run(apply: Any, name: str, logits: torch.Tensor, target: torch.Tensor) -> dict:
    loss = call_kernel(apply, logits, target, -100, name=name)
    if not isinstance(loss, torch.Tensor) or loss.grad_fn is None:
        raise CheckFailed(f"`{name}.apply` on bfloat16 logits should return the loss with a grad_fn.")
    try:
        (grad,) = call_learner(torch.autograd.grad, loss, logits, name=name, call=f"{name}'s backward on bfloat16")
    except CheckFailed as failure:  # costs the gradient's part; the loss is judged all the same
        return {"loss": float(loss.detach()), "loss_dtype": str(loss.dtype).removeprefix("torch."),
                "grad": None, "grad_dtype": None, "backward_error": str(failure)}  # fmt: skip
    return {
        "loss": float(loss.detach()),
        "loss_dtype": str(loss.dtype).removeprefix("torch."),
        "grad": grad.detach().to("cpu", torch.float64).clone(),
        "grad_dtype": str(grad.dtype).removeprefix("torch."),
        "backward_error": None,
    }


# --------------------------------------------------------------------------------------------- linear cross-entropy


_profile = torch.autograd.profiler.profile  # as imported, before any learner code runs


@contextmanager
def largest_allocation() -> Iterator[dict]:
    """While active: box["largest"] becomes the bytes of the largest block of memory any PyTorch operation allocated
    (from the profiler's memory accounting at the allocator, whatever the learner's code did to dispatch: a tensor
    made with dispatch or torch functions disabled is seen too). Inputs made before are not counted."""
    box = {"largest": 0}
    on_gpu = kernel_device() == "cuda"
    with _profile(profile_memory=True, use_kineto=False, use_device="cuda" if on_gpu else None) as prof:
        yield box
    memory = "self_device_memory_usage" if on_gpu else "self_cpu_memory_usage"
    box["largest"] = max((max(getattr(e, memory), 0) for e in prof.function_events), default=0)


def linear_case(seed: int, N: int, D: int, V: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(4099 * seed + 31 * N + V)
    hidden = torch.randn(N, D, generator=gen, dtype=torch.float64)
    weight = torch.randn(V, D, generator=gen, dtype=torch.float64) / D**0.5
    return hidden, weight, torch.randint(0, V, (N,), generator=gen)


def probe_linear_ce(obj: Any, cases: Sequence[Any], seed: int = 0, points: float | None = None) -> ProbeData:
    """LinearCrossEntropy.apply(hidden, weight, target, chunk) for each (N, D, V, chunk, grad_output), float64: the
    loss, backward's raw return, and the largest block of memory PyTorch allocated in forward and in backward."""
    name = getattr(obj, "__name__", "your Function")
    apply = function_apply(obj, name)
    with course_kernels(obj):
        return _probe_linear_ce_cases(apply, name, cases, seed)


def _probe_linear_ce_cases(apply: Any, name: str, cases: Sequence[Any], seed: int) -> ProbeData:
    data = []
    for N, D, V, chunk, grad_output in cases:
        device = kernel_device()
        hidden, weight, target = (t.to(device) for t in linear_case(seed, N, D, V))
        h, w = hidden.clone().requires_grad_(), weight.clone().requires_grad_()
        if device == "cuda":  # cuBLAS allocates its workspace at its first product: not the learner's allocation
            (hidden @ weight.T).sum().item()
        new_saved = []

        def pack(t: torch.Tensor) -> torch.Tensor:
            if t.untyped_storage().data_ptr() not in {x.untyped_storage().data_ptr() for x in (h, w, target)}:
                new_saved.append(t.untyped_storage().nbytes())
            return t

        with largest_allocation() as forward, _saved_tensors_hooks(pack, lambda t: t):
            loss = call_learner(
                apply, h, w, target, chunk, name=name, call=f"{name}.apply(hidden, weight, target, {chunk})"
            )
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or loss.grad_fn is None:
            raise CheckFailed(
                f"`{name}.apply(hidden, weight, target, chunk)` should return the mean loss, with a grad_fn."
            )
        kept = sum(new_saved) + sum(r["bytes"] for r in kept_on_ctx(loss.grad_fn, (h, w, target)))
        grad_seed = torch.full_like(loss, grad_output)
        with largest_allocation() as backward:
            grads = backward_of(loss.grad_fn, grad_seed, name)
        grads = grads if isinstance(grads, tuple) else (grads,)
        data.append(
            {
                "loss": float(loss.detach()),
                "returned": [
                    g.detach().to("cpu", torch.float64).clone() if isinstance(g, torch.Tensor) else None for g in grads
                ],
                "largest": [forward["largest"], backward["largest"]],
                "kept": kept,
                "device": device,
            }
        )
    return data


checks = NotebookChecks(__name__)
check_logsumexp = checks.add("check_logsumexp", probe_logsumexp, by_hand=False)
check_online_lse = checks.add("check_online_lse", probe_online_lse, by_hand=False)
check_row_lse = checks.add("check_row_lse", probe_row_lse, by_hand=False)
check_ce_forward = checks.add("check_ce_forward", probe_ce_forward, by_hand=False)
check_ce_backward = checks.add("check_ce_backward", probe_ce_backward, by_hand=False)
# by hand: the Function's backward is the learner's kernel, so a backward handed to torch.autograd is flagged
check_fused_ce = NotebookChecks(__name__, show=show_verdict, names=checks.names).add(
    "check_fused_ce", probe_fused_ce, by_hand=True
)
check_new_saved_bytes = checks.add("check_new_saved_bytes", probe_new_saved_bytes, by_hand=False)
check_bf16 = checks.add("check_bf16", probe_bf16, by_hand=True)
check_linear_ce = NotebookChecks(__name__, show=show_verdict, names=checks.names).add(
    "check_linear_ce", probe_linear_ce, by_hand=True
)

__all__ = checks.names


# ==== judges: decided outside the grading sandbox; the sandbox's copy of this module ends at this line ====
# Judges of notebook 06 (the fused cross-entropy): references in float64 from PyTorch, decided part by part (one
# idea per part; a mistake that shows in several cases costs its idea once).

import math
import random

from coursetools.gpu_compile import launch_signature

from .judges import answers, kernel_compile
from .judges.kernel_compile import pointer
from .judges.verdict import Part, Verdict, share_earned, verdict_of
from .registry import decides


# What each kind of case tests; a case is (rows, V, BLOCK_V, dtype, peak column).
def titled_parts(titles: dict[str, str]) -> dict[str, Part]:
    """A check's parts, each with the title its report shows."""
    return {name: Part(name, title=title) for name, title in titles.items()}


ROW_LSE_PARTS = {
    "values": "each row's log-sum-exp (V a multiple of BLOCK_V, the peak in the first chunk)",
    "rescale": "a larger maximum in a later chunk (the running sum rescaled)",
    "tail": "V not a multiple of BLOCK_V (the last chunk masked)",
    "stability": "float32 logits of 100 (the maximum subtracted before exp)",
    "bounds": "one value per row written, the logits untouched",
}


def row_lse_cases(V: int = 32, ragged: int = 37, block: int = 16) -> list[tuple]:
    """The visible cases: one per part (a case tests one idea; the others' conditions are kept easy)."""
    return [
        (3, V, block, "float64", 0),  # values
        (2, V, block, "float64", V - 1),  # rescale: the peak in the last chunk
        (2, ragged, block, "float64", 0),  # tail
        (2, V, block, "float32", 0),  # stability
    ]


def part_of(case: Sequence[Any]) -> str:
    rows, V, block, dtype, peak_at = case
    if dtype != "float64":
        return "stability"
    if V % block:
        return "tail"
    return "rescale" if peak_at >= block else "values"


def draw_row_lse(rng: random.Random, count: int) -> dict[str, Any]:
    """count cases of each part, of other sizes and block sizes."""
    cases = []
    for _ in range(count):
        block = rng.choice([8, 16, 32])
        chunks = rng.randint(2, 4)
        cases += [
            (rng.randint(1, 4), block * chunks, block, "float64", rng.randrange(block)),
            (rng.randint(1, 3), block * chunks, block, "float64", rng.randrange(block, block * chunks)),
            (rng.randint(1, 3), block * chunks + rng.randint(1, block - 1), block, "float64", 0),
            (rng.randint(1, 3), block * chunks, block, "float32", rng.randrange(block)),
        ]
    return {"cases": cases, "seed": rng.randrange(1, 10**6)}


READ_OUTSIDE_HINT = (
    "a load reads memory that is not its row's: mask every load (the columns at or beyond V, loaded as other=-inf "
    "or 0.0) and start each row at row * row_stride, nothing before it"
)


def _judge_bounds(part: Part, entry: Any, case: Sequence[Any], where: str, hint: str) -> None:
    """A kernel reads its inputs' own entries only, writes its outputs only, and leaves its inputs as they were."""
    outside = answers.integer(entry["written_outside"], f"the guard count of case {case}")
    changed = answers.flag(entry["inputs_changed"], f"the input check of case {case}")
    if outside or changed:
        part.fail(f"{where}: {'values written outside the output' if outside else 'an input changed'}", hint)


def _judge_reads(parts: dict, judged: list) -> None:
    """After a check's cases: a kernel whose results depended on memory outside its tensors costs the bounds part,
    in each case whose results were otherwise right (where they were wrong, that mistake is charged already, with
    its own hint: one mistake, once)."""
    for entry, case, where in judged:
        if not answers.flag(entry["read_outside"], f"the read check of case {case}"):
            continue
        if any(m.startswith(where) for part in parts.values() for m in part.messages):
            continue
        parts["bounds"].fail(
            f"{where}: what the kernel computes depends on memory outside its tensors", READ_OUTSIDE_HINT
        )


@decides("check_row_lse", draw=draw_row_lse)
def judge_row_lse(data: ProbeData, cases: Sequence[Any], seed: int = 0, points: float = 5) -> Verdict:
    parts, judged, failures = titled_parts(ROW_LSE_PARTS), [], []
    launches, record = kernel_compile.split_answer(data)
    for case, got in zip(cases, answers.per_case(launches, cases)):
        rows, V, block, dtype, peak_at = case
        entry = answers.entry(got, f"case {case}", ("values", "written_outside", "inputs_changed", "read_outside"))
        values = answers.tensor(entry["values"], f"the values of case {case}", shape=(rows,))
        where = f"{rows} rows of V = {V}, BLOCK_V = {block}, {dtype}"
        judged.append((entry, case, where))
        _judge_bounds(
            parts["bounds"],
            entry,
            case,
            where,
            "one program per row stores one value, at lse_ptr + row; the logits are only read",
        )
        expected = torch.logsumexp(row_case(seed, rows, V, dtype, peak_at, block).to(torch.float64), dim=1)
        off = _off_rows(values, expected, 1e-9 if dtype == "float64" else 1e-5)
        if off is not None:
            slip = dtype == "float64" and torch.allclose(values, expected, rtol=1e-5, atol=1e-6)
            failures.append((part_of(case), f"{where}: row {off[0]} is {off[1]}", off[1], slip))
    _charge_row_failures(parts, failures)
    _judge_reads(parts, judged)
    _judge_compiles(parts, record, cases, lambda dtype: [pointer(dtype), pointer(dtype), "i32", "i32"])
    return verdict_of(list(parts.values()), points, "row_lse_kernel (each row's log-sum-exp)")


ROW_HINTS = {
    "values": "a row's log-sum-exp is m + log(s) over all of its V columns: loop over its chunks "
    "(for start in range(0, V, BLOCK_V)), carrying the running maximum m and sum s from one chunk to the next",
    "tail": "the last chunk reaches past the row's end: mask the columns at or beyond V (and load them as -inf, "
    "which exp turns into 0)",
    "stability": "exp of a large logit overflows: subtract the running maximum before exp",
    "rescale": "when a later chunk raises the maximum, the sum so far was computed against the old one: rescale it "
    "by exp(m_old - m_new)",
}
LATE_PEAK_HINT = (
    "a later chunk holds a logit far above the first chunk's: the running maximum takes every chunk's maximum "
    "(m_new = max(m, the chunk's max)), and the sum so far is rescaled by exp(m - m_new)"
)
PRECISION_HINT = (
    "right to about 6 digits only: a float64 row was accumulated in float32. Accumulate in lse_ptr's own dtype "
    "(acc = lse_ptr.dtype.element_ty): float64 for float64 logits"
)


BACKWARD_PRECISION_HINT = (
    "right to about 6 digits only: a float64 row was computed in float32. Compute in lse_ptr's own dtype "
    "(acc = lse_ptr.dtype.element_ty, which backward loads the log-sum-exp in): float64 for float64 logits"
)


def _charge_row_failures(parts: dict[str, Part], failures: list[tuple[str, str, str, bool]]) -> None:
    """Each (part, message, state, float32 slip) failed, charged by the one rule: a float64 case right to float32
    precision is one precision slip wherever it shows (the first part it shows in pays); a late peak that
    overflows in a kernel that overflows on the stability case too is the missing maximum, once. (Values off in
    every case stay charged in each: a kernel that reads one chunk only and a blank one look alike.)"""
    overflow = any(part == "stability" and state != "off" for part, _, state, _ in failures)
    first_slip = None
    for part, message, state, slip in failures:
        if slip:
            first_slip = first_slip or part
            same = first_slip if first_slip != part else None
            parts[part].fail(message, PRECISION_HINT if same is None else None, same_mistake_as=same)
        elif part == "rescale" and state != "off":
            same = "stability" if overflow else None
            parts[part].fail(message, None if same else LATE_PEAK_HINT, same_mistake_as=same)
        else:
            parts[part].fail(message, ROW_HINTS.get(part))


LOSS_HINT = (
    "a row's loss is its log-sum-exp minus the logit of its own target: the target names a column of this row, "
    "counted from the row's start"
)
ROW0_TARGET_HINT = "every row's loss used row 0's target: each program reads its own row's target, at target_ptr + row"
IGNORED_HINT = "a row whose target is ignore_index contributes nothing: store 0 (and never read its target column)"
CE_FORWARD_PARTS = {
    "loss": "each counted row's loss (its log-sum-exp less its target's logit)",
    "lse": "each row's log-sum-exp, stored for backward",
    "ignored": "a row whose target is ignore_index: loss 0",
    "bounds": "one loss and one log-sum-exp per row written, the inputs untouched",
}


def ce_forward_cases(block: int = 16) -> list[tuple]:
    """(rows, V, BLOCK_V, dtype, ignored rows): a ragged vocabulary, a short one, float32, rows ignored."""
    return [(4, 37, block, "float64", 1), (3, 5, block, "float64", 0), (3, 48, block, "float32", 1)]


def draw_ce_forward(rng: random.Random, count: int) -> dict[str, Any]:
    cases = []
    for _ in range(count):
        block = rng.choice([8, 16, 32])
        rows = rng.randint(2, 5)
        cases.append(
            (rows, block * rng.randint(1, 3) + rng.randint(0, block - 1), block, "float64", rng.randint(1, rows - 1))
        )
    return {"cases": cases, "seed": rng.randrange(1, 10**6), "ignore_index": rng.choice([-100, -1, 7])}


@decides("check_ce_forward", draw=draw_ce_forward)
def judge_ce_forward(
    data: ProbeData, cases: Sequence[Any], seed: int = 0, ignore_index: int = -100, points: float = 4
) -> Verdict:
    parts, judged = titled_parts(CE_FORWARD_PARTS), []
    launches, record = kernel_compile.split_answer(data)
    for case, got in zip(cases, answers.per_case(launches, cases)):
        rows, V, block, dtype, ignored = case
        entry = answers.entry(got, f"case {case}", ("loss", "lse", "written_outside", "inputs_changed", "read_outside"))
        loss = answers.tensor(entry["loss"], f"the losses of case {case}", shape=(rows,))
        lse = answers.tensor(entry["lse"], f"the log-sum-exps of case {case}", shape=(rows,))
        where = f"{rows} rows of V = {V}, BLOCK_V = {block}, {dtype}, ignore_index = {ignore_index}"
        judged.append((entry, case, where))
        _judge_bounds(
            parts["bounds"],
            entry,
            case,
            where,
            "one program per row stores one loss and one log-sum-exp, at row; the inputs are only read",
        )
        x = row_case(seed, rows, V, dtype, 0).to(torch.float64)
        target = ce_targets(seed, rows, V, ignored, ignore_index)
        counted = target != ignore_index
        expected_lse = torch.logsumexp(x, dim=1)
        expected = torch.nn.functional.cross_entropy(x, target, ignore_index=ignore_index, reduction="none")
        tol = 1e-9 if dtype == "float64" else 1e-5
        close = lambda a, b: torch.isclose(a, b, rtol=tol, atol=tol)  # noqa: E731
        if not close(lse, expected_lse)[counted].all():
            slip = dtype == "float64" and torch.allclose(lse[counted], expected_lse[counted], rtol=1e-5, atol=1e-6)
            parts["lse"].fail(
                f"{where}: a counted row's log-sum-exp is wrong",
                PRECISION_HINT if slip else "store each row's log-sum-exp: backward needs it",
            )
        loss_wrong = not close(loss, expected)[counted].all()
        # the first row's target read for every row: what each row's loss would then be
        t0 = int(target[0])
        row0 = expected_lse - x[:, t0] if t0 != ignore_index else torch.zeros_like(expected_lse)
        if loss_wrong:
            row = int((~close(loss, expected) & counted).nonzero()[0])
            # the loss its own wrong log-sum-exp gives (lse - the target's logit): one mistake, counted once
            picked = x[counted, target[counted]]
            lse_wrong = not close(lse[row : row + 1], expected_lse[row : row + 1]).all() and bool(
                close(loss[counted], lse[counted] - picked).all()
            )
            parts["loss"].fail(
                f"{where}: the loss of row {row} is off",
                None if lse_wrong else ROW0_TARGET_HINT if close(loss, row0).all() else LOSS_HINT,
                same_mistake_as="lse" if lse_wrong else None,
            )
        if not (loss[~counted] == 0).all():
            # row 0's target read for every row: its ignored rows are wrong by the same mistake as the rest
            same = "loss" if loss_wrong and close(loss, row0)[~counted].all() else None
            parts["ignored"].fail(
                f"{where}: a row whose target is ignore_index has a loss other than 0",
                None if same else IGNORED_HINT,
                same_mistake_as=same,
            )
    _judge_reads(parts, judged)
    _judge_compiles(
        parts,
        record,
        cases,
        lambda dtype: [pointer(dtype), "*i64", pointer(dtype), pointer(dtype), "i32", "i32", "i32"],
    )
    return verdict_of(list(parts.values()), points, "cross_entropy_forward_kernel (per-row losses)")


def _judge_compiles(parts: dict[str, Part], record: Any, cases: Sequence[Any], positional: Callable) -> None:
    """The kernel's own source compiled for a GPU, once per (BLOCK_V, dtype) of the cases (the part comes last)."""
    others = [part for name, part in parts.items() if name != "bounds"]
    if share_earned(others)[0] == 0:  # a kernel that computes nothing right earns nothing for what it left alone
        parts["bounds"].passed = None
        parts["bounds"].messages = ["not scored: the kernel earns nothing in the interpreter yet"]
    parts["compiles"] = kernel_compile.compile_part()
    kernel_compile.judge_compiles(
        parts["compiles"],
        record,
        [
            (f"{dtype} rows, BLOCK_V={block}", *launch_signature(record, positional(dtype), {"BLOCK_V": block}))
            for block, dtype in dict.fromkeys((case[2], case[3]) for case in cases)
        ],
        others=others,
    )


CE_BACKWARD_PARTS = {
    "values": "the gradient, (softmax - one_hot) * scale (V a multiple of BLOCK_V)",
    "tail": "V not a multiple of BLOCK_V (the last chunk's load and store masked)",
    "ignored": "a row whose target is ignore_index: gradient 0",
    "uses_lse": "the softmax recomputed from the saved log-sum-exp",
    "bounds": "the logits, targets and log-sum-exps only read",
}


def ce_backward_cases(block: int = 16) -> list[tuple]:
    """(rows, V, BLOCK_V, dtype, ignored rows, lse shift): one case per part."""
    return [
        (3, 32, block, "float64", 0, 0.0),  # values
        (3, 37, block, "float64", 0, 0.0),  # tail
        (4, 32, block, "float64", 2, 0.0),  # ignored
        (2, 32, block, "float64", 0, math.log(2.0)),  # uses_lse: the saved log-sum-exp, not one recomputed
    ]


def backward_part(case: Sequence[Any]) -> str:
    rows, V, block, dtype, ignored, lse_shift = case
    return "uses_lse" if lse_shift else "ignored" if ignored else "tail" if V % block else "values"


def _backward_models(
    seed: int, case: Sequence[Any], ignore_index: int, scale: float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """(the case's gradient, what whole-formula mistakes would give instead): a case that fails by the same mistake
    as the plain case is charged once; one that fails otherwise (a blank kernel's NaN) is charged in its own part."""
    rows, V, block, dtype, ignored, lse_shift = case
    x = row_case(seed, rows, V, dtype, 0).to(torch.float64)
    target = ce_targets(seed, rows, V, ignored, ignore_index)
    counted = target != ignore_index
    p = torch.exp(x - (torch.logsumexp(x, dim=1, keepdim=True) + lse_shift))
    one_hot = torch.zeros_like(x)
    one_hot[counted, target[counted]] = 1.0
    counted_only = counted[:, None].to(x.dtype)
    expected = (p - one_hot) * scale * counted_only
    models = {
        "float32": expected.to(torch.float32).to(torch.float64),  # matched to float32's precision by _matches
        "unscaled": (p - one_hot) * counted_only,
        "sign": -expected,
        "no one-hot": p * scale * counted_only,
    }
    return expected, models


def _matches(grad: torch.Tensor, model: torch.Tensor) -> bool:
    return bool(torch.allclose(grad, model, rtol=1e-5, atol=1e-7))


BACKWARD_HINTS = {
    "values": "each entry is (softmax - one_hot) * scale, the softmax recomputed as exp(logit - lse)",
    "tail": "the last chunk of a row: load and store only the columns below V",
    "ignored": "a row whose target is ignore_index gets a gradient of 0 in every column",
    "uses_lse": "recompute the softmax from the log-sum-exp forward saved (lse_ptr), not from a sum of your own: "
    "that is the pass over the row the saved N floats buy back",
}


def draw_ce_backward(rng: random.Random, count: int) -> dict[str, Any]:
    cases = []
    for _ in range(count):
        block = rng.choice([8, 16, 32])
        V = block * rng.randint(1, 3)
        cases += [
            (rng.randint(1, 4), V, block, "float64", 0, 0.0),
            (rng.randint(1, 4), V + rng.randint(1, block - 1), block, "float64", 0, 0.0),
            (rng.randint(3, 5), V, block, "float64", rng.randint(1, 2), 0.0),
            (rng.randint(1, 3), V, block, "float64", 0, rng.choice([-1.0, 0.5, 1.5])),
        ]
    return {"cases": cases, "seed": rng.randrange(1, 10**6), "scale": rng.choice([0.125, 0.5, 1.0])}


@decides("check_ce_backward", draw=draw_ce_backward)
def judge_ce_backward(
    data: ProbeData,
    cases: Sequence[Any],
    seed: int = 0,
    ignore_index: int = -100,
    scale: float = 0.25,
    points: float = 5,
) -> Verdict:
    parts, judged = titled_parts(CE_BACKWARD_PARTS), []
    launches, record = kernel_compile.split_answer(data)
    answered = list(zip(cases, answers.per_case(launches, cases)))
    answered.sort(key=lambda pair: backward_part(pair[0]) != "values")  # the plain cases first: see below
    values_mistake = None
    for case, got in answered:
        rows, V, block, dtype, ignored, lse_shift = case
        entry = answers.entry(got, f"case {case}", ("grad", "written_past_V", "inputs_changed", "read_outside"))
        grad = answers.tensor(entry["grad"], f"the gradient of case {case}", shape=(rows, V))
        past = answers.integer(entry["written_past_V"], f"the padding count of case {case}")
        changed = answers.flag(entry["inputs_changed"], f"the input check of case {case}")
        where = f"{rows} rows of V = {V}, BLOCK_V = {block}, {dtype}"
        judged.append((entry, case, where))
        if changed:
            parts["bounds"].fail(f"{where}: the logits, targets or log-sum-exps changed", "backward only reads them")
        if past:
            parts["tail"].fail(
                f"{where}: {past} value(s) stored past the end of a row",
                "the last chunk's store needs the same mask as its load: columns at or beyond V belong to no one",
            )
        expected, models = _backward_models(seed, case, ignore_index, scale)
        bad = ~torch.isclose(grad, expected, rtol=1e-9, atol=1e-12)
        if not bad.any():
            continue
        row = int(bad.any(dim=1).nonzero()[0])
        part = backward_part(case)
        mistake = next((name for name, model in models.items() if _matches(grad, model)), None)
        if part == "values":
            values_mistake = mistake
        # the plain case's mistake seen again here (the same wrong formula): it costs the values' share once
        follows = "values" if part != "values" and mistake and mistake == values_mistake else None
        hint = BACKWARD_PRECISION_HINT if mistake == "float32" else BACKWARD_HINTS[part]
        parts[part].fail(
            f"{where}: row {row} of the gradient is off", None if follows else hint, same_mistake_as=follows
        )
    _judge_reads(parts, judged)
    _judge_compiles(
        parts,
        record,
        cases,
        lambda dtype: [pointer(dtype), "*i64", pointer(dtype), pointer(dtype), "i32", "i32", "i32", "fp32"],
    )
    return verdict_of(list(parts.values()), points, "cross_entropy_backward_kernel (the gradient, recomputed)")


# --------------------------------------------------------------- log-sum-exp by hand, chunk by chunk


def _off_rows(values: torch.Tensor, expected: torch.Tensor, tol: float) -> tuple[int, str] | None:
    bad = ~torch.isclose(values, expected, rtol=tol, atol=tol)
    if not bad.any():
        return None
    row = int(bad.nonzero()[0])
    value = float(values[row])
    return row, "NaN" if math.isnan(value) else "infinite" if math.isinf(value) else "off"


def logsumexp_cases() -> list[tuple]:
    """(rows, V, dtype, peak column): plain float64 rows, then float32 rows with a logit of 100."""
    return [(3, 7, "float64", 2), (2, 5, "float32", 1)]


def draw_logsumexp(rng: random.Random, count: int) -> dict[str, Any]:
    cases = []
    for _ in range(count):
        cases += [
            (rng.randint(1, 4), rng.randint(1, 40), "float64", 0),
            (rng.randint(1, 3), rng.randint(2, 40), "float32", 1),
        ]
    return {"cases": cases, "seed": rng.randrange(1, 10**6)}


@decides("check_logsumexp", draw=draw_logsumexp)
def judge_logsumexp(data: ProbeData, cases: Sequence[Any], seed: int = 0, points: float = 2) -> Verdict:
    parts = titled_parts(
        {"values": "each row's log-sum-exp", "overflow": "float32 logits of 100 (the maximum subtracted first)"}
    )
    for case, got in zip(cases, answers.per_case(data, cases)):
        rows, V, dtype, peak_at = case
        values = answers.tensor(got, f"the answer to case {case}", shape=(rows,))
        expected = torch.logsumexp(row_case(seed, rows, V, dtype, peak_at).to(torch.float64), dim=1)
        off = _off_rows(values, expected, 1e-9 if dtype == "float64" else 1e-5)
        if off is None:
            continue
        part = "overflow" if dtype != "float64" else "values"
        parts[part].fail(
            f"logsumexp_stable on {rows} rows of {V} {dtype} logits: row {off[0]} is {off[1]}",
            "exp(100) does not fit in float32: subtract each row's maximum first and add it back after the log"
            if part == "overflow"
            else "log of the sum of exp over the last dimension, one value per row",
        )
    return verdict_of(list(parts.values()), points, "logsumexp_stable (each row's log-sum-exp)")


ONLINE_PARTS = {
    "values": "the log-sum-exp, chunk by chunk (the peak in the first chunk; a narrower last chunk)",
    "rescale": "a larger maximum in a later chunk (the running sum rescaled)",
    "one_pass": "one pass over the chunks as they arrive (each read once, none kept)",
}
ONLINE_HINTS = {
    "values": "keep a running maximum m and a running sum s of exp(x - m) over the chunks: the answer is m + log s",
    "rescale": "when a chunk raises the maximum from m to m', the sum so far was taken against m: multiply it by "
    "exp(m - m') before adding the chunk's terms",
    "raised": "`chunks` is an iterator, read by one `for part in chunks:` loop: it has no length and no indexing",
    "kept": "each chunk is valid only until the next one arrives (the check reads them into one buffer, as a "
    "kernel's loop does): keeping the chunks (a list, torch.cat) to read them again is a second pass. Update m and s "
    "as each chunk arrives",
    "twice": "the chunks come once, as a kernel's loads do: a second loop over them (the maximum first, then the "
    "sum) sees none. Update m and s in one loop, rescaling s whenever m grows",
}


def online_cases() -> list[tuple]:
    """(rows, V, chunk, peak column): the peak in the first chunk; in the last; a chunk that does not divide V."""
    return [(3, 12, 4, 1), (3, 12, 4, 11), (2, 14, 4, 0)]


def online_part(case: Sequence[Any]) -> str:
    rows, V, chunk, peak_at = case
    return "rescale" if peak_at >= chunk else "values"


def draw_online_lse(rng: random.Random, count: int) -> dict[str, Any]:
    cases = []
    for _ in range(count):
        chunk = rng.randint(2, 8)
        V = chunk * rng.randint(2, 5)
        cases += [
            (rng.randint(1, 4), V, chunk, rng.randrange(chunk)),
            (rng.randint(1, 4), V, chunk, rng.randrange(chunk, V)),
            (rng.randint(1, 4), V + rng.randint(1, chunk - 1), chunk, 0),
        ]
    return {"cases": cases, "seed": rng.randrange(1, 10**6)}


def _online_answer(got: Any, case: Sequence[Any]) -> tuple[torch.Tensor, torch.Tensor | str]:
    """(values from the list of chunks, values from the stream or the error it raised)."""
    rows = case[0]
    got = answers.entry(got, f"the answer to case {case}", ("listed", "streamed"))
    listed = answers.tensor(got["listed"], f"the answer to case {case}", shape=(rows,))
    streamed = got["streamed"]
    if not isinstance(streamed, str):
        streamed = answers.tensor(streamed, f"the streamed answer to case {case}", shape=(rows,))
    return listed, streamed


def _second_pass(streamed: torch.Tensor | str, x: torch.Tensor, chunk: int) -> str:
    """Which way an answer right on a list of the chunks went wrong on the stream: the key of its hint."""
    if isinstance(streamed, str):
        return "raised"
    kept = torch.logsumexp(torch.cat(list(column_chunks(x, chunk)), dim=1), dim=1)
    return "kept" if torch.allclose(streamed, kept, rtol=1e-9, atol=1e-9) else "twice"


@decides("check_online_lse", draw=draw_online_lse)
def judge_online_lse(data: ProbeData, cases: Sequence[Any], seed: int = 0, points: float = 3) -> Verdict:
    parts = titled_parts(ONLINE_PARTS)
    answered = sorted(zip(cases, answers.per_case(data, cases)), key=lambda pair: online_part(pair[0]) != "values")
    for case, got in answered:
        rows, V, chunk, peak_at = case
        listed, streamed = _online_answer(got, case)
        x = row_case(seed, rows, V, "float64", peak_at, chunk)
        expected = torch.logsumexp(x, dim=1)
        off = _off_rows(listed, expected, 1e-9)
        off_streamed = (0, "an error") if isinstance(streamed, str) else _off_rows(streamed, expected, 1e-9)
        where = f"online_logsumexp on {rows} rows of V = {V}, {chunk} columns at a time"
        part = online_part(case)
        if off and off_streamed:  # right from neither: the part's own idea (a right stream is one pass done right)
            follows = "values" if part != "values" and parts["values"].passed is False else None
            parts[part].fail(
                f"{where}: row {off[0]} is {off[1]}", None if follows else ONLINE_HINTS[part], same_mistake_as=follows
            )
        if off_streamed:
            said = streamed if isinstance(streamed, str) else f"row {off_streamed[0]} is {off_streamed[1]}"
            parts["one_pass"].fail(
                f"{where}, read once as they arrive: {said}",
                None if off else ONLINE_HINTS[_second_pass(streamed, x, chunk)],
                same_mistake_as=parts[part].costs if off else None,
            )
    return verdict_of(list(parts.values()), points, "online_logsumexp (chunk by chunk, one pass)")


# --------------------------------------------------------------------------------------------- the Function

FUSED_PARTS = {
    "layout": "logits of any layout (a transposed view): made contiguous for the kernels",
    "forward": "forward: the loss, from your forward kernel",
    "mean": "the mean over the counted rows (ignore_index left out)",
    "gradcheck": "backward agrees with the loss's central differences",
    "reference": "backward: the logits' gradient, from your backward kernel",
    "interface": "backward's interface (the logits' gradient, None for target and ignore_index)",
    "memory": "memory: forward saves no tensor of the logits' size it made",
}


def fused_ce_cases() -> list[tuple]:
    """(rows, V, ignored rows, grad_output, numeric): a plain case, one with an ignored row, a small numeric one."""
    return [(3, 37, 0, 0.7, False), (4, 20, 1, 1.3, False), (2, 9, 0, 1.0, True)]


def draw_fused_ce(rng: random.Random, count: int) -> dict[str, Any]:
    cases = []
    for _ in range(count):
        rows = rng.randint(3, 5)
        cases += [
            (rows, rng.randint(5, 50), 0, rng.choice([0.5, 1.0, 2.0]), False),
            (rows, rng.randint(5, 50), rng.randint(1, rows - 1), rng.choice([0.5, 1.0, 2.0]), False),
        ]
    cases.append((2, rng.randint(4, 10), 0, 1.0, True))
    return {"cases": cases, "seed": rng.randrange(1, 10**6), "ignore_index": rng.choice([-100, -1])}


def _saved_entries(value: Any, what: str) -> list[dict]:
    out = []
    for k, item in enumerate(answers.listed(value, what)):
        item = answers.entry(item, f"{what}[{k}]", ("shape", "input"))
        shape = answers.shape(item["shape"], f"{what}[{k}]'s shape")
        out.append({"shape": shape, "input": answers.flag(item["input"], f"{what}[{k}]")})
    return out


def _judge_fused_loss(
    parts: dict,
    where: str,
    loss: float,
    launches: float,
    x: torch.Tensor,
    target: torch.Tensor,
    ignore_index: int,
    ignored: int,
    expected: float,
    unsure: list[str],
) -> None:
    """The loss: launched by a kernel, equal to the mean over the counted rows (a mean over every row is named; a
    loss off in a case with ignored rows, for no reason the judge names, goes to `unsure`)."""
    if not launches:
        parts["forward"].fail(f"{where}: forward launched no Triton kernel", "forward runs your forward kernel")
    elif not math.isclose(loss, expected, rel_tol=1e-9, abs_tol=1e-12):
        rows = x.shape[0]
        summed = torch.nn.functional.cross_entropy(x, target, ignore_index=ignore_index, reduction="sum")
        if ignored and math.isclose(loss, float(summed.detach()) / rows, rel_tol=1e-9):
            parts["mean"].fail(
                f"{where}: the loss is averaged over every row",
                "rows whose target is ignore_index are not in the mean: divide by the number of counted rows",
            )
        elif not ignored:
            parts["forward"].fail(f"{where}: the loss is off", None)
        else:  # off, and not by the mean over every row: the forward's mistake if the plain cases show it too
            unsure.append(f"{where}: the loss is off")


def _judge_fused_grad(
    parts: dict,
    where: str,
    grad: Any,
    launches: float,
    expected: torch.Tensor,
    target: torch.Tensor,
    ignore_index: int,
    ignored: int,
    kept_whole: bool = False,
) -> None:
    """The logits' gradient: launched by a kernel, of the logits' shape, equal to the reference (a gradient scaled by
    the mean over every row is the mean's mistake again, counted once; a right gradient computed in forward and
    kept is the memory's mistake, counted once)."""
    rows = expected.shape[0]
    if not launches:
        from_forward = (
            kept_whole and isinstance(grad, torch.Tensor) and tuple(grad.shape) == tuple(expected.shape)
            and torch.allclose(grad, expected, rtol=1e-7, atol=1e-10)
        )  # fmt: skip
        parts["reference"].fail(
            f"{where}: backward handed back no gradient a Triton kernel wrote"
            + (" (it was computed in forward and kept)" if from_forward else ""),
            None
            if from_forward
            else "backward runs your backward kernel, writing into a new gradient tensor, and returns that tensor",
            same_mistake_as="memory" if from_forward else None,
        )
    elif not isinstance(grad, torch.Tensor) or tuple(grad.shape) != tuple(expected.shape):
        parts["interface"].fail(f"{where}: the logits' gradient is not a tensor of their shape", None)
    elif not torch.allclose(grad, expected, rtol=1e-7, atol=1e-10):
        counted = int((target != ignore_index).sum())
        over_all_rows = torch.allclose(grad, expected * counted / rows, rtol=1e-7, atol=1e-10)
        parts["reference"].fail(
            f"{where}: the logits' gradient is off",
            None
            if over_all_rows
            else "backward's result is grad_output * (softmax - one_hot) / counted rows, zero in ignored rows",
            same_mistake_as="mean" if over_all_rows and ignored else None,
        )


@decides("check_fused_ce", draw=draw_fused_ce)
def judge_fused_ce(
    data: ProbeData, cases: Sequence[Any], seed: int = 0, ignore_index: int = -100, eps: float = 1e-6, points: float = 5
) -> Verdict:
    parts, unsure, right = titled_parts(FUSED_PARTS), [], []
    title = "FusedCrossEntropy.apply(logits, target, ignore_index)"
    if not isinstance(data, dict) or set(data) != {"cases", "layout"}:
        raise answers.mismatch("the cases' answers and the layout run were expected")
    for case, got in zip(cases, answers.per_case(data["cases"], cases)):
        rows, V, ignored, grad_output, numeric = case
        entry = answers.entry(
            got, f"case {case}", ("loss", "saved", "launches", "returned", "moved", "backward_error", "kept")
        )
        loss = answers.number(entry["loss"], f"the loss of case {case}")
        saved = _saved_entries(entry["saved"], f"what forward saved in case {case}")
        launches = answers.numbers(entry["launches"], f"the launches of case {case}", length=2)
        returned = answers.listed(entry["returned"], f"backward's return of case {case}")
        moved = answers.numbers(
            entry["moved"], f"the moved losses of case {case}", length=2 * rows * V if numeric else 0
        )
        where = f"{rows} rows of V = {V}" + (f", {ignored} with target ignore_index" if ignored else "")
        x = row_case(seed, rows, V, "float64", 0).requires_grad_()
        target = ce_targets(seed, rows, V, ignored, ignore_index)
        expected = torch.nn.functional.cross_entropy(x, target, ignore_index=ignore_index)
        (expected_grad,) = torch.autograd.grad(expected * grad_output, x)
        _judge_fused_loss(
            parts, where, loss, launches[0], x, target, ignore_index, ignored, float(expected.detach()), unsure
        )
        _judge_fused_interface(parts, where, entry["backward_error"], returned)
        grad = returned[0] if returned else None
        kept_whole = _judge_fused_memory(parts, where, saved, _kept_entries(entry["kept"], case), rows, V)
        if entry["backward_error"] is None:
            _judge_fused_grad(parts, where, grad, launches[1], expected_grad, target, ignore_index, ignored, kept_whole)
        right.append(math.isclose(loss, float(expected.detach()), rel_tol=1e-9, abs_tol=1e-12))
        if isinstance(grad, torch.Tensor) and tuple(grad.shape) == (rows, V):
            right.append(bool(torch.allclose(grad.to(torch.float64), expected_grad, rtol=1e-7, atol=1e-10)))
        if numeric and isinstance(grad, torch.Tensor) and tuple(grad.shape) == (rows, V):
            central = torch.tensor(moved[0::2], dtype=torch.float64) - torch.tensor(moved[1::2], dtype=torch.float64)
            numerical = (central / (2 * eps)).reshape(rows, V) * grad_output
            _judge_fused_central(parts, where, grad, numerical, expected_grad, bool(unsure))
    for message in unsure:  # a loss off with ignored rows too: the forward's mistake when plain rows show it
        parts["mean"].fail(message, None, same_mistake_as="forward" if parts["forward"].passed is False else None)
    if cases:
        _judge_fused_layout(parts, data["layout"], cases[0], seed, ignore_index)
    if not any(right):  # neither a loss nor a gradient right: what it left alone, or got vacuously, earns nothing
        for name in ("layout", "mean", "gradcheck", "interface", "memory"):
            parts[name].passed, parts[name].messages = None, ["not scored: neither a loss nor a gradient is right yet"]
    return verdict_of(list(parts.values()), points, title)


def _judge_fused_layout(parts: dict, got: Any, case: Sequence[Any], seed: int, ignore_index: int) -> None:
    """The first case on a transposed view of its logits: the same loss and gradient. Where the contiguous run is
    already wrong, a wrong answer here is that mistake again."""
    rows, V, ignored, grad_output, _ = case
    entry = answers.entry(got, "the layout run", ("loss", "grad", "error"))
    x = row_case(seed, rows, V, "float64", 0).requires_grad_()
    target = ce_targets(seed, rows, V, ignored, ignore_index)
    expected = torch.nn.functional.cross_entropy(x, target, ignore_index=ignore_index)
    (expected_grad,) = torch.autograd.grad(expected * grad_output, x)
    where = f"{rows} rows of V = {V}, the logits a transposed view (not contiguous)"
    if entry["error"] is not None:
        wrong = f"{where}: it raised {entry['error']}"
    else:
        loss = answers.number(entry["loss"], "the layout run's loss")
        grad = answers.tensor(entry["grad"], "the layout run's gradient", shape=(rows, V))
        loss_right = math.isclose(loss, float(expected.detach()), rel_tol=1e-9, abs_tol=1e-12)
        if loss_right and torch.allclose(grad, expected_grad, rtol=1e-7, atol=1e-10):
            return
        wrong = f"{where}: the {'gradient' if loss_right else 'loss'} is off"
    earlier = next((p for p in ("forward", "reference", "mean") if parts[p].passed is False), None)
    parts["layout"].fail(
        wrong,
        None
        if earlier
        else "a kernel reads row r at r * stride with the columns next to each other: make the "
        "logits contiguous in forward (logits.contiguous()) before handing them to a kernel",
        same_mistake_as=earlier,
    )


def _judge_fused_interface(parts: dict, where: str, backward_error: Any, returned: list) -> None:
    """Backward's return: one value per input of forward. A backward that raised costs the backward's idea, once."""
    if backward_error is not None:
        parts["reference"].fail(f"{where}: backward raised: {backward_error}", None)
        parts["gradcheck"].fail(f"{where}: backward raised", None, same_mistake_as="reference")
        parts["interface"].fail(f"{where}: backward raised", None, same_mistake_as="reference")
    elif len(returned) != 3 or returned[1] is not None or returned[2] is not None:
        parts["interface"].fail(
            f"{where}: backward returned {len(returned)} value(s)"
            + ("" if len(returned) != 3 else ", a gradient for target or ignore_index"),
            "backward returns one value per input of forward: the logits' gradient, then None for the target "
            "and for ignore_index",
        )


def _judge_fused_central(
    parts: dict, where: str, grad: torch.Tensor, numerical: torch.Tensor, expected_grad: torch.Tensor, unsure: bool
) -> None:
    """Backward against the central differences of the learner's own forward; a right backward under a wrong
    forward disagrees with them, and that is the forward's mistake (backward matches the reference)."""
    if torch.allclose(grad, numerical, rtol=1e-3, atol=1e-6):
        return
    right = torch.allclose(grad, expected_grad, rtol=1e-7, atol=1e-10)
    wrong_forward = (
        "forward" if parts["forward"].passed is False
        else "mean" if parts["mean"].passed is False or unsure else None
    )  # fmt: skip
    parts["gradcheck"].fail(
        f"{where}: backward disagrees with the loss's central differences"
        + (" (those of a wrong forward: backward itself matches the reference)" if right else ""),
        None,
        same_mistake_as=wrong_forward if right else None,
    )


def _kept_entries(value: Any, case: Any) -> list[dict]:
    out = []
    for k, item in enumerate(answers.listed(value, f"what forward kept on ctx in case {case}")):
        item = answers.entry(item, f"ctx's tensor {k} in case {case}", ("attribute", "bytes"))
        out.append({"attribute": str(item["attribute"]), "bytes": answers.integer(item["bytes"], "its bytes")})
    return out


def _judge_fused_memory(parts: dict, where: str, saved: list[dict], kept: list[dict], rows: int, V: int) -> bool:
    """Memory kept for backward, save_for_backward and ctx's attributes alike (lists of pieces too): nothing of the
    logits' size made by forward. True when a tensor of that size (a softmax, a gradient) is kept."""
    new_saved = [s for s in saved if not s["input"]]
    too_big = [s["shape"] for s in new_saved if math.prod(s["shape"]) >= rows * V]
    pieces = sum(math.prod(s["shape"]) for s in new_saved) >= rows * V
    on_ctx = sum(k["bytes"] for k in kept) >= rows * V * 8
    if too_big or pieces or on_ctx:
        what = (
            f"saves a tensor of shape {too_big[0]}"
            if too_big
            else f"keeps {rows}×{V} numbers on ctx ({', '.join(sorted({k['attribute'] for k in kept}))})"
            if on_ctx
            else "saves the logits' size in pieces"
        )
        parts["memory"].fail(
            f"{where}: forward {what} for backward",
            "save the logits (already in memory) and the N log-sum-exps; backward recomputes the softmax from them "
            "(a gradient computed in forward and kept on ctx costs the same memory)",
        )
        return True
    return False


# --------------------------------------------------------------------------------------------- memory and bf16


def reference_new_saved_bytes(fn: Any, *inputs: torch.Tensor) -> int:
    """Distinct memory forward keeps alive for backward that is not an input's: the judge's own measurement."""
    own = {t.untyped_storage().data_ptr() for t in inputs}
    kept: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in own:
            kept[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*inputs)
    return sum(kept.values())


SAVED_PART = {"exp": "new_memory", "composed_ce": "distinct", "mul": "inputs", "view_sin": "inputs"}


def draw_saved_problems(rng: random.Random, count: int) -> dict[str, Any]:
    names = list(SAVED_PROBLEMS)
    rng.shuffle(names)
    return {"problems": names, "seed": rng.randrange(1, 10**6)}


@decides("check_new_saved_bytes", draw=draw_saved_problems)
def judge_new_saved_bytes(
    data: ProbeData, problems: Sequence[str] = SAVED_PROBLEMS, seed: int = 0, points: float = 3
) -> Verdict:
    parts = titled_parts(
        {
            "new_memory": "the bytes of the tensors forward saves",
            "inputs": "an input's memory (or a view of it) counts nothing new",
            "distinct": "memory saved twice is counted once",
        }
    )
    for name, got in zip(problems, answers.per_case(data, problems)):
        got = answers.integer(got, f"the bytes reported for {name}")
        fn, inputs = saved_problem(name, seed)
        expected = reference_new_saved_bytes(fn, *inputs)
        if got == expected:
            continue
        hint = {
            "new_memory": "count the bytes of every tensor forward saves (tensor.untyped_storage().nbytes())",
            "inputs": "a saved tensor whose memory is an input's (the input itself, or a view of it) costs nothing "
            "new: compare storages (untyped_storage().data_ptr()) with the inputs'",
            "distinct": "the same memory saved twice (one op's output, saved by it and by the next op) is kept "
            "once: count each storage once",
        }[SAVED_PART[name]]
        parts[SAVED_PART[name]].fail(f"for {name} you report {got} bytes, which is not what is kept", hint)
    return verdict_of(list(parts.values()), points, "new_saved_bytes (memory kept for backward)")


def bf16_ulps(got: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """|got - expected| in units of bfloat16's last place at each expected value."""
    scale = 2.0 ** torch.floor(torch.log2(expected.abs().clamp(min=torch.finfo(torch.bfloat16).tiny)))
    return (got - expected).abs() / (torch.finfo(torch.bfloat16).eps * scale)


def draw_bf16(rng: random.Random, count: int) -> dict[str, Any]:
    return {"seed": rng.randrange(1, 10**6), "rows": rng.randint(4, 8), "V": rng.choice([2048, 3000, 4096])}


@decides("check_bf16", draw=draw_bf16)
def judge_bf16(data: ProbeData, rows: int = 8, V: int = 4096, seed: int = 0, points: float = 3) -> Verdict:
    parts = titled_parts(
        {
            "loss": "the loss within one bfloat16 ulp of float64's",
            "gradient": "the gradient within 1.5 bfloat16 ulps of float64's",
            "dtype": "the loss and the gradient in bfloat16, the logits' dtype",
        }
    )
    entry = answers.entry(data, "the bf16 answer", ("loss", "loss_dtype", "grad", "grad_dtype", "backward_error"))
    loss = answers.number(entry["loss"], "the bf16 loss")
    x, target = bf16_case(seed, rows, V)
    where = f"{rows} rows of V = {V} bfloat16 logits"
    if entry["backward_error"] is not None:
        parts["gradient"].fail(f"{where}: backward raised: {entry['backward_error']}", None)
        _judge_bf16_loss(parts, where, loss, entry["loss_dtype"], x, target)
        return _bf16_verdict(parts, points)
    grad = answers.tensor(entry["grad"], "the bf16 gradient", shape=(rows, V))
    x64 = x.to(torch.float64).requires_grad_()
    expected = torch.nn.functional.cross_entropy(x64, target)
    (expected_grad,) = torch.autograd.grad(expected, x64)
    if entry["grad_dtype"] != "bfloat16":
        parts["dtype"].fail(
            f"{where}: the loss is {entry['loss_dtype']} and the gradient {entry['grad_dtype']}",
            "return the loss and the gradient in the logits' dtype (accumulate in float32, cast at the end)",
        )
    _judge_bf16_loss(parts, where, loss, entry["loss_dtype"], x, target)
    grad_ulps = bf16_ulps(grad, expected_grad)
    if not float(grad_ulps.max()) <= 1.5:
        parts["gradient"].fail(
            f"{where}: gradient entries up to {float(grad_ulps.max()):.1f} bfloat16 ulps from the float64 values "
            f"(median {float(grad_ulps.median()):.1f})",
            _bf16_gradient_hint(grad, grad_ulps, expected_grad, target),
        )
    return _bf16_verdict(parts, points)


def _bf16_verdict(parts: dict[str, Part], points: float) -> Verdict:
    if parts["loss"].passed is False and parts["gradient"].passed is False:  # a dtype alone earns nothing
        parts["dtype"].passed = None
        parts["dtype"].messages = ["not scored: neither the loss nor the gradient is right"]
    return verdict_of(list(parts.values()), points, "FusedCrossEntropy on bfloat16 logits")


def _judge_bf16_loss(parts: dict[str, Part], where: str, loss: float, loss_dtype: Any, x, target) -> None:
    if loss_dtype != "bfloat16" and not parts["dtype"].messages:
        parts["dtype"].fail(
            f"{where}: the loss is {loss_dtype}",
            "return the loss in the logits' dtype (accumulate in float32, cast at the end)",
        )
    expected = torch.nn.functional.cross_entropy(x.to(torch.float64), target)
    loss_ulps = float(bf16_ulps(torch.tensor([loss], dtype=torch.float64), expected.reshape(1))[0])
    if not loss_ulps <= 1.0:
        parts["loss"].fail(
            f"{where}: the loss is {loss_ulps:.1f} bfloat16 ulps from the float64 value",
            "accumulate in float32 and round to bfloat16 once, at the end: a sum of exponentials kept in bfloat16 "
            "loses every term once the sum is 2^8 times larger, and a mean of bfloat16 losses rounds at every step",
        )


def _bf16_gradient_hint(grad: torch.Tensor, grad_ulps: torch.Tensor, expected_grad: torch.Tensor, target) -> str:
    """The idea behind the gradient's error, from its size and shape: far off is a wrong gradient, not an imprecise
    one; a whole row off by one common factor is a log-sum-exp rounded to bfloat16 (every exp(logit - lse) of the
    row shares it); else a rounding on the way."""
    if float(grad_ulps.median()) > 16:
        return (
            "the gradient is wrong, not imprecise: the float64 check (exercise 6) shows where; in bfloat16, only "
            "the last rounding should remain"
        )
    rows = grad.shape[0]
    others = torch.ones_like(grad, dtype=torch.bool)
    others[torch.arange(rows), target] = False  # the target's column has -1 in it: not a pure exp(logit - lse)
    ratios = [float((grad[r][others[r]] / expected_grad[r][others[r]]).median()) for r in range(rows)]
    if max(abs(ratio - 1.0) for ratio in ratios) > 2**-7:
        return (
            "keep the log-sum-exp in float32 between forward and backward: rounded to bfloat16 it is off by up to "
            "1/256 of itself, and every exp(logit - lse) of its row with it"
        )
    return (
        "a value of backward is rounded to bfloat16 before the gradient is stored: load each chunk with .to(acc), "
        "compute exp(logit - lse) and the scale in float32, and convert once, at the store"
    )


# --------------------------------------------------------------------------------------------- linear cross-entropy


def linear_ce_cases() -> list[tuple]:
    """(N tokens, D features, V vocabulary, chunk, grad_output): chunks that divide N, and one that does not."""
    return [(16, 5, 40, 4, 1.0), (18, 4, 33, 5, 0.5)]


def draw_linear_ce(rng: random.Random, count: int) -> dict[str, Any]:
    cases = []
    for _ in range(count):
        chunk = rng.randint(2, 6)
        cases.append(
            (
                chunk * rng.randint(4, 6) + rng.randint(0, chunk - 1),
                rng.randint(2, 6),
                rng.randint(20, 60),
                chunk,
                rng.choice([0.5, 1.0, 2.0]),
            )
        )
    return {"cases": cases, "seed": rng.randrange(1, 10**6)}


ALLOCATION_GRANULE = {"cpu": 1, "cuda": 512}


@decides("check_linear_ce", draw=draw_linear_ce)
def judge_linear_ce(data: ProbeData, cases: Sequence[Any], seed: int = 0, points: float = 5) -> Verdict:
    parts = titled_parts(
        {
            "forward": "the loss (the mean over N tokens)",
            "reference": "the hidden states' and the weight's gradients",
            "interface": "backward's interface (two gradients of their inputs' shapes, then None, None)",
            "chunked": "memory: no tensor of N x V made, forward or backward",
        }
    )
    right: list[bool] = []
    for case, got in zip(cases, answers.per_case(data, cases)):
        N, D, V, chunk, grad_output = case
        entry = answers.entry(got, f"case {case}", ("loss", "returned", "largest", "kept", "device"))
        if entry["device"] not in ALLOCATION_GRANULE:
            raise answers.mismatch(f"case {case} ran on the unknown device {entry['device']!r}")
        loss = answers.number(entry["loss"], f"the loss of case {case}")
        largest = answers.numbers(entry["largest"], f"the memory of case {case}", length=2)
        returned = answers.listed(entry["returned"], f"backward's return of case {case}")
        where = f"N = {N} tokens, D = {D}, V = {V}, chunk = {chunk}"
        hidden, weight, target = linear_case(seed, N, D, V)  # the reference, on the CPU
        h, w = hidden.clone().requires_grad_(), weight.clone().requires_grad_()
        expected = torch.nn.functional.cross_entropy(h @ w.T, target)
        grad_h, grad_w = torch.autograd.grad(expected * grad_output, (h, w))
        loss_right = math.isclose(loss, float(expected.detach()), rel_tol=1e-9, abs_tol=1e-12)
        right.append(loss_right)
        if not loss_right:
            parts["forward"].fail(
                f"{where}: the loss is off",
                "each chunk's logits are hidden[chunk] @ weight.T; the mean divides the chunks' summed losses by N",
            )
        if len(returned) != 4 or returned[2] is not None or returned[3] is not None:
            parts["interface"].fail(
                f"{where}: backward returned {len(returned)} value(s)",
                "one per input of forward: the hidden states' gradient, the weight's, None, None",
            )
        grads = returned[:2] + [None] * (2 - len(returned[:2]))
        for what, got_grad, want in (("hidden", grads[0], grad_h), ("weight", grads[1], grad_w)):
            if not isinstance(got_grad, torch.Tensor):  # no gradient at all: backward's own idea is missing
                parts["reference"].fail(f"{where}: backward returned no {what} gradient", LINEAR_GRAD_HINT)
                parts["interface"].fail(f"{where}: the {what} gradient is missing", same_mistake_as="reference")
            elif got_grad.shape != want.shape:
                parts["interface"].fail(f"{where}: the {what} gradient is not a tensor of its input's shape", None)
            elif not torch.allclose(got_grad, want, rtol=1e-7, atol=1e-10):
                parts["reference"].fail(f"{where}: the {what} gradient is off", LINEAR_GRAD_HINT)
            else:
                right.append(True)
        kept = answers.integer(entry["kept"], f"the memory kept for backward in case {case}")
        _judge_linear_memory(parts["chunked"], where, case, largest, kept, ALLOCATION_GRANULE[entry["device"]])
    if not any(right):  # neither a loss nor a gradient right: what it left alone earns nothing
        for name in ("interface", "chunked"):
            parts[name].passed, parts[name].messages = None, ["not scored: neither a loss nor a gradient is right yet"]
    return verdict_of(list(parts.values()), points, "LinearCrossEntropy.apply(hidden, weight, target, chunk)")


LINEAR_GRAD_HINT = (
    "per chunk, the logits' gradient G = (softmax - one_hot) * grad_output / N gives G @ weight for the chunk's hidden "
    "states and adds G.T @ hidden[chunk] to the weight's"
)


def _judge_linear_memory(part: Part, where: str, case: Sequence[Any], largest: list, kept: int, granule: int) -> None:
    """No N×V tensor, forward or backward: nothing kept for backward that adds up to it (pieces too), and no block
    larger than what a chunked answer needs (one chunk's logits, or a gradient the size of an input), rounded up to
    the allocator's granule (CUDA's caching allocator hands out multiples of 512 bytes)."""
    N, D, V, chunk, _ = case
    if kept >= N * V * 8:
        part.fail(
            f"{where}: forward keeps {kept} bytes for backward beyond its inputs: the N×V logits are {N * V * 8} bytes",
            "keep the inputs and the N log-sum-exps only: backward recomputes each chunk's logits",
        )
    allowed = -(-max(min(chunk, N) * V, N * D, V * D) * 8 // granule) * granule
    if max(largest) > allowed:
        which = "forward" if largest[0] > allowed else "backward"
        made = "an N×V tensor" if max(largest) >= N * V * 8 else "a block larger than one chunk's logits"
        part.fail(
            f"{where}: {which} made {made} ({max(largest)} bytes; one chunk of {min(chunk, N)} tokens' logits is "
            f"{min(chunk, N) * V * 8})",
            "the point is that the N×V logits never exist: compute, use and drop them `chunk` tokens at a time "
            "(the chunk you are given), in backward too (recompute each chunk's logits there)",
        )
