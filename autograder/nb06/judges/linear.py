"""Notebook 06's judge of the fused linear cross-entropy (LinearCrossEntropy): the loss and both gradients chunk by
chunk, from the kernels' work, with no N×V tensor made in forward or backward."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

import torch

from ...judges import answers, launch_evidence
from ...judges.verdict import Part, Verdict, verdict_of
from ...registry import ProbeData, decides
from ..cases import LEFT_PER_ROW, linear_case
from .common import launched, titled_parts
from .functions import (
    NOTHING_RIGHT,
    loss_not_from_kernels,
    per_row_results,
    written_in_row_order,
)

LINEAR_CE_KEYS = (
    "loss",
    "launch_ids",
    "returned",
    "largest",
    "kept",
    "device",
)


def linear_ce_cases() -> list[tuple]:
    """(N tokens, D features, V vocabulary, chunk, grad_output): chunks that divide N, and one that does not."""
    return [(16, 5, 40, 4, 1.0), (18, 4, 33, 5, 0.5)]


def draw_linear_ce(rng: random.Random, count: int) -> dict[str, Any]:
    cases = []
    for _ in range(count):
        chunk = rng.randint(2, 6)
        cases.append(
            (
                chunk * rng.randint(4, 6) + rng.randint(0, chunk - 1),
                rng.randint(2, 6),
                rng.randint(20, 60),
                chunk,
                rng.choice([0.5, 1.0, 2.0]),
            )
        )
    return {"cases": cases, "seed": rng.randrange(1, 10**6)}


ALLOCATION_GRANULE = {"cpu": 1, "cuda": 512}


@decides("check_linear_ce", draw=draw_linear_ce)
def judge_linear_ce(data: ProbeData, cases: Sequence[Any], seed: int = 0, points: float = 5) -> Verdict:
    parts = titled_parts(
        {
            "forward": "the loss (the mean over N tokens)",
            "reference": "the hidden states' and the weight's gradients",
            "interface": "backward's interface (two gradients of their inputs' shapes, then None, None)",
            "chunked": "memory: no tensor of N x V made, forward or backward",
        }
    )
    right: list[bool] = []
    for case, got in zip(cases, answers.per_case(data, cases)):
        N, D, V, chunk, grad_output = case
        entry = answers.entry(
            got,
            f"case {case}",
            LINEAR_CE_KEYS,
        )
        if entry["device"] not in ALLOCATION_GRANULE:
            raise answers.mismatch(f"case {case} ran on the unknown device {entry['device']!r}")
        loss = answers.number(entry["loss"], f"the loss of case {case}")
        largest = answers.numbers(entry["largest"], f"the memory of case {case}", length=2)
        returned = answers.listed(entry["returned"], f"backward's return of case {case}")
        where = f"N = {N} tokens, D = {D}, V = {V}, chunk = {chunk}"
        hidden, weight, target = linear_case(seed, N, D, V)  # the reference, on the CPU
        h, w = hidden.clone().requires_grad_(), weight.clone().requires_grad_()
        expected = torch.nn.functional.cross_entropy(h @ w.T, target)
        grad_h, grad_w = torch.autograd.grad(expected * grad_output, (h, w))
        loss_right = math.isclose(loss, float(expected.detach()), rel_tol=1e-9, abs_tol=1e-12)
        right.append(loss_right)
        _judge_linear_kernels(parts, where, entry, case, h, w, target)
        if not loss_right:
            parts["forward"].fail(
                f"{where}: the loss is off",
                "each chunk's logits are hidden[chunk] @ weight.T; the mean divides the chunks' summed losses by N",
            )
        if len(returned) != 4 or returned[2] is not None or returned[3] is not None:
            parts["interface"].fail(
                f"{where}: backward returned {len(returned)} value(s)",
                "one per input of forward: the hidden states' gradient, the weight's, None, None",
            )
        grads = returned[:2] + [None] * (2 - len(returned[:2]))
        for what, got_grad, want in (("hidden", grads[0], grad_h), ("weight", grads[1], grad_w)):
            if not isinstance(got_grad, torch.Tensor):  # no gradient at all: backward's own idea is missing
                parts["reference"].fail(f"{where}: backward returned no {what} gradient", LINEAR_GRAD_HINT)
                parts["interface"].fail(f"{where}: the {what} gradient is missing", same_mistake_as="reference")
            elif got_grad.shape != want.shape:
                parts["interface"].fail(f"{where}: the {what} gradient is not a tensor of its input's shape", None)
            elif not torch.allclose(got_grad, want, rtol=1e-7, atol=1e-10):
                parts["reference"].fail(f"{where}: the {what} gradient is off", LINEAR_GRAD_HINT)
            else:
                right.append(True)
        kept = answers.integer(entry["kept"], f"the memory kept for backward in case {case}")
        _judge_linear_memory(parts["chunked"], where, case, largest, kept, ALLOCATION_GRANULE[entry["device"]])
    if not any(right):  # neither a loss nor a gradient right: what it left alone earns nothing
        for name in ("interface", "chunked"):
            parts[name].unscore(NOTHING_RIGHT)
    return verdict_of(list(parts.values()), points, "LinearCrossEntropy.apply(hidden, weight, target, chunk)")


def _judge_linear_kernels(parts: dict, where: str, entry: Any, case: Sequence[Any], h, w, target) -> None:
    """The kernels did the chunks' work: forward's wrote each row's loss or log-sum-exp, backward's each chunk's
    logit gradient (scaled or not) or softmax, in row order."""
    N, _, V, _, grad_output = case
    logits = (h @ w.T).detach()
    forward_launches, backward_launches = launched(entry, "forward"), launched(entry, "backward")
    launches = [len(forward_launches), len(backward_launches)]
    # what the launches on the case's logits wrote (the learner's chunk products: equal to float64's last digits)
    forward_launches = launch_evidence.reading(forward_launches, logits, rtol=1e-9)
    backward_launches = launch_evidence.reading(backward_launches, logits, rtol=1e-9)
    rows_expected, counted = per_row_results(logits, target, -100)
    forward_left = launch_evidence.left(forward_launches, N, LEFT_PER_ROW * N)
    missed = loss_not_from_kernels(launches[0], forward_left, rows_expected, counted, rtol=1e-6)
    if missed:
        parts["forward"].fail(
            f"{where}: {missed}",
            "each chunk's logits go to the forward kernel, which writes the chunk's losses and log-sum-exps; the "
            "loss is the mean of what it wrote",
        )
    softmax = torch.softmax(logits, dim=1)
    unit = softmax - torch.nn.functional.one_hot(target, V).to(softmax.dtype)
    candidates = [unit * (grad_output / N), unit, unit * grad_output, unit / N, softmax]
    everything = torch.ones(N * V, dtype=torch.bool)
    backward_left = launch_evidence.left(backward_launches, N * V, LEFT_PER_ROW * N * V)
    in_backward = launches[1] and written_in_row_order(backward_left, candidates, everything, rtol=1e-6)
    # Liger-Kernel's design: forward's kernels write each chunk's gradient (for grad_output 1), forward keeps the
    # two products, and backward scales them by grad_output
    forward_large = launch_evidence.left(forward_launches, N * V, LEFT_PER_ROW * N * V)
    in_forward = written_in_row_order(forward_large, candidates, everything, rtol=1e-6)
    if not (in_backward or in_forward):
        parts["reference"].fail(
            f"{where}: "
            + (
                "no Triton kernel wrote the chunks' logit gradients (backward launched none)"
                if not launches[1]
                else "backward's kernels did not write the chunks' logit gradients"
            ),
            "each chunk of logits goes to the backward kernel, which writes the chunk's gradient G (in backward, "
            "from recomputed logits, or already in forward); the products with G give the two gradients",
        )


LINEAR_GRAD_HINT = (
    "per chunk, the logits' gradient G = (softmax - one_hot) * grad_output / N gives G @ weight for the chunk's hidden "
    "states and adds G.T @ hidden[chunk] to the weight's"
)


def _judge_linear_memory(part: Part, where: str, case: Sequence[Any], largest: list, kept: int, granule: int) -> None:
    """No N×V tensor, forward or backward: nothing kept for backward that adds up to it (pieces too), and no block
    larger than what a chunked answer needs (one chunk's logits, or a gradient the size of an input), rounded up to
    the allocator's granule (CUDA's caching allocator hands out multiples of 512 bytes)."""
    N, D, V, chunk, _ = case
    if kept >= N * V * 8:
        part.fail(
            f"{where}: forward keeps {kept} bytes for backward beyond its inputs: the N×V logits are {N * V * 8} bytes",
            "keep the inputs and the N log-sum-exps only: backward recomputes each chunk's logits",
        )
    allowed = -(-max(min(chunk, N) * V, N * D, V * D) * 8 // granule) * granule
    if max(largest) > allowed:
        which = "forward" if largest[0] > allowed else "backward"
        made = "an N×V tensor" if max(largest) >= N * V * 8 else "a block larger than one chunk's logits"
        part.fail(
            f"{where}: {which} made {made} ({max(largest)} bytes; one chunk of {min(chunk, N)} tokens' logits is "
            f"{min(chunk, N) * V * 8})",
            "the point is that the N×V logits never exist: compute, use and drop them `chunk` tokens at a time "
            "(the chunk you are given), in backward too (recompute each chunk's logits there)",
        )
