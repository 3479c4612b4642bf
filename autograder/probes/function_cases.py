"""The inputs of a Function exercise: which cases a learner's torch.autograd.Function is tried on.

Shared by both sides: the probe (:mod:`autograder.probes.function`) calls the learner's Function on
these inputs, the judge (:mod:`autograder.judges.function`) regenerates them to compute its
references. A notebook's probe module adds its exercises with :func:`add_inputs`; the judge side adds
the reference with :func:`autograder.judges.function.add_reference` under the same name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..registry import import_notebook_modules, unavailable_note

EPS, ATOL, RTOL = 1e-6, 1e-5, 1e-3  # torch.autograd.gradcheck's defaults

FULL_LIMIT = 1500  # sum over inputs of numel(input) x numel(outputs): full Jacobian up to here


@dataclass(frozen=True)
class FunctionInputs:
    """How one exercise's Function is called and on which inputs it is tried.

    make_args(gen, case) -> tuple of arguments (float64 CPU tensors and plain values), random from
    `gen` and away from kinks.
    """

    name: str
    title: str  # how the learner calls it, e.g. "LinearFunction.apply(x, W, b)"
    arg_names: tuple[str, ...]
    make_args: Callable[[torch.Generator, int], tuple]
    cases: int = 2
    double_backward: bool = True  # whether a correct answer is expected to be twice differentiable


INPUTS: dict[str, FunctionInputs] = {}


def add_inputs(inputs: FunctionInputs) -> FunctionInputs:
    INPUTS[inputs.name] = inputs
    return inputs


def inputs_for(reference: str) -> FunctionInputs:
    """The inputs registered under `reference`; the notebooks' probe modules are imported on first use."""
    if reference not in INPUTS:
        import_notebook_modules()
    if reference not in INPUTS:
        raise ValueError(f"no exercise named {reference!r}; known: {sorted(INPUTS)}{unavailable_note()}")
    return INPUTS[reference]


def case_generator(seed: int, case: int, salt: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(1_000_003 * int(seed) + 101 * int(case) + salt)


def case_args(spec: FunctionInputs, seed: int, case: int) -> tuple:
    """The arguments of one case, regenerated identically by probe and judge."""
    return tuple(spec.make_args(case_generator(seed, case), case))


def random_grad_outputs(shapes: list, seed: int, case: int, count: int) -> list[list[torch.Tensor]]:
    gen = case_generator(seed, case, salt=7)
    return [[torch.randn(s, generator=gen, dtype=torch.float64) for s in shapes] for _ in range(count)]


def random_directions(args: tuple, seed: int, case: int) -> list:
    gen = case_generator(seed, case, salt=11)
    return [torch.randn(a.shape, generator=gen, dtype=torch.float64) if is_float_tensor(a) else None for a in args]


def is_float_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def tensor_slots(args: tuple) -> list[int]:
    return [i for i, a in enumerate(args) if is_float_tensor(a)]


def as_outputs(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def numel_out(outputs: Sequence[torch.Tensor]) -> int:
    return sum(o.numel() for o in outputs)


def use_full_jacobian(args: tuple, out_numel: int) -> bool:
    return sum(args[i].numel() for i in tensor_slots(args)) * out_numel <= FULL_LIMIT


def fresh_args(
    args: tuple,
    requires: Sequence[bool] | None = None,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> tuple:
    out = []
    for i, a in enumerate(args):
        if is_float_tensor(a):
            t = a.detach().clone()
            if dtype is not None or device is not None:
                t = t.to(device=device or t.device, dtype=dtype or t.dtype)
            out.append(t.requires_grad_(True if requires is None else bool(requires[i])))
        else:
            out.append(a)
    return tuple(out)


def unit_grad_outputs(shapes: list[tuple]) -> list[list[torch.Tensor]]:
    """One grad_output per output entry, 1 there and 0 elsewhere: backward then returns the Jacobian row by row."""
    out_numel = sum(math.prod(s) for s in shapes)
    calls = []
    for k in range(out_numel):
        flat = torch.zeros(out_numel, dtype=torch.float64)
        flat[k] = 1.0
        parts, start = [], 0
        for s in shapes:
            n = math.prod(s)
            parts.append(flat[start : start + n].reshape(s).clone())
            start += n
        calls.append(parts)
    return calls
