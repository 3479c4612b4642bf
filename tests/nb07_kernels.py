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


def flash_backward_atomic_dq_not_zeroed(q, k, v, o, lse, do, causal=False):
    """dQ added to by atomics in a torch.empty_like buffer, never zeroed: whatever the memory held (here numbers
    drawn once) is in dQ."""
    garbage = torch.rand(q.shape, generator=torch.Generator().manual_seed(5), dtype=q.dtype)
    return flash_backward_atomic_dq(q, k, v, o, lse, do, causal, dq=torch.empty_like(q).copy_(garbage))


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


# PyTorch's gradients in disguise: in a buffer doubled, offset, bit-shuffled, behind D, in the low bits of q, k, v;
# a kernel undoes the disguise. Each should earn nothing (judges/buffers.py).


@triton.jit
def halve_kernel(src_ptr, dst_ptr, n, start, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    value = tl.load(src_ptr + start + offsets, mask=offsets < n)
    tl.store(dst_ptr + offsets, value * 0.5, mask=offsets < n)


@triton.jit
def unshift_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=offsets < n) - 3.0, mask=offsets < n)


@triton.jit
def unshuffle_kernel(src_ptr, dst_ptr, n, KEY: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    bits = tl.load(src_ptr + offsets, mask=offsets < n) ^ KEY
    tl.store(dst_ptr + offsets, bits.to(dst_ptr.dtype.element_ty, bitcast=True), mask=offsets < n)


@triton.jit
def low_bits_kernel(mixed_ptr, base_ptr, dst_ptr, n, LIFT: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mixed = tl.load(mixed_ptr + offsets, mask=offsets < n)
    base = tl.load(base_ptr + offsets, mask=offsets < n)
    tl.store(dst_ptr + offsets, (mixed - base) * LIFT, mask=offsets < n)


def _pytorch_gradients(q, k, v, do, causal):
    qs, ks, vs = (t.detach().clone().requires_grad_() for t in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(qs, ks, vs, is_causal=causal)
    return [g.contiguous() for g in torch.autograd.grad(out, (qs, ks, vs), do)]


def _halved(doubled):
    results = []
    for g in doubled:
        dst = torch.empty_like(g)
        halve_kernel[(triton.cdiv(g.numel(), 64),)](g, dst, g.numel(), 0, BLOCK=64)
        results.append(dst)
    return tuple(results)


def flash_backward_doubled_and_halved(q, k, v, o, lse, do, causal=False):
    """PyTorch's gradients doubled into buffers; a kernel halves them into the returned ones."""
    return _halved([2 * g for g in _pytorch_gradients(q, k, v, do, causal)])


def flash_backward_doubled_row_by_row(q, k, v, o, lse, do, causal=False):
    """The same, the gradients computed one query row at a time (no N×N tensor: the memory part is kept)."""
    return _halved([2 * g for g in _gradients_row_by_row(q, k, v, o, do, causal)])


def flash_backward_offset_by_three(q, k, v, o, lse, do, causal=False):
    results = []
    for g in _pytorch_gradients(q, k, v, do, causal):
        shifted, dst = g + 3.0, torch.empty_like(g)
        unshift_kernel[(triton.cdiv(g.numel(), 64),)](shifted, dst, g.numel(), BLOCK=64)
        results.append(dst)
    return tuple(results)


def flash_backward_bit_shuffled(q, k, v, o, lse, do, causal=False):
    """The gradients' bits as integers XOR a key; a kernel XORs them back and reads them as floats."""
    results = []
    for g in _pytorch_gradients(q, k, v, do, causal):
        ints = g.view(torch.int64 if g.dtype == torch.float64 else torch.int32)
        shuffled, dst = ints ^ 0x2AAAAAAA, torch.empty_like(g)
        unshuffle_kernel[(triton.cdiv(g.numel(), 64),)](shuffled, dst, g.numel(), KEY=0x2AAAAAAA, BLOCK=64)
        results.append(dst)
    return tuple(results)


def flash_backward_gradients_behind_delta(q, k, v, o, lse, do, causal=False, BLOCK_Q=16, BLOCK_K=16):
    """One buffer holds D (which the grader computes too) and behind it the doubled gradients: the honest kernels
    read D from its front, a kernel halves the rest into the returned buffers."""
    BH, N, D = q.shape
    delta = (do.to(lse.dtype) * o.to(lse.dtype)).sum(-1).reshape(-1)
    grads = _pytorch_gradients(q, k, v, do, causal)
    packed = torch.cat([delta, *(2 * g.to(lse.dtype).reshape(-1) for g in grads)])
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    attention_dkdv_kernel[(triton.cdiv(N, BLOCK_K), BH)](
        q, k, v, do, lse, packed[: BH * N].view(BH, N), dk, dv, N, 1 / math.sqrt(D),
        CAUSAL=causal, BLOCK_Q=BLOCK_Q, BLOCK_K=BLOCK_K, HEAD_DIM=D,
    )  # fmt: skip
    for i, dst in enumerate((dq, dk, dv)):
        halve_kernel[(triton.cdiv(dst.numel(), 64),)](packed, dst, dst.numel(), BH * N + i * dst.numel(), BLOCK=64)
    return dq, dk, dv


def flash_backward_in_the_low_bits_of_the_inputs(q, k, v, o, lse, do, causal=False):
    """q, k and v copied with each gradient in their low bits (2⁻¹² of it added): a kernel subtracts the inputs and
    lifts the difference (right in float64). The copies pass for the inputs within the grader's tolerance."""
    results = []
    for base, g in zip((q, k, v), _pytorch_gradients(q, k, v, do, causal)):
        mixed, dst = base + g * 2.0**-12, torch.empty_like(g)
        low_bits_kernel[(triton.cdiv(g.numel(), 64),)](mixed, base, dst, g.numel(), LIFT=2.0**12, BLOCK=64)
        results.append(dst)
    return tuple(results)


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


def flash_backward_atomic_dq(q, k, v, o, lse, do, causal=False, BLOCK_Q=16, BLOCK_K=32, into=None, dq=None):
    """into: the (dk, dv) buffers to write, instead of fresh ones; dq: the buffer dQ is added to (zeros)."""
    BH, N, D = q.shape
    delta = torch.empty_like(lse)
    attention_delta_kernel[(triton.cdiv(N, BLOCK_Q), BH)](o, do, delta, N, BLOCK_Q=BLOCK_Q, HEAD_DIM=D)
    dq, (dk, dv) = torch.zeros_like(q) if dq is None else dq, into or (torch.empty_like(k), torch.empty_like(v))
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


@triton.jit
def attention_backward_base2_kernel(
    q_ptr,
    k2_ptr,
    v_ptr,
    do_ptr,
    lse2_ptr,
    delta_ptr,
    dq_ptr,
    dk_ptr,
    dv_ptr,
    seq_len,
    scale,
    CAUSAL: tl.constexpr,
    BLOCK: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    """As the Triton tutorial's backward: K arrives times scale·log₂e and L in base 2, so P = exp2(Q·K₂ᵀ − L₂); each
    program computes dK and dV of its key block, then dQ of its query block (two loops, no atomics)."""
    block, head = tl.program_id(0), tl.program_id(1)
    dims = tl.arange(0, HEAD_DIM)
    start = head * seq_len * HEAD_DIM
    cols = block * BLOCK + tl.arange(0, BLOCK)
    at = start + cols[:, None] * HEAD_DIM + dims[None, :]
    k2 = tl.load(k2_ptr + at, mask=cols[:, None] < seq_len, other=0.0)
    v = tl.load(v_ptr + at, mask=cols[:, None] < seq_len, other=0.0)
    dk = tl.zeros([BLOCK, HEAD_DIM], k2.dtype)
    dv = tl.zeros([BLOCK, HEAD_DIM], k2.dtype)
    for first in range(block * BLOCK if CAUSAL else 0, seq_len, BLOCK):
        rows = first + tl.arange(0, BLOCK)
        rat = start + rows[:, None] * HEAD_DIM + dims[None, :]
        q = tl.load(q_ptr + rat, mask=rows[:, None] < seq_len, other=0.0)
        do = tl.load(do_ptr + rat, mask=rows[:, None] < seq_len, other=0.0)
        lse2 = tl.load(lse2_ptr + head * seq_len + rows, mask=rows < seq_len, other=0.0)
        delta = tl.load(delta_ptr + head * seq_len + rows, mask=rows < seq_len, other=0.0)
        keep = (rows[:, None] < seq_len) & (cols[None, :] < seq_len)
        if CAUSAL:
            keep = keep & (cols[None, :] <= rows[:, None])
        p = tl.where(keep, tl.exp2(tl.dot(q, tl.trans(k2)) - lse2[:, None]), 0.0)
        dv += tl.dot(tl.trans(p), do)
        dk += tl.dot(tl.trans(p * (tl.dot(do, tl.trans(v)) - delta[:, None])), q)
    tl.store(dk_ptr + at, dk * scale, mask=cols[:, None] < seq_len)
    tl.store(dv_ptr + at, dv, mask=cols[:, None] < seq_len)
    rows = block * BLOCK + tl.arange(0, BLOCK)
    at = start + rows[:, None] * HEAD_DIM + dims[None, :]
    q = tl.load(q_ptr + at, mask=rows[:, None] < seq_len, other=0.0)
    do = tl.load(do_ptr + at, mask=rows[:, None] < seq_len, other=0.0)
    lse2 = tl.load(lse2_ptr + head * seq_len + rows, mask=rows < seq_len, other=0.0)
    delta = tl.load(delta_ptr + head * seq_len + rows, mask=rows < seq_len, other=0.0)
    dq = tl.zeros([BLOCK, HEAD_DIM], q.dtype)
    for first in range(0, tl.minimum(seq_len, (block + 1) * BLOCK) if CAUSAL else seq_len, BLOCK):
        cols = first + tl.arange(0, BLOCK)
        kat = start + cols[:, None] * HEAD_DIM + dims[None, :]
        k2 = tl.load(k2_ptr + kat, mask=cols[:, None] < seq_len, other=0.0)
        v = tl.load(v_ptr + kat, mask=cols[:, None] < seq_len, other=0.0)
        keep = (rows[:, None] < seq_len) & (cols[None, :] < seq_len)
        if CAUSAL:
            keep = keep & (cols[None, :] <= rows[:, None])
        p = tl.where(keep, tl.exp2(tl.dot(q, tl.trans(k2)) - lse2[:, None]), 0.0)
        dq += tl.dot(p * (tl.dot(do, tl.trans(v)) - delta[:, None]), k2)
    tl.store(dq_ptr + at, dq * 0.6931471805599453, mask=rows[:, None] < seq_len)  # K₂ = K·scale·log₂e: times ln 2


def flash_backward_as_the_triton_tutorial(q, k, v, o, lse, do, causal=False, BLOCK=16):
    """K scaled and L turned to base 2 by PyTorch before the launches (the tutorial's `arg_k`), D by a kernel."""
    BH, N, D = q.shape
    scale = 1 / math.sqrt(D)
    k2, lse2 = k * (scale * 1.4426950408889634), lse * 1.4426950408889634
    delta = torch.empty_like(lse)
    attention_delta_kernel[(triton.cdiv(N, BLOCK), BH)](o, do, delta, N, BLOCK_Q=BLOCK, HEAD_DIM=D)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    attention_backward_base2_kernel[(triton.cdiv(N, BLOCK), BH)](
        q, k2, v, do, lse2, delta, dq, dk, dv, N, scale, CAUSAL=causal, BLOCK=BLOCK, HEAD_DIM=D
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
