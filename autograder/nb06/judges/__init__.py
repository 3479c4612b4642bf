"""Judges of notebook 06 (the fused cross-entropy): references in float64 from PyTorch, decided part by part (one
idea per part; a mistake that shows in several cases costs its idea once).

A module per group of exercises; importing this package registers every judge.
"""

from . import by_hand, functions, kernels, linear  # noqa: F401  (their judges register on import)
