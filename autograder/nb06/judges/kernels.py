"""Notebook 06's judges of the row kernels: the log-sum-exp, the cross-entropy's forward and backward."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Any

import torch

from coursetools.gpu_compile import launch_signature, specialization_class

from ...judges import answers, kernel_compile
from ...judges.kernel_compile import pointer
from ...judges.verdict import Part, Verdict, share_earned, verdict_of
from ...registry import ProbeData, decides
from ..cases import (
    ce_targets,
    row_case,
)
from .common import (
    off_rows,
    titled_parts,
)

ROW_LSE_PARTS = {
    "values": "each row's log-sum-exp (V a multiple of BLOCK_V, the peak in the first chunk)",
    "rescale": "a larger maximum in a later chunk (the running sum rescaled)",
    "tail": "V not a multiple of BLOCK_V (the last chunk masked)",
    "stability": "float32 logits of 100 (the maximum subtracted before exp)",
    "bounds": "one value per row written, the logits untouched",
}


def row_lse_cases(V: int = 32, ragged: int = 37, block: int = 16) -> list[tuple]:
    """The visible cases: one per part (a case tests one idea; the others' conditions are kept easy)."""
    return [
        (3, V, block, "float64", 0),  # values
        (2, V, block, "float64", V - 1),  # rescale: the peak in the last chunk
        (2, ragged, block, "float64", 0),  # tail
        (2, V, block, "float32", 0),  # stability
    ]


def part_of(case: Sequence[Any]) -> str:
    rows, V, block, dtype, peak_at = case
    if dtype != "float64":
        return "stability"
    if V % block:
        return "tail"
    return "rescale" if peak_at >= block else "values"


def draw_row_lse(rng: random.Random, count: int) -> dict[str, Any]:
    """count cases of each part, of other sizes and block sizes."""
    cases = []
    for _ in range(count):
        block = rng.choice([8, 16, 32])
        chunks = rng.randint(2, 4)
        cases += [
            (rng.randint(1, 4), block * chunks, block, "float64", rng.randrange(block)),
            (rng.randint(1, 3), block * chunks, block, "float64", rng.randrange(block, block * chunks)),
            (rng.randint(1, 3), block * chunks + rng.randint(1, block - 1), block, "float64", 0),
            (rng.randint(1, 3), block * chunks, block, "float32", rng.randrange(block)),
        ]
    return {"cases": cases, "seed": rng.randrange(1, 10**6)}


READ_OUTSIDE_HINT = (
    "a load reads memory that is not its row's: mask every load (the columns at or beyond V, loaded as other=-inf "
    "or 0.0) and start each row at row * row_stride, nothing before it"
)


def _judge_bounds(part: Part, entry: Any, case: Sequence[Any], where: str, hint: str) -> None:
    """A kernel reads its inputs' own entries only, writes its outputs only, and leaves its inputs as they were."""
    outside = answers.integer(entry["written_outside"], f"the guard count of case {case}")
    changed = answers.flag(entry["inputs_changed"], f"the input check of case {case}")
    if outside or changed:
        part.fail(f"{where}: {'values written outside the output' if outside else 'an input changed'}", hint)


def _judge_reads(parts: dict, judged: list, same_mistake_as: str | None = None) -> None:
    """After a check's cases: a kernel that read memory outside its tensors (its results changed with that memory,
    or the interpreter saw the load), or stored into another program's row, costs the bounds part, in each case
    whose results were otherwise right (where they were wrong, that mistake is charged already, with its own hint:
    one mistake, once). same_mistake_as: a part whose mistake, charged in other cases, reads where it should not
    (a logit picked from another row): its reads here are that mistake again."""
    for entry, case, where in judged:
        elsewhere = answers.integer(entry["written_elsewhere"], f"the write check of case {case}")
        read = answers.flag(entry["read_outside"], f"the read check of case {case}")
        if not (read or elsewhere):
            continue
        if any(m.startswith(where) for part in parts.values() for m in part.messages):
            continue
        if elsewhere:
            parts["bounds"].fail(
                f"{where}: the kernel stores into memory that is not its own row ({elsewhere} value(s): another "
                "program's row, or outside its tensors)",
                RACE_HINT,
            )
        else:
            parts["bounds"].fail(
                f"{where}: the kernel reads memory outside its tensors (whether or not its results use it)",
                None if same_mistake_as else READ_OUTSIDE_HINT,
                same_mistake_as=same_mistake_as,
            )


RACE_HINT = (
    "each program stores only its own row's results. On a GPU the programs run at once, so a store into another "
    "row races with that row's own program (the interpreter runs them one by one, and the last store can hide it)"
)


@decides("check_row_lse", draw=draw_row_lse)
def judge_row_lse(data: ProbeData, cases: Sequence[Any], seed: int = 0, points: float = 5) -> Verdict:
    parts, judged, failures = titled_parts(ROW_LSE_PARTS), [], []
    params = {"cases": cases, "seed": seed}
    launches, record = kernel_compile.run_recorded(data, "autograder.nb06.probes:probe_row_lse", params)
    for case, got in zip(cases, answers.per_case(launches, cases)):
        rows, V, block, dtype, peak_at = case
        keys = ("values", "written_outside", "inputs_changed", "read_outside", "written_elsewhere")
        entry = answers.entry(got, f"case {case}", keys)
        values = answers.tensor(entry["values"], f"the values of case {case}", shape=(rows,))
        where = f"{rows} rows of V = {V}, BLOCK_V = {block}, {dtype}"
        judged.append((entry, case, where))
        _judge_bounds(
            parts["bounds"],
            entry,
            case,
            where,
            "one program per row stores one value, at lse_ptr + row; the logits are only read",
        )
        expected = torch.logsumexp(row_case(seed, rows, V, dtype, peak_at, block).to(torch.float64), dim=1)
        off = off_rows(values, expected, 1e-9 if dtype == "float64" else 1e-5)
        if off is not None:
            slip = dtype == "float64" and torch.allclose(values, expected, rtol=1e-5, atol=1e-6)
            failures.append((part_of(case), f"{where}: row {off[0]} is {off[1]}", off[1], slip))
    _charge_row_failures(parts, failures)
    _judge_reads(parts, judged)
    _judge_compiles(parts, record, cases, lambda dtype, stride, V: [pointer(dtype), pointer(dtype), stride, V])
    return verdict_of(list(parts.values()), points, "row_lse_kernel (each row's log-sum-exp)")


ROW_HINTS = {
    "values": "a row's log-sum-exp is m + log(s) over all of its V columns: loop over its chunks "
    "(for start in range(0, V, BLOCK_V)), carrying the running maximum m and sum s from one chunk to the next",
    "tail": "the last chunk reaches past the row's end: mask the columns at or beyond V (and load them as -inf, "
    "which exp turns into 0)",
    "stability": "exp of a large logit overflows: subtract the running maximum before exp",
    "rescale": "when a later chunk raises the maximum, the sum so far was computed against the old one: rescale it "
    "by exp(m_old - m_new)",
}


LATE_PEAK_HINT = (
    "a later chunk holds a logit far above the first chunk's: the running maximum takes every chunk's maximum "
    "(m_new = max(m, the chunk's max)), and the sum so far is rescaled by exp(m - m_new)"
)


PRECISION_HINT = (
    "right to about 6 digits only: a float64 row was accumulated in float32. Accumulate in lse_ptr's own dtype "
    "(acc = lse_ptr.dtype.element_ty): float64 for float64 logits"
)


BACKWARD_PRECISION_HINT = (
    "right to about 6 digits only: a float64 row was computed in float32. Compute in lse_ptr's own dtype "
    "(acc = lse_ptr.dtype.element_ty, which backward loads the log-sum-exp in): float64 for float64 logits"
)


def _charge_row_failures(parts: dict[str, Part], failures: list[tuple[str, str, str, bool]]) -> None:
    """Each (part, message, state, float32 slip) failed, charged by the one rule: a float64 case right to float32
    precision is one precision slip wherever it shows (the first part it shows in pays); a late peak that
    overflows in a kernel that overflows on the stability case too is the missing maximum, once. (Values off in
    every case stay charged in each: a kernel that reads one chunk only and a blank one look alike.)"""
    overflow = any(part == "stability" and state != "off" for part, _, state, _ in failures)
    first_slip = None
    for part, message, state, slip in failures:
        if slip:
            first_slip = first_slip or part
            same = first_slip if first_slip != part else None
            parts[part].fail(message, PRECISION_HINT if same is None else None, same_mistake_as=same)
        elif part == "rescale" and state != "off":
            same = "stability" if overflow else None
            parts[part].fail(message, None if same else LATE_PEAK_HINT, same_mistake_as=same)
        else:
            parts[part].fail(message, ROW_HINTS.get(part))


LOSS_HINT = (
    "a row's loss is its log-sum-exp minus the logit of its own target: the target names a column of this row, "
    "counted from the row's start"
)


ROW0_TARGET_HINT = "every row's loss used row 0's target: each program reads its own row's target, at target_ptr + row"


IGNORED_HINT = "a row whose target is ignore_index contributes nothing: store 0 (and never read its target column)"


CE_FORWARD_PARTS = {
    "loss": "each counted row's loss (its log-sum-exp less its target's logit)",
    "lse": "each row's log-sum-exp, stored for backward",
    "ignored": "a row whose target is ignore_index: loss 0",
    "bounds": "one loss and one log-sum-exp per row written, the inputs untouched",
}


def ce_forward_cases(block: int = 16) -> list[tuple]:
    """(rows, V, BLOCK_V, dtype, ignored rows): a ragged vocabulary, a short one, float32, rows ignored."""
    return [(4, 37, block, "float64", 1), (3, 5, block, "float64", 0), (3, 48, block, "float32", 1)]


def draw_ce_forward(rng: random.Random, count: int) -> dict[str, Any]:
    cases = []
    for _ in range(count):
        block = rng.choice([8, 16, 32])
        rows = rng.randint(2, 5)
        cases.append(
            (rows, block * rng.randint(1, 3) + rng.randint(0, block - 1), block, "float64", rng.randint(1, rows - 1))
        )
    return {"cases": cases, "seed": rng.randrange(1, 10**6), "ignore_index": rng.choice([-100, -1, 7])}


@decides("check_ce_forward", draw=draw_ce_forward)
def judge_ce_forward(
    data: ProbeData, cases: Sequence[Any], seed: int = 0, ignore_index: int = -100, points: float = 4
) -> Verdict:
    parts, judged, either = titled_parts(CE_FORWARD_PARTS), [], []
    params = {"cases": cases, "seed": seed, "ignore_index": ignore_index}
    launches, record = kernel_compile.run_recorded(data, "autograder.nb06.probes:probe_ce_forward", params)
    for case, got in zip(cases, answers.per_case(launches, cases)):
        rows, V, block, dtype, ignored = case
        keys = ("loss", "lse", "written_outside", "inputs_changed", "read_outside", "written_elsewhere")
        entry = answers.entry(got, f"case {case}", keys)
        loss = answers.tensor(entry["loss"], f"the losses of case {case}", shape=(rows,))
        lse = answers.tensor(entry["lse"], f"the log-sum-exps of case {case}", shape=(rows,))
        where = f"{rows} rows of V = {V}, BLOCK_V = {block}, {dtype}, ignore_index = {ignore_index}"
        judged.append((entry, case, where))
        _judge_bounds(
            parts["bounds"],
            entry,
            case,
            where,
            "one program per row stores one loss and one log-sum-exp, at row; the inputs are only read",
        )
        x = row_case(seed, rows, V, dtype, 0).to(torch.float64)
        target = ce_targets(seed, rows, V, ignored, ignore_index)
        if _judge_forward_values(parts, where, loss, lse, x, target, ignore_index, dtype):
            either.append(where)
    for where in either:  # ignored rows that row 0's target and a kernel ignoring nothing explain alike
        if parts["ignored"].passed is False and ROW0_TARGET_HINT not in parts["loss"].hints:
            parts["ignored"].fail(f"{where}: a row whose target is ignore_index has a loss other than 0", IGNORED_HINT)
        else:
            parts["loss"].fail(
                f"{where}: a row whose target is ignore_index has the loss row 0's target gives it", ROW0_TARGET_HINT
            )
    picked_elsewhere = parts["loss"].independent and bool({LOSS_HINT, ROW0_TARGET_HINT} & set(parts["loss"].hints))
    _judge_reads(parts, judged, "loss" if picked_elsewhere else None)
    _judge_compiles(
        parts,
        record,
        cases,
        lambda dtype, stride, V: [*_ce_pointers(dtype), stride, V, ignore_index],
    )
    return verdict_of(list(parts.values()), points, "cross_entropy_forward_kernel (per-row losses)")


def _judge_forward_values(
    parts: dict[str, Part],
    where: str,
    loss: torch.Tensor,
    lse: torch.Tensor,
    x: torch.Tensor,
    target: torch.Tensor,
    ignore_index: int,
    dtype: str,
) -> bool:
    """One case's log-sum-exps, losses and ignored rows; a mistake that shows in two of them is charged once. True
    (and nothing charged for them) where the ignored rows' losses are what both row 0's target and a kernel that
    ignores nothing give (every counted row's target is row 0's, and that is the column an ignored row would pick):
    the other cases tell which."""
    counted = target != ignore_index
    expected_lse = torch.logsumexp(x, dim=1)
    expected = torch.nn.functional.cross_entropy(x, target, ignore_index=ignore_index, reduction="none")
    tol = 1e-9 if dtype == "float64" else 1e-5
    close = lambda a, b, tol=tol: torch.isclose(a, b, rtol=tol, atol=tol)  # noqa: E731
    if not close(lse, expected_lse)[counted].all():
        slip = dtype == "float64" and torch.allclose(lse[counted], expected_lse[counted], rtol=1e-5, atol=1e-6)
        parts["lse"].fail(
            f"{where}: a counted row's log-sum-exp is wrong",
            PRECISION_HINT if slip else "store each row's log-sum-exp: backward needs it",
        )
    loss_wrong = not close(loss, expected)[counted].all()
    # the first row's target read for every row: what each row's loss would then be
    t0 = int(target[0])
    row0 = expected_lse - x[:, t0] if t0 != ignore_index else torch.zeros_like(expected_lse)
    if loss_wrong:
        row = int((~close(loss, expected) & counted).nonzero()[0])
        # the loss its own wrong log-sum-exp gives (lse - the target's logit): one mistake, counted once
        picked = x[counted, target[counted]]
        lse_wrong = not close(lse[row : row + 1], expected_lse[row : row + 1]).all() and bool(
            close(loss[counted], lse[counted] - picked).all()
        )
        parts["loss"].fail(
            f"{where}: the loss of row {row} is off",
            None if lse_wrong else ROW0_TARGET_HINT if close(loss, row0).all() else LOSS_HINT,
            same_mistake_as="lse" if lse_wrong else None,
        )
    if not (loss[~counted] == 0).all():
        as_row0 = t0 != ignore_index and bool(close(loss, row0)[~counted].all())
        # a kernel that ignores nothing picks the ignore_index's column, or column 0 for a negative one (clamped)
        ignoring_nothing = expected_lse - x[:, ignore_index if 0 <= ignore_index < x.shape[1] else 0]
        own_targets = not loss_wrong and bool((target[counted] != t0).any())  # counted rows right, not row 0's
        if as_row0 and not own_targets and not loss_wrong and close(loss, ignoring_nothing)[~counted].all():
            return True
        if as_row0 and not own_targets:
            # row 0's target read for every row: the loss's idea (each row its own target), whichever rows show it;
            # where only ignored rows do (every counted row's target is row 0's), "store 0" would be a wrong fix
            parts["loss"].fail(
                f"{where}: a row whose target is ignore_index has the loss row 0's target gives it",
                ROW0_TARGET_HINT,
            )
        else:
            parts["ignored"].fail(f"{where}: a row whose target is ignore_index has a loss other than 0", IGNORED_HINT)
    return False


def _ce_pointers(dtype: str) -> list[str]:
    """The cross-entropy kernels' four pointers: logits, targets (int64), and two of the logits' dtype."""
    return [pointer(dtype), "*i64", pointer(dtype), pointer(dtype)]


def _judge_compiles(parts: dict[str, Part], record: Any, cases: Sequence[Any], positional: Callable) -> None:
    """The kernel's own source compiled for a GPU, once per launch of the cases that Triton specializes differently
    (BLOCK_V, dtype, and how the row stride V + BLOCK_V and V specialize: the probes' launches); the part comes
    last. positional(dtype, stride, V): the launch's arguments before BLOCK_V."""
    others = [part for name, part in parts.items() if name != "bounds"]
    if share_earned(others)[0] == 0:  # a kernel that computes nothing right earns nothing for what it left alone
        parts["bounds"].unscore("not scored: the kernel earns nothing in the interpreter yet")
    parts["compiles"] = kernel_compile.compile_part()
    launches: dict[tuple, tuple] = {}
    for case in cases:
        V, block, dtype = case[1], case[2], case[3]
        kinds = (block, dtype, specialization_class(V + block), specialization_class(V))
        launches.setdefault(kinds, (block, dtype, V))
    kernel_compile.judge_compiles(
        parts["compiles"],
        record,
        [
            (
                f"{dtype} rows, V={V}, BLOCK_V={block}",
                *launch_signature(record, positional(dtype, V + block, V), {"BLOCK_V": block}),
            )
            for block, dtype, V in launches.values()
        ],
        others=others,
    )


CE_BACKWARD_PARTS = {
    "values": "the gradient, (softmax - one_hot) * scale (V a multiple of BLOCK_V)",
    "tail": "V not a multiple of BLOCK_V (the last chunk's load and store masked)",
    "ignored": "a row whose target is ignore_index: gradient 0",
    "uses_lse": "the softmax recomputed from the saved log-sum-exp",
    "bounds": "the logits, targets and log-sum-exps only read",
}


def ce_backward_cases(block: int = 16) -> list[tuple]:
    """(rows, V, BLOCK_V, dtype, ignored rows, lse shift): one case per part."""
    return [
        (3, 32, block, "float64", 0, 0.0),  # values
        (3, 37, block, "float64", 0, 0.0),  # tail
        (4, 32, block, "float64", 2, 0.0),  # ignored
        (2, 32, block, "float64", 0, math.log(2.0)),  # uses_lse: the saved log-sum-exp, not one recomputed
    ]


def backward_part(case: Sequence[Any]) -> str:
    rows, V, block, dtype, ignored, lse_shift = case
    return "uses_lse" if lse_shift else "ignored" if ignored else "tail" if V % block else "values"


def _backward_models(
    seed: int, case: Sequence[Any], ignore_index: int, scale: float, terms: tuple[float, float] | None = None
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """(the case's gradient, what whole-formula mistakes would give instead): a case that fails by the same mistake
    as the plain case is charged once; one that fails otherwise (a blank kernel's NaN) is charged in its own part.
    terms: (a, b) of a formula a * softmax + b * one_hot fitted to the plain case (a wrong term's coefficient, such
    as the scale on the softmax alone), the model "terms"."""
    rows, V, block, dtype, ignored, lse_shift = case
    x = row_case(seed, rows, V, dtype, 0).to(torch.float64)
    target = ce_targets(seed, rows, V, ignored, ignore_index)
    counted = target != ignore_index
    p = torch.exp(x - (torch.logsumexp(x, dim=1, keepdim=True) + lse_shift))
    one_hot = torch.zeros_like(x)
    one_hot[counted, target[counted]] = 1.0
    counted_only = counted[:, None].to(x.dtype)
    expected = (p - one_hot) * scale * counted_only
    models = {
        "float32": expected.to(torch.float32).to(torch.float64),  # matched to float32's precision by _matches
        "unscaled": (p - one_hot) * counted_only,
        "sign": -expected,
        "no one-hot": p * scale * counted_only,
    }
    if terms is not None:
        models["terms"] = (terms[0] * p + terms[1] * one_hot) * counted_only
    return expected, models


def fitted_terms(seed: int, case: Sequence[Any], ignore_index: int, grad: torch.Tensor) -> tuple[float, float] | None:
    """(a, b) when the counted rows of `grad` are exactly a * softmax + b * one_hot with both terms present: the
    right formula with a wrong coefficient (the scale on one term only, a factor 2). None otherwise (a blank or
    zero kernel, another formula)."""
    rows, V, _, dtype, ignored, lse_shift = case
    x = row_case(seed, rows, V, dtype, 0).to(torch.float64)
    target = ce_targets(seed, rows, V, ignored, ignore_index)
    counted = target != ignore_index
    if not counted.any() or not torch.isfinite(grad).all():
        return None
    p = torch.exp(x - (torch.logsumexp(x, dim=1, keepdim=True) + lse_shift))[counted]
    one_hot = torch.zeros_like(p)
    one_hot[torch.arange(p.shape[0]), target[counted]] = 1.0
    basis = torch.stack([p.flatten(), one_hot.flatten()], dim=1)
    a, b = torch.linalg.lstsq(basis, grad[counted].to(torch.float64).flatten()[:, None]).solution.flatten().tolist()
    if a == 0 or b == 0 or not _matches(grad[counted].to(torch.float64), a * p + b * one_hot):
        return None
    return a, b


def _matches(grad: torch.Tensor, model: torch.Tensor) -> bool:
    return bool(torch.allclose(grad, model, rtol=1e-5, atol=1e-7))


BACKWARD_HINTS = {
    "values": "each entry is (softmax - one_hot) * scale, the softmax recomputed as exp(logit - lse)",
    "tail": "the last chunk of a row: load and store only the columns below V",
    "ignored": "a row whose target is ignore_index gets a gradient of 0 in every column",
    "uses_lse": "recompute the softmax from the log-sum-exp forward saved (lse_ptr), not from a sum of your own: "
    "that is the pass over the row the saved N floats buy back",
}


def draw_ce_backward(rng: random.Random, count: int) -> dict[str, Any]:
    cases = []
    for _ in range(count):
        block = rng.choice([8, 16, 32])
        V = block * rng.randint(1, 3)
        cases += [
            (rng.randint(1, 4), V, block, "float64", 0, 0.0),
            (rng.randint(1, 4), V + rng.randint(1, block - 1), block, "float64", 0, 0.0),
            (rng.randint(3, 5), V, block, "float64", rng.randint(1, 2), 0.0),
            (rng.randint(1, 3), V, block, "float64", 0, rng.choice([-1.0, 0.5, 1.5])),
        ]
    # never 1: a kernel that forgets the scale would be right there
    return {"cases": cases, "seed": rng.randrange(1, 10**6), "scale": rng.choice([0.125, 0.5, 0.75])}


@decides("check_ce_backward", draw=draw_ce_backward)
def judge_ce_backward(
    data: ProbeData,
    cases: Sequence[Any],
    seed: int = 0,
    ignore_index: int = -100,
    scale: float = 0.25,
    points: float = 5,
) -> Verdict:
    parts, judged = titled_parts(CE_BACKWARD_PARTS), []
    params = {"cases": cases, "seed": seed, "ignore_index": ignore_index, "scale": scale}
    launches, record = kernel_compile.run_recorded(data, "autograder.nb06.probes:probe_ce_backward", params)
    answered = list(zip(cases, answers.per_case(launches, cases)))
    answered.sort(key=lambda pair: backward_part(pair[0]) != "values")  # the plain cases first: see below
    values_mistake, terms = None, None
    for case, got in answered:
        rows, V, block, dtype, ignored, lse_shift = case
        keys = ("grad", "written_past_V", "inputs_changed", "read_outside", "written_elsewhere")
        entry = answers.entry(got, f"case {case}", keys)
        grad = answers.tensor(entry["grad"], f"the gradient of case {case}", shape=(rows, V))
        past = answers.integer(entry["written_past_V"], f"the padding count of case {case}")
        changed = answers.flag(entry["inputs_changed"], f"the input check of case {case}")
        where = f"{rows} rows of V = {V}, BLOCK_V = {block}, {dtype}"
        judged.append((entry, case, where))
        if changed:
            parts["bounds"].fail(f"{where}: the logits, targets or log-sum-exps changed", "backward only reads them")
        if past:
            parts["tail"].fail(
                f"{where}: {past} value(s) stored past the end of a row",
                "the last chunk's store needs the same mask as its load: columns at or beyond V belong to no one",
            )
        expected, models = _backward_models(seed, case, ignore_index, scale, terms)
        bad = ~torch.isclose(grad, expected, rtol=1e-9, atol=1e-12)
        if not bad.any():
            continue
        row = int(bad.any(dim=1).nonzero()[0])
        part = backward_part(case)
        mistake = next((name for name, model in models.items() if _matches(grad, model)), None)
        if part == "values" and mistake is None and values_mistake is None:
            terms = fitted_terms(seed, case, ignore_index, grad)  # one wrong term: the later cases show it again
            mistake = "terms" if terms else None
        if part == "values":
            values_mistake = mistake
        # the plain case's mistake seen again here (the same wrong formula): it costs the values' share once
        follows = "values" if part != "values" and mistake and mistake == values_mistake else None
        hint = BACKWARD_PRECISION_HINT if mistake == "float32" else BACKWARD_HINTS[part]
        parts[part].fail(
            f"{where}: row {row} of the gradient is off", None if follows else hint, same_mistake_as=follows
        )
    _judge_reads(parts, judged)
    _judge_compiles(
        parts,
        record,
        cases,
        lambda dtype, stride, V: [*_ce_pointers(dtype), stride, V, ignore_index, "fp32"],
    )
    return verdict_of(list(parts.values()), points, "cross_entropy_backward_kernel (the gradient, recomputed)")
