"""Notebook 03's cases: the inputs its probes feed and its judges regenerate, from the same params."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ..probes.function_cases import FunctionInputs, add_inputs


def _randn(gen, *shape):
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


def _away_from_zero(gen, *shape, low=0.3):
    """Random numbers of either sign with |value| >= low: no input near a kink."""
    magnitude = low + torch.rand(*shape, generator=gen, dtype=torch.float64)
    sign = torch.where(torch.rand(*shape, generator=gen, dtype=torch.float64) < 0.5, -1.0, 1.0)
    return sign * magnitude


_MUL_SHAPES = [(4,), (2, 3), (3, 1, 2), (5,)]


def _mul_args(gen, case):
    shape = _MUL_SHAPES[case % len(_MUL_SHAPES)]
    return _randn(gen, *shape), _randn(gen, *shape)


def _exp_args(gen, case):
    shape = _MUL_SHAPES[case % len(_MUL_SHAPES)]
    return (_randn(gen, *shape),)


_LINEAR_CASES = [  # (batch, in, out, bias: "tensor" | "absent" | "none")
    (4, 3, 3, "tensor"),
    (3, 2, 4, "absent"),
    (5, 3, 2, "none"),
    (2, 4, 4, "tensor"),
    (64, 24, 16, "tensor"),
    (3, 3, 2, "tensor"),  # batch = inputs, W not square: `x @ grad_output` (a published mistake) runs here
]


def _linear_args(gen, case):
    n, fan_in, fan_out, bias = _LINEAR_CASES[case % len(_LINEAR_CASES)]
    x, W = _randn(gen, n, fan_in), _randn(gen, fan_in, fan_out)
    if bias == "tensor":
        return x, W, _randn(gen, fan_out)
    return (x, W) if bias == "absent" else (x, W, None)


_KILL_CASES = [((4, 6), 2), ((3, 5), 0), ((2, 4), 4), ((5, 3), 1)]


def _kill_args(gen, case):
    shape, n = _KILL_CASES[case % len(_KILL_CASES)]
    return _randn(gen, *shape), n


def _abs_args(gen, case):
    shape = _MUL_SHAPES[case % len(_MUL_SHAPES)]
    return _away_from_zero(gen, *shape), _away_from_zero(gen, *shape)


_LSE_SHAPES = [(3, 4), (2, 5), (4, 2), (1, 6)]


def _lse_args(gen, case):
    return (_randn(gen, *_LSE_SHAPES[case % len(_LSE_SHAPES)]),)


add_inputs(FunctionInputs(name="mul", title="MulFunction.apply(a, b)", arg_names=("a", "b"), make_args=_mul_args))


add_inputs(FunctionInputs(name="exp", title="Exp.apply(x)", arg_names=("x",), make_args=_exp_args))


add_inputs(
    FunctionInputs(
        name="linear", title="LinearFunction.apply(x, W, b=None)", arg_names=("x", "W", "b"), make_args=_linear_args
    )
)


# For the notebook's worked example only: the case in which `x @ grad_output` runs.
add_inputs(
    FunctionInputs(
        name="linear_batch_equals_inputs",
        title="LinearFunction.apply(x, W, b=None), batch = inputs",
        arg_names=("x", "W", "b"),
        make_args=lambda gen, case: _linear_args(gen, len(_LINEAR_CASES) - 1),
    )
)


add_inputs(FunctionInputs(name="kill_head", title="KillHead.apply(x, n)", arg_names=("x", "n"), make_args=_kill_args))


add_inputs(
    FunctionInputs(name="abs_product", title="AbsProduct.apply(u, v)", arg_names=("u", "v"), make_args=_abs_args)
)


add_inputs(
    FunctionInputs(
        name="numerical_logsumexp",
        title="NumericalLogSumExp.apply(x)",
        arg_names=("x",),
        make_args=_lse_args,
        double_backward=False,
    )
)


# ============================================================================ numerical_jacobian(f, inputs, eps)


def jacobian_problem(name: str, seed: int = 0) -> tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]:
    gen = torch.Generator().manual_seed(sum(map(ord, name)) + 7919 * int(seed))
    if name == "product_sine":
        return (lambda a, b: a * torch.sin(b)), (_randn(gen, 3), _randn(gen, 3))
    if name == "matrix_vector":
        return (lambda A, x: A @ x), (_randn(gen, 2, 3), _randn(gen, 3))
    if name == "sum_of_squares":
        return (lambda x: (x**2).sum()), (_randn(gen, 2, 2),)
    if name == "softmax":
        return (lambda x: torch.softmax(x, dim=0)), (_randn(gen, 4),)
    raise ValueError(f"unknown problem {name!r}")


# ============================================================================ my_gradcheck(fn, inputs)
# Test Functions, all built alike (so that only a gradient check tells them apart, not their type or name): a
# Function whose backward is autograd's gradient of a torch expression, left as it is for the correct ones and
# spoiled in one known way for the wrong ones. Nothing here is an exercise's answer.


def _unchanged(i, g):
    return g


def _spoiled(op, spoil=_unchanged):
    class TestFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            ctx.save_for_backward(*inputs)
            with torch.no_grad():
                return op(*inputs)

        @staticmethod
        def backward(ctx, grad_output):
            inputs = [x.detach().requires_grad_() for x in ctx.saved_tensors]
            with torch.enable_grad():
                grads = torch.autograd.grad(op(*inputs), inputs, grad_output)
            return tuple(spoil(i, g) for i, g in enumerate(grads))

    return TestFunction.apply


def gradcheck_problem(name: str, seed: int = 0) -> tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]:
    gen = torch.Generator().manual_seed(sum(map(ord, name)) + 3 + 7919 * int(seed))
    x, W = _randn(gen, 3, 2), _randn(gen, 2, 2)
    a, b = _randn(gen, 4), _randn(gen, 4)
    # d out_i / d b_k is 0 for i != k, but the finite difference there is round-off (~1e-10), not 0: atol matters.
    zeros_with_noise = lambda a, b: a * b + (a + b.sum()) - b.sum() - a  # noqa: E731
    problems = {
        "correct_product": (_spoiled(lambda a, b: a * b), (a, b)),
        "correct_matmul": (_spoiled(lambda x, W: x @ W), (x, W)),
        "correct_with_zeros": (_spoiled(zeros_with_noise), (a, b)),
        "wrong_sign": (_spoiled(lambda a, b: a * b, lambda i, g: -g if i == 1 else g), (a, b)),
        "wrong_weight_gradient": (_spoiled(lambda x, W: x @ W, lambda i, g: g.T if i == 1 else g), (x, W)),
        "one_entry_off": (
            _spoiled(lambda a, b: a * b, lambda i, g: g + (torch.arange(4) == 2) * 0.05 if i == 0 else g),
            (a, b),
        ),
        "small_relative_error": (_spoiled(lambda x, W: x @ W, lambda i, g: g * 1.01 if i == 0 else g), (x, W)),
    }
    fn, inputs = problems[name]
    return fn, tuple(t.clone().requires_grad_() for t in inputs)


GRADCHECK_PROBLEMS = (
    "correct_product",
    "correct_matmul",
    "correct_with_zeros",
    "wrong_sign",
    "wrong_weight_gradient",
    "one_entry_off",
    "small_relative_error",
)


# ============================================================================ training through KillHead


def training_problem(seed: int, shape: Sequence[int], n: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return _randn(gen, *shape), _randn(gen, *shape)
