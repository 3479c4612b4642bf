"""Checks of notebook 05 (custom Functions on the GPU): the names its test cells import, registered.

Each probe runs inside the grading sandbox: it calls the learner's object on the cases its params name and
returns plain data (numbers, strings, lists, dicts, CPU tensors); nothing here knows a right answer. The judges
(judges/) regenerate the inputs, compute every reference and decide. Every check runs on a
CPU: Triton kernels in Triton's interpreter, device-agnosticism on the meta device, autocast with CPU autocast. A
GPU, where there is one, adds nothing the score depends on.

A learner's Triton kernel runs compiled on the GPU where there is one, and in Triton's interpreter on CPU
tensors where there is none (re-wrapped as ``InterpretedFunction(kernel.fn)`` if the notebook imported Triton
in compiled mode, its ``tl`` helpers then run as Python). Its output tensor sits between two guard zones, so a
store past the end (a missing or wrong mask) lands in memory the probe owns and is reported, instead of
corrupting the process.

The Triton Function (TritonSiLU) is checked with the course's stand-in kernels (:mod:`autograder.course_kernels`)
bound to the notebook's kernel names: that exercise grades the Function around the kernels, which have their own.

The folder holds the notebook's checks, one side per file: `probes.py` runs in the grading sandbox, `cases.py` makes
the inputs both sides build from the same params, and `judges/` (a module per group of exercises) decides
outside the sandbox, which never sees it.
"""

from __future__ import annotations

from coursetools.device import triton_mode

from ..registry import NotebookChecks, show_verdict
from . import probes
from .probes import CRASH_HINT

# by_hand: the Function's backward is the learner's own formula (or kernel), so
# one handed to torch.autograd is flagged; Checkpoint's backward is autograd on the recomputed fn by design, and the
# rest are not Functions. show=False: the checks whose report is text only.
checks = NotebookChecks(__name__, show=show_verdict)
triton = NotebookChecks(__name__, show=show_verdict, crash_hint=CRASH_HINT, names=checks.names)
check_gather_rows = checks.add("check_gather_rows", probes.probe_gather_rows, by_hand=True)
check_saved_bytes = checks.add("check_saved_bytes", probes.probe_saved_bytes, by_hand=False, show=False)
check_fused_activation = checks.add("check_fused_activation", probes.probe_elementwise, by_hand=True)
check_recompute = checks.add("check_recompute", probes.probe_recompute, by_hand=False)
check_forward_kernel = triton.add("check_forward_kernel", probes.record_kernel, by_hand=False)
check_backward_kernel = triton.add("check_backward_kernel", probes.record_kernel, by_hand=False)
check_triton_function = checks.add(
    "check_triton_function", probes.probe_elementwise, by_hand=True, crash_hint=CRASH_HINT
)
check_autocast_linear = checks.add("check_autocast_linear", probes.probe_autocast_linear, by_hand=True)
check_bandwidth = checks.add("check_bandwidth", probes.probe_bandwidth, by_hand=False, show=False)
__all__ = [*checks.names, "triton_mode", "CRASH_HINT"]
