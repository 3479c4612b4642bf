"""Checks of notebook 05 (custom Functions on the GPU): the names its test cells import.

Probes (:mod:`autograder.probes.nb05`) call the learner's objects and return plain data; judges
(:mod:`autograder.judges.nb05`) recompute the references and decide. Every check runs on a CPU:
Triton kernels in Triton's interpreter, device-agnosticism on the meta device, autocast with CPU
autocast. A GPU, where there is one, adds nothing the score depends on.
"""
from __future__ import annotations

from .function_checks import FunctionSpec, add_spec, probe_function, register_reporting
from .judges import nb05 as judges
from .probes import nb05 as probes
from .registry import register

__all__ = ["check_gather_rows", "check_saved_bytes", "check_fused_activation", "check_recompute", "check_forward_kernel",
           "check_backward_kernel", "check_triton_function", "check_autocast_linear", "check_bandwidth",
           "triton_mode", "CRASH_HINT"]

# What the grader says when a test of this notebook kills the learner's kernel (see README: crash recovery).
CRASH_HINT = ("The Python process died while this exercise ran. In Triton's interpreter the usual cause is an "
              "unmasked tl.load/tl.store: a block that reaches past the end of a tensor reads or writes memory that "
              "is not the tensor's. Pass mask=offsets < n_elements to every tl.load and tl.store.")

triton_mode = probes.triton_mode

add_spec(FunctionSpec(name="gather_rows", title="GatherRows.apply(weight, index)", arg_names=("weight", "index"),
                      make_args=probes.gather_case,
                      reference=judges.gather_reference, double_backward=True))


def _probe_gather(obj, seed=0, cases=2, points=1, double_backward=False):
    # cuda=False: the device part of this check runs on the meta device, on every machine alike.
    return {"function": probe_function(obj, reference="gather_rows", seed=seed, cases=cases, points=points,
                                       double_backward=double_backward, cuda=False),
            "devices": probes.probe_gather_devices(obj, name=getattr(obj, "__name__", "GatherRows"))}


check_gather_rows = register_reporting("check_gather_rows", _probe_gather, judges.judge_gather)
check_saved_bytes = register("check_saved_bytes", probes.probe_saved_bytes, judges.judge_saved_bytes)
check_fused_activation = register_reporting("check_fused_activation", probes.probe_elementwise, judges.judge_elementwise)
check_triton_function = register_reporting("check_triton_function", probes.probe_elementwise, judges.judge_elementwise)
check_recompute = register_reporting("check_recompute", probes.probe_recompute, judges.judge_recompute)
check_forward_kernel = register("check_forward_kernel", probes.probe_kernel, judges.judge_kernel)
check_backward_kernel = register("check_backward_kernel", probes.probe_kernel, judges.judge_kernel)
check_autocast_linear = register_reporting("check_autocast_linear", probes.probe_autocast_linear,
                                           judges.judge_autocast_linear)
check_bandwidth = register("check_bandwidth", probes.probe_bandwidth, judges.judge_bandwidth)
