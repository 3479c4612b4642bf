"""Checks of notebook 07 (attention as one custom Function: FlashAttention-2 in Triton): the names its test cells
import, registered.

The PyTorch exercises (composed attention, the measurement of what autograd saves, the backward by hand, the tiled
forward) are probed on cases `cases.py` makes from the params and judged (judges/) against float64 references
composed of PyTorch operations. The folder holds the notebook's checks, one side per file: `probes.py` runs in the
grading sandbox, `cases.py` makes the inputs both sides build from the same params, and `judges/` decides outside
the sandbox, which never sees it.
"""

from __future__ import annotations

from ..registry import NotebookChecks, show_verdict
from . import probes

checks = NotebookChecks(__name__)
check_composed_attention = checks.add("check_composed_attention", probes.probe_composed_attention, by_hand=False)
check_saved_for_backward = checks.add("check_saved_for_backward", probes.probe_saved_for_backward, by_hand=False)
check_attention_by_hand = NotebookChecks(__name__, show=show_verdict, names=checks.names).add(
    "check_attention_by_hand", probes.probe_attention_by_hand, by_hand=True, measures_memory=True
)
check_tiled_forward = NotebookChecks(__name__, show=show_verdict, names=checks.names).add(
    "check_tiled_forward", probes.probe_tiled_forward, by_hand=False, measures_memory=True
)
check_attention_forward_kernel = checks.add("check_attention_forward_kernel", probes.record_kernel, by_hand=False)
check_flash_backward = NotebookChecks(__name__, show=show_verdict, names=checks.names).add(
    "check_flash_backward", probes.probe_flash_backward, by_hand=False, measures_memory=True
)
check_flash_attention = NotebookChecks(__name__, show=show_verdict, names=checks.names).add(
    "check_flash_attention", probes.probe_flash_attention, by_hand=True, measures_memory=True
)
__all__ = [*checks.names]
