"""Checks of notebook 02 (a scalar autograd engine): the names its test cells import, registered.

The probes run inside the grading sandbox: they build graphs with the learner's `Variable` constructor (or the
learner's operators), call the learner's code through call_learner (time limit, recursion cap) and return plain
numbers. The judges (references from PyTorch's autograd) are in judges/. The graphs the tests
use can be rebuilt by learners with :func:`example_graph`, and the random expressions with
:func:`random_expression_text`, so a failure can be reproduced in the notebook.

The folder holds the notebook's checks, one side per file: `probes.py` runs in the grading sandbox, `cases.py` makes
the inputs both sides build from the same params, and `judges/` (a module per group of exercises) decides
outside the sandbox, which never sees it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..feedback import CheckFailed
from ..probes.nb02_cases import example_graph, random_expression_text
from ..registry import NotebookChecks
from . import probes

# ------------------------------------------------------------------ the checks
# every exercise here is by hand: the engine is the learner's, not torch.autograd
checks = NotebookChecks(__name__)
check_mul = checks.add("check_mul", probes.probe_mul, by_hand=True)
check_truediv = checks.add("check_truediv", probes.probe_truediv, by_hand=True)
check_pow = checks.add("check_pow", probes.probe_pow, by_hand=True)
check_tanh = checks.add("check_tanh", probes.probe_tanh, by_hand=True)
check_topological_order = checks.add("check_topological_order", probes.probe_topological_order, by_hand=True)
check_backward = checks.add("check_backward", probes.probe_backward, by_hand=True)
check_engine = checks.add("check_engine", probes.probe_engine, by_hand=True)
check_zero_grad = checks.add("check_zero_grad", probes.probe_zero_grad, by_hand=True)
check_gradient_check = checks.add("check_gradient_check", probes.probe_gradient_check, by_hand=True)
check_neuron_loss = checks.add("check_neuron_loss", probes.probe_neuron_loss, by_hand=True)
check_seed_neuron = checks.add("check_seed_neuron", probes.probe_seed_neuron, by_hand=True)
__all__ = [*checks.names, "example_graph", "random_expression_text", "report_engine"]


def report_engine(Variable: Any, seeds: Sequence[int]) -> None:
    """Compare the whole engine (operations and backward) with PyTorch on the random expressions of
    `seeds`, and print what differs. A report for the notebook, not a graded check: each operation and
    backward have test cells of their own, and one wrong derivative should cost its own exercise only."""
    differ = []
    for seed in seeds:
        try:
            check_engine(Variable, seeds=[seed])
        except CheckFailed as failure:
            differ.append((seed, str(failure)))
    print(
        f"{len(seeds) - len(differ)} of {len(seeds)} random expressions agree with PyTorch (value and every gradient)."
    )
    if differ:
        print(
            f"The first that differs (of {len(differ)}: {', '.join(str(seed) for seed, _ in differ[:10])}"
            f"{' ...' if len(differ) > 10 else ''}):\n{differ[0][1]}"
        )
