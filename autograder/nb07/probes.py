"""Notebook 07's probes: the only code of its checks that runs in the grading sandbox."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from ..feedback import CheckFailed
from ..nb05.cases import GUARD_VALUE
from ..nb05.probes import backward_of, call_kernel, course_kernels, function_apply, kernel_launcher
from ..nb06.probes import kept_on_ctx, largest_allocation, outside, twice
from ..probes import launch_plans, launches, triton_kernels
from ..probes.call import call_learner
from ..probes.memory_watch import Spans, program_index, watching
from ..registry import ProbeData
from .cases import (
    BACKWARD_CASES,
    FUNCTION_CASES,
    LOUD_SCALE,
    MEMORY_BLOCKS,
    MEMORY_CASE,
    SAVED_ATTENTIONS,
    attention_inputs,
    backward_inputs,
    backward_runs,
    first_costly_key,
    function_inputs,
    function_runs,
    kernel_inputs,
    memory_inputs,
    tile_runs,
)


def record_kernel(kernel: Any, **params: Any) -> ProbeData:
    """The kernel checks' probe: the kernel's text (triton_kernels.record); the judges run it on `params`' cases."""
    return triton_kernels.record(kernel)


# as imported, before any learner code runs
_saved_tensors_hooks = torch.autograd.graph.saved_tensors_hooks


def _plain(value: Any, what: str, shape: tuple) -> torch.Tensor:
    """A learner's tensor as float64 CPU data, after checking it is a tensor of `shape`."""
    if not isinstance(value, torch.Tensor):
        raise CheckFailed(f"{what} should be a tensor of shape {shape}; it is a {type(value).__name__}.")
    if tuple(value.shape) != tuple(shape):
        raise CheckFailed(f"{what} should have shape {tuple(shape)}; it has shape {tuple(value.shape)}.")
    return value.detach().to("cpu", torch.float64).clone()


def _leaves(inputs: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return tuple(inputs[n].detach().clone().requires_grad_() for n in "qkv")  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------- composed attention


def probe_composed_attention(obj: Any, seed: int = 0, cases: int = 3, points: float | None = None) -> ProbeData:
    """composed_attention(q, k, v, causal) on each case (float64), and the gradients autograd gives through it."""
    data = []
    for case in range(cases):
        inputs = attention_inputs(seed, case)
        q, k, v = _leaves(inputs)
        shape = tuple(inputs["q"].shape)
        call = f"composed_attention(q, k, v, causal={inputs['causal']}) for q of shape {shape}"
        out = call_learner(obj, q, k, v, inputs["causal"], name="composed_attention", call=call)
        entry: dict[str, Any] = {"output": _plain(out, f"`{call}`", shape)}
        if out.grad_fn is None:
            entry["gradient_error"] = "its output has no grad_fn: it is not connected to q, k and v"
        else:
            try:
                grads = torch.autograd.grad(out, (q, k, v), inputs["do"], allow_unused=True)
                entry["gradients"] = [None if g is None else g.detach().clone() for g in grads]
            except RuntimeError as error:
                entry["gradient_error"] = str(error).splitlines()[0][:300]
        data.append(entry)
    return data


# --------------------------------------------------------------------------------------------- saved bytes


def probe_saved_for_backward(
    obj: Any,
    sizes: Sequence[int] = (64, 128),
    attentions: Sequence[str] = tuple(SAVED_ATTENTIONS),
    d: int = 16,
    points: float | None = None,
) -> ProbeData:
    """saved_for_backward(attention, n, d) for each of the course's attention functions and each n: an int each."""
    data = {}
    for name in attentions:
        answers = []
        for n in sizes:
            call = f"saved_for_backward(<{name} attention>, {n}, {d})"
            got = call_learner(obj, SAVED_ATTENTIONS[name], n, d, name="saved_for_backward", call=call)
            if isinstance(got, bool) or not isinstance(got, int):
                raise CheckFailed(f"`{call}` should return a number of bytes (an int); it returned {got!r}.")
            answers.append(got)
        data[name] = answers
    return data


# --------------------------------------------------------------------------------------------- by hand


def _saved_while(apply: Any, args: tuple, name: str) -> tuple[Any, list[dict]]:
    """(output, what forward saved: shape, bytes of its storage, whether it is an input's memory)."""
    own = {t.untyped_storage().data_ptr() for t in args if isinstance(t, torch.Tensor)}
    saved: dict[int, dict] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr = t.untyped_storage().data_ptr()
        saved.setdefault(ptr, {"shape": list(t.shape), "bytes": t.untyped_storage().nbytes(), "input": ptr in own})
        return t

    with _saved_tensors_hooks(pack, lambda t: t):
        out = call_kernel(apply, *args, name=name)
    return out, list(saved.values())


def _returns(grads: Any) -> list:
    grads = grads if isinstance(grads, tuple) else (grads,)
    return [
        {"kind": "tensor", "shape": list(g.shape), "dtype": str(g.dtype).replace("torch.", ""), "value": g.detach()
         .to("cpu", torch.float64).clone()} if isinstance(g, torch.Tensor)
        else {"kind": "none" if g is None else type(g).__name__}
        for g in grads
    ]  # fmt: skip


def probe_attention_by_hand(obj: Any, seed: int = 0, cases: int = 2, points: float | None = None) -> ProbeData:
    """AttentionByHand.apply(q, k, v, causal) on each case (float64), then on the memory case: the output, what
    forward saved (and kept on ctx), and what backward returned for the case's grad_output, called through the node
    as autograd's engine calls it. A float32 run: the dtypes."""
    name = getattr(obj, "__name__", "AttentionByHand")
    apply = function_apply(obj, name)
    runs = [(attention_inputs(seed, case), f"case {case + 1}") for case in range(cases)]
    batch, N, d = MEMORY_CASE
    runs.append((memory_inputs(seed), f"one head of N = {N}, d = {d}"))
    data = []
    for inputs, label in runs:
        data.append(_by_hand_run(apply, name, inputs, label))
    f32 = {n: t.to(torch.float32) if isinstance(t, torch.Tensor) else t for n, t in attention_inputs(seed, 0).items()}
    try:
        data.append(_by_hand_run(apply, name, f32, "float32"))
    except CheckFailed as failure:
        data.append({"error": str(failure)})
    return data


def _by_hand_run(apply: Any, name: str, inputs: dict, label: str) -> dict:
    q, k, v = _leaves(inputs)
    out, saved = _saved_while(apply, (q, k, v, inputs["causal"]), f"{name}.forward")
    shape = tuple(inputs["q"].shape)
    entry: dict[str, Any] = {
        "label": label,
        "output": _plain(out, f"`{name}.apply(q, k, v, causal)` ({label})", shape),
        "dtype": str(out.dtype).replace("torch.", ""),
        "saved": saved,
    }
    if out.grad_fn is None:
        raise CheckFailed(f"`{name}.apply(q, k, v, causal)` returned a tensor without a grad_fn ({label}).")
    entry["attributes"] = kept_on_ctx(out.grad_fn, (q, k, v))
    entry["returns"] = _returns(backward_of(out.grad_fn, inputs["do"].clone(), name=f"{name}.backward"))
    return entry


# --------------------------------------------------------------------------------------------- tiled forward


def probe_tiled_forward(obj: Any, seed: int = 0, cases: int = 3, points: float | None = None) -> ProbeData:
    """tiled_attention_forward(q, k, v, causal, block_q, block_k) -> (o, lse) on each case's run, on a float32 case
    of loud scores, and on the memory case (causal and not), with the largest block of memory PyTorch allocated."""
    runs = [(attention_inputs(seed, case), bq, bk) for case, bq, bk in tile_runs(cases)]
    loud = attention_inputs(seed, 2, torch.float32)
    runs.append(({**loud, "q": loud["q"] * LOUD_SCALE, "causal": False}, 8, 8))
    memory = memory_inputs(seed)
    runs += [({**memory, "causal": causal}, *MEMORY_BLOCKS) for causal in (False, True)]
    data = []
    for inputs, bq, bk in runs:
        q, k, v = (inputs[n].clone() for n in "qkv")
        shape = tuple(q.shape)
        call = f"tiled_attention_forward(q, k, v, causal={inputs['causal']}, block_q={bq}, block_k={bk})"
        with largest_allocation() as box:
            got = call_learner(obj, q, k, v, inputs["causal"], bq, bk, name="tiled_attention_forward", call=call)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise CheckFailed(f"`{call}` should return two tensors, (o, lse); it returned {type(got).__name__}.")
        data.append(
            {
                "output": _plain(got[0], f"o of `{call}` for q of shape {shape}", shape),
                "lse": _plain(got[1], f"lse of `{call}` for q of shape {shape}", shape[:-1]),
                "largest": int(box["largest"]),
            }
        )
    return data


# --------------------------------------------------------------------------------------------- the forward kernel
# q, k, v, O and L sit in buffers of one spare head before and after theirs, NaN in the inputs' spare heads (first
# run) and GUARD_VALUE in the outputs': a kernel that reads or writes at the wrong offset lands in memory the probe
# owns. In the interpreter every load and store is seen (memory_watch), per program: each (query block, head) may
# read its own query rows and its head's keys and values, and store its own rows of O and L; in a causal case, a
# read of a key block wholly above its diagonal is counted apart (the loop's bound).


def _guarded(t: torch.Tensor, fill: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(buffer, view): t's heads in a buffer with one spare head before and after them, holding `fill`."""
    buffer = torch.full((t.shape[0] + 2, *t.shape[1:]), fill, dtype=t.dtype, device=t.device)
    buffer[1:-1] = t
    return buffer, buffer[1:-1]


def probe_forward_kernel(kernel: Any, cases: Sequence[Any], seed: int = 0, points: float | None = None) -> ProbeData:
    """kernel[(cdiv(N, BLOCK_Q), heads)](q, k, v, o, lse, N, scale, CAUSAL=, BLOCK_Q=, BLOCK_K=, HEAD_DIM=d) for each
    case: O and L written, guard entries overwritten, whether the inputs changed, and what the watch saw."""
    name = getattr(kernel, "__name__", None) or getattr(getattr(kernel, "fn", None), "__name__", "the kernel")
    launcher, device, context = kernel_launcher(kernel, name)
    data = []
    for case in cases:
        heads, N, d, causal, bq, bk, dtype = case
        inputs = {n: t.to(device) for n, t in kernel_inputs(seed, case).items() if isinstance(t, torch.Tensor)}
        acc = torch.float64 if dtype == "float64" else torch.float32
        blocks = -(-N // bq)

        def run(fill: float, inputs=inputs, case=case, acc=acc, blocks=blocks) -> dict:
            heads, N, d, causal, bq, bk, dtype = case
            (q_buf, q), (k_buf, k), (v_buf, v) = (_guarded(inputs[n], fill) for n in "qkv")
            o_buf, o = _guarded(torch.full_like(inputs["q"], GUARD_VALUE), GUARD_VALUE)
            lse_buf, lse = _guarded(torch.full((heads, N), GUARD_VALUE, dtype=acc, device=device), GUARD_VALUE)
            before = [b.clone() for b in (q_buf, k_buf, v_buf)]
            programs = {
                program_index(b, h, grid=(blocks, heads)): (h, slice(b * bq, min(N, (b + 1) * bq)), b)
                for h in range(heads)
                for b in range(blocks)
            }
            reads = Spans.per_program({p: [q[h, rows], k[h], v[h]] for p, (h, rows, _) in programs.items()})
            writes = Spans.per_program({p: [o[h, rows], lse[h, rows]] for p, (h, rows, _) in programs.items()})
            costly = None
            if causal:
                costly = Spans.per_program(
                    {p: [k[h, first_costly_key(b, bq, bk) :], v[h, first_costly_key(b, bq, bk) :]]
                     for p, (h, _, b) in programs.items()}
                )  # fmt: skip
            handed = [q_buf, k_buf, v_buf, o_buf, lse_buf]
            with context(), watching(handed, reads=reads, writes=writes, costly=costly) as seen:
                call_kernel(
                    lambda *a: launcher[(blocks, heads)](
                        *a, CAUSAL=causal, BLOCK_Q=bq, BLOCK_K=bk, HEAD_DIM=d
                    ),
                    q, k, v, o, lse, N, 1 / math.sqrt(d),
                    name=name,
                )  # fmt: skip
            guards = sum(int((b[[0, -1]] != GUARD_VALUE).sum()) for b in (o_buf, lse_buf))
            return {
                **outside(seen),
                "costly_reads": seen.get("reads_costly"),
                "output": o.to("cpu", torch.float64).clone(),
                "lse": lse.to("cpu", torch.float64).clone(),
                "written_outside": guards,
                "inputs_changed": not all(
                    torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0)) for a, b in zip(before, (q_buf, k_buf, v_buf))
                ),
            }

        data.append(twice(run, ("output", "lse")))
    return {"launches": data}


# --------------------------------------------------------------------------------------------- the backward
# flash_backward(q, k, v, o, lse, do, causal) runs here only to describe its launches (probes/launch_plans.py); the
# judges replay them from the kernels' text in the kernel runner (replay_backward), where what they compute counts.

BACKWARD_INPUTS = ("q", "k", "v", "o", "lse", "do")


def probe_flash_backward(obj: Any, cases: Sequence[Any] = (), seed: int = 0, points: float | None = None) -> ProbeData:
    """For each case (the visible ones when none are given), and the long head: the plan of the launches
    flash_backward made, and the largest block of memory PyTorch allocated meanwhile."""
    data = []
    for case in backward_runs(cases or BACKWARD_CASES):
        heads, N, d, causal, dtype = case
        inputs = backward_inputs(seed, case)
        tensors = {n: inputs[n].clone() for n in BACKWARD_INPUTS}
        call = f"flash_backward(q, k, v, o, lse, do, causal={causal}) for q of shape {(heads, N, d)}, {dtype}"
        with largest_allocation() as box, launch_plans.recording(tensors) as plan:
            got = call_learner(obj, *tensors.values(), causal, name="flash_backward", call=call)
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            raise CheckFailed(f"`{call}` should return three tensors, (dq, dk, dv); it returned {type(got).__name__}.")
        for name, g in zip(("dq", "dk", "dv"), got):
            if not isinstance(g, torch.Tensor) or tuple(g.shape) != (heads, N, d):
                raise CheckFailed(f"`{call}`: {name} should be a tensor of shape {(heads, N, d)}.")
        plan.returned(got)
        if not plan.launches:
            raise CheckFailed(f"`{call}` launched no Triton kernel: the backward's work is the kernels' to do.")
        data.append({"plan": plan.data(), "largest": int(box["largest"])})
    return data


def replay_backward(kernel: Any, plan: dict, case: Sequence[Any], seed: int = 0) -> ProbeData:
    """In the kernel runner: the plan's launches replayed with its kernels rebuilt from their text, on the case's
    inputs made afresh and its buffers started as the plan says (the judge chooses: judges/buffers.py); the
    gradients they left in the returned views, and what the watch saw of each launch."""
    from coursetools.kernel_text import rebuild

    kernels = {name: rebuild(record, interpreted=True) for name, record in plan["records"].items()}
    inputs = {n: t for n, t in backward_inputs(seed, tuple(case)).items() if isinstance(t, torch.Tensor)}

    def watch(storages: list) -> Any:
        return watching(storages, reads=Spans.of(storages), races=True)

    values, seen = launch_plans.replay(plan, kernels, inputs, watch)
    return {"launches": [{"returns": values, "seen": seen}]}


# --------------------------------------------------------------------------------------------- the Function
# FlashAttention is graded around the course's kernels: `attention_forward_kernel` and `flash_backward` are the
# course's while it runs (autograder/course_kernels.py), so a kernel mistake costs its own exercise only; their
# launches are computed, and logged, by the launcher (the grader's while a submission is graded).

FLASH_NAMES = ("attention_forward_kernel", "flash_backward")


def probe_flash_attention(obj: Any, cases: Sequence[Any] = (), seed: int = 0, points: float | None = None) -> ProbeData:
    """FlashAttention.apply(q, k, v, causal) on each run: the output and its layout, what forward saved and kept on
    ctx, backward's raw returns for the run's grad_output and their layouts, and the numbers of the launches each
    made."""
    name = getattr(obj, "__name__", "FlashAttention")
    apply = function_apply(obj, name)
    with course_kernels(obj, FLASH_NAMES) as bound:
        runs = [
            _flash_run(apply, name, function_inputs(seed, case, transposed=kind == "transposed"), kind)
            for case, kind in function_runs(cases or FUNCTION_CASES)
        ]
    return {"bound": bound, "runs": runs}


def _flash_run(apply: Any, name: str, inputs: dict, kind: str) -> dict:
    needs = (True, False, False) if kind == "only q" else (True, True, True)
    q, k, v = (inputs[n].clone() for n in "qkv")  # a clone keeps the strides: transposed views stay so
    for t, need in zip((q, k, v), needs):
        t.requires_grad_(need)
    with launches.window() as forward:
        out, saved = _saved_while(apply, (q, k, v, inputs["causal"]), f"{name}.forward")
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(q.shape) or out.grad_fn is None:
        raise CheckFailed(
            f"`{name}.apply(q, k, v, causal)` should return the attention output, shape {tuple(q.shape)}, with a "
            "grad_fn."
        )
    entry: dict[str, Any] = {
        "output": out.detach().to("cpu", torch.float64).clone(),
        "output_layout": launches.layout(out),
        "saved": saved,
        "attributes": kept_on_ctx(out.grad_fn, (q, k, v)),
    }
    try:
        with launches.window() as backward:
            grads = backward_of(out.grad_fn, inputs["do"].clone(), f"{name}.backward")
        grads = grads if isinstance(grads, tuple) else (grads,)
        entry["returns"] = _returns(grads)
        entry["grad_layouts"] = [launches.layout(g) for g in grads]
    except CheckFailed as failure:
        backward, entry["backward_error"] = launches.Window(), str(failure)
    entry["launch_ids"] = {"forward": forward.numbers, "backward": backward.numbers}
    return entry
