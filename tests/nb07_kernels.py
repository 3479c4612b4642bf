"""The reference Triton kernels of notebook 07 (as in its solution) and a few wrong ones, for its tests: kernels
must live in a file for Triton to read their text. Imported with TRITON_INTERPRET=1 (the interpreter)."""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def attention_forward_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    lse_ptr,
    seq_len,
    scale,
    CAUSAL: tl.constexpr,
    BLOCK_Q: tl.constexpr,
    BLOCK_K: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    block, head = tl.program_id(0), tl.program_id(1)
    rows = block * BLOCK_Q + tl.arange(0, BLOCK_Q)
    dims = tl.arange(0, HEAD_DIM)
    start = head * seq_len * HEAD_DIM
    q = tl.load(q_ptr + start + rows[:, None] * HEAD_DIM + dims[None, :], mask=rows[:, None] < seq_len, other=0.0)
    acc_dtype = tl.float64 if q.dtype == tl.float64 else tl.float32
    q = q.to(acc_dtype)
    m = tl.full([BLOCK_Q], float("-inf"), acc_dtype)
    total = tl.zeros([BLOCK_Q], acc_dtype)
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
        total = total * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m = m_new
    o = acc / total[:, None]
    tl.store(
        o_ptr + start + rows[:, None] * HEAD_DIM + dims[None, :],
        o.to(o_ptr.dtype.element_ty),
        mask=rows[:, None] < seq_len,
    )
    tl.store(lse_ptr + head * seq_len + rows, m + tl.log(total), mask=rows < seq_len)


def flash_forward(q, k, v, causal=False, BLOCK_Q=16, BLOCK_K=16):
    BH, N, D = q.shape
    o = torch.empty_like(q)
    lse = torch.empty(BH, N, dtype=torch.float64 if q.dtype == torch.float64 else torch.float32, device=q.device)
    grid = (triton.cdiv(N, BLOCK_Q), BH)
    attention_forward_kernel[grid](
        q, k, v, o, lse, N, 1 / math.sqrt(D), CAUSAL=causal, BLOCK_Q=BLOCK_Q, BLOCK_K=BLOCK_K, HEAD_DIM=D
    )
    return o, lse


@triton.jit
def attention_delta_kernel(o_ptr, do_ptr, delta_ptr, seq_len, BLOCK_Q: tl.constexpr, HEAD_DIM: tl.constexpr):
    block, head = tl.program_id(0), tl.program_id(1)
    rows = block * BLOCK_Q + tl.arange(0, BLOCK_Q)
    dims = tl.arange(0, HEAD_DIM)
    at = head * seq_len * HEAD_DIM + rows[:, None] * HEAD_DIM + dims[None, :]
    o = tl.load(o_ptr + at, mask=rows[:, None] < seq_len, other=0.0)
    do = tl.load(do_ptr + at, mask=rows[:, None] < seq_len, other=0.0)
    acc_dtype = tl.float64 if o.dtype == tl.float64 else tl.float32
    tl.store(delta_ptr + head * seq_len + rows, tl.sum(o.to(acc_dtype) * do.to(acc_dtype), 1), mask=rows < seq_len)


@triton.jit
def attention_dkdv_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    do_ptr,
    lse_ptr,
    delta_ptr,
    dk_ptr,
    dv_ptr,
    seq_len,
    scale,
    CAUSAL: tl.constexpr,
    BLOCK_Q: tl.constexpr,
    BLOCK_K: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    block, head = tl.program_id(0), tl.program_id(1)
    cols = block * BLOCK_K + tl.arange(0, BLOCK_K)
    dims = tl.arange(0, HEAD_DIM)
    start = head * seq_len * HEAD_DIM
    at = start + cols[:, None] * HEAD_DIM + dims[None, :]
    k = tl.load(k_ptr + at, mask=cols[:, None] < seq_len, other=0.0)
    acc_dtype = tl.float64 if k.dtype == tl.float64 else tl.float32
    k = k.to(acc_dtype)
    v = tl.load(v_ptr + at, mask=cols[:, None] < seq_len, other=0.0).to(acc_dtype)
    dk = tl.zeros([BLOCK_K, HEAD_DIM], acc_dtype)
    dv = tl.zeros([BLOCK_K, HEAD_DIM], acc_dtype)
    first_row = (block * BLOCK_K // BLOCK_Q) * BLOCK_Q if CAUSAL else 0
    for first in range(first_row, seq_len, BLOCK_Q):
        rows = first + tl.arange(0, BLOCK_Q)
        rat = start + rows[:, None] * HEAD_DIM + dims[None, :]
        q = tl.load(q_ptr + rat, mask=rows[:, None] < seq_len, other=0.0).to(acc_dtype)
        do = tl.load(do_ptr + rat, mask=rows[:, None] < seq_len, other=0.0).to(acc_dtype)
        lse = tl.load(lse_ptr + head * seq_len + rows, mask=rows < seq_len, other=0.0)
        delta = tl.load(delta_ptr + head * seq_len + rows, mask=rows < seq_len, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        keep = (rows[:, None] < seq_len) & (cols[None, :] < seq_len)
        if CAUSAL:
            keep = keep & (cols[None, :] <= rows[:, None])
        p = tl.where(keep, tl.exp(s - lse[:, None]), 0.0)
        dv += tl.dot(tl.trans(p), do)
        ds = p * (tl.dot(do, tl.trans(v)) - delta[:, None])
        dk += tl.dot(tl.trans(ds), q) * scale
    tl.store(dk_ptr + at, dk.to(dk_ptr.dtype.element_ty), mask=cols[:, None] < seq_len)
    tl.store(dv_ptr + at, dv.to(dv_ptr.dtype.element_ty), mask=cols[:, None] < seq_len)


@triton.jit
def attention_dq_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    do_ptr,
    lse_ptr,
    delta_ptr,
    dq_ptr,
    seq_len,
    scale,
    CAUSAL: tl.constexpr,
    BLOCK_Q: tl.constexpr,
    BLOCK_K: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    block, head = tl.program_id(0), tl.program_id(1)
    rows = block * BLOCK_Q + tl.arange(0, BLOCK_Q)
    dims = tl.arange(0, HEAD_DIM)
    start = head * seq_len * HEAD_DIM
    at = start + rows[:, None] * HEAD_DIM + dims[None, :]
    q = tl.load(q_ptr + at, mask=rows[:, None] < seq_len, other=0.0)
    acc_dtype = tl.float64 if q.dtype == tl.float64 else tl.float32
    q = q.to(acc_dtype)
    do = tl.load(do_ptr + at, mask=rows[:, None] < seq_len, other=0.0).to(acc_dtype)
    lse = tl.load(lse_ptr + head * seq_len + rows, mask=rows < seq_len, other=0.0)
    delta = tl.load(delta_ptr + head * seq_len + rows, mask=rows < seq_len, other=0.0)
    dq = tl.zeros([BLOCK_Q, HEAD_DIM], acc_dtype)
    end = tl.minimum(seq_len, (block + 1) * BLOCK_Q) if CAUSAL else seq_len
    for first in range(0, end, BLOCK_K):
        cols = first + tl.arange(0, BLOCK_K)
        kat = start + cols[:, None] * HEAD_DIM + dims[None, :]
        k = tl.load(k_ptr + kat, mask=cols[:, None] < seq_len, other=0.0).to(acc_dtype)
        v = tl.load(v_ptr + kat, mask=cols[:, None] < seq_len, other=0.0).to(acc_dtype)
        s = tl.dot(q, tl.trans(k)) * scale
        keep = (rows[:, None] < seq_len) & (cols[None, :] < seq_len)
        if CAUSAL:
            keep = keep & (cols[None, :] <= rows[:, None])
        p = tl.where(keep, tl.exp(s - lse[:, None]), 0.0)
        ds = p * (tl.dot(do, tl.trans(v)) - delta[:, None])
        dq += tl.dot(ds, k) * scale
    tl.store(dq_ptr + at, dq.to(dq_ptr.dtype.element_ty), mask=rows[:, None] < seq_len)


def flash_backward(q, k, v, o, lse, do, causal=False, BLOCK_Q=16, BLOCK_K=16, into=None):
    """into: the (dq, dk, dv) buffers to write, instead of fresh ones (the reused-memory designs below)."""
    BH, N, D = q.shape
    scale = 1 / math.sqrt(D)
    delta = torch.empty_like(lse)
    attention_delta_kernel[(triton.cdiv(N, BLOCK_Q), BH)](o, do, delta, N, BLOCK_Q=BLOCK_Q, HEAD_DIM=D)
    dq, dk, dv = into or (torch.empty_like(q), torch.empty_like(k), torch.empty_like(v))
    attention_dkdv_kernel[(triton.cdiv(N, BLOCK_K), BH)](
        q, k, v, do, lse, delta, dk, dv, N, scale, CAUSAL=causal, BLOCK_Q=BLOCK_Q, BLOCK_K=BLOCK_K, HEAD_DIM=D
    )
    attention_dq_kernel[(triton.cdiv(N, BLOCK_Q), BH)](
        q, k, v, do, lse, delta, dq, N, scale, CAUSAL=causal, BLOCK_Q=BLOCK_Q, BLOCK_K=BLOCK_K, HEAD_DIM=D
    )
    return dq, dk, dv


class FlashAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal=False):
        shape = q.shape
        q3, k3, v3 = (t.reshape(-1, shape[-2], shape[-1]).contiguous() for t in (q, k, v))
        o, lse = flash_forward(q3, k3, v3, causal)
        ctx.save_for_backward(q3, k3, v3, o, lse)
        ctx.causal, ctx.shape = causal, shape
        return o.view(shape)

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        do3 = do.reshape(o.shape).contiguous()
        dq, dk, dv = flash_backward(q, k, v, o, lse, do3, ctx.causal)
        return dq.view(ctx.shape), dk.view(ctx.shape), dv.view(ctx.shape), None


# ------------------------------------------------------------------------------------------------ wrong backwards


@triton.jit
def dq_per_key_block_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    do_ptr,
    lse_ptr,
    delta_ptr,
    dq_ptr,
    seq_len,
    scale,
    CAUSAL: tl.constexpr,
    BLOCK_Q: tl.constexpr,
    BLOCK_K: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    """dQ from each key block's program, stored without an atomic: programs of one launch race for dQ's rows."""
    block, head = tl.program_id(0), tl.program_id(1)
    cols = block * BLOCK_K + tl.arange(0, BLOCK_K)
    dims = tl.arange(0, HEAD_DIM)
    start = head * seq_len * HEAD_DIM
    k = tl.load(k_ptr + start + cols[:, None] * HEAD_DIM + dims[None, :], mask=cols[:, None] < seq_len, other=0.0)
    v = tl.load(v_ptr + start + cols[:, None] * HEAD_DIM + dims[None, :], mask=cols[:, None] < seq_len, other=0.0)
    for first in range(0, seq_len, BLOCK_Q):
        rows = first + tl.arange(0, BLOCK_Q)
        rat = start + rows[:, None] * HEAD_DIM + dims[None, :]
        q = tl.load(q_ptr + rat, mask=rows[:, None] < seq_len, other=0.0)
        do = tl.load(do_ptr + rat, mask=rows[:, None] < seq_len, other=0.0)
        lse = tl.load(lse_ptr + head * seq_len + rows, mask=rows < seq_len, other=0.0)
        delta = tl.load(delta_ptr + head * seq_len + rows, mask=rows < seq_len, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        keep = (rows[:, None] < seq_len) & (cols[None, :] < seq_len)
        if CAUSAL:
            keep = keep & (cols[None, :] <= rows[:, None])
        p = tl.where(keep, tl.exp(s - lse[:, None]), 0.0)
        ds = p * (tl.dot(do, tl.trans(v)) - delta[:, None])
        old = tl.load(dq_ptr + rat, mask=rows[:, None] < seq_len, other=0.0)
        tl.store(dq_ptr + rat, old + tl.dot(ds, k) * scale, mask=rows[:, None] < seq_len)


def flash_backward_racing_dq(q, k, v, o, lse, do, causal=False, BLOCK_Q=16, BLOCK_K=16):
    BH, N, D = q.shape
    scale = 1 / math.sqrt(D)
    delta = torch.empty_like(lse)
    attention_delta_kernel[(triton.cdiv(N, BLOCK_Q), BH)](o, do, delta, N, BLOCK_Q=BLOCK_Q, HEAD_DIM=D)
    dq, dk, dv = torch.zeros_like(q), torch.empty_like(k), torch.empty_like(v)
    attention_dkdv_kernel[(triton.cdiv(N, BLOCK_K), BH)](
        q, k, v, do, lse, delta, dk, dv, N, scale, CAUSAL=causal, BLOCK_Q=BLOCK_Q, BLOCK_K=BLOCK_K, HEAD_DIM=D
    )
    dq_per_key_block_kernel[(triton.cdiv(N, BLOCK_K), BH)](
        q, k, v, do, lse, delta, dq, N, scale, CAUSAL=causal, BLOCK_Q=BLOCK_Q, BLOCK_K=BLOCK_K, HEAD_DIM=D
    )
    return dq, dk, dv


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=offsets < n), mask=offsets < n)


def flash_backward_copying_pytorch(q, k, v, o, lse, do, causal=False):
    """PyTorch's gradients, handed to a kernel that copies them into the returned buffers."""
    qs, ks, vs = (t.detach().clone().requires_grad_() for t in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(qs, ks, vs, is_causal=causal)
    grads = torch.autograd.grad(out, (qs, ks, vs), do)
    results = []
    for g in grads:
        g = g.contiguous()
        dst = torch.empty_like(g)
        copy_kernel[(triton.cdiv(g.numel(), 64),)](g, dst, g.numel(), BLOCK=64)
        results.append(dst)
    return tuple(results)


def flash_backward_pytorch_after(q, k, v, o, lse, do, causal=False):
    """A launch for show, then PyTorch's gradients returned."""
    flash_backward(q, k, v, o, lse, do, causal)
    qs, ks, vs = (t.detach().clone().requires_grad_() for t in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(qs, ks, vs, is_causal=causal)
    return torch.autograd.grad(out, (qs, ks, vs), do)


# ------------------------------------------------------------------------------------------------ right backwards


def flash_backward_delta_in_pytorch(q, k, v, o, lse, do, causal=False, BLOCK_Q=16, BLOCK_K=16):
    """D = rowsum(dO ∘ O) computed by PyTorch before the kernels (what it holds is no gradient)."""
    BH, N, D = q.shape
    scale = 1 / math.sqrt(D)
    delta = (do.to(lse.dtype) * o.to(lse.dtype)).sum(-1).contiguous()
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    attention_dkdv_kernel[(triton.cdiv(N, BLOCK_K), BH)](
        q, k, v, do, lse, delta, dk, dv, N, scale, CAUSAL=causal, BLOCK_Q=BLOCK_Q, BLOCK_K=BLOCK_K, HEAD_DIM=D
    )
    attention_dq_kernel[(triton.cdiv(N, BLOCK_Q), BH)](
        q, k, v, do, lse, delta, dq, N, scale, CAUSAL=causal, BLOCK_Q=BLOCK_Q, BLOCK_K=BLOCK_K, HEAD_DIM=D
    )
    return dq, dk, dv


@triton.jit
def backward_atomic_dq_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    do_ptr,
    lse_ptr,
    delta_ptr,
    dq_ptr,
    dk_ptr,
    dv_ptr,
    seq_len,
    scale,
    CAUSAL: tl.constexpr,
    BLOCK_Q: tl.constexpr,
    BLOCK_K: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    """One kernel per key block: dK and dV its own rows, dQ added with atomics into a zeroed buffer."""
    block, head = tl.program_id(0), tl.program_id(1)
    cols = block * BLOCK_K + tl.arange(0, BLOCK_K)
    dims = tl.arange(0, HEAD_DIM)
    start = head * seq_len * HEAD_DIM
    at = start + cols[:, None] * HEAD_DIM + dims[None, :]
    k = tl.load(k_ptr + at, mask=cols[:, None] < seq_len, other=0.0)
    v = tl.load(v_ptr + at, mask=cols[:, None] < seq_len, other=0.0)
    dk = tl.zeros([BLOCK_K, HEAD_DIM], k.dtype)
    dv = tl.zeros([BLOCK_K, HEAD_DIM], k.dtype)
    first_row = (block * BLOCK_K // BLOCK_Q) * BLOCK_Q if CAUSAL else 0
    for first in range(first_row, seq_len, BLOCK_Q):
        rows = first + tl.arange(0, BLOCK_Q)
        rat = start + rows[:, None] * HEAD_DIM + dims[None, :]
        q = tl.load(q_ptr + rat, mask=rows[:, None] < seq_len, other=0.0)
        do = tl.load(do_ptr + rat, mask=rows[:, None] < seq_len, other=0.0)
        lse = tl.load(lse_ptr + head * seq_len + rows, mask=rows < seq_len, other=0.0)
        delta = tl.load(delta_ptr + head * seq_len + rows, mask=rows < seq_len, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        keep = (rows[:, None] < seq_len) & (cols[None, :] < seq_len)
        if CAUSAL:
            keep = keep & (cols[None, :] <= rows[:, None])
        p = tl.where(keep, tl.exp(s - lse[:, None]), 0.0)
        dv += tl.dot(tl.trans(p), do)
        ds = p * (tl.dot(do, tl.trans(v)) - delta[:, None])
        dk += tl.dot(tl.trans(ds), q) * scale
        tl.atomic_add(dq_ptr + rat, tl.dot(ds, k) * scale, mask=rows[:, None] < seq_len)
    tl.store(dk_ptr + at, dk, mask=cols[:, None] < seq_len)
    tl.store(dv_ptr + at, dv, mask=cols[:, None] < seq_len)


def flash_backward_atomic_dq(q, k, v, o, lse, do, causal=False, BLOCK_Q=16, BLOCK_K=32, into=None):
    """into: the (dk, dv) buffers to write, instead of fresh ones (dQ's zeros are always the design's own)."""
    BH, N, D = q.shape
    delta = torch.empty_like(lse)
    attention_delta_kernel[(triton.cdiv(N, BLOCK_Q), BH)](o, do, delta, N, BLOCK_Q=BLOCK_Q, HEAD_DIM=D)
    dq, (dk, dv) = torch.zeros_like(q), into or (torch.empty_like(k), torch.empty_like(v))
    backward_atomic_dq_kernel[(triton.cdiv(N, BLOCK_K), BH)](
        q,
        k,
        v,
        do,
        lse,
        delta,
        dq,
        dk,
        dv,
        N,
        1 / math.sqrt(D),
        CAUSAL=causal,
        BLOCK_Q=BLOCK_Q,
        BLOCK_K=BLOCK_K,
        HEAD_DIM=D,
    )
    return dq, dk, dv


# ------------------------------------------------------------------------------------------------ Functions


class AttentionInPyTorch(torch.autograd.Function):
    """No kernel at all: attention composed of PyTorch operations in a Function's clothes."""

    @staticmethod
    def forward(ctx, q, k, v, causal=False):
        ctx.save_for_backward(q, k, v)
        ctx.causal = causal
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    @staticmethod
    def backward(ctx, do):
        q, k, v = (t.detach().requires_grad_() for t in ctx.saved_tensors)
        with torch.enable_grad():
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=ctx.causal)
        return (*torch.autograd.grad(out, (q, k, v), do), None)


class FlashAttentionWithoutContiguous(FlashAttention):
    """Hands the kernels q, k, v as they come: a transposed view is read in the wrong order."""

    @staticmethod
    def forward(ctx, q, k, v, causal=False):
        shape = q.shape
        q3, k3, v3 = (torch.as_strided(t, (shape[0] * shape[1], shape[2], shape[3]), (shape[2] * shape[3], shape[3], 1))
                      for t in (q, k, v))  # fmt: skip
        o, lse = flash_forward(q3, k3, v3, causal)
        ctx.save_for_backward(q3, k3, v3, o, lse)
        ctx.causal, ctx.shape = causal, shape
        return o.view(shape)


class FlashAttentionKeepingTheInputsToo(FlashAttention):
    """Saves q, k, v as they came beside the contiguous copies the kernels read: a second copy of each input."""

    @staticmethod
    def forward(ctx, q, k, v, causal=False):
        shape = q.shape
        q3, k3, v3 = (t.reshape(-1, shape[-2], shape[-1]).contiguous().clone() for t in (q, k, v))
        o, lse = flash_forward(q3, k3, v3, causal)
        ctx.save_for_backward(q3, k3, v3, o, lse, q, k, v)
        ctx.causal, ctx.shape = causal, shape
        return o.view(shape)

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse, *_ = ctx.saved_tensors
        dq, dk, dv = flash_backward(q, k, v, o, lse, do.reshape(o.shape).contiguous(), ctx.causal)
        return dq.view(ctx.shape), dk.view(ctx.shape), dv.view(ctx.shape), None


def flash_backward_in_reused_memory(q, k, v, o, lse, do, causal=False):
    """The reference backward whose gradient buffers start out holding the right gradients, as torch.empty_like's
    memory may (freed memory of an earlier computation, reused): the kernels overwrite every entry, so it is honest."""
    return flash_backward(q, k, v, o, lse, do, causal, into=_gradients_row_by_row(q, k, v, o, do, causal))


def flash_backward_atomic_dq_in_reused_memory(q, k, v, o, lse, do, causal=False):
    """The one-kernel design (dQ accumulated by atomics into zeros) whose torch.empty_like buffers for dK and dV
    hold the right dQ and dV from an earlier computation (the CI run that found it: memory freed by the previous
    check). The kernel overwrites both; the zeros are the design's own: honest."""
    old_dq, _, old_dv = _gradients_row_by_row(q, k, v, o, do, causal)
    return flash_backward_atomic_dq(q, k, v, o, lse, do, causal, into=(old_dq, old_dv))


def _gradients_row_by_row(q, k, v, o, do, causal):
    """dq, dk, dv one query row at a time in PyTorch (memory of a row of scores only)."""
    BH, N, D = q.shape
    scale = 1 / math.sqrt(D)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for h in range(BH):
        for i in range(N):
            end = i + 1 if causal else N
            p = torch.softmax(k[h, :end] @ q[h, i] * scale, dim=0)
            dv[h, :end] += p[:, None] * do[h, i][None, :]
            ds = p * (v[h, :end] @ do[h, i] - (do[h, i] * o[h, i]).sum())
            dq[h, i] = ds @ k[h, :end] * scale
            dk[h, :end] += ds[:, None] * q[h, i][None, :] * scale
    return dq, dk, dv


@triton.jit
def blank_attention_forward_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    lse_ptr,
    seq_len,
    scale,
    CAUSAL: tl.constexpr,
    BLOCK_Q: tl.constexpr,
    BLOCK_K: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    raise NotImplementedError
