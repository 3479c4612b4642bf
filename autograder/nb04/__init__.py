"""Checks of notebook 04 (the ctx toolbox and higher derivatives): the names its test cells import, registered.

Each ``probe_x(obj, seed=..., ...)`` runs inside the grading sandbox: it calls the learner's object (only ever
through ``call_learner``) on inputs made from ``seed`` (by the ``inputs_x`` functions of cases.py, which the judges
call too) and returns plain data: numbers, strings, booleans, lists, dicts and CPU tensors. No reference answer lives
here: the judges (judges/) recompute them and decide, part by part. Called in a notebook, a
check prints which parts pass.

The folder holds the notebook's checks, one side per file: `probes.py` runs in the grading sandbox, `cases.py` makes
the inputs both sides build from the same params, and `judges/` (a module per group of exercises) decides
outside the sandbox, which never sees it.
"""

from __future__ import annotations

from ..registry import NotebookChecks, show_verdict
from . import probes

# ------------------------------------------------------------------ the checks
# by_hand: a Function's backward is the learner's own formula (as nb03's
# check_function), so a backward handed to torch.autograd is flagged; hessian_vector_product is autograd's own job,
# and LinearLayer only wraps FunctionalLinear, so neither is.
checks = NotebookChecks(__name__, show=show_verdict)
check_saved_tensors = checks.add("check_saved_tensors", probes.probe_saved_tensors, by_hand=True)
check_inplace = checks.add("check_inplace", probes.probe_inplace, by_hand=True)
check_non_differentiable = checks.add("check_non_differentiable", probes.probe_non_differentiable, by_hand=True)
check_materialize = checks.add("check_materialize", probes.probe_materialize, by_hand=True)
check_twice_differentiable = checks.add("check_twice_differentiable", probes.probe_twice_differentiable, by_hand=True)
check_hvp = checks.add("check_hvp", probes.probe_hvp, by_hand=False)
check_functional_linear = checks.add("check_functional_linear", probes.probe_functional_linear, by_hand=True)
check_linear_layer = checks.add("check_linear_layer", probes.probe_linear_layer, by_hand=False)
# the check refuses a jvp that returns forward's output as the tangent (it segfaults); other self-referential
# tangents may still kill the kernel: the grader then names the likely cause
check_modern = checks.add(
    "check_modern",
    probes.probe_modern,
    by_hand=True,
    crash_hint="likely a jvp whose tangent is a tensor forward saved (a tangent is computed from the incoming one)",
)
check_custom_op = checks.add("check_custom_op", probes.probe_custom_op, by_hand=True)
__all__ = checks.names
