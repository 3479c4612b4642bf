"""Hostile answers to notebooks 01-03: routes a learner might take to marks without doing an exercise's work, each
with what the grader must do, and honest answers written differently that must keep full marks.

Unit tests call the checks as a notebook does (probe, then judge); the slow ones grade real submissions with the
grading command, so that the kernel's watch and the screening take part too."""
from __future__ import annotations

import pytest
import torch

from autograder import nb01, nb03
from autograder.feedback import CheckFailed


def _verdict(check, answer, **params):
    """(passed, message) of a check called as a test cell calls it."""
    try:
        check(answer, **params)
    except CheckFailed as failure:
        return False, str(failure)
    return True, ""


# =========================================================================== by-hand numbers from autograd, reached
# without the words the screen looks for (getattr with a constant name), and f called just often enough

_AUTOGRAD = getattr(torch, "autograd")
_FUNC = getattr(torch, "func")


def _gradient_by_autograd(f, x, h=1e-6):
    for _ in range(2 * x.numel() - 1):          # the evaluation count the check expects, with the one below
        f(x.clone())
    v = x.clone().detach().requires_grad_(True)
    return _AUTOGRAD.grad(f(v), v)[0].detach()


def _gradient_by_func(f, x, h=1e-6):
    for _ in range(2 * x.numel() - 1):
        f(x.clone())
    return _FUNC.grad(f)(x.clone())


def _gradient_by_jvp(f, x, h=1e-6):             # forward mode, one unit tangent per entry
    g = torch.empty_like(x)
    for i in range(x.numel()):
        e = torch.zeros_like(x)
        e[i] = 1.0
        g[i] = _FUNC.jvp(f, (x.clone(),), (e,))[1]
        f(x.clone())
    return g


def _gradient_honest_differently(f, x, h=1e-6):  # in place on a copy, restored, float arithmetic
    v, g = x.clone(), []
    for i in range(v.numel()):
        old = float(v[i])
        v[i] = old + h
        up = float(f(v))
        v[i] = old - h
        g.append((up - float(f(v))) / (2 * h))
        v[i] = old
    return torch.tensor(g, dtype=x.dtype)


GRADIENT_CASES = [(3, 0), (10, 5), (1, 7)]


@pytest.mark.nb01
@pytest.mark.parametrize("answer", [_gradient_by_autograd, _gradient_by_func, _gradient_by_jvp])
def test_a_numerical_gradient_from_autograd_scores_nothing(answer):
    """Before: full marks (the right numbers, f called 2n times) and, with getattr(torch, "autograd"), no flag.
    Now the probe's f passes through a Function that counts reverse and forward sweeps, and the judge refuses."""
    passed, message = _verdict(nb01.check_numerical_gradient, answer, cases=GRADIENT_CASES)
    assert not passed and "with autograd" in message and "central differences" in message, message


@pytest.mark.nb01
def test_a_numerical_gradient_written_differently_keeps_full_marks():
    assert _verdict(nb01.check_numerical_gradient, _gradient_honest_differently, cases=GRADIENT_CASES) == (True, "")


JACOBIAN_PROBLEMS = ["product_sine", "matrix_vector", "sum_of_squares", "softmax"]


def _jacobian_by_jacfwd(f, inputs, eps=1e-6):
    jac = _FUNC.jacfwd(f, argnums=tuple(range(len(inputs))))(*inputs)
    with torch.no_grad():                        # f evaluated just often enough (jacfwd called it once)
        for _ in range(2 * sum(x.numel() for x in inputs) - 1):
            f(*inputs)
    out = f(*inputs).numel()
    return [J.reshape(out, x.numel()) for J, x in zip(jac, inputs)]


def _jacobian_by_dual_numbers(f, inputs, eps=1e-6):
    forward_ad = getattr(_AUTOGRAD, "forward_ad")
    columns, calls = [[] for _ in inputs], 0
    for i, x in enumerate(inputs):
        for k in range(x.numel()):
            tangent = torch.zeros_like(x).view(-1)
            tangent[k] = 1.0
            with forward_ad.dual_level():
                args = [forward_ad.make_dual(a, tangent.view_as(a)) if j == i else a for j, a in enumerate(inputs)]
                columns[i].append(forward_ad.unpack_dual(f(*args)).tangent.reshape(-1))
            calls += 1
    for _ in range(2 * sum(x.numel() for x in inputs) - calls):
        f(*inputs)
    return [torch.stack(c, dim=1) for c in columns]


def _jacobian_honest_differently(f, inputs, eps=1e-6):   # row by row of the perturbed entries, then transposed
    out = []
    for i, x in enumerate(inputs):
        rows = []
        for k in range(x.numel()):
            step = torch.zeros(x.numel(), dtype=x.dtype)
            step[k] = eps
            plus = [a + step.view_as(a) if j == i else a for j, a in enumerate(inputs)]
            minus = [a - step.view_as(a) if j == i else a for j, a in enumerate(inputs)]
            rows.append(((f(*plus) - f(*minus)) / (2 * eps)).reshape(-1))
        out.append(torch.stack(rows).T.contiguous())
    return out


@pytest.mark.nb03
@pytest.mark.parametrize("answer", [_jacobian_by_jacfwd, _jacobian_by_dual_numbers])
def test_a_numerical_jacobian_from_forward_mode_scores_nothing(answer):
    """Before: full marks. Forward mode calls f on inputs that do not require grad, so the probe's
    calls-with-grad count missed it; with the calls padded to 2n and getattr(torch, "func"), no flag either.
    Now forward sweeps through f are counted and the judge refuses."""
    passed, message = _verdict(nb03.check_numerical_jacobian, answer, problems=JACOBIAN_PROBLEMS)
    assert not passed and "forward mode" in message and "central differences" in message, message


@pytest.mark.nb03
def test_a_numerical_jacobian_written_differently_keeps_full_marks():
    assert _verdict(nb03.check_numerical_jacobian, _jacobian_honest_differently, problems=JACOBIAN_PROBLEMS) == (True, "")
