"""Notebook 06's judges of the Functions: FusedCrossEntropy, its memory and bfloat16, the fused
linear loss."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

import torch

from ...judges import answers, launch_evidence
from ...judges.verdict import Part, Verdict, verdict_of
from ...registry import ProbeData, decides
from ..cases import (
    DRAWN_SAVED,
    LEFT_PER_ROW,
    SAVED_PROBLEMS,
    bf16_case,
    ce_targets,
    row_case,
    saved_problem,
)
from .common import (
    launched,
    launched_the_gradient,
    titled_parts,
)

# --------------------------------------------------------------------------------------------- the Function

# a Function with neither a loss nor a gradient right: what it left alone, or got vacuously, earns nothing
NOTHING_RIGHT = "not scored: neither a loss nor a gradient is right yet"

FUSED_PARTS = {
    "layout": "logits of any layout (a transposed view): made contiguous for the kernels",
    "forward": "forward: the loss, from your forward kernel",
    "mean": "the mean over the counted rows (ignore_index left out)",
    "gradcheck": "backward agrees with the loss's central differences",
    "reference": "backward: the logits' gradient, from your backward kernel",
    "interface": "backward's interface (the logits' gradient, None for target and ignore_index)",
    "memory": "memory: forward saves no tensor of the logits' size it made",
}


def fused_ce_cases() -> list[tuple]:
    """(rows, V, ignored rows, grad_output, numeric): a plain case, one with an ignored row, a small numeric one."""
    return [(3, 37, 0, 0.7, False), (4, 20, 1, 1.3, False), (2, 9, 0, 1.0, True)]


def draw_fused_ce(rng: random.Random, count: int) -> dict[str, Any]:
    cases = []
    for _ in range(count):
        rows = rng.randint(3, 5)
        cases += [
            (rows, rng.randint(5, 50), 0, rng.choice([0.5, 1.0, 2.0]), False),
            (rows, rng.randint(5, 50), rng.randint(1, rows - 1), rng.choice([0.5, 1.0, 2.0]), False),
        ]
    cases.append((2, rng.randint(4, 10), 0, 1.0, True))
    return {"cases": cases, "seed": rng.randrange(1, 10**6), "ignore_index": rng.choice([-100, -1])}


def _saved_entries(value: Any, what: str) -> list[dict]:
    out = []
    for k, item in enumerate(answers.listed(value, what)):
        item = answers.entry(item, f"{what}[{k}]", ("shape", "input"))
        shape = answers.shape(item["shape"], f"{what}[{k}]'s shape")
        out.append({"shape": shape, "input": answers.flag(item["input"], f"{what}[{k}]")})
    return out


def written_in_row_order(left: Any, candidates: Sequence[torch.Tensor], counted: torch.Tensor, rtol: float) -> bool:
    """Whether the launches left one of the candidates in their small buffers (`left`, launch by launch, at most
    LEFT_PER_ROW numbers per row): its counted entries in order, anything between them, each within rtol of the
    candidate's largest entry. Per-row results in row order cannot be guessed from a table of values; a kernel
    that computed them wrote them."""
    values = answers.tensor(left, "what the launches left").to(torch.float64).flatten().tolist()
    if len(values) > LEFT_PER_ROW * counted.shape[0]:
        return False
    for candidate in candidates:
        wanted = candidate.flatten()[counted.flatten()].tolist()
        tol = rtol * max((abs(w) for w in wanted), default=0.0)
        j = 0
        for w in wanted:
            while j < len(values) and not abs(values[j] - w) <= tol:
                j += 1
            j += 1
        if j <= len(values):
            return True
    return False


def loss_not_from_kernels(launched: float, left: Any, rows: list, counted: torch.Tensor, rtol: float) -> str | None:
    """Why a loss is not the mean of what forward's kernels wrote per row (None: it is)."""
    if not launched:
        return "forward launched no Triton kernel"
    if not written_in_row_order(left, rows, counted, rtol=rtol):
        return "the loss is not what the kernels wrote"
    return None


def per_row_results(x: torch.Tensor, target: torch.Tensor, ignore_index: int) -> tuple[list, torch.Tensor]:
    """([each row's loss, each row's log-sum-exp], the rows that count): what a forward kernel writes per row."""
    losses = torch.nn.functional.cross_entropy(x, target, ignore_index=ignore_index, reduction="none")
    return [losses.detach(), torch.logsumexp(x.detach(), dim=1)], target != ignore_index


FLOAT32_RTOL = 1e-5  # float32's precision, about 7 digits: a float64 answer computed in float32 is that close
PRECISION_HINT = (
    "right to float32's precision only, about 7 digits: float64 logits were computed in float32 somewhere. The "
    "kernels compute in the dtype of the buffers forward allocates for them (the log-sum-exps, the losses)"
)


NOT_FROM_KERNEL = (
    "forward's kernel writes each row's loss (and log-sum-exp) into buffers forward allocates, and the loss is the "
    "mean of what it wrote: a launch beside a loss PyTorch computed earns nothing"
)


def _judge_fused_loss(
    parts: dict, where: str, loss: float, forward: tuple, problem: tuple, expected: float, unsure: list[str]
) -> None:
    """The loss: the mean of what forward's kernel wrote per row (forward: its launches and what they left),
    equal to the mean over the counted rows of the problem (x, target, ignore_index, ignored rows): a mean over
    every row is named; a loss off in a case with ignored rows, for no reason the judge names, goes to `unsure`."""
    launches, left = forward
    x, target, ignore_index, ignored = problem
    from_kernel = written_in_row_order(left, *per_row_results(x, target, ignore_index), rtol=1e-6)
    if not launches:
        parts["forward"].fail(f"{where}: forward launched no Triton kernel", "forward runs your forward kernel")
        return
    if not from_kernel:
        parts["forward"].fail(
            f"{where}: forward's kernels wrote neither the rows' losses nor their log-sum-exps", NOT_FROM_KERNEL
        )
    if not math.isclose(loss, expected, rel_tol=1e-9, abs_tol=1e-12):
        rows = x.shape[0]
        summed = torch.nn.functional.cross_entropy(x, target, ignore_index=ignore_index, reduction="sum")
        if ignored and math.isclose(loss, float(summed.detach()) / rows, rel_tol=1e-9):
            parts["mean"].fail(
                f"{where}: the loss is averaged over every row",
                "rows whose target is ignore_index are not in the mean: divide by the number of counted rows",
            )
        elif not ignored:
            coarse = math.isclose(loss, expected, rel_tol=FLOAT32_RTOL)
            parts["forward"].fail(
                f"{where}: the loss is off"
                + (f" by {abs(loss - expected) / abs(expected):.1g} of itself" if coarse else ""),
                PRECISION_HINT if coarse else None,
            )
        else:  # off, and not by the mean over every row: the forward's mistake if the plain cases show it too
            unsure.append(f"{where}: the loss is off")


def _judge_fused_grad(
    parts: dict,
    where: str,
    grad: Any,
    launches: float,
    expected: torch.Tensor,
    target: torch.Tensor,
    ignore_index: int,
    ignored: int,
    made_in_forward: bool = False,
) -> None:
    """The logits' gradient: launched by a kernel, of the logits' shape, equal to the reference (a gradient scaled by
    the mean over every row is the mean's mistake again, counted once; a right gradient computed in forward and
    kept -- the very tensor forward kept, of the logits' size -- is the memory's mistake, counted once; one computed
    in backward with PyTorch, from a softmax forward kept, is a mistake of its own)."""
    rows = expected.shape[0]
    if not launches:
        from_forward = (
            made_in_forward and isinstance(grad, torch.Tensor) and tuple(grad.shape) == tuple(expected.shape)
            and torch.allclose(grad, expected, rtol=1e-7, atol=1e-10)
        )  # fmt: skip
        parts["reference"].fail(
            f"{where}: backward handed back no gradient a Triton kernel wrote"
            + (" (it was computed in forward and kept)" if from_forward else ""),
            None
            if from_forward
            else "backward runs your backward kernel, writing into a new gradient tensor, and returns that tensor",
            same_mistake_as="memory" if from_forward else None,
        )
    elif not isinstance(grad, torch.Tensor) or tuple(grad.shape) != tuple(expected.shape):
        parts["interface"].fail(f"{where}: the logits' gradient is not a tensor of their shape", None)
    elif not torch.allclose(grad, expected, rtol=1e-7, atol=1e-10):
        counted = int((target != ignore_index).sum())
        over_all_rows = torch.allclose(grad, expected * counted / rows, rtol=1e-7, atol=1e-10)
        coarse = torch.allclose(grad, expected, rtol=FLOAT32_RTOL, atol=1e-7)  # float32's precision
        same = (
            "mean" if over_all_rows and ignored else "forward" if coarse and parts["forward"].passed is False else None
        )
        parts["reference"].fail(
            f"{where}: the logits' gradient is off",
            None if over_all_rows or same else PRECISION_HINT if coarse else
            "backward's result is grad_output * (softmax - one_hot) / counted rows, zero in ignored rows",
            same_mistake_as=same,
        )  # fmt: skip


FUSED_KEYS = (
    "loss",
    "saved",
    "launch_ids",
    "grad_layout",
    "returned",
    "moved",
    "backward_error",
    "kept",
    "grad_from_forward",
)


@decides("check_fused_ce", draw=draw_fused_ce)
def judge_fused_ce(
    data: ProbeData, cases: Sequence[Any], seed: int = 0, ignore_index: int = -100, eps: float = 1e-6, points: float = 5
) -> Verdict:
    parts, unsure, right = titled_parts(FUSED_PARTS), [], []
    title = "FusedCrossEntropy.apply(logits, target, ignore_index)"
    if not isinstance(data, dict) or set(data) != {"cases", "layout"}:
        raise answers.mismatch("the cases' answers and the layout run were expected")
    for case, got in zip(cases, answers.per_case(data["cases"], cases)):
        rows, V, ignored, grad_output, numeric = case
        entry = answers.entry(got, f"case {case}", FUSED_KEYS)
        loss = answers.number(entry["loss"], f"the loss of case {case}")
        saved = _saved_entries(entry["saved"], f"what forward saved in case {case}")
        returned = answers.listed(entry["returned"], f"backward's return of case {case}")
        moved = answers.numbers(
            entry["moved"], f"the moved losses of case {case}", length=2 * rows * V if numeric else 0
        )
        where = f"{rows} rows of V = {V}" + (f", {ignored} with target ignore_index" if ignored else "")
        x = row_case(seed, rows, V, "float64", 0).requires_grad_()
        target = ce_targets(seed, rows, V, ignored, ignore_index)
        expected = torch.nn.functional.cross_entropy(x, target, ignore_index=ignore_index)
        (expected_grad,) = torch.autograd.grad(expected * grad_output, x)
        # what the launches on the case's logits wrote (a launch on other numbers wrote nothing of this case's)
        forward_launches = launched(entry, "forward")
        on_the_case = launch_evidence.reading(forward_launches, x)
        forward = (len(forward_launches), launch_evidence.left(on_the_case, rows, LEFT_PER_ROW * rows))
        _judge_fused_loss(parts, where, loss, forward, (x, target, ignore_index, ignored), expected.item(), unsure)
        _judge_fused_interface(parts, where, entry["backward_error"], returned)
        grad = returned[0] if returned else None
        kept_whole = _judge_fused_memory(parts, where, saved, _kept_entries(entry["kept"], case), rows, V)
        if entry["backward_error"] is None:
            made_in_forward = kept_whole and answers.flag(entry["grad_from_forward"], f"the gradient of case {case}")
            times = torch.tensor(grad_output, dtype=torch.float64)  # the grad_output backward was handed
            made = launched_the_gradient(entry, grad, times)
            _judge_fused_grad(parts, where, grad, made, expected_grad, target, ignore_index, ignored, made_in_forward)
        # something right, to float32's precision at least: what a blank answer never is (the gate below)
        right.append(math.isclose(loss, float(expected.detach()), rel_tol=FLOAT32_RTOL, abs_tol=1e-12))
        if isinstance(grad, torch.Tensor) and tuple(grad.shape) == (rows, V):
            right.append(bool(torch.allclose(grad.to(torch.float64), expected_grad, rtol=FLOAT32_RTOL, atol=1e-7)))
        if numeric and isinstance(grad, torch.Tensor) and tuple(grad.shape) == (rows, V):
            central = torch.tensor(moved[0::2], dtype=torch.float64) - torch.tensor(moved[1::2], dtype=torch.float64)
            numerical = (central / (2 * eps)).reshape(rows, V) * grad_output
            _judge_fused_central(parts, where, grad, numerical, expected_grad, bool(unsure))
    for message in unsure:  # a loss off with ignored rows too: the forward's mistake when plain rows show it
        parts["mean"].fail(message, None, same_mistake_as="forward" if parts["forward"].passed is False else None)
    if cases:
        _judge_fused_layout(parts, data["layout"], cases[0], seed, ignore_index)
    if not any(right):  # neither a loss nor a gradient right: what it left alone, or got vacuously, earns nothing
        for name in ("layout", "mean", "gradcheck", "interface", "memory"):
            parts[name].unscore(NOTHING_RIGHT)
    return verdict_of(list(parts.values()), points, title)


def _judge_fused_layout(parts: dict, got: Any, case: Sequence[Any], seed: int, ignore_index: int) -> None:
    """The first case on a transposed view of its logits: the same loss and gradient. Where the contiguous run is
    already wrong, a wrong answer here is that mistake again."""
    rows, V, ignored, grad_output, _ = case
    entry = answers.entry(got, "the layout run", ("loss", "grad", "error"))
    x = row_case(seed, rows, V, "float64", 0).requires_grad_()
    target = ce_targets(seed, rows, V, ignored, ignore_index)
    expected = torch.nn.functional.cross_entropy(x, target, ignore_index=ignore_index)
    (expected_grad,) = torch.autograd.grad(expected * grad_output, x)
    where = f"{rows} rows of V = {V}, the logits a transposed view (not contiguous)"
    if entry["error"] is not None:
        wrong = f"{where}: it raised {entry['error']}"
    else:
        loss = answers.number(entry["loss"], "the layout run's loss")
        grad = answers.tensor(entry["grad"], "the layout run's gradient", shape=(rows, V))
        loss_right = math.isclose(loss, float(expected.detach()), rel_tol=1e-9, abs_tol=1e-12)
        if loss_right and torch.allclose(grad, expected_grad, rtol=1e-7, atol=1e-10):
            return
        wrong = f"{where}: the {'gradient' if loss_right else 'loss'} is off"
    # a run that raised what backward's interface raises (autograd counts backward's values) is that mistake
    suspects = ("forward", "reference", "mean") + (("interface",) if entry["error"] is not None else ())
    earlier = next((p for p in suspects if parts[p].passed is False), None)
    parts["layout"].fail(
        wrong,
        None
        if earlier
        else "a kernel reads row r at r * stride with the columns next to each other: make the "
        "logits contiguous in forward (logits.contiguous()) before handing them to a kernel",
        same_mistake_as=earlier,
    )


def _judge_fused_interface(parts: dict, where: str, backward_error: Any, returned: list) -> None:
    """Backward's return: one value per input of forward. A backward that raised costs the backward's idea, once."""
    if backward_error is not None:
        parts["reference"].fail(f"{where}: backward raised: {backward_error}", None)
        parts["gradcheck"].fail(f"{where}: backward raised", None, same_mistake_as="reference")
        parts["interface"].fail(f"{where}: backward raised", None, same_mistake_as="reference")
    elif len(returned) != 3 or returned[1] is not None or returned[2] is not None:
        parts["interface"].fail(
            f"{where}: backward returned {len(returned)} value(s)"
            + ("" if len(returned) != 3 else ", a gradient for target or ignore_index"),
            "backward returns one value per input of forward: the logits' gradient, then None for the target "
            "and for ignore_index",
        )


def _judge_fused_central(
    parts: dict, where: str, grad: torch.Tensor, numerical: torch.Tensor, expected_grad: torch.Tensor, unsure: bool
) -> None:
    """Backward against the central differences of the learner's own forward; a right backward under a wrong
    forward disagrees with them, and that is the forward's mistake (backward matches the reference)."""
    if torch.allclose(grad, numerical, rtol=1e-3, atol=1e-6):
        return
    right = torch.allclose(grad, expected_grad, rtol=1e-7, atol=1e-10)
    # right to float32's precision, under a forward off by as much: differences of that forward are that mistake
    coarse = torch.allclose(grad, expected_grad, rtol=FLOAT32_RTOL, atol=1e-7) and parts["forward"].passed is False
    wrong_forward = (
        "forward" if parts["forward"].passed is False
        else "mean" if parts["mean"].passed is False or unsure else None
    )  # fmt: skip
    parts["gradcheck"].fail(
        f"{where}: backward disagrees with the loss's central differences"
        + (" (those of a wrong forward: backward itself matches the reference)" if right else "")
        + (" (those of a forward computed to float32's precision, as backward is)" if coarse and not right else ""),
        None,
        same_mistake_as=wrong_forward if right or coarse else None,
    )


def _kept_entries(value: Any, case: Any) -> list[dict]:
    out = []
    for k, item in enumerate(answers.listed(value, f"what forward kept on ctx in case {case}")):
        item = answers.entry(item, f"ctx's tensor {k} in case {case}", ("attribute", "bytes"))
        out.append({"attribute": str(item["attribute"]), "bytes": answers.integer(item["bytes"], "its bytes")})
    return out


def _judge_fused_memory(parts: dict, where: str, saved: list[dict], kept: list[dict], rows: int, V: int) -> bool:
    """Memory kept for backward, save_for_backward and ctx's attributes alike (lists of pieces too): nothing of the
    logits' size made by forward. True when a tensor of that size (a softmax, a gradient) is kept."""
    new_saved = [s for s in saved if not s["input"]]
    too_big = [s["shape"] for s in new_saved if math.prod(s["shape"]) >= rows * V]
    pieces = sum(math.prod(s["shape"]) for s in new_saved) >= rows * V
    on_ctx = sum(k["bytes"] for k in kept) >= rows * V * 8
    if too_big or pieces or on_ctx:
        what = (
            f"saves a tensor of shape {too_big[0]}"
            if too_big
            else f"keeps {rows}×{V} numbers on ctx ({', '.join(sorted({k['attribute'] for k in kept}))})"
            if on_ctx
            else "saves the logits' size in pieces"
        )
        parts["memory"].fail(
            f"{where}: forward {what} for backward",
            "save the logits (already in memory) and the N log-sum-exps; backward recomputes the softmax from them "
            "(a gradient computed in forward and kept on ctx costs the same memory)",
        )
        return True
    return False


# --------------------------------------------------------------------------------------------- memory and bf16


def reference_new_saved_bytes(fn: Any, *inputs: torch.Tensor) -> int:
    """Distinct memory forward keeps alive for backward that is not an input's: the judge's own measurement."""
    own = {t.untyped_storage().data_ptr() for t in inputs}
    kept: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in own:
            kept[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*inputs)
    return sum(kept.values())


SAVED_PART = {"exp": "new_memory", "composed_ce": "distinct", "mul": "inputs", "view_sin": "inputs"}


def draw_saved_problems(rng: random.Random, count: int) -> dict[str, Any]:
    names = list(SAVED_PROBLEMS)
    rng.shuffle(names)
    return {"problems": names, "seed": rng.randrange(1, 10**6)}


@decides("check_new_saved_bytes", draw=draw_saved_problems)
def judge_new_saved_bytes(
    data: ProbeData, problems: Sequence[str] = SAVED_PROBLEMS, seed: int = 0, points: float = 3
) -> Verdict:
    parts = titled_parts(
        {
            "new_memory": "the bytes of the tensors forward saves",
            "inputs": "an input's memory (or a view of it) counts nothing new",
            "distinct": "memory saved twice is counted once",
        }
    )
    for name, got in zip(problems, answers.per_case(data, problems)):
        got = answers.integer(got, f"the bytes reported for {name}")
        fn, inputs = saved_problem(name, seed)
        expected = reference_new_saved_bytes(fn, *inputs)
        if got == expected:
            continue
        hint = {
            "new_memory": "count the bytes of every tensor forward saves (tensor.untyped_storage().nbytes())",
            "inputs": "a saved tensor whose memory is an input's (the input itself, or a view of it) costs nothing "
            "new: compare storages (untyped_storage().data_ptr()) with the inputs'",
            "distinct": "the same memory saved twice (one op's output, saved by it and by the next op) is kept "
            "once: count each storage once",
        }[SAVED_PART[name]]
        what = f"{name} (drawn: {DRAWN_SAVED[name]})" if seed else name
        parts[SAVED_PART[name]].fail(f"for {what} you report {got} bytes, which is not what is kept", hint)
    return verdict_of(list(parts.values()), points, "new_saved_bytes (memory kept for backward)")


def bf16_ulps(got: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """|got - expected| in units of bfloat16's last place at each expected value."""
    scale = 2.0 ** torch.floor(torch.log2(expected.abs().clamp(min=torch.finfo(torch.bfloat16).tiny)))
    return (got - expected).abs() / (torch.finfo(torch.bfloat16).eps * scale)


def draw_bf16(rng: random.Random, count: int) -> dict[str, Any]:
    return {"seed": rng.randrange(1, 10**6), "rows": rng.randint(4, 8), "V": rng.choice([2048, 3000, 4096])}


@decides("check_bf16", draw=draw_bf16)
def judge_bf16(data: ProbeData, rows: int = 8, V: int = 4096, seed: int = 0, points: float = 3) -> Verdict:
    parts = titled_parts(
        {
            "loss": "the loss within one bfloat16 ulp of float64's",
            "gradient": "the gradient within 1.5 bfloat16 ulps of float64's",
            "dtype": "the loss and the gradient in bfloat16, the logits' dtype",
        }
    )
    entry = answers.entry(
        data,
        "the bf16 answer",
        ("loss", "loss_dtype", "launch_ids", "grad", "grad_dtype", "grad_layout", "backward_error"),
    )
    loss = answers.number(entry["loss"], "the bf16 loss")
    x, target = bf16_case(seed, rows, V)
    forward_launches = launched(entry, "forward")
    on_the_case = launch_evidence.reading(forward_launches, x)  # what the launches on the case's logits wrote
    forward_left = launch_evidence.left(on_the_case, rows, LEFT_PER_ROW * rows)
    where = f"{rows} rows of V = {V} bfloat16 logits"
    rows_expected, counted = per_row_results(x.to(torch.float64), target, -100)
    missed = loss_not_from_kernels(len(forward_launches), forward_left, rows_expected, counted, rtol=1 / 64)
    if missed:
        parts["loss"].fail(f"{where}: {missed}", NOT_FROM_KERNEL)
    if entry["backward_error"] is not None:
        if exercise_6s_idea(str(entry["backward_error"])):  # charged once, in exercise 6
            parts["gradient"].unscore(
                f"not scored here: backward raised what exercise 6 charges ({entry['backward_error']})"
            )
        else:
            parts["gradient"].fail(f"{where}: backward raised: {entry['backward_error']}", None)
        _judge_bf16_loss(parts, where, loss, entry["loss_dtype"], x, target)
        return _bf16_verdict(parts, points)
    grad = answers.tensor(entry["grad"], "the bf16 gradient", shape=(rows, V))
    backward_launches = launched_the_gradient(entry, grad)
    # exercise 6 charges it; the gradient's precision here would be PyTorch's, not the kernel's
    if not backward_launches:
        parts["gradient"].unscore(
            f"not scored here: backward handed back no gradient a Triton kernel wrote ({where}), which exercise 6 "
            "charges; this exercise grades what bfloat16 adds"
        )
    x64 = x.to(torch.float64).requires_grad_()
    expected = torch.nn.functional.cross_entropy(x64, target)
    (expected_grad,) = torch.autograd.grad(expected, x64)
    if entry["grad_dtype"] != "bfloat16":
        parts["dtype"].fail(
            f"{where}: the loss is {entry['loss_dtype']} and the gradient {entry['grad_dtype']}",
            "return the loss and the gradient in the logits' dtype (accumulate in float32, cast at the end)",
        )
    _judge_bf16_loss(parts, where, loss, entry["loss_dtype"], x, target)
    grad_ulps = bf16_ulps(grad, expected_grad)
    if backward_launches and not float(grad_ulps.max()) <= 1.5:
        parts["gradient"].fail(
            f"{where}: gradient entries up to {float(grad_ulps.max()):.1f} bfloat16 ulps from the float64 values "
            f"(median {float(grad_ulps.median()):.1f})",
            _bf16_gradient_hint(grad, grad_ulps, expected_grad, target),
        )
    return _bf16_verdict(parts, points)


# what a backward raises for a mistake of exercise 6's own ideas (its interface; a scale handed as a tensor)
EXERCISE_6_ERRORS = ("returned an incorrect number of gradients", "scale was handed to the kernel as a tensor")


def exercise_6s_idea(error: str) -> bool:
    """Whether backward's error is a mistake exercise 6 already charges: the bfloat16 exercise grades what it adds."""
    return any(words in error for words in EXERCISE_6_ERRORS)


def _bf16_verdict(parts: dict[str, Part], points: float) -> Verdict:
    if parts["loss"].passed is False and not parts["gradient"].passed:  # a dtype alone earns nothing
        parts["dtype"].unscore("not scored: neither the loss nor the gradient is right")
    return verdict_of(list(parts.values()), points, "FusedCrossEntropy on bfloat16 logits")


def _judge_bf16_loss(parts: dict[str, Part], where: str, loss: float, loss_dtype: Any, x, target) -> None:
    if loss_dtype != "bfloat16" and not parts["dtype"].messages:
        parts["dtype"].fail(
            f"{where}: the loss is {loss_dtype}",
            "return the loss in the logits' dtype (accumulate in float32, cast at the end)",
        )
    expected = torch.nn.functional.cross_entropy(x.to(torch.float64), target)
    loss_ulps = float(bf16_ulps(torch.tensor([loss], dtype=torch.float64), expected.reshape(1))[0])
    if not loss_ulps <= 1.0:
        parts["loss"].fail(
            f"{where}: the loss is {loss_ulps:.1f} bfloat16 ulps from the float64 value",
            "accumulate in float32 and round to bfloat16 once, at the end: a sum of exponentials kept in bfloat16 "
            "loses every term once the sum is 2^8 times larger, and a mean of bfloat16 losses rounds at every step",
        )


def _bf16_gradient_hint(grad: torch.Tensor, grad_ulps: torch.Tensor, expected_grad: torch.Tensor, target) -> str:
    """The idea behind the gradient's error, from its size and shape: far off is a wrong gradient, not an imprecise
    one; a whole row off by one common factor is a log-sum-exp rounded to bfloat16 (every exp(logit - lse) of the
    row shares it); else a rounding on the way."""
    if float(grad_ulps.median()) > 16:
        return (
            "the gradient is wrong, not imprecise: the float64 check (exercise 6) shows where; in bfloat16, only "
            "the last rounding should remain"
        )
    rows = grad.shape[0]
    others = torch.ones_like(grad, dtype=torch.bool)
    others[torch.arange(rows), target] = False  # the target's column has -1 in it: not a pure exp(logit - lse)
    ratios = [float((grad[r][others[r]] / expected_grad[r][others[r]]).median()) for r in range(rows)]
    if max(abs(ratio - 1.0) for ratio in ratios) > 2**-7:
        return (
            "keep the log-sum-exp in float32 between forward and backward: rounded to bfloat16 it is off by up to "
            "1/256 of itself, and every exp(logit - lse) of its row with it"
        )
    return (
        "a value of backward is rounded to bfloat16 before the gradient is stored: load each chunk with .to(acc), "
        "compute exp(logit - lse) and the scale in float32, and convert once, at the store"
    )
