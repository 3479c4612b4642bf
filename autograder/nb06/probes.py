"""Notebook 06's probes: the only code of its checks that runs in the grading sandbox."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from ..feedback import CheckFailed
from ..nb05.cases import GUARD_VALUE
from ..nb05.probes import (
    attribute_tensors,
    backward_of,
    call_kernel,
    course_kernels,
    ctx_tensors,
    function_apply,
    kernel_device,
    kernel_launcher,
)
from ..probes import launches, triton_kernels
from ..probes.apply import engine_agrees
from ..probes.call import call_learner
from ..probes.memory_watch import Spans, watching
from ..registry import ProbeData
from .cases import (
    SAVED_PROBLEMS,
    bf16_case,
    ce_targets,
    column_chunks,
    linear_case,
    row_case,
    saved_problem,
)

# as imported, before any learner code runs (replaced later, they are flagged, and do not answer for the probe)
_saved_tensors_hooks, _no_grad, _equal = torch.autograd.graph.saved_tensors_hooks, torch.no_grad, torch.equal


GUARD = 16  # guard entries before and after an output


LEAD = 1  # guard rows before the first row: a read at a negative offset lands in memory the probe owns


SECOND_FILL = 2.0  # the guard memory's value in a kernel's second run (NaN in its first)


def record_kernel(kernel: Any, **params: Any) -> ProbeData:
    """The kernel checks' probe: the kernel's text (triton_kernels.record); the judges run it on `params`' cases."""
    return triton_kernels.record(kernel)


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
    """The first run's results (guard memory holding NaN), with "read_outside": whether either run loaded an entry
    that is not its tensors' (run's "loads_outside", counted in the interpreter: a load without the mask it needs,
    or at the wrong offset, whatever the kernel did with what it read), or, compiled on a GPU where loads are not
    seen, whether a second run, its guard memory holding another value, gave other results in `keys`. In the
    interpreter every load is seen, so the one run tells all."""
    first = run(float("nan"))
    if kernel_device() == "cpu":
        first["read_outside"] = bool(first.pop("loads_outside"))
        return first
    second = run(SECOND_FILL)
    loaded = first.pop("loads_outside") + second.pop("loads_outside")
    first["written_elsewhere"] = first["written_elsewhere"] or second.pop("written_elsewhere")
    first["read_outside"] = bool(loaded) or any(
        not torch.equal(first[k].nan_to_num(7.0, 7.0, 7.0), second[k].nan_to_num(7.0, 7.0, 7.0)) for k in keys
    )
    return first


def watched(handed: Sequence[torch.Tensor], reads: Sequence[torch.Tensor], writes: Sequence[torch.Tensor]) -> Any:
    """memory_watch.watching for a row kernel (one program per row): each program may read its own row of `reads`
    and store only into its own row of `writes`; nothing outside the buffers `handed` is ever touched."""
    return watching(handed, reads=Spans.per_row(reads), writes=Spans.per_row(writes))


def outside(seen: dict) -> dict:
    """What a run's watch saw, as the run's data: reads outside the program's row (or outside every tensor), stores
    into another program's row (or outside every tensor, which were not performed)."""
    return {
        "loads_outside": seen["reads_outside"],
        "written_elsewhere": seen["writes_elsewhere"] + seen["refused_writes"],
    }


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
            with context(), watched([whole, out_buf], [logits[:, :V], out], [out]) as seen:
                call_kernel(
                    lambda *a: launcher[(rows,)](*a, BLOCK_V=block), logits, out, logits.stride(0), V, name=name
                )
            guards = (out_buf[:GUARD] != GUARD_VALUE).sum() + (out_buf[GUARD + rows :] != GUARD_VALUE).sum()
            return {
                **outside(seen),
                "values": out.to(torch.float64).cpu().clone(),
                "written_outside": int(guards),
                "inputs_changed": not torch.equal(whole.nan_to_num(7.0), before.nan_to_num(7.0)),
            }

        data.append(twice(run, ("values",)))
    return {"launches": data}


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
            views = [logits[:, :V], target, outputs["loss"][1], outputs["lse"][1]]
            handed = [whole, target, outputs["loss"][0], outputs["lse"][0]]
            with context(), watched(handed, views, [outputs["loss"][1], outputs["lse"][1]]) as seen:
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
            guards = sum(
                int((b[:GUARD] != GUARD_VALUE).sum() + (b[GUARD + rows :] != GUARD_VALUE).sum())
                for b, _ in outputs.values()
            )
            return {
                **outside(seen),
                "loss": outputs["loss"][1].to(torch.float64).cpu().clone(),
                "lse": outputs["lse"][1].to(torch.float64).cpu().clone(),
                "written_outside": guards,
                "inputs_changed": not (
                    torch.equal(whole.nan_to_num(7.0), before.nan_to_num(7.0)) and torch.equal(target, target_before)
                ),
            }

        data.append(twice(run, ("loss", "lse")))
    return {"launches": data}


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
            handed = [whole, target, lse, grad_whole]
            with context(), watched(handed, [logits[:, :V], target, lse, grad[:, :V]], [grad]) as seen:
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
                **outside(seen),
                "grad": grad[:, :V].to(torch.float64).cpu().clone(),
                "written_past_V": int(written.sum() - written[LEAD : LEAD + rows, :V].sum()),
                "inputs_changed": not all(
                    torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0)) for a, b in zip(after, inputs_before)
                ),
            }

        data.append(twice(run, ("grad",)))
    return {"launches": data}


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

CE_KERNELS = ("ce_forward_kernel", "ce_backward_kernel")  # what the Function checks run in place of the learner's


def _saved_while(
    apply: Any, args: tuple, inputs: list[torch.Tensor], name: str
) -> tuple[Any, list, launches.Window, list[torch.Tensor]]:
    """(output, what forward saved: shape and whether it is an input's memory, the window of the stand-in launches
    it made, the tensors it saved) of apply(*args)."""
    own = {t.untyped_storage().data_ptr() for t in inputs}
    saved: list[dict] = []
    tensors: list[torch.Tensor] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.append({"shape": tuple(t.shape), "input": t.untyped_storage().data_ptr() in own})
        tensors.append(t)
        return t

    with launches.window() as made, _saved_tensors_hooks(pack, lambda t: t):
        out = call_kernel(apply, *args, name=name)
    return out, saved, made, tensors


def kept_for_backward(node: Any, saved: list) -> list:
    """The tensors forward left for backward: those it saved (the hooks saw them) and those kept on ctx as
    attributes (nb05's ctx_tensors)."""
    return list(saved) + [tensor for _, tensor in ctx_tensors(node)]


def made_in_forward(grad: Any, kept: list, handed: torch.Tensor) -> bool:
    """Whether backward handed back a gradient forward made and kept: one of the kept tensors, or one of them times
    the grad_output backward was handed (not a gradient computed in backward from what forward kept)."""
    if not isinstance(grad, torch.Tensor) or grad.device.type == "meta":
        return False
    with _no_grad():
        return any(
            t.shape == grad.shape and t.dtype == grad.dtype and (_equal(t, grad) or _equal(t * handed, grad))
            for t in kept
        )


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
    with course_kernels(
        obj, CE_KERNELS
    ):  # the Function is graded around the course's kernels: the learner's have their checks
        return _probe_fused_ce_cases(apply, name, cases, seed, ignore_index, eps)


def _probe_fused_ce_cases(apply: Any, name: str, cases: Sequence[Any], seed: int, ignore_index: int, eps: float):
    device = kernel_device()
    data = []
    for rows, V, ignored, grad_output, numeric in cases:
        x = row_case(seed, rows, V, "float64", 0).to(device)
        target = ce_targets(seed, rows, V, ignored, ignore_index).to(device)
        logits = x.clone().requires_grad_()
        loss, saved, forward, saved_tensors = _saved_while(apply, (logits, target, ignore_index), [logits], name)
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            raise CheckFailed(f"`{name}.apply(logits, target, ignore_index)` should return the mean loss, one number.")
        if loss.grad_fn is None:
            raise CheckFailed(f"The loss `{name}.apply` returned has no grad_fn: forward must return a tensor it made.")
        kept = kept_on_ctx(loss.grad_fn, (logits, target))
        left_for_backward = kept_for_backward(loss.grad_fn, saved_tensors)
        backward, backward_error = launches.Window(), None
        try:  # a backward that raises costs the backward's parts, as in notebook 05: forward is judged all the same
            handed = torch.full_like(loss, grad_output)
            with launches.window() as backward:
                grads = backward_of(loss.grad_fn, handed, name)
            fresh = x.clone().requires_grad_()
            engine_agrees(
                lambda fresh=fresh, target=target: (
                    call_kernel(apply, fresh, target, ignore_index, name=name),
                    (fresh, target, ignore_index),
                ),
                torch.full_like(loss, grad_output),
                grads,
                name,
            )
        except CheckFailed as failure:
            grads, backward_error = (), str(failure)
        grads = grads if isinstance(grads, tuple) else (grads,)
        moved = _moved_losses(apply, x, (target, ignore_index), eps, name) if numeric else []
        data.append(
            {
                "loss": float(loss.detach()),
                "saved": saved,
                # the judge looks up what these launches stored in the launcher's log (notebook 05's rule)
                "launch_ids": {"forward": forward.numbers, "backward": backward.numbers},
                "grad_layout": launches.layout(grads[0]) if grads else None,
                "returned": [
                    g.detach().to("cpu", torch.float64).clone() if isinstance(g, torch.Tensor) else None for g in grads
                ],
                "moved": moved,
                "backward_error": backward_error,
                "kept": kept,
                # the gradient handed back was made in forward and kept (not computed in backward from what was)
                "grad_from_forward": bool(grads) and made_in_forward(grads[0], left_for_backward, handed),
            }
        )
    return {"cases": data, "layout": _layout_run(apply, name, cases[0], seed, ignore_index) if cases else None}


def _moved_losses(apply: Any, x: torch.Tensor, rest: tuple, eps: float, name: str) -> list[float]:
    """The loss at every logit moved by +eps and -eps, in that order: the judge's central differences."""
    moved = []
    with _no_grad():
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                for sign in (1, -1):
                    z = x.clone()
                    z[i, j] += sign * eps
                    moved.append(float(call_kernel(apply, z, *rest, name=name)))
    return moved


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


def probe_bf16(obj: Any, rows: int = 8, V: int = 4096, seed: int = 0, points: float | None = None) -> ProbeData:
    """FusedCrossEntropy.apply on bf16 logits: the loss and the logits' gradient, as the learner returns them."""
    name = getattr(obj, "__name__", "your Function")
    apply = function_apply(obj, name)
    x, target = bf16_case(seed, rows, V)
    logits = x.to(kernel_device()).requires_grad_()
    with course_kernels(obj, CE_KERNELS):
        return _probe_bf16_run(apply, name, logits, target.to(logits.device))


def _probe_bf16_run(apply: Any, name: str, logits: torch.Tensor, target: torch.Tensor) -> dict:
    """The loss and its gradient through autograd's engine, the launches forward and backward made, what forward's
    left per row, and whether the gradient handed back is what a backward launch wrote."""
    with launches.window() as forward:
        loss = call_kernel(apply, logits, target, -100, name=name)
    if not isinstance(loss, torch.Tensor) or loss.grad_fn is None:
        raise CheckFailed(f"`{name}.apply` on bfloat16 logits should return the loss with a grad_fn.")
    answer = {
        "loss": float(loss.detach()),
        "loss_dtype": str(loss.dtype).removeprefix("torch."),
        "launch_ids": {"forward": forward.numbers, "backward": []},
        "grad": None,
        "grad_dtype": None,
        "grad_layout": None,
        "backward_error": None,
    }
    backward = launches.Window()
    try:
        with launches.window() as backward:
            (grad,) = call_learner(torch.autograd.grad, loss, logits, name=name, call=f"{name}'s backward on bfloat16")
    except CheckFailed as failure:  # costs the gradient's part; the loss is judged all the same
        return answer | {"backward_error": str(failure)}
    return answer | {
        "launch_ids": {"forward": forward.numbers, "backward": backward.numbers},
        "grad": grad.detach().to("cpu", torch.float64).clone(),
        "grad_dtype": str(grad.dtype).removeprefix("torch."),
        "grad_layout": launches.layout(grad),
    }


# --------------------------------------------------------------------------------------------- linear cross-entropy


_profile = torch.autograd.profiler.profile  # as imported, before any learner code runs


@contextmanager
def native_stderr_silenced() -> Iterator[None]:
    """While active, what C++ writes on descriptor 2 goes nowhere: the profiler's own lines ("USDT: ...
    profiler_start", "CPUAllocator ... unknown size") are not the learner's to read, and no setting quiets them.
    Python's sys.stderr in a notebook is the kernel's stream, not descriptor 2: a learner's prints still show."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no descriptor 2 to silence
        yield
        return
    try:
        with open(os.devnull, "wb") as nowhere:
            os.dup2(nowhere.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@contextmanager
def largest_allocation() -> Iterator[dict]:
    """While active: box["largest"] becomes the bytes of the largest block of memory any PyTorch operation allocated
    (from the profiler's memory accounting at the allocator, whatever the learner's code did to dispatch: a tensor
    made with dispatch or torch functions disabled is seen too). Inputs made before are not counted."""
    box = {"largest": 0}
    on_gpu = kernel_device() == "cuda"
    with (
        native_stderr_silenced(),
        _profile(profile_memory=True, use_kineto=False, use_device="cuda" if on_gpu else None) as prof,
    ):
        yield box
    memory = "self_device_memory_usage" if on_gpu else "self_cpu_memory_usage"
    box["largest"] = max((max(getattr(e, memory), 0) for e in prof.function_events), default=0)


def probe_linear_ce(obj: Any, cases: Sequence[Any], seed: int = 0, points: float | None = None) -> ProbeData:
    """LinearCrossEntropy.apply(hidden, weight, target, chunk) for each (N, D, V, chunk, grad_output), float64: the
    loss, backward's raw return, the largest block of memory PyTorch allocated in forward and in backward, and the
    launches of the course's kernels each made (what they wrote, per-row results or chunks' gradients, is the
    launcher's to say: the judge looks it up)."""
    name = getattr(obj, "__name__", "your Function")
    apply = function_apply(obj, name)
    with course_kernels(obj, CE_KERNELS):
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

        def pack(t: torch.Tensor, h=h, w=w, target=target, new_saved=new_saved) -> torch.Tensor:
            if t.untyped_storage().data_ptr() not in {x.untyped_storage().data_ptr() for x in (h, w, target)}:
                new_saved.append(t.untyped_storage().nbytes())
            return t

        with largest_allocation() as forward, _saved_tensors_hooks(pack, lambda t: t), launches.window() as launched:
            loss = call_learner(
                apply, h, w, target, chunk, name=name, call=f"{name}.apply(hidden, weight, target, {chunk})"
            )
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or loss.grad_fn is None:
            raise CheckFailed(
                f"`{name}.apply(hidden, weight, target, chunk)` should return the mean loss, with a grad_fn."
            )
        kept = sum(new_saved) + sum(r["bytes"] for r in kept_on_ctx(loss.grad_fn, (h, w, target)))
        grad_seed = torch.full_like(loss, grad_output)
        with largest_allocation() as backward, launches.window() as relaunched:
            grads = backward_of(loss.grad_fn, grad_seed, name)
        grads = grads if isinstance(grads, tuple) else (grads,)
        data.append(
            {
                "loss": float(loss.detach()),
                "launch_ids": {"forward": launched.numbers, "backward": relaunched.numbers},
                "returned": [
                    g.detach().to("cpu", torch.float64).clone() if isinstance(g, torch.Tensor) else None for g in grads
                ],
                "largest": [forward["largest"], backward["largest"]],
                "kept": kept,
                "device": device,
            }
        )
    return data
