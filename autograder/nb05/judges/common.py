"""Notebook 05's judges: the hidden cases' drawers and the helpers the judges share."""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F

from ...judges.verdict import Part, Verdict, verdict_of
from ..cases import (
    RECOMPUTE_PROBLEMS,
    SAVED_BYTES_PROBLEMS,
)

# --------------------------------------------------------------------------------------------- drawers (hidden cases)
# draw_x(rng, N) -> params: the grader seeds rng from the gradebook's secret and the submission (CONTRIBUTING.md).


def draw_saved_bytes_problems(rng: random.Random, count: int) -> dict:
    names = list(SAVED_BYTES_PROBLEMS)
    rng.shuffle(names)
    return {"problems": (names * count)[:count], "seed": rng.randrange(1, 10**6)}


def draw_recompute_problems(rng: random.Random, count: int) -> dict:
    names = list(RECOMPUTE_PROBLEMS)
    rng.shuffle(names)
    return {"problems": (names * count)[:count], "seed": rng.randrange(1, 10**6)}


def draw_kernel_sizes(rng: random.Random, count: int) -> dict:
    """Sizes below, at and above a block, a single element, several programs with a ragged last block."""
    sizes = []
    for k in range(count):
        block = rng.choice((8, 16, 32, 64, 128))
        n = [1, block, rng.randint(2, block - 1), rng.randint(block + 1, 12 * block)][k % 4]
        sizes.append((n, block))
    return {"sizes": sizes, "seed": rng.randrange(1, 10**6)}


def draw_bandwidth_cases(rng: random.Random, count: int) -> dict:
    return {
        "cases": [
            (
                rng.choice((1, 3, 4096, 1 << 20, 1 << 24)),
                rng.choice((2, 4, 8)),
                rng.choice((1e-6, 3e-5, 2e-4, 1e-3, 1.0)),
                rng.choice(("forward", "backward")),
            )
            for _ in range(count)
        ]
    }


TITLES = {
    "forward": "forward agrees with the reference",
    "gradcheck": "backward agrees with the numerical derivative (central differences of your forward)",
    "reference": "backward agrees with the reference backward",
    "interface": "backward's interface (one gradient of x's shape and dtype; grad_output untouched; float32 stays "
    "float32)",
    "layout": "non-contiguous tensors (a strided input, a transposed grad_output)",
    "memory": "memory: forward saves exactly one tensor, of the input's shape",
    "device": "device-agnostic: output and gradient on the input's device (tried on the meta device) and in its dtype",
    "calls": "recomputation: fn runs once in forward and once in backward",
    "autocast": "under autocast (bfloat16): forward computes in float32",
    "autocast_backward": "under autocast: backward computes in float32 too",
}


REFERENCE = {"silu": F.silu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh")}


# --------------------------------------------------------------------------------------------- helpers


def reference_and_vjp(activation: str, x: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = x.detach().to(torch.float64).clone().requires_grad_(True)
    y = REFERENCE[activation](x)
    (g,) = torch.autograd.grad(y, x, u.to(torch.float64))
    return y.detach(), g


def wrong_entries(
    got: torch.Tensor, want: torch.Tensor, rtol: float, atol: float | torch.Tensor
) -> tuple[torch.Tensor, float]:
    err = (got - want).abs()
    bad = ~(err <= atol + rtol * want.abs())  # NaN counts as wrong
    return bad, float(err[bad].max()) if bad.any() and not err[bad].isnan().all() else float(
        "nan"
    ) if bad.any() else 0.0


def index_list(bad: torch.Tensor, limit: int = 5) -> str:
    where = torch.nonzero(bad)
    shown = ["[" + ", ".join(map(str, idx)) + "]" for idx in where[:limit].tolist()]
    return ", ".join(shown) + (f" and {len(where) - limit} more" if len(where) > limit else "")


def verdict_of_parts(parts: dict[str, Part], points: float, title: str) -> Verdict:
    for p in parts.values():  # the report shows these titles (this notebook's gradcheck is central differences)
        p.title = p.title or TITLES.get(p.name)
    return verdict_of(list(parts.values()), points, title)


def judge_attributes(got: dict, part: Part) -> int:
    """Fails `part` when forward kept tensors as attributes of ctx; returns their bytes."""
    kept = got.get("attribute_tensors") or []
    if kept:
        names = ", ".join(dict.fromkeys(f"ctx.{k['attribute']}" for k in kept))
        part.fail(
            f"forward keeps {sum(k['bytes'] for k in kept)} bytes for backward as attributes of ctx ({names}): "
            "memory all the same, only invisible to autograd's saved-tensor hooks and version checks.",
            "save tensors with ctx.save_for_backward(...) only, and recompute the rest in backward.",
        )
    return sum(k["bytes"] for k in kept)
