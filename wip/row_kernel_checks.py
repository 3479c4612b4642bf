"""Prototype of notebook 06's first kernel check (probe and judge), to move into autograder/nb06.py and
autograder/judges/nb06.py when the notebook is built. Run: TRITON_INTERPRET=1 python wip/row_kernel_checks.py

The logits sit in a buffer whose row stride is V + PAD, the PAD columns after each row holding NaN: a kernel that
reads past its row's end (a missing or wrong mask on the last chunk) gets NaN into its sum, and the judge can say
so. The output sits between guard zones: a store past the end is seen and named.
"""

from __future__ import annotations

import math
import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch
import triton
import triton.language as tl

from autograder.feedback import CheckFailed
from autograder.nb05 import GUARD_VALUE, _call, kernel_launcher

PAD = 8


def row_logits(seed: int, rows: int, V: int, dtype: str) -> torch.Tensor:
    gen = torch.Generator().manual_seed(1000 * seed + 7 * rows + V)
    x = 3 * torch.randn(rows, V, generator=gen, dtype=torch.float64)
    x[0, V // 2] = 100.0  # exp(100) overflows float32: only a kernel that subtracts the max survives it
    return x.to(getattr(torch, dtype))


def probe_row_lse(kernel, sizes=((3, 37, 16), (2, 16, 16), (2, 5, 16)), seed=0, dtypes=("float64", "float32")):
    """kernel[(rows,)](logits_ptr, lse_ptr, row_stride, V, BLOCK_V=block): each row's log-sum-exp."""
    name = getattr(kernel, "__name__", None) or getattr(getattr(kernel, "fn", None), "__name__", "the kernel")
    launcher, device, context = kernel_launcher(kernel, name)
    data = []
    for rows, V, block in sizes:
        for dtype in dtypes:
            x = row_logits(seed, rows, V, dtype)
            buffer = torch.full((rows, V + PAD), float("nan"), dtype=x.dtype, device=device)
            buffer[:, :V] = x
            before = buffer.clone()
            guard = 16
            out_buf = torch.full((rows + 2 * guard,), GUARD_VALUE, dtype=x.dtype, device=device)
            out = out_buf[guard : guard + rows]
            with context():
                _call(lambda *a: launcher[(rows,)](*a, BLOCK_V=block), buffer, out, buffer.stride(0), V, name=name)
            data.append(
                {
                    "rows": rows, "V": V, "block": block, "dtype": dtype,
                    "values": out.to(torch.float64).cpu().clone(),
                    "written_outside": int((out_buf[:guard] != GUARD_VALUE).sum() + (out_buf[guard + rows :] != GUARD_VALUE).sum()),
                    "inputs_changed": not torch.equal(buffer.nan_to_num(7.0), before.nan_to_num(7.0)),
                }
            )
    return data


def judge_row_lse(data, sizes=((3, 37, 16), (2, 16, 16), (2, 5, 16)), seed=0, dtypes=("float64", "float32")):
    """Every row's log-sum-exp against torch.logsumexp in float64; the message names what went wrong."""
    wrong, hints = [], []
    for case in data:
        x = row_logits(seed, case["rows"], case["V"], case["dtype"]).to(torch.float64)
        expected = torch.logsumexp(x, dim=1)
        got = case["values"]
        tol = 1e-9 if case["dtype"] == "float64" else 1e-4
        where = f"rows={case['rows']}, V={case['V']}, BLOCK_V={case['block']}, {case['dtype']}"
        if case["written_outside"]:
            wrong.append(f"{where}: {case['written_outside']} value(s) written outside the output")
            hints.append("one program per row writes one value: store at lse_ptr + row, nowhere else")
        if case["inputs_changed"]:
            wrong.append(f"{where}: the logits were changed")
        bad = ~torch.isclose(got, expected, rtol=tol, atol=tol)
        if bad.any():
            row = int(bad.nonzero()[0])
            wrong.append(f"{where}: row {row} is {'NaN' if math.isnan(got[row]) else 'inf' if math.isinf(got[row]) else 'off'}")
            if math.isnan(got[row]):
                hints.append("the last chunk of a row reads past the row's end: mask the columns at or beyond V")
            elif math.isinf(got[row]):
                hints.append("exp of a large logit overflows: subtract the row's running maximum before exp")
            elif case["V"] > case["block"]:
                hints.append("when a later chunk raises the maximum, the sum so far must be rescaled by exp(m_old - m_new)")
    if wrong:
        raise CheckFailed("\n".join(wrong) + "".join(f"\nHint: {h}" for h in dict.fromkeys(hints)))


@triton.jit
def right(logits_ptr, lse_ptr, stride, V, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    m = -float("inf")
    s = 0.0
    for start in range(0, V, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * stride + cols, mask=cols < V, other=-float("inf")).to(lse_ptr.dtype.element_ty)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    tl.store(lse_ptr + row, m + tl.log(s))


@triton.jit
def no_mask(logits_ptr, lse_ptr, stride, V, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    m = -float("inf")
    s = 0.0
    for start in range(0, V, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * stride + cols).to(lse_ptr.dtype.element_ty)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    tl.store(lse_ptr + row, m + tl.log(s))


@triton.jit
def no_max(logits_ptr, lse_ptr, stride, V, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    s = 0.0
    for start in range(0, V, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * stride + cols, mask=cols < V, other=-float("inf")).to(lse_ptr.dtype.element_ty)
        s = s + tl.sum(tl.exp(x), axis=0)
    tl.store(lse_ptr + row, tl.log(s))


@triton.jit
def no_rescale(logits_ptr, lse_ptr, stride, V, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    m = -float("inf")
    s = 0.0
    for start in range(0, V, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * stride + cols, mask=cols < V, other=-float("inf")).to(lse_ptr.dtype.element_ty)
        m = tl.maximum(m, tl.max(x, axis=0))
        s = s + tl.sum(tl.exp(x - m), axis=0)
    tl.store(lse_ptr + row, m + tl.log(s))


if __name__ == "__main__":
    for kernel in (right, no_mask, no_max, no_rescale):
        try:
            judge_row_lse(probe_row_lse(kernel))
            print(kernel.__name__ if hasattr(kernel, "__name__") else kernel.fn.__name__, "passes")
        except CheckFailed as failure:
            print(getattr(kernel, "__name__", None) or kernel.fn.__name__, "fails:", str(failure).replace("\n", " | ")[:400])
