"""Checks of notebook 05 (custom Functions on the GPU): the names its test cells import.

Probes (:mod:`autograder.probes.nb05`) call the learner's objects and return plain data; judges
(:mod:`autograder.judges.nb05`) recompute the references and decide. Every check runs on a CPU:
Triton kernels in Triton's interpreter, device-agnosticism on the meta device, autocast with CPU
autocast. A GPU, where there is one, adds nothing the score depends on.
"""
from __future__ import annotations

from coursetools.device import triton_mode

from .registry import register

__all__ = ["check_gather_rows", "check_saved_bytes", "check_fused_activation", "check_recompute", "check_forward_kernel",
           "check_backward_kernel", "check_triton_function", "check_autocast_linear", "check_bandwidth",
           "triton_mode", "CRASH_HINT"]

# What the grader says when a test of this notebook kills the learner's kernel (see README: crash recovery).
CRASH_HINT = ("The Python process died while this exercise ran. In Triton's interpreter the usual cause is an "
              "unmasked tl.load/tl.store: a block that reaches past the end of a tensor reads or writes memory that "
              "is not the tensor's. Pass mask=offsets < n_elements to every tl.load and tl.store.")

_PROBES, _JUDGES, _SHOW = "autograder.probes.nb05", "autograder.judges.nb05", "autograder.jacobian_pictures:show_verdict"


def _register(name: str, probe: str, judge: str, report: bool = True):
    return register(name, probe=f"{_PROBES}:{probe}", judge=f"{_JUDGES}:{judge}", show=_SHOW if report else None)


check_gather_rows = _register("check_gather_rows", "probe_gather_rows", "judge_gather")
check_saved_bytes = _register("check_saved_bytes", "probe_saved_bytes", "judge_saved_bytes", report=False)
check_fused_activation = _register("check_fused_activation", "probe_elementwise", "judge_elementwise")
check_recompute = _register("check_recompute", "probe_recompute", "judge_recompute")
check_forward_kernel = _register("check_forward_kernel", "probe_kernel", "judge_kernel", report=False)
check_backward_kernel = _register("check_backward_kernel", "probe_kernel", "judge_kernel", report=False)
check_triton_function = _register("check_triton_function", "probe_elementwise", "judge_elementwise")
check_autocast_linear = _register("check_autocast_linear", "probe_autocast_linear", "judge_autocast_linear")
check_bandwidth = _register("check_bandwidth", "probe_bandwidth", "judge_bandwidth", report=False)
