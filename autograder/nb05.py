"""Checks of notebook 05 (custom Functions on the GPU): the names its test cells import.

Probes (:mod:`autograder.probes.nb05`) call the learner's objects and return plain data; judges
(:mod:`autograder.judges.nb05`) recompute the references and decide, and draw the hidden cases. Every
check runs on a CPU: Triton kernels in Triton's interpreter, device-agnosticism on the meta device,
autocast with CPU autocast. A GPU, where there is one, adds nothing the score depends on.
"""

from __future__ import annotations

from coursetools.device import triton_mode

from .registry import Check, NotebookChecks

__all__ = [
    "check_gather_rows",
    "check_saved_bytes",
    "check_fused_activation",
    "check_recompute",
    "check_forward_kernel",
    "check_backward_kernel",
    "check_triton_function",
    "check_autocast_linear",
    "check_bandwidth",
    "triton_mode",
    "CRASH_HINT",
]

# The grader's hint when a test of a Triton exercise kills the kernel (the rest of the notebook gets a fresh one).
CRASH_HINT = (
    "likely an unmasked tl.load/tl.store: a block that reaches past the end of a tensor reads or writes memory that "
    "is not the tensor's"
)

_CHECKS = NotebookChecks(
    "autograder.probes.nb05", "autograder.judges.nb05", show="autograder.jacobian_pictures:show_verdict"
)


def _register(
    name: str, probe: str, judge: str, draw: str, *, by_hand: bool, report: bool = True, triton: bool = False
) -> Check:
    return _CHECKS.add(
        name, probe, judge, draw=draw, by_hand=by_hand, show=report, crash_hint=CRASH_HINT if triton else None
    )


# by_hand: the Function's backward is the learner's own formula (or kernel), so one handed to torch.autograd is
# flagged; Checkpoint's backward is autograd on the recomputed fn by design, and the rest are not Functions.


check_gather_rows = _register("check_gather_rows", "probe_gather_rows", "judge_gather", "draw_seed", by_hand=True)
check_saved_bytes = _register(
    "check_saved_bytes",
    "probe_saved_bytes",
    "judge_saved_bytes",
    "draw_saved_bytes_problems",
    by_hand=False,
    report=False,
)
check_fused_activation = _register(
    "check_fused_activation", "probe_elementwise", "judge_elementwise", "draw_seed", by_hand=True
)
check_recompute = _register(
    "check_recompute", "probe_recompute", "judge_recompute", "draw_recompute_problems", by_hand=False
)
check_forward_kernel = _register(
    "check_forward_kernel",
    "probe_kernel",
    "judge_kernel",
    "draw_kernel_sizes",
    by_hand=False,
    report=False,
    triton=True,
)
check_backward_kernel = _register(
    "check_backward_kernel",
    "probe_kernel",
    "judge_kernel",
    "draw_kernel_sizes",
    by_hand=False,
    report=False,
    triton=True,
)
check_triton_function = _register(
    "check_triton_function", "probe_elementwise", "judge_elementwise", "draw_seed", triton=True, by_hand=True
)
check_autocast_linear = _register(
    "check_autocast_linear", "probe_autocast_linear", "judge_autocast_linear", "draw_seed", by_hand=True
)
check_bandwidth = _register(
    "check_bandwidth", "probe_bandwidth", "judge_bandwidth", "draw_bandwidth_cases", by_hand=False, report=False
)
