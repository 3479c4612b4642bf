"""Judges of notebook 05: they recompute every reference from the params and decide, outside the learner's process.

References come from PyTorch's own operations and autograd (``F.silu``, ``F.gelu(approximate="tanh")``,
``weight[index]``, ``x @ W + b``) in float64 on the CPU; the byte counts of the composed expressions
from saved-tensor hooks run here. No backward formula of the exercises is written in this module
except where a hint recognises a known mistake.

A module per group of exercises; importing this package registers every judge.
"""

from . import activations, kernels, memory  # noqa: F401  (their judges register on import)
