"""Notebook 07's cases: the inputs its probes feed and its judges regenerate, from the same params, and the
references the judges compare with (float64, composed of PyTorch operations)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from ..nb05.cases import generator

# (batch dims, N, d, causal) of the cases the notebook shows (seed 0): a single head, a causal batch, two heads
# whose length is no multiple of a block
SHOWN = (((1,), 5, 4, False), ((2,), 7, 8, True), ((1, 2), 19, 16, True))


def attention_shape(seed: int, case: int) -> tuple[tuple[int, ...], int, int, bool]:
    """(batch dims, N, d, causal) of one case. Seed 0: the shown ones; any other seed (the grader's secret) draws
    them, every other case causal."""
    if not seed:
        return SHOWN[case % len(SHOWN)]
    gen = generator(seed, case, salt=71)
    pick = lambda options: options[int(torch.randint(0, len(options), (), generator=gen))]  # noqa: E731
    batch = pick(((1,), (2,), (1, 2), (2, 3)))
    N = int(torch.randint(1, 41, (), generator=gen))
    return batch, N, pick((4, 8, 16)), case % 2 == 1


def attention_inputs(seed: int, case: int, dtype: torch.dtype = torch.float64) -> dict:
    """q, k, v and a grad_output `do` of one case (shape batch + (N, d)), and `causal`. Scores q·k/√d of a few
    units: softmax rows neither uniform nor one-hot, so a missing scale or a wrong axis shows."""
    batch, N, d, causal = attention_shape(seed, case)
    gen = generator(seed, case, salt=73)
    q, k, v, do = (torch.randn(*batch, N, d, generator=gen, dtype=torch.float64) for _ in range(4))
    return {"q": (2 * q).to(dtype), "k": k.to(dtype), "v": v.to(dtype), "do": do.to(dtype), "causal": causal}


def scores(q: torch.Tensor, k: torch.Tensor, causal: bool, scale: float | None = None) -> torch.Tensor:
    """S = q kᵀ·scale (scale 1/√d unless given), −∞ above the diagonal when causal."""
    s = q @ k.transpose(-2, -1) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        N = q.shape[-2]
        s = s.masked_fill(torch.ones(N, N, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return s


def reference_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    return torch.softmax(scores(q, k, causal), dim=-1) @ v


def reference_lse(q: torch.Tensor, k: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """Each row's log-sum-exp of its scores, in base e: what forward keeps for backward (N per head)."""
    return torch.logsumexp(scores(q, k, causal), dim=-1)


def reference_gradients(inputs: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dq, dk, dv) of the reference attention for the case's grad_output, by PyTorch's autograd, in float64."""
    q, k, v = (inputs[n].detach().to(torch.float64).requires_grad_() for n in "qkv")
    out = reference_attention(q, k, v, inputs["causal"])
    return torch.autograd.grad(out, (q, k, v), inputs["do"].to(torch.float64))


# ---------------------------------------------------------------------------------------- what autograd saves
# The attention functions a learner's measurement `saved_for_backward(attention, n, d)` is handed: each keeps a
# different set of tensors for backward, so no single formula answers them all.


def _softmax_by_hand(s: torch.Tensor) -> torch.Tensor:
    e = torch.exp(s - s.amax(dim=-1, keepdim=True).detach())
    return e / e.sum(dim=-1, keepdim=True)


class _KeepsLse(torch.autograd.Function):
    """Attention that keeps q, k, v, the output and the row log-sum-exps, as FlashAttention does."""

    @staticmethod
    def forward(ctx, q, k, v):
        s = scores(q, k, False)
        lse = torch.logsumexp(s, dim=-1)
        out = torch.exp(s - lse[..., None]) @ v
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def backward(ctx, do):
        q, k, v, out, lse = ctx.saved_tensors
        p = torch.exp(scores(q, k, False) - lse[..., None])
        ds = p * (do @ v.transpose(-2, -1) - (do * out).sum(-1, keepdim=True))
        scale = 1 / math.sqrt(q.shape[-1])
        return ds @ k * scale, ds.transpose(-2, -1) @ q * scale, p.transpose(-2, -1) @ do


SAVED_ATTENTIONS: dict[str, Callable[..., torch.Tensor]] = {
    "softmax": lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v,
    "causal": lambda q, k, v: reference_attention(q, k, v, causal=True),
    "by_hand_softmax": lambda q, k, v: _softmax_by_hand(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])) @ v,
    "keeps_lse": lambda q, k, v: _KeepsLse.apply(q, k, v),
}


def saved_inputs(n: int, d: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """float32 q, k, v of shape (1, n, d) that require grad."""
    gen = generator(seed, n, salt=79)
    return tuple(torch.randn(1, n, d, generator=gen).requires_grad_() for _ in range(3))  # type: ignore[return-value]


def measured_saved_bytes(attention: Callable[..., torch.Tensor], n: int, d: int) -> int:
    """The bytes autograd keeps for backward of attention(q, k, v), each storage once (inputs included)."""
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    q, k, v = saved_inputs(n, d)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        attention(q, k, v)
    return sum(storages.values())


# ------------------------------------------------------------------------------------------------ tiled forward
# (case, block_q, block_k) of the tiled forward's runs: blocks that divide N and blocks that do not, and unequal
# query and key blocks (a loop over the wrong one shows)
TILE_BLOCKS = ((4, 4), (8, 4), (4, 16))


def tile_runs(cases: int) -> list[tuple[int, int, int]]:
    """(case, block_q, block_k) of each run of the tiled forward: every case with each pair of blocks in turn."""
    return [(case, *TILE_BLOCKS[case % len(TILE_BLOCKS)]) for case in range(cases)]


# one long head, float64, for the memory part: an N×N tensor is many times one tile or one head's q
MEMORY_CASE = ((1,), 128, 16)
MEMORY_BLOCKS = (16, 16)


def memory_inputs(seed: int) -> dict:
    """One long causal head (MEMORY_CASE), float64: where keeping N×N scores costs many times q, k, v and O."""
    batch, N, d = MEMORY_CASE
    gen = generator(seed, N, salt=83)
    q, k, v, do = (torch.randn(*batch, N, d, generator=gen, dtype=torch.float64) for _ in range(4))
    return {"q": q, "k": k, "v": v, "do": do, "causal": True}


# float32 scores near 100 (q scaled up): exp of a score overflows float32 unless the running maximum is subtracted
LOUD_SCALE = 40.0


# ------------------------------------------------------------------------------------------------ the kernels
# A kernel case: (heads, N, d, causal, BLOCK_Q, BLOCK_K, dtype), the heads standing for batch × heads. Dimensions
# are at least 16 (tl.dot needs them there on a GPU), and so are the blocks.
KernelCase = tuple[int, int, int, bool, int, int, str]


def kernel_inputs(seed: int, case: KernelCase) -> dict:
    """q, k, v and a grad_output `do` of shape (heads, N, d) in the case's dtype (made in float64, rounded)."""
    heads, N, d, causal, bq, bk, dtype = case
    gen = generator(seed, 7 * N + d + 3 * heads + int(causal), salt=89)
    q, k, v, do = (torch.randn(heads, N, d, generator=gen, dtype=torch.float64) for _ in range(4))
    cast = getattr(torch, dtype)
    return {"q": (2 * q).to(cast), "k": k.to(cast), "v": v.to(cast), "do": do.to(cast), "causal": causal}


def first_costly_key(block: int, block_q: int, block_k: int) -> int:
    """The first key a causal program of query block `block` never needs: the start of the first key block that
    lies wholly above its diagonal (a loop over key blocks stops before it)."""
    return -(-(block + 1) * block_q // block_k) * block_k


# A backward case: (heads, N, d, causal, dtype); the learner's flash_backward picks its own blocks.
BackwardCase = tuple[int, int, int, bool, str]


def backward_inputs(seed: int, case: BackwardCase) -> dict:
    """q, k, v, grad_output `do`, and the course's forward's O and L (L in float32, float64 for float64 inputs), as
    the learner's flash_backward receives them: (heads, N, d) contiguous."""
    heads, N, d, causal, dtype = case
    gen = generator(seed, 11 * N + d + 5 * heads + int(causal), salt=97)
    q, k, v, do = (torch.randn(heads, N, d, generator=gen, dtype=torch.float64) for _ in range(4))
    q = 2 * q
    cast = getattr(torch, dtype)
    q, k, v, do = (t.to(cast) for t in (q, k, v, do))
    wide = [t.to(torch.float64) for t in (q, k, v)]
    o = reference_attention(*wide, causal).to(cast)
    lse = reference_lse(wide[0], wide[1], causal).to(torch.float64 if dtype == "float64" else torch.float32)
    return {"q": q, "k": k, "v": v, "o": o, "lse": lse, "do": do, "causal": causal}


# the visible cases of the backward: one per part (plain, ragged, causal, causal float32 with another d)
BACKWARD_CASES: tuple[BackwardCase, ...] = (
    (2, 32, 16, False, "float64"),
    (1, 37, 16, False, "float64"),
    (2, 48, 16, True, "float64"),
    (1, 40, 32, True, "float32"),
)

# one long causal head, for the backward's memory part: N×N scores are many times a head's q
MEMORY_BACKWARD: BackwardCase = (1, 128, 16, True, "float64")


def backward_runs(cases: Sequence[BackwardCase]) -> list[BackwardCase]:
    """The runs of a backward check: its cases, then the long head."""
    return [tuple(c) for c in cases] + [MEMORY_BACKWARD]  # type: ignore[misc]


# ------------------------------------------------------------------------------------------------ the Function
# A Function case: (batch, heads, N, d, causal). The runs add a layout run (q, k, v transposed views of
# (batch, N, heads, d) tensors) and a run where only q needs a gradient.
FunctionCase = tuple[int, int, int, int, bool]
FUNCTION_CASES: tuple[FunctionCase, ...] = ((1, 2, 24, 16, False), (2, 1, 37, 16, True))


def function_inputs(seed: int, case: FunctionCase, transposed: bool = False) -> dict:
    """q, k, v and grad_output `do` of shape (batch, heads, N, d), float64; transposed: each a view of a
    (batch, N, heads, d) tensor (not contiguous)."""
    B, H, N, d, causal = case
    gen = generator(seed, 13 * N + d + 7 * H + B + int(causal), salt=101)
    made = [torch.randn(B, N, H, d, generator=gen, dtype=torch.float64) for _ in range(4)]
    made[0] = 2 * made[0]
    q, k, v, do = (t.transpose(1, 2) if transposed else t.transpose(1, 2).contiguous() for t in made)
    return {"q": q, "k": k, "v": v, "do": do, "causal": causal}


def function_runs(cases: Sequence[FunctionCase]) -> list[tuple[FunctionCase, str]]:
    """(case, what the run tries) of a Function check: its cases, the first again with transposed views, and the
    last with only q needing a gradient."""
    cases = [tuple(c) for c in cases]  # type: ignore[misc]
    return [(c, "case") for c in cases] + [(cases[0], "transposed"), (cases[-1], "only q")]
