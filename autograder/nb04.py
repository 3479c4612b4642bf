"""Checks of notebook 04 (the ctx toolbox and higher derivatives): the names its test cells import.

Each check is a probe (autograder/probes/nb04.py: calls the learner's object through call_learner and
returns plain data) and a judge (autograder/judges/nb04.py: recomputes the references with PyTorch and
decides, part by part). Called in a notebook, a check prints which parts pass and returns the points earned.
Hidden tests name drawn cases (`check_x(obj, ..., draw=N)`): the drawers are the `draw_*` of judges/nb04.py.
"""

from __future__ import annotations

from .registry import Check, NotebookChecks

__all__ = [
    "check_saved_tensors",
    "check_inplace",
    "check_non_differentiable",
    "check_materialize",
    "check_twice_differentiable",
    "check_hvp",
    "check_functional_linear",
    "check_linear_layer",
    "check_modern",
    "check_custom_op",
]


_CHECKS = NotebookChecks(
    "autograder.probes.nb04", "autograder.judges.nb04", show="autograder.jacobian_pictures:show_verdict"
)


def _register(name: str, suffix: str, draw: str, *, by_hand: bool, crash_hint: str | None = None) -> Check:
    return _CHECKS.add(
        name, f"probe_{suffix}", f"judge_{suffix}", draw=f"draw_{draw}", by_hand=by_hand, crash_hint=crash_hint
    )


# by_hand: a Function's backward is the learner's own formula (as nb03's check_function), so a backward handed
# to torch.autograd is flagged; hessian_vector_product is autograd's own job, and LinearLayer only wraps
# FunctionalLinear, so neither is.
check_saved_tensors = _register("check_saved_tensors", "saved_tensors", "elementwise_cases", by_hand=True)
check_inplace = _register("check_inplace", "inplace", "elementwise_cases", by_hand=True)
check_non_differentiable = _register(
    "check_non_differentiable", "non_differentiable", "elementwise_cases", by_hand=True
)
check_materialize = _register("check_materialize", "materialize", "elementwise_cases", by_hand=True)
check_twice_differentiable = _register(
    "check_twice_differentiable", "twice_differentiable", "elementwise_cases", by_hand=True
)
check_hvp = _register("check_hvp", "hvp", "hvp_problems", by_hand=False)
check_functional_linear = _register("check_functional_linear", "functional_linear", "linear_cases", by_hand=True)
check_linear_layer = _register("check_linear_layer", "linear_layer", "layer_training", by_hand=False)
# the check refuses a jvp that returns forward's output as the tangent (it segfaults); other self-referential
# tangents may still kill the kernel: the grader then names the likely cause
check_modern = _register(
    "check_modern",
    "modern",
    "elementwise_cases",
    by_hand=True,
    crash_hint="likely a jvp whose tangent is a tensor forward saved (a tangent is computed from the incoming one)",
)
check_custom_op = _register("check_custom_op", "custom_op", "elementwise_cases", by_hand=True)
