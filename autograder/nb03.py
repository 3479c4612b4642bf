"""Checks of notebook 03 (custom autograd Functions): the names its test cells import, and their probes.

The Functions are checked by the generic `check_function(LearnerFunction, reference="<exercise>", ...)`
(:mod:`autograder.probes.function`, judged by :mod:`autograder.judges.function`); this module adds the
exercises' inputs (seeded, away from kinks) and the probes of the other checks (a learner's numerical Jacobian,
a learner's gradcheck, training through KillHead). The references and drawers are in :mod:`autograder.judges.nb03`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from .feedback import CheckFailed, as_float
from .nb01 import sweep_counter
from .probes.call import call_learner
from .probes.function import check_function
from .probes.function_cases import FunctionInputs, add_inputs
from .probes.torch_errors import translate
from .registry import NotebookChecks, ProbeData


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


def probe_numerical_jacobian(
    numerical_jacobian: Any, problems: Sequence[str], eps: float = 1e-6, seed: int = 0
) -> ProbeData:
    data = []
    for name in problems:
        f, inputs = jacobian_problem(name, seed)
        given = tuple(x.clone() for x in inputs)
        count = {"calls": 0, "with_grad": 0, "sweeps": 0, "forward_sweeps": 0}
        count_sweeps = sweep_counter(count)  # autograd through f, reverse or forward mode, however reached, is counted

        def counted(*xs, f=f, count=count, count_sweeps=count_sweeps):
            count["calls"] += 1
            count["with_grad"] += torch.is_grad_enabled() and any(
                isinstance(x, torch.Tensor) and x.requires_grad for x in xs
            )
            return count_sweeps(f(*xs))

        result = call_learner(numerical_jacobian, counted, given, eps, name="numerical_jacobian")
        if isinstance(result, torch.Tensor):
            result = [result]
        if not isinstance(result, (list, tuple)) or not all(isinstance(r, torch.Tensor) for r in result):
            raise CheckFailed(
                f"`numerical_jacobian(f, inputs, eps)` should return a list of tensors, one per input; "
                f"it returned a {type(result).__name__}."
            )
        data.append(
            {
                "jacobians": [r.detach().to("cpu", torch.float64).clone() for r in result],
                "calls": count["calls"],
                "calls_with_grad": count["with_grad"],
                "sweeps": int(count["sweeps"]),
                "forward_sweeps": int(count["forward_sweeps"]),
                "inputs_changed": any(not torch.equal(a, b) for a, b in zip(inputs, given)),
            }
        )
    return data


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


def probe_my_gradcheck(my_gradcheck: Any, problems: Sequence[str], seed: int = 0) -> ProbeData:
    data = []
    for name in problems:
        fn, inputs = gradcheck_problem(name, seed)
        result = call_learner(my_gradcheck, fn, inputs, name="my_gradcheck")
        if not isinstance(result, (bool, int)) and not (isinstance(result, torch.Tensor) and result.numel() == 1):
            raise CheckFailed(
                f"`my_gradcheck(fn, inputs)` should return True or False; it returned a {type(result).__name__}."
            )
        data.append(bool(result))
    return data


# ============================================================================ training through KillHead


def training_problem(seed: int, shape: Sequence[int], n: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return _randn(gen, *shape), _randn(gen, *shape)


def probe_kill_head_training(train_kill_head: Any, cases: Sequence[Any]) -> ProbeData:
    data = []
    for seed, shape, n, lr, steps in cases:
        x0, target = training_problem(seed, shape, n)
        x0_before = x0.clone()
        call = f"train_kill_head(x0, target, n={n}, lr={lr}, steps={steps})"
        result = call_learner(train_kill_head, x0, target.clone(), n, lr, steps, name="train_kill_head")
        if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], torch.Tensor)):
            raise CheckFailed(f"`{call}` should return a pair (x, losses): the trained tensor and the list of losses.")
        x, losses = result
        data.append(
            {
                "x": x.detach().to("cpu", torch.float64).clone(),
                "losses": [as_float(v, f"a loss returned by `{call}`") for v in losses],
                "x0_changed": not torch.equal(x0, x0_before),
            }
        )
    return data


# ------------------------------------------------------------------ the checks
# judges in autograder/judges/nb03.py; by hand: a numerical Jacobian or a gradcheck handed to torch.autograd is
# flagged (the Functions are checked by the generic check_function, declared in autograder/probes/function.py)
checks = NotebookChecks(__name__)
check_numerical_jacobian = checks.add("check_numerical_jacobian", probe_numerical_jacobian, by_hand=True)
check_my_gradcheck = checks.add("check_my_gradcheck", probe_my_gradcheck, by_hand=True)
# training a model is what autograd is for here
check_kill_head_training = checks.add("check_kill_head_training", probe_kill_head_training, by_hand=False)


def translate_error(exc: BaseException) -> str:
    """For the notebook: a PyTorch error in plain words (the same translation the checks use)."""
    return translate(exc)


__all__ = ["check_function", *checks.names, "translate_error", "GRADCHECK_PROBLEMS"]
