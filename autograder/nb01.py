"""Checks of notebook 01 (reverse accumulation by hand): the names its test cells import.

Probes in :mod:`autograder.probes.nb01`, judges (references from PyTorch's autograd) in
:mod:`autograder.judges.nb01`.
"""

from __future__ import annotations

from .registry import Check, NotebookChecks

__all__ = [
    "check_primal_trace",
    "check_adjoint_trace",
    "check_tangent_trace",
    "check_jacobian_reverse",
    "check_central_difference",
    "check_numerical_gradient",
]


_CHECKS = NotebookChecks("autograder.probes.nb01", "autograder.judges.nb01")


def _check(exercise: str, draw: str, by_hand: bool) -> Check:
    return _CHECKS.add(f"check_{exercise}", f"probe_{exercise}", f"judge_{exercise}", draw=draw, by_hand=by_hand)


# by hand: the point of these exercises is the derivative worked out, not autograd's (the primal trace is plain
# arithmetic, and jacobian_reverse is about driving autograd's reverse sweeps)
check_primal_trace = _check("primal_trace", "draw_points", by_hand=False)
check_adjoint_trace = _check("adjoint_trace", "draw_points", by_hand=True)
check_tangent_trace = _check("tangent_trace", "draw_tangent_cases", by_hand=True)
check_jacobian_reverse = _check("jacobian_reverse", "draw_jacobian_cases", by_hand=False)
check_central_difference = _check("central_difference", "draw_difference_cases", by_hand=True)
check_numerical_gradient = _check("numerical_gradient", "draw_gradient_cases", by_hand=True)
