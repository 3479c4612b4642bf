"""A judge accepts only a complete answer to exactly the cases it asked for.

Probe data arrives from a process the learner's code ran in, so a judge treats it as untrusted
input: one entry per case, in order, each of the expected form. Missing, empty, extra or mistyped
data is a failure (never a silent pass), with a message that says the data did not match.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ..feedback import CheckFailed

MISMATCH = (
    "The data recorded for this test does not match the cases it asked for ({why}). "
    "Run the test cell again; if it still fails, your notebook changed the checker."
)


def _bad(why: str) -> CheckFailed:
    return CheckFailed(MISMATCH.format(why=why))


mismatch = _bad  # for judges with answers of their own form


def per_case(data: Any, cases: Sequence) -> list:
    """The data as a list with exactly one entry per case."""
    if not isinstance(data, list):
        raise _bad(f"a list was expected, not {type(data).__name__}")
    if len(data) != len(cases):
        raise _bad(f"{len(data)} answers for {len(cases)} cases")
    return data


def number(value: Any, what: str, nan_ok: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(f"{what} is a {type(value).__name__}, not a number")
    if not nan_ok and math.isnan(value):
        raise _bad(f"{what} is nan")
    return float(value)


def integer(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(f"{what} is a {type(value).__name__}, not an integer")
    return value


def flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise _bad(f"{what} is a {type(value).__name__}, not True or False")
    return value


def listed(value: Any, what: str) -> list:
    """A list, of any length and entries (each read with the helpers here)."""
    if not isinstance(value, list):
        raise _bad(f"{what} is a {type(value).__name__}, not a list")
    return value


def shape(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, tuple) or not all(isinstance(n, int) and not isinstance(n, bool) for n in value):
        raise _bad(f"{what} is not a shape (a tuple of integers)")
    return value


def numbers(value: Any, what: str, length: int | None = None) -> list[float]:
    if not isinstance(value, list):
        raise _bad(f"{what} is a {type(value).__name__}, not a list")
    if length is not None and len(value) != length:
        raise _bad(f"{what} has {len(value)} entries, not {length}")
    return [number(v, f"{what}[{i}]") for i, v in enumerate(value)]


def tensor(value: Any, what: str, shape: tuple | None = None) -> torch.Tensor:
    if type(value) is not torch.Tensor:
        raise _bad(f"{what} is a {type(value).__name__}, not a tensor")
    if shape is not None and tuple(value.shape) != tuple(shape):
        raise _bad(f"{what} has shape {tuple(value.shape)}")
    return value


def entry(value: Any, what: str, keys: Sequence[str]) -> Mapping:
    """A dict with exactly these keys."""
    if not isinstance(value, dict):
        raise _bad(f"{what} is a {type(value).__name__}, not a dict")
    if set(value) != set(keys):
        raise _bad(f"{what} has keys {sorted(map(str, value))}, not {sorted(keys)}")
    return value
