"""Checks of notebook 01 (reverse accumulation by hand): the names its test cells import, registered.

A probe runs inside the grading sandbox: it calls the learner's function and returns numbers. The judges (references
from PyTorch's autograd, and the hidden cases' drawers) are in judges.py.

The folder holds the notebook's checks, one side per file: `probes.py` runs in the grading sandbox, `cases.py` makes
the inputs both sides build from the same params, and `judges.py` decides outside the sandbox, which never sees it.
"""

from __future__ import annotations

from ..registry import NotebookChecks
from . import probes

# ------------------------------------------------------------------ the checks
# by hand: the point of these exercises is the derivative worked out, not
# autograd's (the primal trace is plain arithmetic, and jacobian_reverse is about driving autograd's reverse sweeps)
checks = NotebookChecks(__name__)
check_primal_trace = checks.add("check_primal_trace", probes.probe_primal_trace, by_hand=False)
check_adjoint_trace = checks.add("check_adjoint_trace", probes.probe_adjoint_trace, by_hand=True)
check_tangent_trace = checks.add("check_tangent_trace", probes.probe_tangent_trace, by_hand=True)
check_jacobian_reverse = checks.add("check_jacobian_reverse", probes.probe_jacobian_reverse, by_hand=False)
check_central_difference = checks.add("check_central_difference", probes.probe_central_difference, by_hand=True)
check_numerical_gradient = checks.add("check_numerical_gradient", probes.probe_numerical_gradient, by_hand=True)
__all__ = checks.names
