"""Checks of notebook 01 (reverse accumulation by hand): the names its test cells import.

Probes in :mod:`autograder.probes.nb01`, judges (references from PyTorch's autograd) in
:mod:`autograder.judges.nb01`.
"""
from __future__ import annotations

from .registry import register

check_primal_trace = register("check_primal_trace", probe="autograder.probes.nb01:probe_primal_trace",
                              judge="autograder.judges.nb01:judge_primal_trace")
check_adjoint_trace = register("check_adjoint_trace", probe="autograder.probes.nb01:probe_adjoint_trace",
                               judge="autograder.judges.nb01:judge_adjoint_trace")
check_tangent_trace = register("check_tangent_trace", probe="autograder.probes.nb01:probe_tangent_trace",
                               judge="autograder.judges.nb01:judge_tangent_trace")
check_jacobian_reverse = register("check_jacobian_reverse", probe="autograder.probes.nb01:probe_jacobian_reverse",
                                  judge="autograder.judges.nb01:judge_jacobian_reverse")
check_central_difference = register("check_central_difference", probe="autograder.probes.nb01:probe_central_difference",
                                    judge="autograder.judges.nb01:judge_central_difference")
check_numerical_gradient = register("check_numerical_gradient", probe="autograder.probes.nb01:probe_numerical_gradient",
                                    judge="autograder.judges.nb01:judge_numerical_gradient")
