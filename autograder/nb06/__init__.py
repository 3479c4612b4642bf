"""Checks of notebook 06 (the capstone: a fused cross-entropy in Triton): the names its test cells import,
registered.

A kernel probe launches the learner's kernel as notebook 05's do (compiled on a GPU, else in Triton's interpreter) on
logits laid out in rows of stride V + BLOCK_V whose spare columns hold NaN: a kernel that reads past its row's end (a
missing or wrong mask on the last chunk) gets NaN into its sum. Its output sits between guard zones. The judges
(judges/) recompute every reference in float64 and decide, part by part. The Function probes run the learner's
Function with the course's stand-in kernels in place of `ce_forward_kernel` and `ce_backward_kernel`
(:mod:`autograder.course_kernels`, as notebook 05's TritonSiLU: a kernel mistake costs its kernel's exercise only),
name the launches each forward and backward made (what they stored is the launcher's log, the grader's while a
submission is graded: :mod:`autograder.probes.launches`), record what forward saved, and, for the linear
cross-entropy, the largest block of memory PyTorch allocated.

The folder holds the notebook's checks, one side per file: `probes.py` runs in the grading sandbox, `cases.py` makes
the inputs both sides build from the same params, and `judges/` (a module per group of exercises) decides
outside the sandbox, which never sees it.
"""

from __future__ import annotations

from ..registry import NotebookChecks, show_verdict
from . import probes
from .cases import (
    column_chunks,
)

checks = NotebookChecks(__name__)
check_logsumexp = checks.add("check_logsumexp", probes.probe_logsumexp, by_hand=False)
check_online_lse = checks.add("check_online_lse", probes.probe_online_lse, by_hand=False)
check_row_lse = checks.add("check_row_lse", probes.record_kernel, by_hand=False)
check_ce_forward = checks.add("check_ce_forward", probes.record_kernel, by_hand=False)
check_ce_backward = checks.add("check_ce_backward", probes.record_kernel, by_hand=False)
# by hand: the Function's backward is the learner's kernel, so a backward handed to torch.autograd is flagged
check_fused_ce = NotebookChecks(__name__, show=show_verdict, names=checks.names).add(
    "check_fused_ce", probes.probe_fused_ce, by_hand=True, measures_memory=True
)
check_new_saved_bytes = checks.add("check_new_saved_bytes", probes.probe_new_saved_bytes, by_hand=False)
check_bf16 = checks.add("check_bf16", probes.probe_bf16, by_hand=True)
check_linear_ce = NotebookChecks(__name__, show=show_verdict, names=checks.names).add(
    "check_linear_ce", probes.probe_linear_ce, by_hand=True, measures_memory=True
)
__all__ = [*checks.names, "column_chunks"]
