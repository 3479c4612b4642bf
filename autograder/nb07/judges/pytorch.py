"""Notebook 07's judges of the exercises written in PyTorch: composed attention, the measurement of what autograd
saves, the backward by hand, the tiled forward."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ...judges import answers
from ...judges.function import draw_seed
from ...judges.verdict import Part, Verdict, verdict_of
from ...nb05.judges.common import index_list, wrong_entries
from ...registry import ProbeData, decides
from ..cases import (
    LOUD_SCALE,
    MEMORY_BLOCKS,
    SAVED_ATTENTIONS,
    attention_inputs,
    memory_inputs,
    reference_attention,
    reference_gradients,
    reference_lse,
    saved_inputs,
    tile_runs,
)
from .mistakes import BACKWARD, FORWARD, TILED, Mistake


def titled(titles: dict[str, str]) -> dict[str, Part]:
    return {name: Part(name, title=title) for name, title in titles.items()}


def close(got: Any, want: torch.Tensor, rtol: float = 1e-8, atol: float = 1e-10, equal_nan: bool = False) -> bool:
    return (
        isinstance(got, torch.Tensor)
        and got.shape == want.shape
        and bool(torch.allclose(got, want, rtol=rtol, atol=atol, equal_nan=equal_nan))
    )


def where_wrong(got: torch.Tensor, want: torch.Tensor, rtol: float = 1e-8, atol: float = 1e-10) -> str:
    """Which entries are wrong and by how much, in words (notebook 05's wrong_entries and index_list)."""
    bad, err = wrong_entries(got, want, rtol, atol)
    return f"{int(bad.sum())} of {bad.numel()} entries wrong: {index_list(bad, 3)}; largest error {err:.3g}"


def matched(
    mistakes: Sequence[Mistake],
    got: Any,
    *args: Any,
    pick: Callable[[Any], Any] = lambda out: out,
    rtol: float = 1e-7,
    atol: float = 1e-9,
) -> Mistake | None:
    """The first mistake whose computation on args gives `got` (picked out of its result by `pick`), within the
    tolerance of the answer's dtype."""
    for mistake in mistakes:
        out = mistake.compute(*args)
        if out is not None and close(got, pick(out), max(rtol, 1e-7), max(atol, 1e-9), equal_nan=True):
            return mistake
    return None


def _case_label(inputs: dict) -> str:
    return f"q of shape {tuple(inputs['q'].shape)}, causal={inputs['causal']}"


# --------------------------------------------------------------------------------------------- composed attention

COMPOSED_PARTS = {
    "forward": "softmax(q·kᵀ/√d)·v: the scale and the axis (every case)",
    "causal": "the causal mask (the causal cases)",
    "gradient": "gradients flow through it (autograd's dq, dk, dv)",
}
SCALE_OR_AXIS = ("no scale", "scale 1/d", "softmax over queries")


@decides("check_composed_attention", draw=draw_seed)
def judge_composed_attention(data: ProbeData, seed: int = 0, cases: int = 3, points: float = 3) -> Verdict:
    parts = titled(COMPOSED_PARTS)
    for case, got in enumerate(answers.per_case(data, range(cases))):
        inputs = attention_inputs(seed, case)
        q, k, v, causal = inputs["q"], inputs["k"], inputs["v"], inputs["causal"]
        out = answers.tensor(got.get("output"), f"the output of case {case + 1}", tuple(q.shape))
        want = reference_attention(q, k, v, causal)
        if not close(out, want):
            mistake = matched(FORWARD, out, q, k, v, causal)
            part = parts["causal"] if causal and (mistake is None or mistake.name not in SCALE_OR_AXIS) else None
            message = f"case {case + 1} ({_case_label(inputs)}): {where_wrong(out, want)}"
            if part is None or (mistake is None and parts["forward"].passed is False):
                parts["forward" if part is None else "causal"].fail(
                    message, mistake.hint if mistake else None,
                    **({} if part is None else {"same_mistake_as": "forward"}),
                )  # fmt: skip
            else:
                part.fail(message, mistake.hint if mistake else None)
            continue
        if "gradient_error" in got:
            parts["gradient"].fail(f"case {case + 1}: {got['gradient_error']}", _GRADIENT_HINT)
            continue
        grads = answers.listed(got.get("gradients"), f"the gradients of case {case + 1}")
        for name, g, want_g in zip("qkv", grads, reference_gradients(inputs)):
            if g is None or not close(answers.tensor(g, f"d{name}", tuple(want_g.shape)), want_g):
                parts["gradient"].fail(
                    f"case {case + 1}: autograd's d{name} through your function is "
                    + ("missing (not connected)" if g is None else where_wrong(g, want_g)),
                    _GRADIENT_HINT,
                )
    return verdict_of(list(parts.values()), points, "composed_attention")


_GRADIENT_HINT = (
    "compose PyTorch operations on q, k and v themselves: no .detach(), no .data, no NumPy, no in-place write into "
    "a tensor autograd saved."
)


# --------------------------------------------------------------------------------------------- saved bytes


def draw_saved(rng: random.Random, count: int) -> dict[str, Any]:
    return {"sizes": sorted(rng.sample(range(16, 300), count)), "d": rng.choice((8, 16, 32))}


SAVED_TITLES = {
    "softmax": "softmax(q·kᵀ/√d)·v",
    "causal": "its causal version",
    "by_hand_softmax": "a softmax written with exp and sum",
    "keeps_lse": "a Function that saves q, k, v, o and the log-sum-exps",
}
SAVED_PARTS = {
    "storages": "the bytes of every saved tensor, each storage once",
    "inputs": "the inputs autograd saves counted too",
}


def _storage_counts(attention, n: int, d: int) -> dict[str, int]:
    """What autograd keeps for backward of attention on (1, n, d) inputs, counted three ways: each storage once
    (right), each saved tensor's own bytes (a storage shared by several counted again), and without the inputs."""
    storages: dict[int, int] = {}
    tensors = 0
    q, k, v = saved_inputs(n, d)
    own = {t.untyped_storage().data_ptr() for t in (q, k, v)}

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal tensors
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        tensors += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        attention(q, k, v)
    right = sum(storages.values())
    return {
        "right": right,
        "per tensor": tensors,
        "without inputs": right - sum(b for p, b in storages.items() if p in own),
    }


SAVED_HINTS = {
    "per tensor": "several saved tensors can share one block of memory (a tensor and its transpose, a view): "
    "count each storage once, by its untyped_storage().data_ptr().",
    "without inputs": "inputs that autograd saves are kept alive for backward too: count them like any other "
    "saved tensor.",
}


@decides("check_saved_for_backward", draw=draw_saved)
def judge_saved_for_backward(
    data: ProbeData, sizes: Sequence[int] = (64, 128), attentions: Sequence[str] = tuple(SAVED_ATTENTIONS),
    d: int = 16, points: float = 2,
) -> Verdict:  # fmt: skip
    parts = titled(SAVED_PARTS)
    answers.entry(data, "the answers", list(attentions))
    measured = 0  # answers that are autograd's count, or a known miscount of it: what a measurement gives
    for name in attentions:
        got = [answers.integer(g, f"the bytes for {name}") for g in answers.listed(data[name], name)]
        if len(got) != len(sizes):
            raise answers.mismatch(f"{len(got)} answers for {name}, {len(sizes)} sizes")
        for n, bytes_ in zip(sizes, got):
            counts = _storage_counts(SAVED_ATTENTIONS[name], n, d)
            if bytes_ == counts["right"]:
                measured += 1
                continue
            how = next((k for k, v in counts.items() if k != "right" and v == bytes_), None)
            measured += how is not None
            message = (
                f"{SAVED_TITLES[name]}, n = {n}, d = {d}: you measured {bytes_} bytes; autograd keeps "
                f"{counts['right']} (each storage once, the inputs included)"
            )
            if how == "without inputs":
                parts["inputs"].fail(message, SAVED_HINTS[how])
            elif how == "per tensor":
                parts["storages"].fail(message, SAVED_HINTS[how])
            else:
                parts["storages"].fail(
                    message,
                    "pack every tensor autograd saves (saved_tensors_hooks) while attention(q, k, v) runs on fresh "
                    "inputs that require grad, and add up their storages' bytes.",
                )
                parts["inputs"].fail(message, same_mistake_as="storages")
    if not measured:  # numbers no measurement of these functions gives (a table of other sizes' answers)
        parts["inputs"].fail("no answer is what these functions keep, counted any way: nothing here was measured.")
    return verdict_of(list(parts.values()), points, "saved_for_backward")


# --------------------------------------------------------------------------------------------- by hand

BY_HAND_PARTS = {
    "forward": "forward: the attention output",
    "dv": "dV = Pᵀ·dO",
    "dq_dk": "dQ and dK through dS = P ∘ (dP − D), with the scale",
    "memory": "forward keeps q, k, v, O and the row log-sum-exps only (P recomputed in backward)",
    "interface": "backward's returns (one per input, None for causal) and dtypes",
}


@decides("check_attention_by_hand", draw=draw_seed)
def judge_attention_by_hand(data: ProbeData, seed: int = 0, cases: int = 2, points: float = 5) -> Verdict:
    parts = titled(BY_HAND_PARTS)
    runs = answers.per_case(data, range(cases + 2))
    inputs_of = [attention_inputs(seed, case) for case in range(cases)] + [memory_inputs(seed)]
    for i, (inputs, got) in enumerate(zip(inputs_of, runs)):
        label = f"case {i + 1}" if i < cases else "the long causal head"
        label += f" ({_case_label(inputs)})"
        _judge_by_hand_run(parts, inputs, got, label)
    _judge_by_hand_float32(parts, runs[-1])
    return verdict_of(list(parts.values()), points, "AttentionByHand")


def _judge_by_hand_run(parts: dict[str, Part], inputs: dict, got: dict, label: str) -> None:
    q, k, v, do, causal = (inputs[n] for n in ("q", "k", "v", "do", "causal"))
    out = answers.tensor(got.get("output"), f"the output of {label}", tuple(q.shape))
    want = reference_attention(q, k, v, causal)
    if not close(out, want):
        mistake = matched(FORWARD, out, q, k, v, causal)
        parts["forward"].fail(f"{label}: {where_wrong(out, want)}", mistake.hint if mistake else None)
    _judge_by_hand_memory(parts["memory"], inputs, got, label)
    returns = answers.listed(got.get("returns"), f"backward's returns for {label}")
    if len(returns) != 4 or returns[3].get("kind") != "none":
        parts["interface"].fail(
            f"{label}: backward returned {len(returns)} value(s); forward takes four inputs (q, k, v, causal), so "
            "backward returns four: three gradients and None for causal (a flag has no gradient)."
        )
    grads = [r.get("value") if r.get("kind") == "tensor" else None for r in returns[:3]]
    if len(grads) < 3 or any(g is None for g in grads):
        for part in ("dv", "dq_dk"):
            parts[part].fail(f"{label}: backward did not return a tensor for each of q, k and v.")
        return
    dq, dk, dv = (answers.tensor(g, f"d{n} of {label}", tuple(q.shape)) for g, n in zip(grads, "qkv"))
    want_q, want_k, want_v = reference_gradients(inputs)
    if parts["forward"].passed is False and not close(dv, want_v) and not close(dq, want_q):
        return  # a wrong forward (P itself) makes every gradient wrong: that part's idea, once
    if not close(dv, want_v):
        mistake = matched(BACKWARD, dv, q, k, v, do, causal, pick=lambda g: g[2])
        parts["dv"].fail(f"{label}: dV {where_wrong(dv, want_v)}", mistake.hint if mistake else None)
    if not (close(dq, want_q) and close(dk, want_k)):
        mistake = matched(BACKWARD, torch.stack([dq, dk]), q, k, v, do, causal, pick=lambda g: torch.stack(g[:2]))
        mistake = mistake or matched(BACKWARD, dq, q, k, v, do, causal, pick=lambda g: g[0])
        mistake = mistake or matched(BACKWARD, dk, q, k, v, do, causal, pick=lambda g: g[1])
        wrong = [f"d{n} {where_wrong(g, w)}" for n, g, w in (("Q", dq, want_q), ("K", dk, want_k)) if not close(g, w)]
        parts["dq_dk"].fail(f"{label}: " + "; ".join(wrong), mistake.hint if mistake else None)


def _judge_by_hand_memory(part: Part, inputs: dict, got: dict, label: str) -> None:
    q = inputs["q"]
    N, d = q.shape[-2], q.shape[-1]
    heads = q.numel() // (N * d)
    itemsize = q.element_size()
    allowed = (4 * N * d + N) * heads * itemsize  # q, k, v, O and L
    saved = answers.listed(got.get("saved"), f"what forward saved in {label}")
    attributes = answers.listed(got.get("attributes"), f"what forward kept on ctx in {label}")
    kept = sum(answers.integer(s.get("bytes"), "a saved storage's bytes") for s in saved)
    if attributes:
        names = ", ".join(dict.fromkeys(f"ctx.{a.get('attribute')}" for a in attributes))
        part.fail(
            f"{label}: forward keeps tensors as attributes of ctx ({names}): memory all the same, only invisible to "
            "autograd's saved-tensor hooks.",
            "keep tensors with ctx.save_for_backward(...) only.",
        )
    square = [s["shape"] for s in saved if _holds_every_heads_scores(s.get("shape", []), N, heads) and N != d]
    if square or kept > allowed + N * heads * itemsize:  # one more row vector allowed (a maximum and a sum apart)
        part.fail(
            f"{label}: forward keeps {kept} bytes for backward"
            + (f", among them a tensor of shape {tuple(square[0])}" if square else "")
            + f"; q, k, v, O and the row log-sum-exps take {allowed}.",
            "backward can recompute P = exp(S − L) from q, k and the saved log-sum-exps L: keep N numbers per "
            "row block, never the N×N scores or probabilities.",
        )


def _holds_every_heads_scores(shape: list, N: int, heads: int) -> bool:
    """An N×N matrix per head: the last two sizes N, and heads·N·N numbers (the row log-sum-exps of heads whose
    last batch size happens to be N end in N, N too, with N times fewer numbers; for N = 1 the two are alike, and
    only the bytes count)."""
    return N > 1 and len(shape) >= 2 and shape[-2:] == [N, N] and math.prod(shape) >= heads * N * N


def _judge_by_hand_float32(parts: dict[str, Part], got: dict) -> None:
    if "error" in got:
        parts["interface"].fail(f"with float32 inputs: {str(got['error']).splitlines()[0]}")
        return
    if got.get("dtype") != "float32":
        parts["interface"].fail(f"for float32 inputs forward returned {got.get('dtype')}: make outputs in q's dtype.")
    for r in answers.listed(got.get("returns"), "backward's float32 returns")[:3]:
        if r.get("kind") == "tensor" and r.get("dtype") != "float32":
            parts["interface"].fail(
                f"for float32 inputs backward returned a {r.get('dtype')} gradient: each gradient has its input's "
                "dtype."
            )
            break


# --------------------------------------------------------------------------------------------- tiled forward

TILED_PARTS = {
    "output": "O, query blocks against key blocks (blocks that do not divide N, unequal blocks)",
    "lse": "L, each row's log-sum-exp (base e)",
    "overflow": "float32 scores near 100: the running maximum subtracted",
    "memory": "never a tensor of N×N scores",
}


@decides("check_tiled_forward", draw=draw_seed)
def judge_tiled_forward(data: ProbeData, seed: int = 0, cases: int = 3, points: float = 4) -> Verdict:
    parts = titled(TILED_PARTS)
    runs = [(attention_inputs(seed, case), bq, bk) for case, bq, bk in tile_runs(cases)]
    memory = memory_inputs(seed)
    memory_runs = [({**memory, "causal": causal}, *MEMORY_BLOCKS) for causal in (False, True)]
    entries = answers.per_case(data, range(len(runs) + 1 + len(memory_runs)))
    for (inputs, bq, bk), got in zip(runs + memory_runs, entries[: len(runs)] + entries[len(runs) + 1 :]):
        _judge_tiled_run(parts, inputs, bq, bk, got)
    loud = attention_inputs(seed, 2, torch.float32)
    loud = {**loud, "q": loud["q"] * LOUD_SCALE, "causal": False}
    _judge_loud_run(parts, loud, entries[len(runs)])
    for (inputs, bq, bk), got in zip(memory_runs, entries[len(runs) + 1 :]):
        _judge_tiled_memory(parts["memory"], inputs, bq, bk, got)
    return verdict_of(list(parts.values()), points, "tiled_attention_forward")


def _judge_tiled_run(parts: dict[str, Part], inputs: dict, bq: int, bk: int, got: dict) -> None:
    q, k, v, causal = (inputs[n] for n in ("q", "k", "v", "causal"))
    label = f"{_case_label(inputs)}, block_q={bq}, block_k={bk}"
    o = answers.tensor(got.get("output"), "o", tuple(q.shape))
    lse = answers.tensor(got.get("lse"), "lse", tuple(q.shape[:-1]))
    want_o, want_lse = reference_attention(q, k, v, causal), reference_lse(q, k, causal)
    o_wrong = not close(o, want_o)
    if o_wrong:
        mistake = matched(TILED, o, q, k, v, causal, bq, bk, pick=lambda r: r[0])
        mistake = mistake or matched(FORWARD, o, q, k, v, causal)
        parts["output"].fail(f"{label}: O {where_wrong(o, want_o)}", mistake.hint if mistake else None)
    if not close(lse, want_lse):
        mistake = matched(TILED, lse, q, k, v, causal, bq, bk, pick=lambda r: r[1])
        message = f"{label}: L {where_wrong(lse, want_lse)}"
        if o_wrong and (mistake is None or mistake.name != "log-sum-exp in base 2"):
            parts["lse"].fail(message, same_mistake_as="output")  # O and L wrong alike: the output's mistake
        else:
            parts["lse"].fail(
                message, mistake.hint if mistake else "L = m + log(l): the running maximum plus the log of the sum."
            )


def _judge_loud_run(parts: dict[str, Part], inputs: dict, got: dict) -> None:
    q, k, v = (inputs[n].to(torch.float64) for n in "qkv")
    o = answers.tensor(got.get("output"), "o", tuple(q.shape))
    want = reference_attention(q, k, v, False)
    top = float((q @ k.mT).abs().max()) / q.shape[-1] ** 0.5
    # float32 scores of size `top` are off by about one float32 epsilon of it; through the softmax, O moves by that
    # much times V's size (what the overflow mistake gives is inf or NaN, far beyond)
    atol = 1e-5 + torch.finfo(torch.float32).eps * top * float(v.abs().max())
    if not close(o, want, 1e-4, atol):
        wrong = where_wrong(o, want, 1e-4, atol)
        message = f"float32 q of shape {tuple(q.shape)} whose scores reach {top:.0f}: O {wrong}"
        if parts["output"].passed is False:
            parts["overflow"].fail(message, same_mistake_as="output")
        else:
            parts["overflow"].fail(
                message,
                "exp of a score near 100 overflows float32: each block's exponentials are taken against the running "
                "maximum (exp(s − m)), never against zero.",
            )


def _judge_tiled_memory(part: Part, inputs: dict, bq: int, bk: int, got: dict) -> None:
    q = inputs["q"]
    N, d = q.shape[-2], q.shape[-1]
    largest = answers.integer(got.get("largest"), "the largest allocation")
    allowed = 2 * max(N * d, bq * bk, bq * d) * q.element_size()
    if largest > allowed:
        part.fail(
            f"{_case_label(inputs)}, blocks {bq}×{bk}: the largest block of memory PyTorch allocated is {largest} "
            f"bytes; N×N scores take {N * N * q.element_size()}, one head's q {N * d * q.element_size()}.",
            "hold one block of scores at a time (block_q × block_k), and for each query block only its running "
            "maximum, sum and accumulator.",
        )
