"""The checks of notebook 05 give full marks to correct answers however they are written, and take points
from realistic wrong ones on the part that should catch them, with the hint meant for them. Everything
here runs on a CPU: Triton kernels in Triton's interpreter, devices on the meta device."""

from __future__ import annotations

import math
import os
import shutil

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: kernels defined here are interpreted

import nbformat  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st
from nbgrader.api import Gradebook  # noqa: E402
from torch.autograd import Function  # noqa: E402

from autograder import nb05  # noqa: E402
from autograder.coursedir import SOLUTIONS  # noqa: E402
from autograder.feedback import CheckFailed  # noqa: E402
from autograder.grading import grade_assignment, sandbox  # noqa: E402
from autograder.judges.verdict import PART_TITLES  # noqa: E402
from autograder.nb05.cases import RECOMPUTE_PROBLEMS, SAVED_BYTES_PROBLEMS  # noqa: E402
from autograder.registry import CHECKS  # noqa: E402
from autograder.release import generate_in_course  # noqa: E402
from autograder.submissions import fill_answers, solution_sources  # noqa: E402
from tests.shares import IDEAS, expected_score, ideas_lost  # noqa: E402

pytestmark = pytest.mark.nb05
C = math.sqrt(2 / math.pi)


def fn(name, forward, backward, decorate=None):
    """A Function class from forward(ctx, *args) and backward(ctx, *grads)."""
    return type(name, (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})


def run(check, obj, **params):
    """(verdict or None, report or message)."""
    try:
        verdict = check(obj, **params)
    except CheckFailed as failure:  # a partly right answer fails too, carrying its verdict
        verdict = getattr(failure, "verdict", None)
        if verdict is None or float(verdict) == 0:
            return None, str(failure)
    report = verdict.report() if hasattr(verdict, "report") else ""
    return verdict, report


def part(verdict, name):
    return next(p for p in verdict.parts if p.name == name)


# =========================================================================== reference answers (as in the solution)


def _gather_f(ctx, weight, index):
    ctx.save_for_backward(index)
    ctx.weight_shape = weight.shape
    return weight[index]


def _gather_b(ctx, g):
    (index,) = ctx.saved_tensors
    return g.new_zeros(ctx.weight_shape).index_add_(0, index, g), None


def _silu_f(ctx, x):
    ctx.save_for_backward(x)
    return x * torch.sigmoid(x)


def _silu_b(ctx, g):
    (x,) = ctx.saved_tensors
    s = torch.sigmoid(x)
    return g * s * (1 + x * (1 - s))


def _gelu_f(ctx, x):
    ctx.save_for_backward(x)
    return 0.5 * x * (1 + torch.tanh(C * (x + 0.044715 * x**3)))


def _gelu_local(x, three=3):
    t = torch.tanh(C * (x + 0.044715 * x**3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * C * (1 + three * 0.044715 * x * x)


def _gelu_b(ctx, g):
    (x,) = ctx.saved_tensors
    return g * _gelu_local(x)


def _ckpt_f(ctx, f, x):
    ctx.f = f
    ctx.save_for_backward(x)
    return f(x)


def _ckpt_b(ctx, g):
    (x,) = ctx.saved_tensors
    with torch.enable_grad():
        x = x.detach().requires_grad_(True)
        y = ctx.f(x)
    return None, torch.autograd.grad(y, x, g)[0]


@triton.jit
def silu_forward_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    if x.dtype == tl.float64:
        xc = x
    else:
        xc = x.to(tl.float32)
    tl.store(y_ptr + offsets, (xc * tl.sigmoid(xc)).to(x.dtype), mask=mask)


@triton.jit
def silu_backward_kernel(x_ptr, grad_out_ptr, grad_in_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    g = tl.load(grad_out_ptr + offsets, mask=mask)
    if x.dtype == tl.float64:
        xc = x
        gc = g
    else:
        xc = x.to(tl.float32)
        gc = g.to(tl.float32)
    s = tl.sigmoid(xc)
    tl.store(grad_in_ptr + offsets, (gc * s * (1 + xc * (1 - s))).to(x.dtype), mask=mask)


def triton_silu(
    forward_kernel=silu_forward_kernel,
    backward_kernel=silu_backward_kernel,
    block=1024,
    contiguous_x=True,
    contiguous_grad=True,
    out_dtype=None,
):
    """A TritonSiLU built from these kernels; the flags switch off the steps learners forget."""

    def forward(ctx, x):
        if contiguous_x:
            x = x.contiguous()
        y = torch.empty_like(x) if out_dtype is None else torch.empty(x.shape, dtype=out_dtype)
        forward_kernel[(triton.cdiv(x.numel(), block),)](x, y, x.numel(), BLOCK_SIZE=block)
        ctx.save_for_backward(x)
        return y

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if contiguous_grad:
            g = g.contiguous()
        out = torch.empty_like(x)
        backward_kernel[(triton.cdiv(x.numel(), block),)](x, g, out, x.numel(), BLOCK_SIZE=block)
        return out

    return fn("TritonSiLU", forward, backward)


def _linear32(forward_decorator=True, backward_decorator=True, own_cast=False):
    def forward(ctx, x, W, b):
        if own_cast:  # x.float() instead of autocast's cast: float64 inputs become float32 too
            x, W, b = x.float(), W.float(), b.float()
        ctx.save_for_backward(x, W)
        return x @ W + b

    def backward(ctx, g):
        x, W = ctx.saved_tensors
        return g @ W.T, x.T @ g, g.sum(0)

    if forward_decorator:
        forward = torch.amp.custom_fwd(forward, device_type="cpu", cast_inputs=torch.float32)
    if backward_decorator:
        backward = torch.amp.custom_bwd(backward, device_type="cpu")
    return fn("Linear32", forward, backward)


def _saved_bytes(f, *inputs):
    storages = {}

    def pack(t):
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        f(*inputs)
    return sum(storages.values())


def _bandwidth(n, size, seconds, direction):
    return {"forward": 2, "backward": 3}[direction] * n * size / seconds / 1e9


GatherRows = fn("GatherRows", _gather_f, _gather_b)
FusedSiLU = fn("FusedSiLU", _silu_f, _silu_b)
FusedGELU = fn("FusedGELU", _gelu_f, _gelu_b)
Checkpoint = fn("Checkpoint", _ckpt_f, _ckpt_b)
TritonSiLU = triton_silu()
Linear32 = _linear32()

KERNEL_SIZES = [(10, 16), (100, 32), (1, 16)]
BANDWIDTH_CASES = [(1 << 24, 4, 1e-4, "forward"), (1000, 2, 1e-6, "backward")]

CHECK_CALLS = {  # exercise -> (check, params): the same shapes as the notebook's test cells
    "gather_rows": (nb05.check_gather_rows, {"points": 3, "seed": 0, "cases": 2}),
    "fused_silu": (nb05.check_fused_activation, {"activation": "silu", "points": 3, "seed": 0, "cases": 2}),
    "fused_gelu": (nb05.check_fused_activation, {"activation": "gelu_tanh", "points": 3, "seed": 0, "cases": 2}),
    "checkpoint": (nb05.check_recompute, {"problems": list(RECOMPUTE_PROBLEMS), "seed": 0, "points": 3}),
    "forward_kernel": (nb05.check_forward_kernel, {"kind": "forward", "sizes": KERNEL_SIZES, "seed": 0}),
    "backward_kernel": (nb05.check_backward_kernel, {"kind": "backward", "sizes": KERNEL_SIZES, "seed": 0}),
    "triton_silu": (
        nb05.check_triton_function,
        {"activation": "silu", "triton": True, "points": 4, "seed": 0, "cases": 2},
    ),
    "linear32": (nb05.check_autocast_linear, {"seed": 0, "cases": 2, "points": 3}),
    "saved_bytes": (nb05.check_saved_bytes, {"problems": list(SAVED_BYTES_PROBLEMS)}),
    "bandwidth": (nb05.check_bandwidth, {"cases": BANDWIDTH_CASES}),
}
CORRECT = {
    "gather_rows": GatherRows,
    "fused_silu": FusedSiLU,
    "fused_gelu": FusedGELU,
    "checkpoint": Checkpoint,
    "forward_kernel": silu_forward_kernel,
    "backward_kernel": silu_backward_kernel,
    "triton_silu": TritonSiLU,
    "linear32": Linear32,
    "saved_bytes": _saved_bytes,
    "bandwidth": _bandwidth,
}


def _full_marks(exercise, obj, **extra):
    check, params = CHECK_CALLS[exercise]
    verdict, report = run(check, obj, **{**params, **extra})
    assert verdict is not None or report == "", report
    if "points" in params:
        assert float(verdict) == params["points"], report


@pytest.mark.parametrize("exercise", list(CORRECT))
def test_the_solutions_get_full_marks(exercise):
    check, params = CHECK_CALLS[exercise]
    try:
        verdict = check(CORRECT[exercise], **params)
    except CheckFailed as failure:
        pytest.fail(str(failure))
    if "points" in params:
        assert float(verdict) == params["points"] and verdict.passed, verdict.report()


# =========================================================================== correct, written differently


def _gather_put_b(ctx, g):  # index_put_ with accumulate=True, zeros made with device= and dtype=
    (index,) = ctx.saved_tensors
    grad = torch.zeros(ctx.weight_shape, device=g.device, dtype=g.dtype)
    return grad.index_put_((index,), g, accumulate=True), None


def _silu_f_native(ctx, x):  # F.silu forward; backward with torch.special.expit
    ctx.save_for_backward(x)
    return F.silu(x)


def _silu_b_expit(ctx, g):
    (x,) = ctx.saved_tensors
    s = torch.special.expit(x)
    return g * (s + x * s * (1 - s))


def _gelu_b_cosh(ctx, g):  # sech² written with cosh
    (x,) = ctx.saved_tensors
    u = C * (x + 0.044715 * x**3)
    return g * (0.5 * (1 + torch.tanh(u)) + 0.5 * x * C * (1 + 0.134145 * x * x) / torch.cosh(u) ** 2)


def _ckpt_b_backward(ctx, g):  # y.backward(g) and x.grad instead of autograd.grad
    (x,) = ctx.saved_tensors
    x = x.detach().requires_grad_(True)
    with torch.enable_grad():
        ctx.f(x).backward(g)
    return None, x.grad


HALVES = tl.constexpr(2)  # a constexpr global


@triton.jit
def silu_forward_static(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """The block in two halves, unrolled by tl.static_range, its size checked by tl.static_assert."""
    tl.static_assert(BLOCK_SIZE % 2 == 0, "the block splits in two halves")
    for half in tl.static_range(HALVES):
        offsets = tl.program_id(0) * BLOCK_SIZE + half * (BLOCK_SIZE // 2) + tl.arange(0, BLOCK_SIZE // 2)
        in_bounds = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=in_bounds, other=0.0)
        xf = x if x.dtype == tl.float64 else x.to(tl.float32)
        tl.store(y_ptr + offsets, (xf * tl.sigmoid(xf)).to(x.dtype), mask=in_bounds)


@triton.jit
def silu_forward_with_exp(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    block_start = tl.program_id(axis=0) * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    in_bounds = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=in_bounds, other=0.0)
    if x.dtype == tl.float64:
        y = x / (1.0 + tl.exp(-x))
    else:
        xf = x.to(tl.float32)
        y = xf / (1.0 + tl.exp(-xf))
    tl.store(y_ptr + offsets, y.to(x.dtype), mask=in_bounds)


@triton.jit
def _silu_of(x):
    return x * tl.sigmoid(x)


@triton.jit
def silu_forward_int64_where(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    in_bounds = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=in_bounds, other=0.0)
    xc = tl.where(in_bounds, x, 0.0) if x.dtype == tl.float64 else tl.where(in_bounds, x, 0.0).to(tl.float32)
    tl.store(y_ptr + offsets, _silu_of(xc).to(x.dtype), mask=in_bounds)


@triton.jit
def silu_forward_clamped(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    in_bounds = offsets < n_elements
    x = tl.load(x_ptr + tl.where(in_bounds, offsets, 0))  # every lane reads an entry of x: no mask needed
    xc = x if x.dtype == tl.float64 else x.to(tl.float32)
    tl.store(y_ptr + offsets, (xc * tl.sigmoid(xc)).to(x.dtype), mask=in_bounds)


def _linear32_functional():  # F.linear inside, needs_input_grad respected
    @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
    def forward(ctx, x, W, b):
        ctx.save_for_backward(x, W)
        return F.linear(x, W.t(), b)

    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx, g):
        x, W = ctx.saved_tensors
        return (
            g.mm(W.t()) if ctx.needs_input_grad[0] else None,
            x.t().mm(g) if ctx.needs_input_grad[1] else None,
            g.sum(dim=0) if ctx.needs_input_grad[2] else None,
        )

    return fn("Linear32", forward, backward)


def _saved_bytes_numel(f, *inputs):  # numel × element_size, deduplicated by data_ptr in a set
    seen, total = set(), 0

    def pack(t):
        nonlocal total
        if t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        f(*inputs)
    return total


ALTERNATIVES = {
    "gather_rows: index_put_ accumulate": ("gather_rows", fn("GatherRows", _gather_f, _gather_put_b)),
    "fused_silu: F.silu and expit": ("fused_silu", fn("FusedSiLU", _silu_f_native, _silu_b_expit)),
    "fused_gelu: sech² from cosh": ("fused_gelu", fn("FusedGELU", _gelu_f, _gelu_b_cosh)),
    "checkpoint: y.backward and x.grad": ("checkpoint", fn("Checkpoint", _ckpt_f, _ckpt_b_backward)),
    "forward kernel: tl.exp, other=0": ("forward_kernel", silu_forward_with_exp),
    "forward kernel: tl.static_range, tl.static_assert, a constexpr global": ("forward_kernel", silu_forward_static),
    "forward kernel: int64 offsets, tl.where, a helper": ("forward_kernel", silu_forward_int64_where),
    "forward kernel: offsets clamped into the tensor, no mask on the load": ("forward_kernel", silu_forward_clamped),
    "triton_silu: BLOCK_SIZE 128, exp kernel": ("triton_silu", triton_silu(silu_forward_with_exp, block=128)),
    "linear32: F.linear, needs_input_grad": ("linear32", _linear32_functional()),
    "saved_bytes: numel × element_size": ("saved_bytes", _saved_bytes_numel),
    "bandwidth: one expression": ("bandwidth", lambda n, s, t, d: (2 if d == "forward" else 3) * n * s * 1e-9 / t),
}


@pytest.mark.parametrize("name", list(ALTERNATIVES))
def test_correct_alternatives_get_full_marks(name):
    exercise, obj = ALTERNATIVES[name]
    check, params = CHECK_CALLS[exercise]
    try:
        verdict = check(obj, **params)
    except CheckFailed as failure:
        pytest.fail(str(failure))
    if "points" in params:
        assert float(verdict) == params["points"], verdict.report()


# =========================================================================== the catalogue of wrong answers


def _gather_b_cpu(ctx, g):  # the gradient made on the default device
    (index,) = ctx.saved_tensors
    return torch.zeros(ctx.weight_shape, dtype=g.dtype).index_add_(0, index, g), None


def _gather_b_assign(ctx, g):  # assignment keeps one contribution of a repeated row
    (index,) = ctx.saved_tensors
    grad = g.new_zeros(ctx.weight_shape)
    grad[index] = g
    return grad, None


def _silu_f_saves_composed(ctx, x):  # keeps the composed intermediates
    s = torch.sigmoid(x)
    ctx.save_for_backward(x, s)
    return x * s


def _silu_b_from_saved(ctx, g):
    x, s = ctx.saved_tensors
    return g * s * (1 + x * (1 - s))


def _silu_f_attribute(ctx, x):  # x kept as an attribute: invisible to save_for_backward and the hooks
    ctx.x = x
    return x * torch.sigmoid(x)


def _silu_b_attribute(ctx, g):
    s = torch.sigmoid(ctx.x)
    return g * s * (1 + ctx.x * (1 - s))


def _silu_f_decoy(ctx, x):  # saves a decoy of x's shape and keeps x itself out of sight
    ctx.save_for_backward(torch.empty_like(x))
    ctx.x = x
    return x * torch.sigmoid(x)


def _silu_b_product_rule(ctx, g):  # d/dx x·σ(x) taken as σ(x)
    (x,) = ctx.saved_tensors
    return g * torch.sigmoid(x)


def _silu_f_fixed_device(ctx, x):  # the output made on the default device
    ctx.save_for_backward(x)
    y = torch.empty(x.shape, dtype=x.dtype)
    y.copy_(x * torch.sigmoid(x))
    return y


def _gelu_b_no_three(ctx, g):  # d/dx (x + 0.044715 x³) without the 3
    (x,) = ctx.saved_tensors
    return g * _gelu_local(x, three=1)


def _gelu_f_saves_tanh(ctx, x):
    t = torch.tanh(C * (x + 0.044715 * x**3))
    ctx.save_for_backward(x, t)
    return 0.5 * x * (1 + t)


def _gelu_b_from_tanh(ctx, g):
    x, t = ctx.saved_tensors
    return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * C * (1 + 3 * 0.044715 * x * x))


def _ckpt_f_records(ctx, f, x):  # records the graph in forward: stores every intermediate
    with torch.enable_grad():
        xr = x.detach().requires_grad_(True)
        y = f(xr)
    ctx.saved = (xr, y)
    ctx.save_for_backward(x)
    return y.detach()


def _ckpt_b_records(ctx, g):
    xr, y = ctx.saved
    return None, torch.autograd.grad(y, xr, g)[0]


def _ckpt_b_no_grad(ctx, g):  # recomputes without switching recording on
    (x,) = ctx.saved_tensors
    x = x.detach().requires_grad_(True)
    y = ctx.f(x)
    return None, torch.autograd.grad(y, x, g)[0]


ONE = 1.0  # a plain Python global: the interpreter reads it, Triton's compiler refuses it


@triton.jit
def silu_with_a_plain_global(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, x / (ONE + tl.exp(-x)), mask=mask)


SCALE = tl.constexpr(1.0)  # the same constant as Triton wants it


@triton.jit
def silu_with_a_constexpr_global(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, x / (tl.exp(-x) + SCALE), mask=mask)


def test_a_kernel_only_the_gpu_compiler_refuses_loses_exactly_the_compile_share():
    check, params = CHECK_CALLS["forward_kernel"]
    verdict, report = run(check, silu_with_a_plain_global, **params)
    assert float(verdict) == 0.5 and {p.name for p in verdict.parts if p.passed is False} == {"compiles"}, report
    assert "Cannot access global variable ONE" in report and "(a tl.constexpr)" in report, report
    right, report = run(check, silu_with_a_constexpr_global, **params)
    assert float(right) == 1.0 and right.passed, report


def test_a_kernel_wrong_in_the_interpreter_earns_nothing_for_compiling():
    check, params = CHECK_CALLS["forward_kernel"]
    with pytest.raises(CheckFailed, match="unmasked tl.store"):
        check(unmasked_store_kernel, **params)


@triton.jit
def unmasked_load_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets)  # the last block reads past the end of x (its values are never stored)
    xc = x if x.dtype == tl.float64 else x.to(tl.float32)
    tl.store(y_ptr + offsets, (xc * tl.sigmoid(xc)).to(x.dtype), mask=offsets < n_elements)


@triton.jit
def load_past_the_end_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n_elements + BLOCK_SIZE, other=0.0)  # a mask that lets too much in
    xc = x if x.dtype == tl.float64 else x.to(tl.float32)
    tl.store(y_ptr + offsets, (xc * tl.sigmoid(xc)).to(x.dtype), mask=offsets < n_elements)


@triton.jit
def backward_unmasked_grad_load_kernel(x_ptr, grad_out_ptr, grad_in_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    g = tl.load(grad_out_ptr + offsets)  # masked on x, forgotten on grad_output
    s = tl.sigmoid(x)
    tl.store(grad_in_ptr + offsets, g * s * (1 + x * (1 - s)), mask=mask)


@triton.jit
def unmasked_store_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n_elements)
    tl.store(y_ptr + offsets, x * tl.sigmoid(x))


@triton.jit
def off_by_one_mask_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets <= n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, x * tl.sigmoid(x), mask=mask)


@triton.jit
def no_program_id_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.arange(0, BLOCK_SIZE)  # every program does block 0
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, x * tl.sigmoid(x), mask=mask)


@triton.jit
def backward_without_grad_kernel(x_ptr, grad_out_ptr, grad_in_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    s = tl.sigmoid(x)
    tl.store(grad_in_ptr + offsets, s * (1 + x * (1 - s)), mask=mask)


@triton.jit
def backward_always_float32_kernel(x_ptr, grad_out_ptr, grad_in_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    g = tl.load(grad_out_ptr + offsets, mask=mask).to(tl.float32)
    s = tl.sigmoid(x)
    tl.store(grad_in_ptr + offsets, g * s * (1 + x * (1 - s)), mask=mask)


@triton.jit
def backward_shifted_grad_kernel(x_ptr, grad_out_ptr, grad_in_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    g = tl.load(grad_out_ptr + offsets + BLOCK_SIZE * 0 + 1, mask=mask)  # an indexing slip: the neighbour's g
    s = tl.sigmoid(x)
    tl.store(grad_in_ptr + offsets, g * s * (1 + x * (1 - s)), mask=mask)


@triton.jit
def backward_unmasked_store_kernel(x_ptr, grad_out_ptr, grad_in_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    g = tl.load(grad_out_ptr + offsets, mask=mask)
    s = tl.sigmoid(x)
    tl.store(grad_in_ptr + offsets, g * s * (1 + x * (1 - s)))  # the mask forgotten on the store only


WRONG = {
    # name: (exercise, object, parts that must fail (None: the check raises), text the report must contain)
    "gather: gradient on the default device": (
        "gather_rows",
        fn("GatherRows", _gather_f, _gather_b_cpu),
        ["device"],
        "on the weight's device",
    ),
    "gather: assignment loses repeated rows": (
        "gather_rows",
        fn("GatherRows", _gather_f, _gather_b_assign),
        ["gradcheck", "reference"],
        "must be added up",
    ),
    "silu: saves the composed intermediates": (
        "fused_silu",
        fn("FusedSiLU", _silu_f_saves_composed, _silu_b_from_saved),
        ["memory"],
        "save only x",
    ),
    "silu: x kept as a ctx attribute": (
        "fused_silu",
        fn("FusedSiLU", _silu_f_attribute, _silu_b_attribute),
        ["memory"],
        "ctx.save_for_backward(x)",
    ),
    "silu: a decoy saved, x kept as an attribute": (
        "fused_silu",
        fn("FusedSiLU", _silu_f_decoy, _silu_b_attribute),
        ["memory"],
        "not x",
    ),
    "silu: product rule forgotten": (
        "fused_silu",
        fn("FusedSiLU", _silu_f, _silu_b_product_rule),
        ["gradcheck", "reference"],
        "product rule",
    ),
    "silu: output on the default device": (
        "fused_silu",
        fn("FusedSiLU", _silu_f_fixed_device, _silu_b),
        ["device"],
        "on the input's device",
    ),
    "gelu: the factor 3 of x³'s derivative": (
        "fused_gelu",
        fn("FusedGELU", _gelu_f, _gelu_b_no_three),
        ["gradcheck", "reference"],
        "factor 3",
    ),
    "gelu: saves tanh as well": (
        "fused_gelu",
        fn("FusedGELU", _gelu_f_saves_tanh, _gelu_b_from_tanh),
        ["memory"],
        "at most 0.25",
    ),
    "checkpoint: records the graph in forward": (
        "checkpoint",
        fn("Checkpoint", _ckpt_f_records, _ckpt_b_records),
        ["memory"],
        "intermediates were stored",
    ),
    "checkpoint: recomputes without enable_grad": (
        "checkpoint",
        fn("Checkpoint", _ckpt_f, _ckpt_b_no_grad),
        ["reference", "interface"],
        "does not require grad",
    ),
    # (a backward that raises returns nothing whose interface could pass)
    "kernel: unmasked tl.store": ("forward_kernel", unmasked_store_kernel, None, "unmasked tl.store"),
    # issue 47: loads without the mask their store has read past the end of the input (the values are never stored)
    "kernel: unmasked tl.load, masked store": ("forward_kernel", unmasked_load_kernel, None, "unmasked tl.load"),
    "kernel: a load mask that lets too much in": ("forward_kernel", load_past_the_end_kernel, None, "outside its"),
    "backward kernel: grad_output loaded unmasked": (
        "backward_kernel",
        backward_unmasked_grad_load_kernel,
        None,
        "unmasked tl.load",
    ),
    "kernel: mask offsets <= n": ("forward_kernel", off_by_one_mask_kernel, None, "past the end"),
    "kernel: every program does block 0": (
        "forward_kernel",
        no_program_id_kernel,
        None,
        "its program id",
    ),
    "backward kernel: grad_output not used": (
        "backward_kernel",
        backward_without_grad_kernel,
        None,
        "multiply it by grad_output",
    ),
    "backward kernel: unmasked tl.store": (
        "backward_kernel",
        backward_unmasked_store_kernel,
        None,
        "unmasked tl.store",
    ),
    "backward kernel: float64 computed in float32": (
        "backward_kernel",
        backward_always_float32_kernel,
        None,
        "computed in float32",
    ),
    "backward kernel: loads the neighbour's grad_output": (
        "backward_kernel",
        backward_shifted_grad_kernel,
        None,
        "is wrong in",
    ),
    "triton: grad_output not made contiguous": (
        "triton_silu",
        triton_silu(contiguous_grad=False),
        ["layout"],
        "laid out contiguously",
    ),
    "triton: a kernel that ignores x's strides": (
        "triton_silu",
        triton_silu(contiguous_x=False),
        ["layout"],
        "ignores strides",
    ),
    "triton: output allocated as float32": (
        "triton_silu",
        triton_silu(out_dtype=torch.float32),
        ["forward"],
        "with x's dtype",
    ),
    "linear32: no custom_bwd": (
        "linear32",
        _linear32(backward_decorator=False),
        ["autocast_backward"],
        "the state forward had",
    ),
    "linear32: no decorators": (
        "linear32",
        _linear32(False, False),
        ["autocast", "autocast_backward"],
        "autocast is still on inside forward",
    ),
    "linear32: casts its inputs itself": (
        "linear32",
        _linear32(False, False, own_cast=True),
        ["forward", "reference", "autocast", "autocast_backward"],
        "converting them to float32 is autocast's business",
    ),
    "saved_bytes: a tensor saved twice counted twice": (
        "saved_bytes",
        lambda f, *xs: _count_every_save(f, *xs),
        None,
        "count each storage once",
    ),
    "saved_bytes: counts tensors, not bytes": (
        "saved_bytes",
        lambda f, *xs: _count_saves(f, *xs),
        None,
        "numel × element_size",
    ),
    "bandwidth: GiB instead of GB": ("bandwidth", lambda n, s, t, d: _bandwidth(n, s, t, d) * 1e9 / 2**30, None, "10⁹"),
    "bandwidth: 2N for backward too": ("bandwidth", lambda n, s, t, d: 2 * n * s / t / 1e9, None, "3·N·bytes"),
}


def _count_every_save(f, *inputs):
    total = 0

    def pack(t):
        nonlocal total
        total += t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        f(*inputs)
    return total


def _count_saves(f, *inputs):
    saves = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saves.append(1) or t, lambda t: t):
        f(*inputs)
    return len(saves)


@pytest.mark.parametrize("name", list(WRONG))
def test_wrong_answers_lose_their_part_with_a_hint(name):
    exercise, obj, failing, text = WRONG[name]
    check, params = CHECK_CALLS[exercise]
    verdict, report = run(check, obj, **params)
    assert text in report, report
    if failing is None:
        assert verdict is None, "the check should fail"
        return
    if verdict is None:  # every part failed: the message is the whole report
        for p in failing:
            assert f"[FAIL] {PART_TITLES.get(p, p)}" in report, report
        return
    assert float(verdict) < params["points"], report
    lost = {p.name for p in verdict.parts if p.passed is False}
    assert lost == set(failing), f"one mistake loses exactly the parts it touches, {sorted(failing)}:\n{report}"
    costs = COSTS.get(name, lost)  # one mistake seen by two parts costs one idea
    assert float(verdict) == expected_score(exercise, params["points"], costs), (
        f"{sorted(costs)} should cost {ideas_lost(costs)} of {IDEAS[exercise]} equal shares:\n{report}"
    )


COSTS = {"linear32: casts its inputs itself": {"forward", "autocast", "autocast_backward"}}


TRITON_SILU_SOURCE = """
class TritonSiLU(Function):
    @staticmethod
    def forward(ctx, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        silu_forward_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK_SIZE=1024)
        ctx.save_for_backward(x)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        grad_x = torch.empty_like(x)
        silu_backward_kernel[(triton.cdiv(x.numel(), 1024),)](
            x, grad_output.contiguous(), grad_x, x.numel(), BLOCK_SIZE=1024
        )
        return grad_x
"""


def _notebook_triton_silu(forward_kernel, backward_kernel, source=TRITON_SILU_SOURCE, **more):
    """TritonSiLU as a notebook defines it (`source`): reading the kernels by their notebook names, as globals."""
    space = {"Function": Function, "torch": torch, "triton": triton, **more}
    space.update(silu_forward_kernel=forward_kernel, silu_backward_kernel=backward_kernel)
    exec(source, space)
    return space


@pytest.mark.parametrize(
    "forward_kernel, backward_kernel",
    [
        (unmasked_store_kernel, silu_backward_kernel),
        (off_by_one_mask_kernel, silu_backward_kernel),
        (silu_forward_kernel, backward_without_grad_kernel),
        (silu_forward_kernel, backward_shifted_grad_kernel),
    ],
    ids=["forward unmasked", "forward off by one", "backward without grad_output", "backward shifted"],
)
def test_a_kernel_mistake_costs_only_the_kernels_exercise(forward_kernel, backward_kernel):
    """TritonSiLU is checked with the course's kernels bound to the notebook's kernel names: a wrong kernel costs
    its own exercise's points, not TritonSiLU's too; the learner's kernels are back afterwards."""
    space = _notebook_triton_silu(forward_kernel, backward_kernel)
    check, params = CHECK_CALLS["triton_silu"]
    verdict, report = run(check, space["TritonSiLU"], **params)
    assert verdict is not None and float(verdict) == params["points"], report
    assert space["silu_forward_kernel"] is forward_kernel and space["silu_backward_kernel"] is backward_kernel


@pytest.mark.parametrize(
    "launches",
    [
        ("(x, y, x.numel(), BLOCK_SIZE=1024)", "(x_ptr=x, y_ptr=y, n_elements=x.numel(), BLOCK_SIZE=1024)"),
        ("(x, y, x.numel(), BLOCK_SIZE=1024)", "(x, y_ptr=y, BLOCK_SIZE=1024, n_elements=x.numel(), num_warps=4)"),
        (
            "(\n            x, grad_output.contiguous(), grad_x, x.numel(), BLOCK_SIZE=1024\n        )",
            "(grad_x_ptr=grad_x, x_ptr=x, n_elements=x.numel(), grad_out_ptr=grad_output.contiguous())",
        ),
    ],
    ids=["forward by keyword", "forward mixed, a launch option", "backward by keyword, its block by default"],
)
def test_a_launch_by_keyword_runs_as_it_does_with_the_learners_kernels(launches):
    """Issue 48: `kernel[grid](x_ptr=x, ...)` is legal Triton and works with the learner's kernels, so it works with
    the course's kernels in their place too: the stand-in binds each launch by the learner's kernel's own
    parameters (names, defaults, Triton's launch options beside them)."""

    @triton.jit
    def forward_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        pass

    @triton.jit
    def backward_kernel(x_ptr, grad_out_ptr, grad_x_ptr, n_elements, BLOCK_SIZE: tl.constexpr = 256):
        pass

    old, new = launches
    assert old in TRITON_SILU_SOURCE
    space = _notebook_triton_silu(forward_kernel, backward_kernel, TRITON_SILU_SOURCE.replace(old, new))
    check, params = CHECK_CALLS["triton_silu"]
    verdict, report = run(check, space["TritonSiLU"], **params)
    assert verdict is not None and float(verdict) == params["points"], report


def test_a_kernel_derivative_scaled_by_grad_output_in_pytorch_is_the_kernels():
    """Issue 48: backward launches its kernel with a gradient of ones (the derivative itself) and multiplies by
    grad_output in PyTorch: what it hands back is the kernel's output times grad_output, the kernel's work. Computed
    by PyTorch beside the launch, it is not."""
    old = "        return grad_x\n"
    scaled = TRITON_SILU_SOURCE.replace("grad_output.contiguous(), grad_x", "torch.ones_like(x), grad_x").replace(
        old, "        return grad_x * grad_output\n"
    )
    beside = TRITON_SILU_SOURCE.replace(
        old, "        s = torch.sigmoid(x)\n        return grad_output * s * (1 + x * (1 - s))\n"
    )
    check, params = CHECK_CALLS["triton_silu"]
    scores = []
    for source in (scaled, beside):
        space = _notebook_triton_silu(silu_forward_kernel, silu_backward_kernel, source)
        verdict, report = run(check, space["TritonSiLU"], **params)
        scores.append((float(verdict) if verdict is not None else 0.0, report))
    assert scores[0][0] == params["points"], scores[0][1]
    assert scores[1][0] < params["points"], scores[1][1]


@triton.jit
def widened_count_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements.to(tl.int64)  # a GPU launch with n_elements 1 makes it the constant 1: no .to
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, x * tl.sigmoid(x), mask=mask)


def test_a_kernel_that_only_compiles_for_counts_other_than_one_loses_its_compile_part_where_a_count_is_one():
    """Issue 48: right in the interpreter for every size, and on a GPU for every size but n_elements == 1 (Triton
    makes an integer argument equal to 1 a constant; measured on an H100, docs/figures.md). The drawn sizes include
    a single element; such a launch costs the compile part, as it fails on a GPU, and only there."""
    check, params = CHECK_CALLS["forward_kernel"]
    assert (1, 16) in params["sizes"]
    verdict, report = run(check, widened_count_kernel, **{**params, "sizes": [s for s in params["sizes"] if s[0] > 1]})
    assert float(verdict) == 1.0, report
    verdict, report = run(check, widened_count_kernel, **params)
    assert {p.name for p in verdict.parts if p.passed is False} == {"compiles"}, report
    assert "n_elements=1" in report and "has no attribute 'to'" in report and "equal to 1" in report, report


def test_a_launch_the_learners_kernel_would_refuse_names_the_learners_parameter():
    @triton.jit
    def forward_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        pass

    source = TRITON_SILU_SOURCE.replace("(x, y, x.numel(), BLOCK_SIZE=1024)", "(x_ptr=x, y=y, n_elements=x.numel())")
    space = _notebook_triton_silu(forward_kernel, silu_backward_kernel, source)
    check, params = CHECK_CALLS["triton_silu"]
    verdict, report = run(check, space["TritonSiLU"], **params)
    assert verdict is None or float(verdict) < params["points"]
    assert "silu_forward_kernel[grid](...)" in report and "'y_ptr'" in report, report
    assert "_silu_forward" not in report and "course_kernels" not in report, report


def test_the_function_around_the_course_kernels_is_still_graded():
    """The stand-ins replace the kernels, not the Function: a wrapper mistake (no .contiguous()) still loses its
    part, and the report says whose kernels ran."""
    source = TRITON_SILU_SOURCE.replace("x = x.contiguous()", "pass  # x as it comes")
    space = _notebook_triton_silu(silu_forward_kernel, silu_backward_kernel, source)
    check, params = CHECK_CALLS["triton_silu"]
    verdict, report = run(check, space["TritonSiLU"], **params)
    assert verdict is not None and {p.name for p in verdict.parts if p.passed is False} == {"layout"}, report
    assert "the course's silu_backward_kernel and silu_forward_kernel" in report


def test_the_catalogue_is_large_enough():
    assert len(WRONG) >= 12 and len(ALTERNATIVES) >= 5


def test_partial_credit_for_a_fused_silu_that_saves_too_much():
    """Everything right but the memory: one idea of six (forward, backward, interface, layout, memory, device) is
    lost; for Triton, layout, one idea of five (no device part)."""
    verdict, _ = run(
        nb05.check_fused_activation,
        fn("FusedSiLU", _silu_f_saves_composed, _silu_b_from_saved),
        activation="silu",
        points=3,
        seed=0,
        cases=2,
    )
    assert float(verdict) == 2.5
    verdict, _ = run(
        nb05.check_triton_function,
        triton_silu(contiguous_grad=False),
        activation="silu",
        triton=True,
        points=4,
        seed=0,
        cases=2,
    )
    assert float(verdict) == 3.2


# =========================================================================== every dtype judged on its values
# Right for float64 x, wrong for float32 x (issue 47, item 10a): before, the float32 run was judged on its dtype only,
# and such an answer kept 3/3 on each exercise (30/30 on the notebook) with no message. Now the float32 run's output
# and gradient are compared with the reference on the same float32-rounded inputs: the gradient costs the reference
# part (the part a wrong float64 gradient costs), the output the forward part, with a message that names float32.


def _silu_b_float32_fast_path(ctx, g):  # the product-rule term dropped on a float32 fast path
    (x,) = ctx.saved_tensors
    s = torch.sigmoid(x)
    return g * s if x.dtype == torch.float32 else g * s * (1 + x * (1 - s))


def _gelu_b_float32_fast_path(ctx, g):  # the same for tanh-GELU: 0.5·(1 + t) alone
    (x,) = ctx.saved_tensors
    if x.dtype == torch.float32:
        return g * 0.5 * (1 + torch.tanh(C * (x + 0.044715 * x**3)))
    return g * _gelu_local(x)


def _gelu_b_float32_without_the_three(ctx, g):  # another term dropped: the factor 3 of the cube's derivative
    (x,) = ctx.saved_tensors
    return g * _gelu_local(x, three=1 if x.dtype == torch.float32 else 3)


def _silu_b_float32_in_float16(ctx, g):  # float32 computed in float16, handed back as float32
    (x,) = ctx.saved_tensors
    if x.dtype == torch.float32:
        return _silu_b_float32_in_float16_local(x.half(), g.half()).float()
    return _silu_b_float32_in_float16_local(x, g)


def _silu_b_float32_in_float16_local(x, g):
    s = torch.sigmoid(x)
    return g * s * (1 + x * (1 - s))


def _gelu_f_float32_in_float16(ctx, x):  # forward's float32 path in float16: the forward part's mistake
    ctx.save_for_backward(x)
    h = x.half() if x.dtype == torch.float32 else x
    return (0.5 * h * (1 + torch.tanh(C * (h + 0.044715 * h**3)))).to(x.dtype)


def _silu_b_upcast(ctx, g):  # honest: float32 through float64 and back
    (x,) = ctx.saved_tensors
    return _silu_b_float32_in_float16_local(x.double(), g.double()).to(x.dtype)


def _gelu_b_upcast(ctx, g):
    (x,) = ctx.saved_tensors
    return (g.double() * _gelu_local(x.double())).to(x.dtype)


@pytest.mark.parametrize(
    "exercise, forward, backward, lost, says",
    [
        ("fused_silu", _silu_f, _silu_b_float32_fast_path, "reference", "product rule"),
        ("fused_gelu", _gelu_f, _gelu_b_float32_fast_path, "reference", "0.5·x·(1 + tanh(…)) is a product"),
        ("fused_gelu", _gelu_f, _gelu_b_float32_without_the_three, "reference", "the factor 3 is missing"),
        ("fused_silu", _silu_f, _silu_b_float32_in_float16, "reference", "never narrower (float16, bfloat16)"),
        ("fused_gelu", _gelu_f_float32_in_float16, _gelu_b, "forward", "never narrower (float16, bfloat16)"),
    ],
    ids=["silu: product rule dropped", "gelu: product rule dropped", "gelu: factor 3", "silu: float16", "gelu: fwd"],
)
def test_a_fused_activation_wrong_only_for_float32_inputs_loses_its_part(exercise, forward, backward, lost, says):
    check, params = CHECK_CALLS[exercise]
    name = "FusedSiLU" if exercise == "fused_silu" else "FusedGELU"
    verdict, report = run(check, fn(name, forward, backward), **params)
    assert verdict is not None and float(verdict) == 2.5, report  # one idea of six, of 3 points
    assert {p.name for p in verdict.parts if p.passed is False} == {lost}, report
    assert "for a float32 x" in report and says in report, report


@pytest.mark.parametrize(
    "exercise, backward",
    [("fused_silu", _silu_b), ("fused_silu", _silu_b_upcast), ("fused_gelu", _gelu_b), ("fused_gelu", _gelu_b_upcast)],
    ids=["silu in float32", "silu through float64", "gelu in float32", "gelu through float64"],
)
def test_a_fused_activation_right_in_every_dtype_keeps_full_marks_whatever_its_float32_arithmetic(exercise, backward):
    forward = _silu_f if exercise == "fused_silu" else _gelu_f
    for seed in (0, 1, 7):
        _full_marks(
            exercise, fn("FusedSiLU" if exercise == "fused_silu" else "FusedGELU", forward, backward), seed=seed
        )


# =========================================================================== blank answers, odd objects


def _blank(*args, **kwargs):
    raise NotImplementedError()


@triton.jit
def blank_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    raise NotImplementedError()


@pytest.mark.parametrize(
    "exercise, obj, name",
    [
        ("gather_rows", fn("GatherRows", _blank, _blank), "GatherRows.forward"),
        ("fused_silu", fn("FusedSiLU", _blank, _blank), "FusedSiLU.forward"),
        ("checkpoint", fn("Checkpoint", _blank, _blank), "Checkpoint.forward"),
        ("forward_kernel", blank_kernel, "blank_kernel"),
        ("triton_silu", fn("TritonSiLU", _blank, _blank), "TritonSiLU.forward"),
        ("linear32", fn("Linear32", _blank, _blank), "Linear32.forward"),
        ("saved_bytes", _blank, "saved_bytes"),
        ("bandwidth", _blank, "effective_bandwidth"),
    ],
)
def test_blank_answers_say_not_written(exercise, obj, name):
    check, params = CHECK_CALLS[exercise]
    _, message = run(check, obj, **params)
    assert "not written yet" in message, message


def test_blank_backward_keeps_the_forward_points():
    verdict, report = run(
        nb05.check_fused_activation, fn("FusedSiLU", _silu_f, _blank), activation="silu", points=9, seed=0, cases=2
    )
    assert verdict is not None and part(verdict, "forward").passed and not part(verdict, "gradcheck").passed
    assert "not written yet" in report


def test_a_kernel_check_refuses_something_that_is_not_a_kernel():
    _, message = run(nb05.check_forward_kernel, lambda *a: None, **CHECK_CALLS["forward_kernel"][1])
    assert "@triton.jit" in message


def test_messages_do_not_reveal_the_expected_values():
    _, message = run(nb05.check_backward_kernel, backward_without_grad_kernel, **CHECK_CALLS["backward_kernel"][1])
    from autograder.nb05.cases import kernel_case

    case = kernel_case(0, 10, "float64")
    x = case["x"].requires_grad_()
    (want,) = torch.autograd.grad(F.silu(x), x, case["g"])
    for value in want.tolist():
        assert f"{value:.3g}" not in message


def test_kernels_compiled_for_a_gpu_are_checked_in_the_interpreter():
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    compiled = JITFunction(silu_forward_kernel.fn)  # what @triton.jit gives on a GPU machine
    assert not isinstance(compiled, InterpretedFunction)
    check, params = CHECK_CALLS["forward_kernel"]
    verdict = check(compiled, **params)
    assert verdict.passed and float(verdict) == 1.0, verdict.report()


# =========================================================================== property-based


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), activation=st.sampled_from(["silu", "gelu_tanh"]))
def test_fused_activations_pass_on_any_seed(seed, activation):
    F_ = FusedSiLU if activation == "silu" else FusedGELU
    verdict, report = run(nb05.check_fused_activation, F_, activation=activation, points=3, seed=seed, cases=3)
    assert verdict is not None and float(verdict) == 3, report


@pytest.mark.parametrize("seed", [116578, 8759, 6942])
def test_the_right_float32_gelu_gradient_keeps_its_part_where_its_terms_cancel(seed):
    """Seeds whose float32 case holds a large negative x: 0.5·(1 + t) and 1 − t² cancel there, and the right gradient
    erred by up to 1.7 times a tolerance relative to its small result (a hidden draw of the grader's took 0.5 from
    the reference solution). The float32 tolerance is now of the derivative's terms."""
    verdict, report = run(nb05.check_fused_activation, FusedGELU, activation="gelu_tanh", points=3, seed=seed, cases=5)
    assert verdict is not None and float(verdict) == 3, report


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 300), block=st.sampled_from([8, 16, 64, 128]), seed=st.integers(0, 1000))
def test_kernels_pass_on_any_size_and_the_unmasked_one_never_does_past_a_block(n, block, seed):
    params = {"sizes": [(n, block)], "seed": seed}
    for kernel, kind in ((silu_forward_kernel, "forward"), (silu_backward_kernel, "backward")):
        check = nb05.check_forward_kernel if kind == "forward" else nb05.check_backward_kernel
        verdict = check(kernel, kind=kind, **params)
        assert verdict.passed and float(verdict) == 1.0, verdict.report()
    if n % block:
        with pytest.raises(CheckFailed, match="unmasked tl.store"):
            nb05.check_forward_kernel(unmasked_store_kernel, kind="forward", **params)


def test_targets_of_the_composed_expressions():
    """The notebook's memory targets rest on these counts: composed SiLU keeps 2 tensors, tanh-GELU 4."""
    from autograder.nb05.judges.activations import composed_saved_bytes

    assert composed_saved_bytes("silu", (1000,), torch.float32) == 2 * 4000
    assert composed_saved_bytes("gelu_tanh", (1000,), torch.float32) == 4 * 4000


def test_every_check_the_notebook_calls_is_registered():
    for name in nb05.__all__:
        if name.startswith("check_"):
            assert name in CHECKS
    assert "unmasked tl.load/tl.store" in nb05.CRASH_HINT


# =========================================================================== a crash costs only its own exercises

CRASH_ASSIGNMENT = "05-gpu-functions"
CRASHING_KERNEL = '''
@triton.jit
def silu_forward_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n_elements)
    tl.store(y_ptr + offsets * 1000000000, x * tl.sigmoid(x))      # far outside y, and unmasked
'''
GLOBAL_IN_BACKWARD_KERNEL = '''
ONE = 1.0   # a plain global: the interpreter reads it; a GPU's compiler refuses it

@triton.jit
def silu_backward_kernel(x_ptr, grad_out_ptr, grad_in_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    g = tl.load(grad_out_ptr + offsets, mask=mask)
    s = ONE / (ONE + tl.exp(-x))
    tl.store(grad_in_ptr + offsets, g * s * (ONE + x * (ONE - s)), mask=mask)
'''


@pytest.mark.slow
def test_a_crashing_kernel_costs_only_its_own_exercises(tmp_path, grading_pool):
    """A kernel that stores far outside its tensor kills the interpreter's process where it runs (a segfault): the
    notebook's own cell that launches it crashes the learner's kernel, and the grader gives the rest of the
    notebook a fresh one. The kernel's exercise runs its recorded text in a kernel runner instead, which performs
    no store outside the tensors it handed over and says how many it refused: that exercise scores 0 with that
    sentence, and the others keep their points, TritonSiLU's too (its check runs the course's kernels in place of
    the learner's). In the same run, a backward kernel right in the interpreter that a GPU's compiler refuses loses
    the compile share alone."""
    root, db_url = tmp_path, f"sqlite:///{tmp_path / 'gradebook.db'}"
    shutil.copytree(SOLUTIONS / CRASH_ASSIGNMENT, root / "source" / CRASH_ASSIGNMENT)
    generate_in_course(root, [CRASH_ASSIGNMENT], db_url)
    (released,) = (root / "release" / CRASH_ASSIGNMENT).glob("*.ipynb")
    answers = solution_sources(SOLUTIONS / CRASH_ASSIGNMENT / released.name)
    folder = root / "submitted" / "dora" / CRASH_ASSIGNMENT
    folder.mkdir(parents=True)
    mistakes = {"silu_forward_kernel": CRASHING_KERNEL, "silu_backward_kernel": GLOBAL_IN_BACKWARD_KERNEL}
    nbformat.write(fill_answers(released, {**answers, **mistakes}), folder / released.name)
    (folder / "timestamp.txt").write_text("2026-11-01 12:00:00.000000 UTC")
    (row,) = grade_assignment(
        root,
        CRASH_ASSIGNMENT,
        db_url=db_url,
        workers=1,
        pool=grading_pool[:1],
        progress=False,
        log=lambda *a: None,
        limits=sandbox.Limits(cell_timeout_s=120, timeout_s=900),
    )
    with Gradebook(db_url) as gb:
        scores = {g.name: g.score for g in gb.find_submission_notebook(released.stem, CRASH_ASSIGNMENT, "dora").grades}
    assert scores["test_silu_forward_kernel"] == 0
    assert scores["test_triton_silu"] == 4, "TritonSiLU is checked with the course's kernels in place of the learner's"
    (feedback,) = (root / "feedback" / "dora" / CRASH_ASSIGNMENT).glob("*.html")
    assert "far outside every tensor it was handed (the grader did not perform them)" in feedback.read_text()
    assert "Hint: likely an unmasked tl.store" in feedback.read_text()
    assert scores["test_silu_backward_kernel"] == 1.5, "a compile-only mistake costs the compile share: half of 3"
    assert "Cannot access global variable ONE" in feedback.read_text()
    assert any("fresh kernel" in m for m in row.messages), row.messages
    for before in ("test_gather_rows", "test_saved_bytes", "test_fused_silu", "test_fused_gelu", "test_checkpoint"):
        assert scores[before] > 0, (before, scores)
    for after in ("test_silu_backward_kernel", "test_effective_bandwidth", "test_linear32"):
        assert scores[after] > 0, (after, scores, row.messages)


HELPER_KERNELS = '''
import os, sys
os.environ["TRITON_INTERPRET"] = sys.argv[1]      # before triton is imported: decides how tl's helpers run
import torch, triton, triton.language as tl
from autograder.nb05 import check_forward_kernel, check_backward_kernel

@triton.jit
def silu_forward(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * tl.sigmoid(x), mask=mask)

@triton.jit
def silu_backward(x_ptr, g_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    g = tl.load(g_ptr + offs, mask=mask)
    s = 1 / (1 + tl.exp(-x))
    tl.store(out_ptr + offs, g * s * (1 + x * (1 - s)), mask=mask)

forward = check_forward_kernel(silu_forward, kind="forward", sizes=[(10, 16), (100, 32)], seed=0)
backward = check_backward_kernel(silu_backward, kind="backward", sizes=[(10, 16), (100, 32)], seed=0)
right = all(v.passed and float(v) == 1.0 for v in (forward, backward))
print("passed" if right else f"not passed: {forward!r} {backward!r}")
'''


@pytest.mark.parametrize("interpret", ["1", "0"], ids=["interpreter import", "compiled-mode import"])
def test_kernels_using_tl_helpers_pass_whichever_mode_triton_was_imported_in(interpret, tmp_path):
    """tl.sigmoid and tl.exp are @triton.jit functions themselves: imported in compiled mode (as on a GPU machine)
    they could not run in the interpreter and a right kernel failed ("Cannot call @triton.jit'd outside of the
    scope of a kernel")."""
    import subprocess
    import sys

    script = tmp_path / "kernels.py"  # Triton reads a kernel's source from its file
    script.write_text(HELPER_KERNELS)
    out = subprocess.run(
        [sys.executable, str(script), interpret],
        capture_output=True,
        text=True,
        timeout=600,
        env={**__import__("os").environ, "CUDA_VISIBLE_DEVICES": ""},
    )
    assert out.returncode == 0, out.stderr[-3000:]  # a failing check raises CheckFailed
    assert out.stdout.strip().endswith("passed") and "not passed" not in out.stdout, out.stdout


def test_a_kernel_runs_compiled_on_a_gpu_and_interpreted_without_one(monkeypatch):
    from triton.runtime.jit import JITFunction

    from autograder.probes import triton_kernels as probes

    compiled = JITFunction(silu_forward_kernel.fn)
    launcher, device, _ = probes.kernel_launcher(compiled, "k")
    assert device == "cpu" and launcher is not compiled, "no GPU here: the interpreter, on CPU tensors"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    launcher, device, context = probes.kernel_launcher(compiled, "k")
    assert device == "cuda" and context is probes._nothing, "a GPU: the compiled kernel there"
    assert type(launcher) is JITFunction and launcher.fn is compiled.fn, "re-wrapped by the probe around its function"
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert probes.kernel_launcher(compiled, "k")[1] == "cpu", "TRITON_INTERPRET=1 asks for the interpreter"


def test_the_stand_ins_answer_no_kernel_exercise():
    """A learner who harvests the stand-ins (a Function of their own run through the check, keeping what it finds
    under the kernel names) and hands them in as their kernels gets nothing for the kernel exercises: the stand-ins
    are not Triton kernels, and their source is no Triton code to copy."""
    import inspect

    import autograder.course_kernels as course

    harvested: dict = {}
    # a notebook's namespace: its kernels under their names, and a forward that keeps what it finds there
    space = {"silu_forward_kernel": silu_forward_kernel, "silu_backward_kernel": silu_backward_kernel}
    space.update(harvested=harvested, torch=torch)
    exec("def forward(ctx, x):\n    harvested.update(globals())\n    return x * torch.sigmoid(x)\n", space)
    thief = type("Thief", (Function,), {"forward": staticmethod(space["forward"]), "backward": staticmethod(_silu_b)})
    check, params = CHECK_CALLS["triton_silu"]
    run(check, thief, **params)
    stolen = harvested["silu_forward_kernel"]
    assert isinstance(stolen, course.StandInKernel), "the check ran with the stand-in bound"
    assert space["silu_forward_kernel"] is silu_forward_kernel, "and put the learner's back"
    kernel_check, kernel_params = CHECK_CALLS["forward_kernel"]
    verdict, report = run(kernel_check, stolen, **kernel_params)
    assert verdict is None and "should be a Triton kernel" in report, report
    assert "tl." not in inspect.getsource(course)
