"""Checks of notebook 03 (custom autograd Functions): the names its test cells import.

The Functions are checked by the generic `check_function(LearnerFunction, reference="<exercise>", ...)`
(probe :mod:`autograder.probes.function`, judge :mod:`autograder.judges.function`); the exercises'
inputs are in :mod:`autograder.probes.nb03`, their references in :mod:`autograder.judges.nb03`.
The other checks (a learner's numerical Jacobian, a learner's gradcheck, training through KillHead)
follow the same probe/judge split.
"""

from __future__ import annotations

from .probes.nb03 import GRADCHECK_PROBLEMS
from .probes.torch_errors import translate
from .registry import CHECKS, NotebookChecks, register

__all__ = [
    "check_function",
    "check_numerical_jacobian",
    "check_my_gradcheck",
    "check_kill_head_training",
    "translate_error",
    "GRADCHECK_PROBLEMS",
]

# One generic check for every Function exercise of every notebook (nb04 and nb05 add theirs).
# (by hand: a backward, a numerical Jacobian or a gradcheck handed to torch.autograd is flagged)
check_function = CHECKS.get("check_function") or register(
    "check_function",
    probe="autograder.probes.function:probe_function",
    judge="autograder.judges.function:judge_function",
    show="autograder.jacobian_pictures:show_verdict",
    draw="autograder.judges.nb03:draw_function_seed",
    by_hand=True,
)
_CHECKS = NotebookChecks("autograder.probes.nb03", "autograder.judges.nb03")
check_numerical_jacobian = _CHECKS.add(
    "check_numerical_jacobian",
    "probe_numerical_jacobian",
    "judge_numerical_jacobian",
    draw="draw_jacobian_problems",
    by_hand=True,
)
check_my_gradcheck = _CHECKS.add(
    "check_my_gradcheck", "probe_my_gradcheck", "judge_my_gradcheck", draw="draw_gradcheck_problems", by_hand=True
)
# training a model is what autograd is for here
check_kill_head_training = _CHECKS.add(
    "check_kill_head_training",
    "probe_kill_head_training",
    "judge_kill_head_training",
    draw="draw_training_cases",
    by_hand=False,
)


def translate_error(exc: BaseException) -> str:
    """For the notebook: a PyTorch error in plain words (the same translation the checks use)."""
    return translate(exc)
