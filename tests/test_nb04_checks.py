"""The checks of notebook 04 give full marks to correct answers however they are written, and take from
realistic wrong ones exactly the part meant to catch them, with the hint meant for them."""

from __future__ import annotations

import copy
import itertools
import random
import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.autograd import Function
from torch.autograd.function import once_differentiable

import autograder.nb04.judges  # noqa: E402,F401  (nb04.judges.* below)
from autograder import nb04
from autograder.feedback import CheckFailed
from autograder.judges import answers
from tests.shares import IDEAS, expected_score, ideas_lost  # noqa: E402

pytestmark = pytest.mark.nb04


@pytest.fixture(autouse=True)
def float64_by_default():
    """These tests build float64 inputs by default, as the notebook does; set for each test and put back after
    it (set at import, it leaked into every test module collected after this one)."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


_names = (f"n{i}" for i in itertools.count())


def fn(forward, backward, base=Function, **extra):
    """A Function class from forward(ctx, ...) and backward(ctx, ...)."""
    body = {"forward": staticmethod(forward), "backward": staticmethod(backward)}
    body.update({k: staticmethod(v) if callable(v) else v for k, v in extra.items()})
    return type(f"Learner{next(_names)}", (base,), body)


def run(check, obj, **params):
    """(verdict, None) when points were earned, (None, message) when none."""
    try:
        return check(obj, **params), None
    except CheckFailed as failure:  # a partly right answer fails too, carrying its verdict
        verdict = getattr(failure, "verdict", None)
        return (verdict, None) if verdict is not None and float(verdict) > 0 else (None, str(failure))


def failed_parts(verdict):
    return {p.name for p in verdict.parts if p.passed is False}


def hints(verdict):
    return " ".join(h for p in verdict.parts for h in p.hints)


# =============================================================================== references, as a learner writes them


def _cube_f(ctx, x):
    ctx.save_for_backward(x)
    return x**3


def _cube_b(ctx, g):
    (x,) = ctx.saved_tensors
    return g * 3 * x**2


def _relu_f(ctx, x):
    x.clamp_(min=0)
    ctx.mark_dirty(x)
    ctx.save_for_backward(x)
    return x


def _relu_b(ctx, g):
    (y,) = ctx.saved_tensors
    return g * (y > 0).to(g.dtype)


def _mask_f(ctx, x):
    mask = (x > 0).to(x.dtype)
    ctx.mark_non_differentiable(mask)
    ctx.save_for_backward(mask)
    return x * mask, mask


def _mask_b(ctx, g, gm):
    (mask,) = ctx.saved_tensors
    return g * mask


def _sincos_f(ctx, x):
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(x)
    return torch.sin(x), torch.cos(x)


def _sincos_b(ctx, gs, gc):
    (x,) = ctx.saved_tensors
    out = None
    if gs is not None:
        out = gs * torch.cos(x)
    if gc is not None:
        out = (0 if out is None else out) - gc * torch.sin(x)
    return out


def _tanh_f(ctx, x):
    y = torch.tanh(x)
    ctx.save_for_backward(y)
    return y


def _tanh_b(ctx, g):
    (y,) = ctx.saved_tensors
    return g * (1 - y * y)


def _sinh_f(ctx, x):
    e, en = torch.exp(x), torch.exp(-x)
    ctx.save_for_backward(e, en)
    return (e - en) / 2, e, en


def _sinh_b(ctx, g, ge, gen):
    e, en = ctx.saved_tensors
    return g * (e + en) / 2 + ge * e - gen * en


def _lin_f(ctx, x, w, b=None):
    ctx.save_for_backward(x, w)
    ctx.has_bias = b is not None
    y = x @ w.T
    return y + b if b is not None else y


def _lin_b(ctx, g):
    x, w = ctx.saved_tensors
    return g @ w, g.T @ x, (g.sum(0) if ctx.has_bias else None)


def _lin_b_reads_third_flag(ctx, g):
    x, w = ctx.saved_tensors  # right whenever a bias argument is passed, even None; apply(x, w) has two flags
    return g @ w, g.T @ x, (g.sum(0) if ctx.needs_input_grad[2] else None)


def hvp_without_create_graph(f, x, v):
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(x), x)  # no graph of the gradient: the second call has nothing to differentiate
    return torch.autograd.grad(g, x, v)[0]


def _setup_saves_output(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.save_for_forward(output)


def _jvp_returns_saved_output(ctx, t):
    (y,) = ctx.saved_tensors
    return y  # the output itself as its own tangent: outside the grader, forward-mode AD segfaults


def hvp(f, x, v):
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)
    return torch.autograd.grad(g, x, v)[0]


Cube = fn(_cube_f, _cube_b)
InplaceReLU = fn(_relu_f, _relu_b)
ReLUWithMask = fn(_mask_f, _mask_b)
SinCos = fn(_sincos_f, _sincos_b)
Tanh = fn(_tanh_f, _tanh_b)
Sinh = fn(_sinh_f, _sinh_b)
FunctionalLinear = fn(_lin_f, _lin_b)


def make_layer(Fn=None, init="kaiming", repr_text=None, bias_param=True):
    Fn = Fn or FunctionalLinear

    class LinearLayer(nn.Module):
        def __init__(self, in_features, out_features, bias=True):
            super().__init__()
            self.in_features, self.out_features = in_features, out_features
            self.weight = nn.Parameter(torch.empty(out_features, in_features))
            if bias:
                self.bias = nn.Parameter(torch.zeros(out_features)) if bias_param else torch.zeros(out_features)
            else:
                self.register_parameter("bias", None)
            if init == "kaiming":
                nn.init.kaiming_uniform_(self.weight, nonlinearity="relu")
            elif init == "randn":
                with torch.no_grad():
                    self.weight.normal_()
            elif init == "default":
                nn.init.kaiming_uniform_(self.weight, a=5**0.5)

        def forward(self, x):
            return Fn.apply(x, self.weight, self.bias)

        def extra_repr(self):
            if repr_text is not None:
                return repr_text
            return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"

    return LinearLayer


def _softplus_fwd(x):
    return F.softplus(x)


def _softplus_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.save_for_forward(inputs[0])


def _softplus_bwd(ctx, g):
    (x,) = ctx.saved_tensors
    return g * torch.sigmoid(x)


def _softplus_jvp(ctx, t):
    (x,) = ctx.saved_tensors
    return t * torch.sigmoid(x)


def modern(setup=_softplus_setup, jvp=_softplus_jvp, backward=_softplus_bwd, **extra):
    body = {
        "forward": staticmethod(_softplus_fwd),
        "setup_context": staticmethod(setup),
        "backward": staticmethod(backward),
        "jvp": staticmethod(jvp),
        "generate_vmap_rule": True,
    }
    body.update(extra)
    return type(f"Softplus{next(_names)}", (Function,), body)


Softplus = modern()


def with_vmap(rule):
    body = {
        "forward": staticmethod(_softplus_fwd),
        "setup_context": staticmethod(_softplus_setup),
        "backward": staticmethod(_softplus_bwd),
    }
    cls = type(f"SoftplusVmap{next(_names)}", (Function,), body)
    cls.vmap = staticmethod(lambda info, in_dims, x: rule(cls, info, in_dims, x))
    return cls


SoftplusVmap = with_vmap(lambda cls, info, in_dims, x: (cls.apply(x), in_dims[0]))


def custom_op(name, impl=F.softplus, fake=True, backward=_softplus_bwd, autograd=True):
    @torch.library.custom_op(f"course04_tests::{name}", mutates_args=())
    def op(x: torch.Tensor) -> torch.Tensor:
        return impl(x)

    if fake:
        op.register_fake(lambda x: torch.empty_like(x))
    if autograd:
        op.register_autograd(backward, setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))
    return op


# =============================================================================== correct answers: full marks

CHECKS = {  # name -> (check, params, reference answer)
    "cube": (nb04.check_saved_tensors, {"seed": 1, "cases": 4, "points": 2}, Cube),
    "inplace": (nb04.check_inplace, {"seed": 2, "cases": 4, "points": 3}, InplaceReLU),
    "mask": (nb04.check_non_differentiable, {"seed": 3, "cases": 4, "points": 3}, ReLUWithMask),
    "sincos": (nb04.check_materialize, {"seed": 4, "cases": 4, "points": 3}, SinCos),
    "tanh": (nb04.check_twice_differentiable, {"reference": "tanh", "seed": 5, "cases": 4, "points": 3}, Tanh),
    "hvp": (nb04.check_hvp, {"problems": ["cubic", "sin_product", "quadratic_form", "log_sum_exp"], "points": 2}, hvp),
    "sinh": (nb04.check_twice_differentiable, {"reference": "sinh", "seed": 6, "cases": 4, "points": 3}, Sinh),
    "linear": (nb04.check_functional_linear, {"seed": 7, "cases": 4, "points": 4}, FunctionalLinear),
    "layer": (nb04.check_linear_layer, {"seed": 8, "steps": 30, "lr": 0.1, "points": 3}, make_layer()),
    "softplus": (nb04.check_modern, {"seed": 9, "cases": 4, "points": 3}, Softplus),
    "vmap": (nb04.check_modern, {"seed": 10, "cases": 4, "hand_written_vmap": True, "points": 2}, SoftplusVmap),
    "op": (nb04.check_custom_op, {"seed": 11, "cases": 2, "points": 4}, custom_op("reference")),
}


@pytest.mark.parametrize("name", list(CHECKS))
def test_reference_answers_get_full_marks(name):
    check, params, answer = CHECKS[name]
    verdict, message = run(check, answer, **params)
    assert message is None, message
    assert float(verdict) == params["points"], verdict.report()


# Correct, but written differently from the reference.
def _cube_b_mul(ctx, g):
    (x,) = ctx.saved_tensors
    return 3 * g * x * x


def _relu_f_masked(ctx, x):
    x[x < 0] = 0
    ctx.mark_dirty(x)
    ctx.save_for_backward(x)
    return x


def _relu_b_where(ctx, g):
    (y,) = ctx.saved_tensors
    return torch.where(y > 0, g, torch.zeros_like(g))


def _mask_f_where(ctx, x):
    mask = torch.where(x > 0, torch.ones_like(x), torch.zeros_like(x))
    ctx.mark_non_differentiable(mask)
    ctx.save_for_backward(x)
    return torch.relu(x), mask


def _mask_b_from_input(ctx, g, gm):
    (x,) = ctx.saved_tensors
    return g * (x > 0)


def _sincos_b_list(ctx, gs, gc):
    (x,) = ctx.saved_tensors
    terms = []
    if gs is not None:
        terms.append(gs * x.cos())
    if gc is not None:
        terms.append(-(gc * x.sin()))
    return sum(terms[1:], terms[0]) if terms else None


def _tanh_b_sech(ctx, g):
    (y,) = ctx.saved_tensors
    return g - g * y.pow(2)


def _sinh_b_cosh_recomputed(ctx, g, ge, gen):
    e, en = ctx.saved_tensors
    return g * 0.5 * e + g * 0.5 * en + ge * e + gen * (-en)


def _lin_f_einsum(ctx, x, w, b=None):
    ctx.save_for_backward(x, w, b)
    y = torch.einsum("bi,oi->bo", x, w)
    return y if b is None else y + b


def _lin_b_einsum(ctx, g):
    x, w, b = ctx.saved_tensors
    gx = torch.einsum("bo,oi->bi", g, w) if ctx.needs_input_grad[0] else None
    gw = torch.einsum("bo,bi->oi", g, x) if ctx.needs_input_grad[1] else None
    gb = g.sum(dim=0) if b is not None and ctx.needs_input_grad[2] else None
    return gx, gw, gb


def _lin_b_broadcast_then_sum(ctx, g):
    # the seed's broadcasting, with the batch sum done here: right shapes, right values
    x, w = ctx.saved_tensors
    return (
        (g.unsqueeze(-1) * w.unsqueeze(0)).sum(1),
        (g.unsqueeze(-1) * x.unsqueeze(-2)).sum(0),
        g.sum(0) if ctx.has_bias else None,
    )


def hvp_functional(f, x, v):
    return torch.autograd.functional.vhp(f, x.detach(), v)[1]  # symmetric Hessian: vᵀH = Hv


def hvp_dot(f, x, v):
    x = x.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(f(x), [x], create_graph=True)
    return torch.autograd.grad((g * v).sum(), x)[0].detach()


def _setup_both(ctx, inputs, output):
    (x,) = inputs
    s = torch.sigmoid(x)
    ctx.save_for_backward(s)
    ctx.save_for_forward(s)


def _bwd_from_sigmoid(ctx, g):
    (s,) = ctx.saved_tensors
    return g * s


def _jvp_from_sigmoid(ctx, t):
    (s,) = ctx.saved_tensors
    return s * t


def _vmap_moving(cls, info, in_dims, x):
    x = x.movedim(in_dims[0], 0)
    return cls.apply(x), 0


DIFFERENT = [
    ("cube", fn(_cube_f, _cube_b_mul)),
    ("inplace", fn(_relu_f_masked, _relu_b_where)),
    ("mask", fn(_mask_f_where, _mask_b_from_input)),
    ("sincos", fn(_sincos_f, _sincos_b_list)),
    ("tanh", fn(_tanh_f, _tanh_b_sech)),
    ("sinh", fn(_sinh_f, _sinh_b_cosh_recomputed)),
    ("linear", fn(_lin_f_einsum, _lin_b_einsum)),
    ("linear", fn(_lin_f, _lin_b_broadcast_then_sum)),
    ("hvp", hvp_functional),
    ("hvp", hvp_dot),
    ("layer", make_layer(fn(_lin_f_einsum, _lin_b_einsum))),
    ("softplus", modern(setup=_setup_both, backward=_bwd_from_sigmoid, jvp=_jvp_from_sigmoid)),
    ("vmap", with_vmap(_vmap_moving)),
    ("op", custom_op("different", impl=lambda x: torch.log1p(torch.exp(x)), backward=_softplus_bwd)),
]


@pytest.mark.parametrize("name, answer", DIFFERENT, ids=[f"{n}-{i}" for i, (n, _) in enumerate(DIFFERENT)])
def test_correct_answers_written_differently_get_full_marks(name, answer):
    check, params, _ = CHECKS[name]
    verdict, message = run(check, answer, **params)
    assert message is None, message
    assert float(verdict) == params["points"], verdict.report()


# =============================================================================== wrong answers: the catalogue
# (name, answer, the part that must fail, a phrase of the hint it must get). Every other part must pass.


def _cube_f_attribute(ctx, x):
    ctx.x = x
    return x**3


def _cube_b_attribute(ctx, g):
    return g * 3 * ctx.x**2


def _cube_f_copy(ctx, x):
    ctx.save_for_backward(x.clone())
    return x**3


def _relu_f_clone(ctx, x):
    y = x.clamp(min=0)
    ctx.save_for_backward(y)
    return y


def _relu_f_unmarked(ctx, x):
    x.clamp_(min=0)
    ctx.save_for_backward(x)
    return x


def _relu_b_pass_through(ctx, g):
    return g.clone()


def _mask_f_unmarked(ctx, x):
    mask = (x > 0).to(x.dtype)
    ctx.save_for_backward(mask)
    return x * mask, mask


def _mask_f_bool(ctx, x):
    mask = x > 0
    ctx.save_for_backward(mask)
    return x * mask, mask


def _mask_b_bool(ctx, g, gm):
    (mask,) = ctx.saved_tensors
    return g * mask


def _sincos_b_sign_slip(ctx, gs, gc):
    (x,) = ctx.saved_tensors
    out = None
    if gs is not None:
        out = gs * torch.cos(x)
    if gc is not None:
        out = (0 if out is None else out) + gc * torch.sin(x)  # d cos/dx taken as +sin x
    return out


def _sincos_f_materialized(ctx, x):
    ctx.save_for_backward(x)
    return torch.sin(x), torch.cos(x)


def _sincos_b_naive(ctx, gs, gc):
    (x,) = ctx.saved_tensors
    return gs * torch.cos(x) - gc * torch.sin(x)


def _tanh_f_input(ctx, x):
    ctx.save_for_backward(x)
    return torch.tanh(x)


def _tanh_b_detached(ctx, g):
    (x,) = ctx.saved_tensors
    y = torch.tanh(x).detach()
    return g * (1 - y * y)


@once_differentiable
def _tanh_b_once(ctx, g):
    (y,) = ctx.saved_tensors
    return g * (1 - y * y)


def _sinh_b_ignores_extra(ctx, g, ge, gen):
    e, en = ctx.saved_tensors
    return g * (e + en) / 2


def _lin_f_seed(ctx, x, w, b=None):
    ctx.save_for_backward(x, w)
    ctx.has_bias = b is not None
    out = (w.unsqueeze(0) * x.unsqueeze(1)).sum(-1)
    return out + b.unsqueeze(0) if b is not None else out


def _lin_b_seed(ctx, g):
    x, w = ctx.saved_tensors
    return (
        (g.unsqueeze(-1) * w.unsqueeze(0)).sum(1),
        g.unsqueeze(-1) * x.unsqueeze(-2),
        g.clone() if ctx.has_bias else None,
    )


def _lin_b_bias_per_sample(ctx, g):
    x, w = ctx.saved_tensors
    return g @ w, g.T @ x, (g.clone() if ctx.has_bias else None)


def _lin_b_always_bias(ctx, g):
    x, w = ctx.saved_tensors
    return g @ w, g.T @ x, g.sum(0)


def _lin_b_transposed_input(ctx, g):
    x, w = ctx.saved_tensors
    return g @ w.T if w.shape[0] == w.shape[1] else g @ w, g.T @ x, (g.sum(0) if ctx.has_bias else None)


def hvp_gradient_only(f, x, v):
    x = x.detach().requires_grad_()
    return torch.autograd.grad(f(x), x)[0]


def _setup_backward_only(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _jvp_identity(ctx, t):
    return t.clone()


def _vmap_zero(cls, info, in_dims, x):
    return cls.apply(x), 0


def _softplus_bwd_wrong(ctx, g):
    (x,) = ctx.saved_tensors
    return g * torch.sigmoid(-x)


CATALOGUE = [
    (
        "cube: tensor kept as a ctx attribute",
        "cube",
        fn(_cube_f_attribute, _cube_b_attribute),
        "version_counter",
        "save_for_backward",
    ),
    ("cube: saves a copy of x", "cube", fn(_cube_f_copy, _cube_b), "version_counter", "not a copy"),
    ("inplace: out-of-place ReLU", "inplace", fn(_relu_f_clone, _relu_b), "in_place", "change x itself"),
    (
        "inplace: no mark_dirty",
        "inplace",
        fn(_relu_f_unmarked, _relu_b),
        "mark_dirty",
        "which input it changed in place",
    ),
    (
        "inplace: backward lets everything through",
        "inplace",
        fn(_relu_f, _relu_b_pass_through),
        "values",
        "0 where x was negative",
    ),
    (
        "mask: not marked non-differentiable",
        "mask",
        fn(_mask_f_unmarked, _mask_b),
        "non_differentiable",
        "mark_non_differentiable",
    ),
    ("mask: bool mask", "mask", fn(_mask_f_bool, _mask_b_bool), "mask_dtype", "x.dtype"),
    (
        "sincos: materialising (default)",
        "sincos",
        fn(_sincos_f_materialized, _sincos_b),
        "materialize",
        "unless forward tells it not to",
    ),
    (
        "sincos: a sign slip in d cos/dx (None handled right: one part lost, not two)",
        "sincos",
        fn(_sincos_f, _sincos_b_sign_slip),
        "values",
        "d cos/dx = -sin x",
    ),
    ("sincos: backward does not handle None", "sincos", fn(_sincos_f, _sincos_b_naive), "none_grads", "None"),
    (
        "tanh: detached recomputation in backward",
        "tanh",
        fn(_tanh_f_input, _tanh_b_detached),
        "second_derivatives",
        "detached",
    ),
    ("tanh: once_differentiable", "tanh", fn(_tanh_f, _tanh_b_once), "second_derivatives", "once_differentiable"),
    (
        "sinh: ignores the extra outputs' gradients",
        "sinh",
        fn(_sinh_f, _sinh_b_ignores_extra),
        "intermediates",
        "extra outputs",
    ),
    (
        "linear: the seed's per-sample gradients",
        "linear",
        fn(_lin_f_seed, _lin_b_seed),
        "parameter_shapes",
        "one gradient per sample",
    ),
    (
        "linear: per-sample bias gradient",
        "linear",
        fn(_lin_f, _lin_b_bias_per_sample),
        "parameter_shapes",
        "one gradient per sample",
    ),
    (
        "linear: a bias gradient when there is no bias",
        "linear",
        fn(_lin_f, _lin_b_always_bias),
        {"parameter_shapes", "gradients"},
        "return None",
    ),  # autograd itself refuses it, so the gradients fail too
    (
        "linear: needs_input_grad[2] read when apply had two arguments",
        "linear",
        fn(_lin_f, _lin_b_reads_third_flag),
        "gradients",
        "ctx.needs_input_grad then has two entries",
    ),
    ("hvp: returns the gradient", "hvp", hvp_gradient_only, "values", "not the Hessian-vector product"),
    ("layer: randn initialisation", "layer", make_layer(init="randn"), "initialisation", "standard normal"),
    (
        "layer: nn.Linear's default initialisation",
        "layer",
        make_layer(init="default"),
        "initialisation",
        "nn.Linear's default",
    ),
    ("layer: bias not a Parameter", "layer", make_layer(bias_param=False), "parameters", "nn.Parameter"),
    ("layer: no extra_repr text", "layer", make_layer(repr_text=""), "extra_repr", None),
    (
        "softplus: saved for backward only",
        "softplus",
        modern(setup=_setup_backward_only),
        "forward_mode",
        "saved for forward mode",
    ),
    (
        "softplus: jvp returns the saved output",
        "softplus",
        modern(setup=_setup_saves_output, jvp=_jvp_returns_saved_output),
        "forward_mode",
        "its own tangent",
    ),
    ("softplus: jvp returns the tangent", "softplus", modern(jvp=_jvp_identity), "forward_mode", "derivative"),
    ("vmap: out_dims always 0", "vmap", with_vmap(_vmap_zero), "vmap", "stays where the input's was"),
    ("op: no register_fake", "op", custom_op("nofake", fake=False), "opcheck", "fake implementation"),
    ("op: wrong backward", "op", custom_op("wrongbwd", backward=_softplus_bwd_wrong), "values", None),
]


@pytest.mark.parametrize("label, name, answer, part, hint", CATALOGUE, ids=[c[0] for c in CATALOGUE])
def test_wrong_answers_lose_their_part_with_their_hint(label, name, answer, part, hint):
    check, params, _ = CHECKS[name]
    verdict, message = run(check, answer, **params)
    if name == "hvp":  # a one-part check: a wrong answer earns nothing, says why
        assert verdict is None and (hint is None or hint in message), message
        return
    assert message is None, f"{label}: lost every point instead of only '{part}':\n{message}"
    lost = failed_parts(verdict)
    expected = part if isinstance(part, set) else {part}
    # One mistake, one idea's share: where a mistake shows in a second part too, the report shows both parts
    # failing and the score counts the idea once.
    shown = {
        ("op", "opcheck"): {"opcheck", "compile"},  # without a fake, compiling fails too: the same missing piece
        ("op", "values"): {"values", "compile"},  # compiled, the op runs the same wrong backward
        ("layer", "parameters"): {"parameters", "training"},  # a bias that is not a Parameter is never trained
        ("sinh", "intermediates"): {"intermediates", "second_derivatives"},  # double backward uses those gradients
    }.get((name, str(part)), expected)
    assert lost == shown, f"{label}: expected to lose only {shown}:\n{verdict.report()}"
    assert float(verdict) == expected_score(name, params["points"], expected), (
        f"{label}: {sorted(expected)} should cost {ideas_lost(expected)} of {IDEAS[name]} equal shares\n"
        f"{verdict.report()}"
    )
    if hint:
        assert hint in hints(verdict), f"{label}: missing hint '{hint}':\n{verdict.report()}"


def test_catalogue_is_large_enough():
    assert len(CATALOGUE) >= 15 and len(DIFFERENT) >= 6


# =============================================================================== blank answers, and what fails loudly


def _blank(*args, **kwargs):
    raise NotImplementedError()


BLANKS = {
    "cube": fn(_blank, _blank),
    "inplace": fn(_blank, _blank),
    "mask": fn(_blank, _blank),
    "sincos": fn(_blank, _blank),
    "tanh": fn(_blank, _blank),
    "sinh": fn(_blank, _blank),
    "linear": fn(_blank, _blank),
    "hvp": _blank,
    "softplus": modern(setup=_blank, jvp=_blank, backward=_blank),
    "vmap": with_vmap(lambda cls, info, in_dims, x: _blank()),
}


@pytest.mark.parametrize("name", list(BLANKS))
def test_blank_answers_say_what_to_do(name):
    check, params, _ = CHECKS[name]
    if name == "softplus":  # forward is given in the blank of the test, setup_context is not
        pass
    verdict, message = run(check, BLANKS[name], **params)
    assert verdict is None and "not written yet" in message, message


def test_blank_layer_says_what_to_do():
    class Blank(nn.Module):
        def __init__(self, in_features, out_features, bias=True):
            super().__init__()
            raise NotImplementedError()

    _, message = run(nb04.check_linear_layer, Blank, seed=0, points=3)
    assert "not written yet" in message


def test_blank_custom_op_says_what_to_do():
    _, message = run(
        nb04.check_custom_op, custom_op("blank", impl=_blank, fake=False, autograd=False), seed=0, cases=1, points=4
    )
    assert "not written yet" in message


def test_not_a_function_class_is_named():
    _, message = run(nb04.check_saved_tensors, Cube.apply, seed=0, points=2)
    assert "subclass of torch.autograd.Function" in message


# ============================================================================== the judges accept only complete answers


@pytest.mark.parametrize("name", ["cube", "inplace", "mask", "sincos", "tanh", "linear"])
def test_judge_refuses_data_for_other_cases(name):
    check, params, answer = CHECKS[name]
    data = check.probe(answer, **params)
    with pytest.raises(CheckFailed):
        check.judge(data[:-1], **params)
    assert float(check.judge(data, **params)) == params["points"]


def test_judge_refuses_data_for_other_seed():
    check, params, answer = CHECKS["cube"]
    data = check.probe(answer, **{**params, "seed": params["seed"] + 1})
    verdict = check.judge(data, **params)  # other inputs' values: the values part fails
    assert "values" in failed_parts(verdict) and float(verdict) < params["points"]


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.floats(0.5, 2.0).filter(lambda s: abs(s - 1) > 1e-3))
def test_any_scaled_gradient_loses_the_values_part(seed, scale):
    def wrong_b(ctx, g):
        (x,) = ctx.saved_tensors
        return scale * g * 3 * x**2

    verdict, message = run(nb04.check_saved_tensors, fn(_cube_f, wrong_b), seed=seed, points=2)
    assert message is None and failed_parts(verdict) == {"values"}


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_linear_references_agree_with_nn_functional(seed):
    """Property: on any seed, the reference FunctionalLinear gets full marks (inputs of every case shape)."""
    verdict, message = run(nb04.check_functional_linear, FunctionalLinear, seed=seed, cases=4, points=4)
    assert message is None and float(verdict) == 4


# =============================================================================== odd answers get a clear message


def _returns_number(ctx, x):
    return 1.0


def _returns_one_output(ctx, x):
    return torch.sin(x)


@pytest.mark.parametrize(
    "check_name, answer, words",
    [
        ("cube", fn(_returns_number, _cube_b), "should return 1 tensor"),
        ("sincos", fn(_returns_one_output, _sincos_b), "should return 2 tensor"),
        ("cube", Cube(), "subclass of torch.autograd.Function"),
        ("layer", FunctionalLinear, "subclass of torch.nn.Module"),
        ("op", F.softplus, "CustomOpDef"),
    ],
)
def test_odd_answers_are_named(check_name, answer, words):
    check, params, _ = CHECKS[check_name]
    verdict, message = run(check, answer, **params)
    assert verdict is None and words in message, message


def test_a_crashing_backward_is_reported_as_data_not_a_crash():
    def crashing(ctx, g):
        raise ValueError("boom")

    verdict, message = run(nb04.check_saved_tensors, fn(_cube_f, crashing), seed=0, points=2)
    assert verdict is None and "boom" in message


# =============================================================================== forged probe data: answers.MISMATCH
# A judge reads the probe's data as untrusted: missing, empty, extra or mistyped data fails with answers.MISMATCH
# (never a pass, never a crash), for every form the nb04 probes write (a list of cases; a dict with its cases;
# LinearLayer's one dict).

MISMATCH_START = answers.MISMATCH.split("(")[0]


@pytest.fixture(scope="module")
def honest_data():
    cache = {}

    def data(name):
        if name not in cache:
            check, params, answer = CHECKS[name]
            cache[name] = check.probe(answer, **params)
        return copy.deepcopy(cache[name])

    return data


def _first(value, kind):
    """(container, key) of the first value of this type inside nested dicts and lists, or None."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(item, kind) and not (kind is int and isinstance(item, bool)):
            return value, key
        found = _first(item, kind)
        if found:
            return found
    return None


def _entry_forgeries(entry: dict):
    """Ways to spoil one entry (a dict): a key missing, a key added, a tensor/flag/string of the wrong type."""

    def spoil(change):
        forged = copy.deepcopy(entry)
        change(forged)
        return forged

    yield "a key missing", spoil(lambda e: e.pop(next(iter(e))))
    yield "a key added", spoil(lambda e: e.__setitem__("extra", 1.0))
    for kind, label, replace in (
        (torch.Tensor, "a tensor as a list", lambda t: t.tolist()),
        (bool, "a flag as a number", lambda b: int(b)),
        (str, "a string as a number", lambda s: 0.0),
    ):

        def change(e, kind=kind, replace=replace):
            container, key = _first(e, kind)
            container[key] = replace(container[key])

        if _first(entry, kind):
            yield label, spoil(change)


def _forgeries(data):
    yield "None", None
    yield "a string", "ok"
    yield "a number", 1.0
    cases = data if isinstance(data, list) else data.get("cases")
    if isinstance(data, dict):
        yield "the top level with a key missing", {k: v for k, v in list(data.items())[1:]}
        yield "the top level with a key added", {**data, "extra": 0}
        yield "a list instead of the dict", [data]
    else:
        yield "a dict instead of the list", {"cases": data}
    if isinstance(cases, list):

        def with_cases(items):
            return items if isinstance(data, list) else {**data, "cases": items}

        yield "one case missing", with_cases(cases[:-1])
        yield "no cases", with_cases([])
        yield "an extra case", with_cases(cases + [copy.deepcopy(cases[-1])])
        yield "a case of None", with_cases([None] + cases[1:])
        for label, entry in _entry_forgeries(cases[-1]):
            yield f"the last case with {label}", with_cases(cases[:-1] + [entry])
    else:
        yield from _entry_forgeries(data)


@pytest.mark.parametrize("name", list(CHECKS))
def test_judges_refuse_missing_empty_extra_or_mistyped_data(name, honest_data):
    check, params, _ = CHECKS[name]
    assert float(check.judge(honest_data(name), **params)) == params["points"]  # the honest data passes
    forged = list(_forgeries(honest_data(name)))
    assert len(forged) >= 8
    for label, data in forged:
        with pytest.raises(CheckFailed) as failure:
            check.judge(data, **params)
        assert str(failure.value).startswith(MISMATCH_START), f"{name}, {label}: {failure.value}"


@pytest.mark.parametrize(
    "name, spoil",
    [
        ("sincos", lambda d: d[0]["calls"]["both"].update(returned={"kind": "tensor"})),  # a summary cut short
        ("sincos", lambda d: d[0]["calls"].pop("neither")),
        ("sincos", lambda d: d[0].update(received_when_sin_only="tensor")),
        ("tanh", lambda d: d[0]["outputs"].append(d[0]["outputs"][0])),  # an output too many
        ("sinh", lambda d: d[0]["outputs"].pop()),
        ("linear", lambda d: d[0]["grads"].pop()),  # a gradient missing
        ("linear", lambda d: d[0]["returned"][0].update(kind="tensor ")),
        ("layer", lambda d: d["losses"].append("nan")),
        ("layer", lambda d: d.update(parameters={"weight": {"shape": [2, 3]}})),
        ("layer", lambda d: d.update(grad_shapes=[[2, 3]])),
        ("softplus", lambda d: d["cases"][0]["vmap"].update({"in_dims=0": {"value": [1.0]}})),
        ("softplus", lambda d: d["cases"][0].update(gradcheck_forward_ad=1)),
        ("vmap", lambda d: d.pop("vmap_defined")),
        ("op", lambda d: d["cases"][0].pop("compiled")),  # the compiled run missing
        ("op", lambda d: d["cases"][0]["opcheck"].update(test_schema=True)),
        ("hvp", lambda d: d[0].update(hvp=d[0]["hvp"].tolist())),
    ],
)
def test_judges_refuse_data_spoiled_deep_inside(name, spoil, honest_data):
    check, params, _ = CHECKS[name]
    data = honest_data(name)
    spoil(data)
    with pytest.raises(CheckFailed, match="^" + re.escape(MISMATCH_START)):
        check.judge(data, **params)


# =============================================================================== hidden cases: drawn

DRAWN = {  # name -> (the test cell's fixed params, draw)
    "cube": ({"points": 2}, 4),
    "inplace": ({"points": 3}, 4),
    "mask": ({"points": 3}, 4),
    "sincos": ({"points": 3}, 4),
    "tanh": ({"reference": "tanh", "points": 3}, 4),
    "hvp": ({"points": 2}, 4),
    "sinh": ({"reference": "sinh", "points": 3}, 4),
    "linear": ({"points": 4}, 4),
    "layer": ({"points": 3}, 1),
    "softplus": ({"points": 3}, 4),
    "vmap": ({"hand_written_vmap": True, "points": 2}, 4),
    "op": ({"points": 4}, 2),
}


@pytest.mark.parametrize("name", list(DRAWN))
def test_reference_answers_get_full_marks_on_drawn_cases(name):
    check, _, answer = CHECKS[name]
    fixed, count = DRAWN[name]
    for k in range(2 if name != "op" else 1):
        params = check.drawn({**fixed, "draw": count}, random.Random(f"nb04/{name}/{k}"))
        assert "draw" not in params and params != fixed
        verdict, message = run(check, answer, **params)
        assert message is None, f"{params}: {message}"
        assert float(verdict) == params["points"], f"{params}:\n{verdict.report()}"


def test_drawers_cover_what_the_visible_tests_do_not():
    rng = random.Random(4)
    elementwise = [nb04.judges.common.draw_elementwise_cases(rng, 4) for _ in range(20)]
    assert all(len(d["cases"]) == 4 and [] in d["cases"] for d in elementwise)  # a 0-dimensional tensor each time
    assert len({d["seed"] for d in elementwise}) == 20
    linear = [nb04.judges.common.draw_linear_cases(rng, 4)["cases"] for _ in range(20)]
    assert all(any(i == o and b != i for b, i, o, _ in cases) for cases in linear)  # a square weight, batch != in
    assert all(any(b == 1 for b, *_ in cases) for cases in linear)
    hvp_draws = [nb04.judges.common.draw_hvp_problems(rng, 4) for _ in range(20)]
    assert {n for d in hvp_draws for n in d["problems"]} == set(nb04.cases.HVP_PROBLEMS)
    assert len({d["size"] for d in hvp_draws}) > 1
    layers = [nb04.judges.common.draw_layer_training(rng, 1) for _ in range(20)]
    assert len({tuple(d["features"]) for d in layers}) > 1


@pytest.mark.parametrize(
    "label, name, answer, part",
    [
        ("linear: per-sample bias gradient", "linear", fn(_lin_f, _lin_b_bias_per_sample), "parameter_shapes"),
        ("linear: the seed's per-sample gradients", "linear", fn(_lin_f_seed, _lin_b_seed), "parameter_shapes"),
        ("inplace: no mark_dirty", "inplace", fn(_relu_f_unmarked, _relu_b), "mark_dirty"),
        ("tanh: once_differentiable", "tanh", fn(_tanh_f, _tanh_b_once), "second_derivatives"),
        ("mask: not marked non-differentiable", "mask", fn(_mask_f_unmarked, _mask_b), "non_differentiable"),
    ],
)
def test_wrong_answers_lose_their_part_on_drawn_cases(label, name, answer, part):
    """The demo's partly-wrong learner loses the same parts in the hidden tests as in the visible ones."""
    check, _, _ = CHECKS[name]
    fixed, count = DRAWN[name]
    for k in range(3):
        params = check.drawn({**fixed, "draw": count}, random.Random(f"nb04/wrong/{name}/{k}"))
        verdict, message = run(check, answer, **params)
        assert message is None and failed_parts(verdict) == {part}, message or verdict.report()


# ==================================================================== by hand: a backward handed to autograd is flagged

_TANH_BY_AUTOGRAD = '''import torch

class Tanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.tanh(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            x = x.detach().requires_grad_()
            return torch.autograd.grad(torch.tanh(x), x, g, create_graph=True)
'''


def test_a_backward_handed_to_autograd_is_flagged_and_the_hvp_is_not():
    """The Function exercises are registered by_hand (their backward is the learner's formula); the
    Hessian-vector product is autograd's own job, so its answer cell (torch.autograd.grad) is not flagged."""
    import nbformat

    from autograder.coursedir import SOLUTIONS
    from autograder.grading.screen import screen
    from autograder.grading.spec import NotebookSpec
    from autograder.registry import CHECKS as REGISTERED

    path = SOLUTIONS / "04-ctx-toolbox" / "ctx_toolbox.ipynb"
    nb = nbformat.read(path, as_version=4)
    spec = NotebookSpec.from_release(nb)
    assert screen(nb, spec, REGISTERED) == []
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "tanh":
            cell.source = _TANH_BY_AUTOGRAD
    flags = screen(nb, spec, REGISTERED)
    assert [f.code for f in flags] == ["by_hand_with_autograd"] and "test_tanh" in flags[0].detail, flags
    assert [name for name in nb04.__all__ if REGISTERED[name].by_hand is False] == ["check_hvp", "check_linear_layer"]


@settings(max_examples=10, deadline=None)
@given(key=st.integers(0, 2**32), count=st.integers(1, 6))
def test_any_drawn_cases_give_the_references_full_marks(key, count):
    """Property: whatever the grader's secret and the submission draw, the references get full marks."""
    for name in ("cube", "inplace", "linear"):
        check, _, answer = CHECKS[name]
        params = check.drawn({**DRAWN[name][0], "draw": count}, random.Random(key))
        verdict, message = run(check, answer, **params)
        assert message is None and float(verdict) == params["points"], message or verdict.report()


def test_an_hvp_whose_gradient_has_no_graph_gets_the_idea_as_a_hint():
    check, params, _ = CHECKS["hvp"]
    verdict, message = run(check, hvp_without_create_graph, **params)
    assert verdict is None and "does not require grad" in message, message
    assert "must itself have been recorded as a graph" in message and "create_graph" not in message.split("Hint")[1]
