"""Calling a learner's Function the way a user's code does: through ``torch.autograd.Function.apply`` as PyTorch
defines it, taken at import (a subclass that overrides ``apply`` with plain PyTorch is not asked), and taking only
outputs that the learner's own node made (an output whose ``grad_fn`` is a node of another class earns nothing)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..feedback import CheckFailed
from .call import call_learner

_BASE_APPLY = torch.autograd.Function.apply.__func__  # type: ignore[attr-defined]


def function_class(obj: Any, name: str) -> type:
    """The learner's Function subclass, or a message that says what was passed instead."""
    if isinstance(obj, type) and issubclass(obj, torch.autograd.Function):
        return obj
    if isinstance(obj, torch.autograd.Function):
        raise CheckFailed(
            f"`{name}` is an instance of a Function; pass the class itself (a subclass of torch.autograd.Function): "
            "the check calls its `apply`."
        )
    raise CheckFailed(
        f"`{name}` should be a subclass of torch.autograd.Function (the class itself, not an instance or its apply), "
        f"but it is {obj.__name__ if isinstance(obj, type) else 'a ' + type(obj).__name__}."
    )


def base_apply(F: type) -> Callable[..., Any]:
    """F's apply as torch.autograd.Function defines it, whatever F says its apply is (under vmap or forward-mode AD,
    where outputs carry no node to look at)."""

    def apply(*args: Any, **kwargs: Any) -> Any:
        return _BASE_APPLY(F, *args, **kwargs)

    return apply


def made_by(output: Any, F: type) -> bool:
    """Whether a tensor output was made by F's node (an output with no grad_fn says nothing either way)."""
    node = getattr(output, "grad_fn", None)
    return node is None or getattr(type(node), "_forward_cls", None) is F


def function_apply(obj: Any, name: str) -> Callable[..., Any]:
    """The learner's Function called as a user would call it, with a message for an output its node did not make."""
    F = function_class(obj, name)
    apply = base_apply(F)

    def checked(*args: Any, **kwargs: Any) -> Any:
        out = apply(*args, **kwargs)
        outputs = out if isinstance(out, (tuple, list)) else (out,)
        strangers = [type(o.grad_fn).__name__ for o in outputs if isinstance(o, torch.Tensor) and not made_by(o, F)]
        if strangers:
            raise CheckFailed(
                f"The output of `{name}.apply` was not made by {F.__name__}'s own forward: its grad_fn is "
                f"{strangers[0]}, not a node of {F.__name__}. Let torch.autograd.Function.apply run your forward "
                "(do not override apply), and return the tensors forward computed."
            )
        return out

    return checked


def learner_apply(obj: Any, name: str, *args: Any) -> Any:
    """function_apply(obj, name)(*args) under call_learner (time limit, the learner's frame in messages)."""
    return call_learner(function_apply(obj, name), *args, name=f"{name}.apply")
