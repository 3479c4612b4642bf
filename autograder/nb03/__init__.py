"""Checks of notebook 03 (custom autograd Functions): the names its test cells import, registered.

The Functions are checked by the generic `check_function(LearnerFunction, reference="<exercise>", ...)`
(:mod:`autograder.probes.function`, judged by :mod:`autograder.judges.function`); this module adds the
exercises' inputs (seeded, away from kinks) and the probes of the other checks (a learner's numerical Jacobian,
a learner's gradcheck, training through KillHead). The references and drawers are in judges.py.

The folder holds the notebook's checks, one side per file: `probes.py` runs in the grading sandbox, `cases.py` makes
the inputs both sides build from the same params, and `judges.py` decides outside the sandbox, which never sees it.
"""

from __future__ import annotations

from ..probes.function import check_function
from ..registry import NotebookChecks
from . import probes
from .cases import (
    GRADCHECK_PROBLEMS,
)
from .probes import translate_error

# ------------------------------------------------------------------ the checks
# by hand: a numerical Jacobian or a gradcheck handed to torch.autograd is
# flagged (the Functions are checked by the generic check_function, declared in autograder/probes/function.py)
checks = NotebookChecks(__name__)
check_numerical_jacobian = checks.add("check_numerical_jacobian", probes.probe_numerical_jacobian, by_hand=True)
check_my_gradcheck = checks.add("check_my_gradcheck", probes.probe_my_gradcheck, by_hand=True)
# training a model is what autograd is for here
check_kill_head_training = checks.add("check_kill_head_training", probes.probe_kill_head_training, by_hand=False)
__all__ = ["check_function", *checks.names, "translate_error", "GRADCHECK_PROBLEMS"]
