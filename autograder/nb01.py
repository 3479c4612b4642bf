"""Checks of notebook 01 (reverse accumulation by hand): the names its test cells import.

Probes in :mod:`autograder.probes.nb01`, judges (references from PyTorch's autograd) in
:mod:`autograder.judges.nb01`.
"""

from __future__ import annotations

from .registry import register

__all__ = [
    "check_primal_trace",
    "check_adjoint_trace",
    "check_tangent_trace",
    "check_jacobian_reverse",
    "check_central_difference",
    "check_numerical_gradient",
]


def _check(exercise: str, draw: str, by_hand: bool = False):
    return register(
        f"check_{exercise}",
        probe=f"autograder.probes.nb01:probe_{exercise}",
        judge=f"autograder.judges.nb01:judge_{exercise}",
        draw=f"autograder.judges.nb01:{draw}",
        by_hand=by_hand,
    )


# by hand: the point of these exercises is the derivative worked out, not autograd's
check_primal_trace = _check("primal_trace", "draw_points")
check_adjoint_trace = _check("adjoint_trace", "draw_points", by_hand=True)
check_tangent_trace = _check("tangent_trace", "draw_tangent_cases", by_hand=True)
check_jacobian_reverse = _check("jacobian_reverse", "draw_jacobian_cases")
check_central_difference = _check("central_difference", "draw_difference_cases", by_hand=True)
check_numerical_gradient = _check("numerical_gradient", "draw_gradient_cases", by_hand=True)
