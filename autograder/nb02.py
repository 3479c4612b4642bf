"""Checks of notebook 02 (a scalar autograd engine): the names its test cells import.

Probes in :mod:`autograder.probes.nb02`, judges (references from PyTorch's autograd) in
:mod:`autograder.judges.nb02`. The graphs the tests use can be rebuilt by learners with
:func:`example_graph`, and the random expressions with :func:`random_expression_text`, so a failure
can be reproduced in the notebook.
"""
from __future__ import annotations

from .probes.nb02_cases import example_graph, random_expression_text
from .registry import register

__all__ = ["example_graph", "random_expression_text"]


def _check(exercise: str):
    name = f"check_{exercise}"
    __all__.append(name)
    return register(name, probe=f"autograder.probes.nb02:probe_{exercise}", judge=f"autograder.judges.nb02:judge_{exercise}")


check_mul = _check("mul")
check_truediv = _check("truediv")
check_pow = _check("pow")
check_tanh = _check("tanh")
check_topological_order = _check("topological_order")
check_backward = _check("backward")
check_engine = _check("engine")
check_zero_grad = _check("zero_grad")
check_gradient_check = _check("gradient_check")
check_neuron_loss = _check("neuron_loss")
