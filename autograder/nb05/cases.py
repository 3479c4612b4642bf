"""Notebook 05's cases: the inputs its probes feed and its judges regenerate, from the same params."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ..probes.function_cases import FunctionInputs, add_inputs

EPS = 1e-6  # the central-difference step (gradcheck's)


GUARD_VALUE = -12345.0  # what the guard zones around a kernel's output hold


# --------------------------------------------------------------------------------------------- inputs

_SHAPES = [(7,), (3, 5), (2, 3, 4), (33,), (4, 9)]


def generator(seed: int, case: int, salt: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(1_000_003 * int(seed) + 101 * int(case) + salt)


def elementwise_case(seed: int, case: int) -> dict[str, torch.Tensor]:
    """The float64 inputs of one case of an element-wise Function: x, a grad_output u, and the
    layouts used for the non-contiguous parts (a strided slice of a wider tensor, a transposed u)."""
    gen = generator(seed, case)
    shape = _SHAPES[case % len(_SHAPES)]
    x = 3 * torch.randn(shape, generator=gen, dtype=torch.float64)
    u = torch.randn(shape, generator=gen, dtype=torch.float64)
    rows, cols = 3 + case % 3, 4 + case % 4
    wide = 3 * torch.randn(rows, 2 * cols, generator=gen, dtype=torch.float64)  # x_strided = wide[:, ::2]
    x2 = 3 * torch.randn(rows, cols, generator=gen, dtype=torch.float64)
    u_transposed = torch.randn(cols, rows, generator=gen, dtype=torch.float64)  # u2 = u_transposed.t()
    return {"x": x, "u": u, "wide": wide, "x2": x2, "u_transposed": u_transposed}


def kernel_case(seed: int, n: int, dtype: str) -> dict[str, torch.Tensor]:
    gen = generator(seed, n, salt=5)
    return {
        "x": 3 * torch.randn(n, generator=gen, dtype=torch.float64).to(getattr(torch, dtype)),
        "g": torch.randn(n, generator=gen, dtype=torch.float64).to(getattr(torch, dtype)),
    }


def gather_case(gen: torch.Generator, case: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(weight, index) with repeated rows in index: their gradients must add up."""
    rows, dim, picks = [(5, 3, 7), (4, 2, 9), (6, 4, 6)][case % 3]
    weight = torch.randn(rows, dim, generator=gen, dtype=torch.float64)
    index = torch.randint(0, rows, (picks,), generator=gen)
    index[-1] = index[0]  # at least one row taken twice
    return weight, index


add_inputs(
    FunctionInputs(
        name="gather_rows",
        title="GatherRows.apply(weight, index)",
        arg_names=("weight", "index"),
        make_args=gather_case,
    )
)


def linear_case(seed: int, case: int) -> dict[str, torch.Tensor]:
    gen = generator(seed, case, salt=9)
    n, fan_in, fan_out = [(8, 64, 16), (16, 128, 8), (4, 256, 32)][case % 3]
    return {
        "x": torch.randn(n, fan_in, generator=gen, dtype=torch.float64),
        "W": torch.randn(fan_in, fan_out, generator=gen, dtype=torch.float64) / math.sqrt(fan_in),
        "b": torch.randn(fan_out, generator=gen, dtype=torch.float64),
        "u": torch.randn(n, fan_out, generator=gen, dtype=torch.float64),
    }


def _mlp_weights():
    gen = torch.Generator().manual_seed(505)
    return torch.randn(4, 6, generator=gen, dtype=torch.float64), torch.randn(6, 3, generator=gen, dtype=torch.float64)


def composed_gelu(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def recompute_problem(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The functions a learner's Checkpoint is tried on (all built from torch operations)."""
    if name == "gelu_chain":
        return lambda x: composed_gelu(composed_gelu(composed_gelu(x)))
    if name == "sin_exp":
        return lambda x: torch.sin(x) * torch.exp(-x * x)
    if name == "mlp":
        W1, W2 = _mlp_weights()
        return lambda x: torch.tanh(x @ W1.to(x.dtype)) @ W2.to(x.dtype)
    raise ValueError(f"unknown function {name!r}")


RECOMPUTE_PROBLEMS = ("gelu_chain", "sin_exp", "mlp")


def recompute_input(name: str, seed: int) -> torch.Tensor:
    gen = generator(seed, sum(map(ord, name)), salt=13)
    shape = (5, 4) if name == "mlp" else (11,)
    return torch.randn(shape, generator=gen, dtype=torch.float64)


def saved_bytes_problem(name: str, seed: int = 0) -> tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]:
    """(fn, inputs) for a learner's saved_bytes(fn, *inputs). Seed 0: the cases the notebook shows (1 000 float32
    entries); any other seed (drawn from the grader's secret) draws the sizes and the dtype, so that no table of
    answers fits the hidden cases."""
    gen = torch.Generator().manual_seed(sum(map(ord, name)) + 7919 * seed)
    n, dtype, (m, k, p) = 1000, torch.float32, (64, 32, 16)
    if seed:
        n = int(torch.randint(50, 3000, (), generator=gen))
        dtype = (torch.float32, torch.float64)[int(torch.randint(0, 2, (), generator=gen))]
        m, k, p = (int(v) for v in torch.randint(4, 80, (3,), generator=gen))
    x = torch.randn(n, generator=gen, dtype=dtype, requires_grad=True)
    if name == "silu_composed":
        return (lambda x: x * torch.sigmoid(x)), (x,)
    if name == "gelu_composed":
        return composed_gelu, (x,)
    if name == "exp_twice":  # exp saves its output: two tensors
        return (lambda x: torch.exp(torch.exp(x))), (x,)
    if name == "square_by_product":  # x * x saves x twice: one storage
        return (lambda x: x * x), (x,)
    if name == "matmul":
        wide = torch.float64 if not seed else dtype
        A = torch.randn(m, k, generator=gen, dtype=wide, requires_grad=True)
        B = torch.randn(k, p, generator=gen, dtype=wide, requires_grad=True)
        return (lambda A, B: A @ B), (A, B)
    if name == "no_grad_needed":  # nothing requires grad: nothing is saved
        return (lambda x: x * torch.sigmoid(x)), (x.detach(),)
    if name == "half_precision":
        return (lambda x: torch.tanh(x)), (x.detach().to(torch.bfloat16).requires_grad_(),)
    raise ValueError(f"unknown problem {name!r}")


SAVED_BYTES_PROBLEMS = (
    "silu_composed",
    "gelu_composed",
    "exp_twice",
    "square_by_product",
    "matmul",
    "no_grad_needed",
    "half_precision",
)
