"""Notebook 06's checks: each gives a right answer (a kernel, a function, a Function) full marks on the visible and
on drawn cases, and each classic mistake exactly its own idea's share, with the hint meant for it."""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: these kernels run in the interpreter

import ast  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import tomllib  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import autograder.nb06.judges  # noqa: E402,F401  (nb06.judges.* below)
from autograder import nb06  # noqa: E402
from autograder.feedback import CheckFailed  # noqa: E402
from autograder.nb06 import probes as nb06_probes  # noqa: E402
from autograder.nb06.judges.kernels import draw_row_lse, row_lse_cases  # noqa: E402

pytestmark = pytest.mark.nb06
CASES = row_lse_cases()


def verdict_of_call(check, obj, **params):
    """(points, the parts failed, the report) of one check call, right or partly wrong."""
    try:
        verdict = check(obj, **params)
    except CheckFailed as failure:
        verdict = failure.verdict
        assert verdict is not None, str(failure)
    return float(verdict), {p.name for p in verdict.parts if p.passed is False}, verdict.report()


@triton.jit
def right(logits_ptr, lse_ptr, stride, V, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    m = tl.full([], float("-inf"), lse_ptr.dtype.element_ty)
    s = tl.zeros([], lse_ptr.dtype.element_ty)
    for start in range(0, V, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * stride + cols, mask=cols < V, other=-float("inf")).to(lse_ptr.dtype.element_ty)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    tl.store(lse_ptr + row, m + tl.log(s))


@triton.jit
def first_chunk_only(logits_ptr, lse_ptr, stride, V, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_V)
    x = tl.load(logits_ptr + row * stride + cols, mask=cols < V, other=-float("inf")).to(lse_ptr.dtype.element_ty)
    m = tl.max(x, axis=0)
    tl.store(lse_ptr + row, m + tl.log(tl.sum(tl.exp(x - m), axis=0)))


def one_share_lost(points: float, interpreter_parts: dict) -> float:
    """A kernel check's score with one idea missed: its interpreter parts and "compiles for a GPU" share points."""
    ideas = len(interpreter_parts) + 1
    return round(points * (ideas - 1) / ideas, 2)


def score(kernel, **params):
    return verdict_of_call(nb06.check_row_lse, kernel, **(params or {"cases": CASES}))


def test_a_right_kernel_gets_full_marks_on_visible_and_drawn_cases():
    assert score(right)[:2] == (5.0, set())
    drawn = draw_row_lse(random.Random(3), 1)
    assert score(right, **drawn)[:2] == (5.0, set())


@triton.jit
def row_logsumexp(logits_ptr, row, stride, V, lse_ptr, BLOCK_V: tl.constexpr):
    """`right`'s online loop, in lse_ptr's element type: the variants below differ from it only after the loop."""
    m = tl.full([], float("-inf"), lse_ptr.dtype.element_ty)
    s = tl.zeros([], lse_ptr.dtype.element_ty)
    for start in range(0, V, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * stride + cols, mask=cols < V, other=-float("inf")).to(lse_ptr.dtype.element_ty)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    return m + tl.log(s)


def test_ignored_rows_fall_anywhere_in_the_batch():
    from autograder.nb06.cases import ce_targets

    where = {tuple((ce_targets(seed, 8, 20, 2, -100) == -100).nonzero().flatten().tolist()) for seed in range(12)}
    assert len(where) > 4 and any(7 not in rows for rows in where)


def test_a_kernel_that_reads_only_the_first_chunk_fails_where_rows_are_longer():
    points, failed, report = score(first_chunk_only)
    # no case right: from its values alone it cannot be told from a kernel that computes nothing, and earns nothing
    assert failed == {"values", "rescale", "tail", "stability"} and points == 0.0, report
    assert "loop over its chunks" in report, report


def test_forged_data_is_refused():
    with pytest.raises(CheckFailed, match="recorded source was expected"):
        nb06.check_row_lse.decide([], cases=CASES)
    # launches from the learner's process are never read: the judge runs the recorded text itself
    with pytest.raises(CheckFailed, match="recorded source was expected"):
        nb06.check_row_lse.decide({"launches": [], "kernel": {}}, cases=CASES)
    with pytest.raises(CheckFailed, match="could not be defined from its source"):
        nb06.check_row_lse.decide({"kernel": {"entry": "k", "functions": {}, "globals": {}}}, cases=CASES)


# ------------------------------------------------------------------------------------------ the forward kernel
from autograder.nb06.judges.kernels import ce_forward_cases, draw_ce_forward  # noqa: E402


@triton.jit
def forward_right(logits_ptr, target_ptr, loss_ptr, lse_ptr, stride, V, ignore_index, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    m = tl.full([], float("-inf"), lse_ptr.dtype.element_ty)
    s = tl.zeros([], lse_ptr.dtype.element_ty)
    for start in range(0, V, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * stride + cols, mask=cols < V, other=-float("inf")).to(lse_ptr.dtype.element_ty)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(s)
    target = tl.load(target_ptr + row)
    counted = target != ignore_index
    picked = tl.load(logits_ptr + row * stride + tl.where(counted, target, 0)).to(lse_ptr.dtype.element_ty)
    tl.store(lse_ptr + row, lse)
    tl.store(loss_ptr + row, tl.where(counted, lse - picked, 0.0))


@triton.jit
def forward_reads_the_first_rows_target(
    logits_ptr, target_ptr, loss_ptr, lse_ptr, stride, V, ignore_index, BLOCK_V: tl.constexpr
):
    row = tl.program_id(0)
    acc = lse_ptr.dtype.element_ty
    m = tl.full([], float("-inf"), acc)
    s = tl.zeros([], acc)
    for start in range(0, V, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * stride + cols, mask=cols < V, other=-float("inf")).to(acc)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(s)
    target = tl.load(target_ptr)  # row 0's target, for every row: ignored rows go wrong with the rest
    counted = target != ignore_index
    picked = tl.load(logits_ptr + row * stride + tl.where(counted, target, 0)).to(acc)
    tl.store(lse_ptr + row, lse)
    tl.store(loss_ptr + row, tl.where(counted, lse - picked, 0.0))


def test_the_first_rows_target_read_everywhere_is_one_mistake_though_ignored_rows_show_it_too():
    cases = [case for case in ce_forward_cases() if case[4]]  # the cases with ignored rows
    points, failed, report = forward_score(forward_reads_the_first_rows_target, cases=cases)
    assert failed <= {"loss", "ignored"} and "loss" in failed, report
    assert points == one_share_lost(4, nb06.judges.kernels.CE_FORWARD_PARTS), report
    assert "used row 0's target" in report and report.count("Hint:") == 1, report


@pytest.mark.parametrize("seed", range(8))
def test_the_first_rows_target_read_everywhere_costs_one_share_in_every_draw(seed):
    """Issue 48: on a drawn case where every counted row's target is row 0's (two rows, the second ignored), only the
    ignored rows showed it, and were charged on their own with the hint "store 0" (a wrong fix): 2.4/4 in some
    draws, 3.2/4 in others. Now the loss's idea, once, in every draw."""
    points, failed, report = forward_score(
        forward_reads_the_first_rows_target, **draw_ce_forward(random.Random(seed), 2)
    )
    assert (points, failed) == (one_share_lost(4, nb06.judges.kernels.CE_FORWARD_PARTS), {"loss"}), report
    assert "store 0" not in report and report.count("Hint:") == 1, report


def forward_score(kernel, **params):
    return verdict_of_call(nb06.check_ce_forward, kernel, **(params or {"cases": ce_forward_cases()}))


def test_a_right_forward_kernel_gets_full_marks_on_visible_and_drawn_cases():
    assert forward_score(forward_right)[:2] == (4.0, set())
    for seed in range(3):
        assert forward_score(forward_right, **draw_ce_forward(random.Random(seed), 2))[:2] == (4.0, set())


# ------------------------------------------------------------------------------------------ the backward kernel
from autograder.nb06.judges.kernels import ce_backward_cases, draw_ce_backward  # noqa: E402


@triton.jit
def backward_right(logits_ptr, target_ptr, lse_ptr, grad_ptr, stride, V, ignore_index, scale, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    target = tl.load(target_ptr + row)
    lse = tl.load(lse_ptr + row)
    counted = target != ignore_index
    for start in range(0, V, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * stride + cols, mask=cols < V, other=0.0).to(lse_ptr.dtype.element_ty)
        g = (tl.exp(x - lse) - tl.where(cols == target, 1.0, 0.0)) * scale
        tl.store(grad_ptr + row * stride + cols, tl.where(counted, g, 0.0), mask=cols < V)


@triton.jit
def copy_into(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=offsets < n), mask=offsets < n)


@triton.jit
def backward_writes_zeros(
    logits_ptr, target_ptr, lse_ptr, grad_ptr, stride, V, ignore_index, scale, BLOCK_V: tl.constexpr
):
    row = tl.program_id(0)
    for start in range(0, V, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        tl.store(grad_ptr + row * stride + cols, tl.zeros([BLOCK_V], lse_ptr.dtype.element_ty), mask=cols < V)


def test_a_drawn_backward_scale_is_never_one():
    """A kernel that forgets the scale is right where it is 1: such a draw could not see that mistake (5 of 8 did)."""
    assert 1.0 not in {draw_ce_backward(random.Random(seed), 1)["scale"] for seed in range(200)}


def test_a_kernel_that_writes_zeros_is_no_formula_with_a_wrong_term():
    """The fitted formula a * softmax + b * one_hot needs both terms: zeros everywhere earn nothing, as before."""
    assert backward_score(backward_writes_zeros)[0] == 0.0


def backward_score(kernel, **params):
    return verdict_of_call(nb06.check_ce_backward, kernel, **(params or {"cases": ce_backward_cases()}))


def test_a_right_backward_kernel_gets_full_marks_on_visible_and_drawn_cases():
    assert backward_score(backward_right)[:2] == (5.0, set())
    for seed in range(2):
        assert backward_score(backward_right, **draw_ce_backward(random.Random(seed), 1))[:2] == (5.0, set())


# ------------------------------------------------------------------------------------------ log-sum-exp in PyTorch
import torch  # noqa: E402

from autograder.nb06.judges.by_hand import draw_logsumexp, draw_online_lse, logsumexp_cases, online_cases  # noqa: E402


def stable(x):
    m = x.max(dim=-1, keepdim=True).values
    return (m + torch.log(torch.exp(x - m).sum(dim=-1, keepdim=True))).squeeze(-1)


def online(chunks):
    m, s = -float("inf"), 0.0
    for part in chunks:
        m_new = part.max(dim=-1).values.clamp(min=m)
        s = s * torch.exp(m - m_new) + torch.exp(part - m_new[:, None]).sum(dim=-1)
        m = m_new
    return m + torch.log(s)


def test_logsumexp_by_hand():
    """(Its mistakes, and the online log-sum-exp's, with right answers written differently: tests/nb06_catalogue/.)"""
    assert verdict_of_call(nb06.check_logsumexp, stable, cases=logsumexp_cases())[:2] == (2.0, set())
    assert verdict_of_call(nb06.check_logsumexp, stable, **draw_logsumexp(random.Random(1), 3))[:2] == (2.0, set())


def test_a_blank_exercise_says_it_is_not_written():
    def blank(x):
        raise NotImplementedError()

    with pytest.raises(CheckFailed, match="not written yet"):
        nb06.check_logsumexp(blank, cases=logsumexp_cases())


# ------------------------------------------------------------------------------------------ the Function
from torch.autograd import Function  # noqa: E402

from autograder.nb06.cases import LEFT_PER_ROW  # noqa: E402
from autograder.nb06.judges.functions import draw_fused_ce, fused_ce_cases  # noqa: E402


def accumulation_dtype(dtype):
    return torch.float64 if dtype == torch.float64 else torch.float32


def block_for(V):
    """16 columns a chunk on narrow rows (several chunks each); on the bfloat16 check's wide rows up to 1024, as the
    solution does: Triton's interpreter takes about as long for a chunk of 16 columns as for one of 1024."""
    return 16 if V <= 256 else min(1024, triton.next_power_of_2(V))


def make_function(
    *,
    mean_over_all=False,
    save_softmax=False,
    torch_only=False,
    extra_grads=False,
    lse_bf16=False,
    launch_for_show=False,
    backward_raises=False,
    round_early=False,
    no_scale=False,
    softmax_in_pieces=False,
    gradient_in_forward=False,
    gradient_from_saved_softmax=False,
    forward_sum=False,
    any_layout=True,
):
    class Fused(Function):
        @staticmethod
        def forward(ctx, logits, target, ignore_index=-100):
            logits = logits.contiguous() if any_layout else logits
            rows, V = logits.shape
            acc = accumulation_dtype(logits.dtype)
            if torch_only:
                lse = torch.logsumexp(logits.to(acc), dim=1)
                counted = target != ignore_index
                picked = logits.gather(1, target.clamp(min=0)[:, None]).squeeze(1).to(acc)
                loss = torch.where(counted, lse - picked, torch.zeros_like(lse))
            else:
                lse = torch.empty(rows, dtype=acc)
                loss = torch.empty(rows, dtype=acc)
                forward_right[(rows,)](
                    logits, target, loss, lse, logits.stride(0), V, ignore_index, BLOCK_V=block_for(V)
                )
            n = rows if mean_over_all else max(int((target != ignore_index).sum()), 1)
            if lse_bf16:
                lse = lse.to(logits.dtype).to(acc)  # kept in the logits' precision: the bf16 mistake
            kept = torch.exp(logits.to(acc) - lse[:, None]) if save_softmax else lse
            ctx.save_for_backward(logits, target, kept)
            ctx.ignore_index, ctx.n = ignore_index, n
            if softmax_in_pieces:  # the softmax kept on ctx two rows at a time: N×V numbers in small pieces
                ctx.pieces = [torch.exp(logits[r : r + 2].to(acc) - lse[r : r + 2, None]) for r in range(0, rows, 2)]
            if gradient_in_forward:  # backward's kernel run in forward, its gradient kept for backward to scale
                ctx.grad = torch.empty_like(logits)
                backward_right[(rows,)](
                    logits, target, lse, ctx.grad, logits.stride(0), V, ignore_index, 1.0 / n, BLOCK_V=block_for(V)
                )
            return (loss.sum() / (1 if forward_sum else n)).to(logits.dtype)

        @staticmethod
        def backward(ctx, grad_output):
            if backward_raises:
                raise ValueError("lse has the wrong shape")  # as a learner's slip would
            if gradient_in_forward:
                return ctx.grad * grad_output, None, None
            logits, target, kept = ctx.saved_tensors
            if gradient_from_saved_softmax:  # forward kept the softmax; PyTorch makes the gradient from it here
                g = kept.clone()
                g[torch.arange(g.shape[0]), target.clamp(min=0)] -= 1.0
                return g * (float(grad_output) / ctx.n) * (target != ctx.ignore_index)[:, None], None, None
            rows, V = logits.shape
            lse = torch.log(kept.sum(dim=1)) + 0 if False else kept
            scale = 1.0 if no_scale else float(grad_output) / ctx.n
            if save_softmax:
                lse = torch.logsumexp(logits.to(kept.dtype), dim=1)
            if torch_only:
                p = torch.exp(logits - lse[:, None])
                p[torch.arange(rows), target.clamp(min=0)] -= 1.0
                grad = p * scale * (target != ctx.ignore_index)[:, None]
            else:
                grad = torch.empty_like(logits)
                backward_right[(rows,)](
                    torch.zeros_like(logits) if launch_for_show else logits,  # for show: on other numbers
                    target, lse, grad, logits.stride(0), V, ctx.ignore_index, scale, BLOCK_V=block_for(V)
                )  # fmt: skip
            if round_early:  # logit - lse rounded to the logits' dtype before exp (rounding to nearest, as a GPU
                # does; the interpreter truncates), stored by a kernel: the numbers of a rounding on the way
                p = torch.exp((logits.to(lse.dtype) - lse[:, None]).to(logits.dtype).to(lse.dtype))
                p[torch.arange(rows), target.clamp(min=0)] -= 1.0
                rounded = (p * scale * (target != ctx.ignore_index)[:, None]).to(grad.dtype).contiguous()
                copy_into[(triton.cdiv(grad.numel(), 1024),)](rounded, grad, grad.numel(), BLOCK=1024)
            if launch_for_show:  # the launch (on other numbers) stays, PyTorch writes the gradient over what it left
                p = torch.exp(logits - lse[:, None])
                p[torch.arange(rows), target.clamp(min=0)] -= 1.0
                grad.copy_(p * scale * (target != ctx.ignore_index)[:, None])
            return (grad, None, None, None) if extra_grads else (grad, None, None)

    return Fused


FUSED_IDEAS = len(nb06.judges.functions.FUSED_PARTS) - 1  # gradcheck and reference test one idea, the backward
FUSED_ONE_SHARE_LOST = round(5 * (FUSED_IDEAS - 1) / FUSED_IDEAS, 2)


def fused_score(cls, **params):
    return verdict_of_call(nb06.check_fused_ce, cls, **(params or {"cases": fused_ce_cases()}))


def test_a_gradient_pytorch_wrote_over_the_kernels_loses_the_gradient_part():
    """Backward launches its kernel, then writes PyTorch's gradient over what the kernel left: the launch was
    counted before; now the gradient handed back must be the launch's own."""
    points, failed, report = fused_score(make_function(launch_for_show=True))
    assert "reference" in failed and "no gradient a Triton kernel wrote" in report, report


def test_a_right_function_gets_full_marks_on_visible_and_drawn_cases():
    assert fused_score(make_function())[:2] == (5.0, set())
    assert fused_score(make_function(), **draw_fused_ce(random.Random(4), 1))[:2] == (5.0, set())


@pytest.mark.parametrize(
    ("options", "failed_parts", "hint"),
    [
        ({"mean_over_all": True}, {"mean", "reference"}, "divide by the number of counted rows"),
        ({"save_softmax": True}, {"memory"}, "recomputes the softmax"),
        ({"extra_grads": True}, {"interface"}, "one value per input of forward"),
    ],
)
def test_each_function_mistake_costs_its_part(options, failed_parts, hint):
    points, failed, report = fused_score(make_function(**options))
    assert failed == failed_parts, report
    assert points == FUSED_ONE_SHARE_LOST and hint in report


def test_a_gradient_made_in_backward_from_a_kept_softmax_is_two_mistakes_not_one():
    """Issue 48: forward keeps the softmax (the memory's idea) and backward makes the gradient from it with PyTorch
    (the backward kernel's idea): the second was labelled "the same mistake as memory ... computed in forward and
    kept", though it was computed in backward. Two ideas lost, each named; a gradient forward made and kept (the
    backward kernel run in forward, scaled in backward) is still the memory's one mistake."""
    points, failed, report = fused_score(make_function(save_softmax=True, gradient_from_saved_softmax=True))
    assert failed == {"memory", "reference"}, report
    assert points == round(5 * (FUSED_IDEAS - 2) / FUSED_IDEAS, 2), report
    assert "(it was computed in forward and kept)" not in report and "no gradient a Triton kernel wrote" in report, (
        report
    )
    points, failed, report = fused_score(make_function(gradient_in_forward=True))
    assert points == FUSED_ONE_SHARE_LOST and "(it was computed in forward and kept)" in report, report


def test_a_function_of_torch_operations_earns_no_kernel_part():
    points, failed, report = fused_score(make_function(torch_only=True))
    assert {"forward", "reference"} <= failed and "launched no Triton kernel" in report, report
    assert failed == {"forward", "reference"}, report  # its loss and gradient are right: every other part scores


# The loss is the mean of what forward's kernel wrote per row. Before, one launch of any kernel was enough: a
# launch for show beside PyTorch's loss kept the forward part. Attacks (each loses the forward part only) and the
# honest layouts that must keep full marks.
@triton.jit
def first_column(logits_ptr, out_ptr, stride):  # a kernel that runs and computes nothing the loss needs
    row = tl.program_id(0)
    tl.store(out_ptr + row, tl.load(logits_ptr + row * stride))


@triton.jit
def leave_alone(buffer_ptr):  # a launch handed a buffer it never writes
    pass


def _torch_rows(logits, target, ignore_index):
    lse = torch.logsumexp(logits, dim=1)
    picked = logits.gather(1, target.clamp(min=0)[:, None]).squeeze(1)
    return torch.where(target != ignore_index, lse - picked, torch.zeros_like(lse)), lse


def _forward_variant(kind, logits, target, ignore_index):
    """(per-row losses, log-sum-exps) as each variant makes them, in the accumulation dtype."""
    rows, V = logits.shape
    acc = accumulation_dtype(logits.dtype)
    loss, lse = torch.empty(rows, dtype=acc), torch.empty(rows, dtype=acc)
    if kind == "launch_on_zeros":  # the kernel on other data, PyTorch's answer returned
        forward_right[(rows,)](torch.zeros_like(logits), target, loss, lse, V, V, ignore_index, BLOCK_V=block_for(V))
        return _torch_rows(logits.to(acc), target, ignore_index)
    if kind == "launch_of_another_kernel":
        first_column[(rows,)](logits, loss, logits.stride(0))
        return _torch_rows(logits.to(acc), target, ignore_index)
    if kind == "table_of_guesses":  # many small buffers of candidate values handed to launches
        for k in range(4 * LEFT_PER_ROW):
            leave_alone[(1,)](torch.linspace(0.0, 6.0, rows, dtype=logits.dtype) + k * 6.0 / (4 * LEFT_PER_ROW))
        return _torch_rows(logits.to(acc), target, ignore_index)
    if kind == "table_within_the_limit":  # as many numbers as the judge reads, spread over the likely losses
        for k in range(LEFT_PER_ROW - 2):
            leave_alone[(1,)](torch.linspace(0.5, 5.0, rows, dtype=logits.dtype).roll(k))
        return _torch_rows(logits.to(acc), target, ignore_index)
    if kind == "not_protected_torch_rows_handed_to_a_launch":
        rows_loss, rows_lse = _torch_rows(logits.to(acc), target, ignore_index)
        leave_alone[(1,)](rows_loss)
        return rows_loss, rows_lse
    if kind == "packed":  # honest: loss and log-sum-exp in one (2, rows) buffer
        both = torch.empty(2, rows, dtype=acc)
        forward_right[(rows,)](
            logits, target, both[0], both[1], logits.stride(0), V, ignore_index, BLOCK_V=block_for(V)
        )
        return both[0], both[1]
    if kind == "loss_from_lse":  # honest: the kernel's log-sum-exps, the subtraction in PyTorch
        forward_right[(rows,)](logits, target, loss, lse, logits.stride(0), V, ignore_index, BLOCK_V=block_for(V))
        picked = logits.gather(1, target.clamp(min=0)[:, None]).squeeze(1).to(acc)
        return torch.where(target != ignore_index, lse - picked, torch.zeros_like(lse)), lse
    assert kind == "row_by_row"  # honest: one launch per row, each handed its row's views
    for r in range(rows):
        forward_right[(1,)](
            logits[r : r + 1],
            target[r : r + 1],
            loss[r : r + 1],
            lse[r : r + 1],
            V,
            V,
            ignore_index,
            BLOCK_V=block_for(V),
        )
    return loss, lse


def fused_with_forward(kind):
    class Fused(Function):
        @staticmethod
        def forward(ctx, logits, target, ignore_index=-100):
            logits = logits.contiguous()
            loss, lse = _forward_variant(kind, logits, target, ignore_index)
            ctx.save_for_backward(logits, target, lse)
            ctx.ignore_index, ctx.n = ignore_index, max(int((target != ignore_index).sum()), 1)
            return (loss.sum() / ctx.n).to(logits.dtype)

        @staticmethod
        def backward(ctx, grad_output):
            logits, target, lse = ctx.saved_tensors
            grad = torch.empty_like(logits)
            rows, V = logits.shape
            scale = float(grad_output) / ctx.n
            backward_right[(rows,)](
                logits, target, lse, grad, logits.stride(0), V, ctx.ignore_index, scale, BLOCK_V=block_for(V)
            )
            return grad, None, None

    return Fused


@pytest.mark.parametrize(
    "kind", ["launch_on_zeros", "launch_of_another_kernel", "table_of_guesses", "table_within_the_limit"]
)
def test_a_loss_not_made_of_what_the_forward_kernel_wrote_loses_the_forward_part(kind):
    points, failed, report = fused_score(fused_with_forward(kind))
    # a kernel of the learner's own (not the notebook's forward kernel) runs in the learner's process: no evidence
    said = "wrote neither the rows' losses nor their log-sum-exps" if kind == "launch_on_zeros" else "launched no"
    assert failed == {"forward"} and said in report, report


@pytest.mark.parametrize("kind", ["packed", "loss_from_lse", "row_by_row"])
def test_a_loss_from_the_kernels_rows_in_any_honest_layout_keeps_full_marks(kind):
    assert fused_score(fused_with_forward(kind))[:2] == (5.0, set())
    assert fused_score(fused_with_forward(kind), **draw_fused_ce(random.Random(9), 1))[:2] == (5.0, set())


def test_pytorchs_rows_handed_to_a_launch_that_never_writes_them_are_not_the_kernels():
    """Issue 47: what a launch wrote is the launcher's record of the views the course's kernel stored, not the
    memory it was handed: values PyTorch computed and handed to a launch (before: a ceiling docs/grading.md listed)
    are not the kernel's."""
    points, failed, report = fused_score(fused_with_forward("not_protected_torch_rows_handed_to_a_launch"))
    assert failed == {"forward"}, report


# ------------------------------------------------------------------------------------------ memory and bf16
from autograder.nb06.judges.functions import draw_saved_problems  # noqa: E402


def new_saved_bytes(fn, *inputs):
    own = {t.untyped_storage().data_ptr() for t in inputs}
    kept = {}

    def pack(t):
        if t.untyped_storage().data_ptr() not in own:
            kept[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*inputs)
    return sum(kept.values())


def saved_counting_inputs(fn, *inputs):
    total = []
    with torch.autograd.graph.saved_tensors_hooks(
        lambda t: total.append(t.untyped_storage().nbytes()) or t, lambda t: t
    ):
        fn(*inputs)
    return sum(total)


def test_new_saved_bytes():
    assert verdict_of_call(nb06.check_new_saved_bytes, new_saved_bytes)[:2] == (3.0, set())
    assert verdict_of_call(nb06.check_new_saved_bytes, new_saved_bytes, **draw_saved_problems(random.Random(5), 1))[
        :2
    ] == (3.0, set())
    points, failed, report = verdict_of_call(nb06.check_new_saved_bytes, saved_counting_inputs)
    assert failed == {"inputs", "distinct"} and points == 1.0, report
    assert "an input's memory" in report and "count each storage once" in report, report


BF16_HINTS = {
    "keep the log-sum-exp in float32": {"lse_bf16": True},
    "the gradient is wrong, not imprecise": {"no_scale": True},
}


def test_bf16_in_ulps_a_right_function_keeps_every_part():
    assert verdict_of_call(nb06.check_bf16, make_function())[:2] == (3.0, set())


@pytest.mark.parametrize(
    ("answer", "failed_parts", "points", "says"),
    [
        (make_function(torch_only=True), {"loss"}, 0.0, "forward launched no Triton kernel"),
        (fused_with_forward("launch_on_zeros"), {"loss"}, 2.0, "the loss is not what the kernels wrote"),
        # PyTorch's gradient beside a launch for show: exercise 6 charges it; here it is not scored, nor earned
        (make_function(launch_for_show=True), set(), 3.0, "not scored here: backward handed back no gradient"),
        # the softmax kept, the gradient made from it by PyTorch in backward: exercise 6's two ideas, not this one's
        (
            make_function(save_softmax=True, gradient_from_saved_softmax=True),
            set(),
            3.0,
            "not scored here: backward handed back no gradient",
        ),
        # a gradient PyTorch computed (rounded on the way) and a kernel of the learner's own copied: not the course's
        # kernel's, so exercise 6 charges it (the Function checks run the course's kernels in place of the notebook's)
        (make_function(round_early=True), set(), 3.0, "not scored here: backward handed back no gradient"),
        # ... and the dtypes alone earn nothing where the loss is wrong
        (make_function(launch_for_show=True, forward_sum=True), {"loss"}, 0.0, "neither the loss nor the gradient"),
    ],
)
def test_bf16_counts_the_kernels_launches(answer, failed_parts, points, says):
    """Before, the bfloat16 check counted no launch: PyTorch in float32 kept 3/3. A gradient no kernel wrote earns
    nothing here and costs nothing here: exercise 6 charges it once (issue 48), and the loss and the dtypes are still
    judged. On the notebook's case (8 rows of 4 096 columns)."""
    got, failed, report = verdict_of_call(nb06.check_bf16, answer)
    assert (got, failed) == (points, failed_parts) and says in report, report


@pytest.mark.parametrize(("hint", "options"), list(BF16_HINTS.items()))
def test_bf16_in_ulps_each_error_with_its_own_hint(hint, options):
    points, failed, report = verdict_of_call(nb06.check_bf16, make_function(**options))
    assert failed == {"gradient"} and points == 2.0 and hint in report, report
    others = set(BF16_HINTS) - {hint}
    assert not any(h in report for h in others), report


@pytest.mark.parametrize(
    ("options", "failed_parts"),
    [
        ({"softmax_in_pieces": True}, {"memory"}),
        # backward hands back what forward's launch wrote: the memory's mistake, not a second one of the kernel
        ({"gradient_in_forward": True}, {"memory", "reference"}),
    ],
)
def test_memory_kept_on_ctx_counts_however_it_is_kept(options, failed_parts):
    points, failed, report = fused_score(make_function(**options))
    assert failed == failed_parts and points == FUSED_ONE_SHARE_LOST, report
    assert "on ctx" in report, report


def test_a_right_backward_under_a_wrong_forward_keeps_its_part():
    """The central differences are those of the learner's forward: a sum instead of the mean makes them disagree
    with a right backward, which the reference comparison shows right. One mistake: the forward's."""
    points, failed, report = fused_score(make_function(forward_sum=True))
    assert "gradcheck" in failed and "reference" not in failed and points == FUSED_ONE_SHARE_LOST, report
    assert "backward itself matches the reference" in report


def test_logits_handed_in_as_a_transposed_view_need_making_contiguous():
    """The notebook's rule (make the logits contiguous) is among the cases: a Function that hands a transposed view
    to its kernels loses the layout part alone."""
    points, failed, report = fused_score(make_function(any_layout=False))
    assert failed == {"layout"} and points == FUSED_ONE_SHARE_LOST, report
    assert "make the logits contiguous" in report


def test_a_backward_that_raises_costs_the_backward_only_with_its_message():
    """As in notebook 05: the loss (and what forward saved) keep their parts; the backward's idea is lost once, with
    the learner's own error; the bfloat16 exercise keeps its loss part too."""
    points, failed, report = fused_score(make_function(backward_raises=True))
    # the layout run meets the same raising backward: marked as that mistake, not charged again
    assert failed == {"reference", "gradcheck", "interface", "layout"} and points == FUSED_ONE_SHARE_LOST, report
    assert "lse has the wrong shape" in report
    points, failed, report = verdict_of_call(nb06.check_bf16, make_function(backward_raises=True))
    assert failed == {"gradient"} and points == 2.0 and "lse has the wrong shape" in report, report


# ------------------------------------------------------------------------------------------ linear cross-entropy
from autograder.nb06.judges.linear import draw_linear_ce, linear_ce_cases  # noqa: E402


def _torch_chunk_loss(logits, target):
    lse = torch.logsumexp(logits, dim=1)
    return lse - logits.gather(1, target[:, None]).squeeze(1), lse


def _torch_chunk_gradient(logits, target, lse, scale):
    g = torch.exp(logits - lse[:, None])
    g[torch.arange(g.shape[0]), target] -= 1.0
    return g * scale


def make_linear(
    *,
    whole=False,
    no_recompute=False,
    weight_grad_last_chunk=False,
    hide=None,
    double_chunk=False,
    keep_chunks=False,
    torch_chunks=False,
    launch_for_show=False,
    torch_backward=False,
    unscaled_kernel=False,
):
    """hide: a context under which forward makes the whole logits once more (dispatch or torch functions
    disabled, where a Python dispatch mode cannot see them). torch_chunks: each chunk computed with PyTorch's
    operations, no kernel; launch_for_show: the same beside launches on other data; torch_backward: kernels in
    forward only; unscaled_kernel: backward's kernel writes G unscaled into a buffer of its own, PyTorch scales."""

    class LinearCE(Function):
        @staticmethod
        def forward(ctx, hidden, weight, target, chunk):
            N, V = hidden.shape[0], weight.shape[0]
            step = N if whole else 2 * chunk if double_chunk else chunk
            if hide is not None:
                with hide():
                    (hidden @ weight.T).sum()
            loss, lse = torch.empty(N, dtype=hidden.dtype), torch.empty(N, dtype=hidden.dtype)
            for start in range(0, N, step):
                rows = slice(start, start + step)
                logits = hidden[rows] @ weight.T
                if torch_chunks or launch_for_show:
                    if launch_for_show:
                        forward_right[(logits.shape[0],)](
                            torch.zeros_like(logits), target[rows], loss[rows], lse[rows], V, V, -100, BLOCK_V=16
                        )
                    loss[rows], lse[rows] = _torch_chunk_loss(logits, target[rows])
                    continue
                forward_right[(logits.shape[0],)](
                    logits, target[rows], loss[rows], lse[rows], logits.stride(0), V, -100, BLOCK_V=16
                )
            ctx.save_for_backward(hidden, weight, target, lse)
            ctx.chunk = N if (whole or no_recompute) else chunk
            if keep_chunks:  # every chunk's logits kept for backward, each one small: N×V numbers in pieces
                ctx.chunks = [hidden[i : i + step] @ weight.T for i in range(0, N, step)]
            return loss.sum() / N

        @staticmethod
        def backward(ctx, grad_output):
            hidden, weight, target, lse = ctx.saved_tensors
            (N, V), step = (hidden.shape[0], weight.shape[0]), ctx.chunk
            grad_h, grad_w = torch.empty_like(hidden), torch.zeros_like(weight)
            for start in range(0, N, step):
                rows = slice(start, start + step)
                g = hidden[rows] @ weight.T  # recomputed; the kernel writes the gradient over it
                scale = float(grad_output) / N
                if torch_chunks or launch_for_show or torch_backward:
                    if launch_for_show or torch_backward:
                        backward_right[(g.shape[0],)](
                            torch.zeros_like(g), target[rows], lse[rows], torch.empty_like(g), V, V, -100, 1.0,
                            BLOCK_V=16,
                        )  # fmt: skip
                    g = _torch_chunk_gradient(g, target[rows], lse[rows], scale)
                elif unscaled_kernel:
                    unit = torch.empty_like(g)
                    backward_right[(g.shape[0],)](
                        g, target[rows], lse[rows], unit, g.stride(0), V, -100, 1.0, BLOCK_V=16
                    )
                    g = unit * scale
                else:
                    backward_right[(g.shape[0],)](
                        g, target[rows], lse[rows], g, g.stride(0), V, -100, scale, BLOCK_V=16
                    )
                grad_h[rows] = g @ weight
                if weight_grad_last_chunk:
                    grad_w = g.T @ hidden[rows]
                else:
                    grad_w += g.T @ hidden[rows]
            return grad_h, grad_w, None, None

    return LinearCE


def test_linear_cross_entropy_chunk_by_chunk():
    assert verdict_of_call(nb06.check_linear_ce, make_linear(), cases=linear_ce_cases())[:2] == (5.0, set())
    assert verdict_of_call(nb06.check_linear_ce, make_linear(), **draw_linear_ce(random.Random(6), 2))[:2] == (
        5.0,
        set(),
    )


@pytest.mark.parametrize(
    ("options", "failed_parts", "says"),
    [
        ({"torch_chunks": True}, {"forward", "reference"}, "forward launched no Triton kernel"),
        ({"launch_for_show": True}, {"forward", "reference"}, "the loss is not what the kernels wrote"),
        ({"torch_backward": True}, {"reference"}, "backward's kernels did not write the chunks' logit gradients"),
    ],
)
def test_linear_cross_entropy_chunks_not_made_by_the_kernels_lose_the_kernel_parts(options, failed_parts, says):
    """Before, the check counted no launch: PyTorch on each chunk, with or without launches for show, kept 5/5."""
    points, failed, report = verdict_of_call(nb06.check_linear_ce, make_linear(**options), cases=linear_ce_cases())
    assert failed == failed_parts and says in report, report


def liger_linear(torch_gradients=False):
    """Liger-Kernel's design (issue 48): forward computes each chunk's logits once, its losses and its logit gradient
    for grad_output = 1, accumulates both products and keeps them; backward only scales them by grad_output.
    torch_gradients: the chunk gradients computed with PyTorch instead (the kernel launched for show, on zeros)."""

    class LinearCE(Function):
        @staticmethod
        def forward(ctx, hidden, weight, target, chunk):
            N, V = hidden.shape[0], weight.shape[0]
            loss, lse = torch.empty(N, dtype=hidden.dtype), torch.empty(N, dtype=hidden.dtype)
            grad_h, grad_w = torch.empty_like(hidden), torch.zeros_like(weight)
            for start in range(0, N, chunk):
                rows = slice(start, start + chunk)
                logits = hidden[rows] @ weight.T
                forward_right[(logits.shape[0],)](
                    logits, target[rows], loss[rows], lse[rows], logits.stride(0), V, -100, BLOCK_V=16
                )
                g = torch.empty_like(logits)
                shown = torch.zeros_like(logits) if torch_gradients else logits
                backward_right[(g.shape[0],)](
                    shown, target[rows], lse[rows], g, logits.stride(0), V, -100, 1.0 / N, BLOCK_V=16
                )
                if torch_gradients:
                    g = _torch_chunk_gradient(logits, target[rows], lse[rows], 1.0 / N)
                grad_h[rows] = g @ weight
                grad_w += g.T @ hidden[rows]
            ctx.save_for_backward(grad_h, grad_w)
            return loss.sum() / N

        @staticmethod
        def backward(ctx, grad_output):
            grad_h, grad_w = ctx.saved_tensors
            return grad_h * grad_output, grad_w * grad_output, None, None

    return LinearCE


def test_linear_cross_entropy_in_liger_kernels_design_keeps_full_marks():
    """Issue 48: it got 3.75/5, "backward launched no Triton kernel": its kernels did launch, in forward. The chunks'
    gradients written by kernels count wherever they were launched; computed by PyTorch, they still do not."""
    cases = linear_ce_cases()
    assert verdict_of_call(nb06.check_linear_ce, liger_linear(), cases=cases)[:2] == (5.0, set())
    drawn = draw_linear_ce(random.Random(6), 2)
    assert verdict_of_call(nb06.check_linear_ce, liger_linear(), **drawn)[:2] == (5.0, set())
    points, failed, report = verdict_of_call(nb06.check_linear_ce, liger_linear(torch_gradients=True), cases=cases)
    assert failed == {"reference"} and "no Triton kernel wrote the chunks' logit gradients" in report, report


def test_linear_cross_entropy_a_kernel_writing_g_unscaled_keeps_full_marks():
    assert verdict_of_call(nb06.check_linear_ce, make_linear(unscaled_kernel=True), cases=linear_ce_cases())[:2] == (
        5.0,
        set(),
    )


def _dispatch_disabled():
    return torch.utils._python_dispatch._disable_current_modes()


def _torch_functions_disabled():
    return torch._C.DisableTorchFunction()


def _both_disabled():
    from contextlib import ExitStack

    stack = ExitStack()
    stack.enter_context(torch._C._DisableTorchDispatch())
    stack.enter_context(torch._C.DisableTorchFunction())
    return stack


@pytest.mark.parametrize("hide", [_dispatch_disabled, _torch_functions_disabled, _both_disabled])
def test_an_n_by_v_tensor_made_out_of_a_dispatch_modes_sight_is_seen_at_the_allocator(hide):
    """Memory is measured where it is allocated (the profiler's accounting), not from a Python dispatch mode that
    code running with dispatch or torch functions disabled never reaches."""
    points, failed, report = verdict_of_call(nb06.check_linear_ce, make_linear(hide=hide), cases=linear_ce_cases())
    assert failed == {"chunked"} and "an N×V tensor" in report, report


def test_chunks_larger_than_the_one_given_lose_the_memory_part():
    """The chunk size is the learner's budget: twice as many tokens at a time makes no N×V tensor, but a block larger
    than one chunk's logits."""
    points, failed, report = verdict_of_call(
        nb06.check_linear_ce, make_linear(double_chunk=True), cases=linear_ce_cases()
    )
    assert failed == {"chunked"} and "larger than one chunk's logits" in report, report


@pytest.mark.parametrize(
    ("options", "failed_parts", "hint"),
    [
        ({"whole": True}, {"chunked"}, "never exist"),
        ({"no_recompute": True}, {"chunked"}, "in backward too"),
        ({"weight_grad_last_chunk": True}, {"reference"}, "adds G.T @ hidden[chunk]"),
        ({"keep_chunks": True}, {"chunked"}, "backward recomputes each chunk's logits"),
    ],
)
def test_linear_cross_entropy_mistakes(options, failed_parts, hint):
    points, failed, report = verdict_of_call(nb06.check_linear_ce, make_linear(**options), cases=linear_ce_cases())
    assert failed == failed_parts and points == 3.75 and hint in report, report


# Non-answers: a Function that computes nothing earns nothing, however its other parts look (a constant loss has a
# zero gradient that agrees with its central differences; forward saved nothing; backward's return has the right
# length). Several variants of doing nothing.
class ZeroLoss(Function):
    @staticmethod
    def forward(ctx, logits, target, ignore_index=-100):
        ctx.save_for_backward(logits)
        return logits.sum() * 0

    @staticmethod
    def backward(ctx, grad_output):
        (logits,) = ctx.saved_tensors
        return torch.zeros_like(logits), None, None


class LossOfTheFirstLogit(Function):
    @staticmethod
    def forward(ctx, logits, target, ignore_index=-100):
        ctx.save_for_backward(logits)
        return logits[0, 0].clone()

    @staticmethod
    def backward(ctx, grad_output):
        (logits,) = ctx.saved_tensors
        grad = torch.zeros_like(logits)
        grad[0, 0] = grad_output
        return grad, None, None


class NoBackward(Function):
    @staticmethod
    def forward(ctx, *inputs):
        return inputs[0].sum() * 0

    @staticmethod
    def backward(ctx, grad_output):
        return (None,) * 4


@pytest.mark.parametrize("answer", [ZeroLoss, LossOfTheFirstLogit, NoBackward])
def test_a_function_that_computes_nothing_earns_nothing(answer):
    for check, params in (
        (nb06.check_fused_ce, {"cases": fused_ce_cases()}),
        (nb06.check_bf16, {}),
        *([(nb06.check_linear_ce, {"cases": linear_ce_cases()})] if answer is NoBackward else []),
    ):
        points, failed, report = verdict_of_call(check, answer, **params)
        assert points == 0.0 and "not scored" in report, report


# ------------------------------------------------------------------------------------------ the notebook's shape
def contract_cases():
    """(check, correct, wrong, blank, params) for tests/test_probe_contract.py."""

    @triton.jit
    def blank_kernel(logits_ptr, lse_ptr, stride, V, BLOCK_V: tl.constexpr):
        raise NotImplementedError()

    return [
        ("check_row_lse", right, first_chunk_only, blank_kernel, {"cases": CASES, "points": 5}),
        (
            "check_online_lse",
            online,
            catalogued_answer("online_no_rescale"),
            None,
            {"cases": online_cases(), "points": 3},
        ),
        (
            "check_fused_ce",
            make_function(),
            make_function(mean_over_all=True),
            None,
            {"cases": fused_ce_cases(), "points": 5},
        ),
        ("check_linear_ce", make_linear(), make_linear(whole=True), None, {"cases": linear_ce_cases(), "points": 5}),
    ]


def test_the_notebook_has_nine_graded_exercises_worth_thirty_points_or_more():
    import nbformat

    from autograder.coursedir import SOLUTIONS

    (path,) = (SOLUTIONS / "06-fused-cross-entropy").glob("*.ipynb")
    tests = [
        c.metadata["nbgrader"]
        for c in nbformat.read(path, as_version=4).cells
        if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")
    ]
    assert len(tests) >= 9 and sum(t["points"] for t in tests) >= 30
    assert all(
        "HIDDEN" in c.source
        for c in nbformat.read(path, as_version=4).cells
        if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")
    )


# Mistakes only a GPU's compiler sees: right in the interpreter, refused by Triton's compiler (float64 and every
# dtype the check launches). Each costs the "compiles" part alone, with the hint naming its idea.
@triton.jit
def blank_row_lse(logits_ptr, lse_ptr, stride, V, BLOCK_V: tl.constexpr):
    pass


@triton.jit
def blank_forward(logits_ptr, target_ptr, loss_ptr, lse_ptr, stride, V, ignore_index, BLOCK_V: tl.constexpr):
    pass


@triton.jit
def blank_backward(logits_ptr, target_ptr, lse_ptr, grad_ptr, stride, V, ignore_index, scale, BLOCK_V: tl.constexpr):
    pass


@pytest.mark.parametrize(
    ("check", "kernel", "cases"),
    [
        (nb06.check_row_lse, blank_row_lse, CASES),
        (nb06.check_ce_forward, blank_forward, ce_forward_cases()),
        (nb06.check_ce_backward, blank_backward, ce_backward_cases()),
    ],
    ids=["row_lse", "ce_forward", "ce_backward"],
)
def test_a_kernel_that_computes_nothing_earns_nothing(check, kernel, cases):
    """Neither for compiling nor for what it left alone (the bounds), nor by a wrong part read as the consequence of
    another: each of its parts fails on its own."""
    points, failed, report = verdict_of_call(check, kernel, cases=cases)
    assert points == 0.0 and "bounds" not in failed and "compiles" not in failed, report
    assert report.count("not scored: the kernel earns nothing in the interpreter yet") == 2, report
    assert "the same mistake as" not in report, report


# The kernels' catalogue: tests/nb06_catalogue/, one file per learner's answer (the kernel's text, the idea it costs,
# the words its hint must use; or a right answer written differently, which keeps full marks), judged from its text
# as the probe records it. A mistake costs one idea's share on the shown cases and on drawn ones, named once.
CATALOGUE_FILES = sorted((Path(__file__).parent / "nb06_catalogue").glob("*.toml"))
KERNEL_CATALOGUE = [p for p in CATALOGUE_FILES if "kernel" in tomllib.loads(p.read_text())]
KERNEL_CHECKS = {  # check -> (its points, its interpreter parts, the hidden cases of one draw)
    "check_row_lse": (5, nb06.judges.kernels.ROW_LSE_PARTS, lambda: draw_row_lse(random.Random(7), 1)),
    "check_ce_forward": (4, nb06.judges.kernels.CE_FORWARD_PARTS, lambda: draw_ce_forward(random.Random(1), 2)),
    "check_ce_backward": (5, nb06.judges.kernels.CE_BACKWARD_PARTS, lambda: draw_ce_backward(random.Random(1), 1)),
}
SHOWN_CASES = {
    "check_row_lse": row_lse_cases,
    "check_ce_forward": ce_forward_cases,
    "check_ce_backward": ce_backward_cases,
}


def catalogued_record(stem: str) -> tuple[dict, dict]:
    """(the entry, its kernel's record as the probe takes it: the kernel's text and its helpers')."""
    entry = tomllib.loads((Path(__file__).parent / "nb06_catalogue" / f"{stem}.toml").read_text())
    functions = {entry["name"]: entry["kernel"].strip() + "\n"}
    helpers = entry.get("helpers", "")
    for node in ast.parse(helpers).body:
        functions[node.name] = ast.get_source_segment(helpers, node) + "\n"  # type: ignore[attr-defined]
    return entry, {
        "entry": entry["name"],
        "functions": functions,
        "globals": {"tl": {"kind": "module", "value": "triton.language"}},
    }


def catalogued_kernel(stem: str):
    """The catalogued kernel as a launchable kernel (for the Functions built around it)."""
    from coursetools.kernel_text import rebuild

    return rebuild(catalogued_record(stem)[1], interpreted=True)


def test_the_catalogue_holds_a_dozen_mistakes_and_right_answers_written_differently():
    kinds = [tomllib.loads(p.read_text())["kind"] for p in CATALOGUE_FILES]
    assert kinds.count("mistake") >= 12 and kinds.count("right") >= 3, kinds


@pytest.mark.parametrize("path", KERNEL_CATALOGUE, ids=[p.stem for p in KERNEL_CATALOGUE])
def test_each_catalogued_kernel_costs_exactly_its_idea_with_its_hint(path):
    entry, record = catalogued_record(path.stem)
    check = getattr(nb06, entry["check"])
    points, parts, drawn = KERNEL_CHECKS[entry["check"]]
    for shown, params in ((True, {"cases": SHOWN_CASES[entry["check"]]()}), (False, drawn())):
        try:
            verdict = check.decide({"kernel": record}, **params)
        except CheckFailed as failure:
            verdict = failure.verdict
        failed, report = {p.name for p in verdict.parts if p.passed is False}, verdict.report()
        if entry["kind"] == "right":
            assert (float(verdict), failed) == (points, set()), report
            continue
        assert float(verdict) == one_share_lost(points, parts), ("one idea lost, wherever it shows", report)
        if shown:  # the parts it shows there (a draw may show it in fewer, or as the same mistake in more)
            assert failed == set(entry["costs"]), (failed, report)
        for words in entry["hint"]:
            assert words in report, (words, report)
        for words in entry.get("unsaid", []):
            assert words not in report, (words, report)
        assert report.count("Hint:") == 1, report  # the one idea lost, named once


# The answers written in Python (the log-sum-exps): the same catalogue, judged the same way.
ANSWER_CATALOGUE = [p for p in CATALOGUE_FILES if "answer" in tomllib.loads(p.read_text())]
ANSWER_CHECKS = {  # check -> (its points, what one idea lost leaves, the shown cases, the hidden cases of one draw)
    "check_logsumexp": (2, 1.0, lambda: {"cases": logsumexp_cases()}, lambda: draw_logsumexp(random.Random(1), 3)),
    "check_online_lse": (3, 2.0, lambda: {"cases": online_cases()}, lambda: draw_online_lse(random.Random(2), 2)),
}


def catalogued_answer(stem: str):
    entry = tomllib.loads((Path(__file__).parent / "nb06_catalogue" / f"{stem}.toml").read_text())
    namespace = {"torch": torch, "math": math}
    exec(compile(entry["answer"], f"<{entry['name']}>", "exec"), namespace)  # the catalogue's own code
    return namespace[entry["name"]]


@pytest.mark.parametrize("path", ANSWER_CATALOGUE, ids=[p.stem for p in ANSWER_CATALOGUE])
def test_each_catalogued_answer_costs_exactly_its_idea_with_its_hint(path):
    entry, answer = tomllib.loads(path.read_text()), catalogued_answer(path.stem)
    points, one_idea_lost, shown, drawn = ANSWER_CHECKS[entry["check"]]
    for first, params in ((True, shown()), (False, drawn())):
        got, failed, report = verdict_of_call(getattr(nb06, entry["check"]), answer, **params)
        if entry["kind"] == "right":
            assert (got, failed) == (points, set()), report
            continue
        assert got == one_idea_lost, report
        if first:
            assert failed == set(entry["costs"]), (failed, report)
        for words in entry["hint"]:
            assert words in report, (words, report)
        assert report.count("Hint:") == 1, report  # the one idea lost, named once


# The Functions' catalogue: each wrong answer an option of the notebook's Function (make_function), or a function.
CATALOGUE = {
    "ignore_index counted in the mean": (None, "mean_over_all", None, {"mean", "reference"}, "number of counted rows"),
    "softmax saved instead of recomputed": (None, "save_softmax", None, {"memory"}, "recomputes the softmax"),
    "bf16 accumulation": (nb06.check_bf16, "lse_bf16", {}, {"gradient"}, "keep the log-sum-exp in float32"),
}


@pytest.mark.parametrize("mistake", list(CATALOGUE))
def test_the_catalogued_mistakes_cost_their_part(mistake):
    check, answer, params, parts, hint = CATALOGUE[mistake]
    if check is None:
        check, answer, params = nb06.check_fused_ce, make_function(**{answer: True}), {"cases": fused_ce_cases()}
    elif isinstance(answer, str):
        answer = make_function(**{answer: True})
    points, failed, report = verdict_of_call(check, answer, **params)
    assert failed == parts and hint in report, report
    assert report.count("Hint:") == 1, report  # the one mistake, named once


# ------------------------------------------------------------ Function exercises graded around the course's kernels
FUSED_SOURCE = """
class FusedCE(Function):
    @staticmethod
    def forward(ctx, logits, target, ignore_index=-100):
        logits = logits.contiguous()
        N, V = logits.shape
        acc = torch.float64 if logits.dtype == torch.float64 else torch.float32
        lse = torch.empty(N, dtype=acc, device=logits.device)
        loss = torch.empty(N, dtype=acc, device=logits.device)
        ce_forward_kernel[(N,)](logits, target, loss, lse, logits.stride(0), V, ignore_index, BLOCK_V=16)
        counted = max(int((target != ignore_index).sum()), 1)
        ctx.save_for_backward(logits, target, lse)
        ctx.ignore_index, ctx.counted = ignore_index, counted
        return (loss.sum() / counted).to(logits.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        logits, target, lse = ctx.saved_tensors
        N, V = logits.shape
        grad = torch.empty_like(logits)
        scale = SCALE(grad_output, ctx.counted)
        ce_backward_kernel[(N,)](logits, target, lse, grad, logits.stride(0), V, ctx.ignore_index, scale, BLOCK_V=16)
        return grad, None, None


class LinearCE(Function):
    @staticmethod
    def forward(ctx, hidden, weight, target, chunk):
        N, V = hidden.shape[0], weight.shape[0]
        lse = torch.empty(N, dtype=hidden.dtype)
        loss = torch.empty(N, dtype=hidden.dtype)
        for start in range(0, N, chunk):
            rows = slice(start, start + chunk)
            logits = hidden[rows] @ weight.T
            ce_forward_kernel[(logits.shape[0],)](logits, target[rows], loss[rows], lse[rows], V, V, -100, BLOCK_V=16)
        ctx.save_for_backward(hidden, weight, target, lse)
        ctx.chunk = chunk
        return loss.sum() / N

    @staticmethod
    def backward(ctx, grad_output):
        hidden, weight, target, lse = ctx.saved_tensors
        N, V = hidden.shape[0], weight.shape[0]
        grad_hidden, grad_weight = torch.empty_like(hidden), torch.zeros_like(weight)
        for start in range(0, N, ctx.chunk):
            rows = slice(start, start + ctx.chunk)
            logits = hidden[rows] @ weight.T
            g = torch.empty_like(logits)
            ce_backward_kernel[(g.shape[0],)](
                logits, target[rows], lse[rows], g, V, V, -100, float(grad_output) / N, BLOCK_V=16
            )
            grad_hidden[rows] = g @ weight
            grad_weight += g.T @ hidden[rows]
        return grad_hidden, grad_weight, None, None
"""


def functions_around(forward_kernel, backward_kernel, scale=lambda g, n: float(g) / n) -> dict:
    """The notebook's two Functions, written in a namespace of their own whose kernel names are the given ones."""
    namespace = {"torch": torch, "Function": Function, "SCALE": scale}
    namespace.update(ce_forward_kernel=forward_kernel, ce_backward_kernel=backward_kernel)
    exec(compile(FUSED_SOURCE, "<notebook 06's Functions>", "exec"), namespace)
    return namespace


@pytest.mark.parametrize(
    ("forward_kernel", "backward_kernel"),
    [(forward_right, backward_right), ("ce_forward_ignores_nothing", "ce_backward_store_unmasked")],
    ids=["right kernels", "kernels with their own mistakes"],
)
def test_the_function_exercises_are_graded_around_the_courses_kernels(forward_kernel, backward_kernel):
    """A kernel mistake costs its kernel's exercise only: FusedCrossEntropy, its bfloat16 run and LinearCrossEntropy
    run the course's kernels under the notebook's kernel names, and the learner's are put back after."""
    if isinstance(forward_kernel, str):  # the catalogue's
        forward_kernel, backward_kernel = catalogued_kernel(forward_kernel), catalogued_kernel(backward_kernel)
    namespace = functions_around(forward_kernel, backward_kernel)
    assert fused_score(namespace["FusedCE"])[:2] == (5.0, set())
    assert verdict_of_call(nb06.check_bf16, namespace["FusedCE"])[:2] == (3.0, set())
    assert verdict_of_call(nb06.check_linear_ce, namespace["LinearCE"], cases=linear_ce_cases())[:2] == (5.0, set())
    assert namespace["ce_forward_kernel"] is forward_kernel and namespace["ce_backward_kernel"] is backward_kernel


KEYWORD_LAUNCHES = {  # issue 48: each scored 0 before, "_ce_forward() missing 7 required positional arguments"
    "ce_forward_kernel[(N,)](logits, target, loss, lse, logits.stride(0), V, ignore_index, BLOCK_V=16)": (
        "ce_forward_kernel[(N,)](logits_ptr=logits, target_ptr=target, loss_ptr=loss, lse_ptr=lse,"
        " stride=logits.stride(0), V=V, ignore_index=ignore_index, BLOCK_V=16, num_warps=4)"
    ),
    "ce_backward_kernel[(N,)](logits, target, lse, grad, logits.stride(0), V, ctx.ignore_index, scale, BLOCK_V=16)": (
        "ce_backward_kernel[(N,)](logits, target, lse, grad, scale=scale, ignore_index=ctx.ignore_index, V=V,"
        " stride=logits.stride(0))"  # its BLOCK_V by the kernel's default
    ),
    "ce_forward_kernel[(logits.shape[0],)](logits, target[rows], loss[rows], lse[rows], V, V, -100, BLOCK_V=16)": (
        "ce_forward_kernel[lambda meta: (meta['logits_ptr'].shape[0],)](logits, target[rows], loss[rows], lse[rows],"
        " V, V, BLOCK_V=16)"  # the grid from the launch's arguments; ignore_index by the kernel's default
    ),
}


def test_launches_by_keyword_keep_every_mark_around_the_courses_kernels():
    """The stand-ins bind each launch by the learner's own kernel's parameters: by keyword, with Triton's launch
    options, the kernel's defaults, a grid computed from the arguments by name."""

    @triton.jit
    def forward_kernel(
        logits_ptr, target_ptr, loss_ptr, lse_ptr, stride, V, ignore_index=-100, BLOCK_V: tl.constexpr = 64
    ):
        pass

    @triton.jit
    def backward_kernel(
        logits_ptr, target_ptr, lse_ptr, grad_ptr, stride, V, ignore_index, scale, BLOCK_V: tl.constexpr = 64
    ):
        pass

    source = FUSED_SOURCE
    for old, new in KEYWORD_LAUNCHES.items():
        assert old in source
        source = source.replace(old, new)
    namespace = {"torch": torch, "Function": Function, "SCALE": lambda g, n: float(g) / n}
    namespace.update(ce_forward_kernel=forward_kernel, ce_backward_kernel=backward_kernel)
    exec(compile(source, "<notebook 06's Functions, launched by keyword>", "exec"), namespace)
    assert fused_score(namespace["FusedCE"])[:2] == (5.0, set())
    assert verdict_of_call(nb06.check_bf16, namespace["FusedCE"])[:2] == (3.0, set())
    assert verdict_of_call(nb06.check_linear_ce, namespace["LinearCE"], cases=linear_ce_cases())[:2] == (5.0, set())


def test_without_the_course_kernels_the_learners_own_launches_are_no_evidence(monkeypatch):
    """The control: without the binding, the learner's own kernels run in the learner's process, where nothing is
    logged by the launcher -- their launches count for nothing, right kernels or not."""
    import contextlib

    monkeypatch.setattr(nb06.probes, "course_kernels", lambda obj, names: contextlib.nullcontext([]))
    for forward_kernel in (catalogued_kernel("ce_forward_ignores_nothing"), forward_right):
        namespace = functions_around(forward_kernel, backward_right)
        points, failed, report = fused_score(namespace["FusedCE"])
        assert {"forward", "reference"} <= failed and "launched no Triton kernel" in report, report


def test_a_kernel_gradient_scaled_by_grad_output_in_pytorch_is_the_kernels():
    """Issue 48: the kernel launched with scale = 1/counted, and backward hands back `grad * grad_output`: the gradient
    is the kernel's output times grad_output, so it is the kernel's work (it lost a part in exercise 6 and again in
    the bfloat16 exercise). A gradient PyTorch computed beside the launch still is not."""
    namespace = functions_around(forward_right, backward_right, scale=lambda g, n: 1.0 / n)
    source = FUSED_SOURCE.replace("return grad, None, None", "return grad * grad_output, None, None")
    namespace = {**namespace}
    exec(compile(source, "<scaled in PyTorch>", "exec"), namespace)
    assert fused_score(namespace["FusedCE"])[:2] == (5.0, set())
    assert verdict_of_call(nb06.check_bf16, namespace["FusedCE"])[:2] == (3.0, set())

    beside = FUSED_SOURCE.replace(
        "return grad, None, None",
        "g = torch.softmax(logits, 1)\n"
        "        g[torch.arange(N), target.clamp(min=0)] -= 1\n"
        "        g[target == ctx.ignore_index] = 0\n"
        "        return g * scale, None, None",  # right values, computed by PyTorch beside the launch
    )
    exec(compile(beside, "<PyTorch beside the kernel>", "exec"), namespace)
    points, failed, report = fused_score(namespace["FusedCE"])
    assert points < 5.0 and "no gradient a Triton kernel wrote" in report, report


@pytest.mark.parametrize(
    ("mistake", "exercise_6_loses"),
    [
        ({"return grad, None, None": "return grad, None"}, "interface"),  # one None short
        ({}, "reference"),  # a tensor scale (SCALE below), which the notebook warns about
    ],
    ids=["backward one None short", "a tensor scale"],
)
def test_a_mistake_of_exercise_6_is_charged_there_once_and_not_again_in_the_bfloat16_exercise(
    mistake, exercise_6_loses
):
    """Issue 48: `return grad, None` cost 3.33/5 in exercise 6 (its layout part too, with the hint "make the logits
    contiguous" for a Function that does) and 2/3 in the bfloat16 exercise; a tensor scale 4.17/5 and 2/3. Each is
    one idea of exercise 6, charged there once; the bfloat16 exercise grades what it adds, the dtypes."""
    scale = (lambda g, n: float(g) / n) if mistake else (lambda g, n: g / n)
    namespace = functions_around(forward_right, backward_right, scale=scale)
    source = FUSED_SOURCE
    for old, new in mistake.items():
        source = source.replace(old, new)
    exec(compile(source, "<one mistake>", "exec"), namespace)
    points, failed, report = fused_score(namespace["FusedCE"])
    assert points == 4.17 and exercise_6_loses in failed and report.count("Hint:") <= 1, report  # one of 6 ideas
    assert "make the logits contiguous" not in report, report
    points, failed, report = verdict_of_call(nb06.check_bf16, namespace["FusedCE"])
    assert (points, failed) == (3.0, set()), report


def test_lse_kept_in_float32_for_float64_logits_costs_one_idea_with_a_hint_on_precision():
    """Issue 48: it scored 0/5 (the loss off by about 1e-8 of itself, then every part unscored) and its hint named
    neither the dtype nor precision. One idea lost, the forward's, with a hint on float32's precision; the gradient
    it puts off too is that mistake again."""
    namespace = functions_around(forward_right, backward_right)
    source = FUSED_SOURCE.replace(
        "acc = torch.float64 if logits.dtype == torch.float64 else torch.float32", "acc = torch.float32"
    )
    exec(compile(source, "<lse in float32>", "exec"), namespace)
    points, failed, report = fused_score(namespace["FusedCE"])
    assert points == 4.17 and "forward" in failed, report
    assert "float32's precision" in report and report.count("Hint:") == 1, report


def test_a_tensor_scale_is_told_to_be_a_python_number():
    namespace = functions_around(forward_right, backward_right, scale=lambda g, n: g / n)
    points, failed, report = fused_score(namespace["FusedCE"])
    assert "reference" in failed and "pass a Python number" in report, report


# ------------------------------------------------------------------- what the interpreter sees a kernel read and write
# (issue 47: a store into another program's row kept the bounds part; a tensor-descriptor load crashed the read watch)


@triton.jit
def lse_through_a_descriptor(logits_ptr, lse_ptr, stride, V, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    desc = tl.make_tensor_descriptor(logits_ptr + row * stride, shape=[V], strides=[1], block_shape=[BLOCK_V])
    m = tl.full([], float("-inf"), lse_ptr.dtype.element_ty)
    s = tl.zeros([], lse_ptr.dtype.element_ty)
    for start in range(0, V, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.where(cols < V, desc.load([start]).to(lse_ptr.dtype.element_ty), -float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    tl.store(lse_ptr + row, m + tl.log(s))


# rows whose stride keeps a descriptor's base 16-byte aligned (a TMA descriptor's rule on a GPU, checked by the
# interpreter too): V + BLOCK_V even for float64, a multiple of 4 for float32; V = 38 is ragged
ALIGNED_CASES = [(3, 32, 16, "float64", 0), (2, 32, 16, "float64", 31), (2, 38, 16, "float64", 0)]
ALIGNED_CASES.append((2, 32, 16, "float32", 0))


def test_a_row_kernel_reading_through_a_tensor_descriptor_keeps_full_marks():
    """A tensor-descriptor load reaches the interpreter's load with keyword arguments (it crashed the read watch:
    the whole exercise lost). (Other right kernels written differently: tests/nb06_catalogue/.)"""
    assert score(lse_through_a_descriptor, cases=ALIGNED_CASES)[:2] == (5.0, set())


@triton.jit
def backward_through_descriptors(
    logits_ptr, target_ptr, lse_ptr, grad_ptr, stride, V, ignore_index, scale, BLOCK_V: tl.constexpr
):
    """The logits read and the gradient stored through tensor descriptors (a store clips what lies past V)."""
    row = tl.program_id(0)
    src = tl.make_tensor_descriptor(logits_ptr + row * stride, shape=[V], strides=[1], block_shape=[BLOCK_V])
    dst = tl.make_tensor_descriptor(grad_ptr + row * stride, shape=[V], strides=[1], block_shape=[BLOCK_V])
    target = tl.load(target_ptr + row)
    lse = tl.load(lse_ptr + row)
    counted = target != ignore_index
    for start in range(0, V, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = src.load([start]).to(lse_ptr.dtype.element_ty)
        g = (tl.exp(x - lse) - tl.where(cols == target, 1.0, 0.0)) * scale
        dst.store([start], tl.where(counted, g, 0.0).to(grad_ptr.dtype.element_ty))


@triton.jit
def backward_descriptor_into_the_next_row_first(
    logits_ptr, target_ptr, lse_ptr, grad_ptr, stride, V, ignore_index, scale, BLOCK_V: tl.constexpr
):
    """Zeros stored into the next row's gradient through a descriptor, which that row's program later overwrites:
    right values in the interpreter, a race on a GPU."""
    row = tl.program_id(0)
    if row + 1 < tl.num_programs(0):
        ahead = tl.make_tensor_descriptor(grad_ptr + (row + 1) * stride, shape=[V], strides=[1], block_shape=[BLOCK_V])
        for start in range(0, V, BLOCK_V):
            ahead.store([start], tl.zeros((BLOCK_V,), dtype=grad_ptr.dtype.element_ty))
    backward_through_descriptors(logits_ptr, target_ptr, lse_ptr, grad_ptr, stride, V, ignore_index, scale, BLOCK_V)


# the backward's cases with rows 16-byte aligned (V + BLOCK_V even in float64): V = 38 is ragged
ALIGNED_BACKWARD_CASES = [
    (3, 32, 16, "float64", 0, 0.0),
    (3, 38, 16, "float64", 0, 0.0),
    (4, 32, 16, "float64", 2, 0.0),
    (2, 32, 16, "float64", 0, math.log(2.0)),
]


def test_a_backward_kernel_that_stores_through_a_descriptor_keeps_full_marks_and_a_store_ahead_costs_the_bounds():
    """Tensor-descriptor stores reach the interpreter's store with keyword arguments too (issue 47, route 9: the
    read watch crashed on them); one into the next program's row is seen at the store."""
    assert backward_score(backward_through_descriptors, cases=ALIGNED_BACKWARD_CASES)[:2] == (5.0, set())
    got, failed, report = backward_score(backward_descriptor_into_the_next_row_first, cases=ALIGNED_BACKWARD_CASES)
    assert failed == {"bounds"} and got == one_share_lost(5, nb06.judges.kernels.CE_BACKWARD_PARTS), report
    assert "not its own row" in report, report


def test_the_watch_sees_a_descriptors_reads_and_refuses_what_lies_outside_every_tensor():
    from autograder.probes.memory_watch import Spans, watching

    buffer = torch.arange(64, dtype=torch.float64)
    rows = buffer[:48].view(3, 16)
    out = torch.zeros(3, dtype=torch.float64)
    with watching([buffer, out], reads=Spans.per_row([rows, out]), writes=Spans.per_row([out])) as seen:
        lse_through_a_descriptor[(3,)](rows, out, 16, 16, BLOCK_V=16)
    assert seen == {"reads_outside": 0, "writes_elsewhere": 0, "refused_reads": 0, "refused_writes": 0}, seen
    with watching([rows, out], reads=Spans.per_row([rows[:, :8], out]), writes=Spans.per_row([out])) as seen:
        lse_through_a_descriptor[(3,)](rows, out, 16, 16, BLOCK_V=16)
    assert seen["reads_outside"] == 3 * 8 and not seen["refused_reads"], seen  # each row's second half: not its own
    far = torch.zeros(16, dtype=torch.float64)
    with watching([far, out], reads=Spans.per_row([out]), writes=Spans.per_row([out])) as seen:
        two_rows = catalogued_kernel("row_lse_stores_two_rows_masked")
        two_rows[(3,)](far, out, 1 << 20, 16, BLOCK_V=16)  # rows 1 and 2 lie far past `far`
    assert seen["refused_reads"] == 2 * 16 and seen["writes_elsewhere"] == 2, seen  # not read: never performed


def test_the_memory_probe_shows_the_learner_none_of_the_profilers_own_lines(capfd):
    """Exercise 8's test cell printed 16 lines of PyTorch's profiler ("USDT: ... profiler_start") and an allocator
    warning under the learner's answer (issue 48): the profiler writes them on descriptor 2, which a notebook shows.
    The bare profiler prints them in this PyTorch (the control); the probe's measurement prints none."""
    with nb06_probes._profile(profile_memory=True, use_kineto=False):
        torch.ones(1000) * 2
    assert "profiler_start" in capfd.readouterr().err
    with nb06_probes.largest_allocation() as box:
        torch.ones(1000) * 2
    err = capfd.readouterr().err
    assert box["largest"] >= 4000 and "USDT" not in err and "profiler_" not in err, err
    print("still shown", file=sys.stderr)  # what Python writes on stderr afterwards still shows
    assert "still shown" in capfd.readouterr().err
