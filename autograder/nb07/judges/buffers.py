"""What a launch plan's buffers start with where grading decides: only what carries no gradient computed elsewhere.

A learner's launcher hands its kernels buffers it made (probes/launch_plans.py), and their first contents come from
the learner's process: honest designs put zeros there (dQ accumulated by atomics), D = rowsum(dO ∘ O) or L in base 2
computed by PyTorch, K scaled by a number (the Triton tutorial's backward), or whatever memory held (torch.empty).
A forger puts a gradient there, in any disguise (doubled, offset, bit-shuffled, in the low bits of K). So the graded
replay starts each buffer as 0xFF bytes (NaN), except where a kernel's view of it held zeros or one of the tensors
the grader computes itself times a number: there it starts as the grader's own values, never the learner's bytes.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field

import torch

from ...feedback import CheckFailed
from ...judges import answers
from ...probes.launches import strided_view

SAME_WITHIN = 1e-3  # of the largest entry: D computed in float32 for float64 inputs is still D (the grader's is used)


@dataclass
class Counted:
    """The buffers' first contents for the graded replay (base64, as in a plan), and the kernels' views of them
    that start otherwise than the learner's process left them."""

    buffers: list[str]
    # (returned, "`src_ptr` of launch 1 (`copy_kernel`, not counted)"): named last when returned (kernels write those)
    differing: list[tuple[bool, str]] = field(default_factory=list)
    changed: bool = False

    def names(self) -> str:
        if not self.differing:
            return "the bytes of a buffer that no kernel's view covers"
        shown = [name for _, name in sorted(self.differing, key=lambda d: (d[0], not d[1].endswith("not counted)")))]
        return ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")

    def note(self) -> str:
        return f"what {self.names()} held before any launch is not counted"


def counted_start(plan: dict, known: dict[str, torch.Tensor]) -> Counted:
    """The plan's buffers as the graded replay starts them; `known`: the tensors the grader computes for the case
    (float64), each matched to a view by its entries in order."""
    originals = [_raw(content) for content in answers.listed(plan["buffers"], "the buffers")]
    starts = [torch.full_like(raw, 0xFF) for raw in originals]
    counted = Counted(buffers=[])
    returned = {r.get("buffer") for r in answers.listed(plan["returns"], "the returned views") if isinstance(r, dict)}
    seen = set()
    for number, launch in enumerate(answers.listed(plan["launches"], "the launches"), 1):
        launch = answers.entry(launch, "a launch", ("kernel", "grid", "args"))
        for name, arg in dict(launch["args"]).items():
            layout = arg.get("tensor") if isinstance(arg, dict) else None
            if not isinstance(layout, dict) or "buffer" not in layout:
                continue
            key = json.dumps(layout, sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            how = _start_view(originals, starts, layout, known)
            if how:
                counted.differing.append(
                    (layout["buffer"] in returned, f"`{name}` of launch {number} (`{launch['kernel']}`, {how})")
                )
    counted.buffers = [base64.b64encode(s.numpy().tobytes()).decode("ascii") for s in starts]
    counted.changed = any(not torch.equal(a, b) for a, b in zip(originals, starts))
    return counted


def _raw(content: object) -> torch.Tensor:
    try:
        data = base64.b64decode(content, validate=True) if isinstance(content, str) else None
    except (binascii.Error, ValueError):
        data = None
    if data is None:
        raise CheckFailed("a buffer of the launches is not described as bytes")
    return torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)


def _start_view(originals: list, starts: list, layout: dict, known: dict[str, torch.Tensor]) -> str | None:
    """Writes the view's start into `starts`: the learner's zeros, or the grader's own tensor times the number the
    learner's content has, else NaN; how that start differs from what the learner's process left (None: it does not)."""
    try:
        index = int(layout["buffer"])
        held, start = strided_view(originals[index], layout), strided_view(starts[index], layout)
    except (KeyError, IndexError, TypeError, ValueError):
        raise CheckFailed("a launch's tensor reaches outside the memory it was made in") from None
    if held.numel() == 0:
        return None
    try:
        if bool((held == 0).all()):
            start.copy_(held)
            return None
        found = _multiple_of(held.to(torch.float64), known) if held.is_floating_point() else None
        if found is None:
            return "not counted"
        name, c, own = found
        start.copy_(own.reshape(held.shape).to(held.dtype))
    except RuntimeError:  # a view whose entries overlap (a stride of 0) cannot be written entry by entry
        return "not counted"
    return None if torch.equal(start, held) else f"counted as the grader's {c:.6g}·{name}"


def _multiple_of(values: torch.Tensor, known: dict[str, torch.Tensor]) -> tuple[str, float, torch.Tensor] | None:
    """(name, c, c·T) for the known tensor T (entries in order) and number c that `values` are, within SAME_WITHIN."""
    x = values.reshape(-1)
    if not bool(torch.isfinite(x).all()):
        return None
    for name, tensor in known.items():
        t = tensor.reshape(-1)
        if t.numel() != x.numel() or not bool(t.any()):
            continue
        c = float(x @ t) / float(t @ t)
        own = c * t
        if c != 0 and float((x - own).abs().max()) <= SAME_WITHIN * float(own.abs().max()):
            return name, c, own
    return None
