"""Checks of notebook 02 (a scalar autograd engine): the names its test cells import.

Probes in :mod:`autograder.probes.nb02`, judges (references from PyTorch's autograd) in
:mod:`autograder.judges.nb02`. The graphs the tests use can be rebuilt by learners with
:func:`example_graph`, and the random expressions with :func:`random_expression_text`, so a failure
can be reproduced in the notebook.
"""

from __future__ import annotations

from .feedback import CheckFailed
from .probes.nb02_cases import example_graph, random_expression_text
from .registry import Check, NotebookChecks

__all__ = ["example_graph", "random_expression_text", "report_engine"]


_CHECKS = NotebookChecks("autograder.probes.nb02", "autograder.judges.nb02")


def _check(exercise: str, draw: str) -> Check:
    name = f"check_{exercise}"
    __all__.append(name)
    # every exercise here is by hand: the engine is the learner's, not torch.autograd
    return _CHECKS.add(name, f"probe_{exercise}", f"judge_{exercise}", draw=draw, by_hand=True)


check_mul = _check("mul", "draw_pairs")
check_truediv = _check("truediv", "draw_pairs")
check_pow = _check("pow", "draw_pow_cases")
check_tanh = _check("tanh", "draw_tanh_points")
check_topological_order = _check("topological_order", "draw_graphs")
check_backward = _check("backward", "draw_graphs")
check_engine = _check("engine", "draw_seeds")
check_zero_grad = _check("zero_grad", "draw_zero_grad_graphs")
check_gradient_check = _check("gradient_check", "draw_gradient_check_cases")
check_neuron_loss = _check("neuron_loss", "draw_neuron_cases")
check_seed_neuron = _check("seed_neuron", "draw_seed_neuron_cases")


def report_engine(Variable, seeds) -> None:
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
