"""Stand-ins for the learner's SiLU kernels, where a later exercise grades the Function around them: notebook 05's
TritonSiLU check binds these to the names `silu_forward_kernel` and `silu_backward_kernel` while it runs, so that
a kernel mistake costs points once, in the kernel's own exercise.

A stand-in is launched like a kernel (`kernel[grid](x_ptr, y_ptr, n_elements, BLOCK_SIZE=...)`) and behaves like
one where the Function around it is concerned: it reads and writes `n_elements` entries of memory in order from
each tensor's first element, whatever the tensor's strides (so a Function that hands it a non-contiguous tensor
computes with the wrong numbers, as with a real kernel), computes float64 in float64 and lower precisions in
float32, and stores in the output's dtype. It is not Triton code: copying it answers no kernel exercise (those
checks take Triton kernels only), and nothing here is a solution a learner could lift.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


def _in_memory_order(t: torch.Tensor, n: int) -> torch.Tensor:
    """The first n entries of memory from t's first element, as a kernel reads them through its pointer."""
    return torch.as_strided(t, (n,), (1,), t.storage_offset())


def _compute_dtype(t: torch.Tensor) -> torch.dtype:
    return torch.float64 if t.dtype == torch.float64 else torch.float32


def _silu_forward(x: torch.Tensor, y: torch.Tensor, n: int) -> None:
    xs = _in_memory_order(x, n).to(_compute_dtype(x))
    _in_memory_order(y, n).copy_(xs * torch.sigmoid(xs))


def _silu_backward(x: torch.Tensor, grad_out: torch.Tensor, grad_in: torch.Tensor, n: int) -> None:
    xs = _in_memory_order(x, n).to(_compute_dtype(x))
    g = _in_memory_order(grad_out, n).to(xs.dtype)
    s = torch.sigmoid(xs)
    _in_memory_order(grad_in, n).copy_(g * s * (1 + xs * (1 - s)))


class StandInKernel:
    """Launched as `kernel[grid](*tensors, n_elements, BLOCK_SIZE=...)`; each launch goes through `run`, as a
    Triton kernel's does (the check counts launches there)."""

    def __init__(self, name: str, compute: Callable[..., None]):
        self.__name__, self.compute = name, compute

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)

    def run(self, *args, grid=None, **kwargs) -> None:
        self.compute(*args)


# the notebook's name of each kernel -> its stand-in
STAND_INS = {
    "silu_forward_kernel": StandInKernel("silu_forward_kernel", _silu_forward),
    "silu_backward_kernel": StandInKernel("silu_backward_kernel", _silu_backward),
}
