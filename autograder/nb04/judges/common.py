"""Notebook 04's judges: the hidden cases' drawers, the references and the helpers the judges share."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ...feedback import CheckFailed
from ...judges import answers
from ...judges.verdict import Part, Verdict, verdict_of
from ..cases import (
    DT,
    HVP_PROBLEMS,
)

# ---------------------------------------------------------------------------------- hidden cases, drawn at grading time
# The visible tests use the standard cases (shapes (5,), (2, 3), (3, 1, 2), (4,); seed 0); the drawers add what
# they do not show: other seeds, a 0-dimensional tensor, longer and size-1 dimensions, other layer sizes.


def _draw_shape(rng) -> list[int]:
    return [rng.choice((1, 2, 3, 4, 5, 7)) for _ in range(rng.randint(1, 3))]


def draw_elementwise_cases(rng: random.Random, count: int) -> dict:
    """A fresh seed and `count` shapes, one of them a 0-dimensional tensor when there are two or more."""
    shapes = [_draw_shape(rng) for _ in range(count)]
    if count >= 2:
        shapes[rng.randrange(count)] = []
    return {"seed": rng.randrange(1, 10**6), "cases": shapes}


def draw_linear_cases(rng: random.Random, count: int) -> dict:
    """(batch, in, out, bias) cases: among them a square weight with batch != in (where a transposed weight runs
    and gives wrong numbers) and a batch of one (where a per-sample gradient is off by a leading 1 only)."""
    cases = [[rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 5), rng.random() < 0.7] for _ in range(count)]
    if count >= 1:
        n = rng.randint(2, 5)
        cases[0] = [n + rng.randint(1, 3), n, n, True]
    if count >= 2:
        cases[1][0] = 1
    rng.shuffle(cases)
    return {"seed": rng.randrange(1, 10**6), "cases": cases}


def draw_hvp_problems(rng: random.Random, count: int) -> dict:
    names = list(HVP_PROBLEMS)
    rng.shuffle(names)
    return {"problems": (names * count)[:count], "seed": rng.randrange(1, 10**6), "size": rng.randint(2, 7)}


def draw_layer_training(rng: random.Random, count: int) -> dict:
    """One training problem (`count` is not used: a layer is trained once) of another size, seed, length and rate."""
    return {
        "seed": rng.randrange(1, 10**6),
        "steps": rng.randint(10, 30),
        "lr": rng.choice((0.02, 0.05, 0.1)),
        "features": [rng.randint(1, 6), rng.randint(1, 4)],
    }


RTOL, ATOL = 1e-7, 1e-9


# ------------------------------------------------------------------------------------------ helpers


class Parts:
    """A check's named parts, one idea each; the verdict follows the one scoring rule (verdict.verdict_of)."""

    def __init__(self, title: str, *names: str):
        self.title = title
        self.parts = {name: Part(name) for name in names}

    def __getitem__(self, name: str) -> Part:
        return self.parts[name]

    def verdict(self, points: float) -> Verdict:
        return verdict_of(list(self.parts.values()), points, self.title)


def tensor_entry(value: Any, what: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise CheckFailed(f"{what}: the data could not be read back (expected a tensor).")
    return value.to(DT)


def wrong_tensor(got: Any, want: torch.Tensor, what: str, rtol: float = RTOL, atol: float = ATOL) -> str | None:
    """None when got matches want; else a description that gives no expected value."""
    if got is None:
        return f"{what} is missing."
    got = tensor_entry(got, what)
    if tuple(got.shape) != tuple(want.shape):
        return f"{what} has shape {tuple(got.shape)}; it should have shape {tuple(want.shape)}."
    err = (got - want).abs()
    bad = err > atol + rtol * want.abs()
    if not bad.any():
        return None
    where = ", ".join(str(tuple(i)) if len(i) != 1 else f"[{i[0]}]" for i in torch.nonzero(bad)[:4].tolist())
    return (
        f"{what} is wrong in {int(bad.sum())} of {bad.numel()} entries ({where}); largest error {float(err.max()):.3g}."
    )


def same_values(got: Any, want: torch.Tensor, rtol: float = 1e-6, atol: float = 1e-9) -> bool:
    return (
        got is not None
        and tuple(got.shape) == tuple(want.shape)
        and torch.allclose(got.to(DT), want, rtol=rtol, atol=atol)
    )


def vjp(fn: Callable, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    x = x.clone().requires_grad_()
    (g,) = torch.autograd.grad(fn(x), x, u)
    return g


def values_entry(
    part: Part,
    got: dict,
    x: torch.Tensor,
    g: torch.Tensor,
    reference: Callable,
    where: str,
    what: str = "forward",
    error_hint: str | None = None,
    grad_hint: Callable | None = None,
) -> None:
    """The usual first part: forward's output against reference(x), backward's gradient against autograd's.
    grad_hint(got_grad) -> str | None names a known mistake."""
    problem = wrong_tensor(got["output"], reference(x), f"{what}'s output {where}")
    if problem:
        part.fail(problem)
    if got["backward_error"]:
        part.fail(f"backward raised {got['backward_error']} {where}.", error_hint)
        return
    problem = wrong_tensor(got["grad"], vjp(reference, x, g), f"the gradient {where}")
    if problem:
        part.fail(problem, grad_hint(got["grad"]) if grad_hint and got["grad"] is not None else None)


# ------------------------------------------------------------------------------------------ the probes' data, validated
# A judge reads nothing it has not checked against the form its probe writes (answers.MISMATCH otherwise):
# a schema is a kind ("tensor", "text", "flag", "number", "int"; "tensor?" allows None), None (must be None),
# a dict (exactly these keys), a list (exactly these entries), or one of the classes below.


class ListOf:
    def __init__(self, item, length=None):
        self.item, self.length = item, length


class DictOf:
    def __init__(self, item):
        self.item = item


class OneOf:
    def __init__(self, *forms):
        self.forms = forms


class Literal:
    def __init__(self, value):
        self.value = value


def mismatch_of(why: str) -> CheckFailed:
    return CheckFailed(answers.MISMATCH.format(why=why))


def _text(value, what):
    if not isinstance(value, str):
        raise mismatch_of(f"{what} is a {type(value).__name__}, not a string")
    return value


_KINDS = {
    "tensor": answers.tensor,
    "text": _text,
    "flag": answers.flag,
    "number": answers.number,
    "int": answers.integer,
}


def valid(value: Any, schema: Any, what: str) -> Any:
    """`value` when it has the form `schema` describes; otherwise CheckFailed(answers.MISMATCH)."""
    if schema is None:
        if value is not None:
            raise mismatch_of(f"{what} is a {type(value).__name__}, not None")
    elif isinstance(schema, str):
        if not (schema.endswith("?") and value is None):
            _KINDS[schema.rstrip("?")](value, what)
    elif isinstance(schema, dict):
        answers.entry(value, what, list(schema))
        for key, item in schema.items():
            valid(value[key], item, f"{what}[{key!r}]")
    elif isinstance(schema, list):
        if not isinstance(value, list) or len(value) != len(schema):
            raise mismatch_of(f"{what} is not a list of {len(schema)}")
        for k, (v, item) in enumerate(zip(value, schema)):
            valid(v, item, f"{what}[{k}]")
    elif isinstance(schema, ListOf):
        if not isinstance(value, list) or (schema.length is not None and len(value) != schema.length):
            raise mismatch_of(f"{what} is not a list" + ("" if schema.length is None else f" of {schema.length}"))
        for k, v in enumerate(value):
            valid(v, schema.item, f"{what}[{k}]")
    elif isinstance(schema, DictOf):
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise mismatch_of(f"{what} is not a dict with string keys")
        for k, v in value.items():
            valid(v, schema.item, f"{what}[{k!r}]")
    elif isinstance(schema, OneOf):
        for form in schema.forms:
            try:
                return valid(value, form, what)
            except CheckFailed:
                pass
        raise mismatch_of(f"{what} has none of the forms expected")
    elif isinstance(schema, Literal):
        if type(value) is not type(schema.value) or value != schema.value:
            raise mismatch_of(f"{what} is not {schema.value!r}")
    else:
        raise TypeError(f"not a schema: {schema!r}")
    return value


def case_data(data: Any, cases: Sequence[Any], what: str, schema: Any, schema_first: Any = None) -> list:
    """The probe's list of per-case entries: exactly one per case, each of the form `schema`
    (`schema_first` for the first case, where it differs)."""
    items = answers.per_case(data, cases)
    for k, got in enumerate(items):
        valid(got, schema_first if k == 0 and schema_first is not None else schema, f"{what}'s case {k + 1}")
    return items


TENSOR, MAYBE_TENSOR, MAYBE_TEXT = "tensor", "tensor?", "text?"


SUMMARY = OneOf(
    {"kind": Literal("none")},
    {"kind": Literal("tensor"), "shape": ListOf("int"), "dtype": "text", "value": MAYBE_TENSOR},
    {"kind": Literal("other"), "type": "text"},
)


HVP_ENTRY = {"hvp": TENSOR, "requires_grad": "flag", "inputs_changed": "flag"}


LINEAR_ENTRY = {
    "output": TENSOR,
    "returned": OneOf(None, ListOf(SUMMARY)),
    "backward_error": MAYBE_TEXT,
    "grads": OneOf(None, ListOf(MAYBE_TENSOR)),
    "grads_error": MAYBE_TEXT,
    "two_arguments": OneOf(None, {"grads": OneOf(None, ListOf(MAYBE_TENSOR)), "error": MAYBE_TEXT}),
}


_SHAPE_OR_NONE = OneOf(None, ListOf("int"))


LAYER_DATA = {
    "parameters": DictOf({"shape": ListOf("int"), "is_parameter": "flag"}),
    "weight": MAYBE_TENSOR,
    "bias": MAYBE_TENSOR,
    "repr": "text",
    "repr_no_bias": "text",
    "parameters_no_bias": ListOf("text"),
    "bias_no_bias": "text",
    "losses": ListOf("number"),
    "grad_shapes": OneOf(None, [_SHAPE_OR_NONE] * 2),
    "node": "text",
    "node_inputs": ListOf("text"),
}


_VMAP_RESULT = OneOf({"error": "text"}, {"value": TENSOR})


_VMAP = {"in_dims=0": _VMAP_RESULT, "in_dims=-1": _VMAP_RESULT}


MODERN_ENTRY = {
    "output": TENSOR,
    "grad": MAYBE_TENSOR,
    "backward_error": MAYBE_TEXT,
    "jvp": MAYBE_TENSOR,
    "jvp_error": MAYBE_TEXT,
    "gradcheck_forward_ad": OneOf("flag", "text"),
    "vmap": _VMAP,
}


VMAP_ENTRY = {"output": TENSOR, "grad": MAYBE_TENSOR, "backward_error": MAYBE_TEXT, "vmap": _VMAP}


OP_ENTRY = {"output": TENSOR, "grad": MAYBE_TENSOR, "backward_error": MAYBE_TEXT, "opcheck": DictOf("text")}


OP_FIRST_ENTRY = {**OP_ENTRY, "compiled": OneOf({"error": "text"}, {"loss": "number", "grad": MAYBE_TENSOR})}


def twice_entry(count: int) -> dict:
    return {
        "outputs": [TENSOR] * count,
        "grad_all": MAYBE_TENSOR,
        "grad_all_error": MAYBE_TEXT,
        "first": MAYBE_TENSOR,
        "hvp": MAYBE_TENSOR,
        "second_error": MAYBE_TEXT,
        "gradgradcheck": OneOf("flag", "text"),
    }
