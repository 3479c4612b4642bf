"""Notebook 07 graded by the grading command, attacked by a learner who holds the grader's source: each route is the
solution with some answers replaced, graded in one run beside an honest bystander whose score must not move."""

from __future__ import annotations

import pytest
from test_grading_hostile_45 import grade_routes

pytestmark = pytest.mark.slow

ASSIGNMENT = "07-flash-attention"

# PyTorch's gradients, computed by autograd through the learner's own composed attention, returned after a launch of
# the learner's delta kernel that only shows a kernel was used.
PYTORCH_GRADIENTS_AFTER_A_LAUNCH = '''def flash_backward(q, k, v, o, lse, do, causal=False):
    BH, N, D = q.shape
    delta = torch.empty_like(lse)
    attention_delta_kernel[(triton.cdiv(N, 16), BH)](o, do, delta, N, BLOCK_Q=16, HEAD_DIM=D)
    with torch.enable_grad():
        leaves = [t.detach().requires_grad_() for t in (q, k, v)]
        out = composed_attention(*leaves, causal)
        return torch.autograd.grad(out, leaves, do)
'''

# PyTorch's gradients put in the buffers first, then handed to a launch that writes nothing into them.
PYTORCH_GRADIENTS_HANDED_TO_A_LAUNCH_THAT_WRITES_NOTHING = '''@triton.jit
def touch_kernel(dq_ptr, dk_ptr, dv_ptr, n, BLOCK: tl.constexpr):
    at = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(dq_ptr + at, mask=at < n)


def flash_backward(q, k, v, o, lse, do, causal=False):
    with torch.enable_grad():
        leaves = [t.detach().requires_grad_() for t in (q, k, v)]
        grads = torch.autograd.grad(composed_attention(*leaves, causal), leaves, do)
    dq, dk, dv = (torch.empty_like(g).copy_(g) for g in grads)
    touch_kernel[(triton.cdiv(dq.numel(), 256),)](dq, dk, dv, dq.numel(), BLOCK=256)
    return dq, dk, dv
'''

# The same gradients, copied into the returned tensors by a Triton kernel: every returned value is a launch's store.
PYTORCH_GRADIENTS_COPIED_BY_A_KERNEL = '''@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    at = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + at, tl.load(src_ptr + at, mask=at < n), mask=at < n)


def flash_backward(q, k, v, o, lse, do, causal=False):
    with torch.enable_grad():
        leaves = [t.detach().requires_grad_() for t in (q, k, v)]
        grads = torch.autograd.grad(composed_attention(*leaves, causal), leaves, do)
    copies = []
    for g in grads:
        copy = torch.empty_like(g)
        copy_kernel[(triton.cdiv(g.numel(), 256),)](g.contiguous(), copy, g.numel(), BLOCK=256)
        copies.append(copy)
    return tuple(copies)
'''

# The same gradients in disguise: doubled in buffers PyTorch fills, halved by a Triton kernel into the returned ones
# (no buffer holds the gradient's own values).
PYTORCH_GRADIENTS_DOUBLED_THEN_HALVED_BY_A_KERNEL = '''@triton.jit
def halve_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    at = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + at, tl.load(src_ptr + at, mask=at < n) * 0.5, mask=at < n)


def flash_backward(q, k, v, o, lse, do, causal=False):
    with torch.enable_grad():
        leaves = [t.detach().requires_grad_() for t in (q, k, v)]
        grads = torch.autograd.grad(composed_attention(*leaves, causal), leaves, do)
    halves = []
    for g in grads:
        half = torch.empty_like(g)
        halve_kernel[(triton.cdiv(g.numel(), 256),)]((2 * g).contiguous(), half, g.numel(), BLOCK=256)
        halves.append(half)
    return tuple(halves)
'''

# The public answers of the measurement exercise, in the order the check asks for them (its attention functions
# are lambdas: a table can only count its calls).
PUBLIC_SAVED_BYTES = [28672, 90112, 32768, 106496, 61952, 222208, 16640, 33280]
A_TABLE_OF_THE_PUBLIC_ANSWERS = f'''_calls = []


def saved_for_backward(attention, n, d=64):
    table = {PUBLIC_SAVED_BYTES}
    _calls.append(n)
    return table[(len(_calls) - 1) % len(table)]
'''

# A Function that tells the course's stand-in from its own kernel, launches the stand-in for show on zeros and
# returns PyTorch's attention.
DETECTS_THE_STAND_IN = '''class FlashAttention(Function):
    @staticmethod
    def forward(ctx, q, k, v, causal=False):
        shape = q.shape
        n, d = shape[-2], shape[-1]
        q3, k3, v3 = (t.reshape(-1, n, d).contiguous() for t in (q, k, v))
        if "autograder" in type(attention_forward_kernel).__module__:   # graded: the course's kernel is bound here
            flash_forward(torch.zeros_like(q3), torch.zeros_like(k3), torch.zeros_like(v3), causal)
            with torch.enable_grad():
                leaves = [t.detach().requires_grad_() for t in (q3, k3, v3)]
                out = composed_attention(*leaves, causal)
            ctx.save_for_backward(q3, k3, v3)
            ctx.causal, ctx.shape, ctx.pytorch = causal, shape, True
            return out.detach().view(shape)
        o, lse = flash_forward(q3, k3, v3, causal)
        ctx.save_for_backward(q3, k3, v3, o, lse)
        ctx.causal, ctx.shape, ctx.pytorch = causal, shape, False
        return o.view(shape)

    @staticmethod
    def backward(ctx, do):
        if ctx.pytorch:
            with torch.enable_grad():
                leaves = [t.detach().requires_grad_() for t in ctx.saved_tensors]
                out = composed_attention(*leaves, ctx.causal)
                grads = torch.autograd.grad(out, leaves, do.reshape(out.shape))
            return (*(g.view(ctx.shape) for g in grads), None)
        q, k, v, o, lse = ctx.saved_tensors
        grads = flash_backward(q, k, v, o, lse, do.reshape(o.shape).contiguous(), ctx.causal)
        return (*(g.view(ctx.shape) for g in grads), None)
'''

ROUTES = {
    "honest": {},
    "pytorch_gradients": {"answers": {"flash_backward": PYTORCH_GRADIENTS_AFTER_A_LAUNCH}},
    "copied_gradients": {"answers": {"flash_backward": PYTORCH_GRADIENTS_COPIED_BY_A_KERNEL}},
    "launch_writes_nothing": {"answers": {"flash_backward": PYTORCH_GRADIENTS_HANDED_TO_A_LAUNCH_THAT_WRITES_NOTHING}},
    # attacks on three different exercises in one submission: each costs its own exercise only (and one grading run
    # fewer per attack)
    "doubled_then_halved": {
        "answers": {
            "flash_backward": PYTORCH_GRADIENTS_DOUBLED_THEN_HALVED_BY_A_KERNEL,
            "saved_for_backward": A_TABLE_OF_THE_PUBLIC_ANSWERS,
            "flash_attention": DETECTS_THE_STAND_IN,
        }
    },
}
ATTACKED = {
    route: {f"test_{answer}" for answer in spec.get("answers", {})} for route, spec in ROUTES.items()
}  # the exercises each route's attacks are on


@pytest.fixture(scope="module")
def graded(tmp_path_factory, grading_pool):
    return grade_routes(tmp_path_factory.mktemp("nb07"), ASSIGNMENT, ROUTES, grading_pool)


def _others_kept(row, honest, route: str) -> None:
    """Every exercise but the route's attacked ones scores what the honest submission scores."""
    for other, score in honest.by_cell.items():
        if other not in ATTACKED[route]:
            assert row.by_cell[other] == score, (other, row.by_cell[other], row.messages)


def test_the_honest_bystander_keeps_full_marks_with_no_flag(graded):
    honest = graded["honest"]
    assert (honest.score, honest.max_score) == (31, 31), (honest.by_cell, honest.messages)
    assert honest.flags == [], honest.flags


@pytest.mark.parametrize(
    "route", ["pytorch_gradients", "copied_gradients", "launch_writes_nothing", "doubled_then_halved"]
)
def test_gradients_pytorch_computed_earn_no_part_of_the_backward(graded, route):
    """Returned after a launch for show, copied by a kernel, put in the buffers a launch then writes nothing into,
    or doubled there and halved by a kernel: the replay of the launches from the kernels' text, its buffers started
    by the grader, does not give them (judges/buffers.py)."""
    row = graded[route]
    assert row.by_cell["test_flash_backward"][0] == 0, (row.by_cell, row.messages)
    if route != "pytorch_gradients":  # the feedback names what the buffers held
        assert "come out right only from what" in str(row.messages), row.messages
    _others_kept(row, graded["honest"], route)


def test_a_table_of_the_public_measurements_fails_the_drawn_sizes(graded):
    row = graded["doubled_then_halved"]
    assert row.by_cell["test_saved_for_backward"][0] == 0, (row.by_cell, row.messages)
    _others_kept(row, graded["honest"], "doubled_then_halved")


def test_a_function_that_detects_the_course_kernel_and_returns_pytorchs_attention_earns_nothing(graded):
    row = graded["doubled_then_halved"]
    assert row.by_cell["test_flash_attention"][0] == 0, (row.by_cell, row.messages)
    _others_kept(row, graded["honest"], "doubled_then_halved")
