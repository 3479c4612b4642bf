"""The probes call a learner's Function the way a user's code does (issue: grading that trusts nothing the learner's
process can write, part 2): through torch.autograd.Function.apply as PyTorch defines it, taking only outputs the
learner's own node made, and running backward through autograd's engine as well as directly, both agreeing.

Each attack gets nothing for the parts it fakes; the same ideas written honestly (an apply that only hands over to
PyTorch's, a backward that reads its ctx however it likes) keep full marks, in notebooks 03, 04 and 05."""

from __future__ import annotations

import pytest
import torch
from torch.autograd import Function

from autograder import nb03, nb04, nb05
from autograder.feedback import CheckFailed

pytestmark = pytest.mark.grading


def _mul_forward(ctx, a, b):
    ctx.save_for_backward(a, b)
    return a * b


def _mul_backward(ctx, g):
    a, b = ctx.saved_tensors
    return g * b, g * a


def _function(name, forward=_mul_forward, backward=_mul_backward, **extra):
    return type(name, (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward), **extra})


def score(F, check=nb03.check_function, **params):
    """(points earned of 5, message when none)."""
    params = {"points": 5, "seed": 0, **params}
    try:
        return float(check(F, **params)), None
    except CheckFailed as failure:
        verdict = getattr(failure, "verdict", None)
        return (float(verdict), str(failure)) if verdict is not None else (0.0, str(failure))


def mul(F):
    return score(F, reference="mul", cuda=False)


# ------------------------------------------------------------------ apply is PyTorch's, the node is the learner's


def _plain_apply(cls, a, b):  # no Function at all: autograd differentiates a * b itself
    return a * b


def _apply_around_super(cls, a, b):  # forward runs, but the output handed back comes from another graph
    super(cls, cls).apply(a, b)
    return a * b


def _apply_detached_then_rebuilt(cls, a, b):
    out = super(cls, cls).apply(a, b)
    return out.detach() + 0 * (a * b)


@pytest.mark.parametrize("apply", [_plain_apply, _apply_around_super, _apply_detached_then_rebuilt])
def test_a_function_whose_apply_is_overridden_is_called_through_pytorchs_own(apply):
    """Blank forward and backward (they raise); apply overridden to compute with autograd: nothing earned, since the
    probe never calls the class's own apply."""

    def blank(ctx, *args):
        raise NotImplementedError()

    F = _function("MulFunction", blank, blank, apply=classmethod(apply))
    points, message = mul(F)
    assert points == 0 and message


def test_an_output_is_the_learners_only_when_its_node_is_of_the_learners_class():
    from autograder.probes.apply import base_apply, made_by

    F = _function("MulFunction")
    a, b = torch.randn(3, requires_grad=True), torch.randn(3)
    assert made_by(base_apply(F)(a, b), F)
    assert not made_by(a * b, F) and not made_by(base_apply(F)(a, b), _function("Other"))
    assert made_by(a.detach(), F)  # no node: nothing to say (the probes' "not connected" messages say it)


def test_an_apply_that_only_hands_over_to_pytorchs_keeps_full_marks():
    def apply(cls, a, b):
        return super(cls, cls).apply(a, b)

    assert mul(_function("MulFunction", apply=classmethod(apply))) == (5.0, None)


def test_notebook_04_and_05_functions_are_called_through_pytorchs_apply_too():
    def cube_forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    def cube_backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x**2 * g

    honest = _function("Cube", cube_forward, cube_backward)
    faked = _function("Cube", cube_forward, lambda ctx, g: 0 * g, apply=classmethod(lambda cls, x: x**3))
    assert score(honest, nb04.check_saved_tensors)[0] == 5
    assert score(faked, nb04.check_saved_tensors)[0] < 5

    def gather_forward(ctx, weight, index):
        ctx.save_for_backward(index)
        ctx.rows = weight.shape[0]
        return weight[index]

    def gather_backward(ctx, g):
        (index,) = ctx.saved_tensors
        grad = torch.zeros(ctx.rows, g.shape[1], dtype=g.dtype, device=g.device)
        grad.index_add_(0, index, g)
        return grad, None

    gather = _function("GatherRows", gather_forward, gather_backward)
    gather_faked = _function(
        "GatherRows", gather_forward, lambda ctx, g: (None, None), apply=classmethod(lambda cls, w, i: w[i])
    )
    assert score(gather, nb05.check_gather_rows)[0] == 5
    assert score(gather_faked, nb05.check_gather_rows)[0] < 2.5


# ------------------------------------------------------------------ backward through the engine, and directly


def _right_only_when_called_directly(ctx, g):
    a, b = ctx.saved_tensors
    inside_engine = torch._C._current_graph_task_id() != -1
    return (2 * g * b, 2 * g * a) if inside_engine else (g * b, g * a)


def _raises_inside_the_engine(ctx, g):
    if torch._C._current_graph_task_id() != -1:
        raise RuntimeError("not in real use")
    return _mul_backward(ctx, g)


_CALLS = {"n": 0}


def _right_on_odd_calls(ctx, g):  # the probe's direct call and a user's call come in a fixed order
    _CALLS["n"] += 1
    a, b = ctx.saved_tensors
    return (g * b, g * a) if _CALLS["n"] % 2 else (g * b * 0, g * a * 0)


@pytest.mark.parametrize("backward", [_right_only_when_called_directly, _raises_inside_the_engine, _right_on_odd_calls])
def test_a_backward_right_only_the_way_the_probe_calls_it_loses_its_gradient_parts(backward):
    points, _ = mul(_function("MulFunction", backward=backward))
    assert points <= 5 * 2 / 4  # forward (and at most the interface) only: both gradient parts are lost


def test_a_backward_that_reads_its_ctx_however_it_likes_keeps_full_marks():
    def forward(ctx, a, b):
        ctx.a, ctx.b = a.detach(), b.detach()  # (attributes, not save_for_backward: another exercise's concern)
        return a * b

    def backward(ctx, g):
        grad_a = g.clone().mul_(ctx.b)  # in place on its own copy
        return grad_a, (g * ctx.a).contiguous()

    assert mul(_function("MulFunction", forward, backward)) == (5.0, None)


# ------------------------------------------------------------------ every dtype the check runs is judged on its values


def _wrong_in_float32(ctx, g):
    a, b = ctx.saved_tensors
    if g.dtype == torch.float32:
        return torch.zeros_like(a), torch.zeros_like(b)  # the right dtype, wrong values
    return g * b, g * a


def _forward_wrong_in_float32(ctx, a, b):
    ctx.save_for_backward(a, b)
    return a * b if a.dtype == torch.float64 else a + b


def test_a_float32_answer_of_the_right_dtype_and_wrong_values_loses_its_part():
    for wrong, part in (
        (dict(backward=_wrong_in_float32), "reference"),
        (dict(forward=_forward_wrong_in_float32), "forward"),
    ):
        verdict = None
        try:
            nb03.check_function(_function("MulFunction", **wrong), reference="mul", points=5, seed=0, cuda=False)
        except CheckFailed as failure:
            verdict = failure.verdict
        assert verdict is not None, f"{part}: full marks for a float32 answer with wrong values"
        lost = [p.name for p in verdict.parts if p.passed is False]
        assert lost == [part] and "float32" in verdict.report()


def test_a_function_right_in_every_dtype_keeps_full_marks_whatever_its_float32_rounding():
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return (g.double() * b.double()).to(g.dtype), (g * a).to(g.dtype)  # float32 through float64 and back

    assert mul(_function("MulFunction", backward=backward)) == (5.0, None)


# ------------------------------------------------------------------ nothing the learner's code reads tells a probe


def _what_code_can_read():
    return (
        torch._C._is_torch_function_enabled(),
        torch._C._is_torch_function_all_disabled(),
        torch._C._is_torch_function_mode_enabled(),
        torch._C._len_torch_function_stack(),
        torch.utils._python_dispatch._get_current_dispatch_mode() is None,
    )


def test_a_probes_call_reads_like_the_learners_own_call():
    """The probe runs with no mode the learner left active and torch functions on, exactly as a learner's own call
    with no mode (before, torch functions were off during probes: `torch._C._is_torch_function_enabled()` told)."""
    from torch.utils._python_dispatch import _disable_current_modes

    from autograder.probes.call import call_learner
    from autograder.probes.kernel import _no_modes

    own = _what_code_can_read()
    with _no_modes(torch, _disable_current_modes):
        probed = call_learner(_what_code_can_read, name="f")
    assert probed == own


def test_a_mode_left_active_is_off_while_a_probe_runs_and_back_after():
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import _disable_current_modes

    from autograder.probes.kernel import _active_torch_modes, _no_modes

    class Agree(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return True if func is torch.equal else func(*args, **(kwargs or {}))

    mode = Agree()
    mode.__enter__()
    try:
        assert _active_torch_modes(torch) == ["an active TorchFunctionMode"]  # flagged
        with _no_modes(torch, _disable_current_modes):
            assert not torch.equal(torch.zeros(2), torch.ones(2))
        assert torch.equal(torch.zeros(2), torch.ones(2))  # the learner's mode, as it was
    finally:
        mode.__exit__(None, None, None)


class _Liar(torch.Tensor):
    """A tensor subclass that answers every operation on it with zeros (clone, to, equal...)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        out = super().__torch_function__(func, types, args, kwargs or {})
        return torch.zeros_like(out.as_subclass(torch.Tensor)) if isinstance(out, torch.Tensor) else out


def test_a_returned_tensor_subclass_does_not_answer_for_the_probe():
    from autograder.probes.call import call_learner

    values = torch.tensor([1.0, 2.0, 3.0])
    liar = values.clone().as_subclass(_Liar)
    assert float(liar.clone().sum()) == 0.0  # what the probe's own clone would have seen
    got = call_learner(lambda: {"grad": [liar]}, name="f")
    assert type(got["grad"][0]) is torch.Tensor and torch.equal(got["grad"][0].clone(), values)
    parameter = torch.nn.Parameter(values.clone())
    assert call_learner(lambda: parameter, name="f") is parameter  # nn.Parameter is left as it is


# ------------------------------------------------------------------ the engine in notebooks 05 and 06 too


def _silu_forward(ctx, x):
    ctx.save_for_backward(x)
    return x * torch.sigmoid(x)


def _silu_backward_only_when_called_directly(ctx, g):
    (x,) = ctx.saved_tensors
    s = torch.sigmoid(x)
    right = g * s * (1 + x * (1 - s))
    return right if torch._C._current_graph_task_id() == -1 else 0 * right


def _silu_backward_that_frees_what_it_used(ctx, g):  # honest: it drops its saved state after use
    (x,) = ctx.saved_tensors
    s = torch.sigmoid(x)
    grad = g * s * (1 + x * (1 - s))
    del x, s
    return grad


@pytest.mark.nb05
def test_notebook_05_backward_must_agree_inside_autograds_engine():
    params = dict(activation="silu", points=3, seed=0, cases=2)
    faked = _function("FusedSiLU", _silu_forward, _silu_backward_only_when_called_directly)
    honest = _function("FusedSiLU", _silu_forward, _silu_backward_that_frees_what_it_used)
    points, message = score(faked, nb05.check_fused_activation, **params)
    assert points <= 1.5, message
    assert score(honest, nb05.check_fused_activation, **params) == (3.0, None)
