"""The mistakes notebook 07's judges recognise in a wrong answer, as data: each one's computation on the case's
inputs (float64) and the hint it earns. A judge compares a wrong answer with each and adds the hint of the one it
matches: the idea and where to look, never the line to write."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..cases import reference_attention, scores


@dataclass(frozen=True)
class Mistake:
    name: str
    compute: Callable[..., object]
    hint: str


def _softmax_rows(s: torch.Tensor) -> torch.Tensor:
    return torch.softmax(s, dim=-1)  # a row with every key hidden: NaN, as the learner's gives


def _masked(s: torch.Tensor, above: int) -> torch.Tensor:
    """s with −∞ where column − row ≥ above (above=1: the causal mask; 0: the diagonal hidden too)."""
    N = s.shape[-1]
    return s.masked_fill(torch.ones(N, N, dtype=torch.bool).triu(above), float("-inf"))


def _d(q: torch.Tensor) -> float:
    return 1 / math.sqrt(q.shape[-1])


# ------------------------------------------------------------------------------ forward: composed attention, O
FORWARD = (
    Mistake(
        "no scale",
        lambda q, k, v, causal: reference_attention(q * math.sqrt(q.shape[-1]), k, v, causal),
        "the scores are q·kᵀ scaled by 1/√d (d: the head dimension): without the scale softmax is too peaked.",
    ),
    Mistake(
        "scale 1/d",
        lambda q, k, v, causal: reference_attention(q / math.sqrt(q.shape[-1]), k, v, causal),
        "the scale is 1/√d, the inverse square root of the head dimension, not 1/d.",
    ),
    Mistake(
        "softmax over queries",
        lambda q, k, v, causal: torch.softmax(scores(q, k, causal), dim=-2) @ v,
        "each query's weights over the keys sum to one: softmax runs along the last axis of S (over keys).",
    ),
    Mistake(
        "diagonal masked",
        lambda q, k, v, causal: _softmax_rows(_masked(scores(q, k, False), 0)) @ v if causal else None,
        "causal: query i sees keys 0…i, itself included: only the entries strictly above the diagonal are −∞.",
    ),
    Mistake(
        "one key too many",
        lambda q, k, v, causal: _softmax_rows(_masked(scores(q, k, False), 2)) @ v if causal else None,
        "causal: query i may not see key i + 1: every entry above the diagonal is −∞, the first one too.",
    ),
    Mistake(
        "mask below",
        lambda q, k, v, causal: (
            _softmax_rows(
                scores(q, k, False).masked_fill(
                    torch.ones(q.shape[-2], q.shape[-2], dtype=torch.bool).tril(-1), float("-inf")
                )
            )
            @ v
            if causal
            else None
        ),
        "causal: a query sees the keys before it (columns ≤ its row); the mask hides the upper triangle, not the "
        "lower.",
    ),
)


# ------------------------------------------------------------------------------ backward by hand: dq, dk, dv


def _parts(q, k, v, do, causal):
    s = scores(q, k, causal)
    p = torch.softmax(s, dim=-1)
    return p, p @ v, do @ v.transpose(-2, -1)


def _grads(q, k, v, do, causal, ds_of, scale_q=1.0, scale_k=1.0, dv_of=None):
    p, o, dp = _parts(q, k, v, do, causal)
    ds = ds_of(p, o, dp, do, v)
    dq = ds @ k * _d(q) * scale_q
    dk = ds.transpose(-2, -1) @ q * _d(q) * scale_k
    dv = p.transpose(-2, -1) @ do if dv_of is None else dv_of(p, do)
    return dq, dk, dv


def _ds(p, o, dp, do, v):
    return p * (dp - (do * o).sum(-1, keepdim=True))


BACKWARD = (
    Mistake(
        "no −D",
        lambda q, k, v, do, c: _grads(q, k, v, do, c, lambda p, o, dp, do, v: p * dp),
        "softmax's backward subtracts each row's D = rowsum(dO ∘ O) from dP before the product with P: dS = "
        "P ∘ (dP − D). Without it the rows of dS do not sum to zero.",
    ),
    Mistake(
        "D from dO and V",
        lambda q, k, v, do, c: _grads(q, k, v, do, c, lambda p, o, dp, do, v: p * (dp - (do * v).sum(-1, True))),
        "D is rowsum(dO ∘ O), of the output O (it equals rowsum(P ∘ dP)), not of V.",
    ),
    Mistake(
        "D from dO alone",
        lambda q, k, v, do, c: _grads(q, k, v, do, c, lambda p, o, dp, do, v: p * (dp - do.sum(-1, True))),
        "D is rowsum(dO ∘ O): the product of dO with the output O, entry by entry, then summed along the row.",
    ),
    Mistake(
        "no scale in dQ and dK",
        lambda q, k, v, do, c: _grads(q, k, v, do, c, _ds, math.sqrt(q.shape[-1]), math.sqrt(q.shape[-1])),
        "S = Q Kᵀ·scale: the chain rule brings the scale into dQ and dK (dS is the gradient of S, not of Q Kᵀ).",
    ),
    Mistake(
        "scale twice in dQ and dK",
        lambda q, k, v, do, c: _grads(q, k, v, do, c, _ds, _d(q), _d(q)),
        "the scale enters dQ and dK once: if P was recomputed from scaled scores, dS already is the gradient of S.",
    ),
    Mistake(
        "no scale in dQ",
        lambda q, k, v, do, c: _grads(q, k, v, do, c, _ds, math.sqrt(q.shape[-1]), 1.0),
        "dQ = dS K·scale: the scale of the scores reaches dQ as it reaches dK.",
    ),
    Mistake(
        "no scale in dK",
        lambda q, k, v, do, c: _grads(q, k, v, do, c, _ds, 1.0, math.sqrt(q.shape[-1])),
        "dK = dSᵀ Q·scale: the scale of the scores reaches dK as it reaches dQ.",
    ),
    Mistake(
        "dV without the transpose",
        lambda q, k, v, do, c: _grads(q, k, v, do, c, _ds, dv_of=lambda p, do: p @ do),
        "O = P V, so dV = Pᵀ dO: row j of dV collects what key j gave each query (a column of P).",
    ),
    Mistake(
        "dK without the transpose",
        lambda q, k, v, do, c: (lambda g: (g[0], (_ds(*_parts(q, k, v, do, c), do, v) @ q) * _d(q), g[2]))(
            _grads(q, k, v, do, c, _ds)
        ),
        "S = Q Kᵀ: dK = dSᵀ Q (row j of dK gathers column j of dS), while dQ = dS K.",
    ),
)


# ------------------------------------------------------------------------------ the tiled forward: (O, L)


def tiled(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool,
    bq: int,
    bk: int,
    rescale_acc: bool = True,
    rescale_sum: bool = True,
    subtract_max: bool = True,
    base2: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The tiled forward with the online softmax, with one of its steps left out: what a learner's misses give."""
    N, scale = q.shape[-2], _d(q)
    o, lse = torch.zeros_like(q), torch.zeros(q.shape[:-1], dtype=q.dtype)
    for r0 in range(0, N, bq):
        rows = slice(r0, min(N, r0 + bq))
        qb = q[..., rows, :]
        m = torch.full(qb.shape[:-1], float("-inf"), dtype=q.dtype)
        total, acc = torch.zeros_like(m), torch.zeros_like(qb)
        for c0 in range(0, N, bk):
            cols = slice(c0, min(N, c0 + bk))
            s = qb @ k[..., cols, :].transpose(-2, -1) * scale
            if causal:
                r = torch.arange(rows.start, rows.stop)[:, None]
                c = torch.arange(cols.start, cols.stop)[None, :]
                s = s.masked_fill(c > r, float("-inf"))
            m_new = torch.maximum(m, s.amax(-1)) if subtract_max else torch.zeros_like(m)
            p = torch.exp(s - m_new[..., None]).nan_to_num(0.0)
            alpha = torch.exp(m - m_new).nan_to_num(0.0)
            total = (total * alpha if rescale_sum else total) + p.sum(-1)
            acc = (acc * alpha[..., None] if rescale_acc else acc) + p @ v[..., cols, :]
            m = m_new
        o[..., rows, :] = acc / total[..., None]
        lse[..., rows] = (m + torch.log(total)) / (math.log(2) if base2 else 1.0)
    return o, lse


TILED = (
    Mistake(
        "accumulator not rescaled",
        lambda q, k, v, c, bq, bk: tiled(q, k, v, c, bq, bk, rescale_acc=False),
        "when a key block raises a row's running maximum from m to m', what the accumulator holds was weighted "
        "against m: it must be multiplied by exp(m − m'), as the running sum is.",
    ),
    Mistake(
        "sum not rescaled",
        lambda q, k, v, c, bq, bk: tiled(q, k, v, c, bq, bk, rescale_sum=False),
        "when a key block raises a row's running maximum from m to m', the running sum was taken against m: "
        "multiply it by exp(m − m') before adding the block's terms (notebook 06's online log-sum-exp).",
    ),
    Mistake(
        "neither rescaled",
        lambda q, k, v, c, bq, bk: tiled(q, k, v, c, bq, bk, rescale_acc=False, rescale_sum=False),
        "the running sum and the accumulator were both weighted against the old maximum: when the maximum moves, "
        "both are multiplied by exp(m − m').",
    ),
    Mistake(
        "log-sum-exp in base 2",
        lambda q, k, v, c, bq, bk: tiled(q, k, v, c, bq, bk, base2=True),
        "L is the natural log-sum-exp of each row's scores (base e), what backward reads to recompute P = exp(S − L).",
    ),
)


# ------------------------------------------------------------------------------ the forward kernel: what masks miss


def _padded_keys(q, k, v, causal, bq, bk):
    """Keys at or beyond N loaded as zeros and not masked: each padding key scores 0 and adds v = 0."""
    N = k.shape[-2]
    extra = -N % bk
    if not extra:
        return None
    pad = torch.zeros(*k.shape[:-2], extra, k.shape[-1], dtype=k.dtype)
    s = scores(q, torch.cat([k, pad], -2), False)
    if causal:
        s = s.masked_fill(torch.ones(N, N + extra, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ torch.cat([v, pad], -2)


KERNEL = (
    Mistake(
        "padding keys counted",
        _padded_keys,
        "the last key block reaches past N: loaded as 0.0, those keys score 0 and take a share of the softmax. Give "
        "the scores of keys at or beyond N the value −∞ (masked loads alone do not).",
    ),
)
