"""The checks of notebook 03 give full marks to correct Functions however they are written, and take
points from realistic wrong ones on the part that should catch them, with the hint meant for them."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.autograd import Function

from autograder import nb03
from autograder.feedback import CheckFailed
from autograder.judges.verdict import PART_TITLES
from autograder.probes.function import probe_function
from autograder.probes.function_cases import case_args, inputs_for
from autograder.probes.torch_errors import translate
from autograder.registry import CHECKS
from tests.shares import IDEAS, expected_score, ideas_lost

pytestmark = pytest.mark.nb03


def fn(name, forward, backward):
    """A Function class from a forward(ctx, *args) and a backward(ctx, *grads)."""
    return type(name, (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})


def run(F, reference, **params):
    """(verdict or None, message): the verdict when some points were earned, the message when none."""
    params = {"points": 5, "seed": 0, **params}
    try:
        return nb03.check_function(F, reference=reference, **params), None
    except CheckFailed as failure:  # a partly right answer fails too, carrying its verdict
        verdict = getattr(failure, "verdict", None)
        return (verdict, None) if verdict is not None and float(verdict) > 0 else (None, str(failure))


def part(verdict, name):
    return next(p for p in verdict.parts if p.name == name)


# --------------------------------------------------------------------------- correct answers (the solution's)


def _save(ctx, *ts):
    ctx.save_for_backward(*ts)


def _mul_f(ctx, a, b):
    _save(ctx, a, b)
    return a * b


def _mul_b(ctx, g):
    a, b = ctx.saved_tensors
    return g * b, g * a


def _exp_f(ctx, x):
    y = torch.exp(x)
    _save(ctx, y)
    return y


def _exp_b(ctx, g):
    (y,) = ctx.saved_tensors
    return g * y


def _lin_f(ctx, x, W, b=None):
    _save(ctx, x, W)
    ctx.has_bias = b is not None
    y = x @ W
    return y + b if b is not None else y


def _lin_b(ctx, g):
    x, W = ctx.saved_tensors
    gx = g @ W.T if ctx.needs_input_grad[0] else None
    gW = x.T @ g if ctx.needs_input_grad[1] else None
    gb = g.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
    return gx, gW, gb


def _lin_b_from(grad_x, grad_W, grad_b=lambda g: g.sum(0)):
    """A LinearFunction backward with one mistake in a formula, needs_input_grad and the bias handled right."""

    def backward(ctx, g):
        x, W = ctx.saved_tensors
        return (
            grad_x(g, x, W) if ctx.needs_input_grad[0] else None,
            grad_W(g, x, W) if ctx.needs_input_grad[1] else None,
            grad_b(g) if ctx.has_bias and ctx.needs_input_grad[2] else None,
        )

    return backward


def _kill_f(ctx, x, n):
    ctx.n = n
    y = x.clone()
    y[:, :n] = 0
    return y


def _kill_b(ctx, g):
    gx = g.clone()
    gx[:, : ctx.n] = 0
    return gx, None


def _abs_f(ctx, u, v):
    _save(ctx, u, v)
    return torch.abs(u * v)


def _abs_b(ctx, g):
    u, v = ctx.saved_tensors
    s = torch.sign(u * v)
    return g * s * v, g * s * u


def _lse_f(ctx, x):
    _save(ctx, x)
    return torch.logsumexp(x, dim=1)


def _lse_numeric(x, h=1e-6, one_sided=False):
    grad = torch.empty_like(x)
    for j in range(x.shape[1]):
        e = torch.zeros_like(x)
        e[:, j] = h
        if one_sided:
            grad[:, j] = (torch.logsumexp(x + e, 1) - torch.logsumexp(x, 1)) / h
        else:
            grad[:, j] = (torch.logsumexp(x + e, 1) - torch.logsumexp(x - e, 1)) / (2 * h)
    return grad


def _lse_b(ctx, g):
    (x,) = ctx.saved_tensors
    return _lse_numeric(x) * g[:, None]


Mul = fn("MulFunction", _mul_f, _mul_b)
Exp = fn("Exp", _exp_f, _exp_b)
Linear = fn("LinearFunction", _lin_f, _lin_b)
KillHead = fn("KillHead", _kill_f, _kill_b)
AbsProduct = fn("AbsProduct", _abs_f, _abs_b)
NumLSE = fn("NumericalLogSumExp", _lse_f, _lse_b)

CORRECT = [
    (Mul, "mul", 4),
    (Exp, "exp", 4),
    (Linear, "linear", 5),
    (KillHead, "kill_head", 4),
    (AbsProduct, "abs_product", 4),
    (NumLSE, "numerical_logsumexp", 4),
]


@pytest.mark.parametrize("F, reference, cases", CORRECT, ids=[c[1] for c in CORRECT])
def test_solutions_get_full_marks(F, reference, cases):
    verdict, message = run(F, reference, cases=cases, double_backward=True)
    assert message is None, message
    assert float(verdict) == 5 and verdict.passed, verdict.report()


# --------------------------------------------------------------------------- correct, written differently


def _mul_attr_f(ctx, a, b):  # keeps the inputs as attributes, not saved tensors
    ctx.a, ctx.b = a, b
    return torch.mul(a, b)


def _mul_attr_b(ctx, g):
    return torch.mul(ctx.b, g), torch.mul(g, ctx.a)


def _exp_b_alt(ctx, g):  # torch.mul, and an explicit tuple
    (y,) = ctx.saved_tensors
    return (torch.mul(y, g),)


def _lin_einsum_b(ctx, g):  # einsum, ones-vector bias sum, and trailing None handled by one return
    x, W = ctx.saved_tensors
    out = [None, None, None]
    if ctx.needs_input_grad[0]:
        out[0] = torch.einsum("no,io->ni", g, W)
    if ctx.needs_input_grad[1]:
        out[1] = torch.einsum("ni,no->io", x, g)
    if ctx.has_bias and ctx.needs_input_grad[2]:
        out[2] = torch.ones(g.shape[0], dtype=g.dtype) @ g
    return tuple(out)


def _lin_f_functional(ctx, x, W, b=None):
    _save(ctx, x, W)
    ctx.has_bias = b is not None
    return torch.nn.functional.linear(x, W.T, b)


def _kill_mask_f(ctx, x, n):  # a mask instead of indexing; the mask saved as a tensor
    keep = (torch.arange(x.shape[1]) >= n).to(x.dtype)
    ctx.save_for_backward(keep)
    return x * keep


def _kill_mask_b(ctx, g):
    (keep,) = ctx.saved_tensors
    return g * keep, None


def _abs_prod_f(ctx, u, v):  # saves the product only, and the inputs
    p = u * v
    ctx.save_for_backward(u, v, p)
    return p.abs()


def _abs_prod_b(ctx, g):  # d|p|/dp = p / |p| away from 0
    u, v, p = ctx.saved_tensors
    s = p / p.abs()
    return g * s * v, g * s * u


def _lse_vector_b(ctx, g):  # one perturbation per entry: 2 x numel evaluations
    (x,) = ctx.saved_tensors
    h = 1e-6
    grad = torch.zeros_like(x)
    for k in range(x.numel()):
        e = torch.zeros_like(x).view(-1)
        e[k] = h
        e = e.view_as(x)
        grad += ((torch.logsumexp(x + e, 1) - torch.logsumexp(x - e, 1)) / (2 * h) * g).sum() * (e / h)
    return grad


ALTERNATIVES = [
    (fn("MulFunction", _mul_attr_f, _mul_attr_b), "mul"),
    (fn("Exp", _exp_f, _exp_b_alt), "exp"),
    (fn("LinearFunction", _lin_f, _lin_einsum_b), "linear"),
    (fn("LinearFunction", _lin_f_functional, _lin_b), "linear"),
    (fn("KillHead", _kill_mask_f, _kill_mask_b), "kill_head"),
    (fn("AbsProduct", _abs_prod_f, _abs_prod_b), "abs_product"),
    (fn("NumericalLogSumExp", _lse_f, _lse_vector_b), "numerical_logsumexp"),
]


@pytest.mark.parametrize("F, reference", ALTERNATIVES, ids=[f"{r}-{i}" for i, (_, r) in enumerate(ALTERNATIVES)])
def test_correct_alternatives_get_full_marks(F, reference):
    verdict, message = run(F, reference, cases=4, double_backward=reference != "numerical_logsumexp")
    assert message is None, message
    assert float(verdict) == 5, verdict.report()


def test_a_plain_function_is_refused_even_one_built_on_a_right_function():
    """The exercise is a Function's backward: the check asks for the class (a plain function would be
    differentiated by autograd, whoever wrote it), and says so."""

    def linear(x, W, b=None):
        return Linear.apply(x, W, b)

    for answer in (linear, lambda x, W, b=None: x @ W.T + (0 if b is None else b)):
        verdict, message = run(answer, "linear", cases=4)
        assert verdict is None and "subclass of torch.autograd.Function" in message


# --------------------------------------------------------------------------- the catalogue of wrong backwards


def _b(backward):
    return backward


WRONG = {
    # name: (Function, reference, params, the part(s) that must fail, text expected in the report)
    "mul: grad_output ignored": (
        fn("MulFunction", _mul_f, lambda ctx, g: tuple(reversed(ctx.saved_tensors))),
        "mul",
        {},
        ["gradcheck", "reference"],
        "multiply your local derivative by grad_output",
    ),
    "mul: gradients swapped": (
        fn("MulFunction", _mul_f, lambda ctx, g: (g * ctx.saved_tensors[0], g * ctx.saved_tensors[1])),
        "mul",
        {},
        ["gradcheck", "reference"],
        "belongs to `b`",
    ),
    "mul: wrong sign": (
        fn("MulFunction", _mul_f, lambda ctx, g: (-g * ctx.saved_tensors[1], -g * ctx.saved_tensors[0])),
        "mul",
        {},
        ["gradcheck", "reference"],
        "wrong sign",
    ),
    "mul: one gradient returned": (
        fn("MulFunction", _mul_f, lambda ctx, g: g * ctx.saved_tensors[1]),
        "mul",
        {},
        ["interface", "gradcheck", "reference"],  # autograd itself refuses it
        "wrong number of returned gradients",
    ),
    "mul: backward detaches (no double backward)": (
        fn(
            "MulFunction",
            _mul_f,
            lambda ctx, g: ((g * ctx.saved_tensors[1]).detach(), (g * ctx.saved_tensors[0]).detach()),
        ),
        "mul",
        {"double_backward": True},
        ["double_backward"],
        "differentiable torch operations",
    ),
    "exp: saves its input": (
        fn("Exp", lambda ctx, x: (_save(ctx, x), torch.exp(x))[1], lambda ctx, g: g * torch.exp(ctx.saved_tensors[0])),
        "exp",
        {},
        ["interface"],
        "save the result of forward",
    ),
    "exp: off by a factor 2": (
        fn("Exp", _exp_f, lambda ctx, g: 2 * g * ctx.saved_tensors[0]),
        "exp",
        {},
        ["gradcheck", "reference"],
        "same factor (about 2)",
    ),
    "exp: grad_output changed in place": (
        fn("Exp", _exp_f, lambda ctx, g: g.mul_(ctx.saved_tensors[0])),
        "exp",
        {},
        ["interface"],
        "changed grad_output in place",
    ),
    "linear: transposed weight gradient": (
        fn(
            "LinearFunction",
            _lin_f,
            lambda ctx, g: (g @ ctx.saved_tensors[1].T, g.T @ ctx.saved_tensors[0], g.sum(0) if ctx.has_bias else None),
        ),
        "linear",
        {},
        ["interface", "gradcheck", "reference"],
        "transpose",
    ),
    "linear: bias gradient not summed over the batch": (
        fn(
            "LinearFunction",
            _lin_f,
            lambda ctx, g: (g @ ctx.saved_tensors[1].T, ctx.saved_tensors[0].T @ g, g if ctx.has_bias else None),
        ),
        "linear",
        {},
        ["interface"],
        "the sum over the batch",
    ),
    "linear: W instead of W transposed (square W)": (
        fn("LinearFunction", _lin_f, _lin_b_from(lambda g, x, W: g @ W, lambda g, x, W: x.T @ g)),
        "linear",
        {"seed": 1, "cases": 4},
        ["gradcheck", "reference", "interface"],  # it raises when W is not square:
        "check which factor is transposed",
    ),  # no interface to see then
    "linear: needs_input_grad ignored": (
        fn(
            "LinearFunction",
            _lin_f,
            lambda ctx, g: (g @ ctx.saved_tensors[1].T, ctx.saved_tensors[0].T @ g, g.sum(0) if ctx.has_bias else None),
        ),
        "linear",
        {},
        ["interface"],
        "needs_input_grad",
    ),
    "linear: bias gradient returned when there is no bias": (
        fn("LinearFunction", _lin_f, lambda ctx, g: (g @ ctx.saved_tensors[1].T, ctx.saved_tensors[0].T @ g, g.sum(0))),
        "linear",
        {"cases": 3},
        ["interface"],
        "non-tensor argument",
    ),
    "kill_head: a gradient for n": (
        fn("KillHead", _kill_f, lambda ctx, g: (_kill_b(ctx, g)[0], 0)),
        "kill_head",
        {},
        ["interface"],
        "non-tensor argument",
    ),
    "kill_head: no None for n": (
        fn("KillHead", _kill_f, lambda ctx, g: _kill_b(ctx, g)[0]),
        "kill_head",
        {},
        ["interface"],
        "wrong number of returned gradients",
    ),
    "kill_head: gradient not masked": (
        fn("KillHead", _kill_f, lambda ctx, g: (g, None)),
        "kill_head",
        {},
        ["gradcheck", "reference"],
        "dout[0, 0]/dx[0, 0]",
    ),
    "kill_head: new tensor in the default dtype": (
        fn(
            "KillHead",
            _kill_f,
            lambda ctx, g: (
                torch.zeros(g.shape, dtype=torch.float32).copy_(g).index_fill_(1, torch.arange(ctx.n), 0),
                None,
            ),
        ),
        "kill_head",
        {},
        ["interface"],
        "make gradients like their inputs",
    ),
    "kill_head: rows instead of columns": (
        fn(
            "KillHead",
            lambda ctx, x, n: (setattr(ctx, "n", n), torch.cat([torch.zeros_like(x[:n]), x[n:]]))[1],
            lambda ctx, g: (torch.cat([torch.zeros_like(g[: ctx.n]), g[ctx.n :]]), None),
        ),
        "kill_head",
        {},
        ["forward", "reference"],
        "*rows*",
    ),
    "abs_product: sign of u instead of u·v": (
        fn(
            "AbsProduct",
            _abs_f,
            lambda ctx, g: (
                g * torch.sign(ctx.saved_tensors[0]) * ctx.saved_tensors[1],
                g * torch.sign(ctx.saved_tensors[1]) * ctx.saved_tensors[0],
            ),
        ),
        "abs_product",
        {},
        ["gradcheck", "reference"],
        "largest absolute error",
    ),
    "abs_product: the sign forgotten": (
        fn("AbsProduct", _abs_f, lambda ctx, g: (g * ctx.saved_tensors[1], g * ctx.saved_tensors[0])),
        "abs_product",
        {},
        ["gradcheck", "reference"],
        "entries",
    ),
    "abs_product: |v| in place of sign(u)|v|": (
        fn("AbsProduct", _abs_f, lambda ctx, g: (g * ctx.saved_tensors[1].abs(), g * ctx.saved_tensors[0].abs())),
        "abs_product",
        {},
        ["gradcheck", "reference"],
        "wrong sign where u < 0",
    ),
    "linear: x @ grad_output (a published mistake, runs when batch = inputs)": (
        fn("LinearFunction", _lin_f, _lin_b_from(lambda g, x, W: g @ W.T, lambda g, x, W: x @ g)),
        "linear_batch_equals_inputs",
        {},
        ["gradcheck", "reference"],
        "batch size equals the number of inputs",
    ),
    "numerical backward: one-sided difference": (
        fn(
            "NumericalLogSumExp", _lse_f, lambda ctx, g: _lse_numeric(ctx.saved_tensors[0], one_sided=True) * g[:, None]
        ),
        "numerical_logsumexp",
        {},
        ["reference"],
        "disagrees with the reference backward",
    ),
    "numerical backward: grad_output ignored": (
        fn("NumericalLogSumExp", _lse_f, lambda ctx, g: _lse_numeric(ctx.saved_tensors[0])),
        "numerical_logsumexp",
        {},
        ["gradcheck", "reference"],
        "multiply your local derivative by grad_output",
    ),
}


@pytest.mark.parametrize("name", list(WRONG))
def test_wrong_backward_loses_points_where_it_should(name):
    F, reference, params, failing, text = WRONG[name]
    verdict, message = run(F, reference, **params)
    report = message if verdict is None else verdict.report()
    assert text in report, report
    if verdict is not None:
        lost = {p.name for p in verdict.parts if p.passed is False}
        assert lost == set(failing), f"one mistake loses exactly the parts it touches, {sorted(failing)}:\n{report}"
        check = "function+double_backward" if params.get("double_backward") else "function"
        assert float(verdict) == expected_score(check, params.get("points", 5), lost), (
            f"{sorted(lost)} should cost {ideas_lost(lost)} of {IDEAS[check]} equal shares:\n{report}"
        )
    else:
        for p in failing:
            assert f"[FAIL] {PART_TITLES[p]}" in report, report


def test_abs_sign_message_says_where_not_everywhere():
    """|v| in place of sign(u)|v| is wrong only where u < 0 (or v < 0): the report says where."""
    F = WRONG["abs_product: |v| in place of sign(u)|v|"][0]
    for seed in range(4):
        verdict, message = run(F, "abs_product", seed=seed, cases=4)
        report = message if verdict is None else verdict.report()
        assert "where u < 0" in report and "where v < 0" in report and "everywhere" not in report, report


def test_published_linear_mistake_runs_only_when_batch_equals_inputs_and_the_hidden_case_catches_it():
    """Seed 001's `grad_weight = input.mm(grad_output)`: a shape error on the usual cases, a Jacobian mismatch
    with its hint on the hidden case where batch = inputs (the notebook's hidden tests run it: cases=6)."""
    F = WRONG["linear: x @ grad_output (a published mistake, runs when batch = inputs)"][0]
    verdict, message = run(F, "linear", seed=3, cases=6)
    report = message if verdict is None else verdict.report()
    assert "batch size equals the number of inputs" in report, report
    from autograder.nb03.cases import _LINEAR_CASES

    assert _LINEAR_CASES[5][0] == _LINEAR_CASES[5][1] != _LINEAR_CASES[5][2]


def test_unsummed_bias_loses_only_the_interface_part():
    """A bias gradient of shape (N, O): autograd sums it down and training works, so only the interface part
    (with its hint) is lost -- less than a genuinely wrong transposed grad_weight loses."""
    unsummed, _ = run(*WRONG["linear: bias gradient not summed over the batch"][:2], points=5, cases=6)
    assert float(unsummed) == round(5 * 2 / 3, 2), unsummed.report()  # one idea of three lost
    assert [p.name for p in unsummed.parts if p.passed is False] == ["interface"]
    assert "the sum over the batch" in unsummed.report()
    transposed, message = run(*WRONG["linear: transposed weight gradient"][:2], points=5, cases=6)
    assert transposed is None or float(transposed) < float(unsummed), message


def test_partial_credit_values():
    """A Function check tests three ideas (forward, backward, interface), each a third of the points: the backward
    checked two ways (gradcheck, the reference) is one idea, lost once whichever way catches it."""
    verdict, _ = run(*WRONG["exp: saves its input"][:2], points=5)
    assert float(verdict) == round(5 * 2 / 3, 2) and failed_names(verdict) == {"interface"}
    verdict, _ = run(*WRONG["numerical backward: one-sided difference"][:2], points=5)
    assert float(verdict) == round(5 * 2 / 3, 2)  # within gradcheck's tolerance, not within the reference's
    assert failed_names(verdict) == {"reference"}
    verdict, _ = run(*WRONG["exp: off by a factor 2"][:2], points=5)
    assert float(verdict) == round(5 * 2 / 3, 2) and failed_names(verdict) == {"gradcheck", "reference"}


def failed_names(verdict):
    return {p.name for p in verdict.parts if p.passed is False}


def test_blank_function_says_not_written():
    def blank(ctx, *args):
        raise NotImplementedError()

    Blank = fn("LinearFunction", blank, blank)
    _, message = run(Blank, "linear")
    assert "not written yet" in message and "LinearFunction.forward" in message


def test_blank_backward_only_keeps_the_forward_points():
    def blank(ctx, *args):
        raise NotImplementedError()

    verdict, message = run(fn("Exp", _exp_f, blank), "exp", points=3)
    assert verdict is not None and float(verdict) == 1.0  # the forward: one idea of three
    assert "`Exp.backward` is not written yet" in verdict.report()


def test_crash_in_backward_is_translated():
    def crash(ctx, g):
        x, W = ctx.saved_tensors
        return g @ W, x.T @ g, None  # shapes do not fit for a non-square W

    verdict, message = run(fn("LinearFunction", _lin_f, crash), "linear", cases=2)
    report = message or verdict.report()
    assert "shapes that do not fit" in report and "PyTorch said" in report


def test_wrong_kind_of_object():
    _, message = run(Exp(), "exp")
    assert "pass the class itself" in message
    _, message = run(42, "exp")
    assert "should be a subclass of torch.autograd.Function" in message
    _, message = run(fn("Exp", lambda ctx, x: x.numpy(), _exp_b), "exp")
    assert "should return a tensor" in message


def test_translation_of_pytorch_errors():
    class TooFew(Function):
        @staticmethod
        def forward(ctx, x, n):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g

    x = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        TooFew.apply(x, 3).sum().backward()
    text = translate(info.value)
    assert "one value per argument of forward" in text and "PyTorch said" in text


def test_messages_do_not_reveal_the_expected_gradient():
    verdict, _ = run(*WRONG["abs_product: the sign forgotten"][:2], cases=1)
    args = case_args(inputs_for("abs_product"), 0, 0)
    expected = torch.sign(args[0] * args[1]) * args[1]
    report = verdict.report()
    for value in expected.tolist():
        assert f"{value:.3g}" not in report and f"{value:.4f}" not in report


def test_fast_mode_is_used_for_large_inputs_and_catches_mistakes():
    data = probe_function(Linear, reference="linear", seed=0, cases=5)
    assert [c["mode"] for c in data["cases"]] == ["full"] * 4 + ["fast"]

    # only the large case (index 4) is wrong: the bias gradient doubled when the batch is large
    def sneaky_b(ctx, g):
        gx, gW, gb = _lin_b(ctx, g)
        return gx, gW, (gb * 2 if gb is not None and g.shape[0] > 32 else gb)

    verdict, message = run(fn("LinearFunction", _lin_f, sneaky_b), "linear", cases=5)
    assert verdict is not None and not part(verdict, "gradcheck").passed, message
    assert "u·J·v" in verdict.report() and "case 5" in verdict.report()


def test_cuda_part_is_skipped_with_a_reason_without_a_gpu():
    verdict, _ = run(Exp, "exp")
    cuda = part(verdict, "cuda")
    if torch.cuda.is_available():
        assert cuda.passed is True
    else:
        assert cuda.passed is None and "no CUDA device" in cuda.messages[0]
        assert float(verdict) == 5


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the CUDA part of a check cannot run here")
def test_cuda_part_catches_a_cpu_only_gradient():
    def cpu_grad(ctx, g):
        (y,) = ctx.saved_tensors
        return (g * y).cpu()

    verdict, _ = run(fn("Exp", _exp_f, cpu_grad), "exp")
    assert part(verdict, "cuda").passed is False


# --------------------------------------------------------------------------- property-based


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), reference=st.sampled_from(["mul", "exp", "kill_head", "abs_product", "linear"]))
def test_correct_functions_pass_on_any_seed(seed, reference):
    F = {"mul": Mul, "exp": Exp, "kill_head": KillHead, "abs_product": AbsProduct, "linear": Linear}[reference]
    verdict, message = run(F, reference, seed=seed, cases=2)
    assert message is None and float(verdict) == 5, message or verdict.report()


@settings(max_examples=25, deadline=None)
@given(factor=st.floats(0.2, 5.0).filter(lambda c: abs(c - 1) > 0.01), seed=st.integers(0, 1000))
def test_any_constant_factor_is_named(factor, seed):
    F = fn("Exp", _exp_f, lambda ctx, g: factor * g * ctx.saved_tensors[0])
    verdict, message = run(F, "exp", seed=seed, cases=1)
    assert verdict is not None and "same factor" in verdict.report()
    assert f"{factor:.3g}" in verdict.report()


@settings(max_examples=15, deadline=None)
@given(
    name=st.sampled_from([n for n, w in WRONG.items() if w[1] != "numerical_logsumexp" and "double" not in n]),
    seed=st.integers(0, 500),
)
def test_gradcheck_part_agrees_with_torch_gradcheck(name, seed):
    """Our numerical-Jacobian verdict (computed outside the learner's process) is torch.autograd.gradcheck's."""
    F, reference, params, _, _ = WRONG[name]
    spec = inputs_for(reference)
    cases = params.get("cases", 2)
    try:
        verdict = nb03.check_function(F, reference=reference, points=5, seed=seed, cases=cases)
    except CheckFailed as failure:
        verdict = failure.verdict
    ours = part(verdict, "gradcheck").passed
    theirs = True
    for case in range(cases):
        args = case_args(spec, seed, case)
        inputs = tuple(a.clone().requires_grad_() if isinstance(a, torch.Tensor) else a for a in args)
        try:
            theirs &= torch.autograd.gradcheck(F.apply, inputs, raise_exception=False)
        except Exception:  # torch raises for some interface errors (wrong count, gradient for a non-tensor)
            theirs = False
    if ours != theirs:
        # Only where the interface is wrong: autograd silently sums a gradient with an extra batch dimension
        # (so torch's gradcheck passes), and raises on a wrong count (so it fails where our Jacobian is right).
        assert part(verdict, "interface").passed is False, (name, ours, theirs, verdict.report())


# --------------------------------------------------------------------------- the other checks


def _numerical_jacobian(f, inputs, eps=1e-6):
    out_numel = f(*inputs).numel()
    result = []
    for i, x in enumerate(inputs):
        J = torch.empty(out_numel, x.numel(), dtype=x.dtype)
        for k in range(x.numel()):
            plus = [t.clone() for t in inputs]
            minus = [t.clone() for t in inputs]
            plus[i].view(-1)[k] += eps
            minus[i].view(-1)[k] -= eps
            J[:, k] = ((f(*plus) - f(*minus)) / (2 * eps)).reshape(-1)
        result.append(J)
    return result


PROBLEMS = ["product_sine", "matrix_vector", "sum_of_squares", "softmax"]


def test_numerical_jacobian_checks():
    nb03.check_numerical_jacobian(_numerical_jacobian, problems=PROBLEMS)
    with pytest.raises(CheckFailed, match="transposed"):
        nb03.check_numerical_jacobian(
            lambda f, xs, eps=1e-6: [J.T for J in _numerical_jacobian(f, xs, eps)], problems=["matrix_vector"]
        )
    with pytest.raises(CheckFailed, match="2·eps apart"):
        nb03.check_numerical_jacobian(
            lambda f, xs, eps=1e-6: [2 * J for J in _numerical_jacobian(f, xs, eps)], problems=["product_sine"]
        )

    def one_sided(f, inputs, eps=1e-6):
        base = f(*inputs).reshape(-1)
        out = []
        for i, x in enumerate(inputs):
            J = torch.empty(base.numel(), x.numel())
            for k in range(x.numel()):
                moved = [t.clone() for t in inputs]
                moved[i].view(-1)[k] += eps
                J[:, k] = (f(*moved).reshape(-1) - base) / eps
            out.append(J)
        return out

    with pytest.raises(CheckFailed, match="one-sided"):
        nb03.check_numerical_jacobian(one_sided, problems=["product_sine"])

    def in_place(f, inputs, eps=1e-6):
        for x in inputs:
            x.view(-1)[0] += eps
        return _numerical_jacobian(f, inputs, eps)

    with pytest.raises(CheckFailed, match="not written yet"):
        nb03.check_numerical_jacobian(
            lambda f, xs, eps=1e-6: (_ for _ in ()).throw(NotImplementedError()), problems=PROBLEMS
        )
    with pytest.raises(CheckFailed, match="changed the inputs"):
        nb03.check_numerical_jacobian(in_place, problems=["product_sine"])


@pytest.mark.parametrize("shortcut", ["autograd.functional.jacobian", "func.jacrev", "func.jacfwd"])
def test_numerical_jacobian_is_not_passed_by_one_autograd_call(shortcut):
    """Points follow effort: one call of an autograd Jacobian is refused, with a message saying why."""

    def jacobian(f, inputs, eps=1e-6):
        if shortcut == "autograd.functional.jacobian":
            jac = torch.autograd.functional.jacobian(f, tuple(inputs))
        else:
            transform = torch.func.jacrev if shortcut == "func.jacrev" else torch.func.jacfwd
            jac = transform(f, argnums=tuple(range(len(inputs))))(*inputs)
        out_numel = f(*inputs).numel()
        return [J.reshape(out_numel, x.numel()) for J, x in zip(jac, inputs)]

    for problem in PROBLEMS:
        with pytest.raises(CheckFailed, match="no autograd") as info:
            nb03.check_numerical_jacobian(jacobian, problems=[problem])
        assert "central differences" in str(info.value)


def _my_gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3):
    def analytical(fn, inputs):
        out = fn(*inputs)
        rows = []
        for k in range(out.numel()):
            seed = torch.zeros_like(out).view(-1)
            seed[k] = 1.0
            grads = torch.autograd.grad(out, inputs, seed.view_as(out), retain_graph=True, allow_unused=True)
            rows.append([torch.zeros_like(x) if g is None else g for g, x in zip(grads, inputs)])
        return [torch.stack([r[i].reshape(-1) for r in rows]) for i in range(len(inputs))]

    with torch.no_grad():
        numerical = _numerical_jacobian(fn, [x.detach() for x in inputs], eps)
    return all(bool(((a - n).abs() <= atol + rtol * n.abs()).all()) for a, n in zip(analytical(fn, inputs), numerical))


def test_my_gradcheck_checks():
    nb03.check_my_gradcheck(_my_gradcheck, problems=list(nb03.GRADCHECK_PROBLEMS))
    always = lambda fn, inputs: True  # noqa: E731
    with pytest.raises(CheckFailed, match="a wrong backward"):
        nb03.check_my_gradcheck(always, problems=list(nb03.GRADCHECK_PROBLEMS))
    relative_only = lambda fn, inputs: _my_gradcheck(fn, inputs, atol=0.0)  # noqa: E731
    with pytest.raises(CheckFailed, match="atol"):
        nb03.check_my_gradcheck(relative_only, problems=["correct_with_zeros"])
    loose = lambda fn, inputs: _my_gradcheck(fn, inputs, rtol=0.05)  # noqa: E731
    with pytest.raises(CheckFailed, match="every entry"):
        nb03.check_my_gradcheck(loose, problems=["small_relative_error"])


def _train(x0, target, n, lr, steps):
    x = x0.clone().requires_grad_()
    opt = torch.optim.SGD([x], lr=lr)
    losses = []
    for _ in range(steps):
        loss = torch.mean((KillHead.apply(x, n) - target) ** 2)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return x.detach(), losses


def test_kill_head_training_checks():
    cases = [(0, (4, 5), 2, 0.5, 20), (1, (3, 3), 0, 0.1, 5)]
    nb03.check_kill_head_training(_train, cases=cases)

    def no_zero_grad(x0, target, n, lr, steps):
        x = x0.clone().requires_grad_()
        opt = torch.optim.SGD([x], lr=lr)
        losses = []
        for _ in range(steps):
            loss = torch.mean((KillHead.apply(x, n) - target) ** 2)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return x.detach(), losses

    with pytest.raises(CheckFailed, match="(?s)loss at step 2.*zero_grad"):
        nb03.check_kill_head_training(no_zero_grad, cases=cases)

    def trains_x0(x0, target, n, lr, steps):
        x = x0.requires_grad_()  # no copy: SGD moves the caller's tensor
        opt = torch.optim.SGD([x], lr=lr)
        losses = []
        for _ in range(steps):
            loss = torch.mean((KillHead.apply(x, n) - target) ** 2)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return x.detach(), losses

    with pytest.raises(CheckFailed, match="changed x0"):
        nb03.check_kill_head_training(trains_x0, cases=cases)

    def leaky(x0, target, n, lr, steps):
        x = x0.clone().requires_grad_()
        opt = torch.optim.SGD([x], lr=lr)
        for _ in range(steps):
            opt.zero_grad()
            torch.mean((x - target) ** 2).backward()
            opt.step()
        return x.detach(), [0.0] * steps

    with pytest.raises(CheckFailed, match="first 2 column"):
        nb03.check_kill_head_training(leaky, cases=cases)


def test_notebook_grades_neither_double_backward_nor_cuda():
    """Double backward is taught and graded in notebook 04, devices in notebook 05: nb03's score has neither."""
    import re
    from pathlib import Path

    import nbformat

    root = Path(__file__).resolve().parent.parent
    nb = nbformat.read(root / "solutions/03-custom-functions/custom_functions.ipynb", as_version=4)
    calls = [
        line
        for cell in nb.cells
        if cell.metadata.get("nbgrader", {}).get("grade")
        for line in cell.source.splitlines()
        if line.startswith("check_function(")
    ]
    assert len(calls) == 12, calls
    for call in calls:
        assert "double_backward" not in call and re.search(r"cuda=False\)$", call), call


def test_every_check_shape_used_by_the_notebook_is_registered():
    for name in ("check_function", "check_numerical_jacobian", "check_my_gradcheck", "check_kill_head_training"):
        assert name in CHECKS


NOTEBOOK_CELLS = [
    '''import torch
from torch.autograd import Function
from autograder.nb03 import check_function
torch.set_default_dtype(torch.float64)

class MulFunction(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g * a

class Exp(Function):          # right, except that it saves its input instead of its output
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.exp(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.exp(x)''',
    '''check_function(MulFunction, reference="mul", points=2, seed=0, cuda=False)
### BEGIN HIDDEN TESTS
check_function(MulFunction, reference="mul", points=2, seed=1, cases=4, cuda=False)
### END HIDDEN TESTS''',
    '''check_function(Exp, reference="exp", points=2, seed=0, cuda=False)
### BEGIN HIDDEN TESTS
check_function(Exp, reference="exp", points=2, seed=2, cases=4, cuda=False)
### END HIDDEN TESTS''',
]


def test_in_a_notebook_a_passing_cell_shows_nothing_and_a_partial_one_fails_naming_its_parts(tmp_path):
    """One failure style: no stray Out[...] on a passing test cell; a partly right Function's cell fails with one
    CheckFailed whose message is the whole report (the part that failed, its entries, its hint)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in NOTEBOOK_CELLS])
    for cell, points in zip(nb.cells[1:], (2, 2)):
        cell.metadata["nbgrader"] = {
            "grade": True,
            "solution": False,
            "locked": True,
            "points": points,
            "grade_id": f"t{points}{len(cell.source)}",
            "schema_version": 3,
        }
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    )
    try:
        client.execute()
    except CellExecutionError:
        pass
    passing, partial = nb.cells[1], nb.cells[2]
    assert not [o for o in passing.outputs if o.output_type in ("execute_result", "error")], passing.outputs
    assert not [o for o in partial.outputs if o.output_type == "execute_result"], "no stray value"
    (error,) = [o for o in partial.outputs if o.output_type == "error"]
    assert error.ename == "CheckFailed"
    assert "[FAIL]" in error.evalue and "[ok  ]" in error.evalue, "the parts are named, failed and passed"
    assert "Hint:" in error.evalue
    assert "1.33 of 2 points" in " ".join(error.evalue.split()), (  # the interface: one idea of three lost
        "the visible check fails first and says what the cell would earn"
    )


def test_a_torch_equal_made_always_true_does_not_hide_a_changed_grad_output(monkeypatch):
    """The probe compares with its own torch.equal, taken at import: replacing torch's in the kernel hides nothing."""
    monkeypatch.setattr(torch, "equal", lambda *args: True)
    verdict, message = run(fn("Exp", _exp_f, lambda ctx, g: g.mul_(ctx.saved_tensors[0])), "exp")
    assert verdict is not None and part(verdict, "interface").passed is False, message
    assert "changed grad_output in place" in verdict.report()
