"""Notebook 05's judges of the Triton kernels, forward and backward, in the interpreter and compiled."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from coursetools.gpu_compile import launch_signature, specialization_class

from ...feedback import CheckFailed
from ...judges import kernel_compile
from ...judges.answers import entry, integer, per_case, tensor
from ...judges.verdict import Part, verdict_of
from ...registry import ProbeData, decides
from ..cases import (
    GUARD_VALUE,
    kernel_case,
)
from .common import (
    draw_kernel_sizes,
    index_list,
    reference_and_vjp,
    wrong_entries,
)

# --------------------------------------------------------------------------------------------- Triton kernels


@decides("check_forward_kernel", "check_backward_kernel", draw=draw_kernel_sizes)
def judge_kernel(
    data: ProbeData,
    kind: str = "forward",
    sizes: Sequence[Any] = ((10, 16),),
    seed: int = 0,
    dtypes: Sequence[str] = ("float64", "float32"),
) -> None:
    expected_runs = [(n, block, dtype) for n, block in sizes for dtype in dtypes]
    params = {"kind": kind, "sizes": sizes, "seed": seed, "dtypes": dtypes}
    launches, record = kernel_compile.run_recorded(data, "autograder.nb05.probes:probe_kernel", params)
    data = [
        entry(
            d,
            f"launch {i}",
            ("n", "block", "dtype", "values", "written_before", "written_after", "inputs_changed", "read_outside")
            + ("written_far",),
        )
        for i, d in enumerate(per_case(launches, expected_runs))
    ]
    if [(d["n"], d["block"], d["dtype"]) for d in data] != [tuple(r) for r in expected_runs]:
        raise CheckFailed("the kernel's results do not answer the launches the check asked for.")
    for i, (d, (n, _, _)) in enumerate(zip(data, expected_runs)):
        tensor(d["values"], f"launch {i}'s values", (n,))
    what = "silu_forward_kernel" if kind == "forward" else "silu_backward_kernel"
    for got in data:
        n, block, dtype = got["n"], got["block"], got["dtype"]
        launch = f"{what}[(cdiv({n}, {block}),)](…, n_elements={n}, BLOCK_SIZE={block}) on {dtype}"
        _judge_writes(got, launch)
        case = kernel_case(seed, n, dtype)
        x, g = case["x"].to(torch.float64), case["g"].to(torch.float64)
        want_y, want_g = reference_and_vjp("silu", x, g)
        _judge_kernel_values(got, kind, x, g, want_y, want_g, launch)
        _judge_reads(got, launch)
    # right in the interpreter: the second idea, that the same kernel compiles for a GPU
    values = Part("values", title="the values, in every launch (Triton's interpreter)")
    compiles = kernel_compile.compile_part()
    pointers = 2 if kind == "forward" else 3
    # one compile per launch that Triton specializes differently: n_elements 1 is a constant, a multiple of 16 aligned
    launches = {(block, dtype, specialization_class(n)): n for n, block, dtype in expected_runs}
    kernel_compile.judge_compiles(
        compiles,
        record,
        [
            (
                f"{dtype} tensors, n_elements={n}, BLOCK_SIZE={block}",
                *launch_signature(record, [kernel_compile.pointer(dtype)] * pointers + [n], {"BLOCK_SIZE": block}),
            )
            for (block, dtype, _), n in launches.items()
        ],
        others=[values],
    )
    return verdict_of([values, compiles], 1.0, what)


def _judge_writes(got, launch: str) -> None:
    """Where the kernel read and wrote: nothing outside its inputs and output (the guard zones, or farther), nothing
    into the inputs."""
    if integer(got["written_far"], f"{launch}'s far stores"):
        raise CheckFailed(
            f"{launch} stored {got['written_far']} value(s) far outside every tensor it was handed (the grader did "
            "not perform them).\nHint: likely an unmasked tl.store, or offsets that grow far too fast: a program's "
            "offsets are its block's, pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)."
        )
    if got["written_after"]:
        raise CheckFailed(
            f"{launch} wrote {got['written_after']} value(s) past the end of the output tensor.\n"
            "Hint: likely an unmasked tl.store: the last block reaches past n_elements, and its programs "
            "must neither read nor write the entries beyond it. On a GPU this corrupts other tensors; in "
            "the interpreter it can crash Python."
        )
    if got["written_before"]:
        raise CheckFailed(
            f"{launch} wrote {got['written_before']} value(s) before the start of the output tensor.\n"
            "Hint: a program's offsets start at the beginning of its own block and only go up."
        )
    if got["inputs_changed"]:
        raise CheckFailed(f"{launch} wrote into one of its inputs: store into the output pointer only.")


def _judge_reads(got, launch: str) -> None:
    """What the kernel read: its inputs' (and output's) entries only. Judged after its values: a wrong offset shows
    in both, and the values' message is the one that says what to mend."""
    if integer(got["read_outside"], f"{launch}'s reads"):
        raise CheckFailed(
            f"{launch} read {got['read_outside']} value(s) outside its tensors (past the end of an input, whether or "
            "not its results use them).\nHint: likely an unmasked tl.load: the last block reaches past n_elements, "
            "and a load needs the same mask as the store. On a GPU it reads other tensors' memory, or faults."
        )
    untouched = got["values"] == GUARD_VALUE
    if untouched.any():
        first = int(torch.nonzero(untouched)[0])
        raise CheckFailed(
            f"{launch} never wrote entries {index_list(untouched)} of the output "
            f"(the first is {first}).\nHint: program p handles the block of entries that starts at p·BLOCK_SIZE: "
            "its offsets come from its program id and the block size."
        )


def _judge_kernel_values(got, kind: str, x, g, want_y, want_g, launch: str) -> None:
    n, block, dtype, values = got["n"], got["block"], got["dtype"], got["values"]
    want = want_y if kind == "forward" else want_g
    rtol, atol = (1e-9, 1e-12) if dtype == "float64" else (2e-5, 2e-6)
    bad, err = wrong_entries(values, want, rtol, atol)
    if not bad.any():
        return
    hints = []
    if not bad[:block].any() and n > block:
        hints.append(
            "the first block is right and later ones are not: each program must work on its own block, its "
            "offsets computed from its program id."
        )
    close = lambda a: torch.allclose(values, a, rtol=1e-4, atol=1e-5)  # noqa: E731
    s = torch.sigmoid(x)
    if close(s):
        hints.append("that is σ(x); SiLU is x·σ(x).")
    elif kind == "backward" and close(want_g / g):
        hints.append("the local derivative alone: multiply it by grad_output, loaded from grad_out_ptr.")
    elif kind == "backward" and close(g * s):
        hints.append("d/dx [x·σ(x)] has two terms (product rule): σ(x) + x·σ(x)·(1 − σ(x)).")
    elif kind == "backward" and close(want_y):
        hints.append("that is the forward value: backward stores the gradient, grad_output·SiLU'(x).")
    if dtype == "float64" and torch.allclose(values, want, rtol=1e-5, atol=1e-6):
        hints.append(
            "right to about 6 digits only: a float64 input was computed in float32. Only the lower precisions "
            "are computed in float32; float64 stays float64."
        )
    raise CheckFailed(
        f"{launch} is wrong in {int(bad.sum())} of {n} entries: {index_list(bad)}; largest error "
        f"{err:.3g}." + "".join(f"\nHint: {h}" for h in hints)
    )
