"""Checks of notebook 06 (the capstone: a fused cross-entropy in Triton): the names its test cells import, and their
probes.

A kernel probe launches the learner's kernel as notebook 05's do (compiled on a GPU, else in Triton's interpreter)
on logits laid out in rows of stride V + BLOCK_V whose spare columns hold NaN: a kernel that reads past its row's end (a
missing or wrong mask on the last chunk) gets NaN into its sum. Its output sits between guard zones. The judges
(:mod:`autograder.judges.nb06`) recompute every reference in float64 and decide, part by part. The Function
probes count the learner's Triton launches (notebook 05's counting_launches), record what forward saved, and, for
the linear cross-entropy, the largest new memory any operation made (a dispatch mode over every operation).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .feedback import CheckFailed
from .nb05 import (
    GUARD_VALUE,
    backward_of,
    call_kernel,
    counting_launches,
    function_apply,
    kernel_device,
    kernel_launcher,
)
from .probes.call import call_learner
from .registry import NotebookChecks, ProbeData, show_verdict

# as imported, before any learner code runs (replaced later, they are flagged, and do not answer for the probe)
_saved_tensors_hooks, _no_grad = torch.autograd.graph.saved_tensors_hooks, torch.no_grad

GUARD = 16  # guard entries before and after an output


def row_case(seed: int, rows: int, V: int, dtype: str, peak_at: int) -> torch.Tensor:
    """Logits whose every row peaks at column peak_at, one above the row's other values (so where the maximum is
    decides whether a running sum must be rescaled, and every entry still counts in the sum); in float32, a peak of
    100 in the first row, whose exp overflows float32."""
    gen = torch.Generator().manual_seed(1_000_003 * seed + 1009 * rows + 31 * V + peak_at)
    x = 3 * torch.randn(rows, V, generator=gen, dtype=torch.float64)
    x[:, peak_at] = x.max(dim=1).values + 1.0
    if dtype != "float64":
        x[0, peak_at] = 100.0
    return x.to(getattr(torch, dtype))


def padded_rows(
    x: torch.Tensor, device: str, block: int, fill: float = float("nan")
) -> tuple[torch.Tensor, torch.Tensor]:
    """(buffer, view): the rows of x in a buffer of row stride V + block whose other entries hold `fill`, with V + 1
    spare rows after them, so that a kernel reading or writing past a row's end, or along the wrong axis, stays in
    memory the probe owns (and, for NaN, poisons what it computes)."""
    rows, V = x.shape
    buffer = torch.full((rows + V + 1, V + block), fill, dtype=x.dtype, device=device)
    buffer[:rows, :V] = x
    return buffer, buffer[:rows]


def probe_row_lse(kernel: Any, cases: Sequence[Any], seed: int = 0, points: float | None = None) -> ProbeData:
    """kernel[(rows,)](logits_ptr, lse_ptr, row_stride, V, BLOCK_V=block) for each (rows, V, block, dtype, peak_at):
    the values written, how many guard entries were overwritten, whether the logits changed."""
    name = getattr(kernel, "__name__", None) or getattr(getattr(kernel, "fn", None), "__name__", "row_lse_kernel")
    launcher, device, context = kernel_launcher(kernel, name)
    data = []
    for rows, V, block, dtype, peak_at in cases:
        x = row_case(seed, rows, V, dtype, peak_at)
        whole, logits = padded_rows(x, device, block)
        before = whole.clone()
        out_buf = torch.full((rows + 2 * GUARD,), GUARD_VALUE, dtype=x.dtype, device=device)
        out = out_buf[GUARD : GUARD + rows]
        with context():
            call_kernel(lambda *a: launcher[(rows,)](*a, BLOCK_V=block), logits, out, logits.stride(0), V, name=name)
        outside = (out_buf[:GUARD] != GUARD_VALUE).sum() + (out_buf[GUARD + rows :] != GUARD_VALUE).sum()
        data.append(
            {
                "values": out.to(torch.float64).cpu().clone(),
                "written_outside": int(outside),
                "inputs_changed": not torch.equal(whole.nan_to_num(7.0), before.nan_to_num(7.0)),
            }
        )
    return data


def ce_targets(seed: int, rows: int, V: int, ignored: int, ignore_index: int) -> torch.Tensor:
    """Targets of the rows (int64); the last `ignored` rows carry ignore_index."""
    gen = torch.Generator().manual_seed(7919 * seed + 13 * rows + V)
    target = torch.randint(0, V, (rows,), generator=gen)
    if ignored:
        target[rows - ignored :] = ignore_index
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
        whole, logits = padded_rows(x, device, block)
        target = ce_targets(seed, rows, V, ignored, ignore_index).to(device)
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
        data.append(
            {
                "loss": outputs["loss"][1].to(torch.float64).cpu().clone(),
                "lse": outputs["lse"][1].to(torch.float64).cpu().clone(),
                "written_outside": outside,
                "inputs_changed": not (
                    torch.equal(whole.nan_to_num(7.0), before.nan_to_num(7.0)) and torch.equal(target, target_before)
                ),
            }
        )
    return data


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
        whole, logits = padded_rows(x, device, block)
        target = ce_targets(seed, rows, V, ignored, ignore_index).to(device)
        lse = (torch.logsumexp(x.to(torch.float64), dim=1) + lse_shift).to(x.dtype).to(device)
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
        data.append(
            {
                "grad": grad[:, :V].to(torch.float64).cpu().clone(),
                "written_past_V": int(written.sum() - written[:rows, :V].sum()),
                "inputs_changed": not all(
                    torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0)) for a, b in zip(after, inputs_before)
                ),
            }
        )
    return data


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
    """online_logsumexp(x, chunk) for each (rows, V, chunk, peak_at), float64: one value per row."""
    data = []
    for rows, V, chunk, peak_at in cases:
        x = row_case(seed, rows, V, "float64", peak_at)
        got = call_learner(
            online_logsumexp, x.clone(), chunk, name="online_logsumexp", call=f"online_logsumexp(<{rows}×{V}>, {chunk})"
        )
        data.append(_learner_tensor(got, "online_logsumexp", (rows,)))
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
        launches = {"n": 0}
        with counting_launches(launches):
            grads = backward_of(loss.grad_fn, torch.full_like(loss, grad_output), name)
        grads = grads if isinstance(grads, tuple) else (grads,)
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
                "launches": [forward_launches, launches["n"]],
                "returned": [
                    g.detach().to("cpu", torch.float64).clone() if isinstance(g, torch.Tensor) else None for g in grads
                ],
                "moved": moved,
            }
        )
    return data


# --------------------------------------------------------------------------------------------- memory and bf16


def saved_problem(name: str, seed: int) -> tuple[Any, tuple[torch.Tensor, ...]]:
    """(fn, inputs) of a problem whose saved memory the learner's measurement reports."""
    gen = torch.Generator().manual_seed(97 * seed + len(name))
    x = torch.randn(6, 40, generator=gen, dtype=torch.float64, requires_grad=True)
    if name == "exp":  # saves its output: new memory
        return torch.exp, (x,)
    if name == "mul":  # saves both inputs: nothing new
        y = torch.randn(6, 40, generator=gen, dtype=torch.float64, requires_grad=True)
        return torch.mul, (x, y)
    if name == "view_sin":  # saves a view of its input: the input's memory
        return (lambda t: torch.sin(t.view(-1))), (x,)
    if name == "composed_ce":  # log_softmax's output, saved by log_softmax and by nll_loss: one N×V block
        target = torch.randint(0, 40, (6,), generator=gen)
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
    loss = call_kernel(apply, logits, target.to(logits.device), -100, name=name)
    if not isinstance(loss, torch.Tensor) or loss.grad_fn is None:
        raise CheckFailed(f"`{name}.apply` on bfloat16 logits should return the loss with a grad_fn.")
    (grad,) = torch.autograd.grad(loss, logits)
    return {
        "loss": float(loss.detach()),
        "loss_dtype": str(loss.dtype).removeprefix("torch."),
        "grad": grad.detach().to("cpu", torch.float64).clone(),
        "grad_dtype": str(grad.dtype).removeprefix("torch."),
    }


# --------------------------------------------------------------------------------------------- linear cross-entropy


class LargestNewTensor(TorchDispatchMode):
    """While active: the bytes of the largest new memory any PyTorch operation made (inputs' memory and views of it
    not counted). Kernel outputs are allocated by PyTorch too (torch.empty), so they are seen."""

    def __init__(self, inputs: Sequence[torch.Tensor]):
        super().__init__()
        self.own = {t.untyped_storage().data_ptr() for t in inputs}
        self.largest = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in self.own:
                self.largest = max(self.largest, t.untyped_storage().nbytes())
        return out


def linear_case(seed: int, N: int, D: int, V: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(4099 * seed + 31 * N + V)
    hidden = torch.randn(N, D, generator=gen, dtype=torch.float64)
    weight = torch.randn(V, D, generator=gen, dtype=torch.float64) / D**0.5
    return hidden, weight, torch.randint(0, V, (N,), generator=gen)


def probe_linear_ce(obj: Any, cases: Sequence[Any], seed: int = 0, points: float | None = None) -> ProbeData:
    """LinearCrossEntropy.apply(hidden, weight, target, chunk) for each (N, D, V, chunk, grad_output), float64: the
    loss, backward's raw return, and the largest new memory any operation made in forward and in backward."""
    name = getattr(obj, "__name__", "your Function")
    apply = function_apply(obj, name)
    data = []
    for N, D, V, chunk, grad_output in cases:
        hidden, weight, target = linear_case(seed, N, D, V)
        h, w = hidden.clone().requires_grad_(), weight.clone().requires_grad_()
        watch = LargestNewTensor([h, w, target])
        with watch:
            loss = call_learner(
                apply, h, w, target, chunk, name=name, call=f"{name}.apply(hidden, weight, target, {chunk})"
            )
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or loss.grad_fn is None:
            raise CheckFailed(
                f"`{name}.apply(hidden, weight, target, chunk)` should return the mean loss, with a grad_fn."
            )
        forward_largest, watch.largest = watch.largest, 0
        with watch:
            grads = backward_of(loss.grad_fn, torch.full_like(loss, grad_output), name)
        grads = grads if isinstance(grads, tuple) else (grads,)
        data.append(
            {
                "loss": float(loss.detach()),
                "returned": [
                    g.detach().to("cpu", torch.float64).clone() if isinstance(g, torch.Tensor) else None for g in grads
                ],
                "largest": [forward_largest, watch.largest],
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
