"""The scoring rule as the catalogue tests state it: a check's points are shared equally among its ideas, and a
catalogued mistake costs the shares of the ideas it touches. Written out here, not imported from the judges, so
that a judge that weighs its parts differently fails these tests."""

from __future__ import annotations

# How many ideas each check scores (on a machine without a GPU: no CUDA part).
IDEAS = {
    "function": 3,  # forward, backward (gradcheck and the reference: one idea), interface
    "function+double_backward": 4,
    "cube": 2,
    "inplace": 3,
    "mask": 3,
    "sincos": 3,
    "tanh": 2,
    "sinh": 3,
    "linear": 3,
    "layer": 4,
    "softplus": 3,
    "vmap": 2,
    "op": 3,
    "gather_rows": 4,  # forward, backward, interface, device
    "fused_silu": 6,  # forward, backward, interface, layout, memory, device
    "fused_gelu": 6,
    "checkpoint": 5,  # forward, reference, interface, memory, calls
    "triton_silu": 5,  # forward, backward, interface, layout, memory
    "linear32": 4,
}
SAME_IDEA = {"gradcheck": "backward", "reference": "backward"}


def ideas_lost(parts: set[str]) -> int:
    return len({SAME_IDEA.get(p, p) for p in parts})


def expected_score(check: str, points: float, lost_parts: set[str]) -> float:
    n = IDEAS[check]
    return round(points * (n - ideas_lost(lost_parts)) / n, 2)
