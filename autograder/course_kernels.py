"""Stand-ins for the learner's kernels, where a later exercise grades the Function around them: notebook 05's
TritonSiLU check binds these to the names `silu_forward_kernel` and `silu_backward_kernel` while it runs, and
notebook 06's Function checks (FusedCrossEntropy, its bfloat16 run, LinearCrossEntropy) to `ce_forward_kernel`
and `ce_backward_kernel`, so that a kernel mistake costs points once, in the kernel's own exercise.

A stand-in is launched like a kernel (`kernel[grid](x_ptr, y_ptr, n_elements, BLOCK_SIZE=...)`) and behaves like
one where the Function around it is concerned: it reads and writes `n_elements` entries of memory in order from
each tensor's first element, whatever the tensor's strides (so a Function that hands it a non-contiguous tensor
computes with the wrong numbers, as with a real kernel), computes float64 in float64 and lower precisions in
float32 (the cross-entropy's in the dtype of the `lse` buffer the Function allocated), and stores in the output's
dtype. A row kernel's stand-in reads rows at `row * stride`, one per program of its grid. It is not Triton
code: copying it answers no kernel exercise (those checks take Triton kernels only).

A launch is bound in the caller's process and computed by a launcher (autograder/probes/launches.py): while a
submission is graded, the grader's, which logs what each launch read and stored where the learner's code cannot
write; the Function judges read that log.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import torch


def _in_memory_order(t: torch.Tensor, n: int) -> torch.Tensor:
    """The first n entries of memory from t's first element, as a kernel reads them through its pointer."""
    return torch.as_strided(t, (n,), (1,), t.storage_offset())


def _compute_dtype(t: torch.Tensor) -> torch.dtype:
    return torch.float64 if t.dtype == torch.float64 else torch.float32


Done = tuple[list[torch.Tensor], list[torch.Tensor]]  # (the views a launch wrote, copies of what it read first)


def _silu_forward(x: torch.Tensor, y: torch.Tensor, n: int) -> Done:
    read = _in_memory_order(x, n).clone()
    xs = read.to(_compute_dtype(x))
    return [_in_memory_order(y, n).copy_(xs * torch.sigmoid(xs))], [read]


def _silu_backward(x: torch.Tensor, grad_out: torch.Tensor, grad_in: torch.Tensor, n: int) -> Done:
    read = [_in_memory_order(x, n).clone(), _in_memory_order(grad_out, n).clone()]
    xs = read[0].to(_compute_dtype(x))
    g = read[1].to(xs.dtype)
    s = torch.sigmoid(xs)
    return [_in_memory_order(grad_in, n).copy_(g * s * (1 + xs * (1 - s)))], read


def _rows(t: torch.Tensor, rows: int, V: int, stride: int) -> torch.Tensor:
    """rows × V entries of memory from t's first element, row r at r * stride: what a row kernel reads."""
    return torch.as_strided(t, (rows, V), (stride, 1), t.storage_offset())


def _picked(x: torch.Tensor, target: torch.Tensor, ignore_index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(each row's logit at its target, 0 where ignored; which rows count). A target outside the row reads NaN."""
    counted = target != ignore_index
    inside = counted & (target >= 0) & (target < x.shape[1])
    picked = torch.full(target.shape, float("nan"), dtype=x.dtype, device=x.device)
    picked[inside] = x[inside.nonzero().squeeze(1), target[inside]]
    return torch.where(counted, picked, torch.zeros_like(picked)), counted


def _ce_forward(grid, logits, target, loss, lse, stride, V, ignore_index) -> Done:
    """Each row's log-sum-exp and loss, computed in lse's dtype (the accumulation dtype the Function chose)."""
    rows = grid[0]
    read = _rows(logits, rows, V, stride).clone()
    x = read.to(lse.dtype)
    row_lse = torch.logsumexp(x, dim=1)
    picked, counted = _picked(x, _in_memory_order(target, rows), ignore_index)
    return [
        _in_memory_order(lse, rows).copy_(row_lse),
        _in_memory_order(loss, rows).copy_(torch.where(counted, row_lse - picked, torch.zeros_like(row_lse))),
    ], [read]


def _ce_backward(grid, logits, target, lse, grad, stride, V, ignore_index, scale) -> Done:
    """Each row's gradient (softmax - one_hot) * scale from the saved log-sum-exp, 0 in ignored rows."""
    if isinstance(scale, torch.Tensor):
        raise TypeError(
            "scale was handed to the kernel as a tensor: a kernel takes every tensor as a pointer, so pass a Python "
            "number (float(grad_output) / counted rows)"
        )
    rows = grid[0]
    read = _rows(logits, rows, V, stride).clone()  # before the store: a gradient may be written over its logits
    x = read.to(lse.dtype)
    t = _in_memory_order(target, rows)
    g = torch.exp(x - _in_memory_order(lse, rows)[:, None])
    counted = t != ignore_index
    hit = counted & (t >= 0) & (t < V)
    g[hit.nonzero().squeeze(1), t[hit]] -= 1.0
    g = torch.where(counted[:, None], g * scale, torch.zeros_like(g))
    return [_rows(grad, rows, V, stride).copy_(g)], [read]


def _heads(t: torch.Tensor, heads: int, N: int, d: int) -> torch.Tensor:
    """heads × N × d entries of memory from t's first element, in order: what an attention kernel reads."""
    return torch.as_strided(t, (heads, N, d), (N * d, d, 1), t.storage_offset())


def _attention_scores(q: torch.Tensor, k: torch.Tensor, scale: float, causal: bool) -> torch.Tensor:
    s = q @ k.transpose(-2, -1) * scale
    if causal:
        N = q.shape[-2]
        s = s.masked_fill(torch.ones(N, N, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return s


def _attention_forward(grid, q, k, v, o, lse, seq_len, scale, causal, block_q, block_k, head_dim) -> Done:
    """O and each row's log-sum-exp L (base e) of every head, computed in lse's dtype."""
    heads, N, d = grid[1], seq_len, head_dim
    read = [_heads(t, heads, N, d).clone() for t in (q, k, v)]
    qs, ks, vs = (t.to(lse.dtype) for t in read)
    s = _attention_scores(qs, ks, float(scale), bool(causal))
    row_lse = torch.logsumexp(s, dim=-1)
    out = torch.exp(s - row_lse[..., None]) @ vs
    return [_heads(o, heads, N, d).copy_(out), _in_memory_order(lse, heads * N).copy_(row_lse.reshape(-1))], read


def _attention_backward(q, k, v, o, lse, do, dq, dk, dv, heads, seq_len, head_dim, causal) -> Done:
    """dq, dk, dv of every head from q, k, v, O, L and dO (P recomputed from L), computed in lse's dtype."""
    N, d = seq_len, head_dim
    read = [_heads(t, heads, N, d).clone() for t in (q, k, v, o, do)] + [_in_memory_order(lse, heads * N).clone()]
    qs, ks, vs, os_, dos = (t.to(lse.dtype) for t in read[:5])
    scale = 1 / d**0.5
    p = torch.exp(_attention_scores(qs, ks, scale, bool(causal)) - read[5].reshape(heads, N)[..., None])
    ds = p * (dos @ vs.transpose(-2, -1) - (dos * os_).sum(-1, keepdim=True))
    grads = (ds @ ks * scale, ds.transpose(-2, -1) @ qs * scale, p.transpose(-2, -1) @ dos)
    return [_heads(t, heads, N, d).copy_(g) for t, g in zip((dq, dk, dv), grads)], read


# Triton's launch options: passed at a launch beside the kernel's arguments, never the kernel's parameters
LAUNCH_OPTIONS = frozenset(
    {"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid", "launch_pdl"}
)


class StandInKernel:
    """Launched as `kernel[grid](*tensors, n_elements, BLOCK_SIZE=...)`; each launch goes through `run`, which binds
    it here and hands it to the launcher (probes/launches.py). A row kernel's stand-in reads the grid (one program
    per row). Put in place of a learner's kernel (`in_place_of`), it takes its arguments as that kernel does:
    positional or by keyword under the kernel's own parameter names, with its defaults."""

    def __init__(
        self,
        name: str,
        compute: Callable[..., Done],
        takes_grid: bool = False,
        signature: inspect.Signature | None = None,
    ):
        self.__name__, self.compute, self.takes_grid, self.signature = name, compute, takes_grid, signature
        self.takes = len(inspect.signature(compute).parameters) - takes_grid  # the values compute reads, in order

    def in_place_of(self, kernel: object) -> StandInKernel:
        """This stand-in, binding each launch by the parameters of `kernel` (the learner's `@triton.jit` function,
        or its blank stub): a launch by keyword, or leaning on a default, then runs as it would with the learner's
        own kernel. Anything without a Python signature leaves the launch positional."""
        try:
            signature = inspect.signature(getattr(kernel, "fn", kernel))  # type: ignore[arg-type]
        except Exception:  # not a function (a learner's object can raise anything here): positional launches
            return self
        if len(signature.parameters) < self.takes:
            return self
        return StandInKernel(self.__name__, self.compute, self.takes_grid, signature)

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)

    def _bound(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """(the values compute reads, the launch's arguments by name) of one launch. The kernel's parameters in its
        own order: the first `takes` are those the notebook's kernel takes before its block sizes."""
        if self.signature is None:
            return args, {k: v for k, v in kwargs.items() if k.isupper()}
        given = {k: v for k, v in kwargs.items() if k not in LAUNCH_OPTIONS}
        try:
            bound = self.signature.bind(*args, **given)
        except TypeError as error:
            raise TypeError(f"{self.__name__}[grid](...): {error}") from None
        bound.apply_defaults()
        return tuple(bound.arguments.values())[: self.takes], dict(bound.arguments)

    def run(self, *args, grid=None, **kwargs) -> int:
        """Bind the launch here, in the caller's process, and have it computed by the launcher (probes/launches.py:
        the grader's, while a submission is graded); answers the launch's number."""
        values, named = self._bound(args, kwargs)
        if self.takes_grid:
            if callable(grid):
                grid = grid(named)
            if not isinstance(grid, (tuple, list)) or not grid or not all(type(g) is int and g > 0 for g in grid):
                raise TypeError(f"{self.__name__}[grid]: grid should be a tuple such as (rows,), not {grid!r}")
        from .probes import launches

        return launches.launch(self.__name__, tuple(grid) if self.takes_grid else None, tuple(values))


def execute(name: str, grid: tuple[int, ...] | None, values: tuple) -> Done:
    """One launch of the stand-in `name`, computed here: (the views it wrote, copies of what it read)."""
    stand_in = STAND_INS.get(name)
    if stand_in is None:
        raise ValueError(f"{name} is not one of the course's kernels")
    if len(values) != stand_in.takes:
        raise TypeError(f"{name}[grid](...) takes {stand_in.takes} arguments before its block size, not {len(values)}")
    with torch.no_grad():  # a kernel writes memory: autograd sees none of it (and views made under no_grad take it)
        return stand_in.compute(grid, *values) if stand_in.takes_grid else stand_in.compute(*values)


class StandInLauncher:
    """A notebook's Python launcher of several kernels (notebook 07's flash_backward) in the course's version: one
    launch of a course kernel through the launcher, with the learner's call's arguments; bound by name only."""

    takes = -1  # never one of the course's kernels by the number of its arguments: bound by its name alone

    def __init__(self, name: str, launch: Callable[..., object]) -> None:
        self.__name__, self.launch = name, launch

    def in_place_of(self, learners: object) -> StandInLauncher:
        return self

    def __call__(self, *args: object, **kwargs: object) -> object:
        return self.launch(*args, **kwargs)


def _flash_backward(q, k, v, o, lse, do, causal=False):
    """flash_backward(q, k, v, o, lse, do, causal) -> (dq, dk, dv), as the notebook's: tensors of shape
    (heads, N, d), each gradient a new buffer the course's backward kernel writes."""
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o), ("do", do)):
        if not isinstance(t, torch.Tensor) or t.dim() != 3:
            raise TypeError(f"flash_backward: {name} should be a tensor of shape (batch·heads, N, d)")
    heads, N, d = q.shape
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    STAND_INS["attention_backward_kernel"][(1,)](q, k, v, o, lse, do, dq, dk, dv, heads, N, d, bool(causal))
    return dq, dk, dv


# the notebooks' name of each kernel -> its stand-in
STAND_INS = {
    "silu_forward_kernel": StandInKernel("silu_forward_kernel", _silu_forward),
    "silu_backward_kernel": StandInKernel("silu_backward_kernel", _silu_backward),
    "ce_forward_kernel": StandInKernel("ce_forward_kernel", _ce_forward, takes_grid=True),
    "ce_backward_kernel": StandInKernel("ce_backward_kernel", _ce_backward, takes_grid=True),
    "attention_forward_kernel": StandInKernel("attention_forward_kernel", _attention_forward, takes_grid=True),
    "attention_backward_kernel": StandInKernel("attention_backward_kernel", _attention_backward),
}

# the notebooks' name of each Python launcher the course puts in place of the learner's -> its stand-in
LAUNCHERS = {"flash_backward": StandInLauncher("flash_backward", _flash_backward)}
