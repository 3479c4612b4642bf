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
import json
import math
from dataclasses import dataclass, field

import torch

from ...feedback import CheckFailed
from ...judges import answers
from ...probes.launch_plans import as_view, buffer_bytes

SAME_WITHIN = 1e-3  # of the largest entry: D computed in float32 for float64 inputs is still D (the grader's is used)
# Views kept (zeros, or the grader's tensor times the learner's number) carry a few bits each (which views are zero,
# the numbers): an honest launcher keeps a handful; beyond this many, a view starts as NaN, so no gradient of
# thousands of numbers can be spelled out in them.
MAX_KEPT_VIEWS = 32
# The numbers handed to the launches (N, the scale, strides, block sizes; a constexpr's text) come from the learner's
# process too: a backward needs a dozen; thousands, or a long text, could be a gradient passed as arguments.
MAX_NUMBERS = 64


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
        shown = [name for _, name in sorted(self.differing, key=lambda d: (d[0], "not counted" not in d[1]))]
        return ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")


def counted_start(plan: dict, known: dict[str, torch.Tensor]) -> Counted:
    """The plan's buffers as the graded replay starts them; `known`: the tensors the grader computes for the case
    (float64), each matched to a view by its entries in order, or as the front of a view padded past it."""
    originals = [buffer_bytes(content) for content in answers.listed(plan["buffers"], "the buffers")]
    starts = [torch.full_like(raw, 0xFF) for raw in originals]
    counted = Counted(buffers=[])
    returned = {r.get("buffer") for r in answers.listed(plan["returns"], "the returned views") if isinstance(r, dict)}
    seen, kept, numbers = set(), 0, set()
    for number, launch in enumerate(answers.listed(plan["launches"], "the launches"), 1):
        launch = answers.entry(launch, "a launch", ("kernel", "grid", "args"))
        if not isinstance(launch["args"], dict):
            raise CheckFailed("a launch's arguments are not described by name")
        values = [a["value"] for a in launch["args"].values() if isinstance(a, dict) and "value" in a]
        numbers |= {(type(v).__name__, v) for v in values if type(v) in (int, float, str)}
        if len(numbers) > MAX_NUMBERS or any(isinstance(v, str) and len(v) > 32 for v in values):
            raise CheckFailed(
                f"the launches hand the kernels more than {MAX_NUMBERS} different numbers, or a text of more than 32 "
                "characters: a backward's launches need a few numbers (N, the scale, strides, block sizes); the "
                "gradients are the kernels' to compute."
            )
        for name, arg in launch["args"].items():
            layout = arg.get("tensor") if isinstance(arg, dict) else None
            if not isinstance(layout, dict) or "buffer" not in layout:
                continue
            key = json.dumps(layout, sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            index, how = _start_view(originals, starts, layout, known, kept < MAX_KEPT_VIEWS)
            kept += how is None or how.startswith("counted as")
            if how and how != "nothing":
                counted.differing.append(
                    (index in returned, f"`{name}` of launch {number} (`{launch['kernel']}`, {how})")
                )
    counted.buffers = [base64.b64encode(s.numpy().tobytes()).decode("ascii") for s in starts]
    counted.changed = any(not torch.equal(a, b) for a, b in zip(originals, starts))
    return counted


def _start_view(
    originals: list, starts: list, layout: dict, known: dict[str, torch.Tensor], keep: bool
) -> tuple[int, str | None]:
    """Writes the view's start into `starts`: the learner's zeros, or the grader's own tensor times the number the
    learner's content has, else NaN; (the buffer, how that start differs from what the learner's process left there:
    None where it does not)."""
    held, start = as_view(layout, {}, originals), as_view(layout, {}, starts)
    index = int(layout["buffer"])
    if held.numel() == 0:
        return index, "nothing"
    if not keep:
        return index, f"not counted: more than {MAX_KEPT_VIEWS} views kept"
    try:
        if bool((held == 0).all()):
            start.copy_(held)
            return index, None
        found = _multiple_of(held.to(torch.float64), known) if held.is_floating_point() else None
        if found is None:
            return index, "not counted"
        name, c, own = found
        start.copy_(own.to(held.dtype))
    except RuntimeError:  # a view whose entries overlap (a stride of 0) cannot be written entry by entry
        return index, "not counted"
    return index, None if torch.equal(start, held) else f"counted as the grader's {c:.6g}·{name}"


def _multiple_of(values: torch.Tensor, known: dict[str, torch.Tensor]) -> tuple[str, float, torch.Tensor] | None:
    """(name, c, the start) where `values` are c·T for a known tensor T and a number c, within SAME_WITHIN: T's
    entries in order, or T at the front of one axis the view pads past it, the view laid out as T's axes or flat
    (the padding starts as NaN, or as zeros where it held zeros)."""
    for name, tensor in known.items():
        if tensor.numel() == values.numel():
            c = _factor(values.reshape(-1), tensor.reshape(-1))
            if c is not None:
                return name, c, (c * tensor).reshape(values.shape)
        shaped = _laid_out_as(values, tensor)
        if shaped is None:
            continue
        longer = [a for a, (m, n) in enumerate(zip(shaped.shape, tensor.shape)) if m != n]
        if len(longer) == 1 and shaped.shape[longer[0]] > tensor.shape[longer[0]]:
            axis, length = longer[0], tensor.shape[longer[0]]
            c = _factor(shaped.narrow(axis, 0, length).reshape(-1), tensor.reshape(-1))
            if c is not None:
                tail = shaped.narrow(axis, length, shaped.shape[axis] - length)
                own = torch.full_like(shaped, 0.0 if bool((tail == 0).all()) else float("nan"))
                own.narrow(axis, 0, length).copy_(c * tensor)
                return name, c, own.reshape(values.shape)
    return None


def _laid_out_as(values: torch.Tensor, tensor: torch.Tensor) -> torch.Tensor | None:
    """`values` with `tensor`'s axes: as they are, or a flat view read as heads × a longer N × the rest."""
    if values.dim() == tensor.dim():
        return values
    rest = tensor.shape[0] * math.prod(tensor.shape[2:])
    if values.dim() == 1 and tensor.dim() >= 2 and rest and values.numel() % rest == 0:
        return values.reshape(tensor.shape[0], -1, *tensor.shape[2:])
    return None


def _factor(x: torch.Tensor, t: torch.Tensor) -> float | None:
    """c where x = c·t within SAME_WITHIN of the largest entry (None: no such number, or c = 0)."""
    if not bool(torch.isfinite(x).all()) or not bool(t.any()):
        return None
    c = float(x @ t) / float(t @ t)
    own = c * t
    return c if c != 0 and float((x - own).abs().max()) <= SAME_WITHIN * float(own.abs().max()) else None
