"""The course's own SiLU kernels, stand-ins for the learner's where a later exercise grades the Function around
them: notebook 05's TritonSiLU check runs with these in place of the learner's `silu_forward_kernel` and
`silu_backward_kernel`, so that a kernel mistake costs points once, in the kernel's own exercise.

Plain functions here, made Triton kernels on first use, in the mode the notebook's Triton runs in (the
interpreter on a CPU, compiled on a GPU): importing triton.language must wait until that mode is set.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import triton.language as tl


def silu_forward(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    xc = x if x.dtype == tl.float64 else x.to(tl.float32)
    tl.store(y_ptr + offsets, (xc * tl.sigmoid(xc)).to(x.dtype), mask=mask)


def silu_backward(x_ptr, grad_out_ptr, grad_in_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    g = tl.load(grad_out_ptr + offsets, mask=mask)
    xc = x if x.dtype == tl.float64 else x.to(tl.float32)
    gc = g if x.dtype == tl.float64 else g.to(tl.float32)
    s = tl.sigmoid(xc)
    tl.store(grad_in_ptr + offsets, (gc * s * (1 + xc * (1 - s))).to(x.dtype), mask=mask)


# the notebook's name of each kernel -> the stand-in
STAND_INS = {"silu_forward_kernel": silu_forward, "silu_backward_kernel": silu_backward}


@cache
def stand_in(name: str, interpreted: bool) -> Any:
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    fn = STAND_INS[name]
    return InterpretedFunction(fn) if interpreted else JITFunction(fn)
