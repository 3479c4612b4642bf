"""Calling a learner's Function the way a user's code does: through ``torch.autograd.Function.apply`` as PyTorch
defines it, taken at import (a subclass that overrides ``apply`` with plain PyTorch is not asked), and taking only
outputs that the learner's own node made (an output whose ``grad_fn`` is a node of another class earns nothing)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..feedback import CheckFailed
from .call import call_learner
from .torch_errors import translate

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


def engine_agrees(again: Callable[[], tuple], seeds: Any, returns: Any, name: str) -> None:
    """Backward as autograd's engine runs it (what `loss.backward()` does), on a fresh forward (`again()` ->
    (outputs, forward's arguments)), must give what the direct call gave (`returns`, for grad_outputs `seeds`): a
    backward that is right only when a probe calls it is not right. Compared only where the direct return is well
    formed (one value per argument, None for each that needs no gradient, gradients of their inputs' shape and
    dtype) and the outputs match the seeds: else the interface or forward is judged on the direct call."""
    returns = tuple(returns) if isinstance(returns, (tuple, list)) else (returns,)
    seeds = list(seeds) if isinstance(seeds, (tuple, list)) else [seeds]
    outputs, args = again()
    outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    if len(outputs) != len(seeds) or not all(
        isinstance(o, torch.Tensor) and o.device.type != "meta" and o.dtype == g.dtype and o.shape == g.shape
        for o, g in zip(outputs, seeds)
    ):
        return  # (meta tensors hold no values)
    slots = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad]
    if (
        not slots
        or len(returns) != len(args)
        or any(returns[i] is not None for i in range(len(args)) if i not in slots)
    ):
        return
    if not all(
        isinstance(returns[i], torch.Tensor) and returns[i].shape == args[i].shape and returns[i].dtype == args[i].dtype
        for i in slots
    ):
        return
    try:
        engine = torch.autograd.grad(outputs, [args[i] for i in slots], [g.clone() for g in seeds], allow_unused=True)
    except Exception as exc:  # noqa: BLE001 -- the learner's backward failed inside the engine only
        raise CheckFailed(
            f"The backward of `{name}` works when called directly but raises when autograd's engine calls it "
            f"(as `loss.backward()` does): {translate(exc)}"
        ) from exc
    for i, e in zip(slots, engine):
        if e is None or not torch.allclose(e.detach(), returns[i].detach(), rtol=1e-9, atol=1e-12, equal_nan=True):
            raise CheckFailed(
                f"The backward of `{name}` gives a different gradient for argument {i + 1} when autograd's engine "
                "calls it (as `loss.backward()` does) than when it is called directly: backward must compute "
                "from its ctx and grad_output alone, the same way every time."
            )
