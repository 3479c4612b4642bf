"""Notebook 07's probes: the only code of its checks that runs in the grading sandbox."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..feedback import CheckFailed
from ..nb05.probes import backward_of, call_kernel, function_apply
from ..nb06.probes import kept_on_ctx, largest_allocation
from ..probes.call import call_learner
from ..registry import ProbeData
from .cases import (
    LOUD_SCALE,
    MEMORY_BLOCKS,
    MEMORY_CASE,
    SAVED_ATTENTIONS,
    attention_inputs,
    memory_inputs,
    tile_runs,
)

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
