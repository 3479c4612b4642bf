"""Reference answers to notebook 07's PyTorch exercises (as in the solution), for its tests."""

from __future__ import annotations

import math

import torch


def composed_attention(q, k, v, causal=False):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def saved_for_backward(attention, n, d=64):
    storages = {}

    def pack(t):
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    q, k, v = (torch.randn(1, n, d, requires_grad=True) for _ in range(3))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        attention(q, k, v)
    return sum(storages.values())


def _scores(q, k, causal):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return s


class AttentionByHand(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal=False):
        s = _scores(q, k, causal)
        lse = torch.logsumexp(s, dim=-1)
        o = torch.exp(s - lse[..., None]) @ v
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal = causal
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        p = torch.exp(_scores(q, k, ctx.causal) - lse[..., None])
        dv = p.transpose(-2, -1) @ do
        ds = p * (do @ v.transpose(-2, -1) - (do * o).sum(-1, keepdim=True))
        scale = 1 / math.sqrt(q.shape[-1])
        return ds @ k * scale, ds.transpose(-2, -1) @ q * scale, dv, None


def tiled_attention_forward(q, k, v, causal=False, block_q=16, block_k=16):
    n, scale = q.shape[-2], 1 / math.sqrt(q.shape[-1])
    o = torch.empty_like(q)
    lse = torch.empty(q.shape[:-1], dtype=q.dtype)
    for r0 in range(0, n, block_q):
        qb = q[..., r0 : r0 + block_q, :]
        rows = torch.arange(r0, r0 + qb.shape[-2])[:, None]
        m = torch.full(qb.shape[:-1], float("-inf"), dtype=q.dtype)
        total = torch.zeros_like(m)
        acc = torch.zeros_like(qb)
        end = min(n, r0 + block_q) if causal else n
        for c0 in range(0, end, block_k):
            kb, vb = k[..., c0 : c0 + block_k, :], v[..., c0 : c0 + block_k, :]
            s = qb @ kb.transpose(-2, -1) * scale
            if causal:
                s = s.masked_fill(torch.arange(c0, c0 + kb.shape[-2])[None, :] > rows, float("-inf"))
            m_new = torch.maximum(m, s.amax(-1))
            p = torch.exp(s - m_new[..., None])
            alpha = torch.exp(m - m_new)
            total = total * alpha + p.sum(-1)
            acc = acc * alpha[..., None] + p @ vb
            m = m_new
        o[..., r0 : r0 + block_q, :] = acc / total[..., None]
        lse[..., r0 : r0 + block_q] = m + torch.log(total)
    return o, lse


# the forward kernel as the probe records it (its text): what the kernel check runs
ATTENTION_FORWARD_KERNEL = """
def attention_forward_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, seq_len, scale,
                             CAUSAL: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr,
                             HEAD_DIM: tl.constexpr):
    block, head = tl.program_id(0), tl.program_id(1)
    rows = block * BLOCK_Q + tl.arange(0, BLOCK_Q)
    dims = tl.arange(0, HEAD_DIM)
    start = head * seq_len * HEAD_DIM
    q = tl.load(q_ptr + start + rows[:, None] * HEAD_DIM + dims[None, :], mask=rows[:, None] < seq_len, other=0.0)
    acc_dtype = tl.float64 if q.dtype == tl.float64 else tl.float32
    q = q.to(acc_dtype)
    m = tl.full([BLOCK_Q], float("-inf"), acc_dtype)
    l = tl.zeros([BLOCK_Q], acc_dtype)
    acc = tl.zeros([BLOCK_Q, HEAD_DIM], acc_dtype)
    end = tl.minimum(seq_len, (block + 1) * BLOCK_Q) if CAUSAL else seq_len
    for first in range(0, end, BLOCK_K):
        cols = first + tl.arange(0, BLOCK_K)
        at = start + cols[:, None] * HEAD_DIM + dims[None, :]
        k = tl.load(k_ptr + at, mask=cols[:, None] < seq_len, other=0.0).to(acc_dtype)
        v = tl.load(v_ptr + at, mask=cols[:, None] < seq_len, other=0.0).to(acc_dtype)
        s = tl.dot(q, tl.trans(k)) * scale
        keep = cols[None, :] < seq_len
        if CAUSAL:
            keep = keep & (cols[None, :] <= rows[:, None])
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m - m_new)
        l = l * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m = m_new
    o = acc / l[:, None]
    tl.store(o_ptr + start + rows[:, None] * HEAD_DIM + dims[None, :], o.to(o_ptr.dtype.element_ty),
             mask=rows[:, None] < seq_len)
    tl.store(lse_ptr + head * seq_len + rows, m + tl.log(l), mask=rows < seq_len)
"""


def kernel_record(name: str, text: str) -> dict:
    return {
        "entry": name,
        "functions": {name: text.strip() + "\n"},
        "globals": {"tl": {"kind": "module", "value": "triton.language"}},
    }
