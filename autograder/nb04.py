"""Checks for notebook 04 (the ctx toolbox and higher derivatives): the names its test cells import.

Each check is a probe (autograder/probes/nb04.py: calls the learner's object, returns plain data) and a
judge (autograder/judges/nb04.py: recomputes the references with PyTorch and decides, part by part).
Called in a notebook, a check prints which parts pass and returns the points earned.
"""
from __future__ import annotations

from .function_checks import register_reporting
from .judges import nb04 as judges
from .probes import nb04 as probes

check_saved_tensors = register_reporting("check_saved_tensors", probes.probe_saved_tensors, judges.judge_saved_tensors)
check_inplace = register_reporting("check_inplace", probes.probe_inplace, judges.judge_inplace)
check_non_differentiable = register_reporting("check_non_differentiable", probes.probe_non_differentiable,
                                              judges.judge_non_differentiable)
check_materialize = register_reporting("check_materialize", probes.probe_materialize, judges.judge_materialize)
check_twice_differentiable = register_reporting("check_twice_differentiable", probes.probe_twice_differentiable,
                                                judges.judge_twice_differentiable)
check_hvp = register_reporting("check_hvp", probes.probe_hvp, judges.judge_hvp)
check_functional_linear = register_reporting("check_functional_linear", probes.probe_functional_linear,
                                             judges.judge_functional_linear)
check_linear_layer = register_reporting("check_linear_layer", probes.probe_linear_layer, judges.judge_linear_layer)
check_modern = register_reporting("check_modern", probes.probe_modern, judges.judge_modern)
check_custom_op = register_reporting("check_custom_op", probes.probe_custom_op, judges.judge_custom_op)

__all__ = ["check_saved_tensors", "check_inplace", "check_non_differentiable", "check_materialize",
           "check_twice_differentiable", "check_hvp", "check_functional_linear", "check_linear_layer",
           "check_modern", "check_custom_op"]
