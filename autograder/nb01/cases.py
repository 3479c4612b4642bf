"""Notebook 01's cases: the inputs its probes feed and its judges regenerate, from the same params."""

from __future__ import annotations

import math

import torch

TRACE = ("w1", "w2", "w3", "w4", "w5")


def jacobian_problem(n: int, m: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    A = torch.randn(m, n, generator=gen, dtype=torch.float64)
    x = torch.randn(n, generator=gen, dtype=torch.float64)
    return A, x


SCALAR_FUNCTIONS = {"sin": math.sin, "exp": math.exp, "cube": lambda x: x**3}


def gradient_problem(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(n, generator=gen, dtype=torch.float64)
    x = torch.randn(n, generator=gen, dtype=torch.float64)
    return a, x
