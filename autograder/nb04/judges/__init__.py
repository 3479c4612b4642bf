"""Judges of notebook 04: they decide outside the learner's process, from the probes' data alone.

Every reference is recomputed here with PyTorch's own operations and autograd (torch.sin, torch.tanh,
torch.nn.functional.softplus, torch.autograd.functional.hvp, ...): no backward formula of the exercises
is written here. Each check is split into parts that earn their share of the points, so that a
Function that computes the right numbers but misses the property the exercise is about (mark_dirty,
mark_non_differentiable, None gradients, double backward, parameter-shaped gradients, opcheck) loses
exactly that part, with a hint.

A module per group of exercises; importing this package registers every judge.
"""

from . import ctx, linear, modern, second_order  # noqa: F401  (their judges register on import)
