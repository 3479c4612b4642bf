"""Judges of notebook 02 (a scalar autograd engine).

Every reference is recomputed here with PyTorch's autograd (or, for a plain chain, the product of its
local derivatives); the learner's objects are never seen.

A module per group of exercises; importing this package registers every judge.
"""

from . import engine, operations, training  # noqa: F401  (their judges register on import)
