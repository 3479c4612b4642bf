"""A learner's launcher (a Python function that launches several Triton kernels, as a FlashAttention backward
does) described as data where it runs, and replayed from the kernels' text where grading decides.

    with recording(inputs={"q": q, ...}) as plan:      # in the learner's process: the launches run as usual,
        dq, dk, dv = flash_backward(q, ...)             # each one described as it goes
    plan.returned((dq, dk, dv))
    data = plan.data()                                  # plain: records, launches, buffers' first contents

    replay(data, inputs)                                # in the kernel runner: the kernels rebuilt from their text

A launch is its kernel's name, grid, numbers and constexprs, and its tensors, each a view (shape, stride, offset,
dtype) of a storage: one of the case's inputs (by name), or a *buffer* the launcher made, whose content is taken
when a launch first receives it (zeros, or what PyTorch put there: a delta computed before the kernels). The replay
makes every storage afresh, runs the launches in order, and reads the returned views from the storages the
launches wrote. Nothing the learner's process computed counts, except the buffers' first contents, which the
judges replace before the replay where they are neither zeros nor a tensor the grader computes itself
(nb07/judges/buffers.py: a buffer that holds a gradient, in any disguise, is a copy, not a computation).
"""

from __future__ import annotations

import base64
import binascii
import inspect
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from ..course_kernels import LAUNCH_OPTIONS
from ..feedback import CheckFailed
from .launches import strided_view, view_layout

MAX_LAUNCHES = 64  # a backward of these exercises launches a handful of kernels
MAX_BUFFER_BYTES = 8 << 20


class Plan:
    """The launches recorded while a launcher ran."""

    def __init__(self, inputs: dict[str, torch.Tensor]) -> None:
        self.inputs = {t.untyped_storage().data_ptr(): name for name, t in inputs.items()}
        self.records: dict[str, dict] = {}
        self.launches: list[dict] = []
        self.buffers: dict[int, dict] = {}  # storage address -> {"id", "content"}
        self.returns: list[dict | None] = []

    def view(self, t: torch.Tensor) -> dict:
        """A tensor as a view of a storage: an input's (by name) or a buffer's (its content taken now, the first
        time a launch receives it)."""
        storage = t.untyped_storage()
        address = storage.data_ptr()
        where: dict[str, Any]
        if address in self.inputs:
            where = {"input": self.inputs[address]}
        else:
            if address not in self.buffers:
                if storage.nbytes() > MAX_BUFFER_BYTES:
                    raise CheckFailed(
                        f"a kernel was handed a buffer of {storage.nbytes()} bytes: more than the cases need."
                    )
                raw = torch.empty(0, dtype=torch.uint8, device=t.device).set_(storage).to("cpu")
                content = base64.b64encode(raw.numpy().tobytes()).decode("ascii")  # JSON all the way to the replay
                self.buffers[address] = {"id": len(self.buffers), "content": content}
            where = {"buffer": self.buffers[address]["id"]}
        try:
            return where | view_layout(t)
        except TypeError as exc:
            raise CheckFailed(str(exc)) from None

    def launched(self, kernel: Any, args: tuple, kwargs: dict, grid: Any) -> None:
        from coursetools.kernel_text import take

        fn = kernel.fn
        name = fn.__name__
        if len(self.launches) >= MAX_LAUNCHES:
            raise CheckFailed(f"more than {MAX_LAUNCHES} kernel launches: the check's cases need a handful.")
        if name not in self.records:
            self.records[name] = take(kernel)
        given = {k: v for k, v in kwargs.items() if k not in LAUNCH_OPTIONS}
        bound = inspect.signature(fn).bind(*args, **given)
        bound.apply_defaults()
        if callable(grid):
            grid = grid(dict(bound.arguments))
        grid = tuple(int(g) for g in (grid if isinstance(grid, (tuple, list)) else (grid,)))
        described: dict[str, Any] = {}
        for key, value in bound.arguments.items():
            if isinstance(value, torch.Tensor):
                described[key] = {"tensor": self.view(value)}
            elif isinstance(value, (bool, int, float)) or value is None:
                described[key] = {"value": value}
            else:
                described[key] = {"value": getattr(value, "value", repr(value))}  # a tl.constexpr, a dtype
        self.launches.append({"kernel": name, "grid": list(grid), "args": described})

    def returned(self, values: Sequence[Any]) -> None:
        """What the launcher handed back, each a view of a storage (None for anything else)."""
        self.returns = [self.view_of_result(v) for v in values]

    def view_of_result(self, value: Any) -> dict | None:
        if not isinstance(value, torch.Tensor):
            return None
        address = value.untyped_storage().data_ptr()
        if address not in self.buffers and address not in self.inputs:
            return {"made_after": True, "shape": list(value.shape)}  # PyTorch made it after the launches
        return self.view(value)

    def data(self) -> dict:
        return {
            "records": self.records,
            "launches": self.launches,
            "buffers": [b["content"] for b in sorted(self.buffers.values(), key=lambda b: b["id"])],
            "returns": self.returns,
        }


@contextmanager
def recording(inputs: dict[str, torch.Tensor]) -> Iterator[Plan]:
    """While active, every Triton launch (interpreted or compiled) is described in the plan, then runs as usual."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    plan = Plan(inputs)
    originals = {cls: cls.run for cls in (InterpretedFunction, JITFunction)}

    def recorder(original: Any) -> Any:
        def run(self: Any, *args: Any, grid: Any, warmup: bool = False, **kwargs: Any) -> Any:
            if not warmup:
                plan.launched(self, args, kwargs, grid)
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)

        return run

    for cls, original in originals.items():
        cls.run = recorder(original)  # type: ignore[method-assign]
    try:
        yield plan
    finally:
        for cls, original in originals.items():
            cls.run = original  # type: ignore[method-assign]


# --------------------------------------------------------------------------------------------- the replay


def storages_of(data: dict, inputs: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], list[torch.Tensor]]:
    """(each input afresh, each buffer afresh from the content the plan gives it), as raw bytes."""
    raw = {name: _bytes_of(t.contiguous().clone()) for name, t in inputs.items()}
    return raw, [buffer_bytes(b) for b in data["buffers"]]


def buffer_bytes(content: object) -> torch.Tensor:
    """A buffer's content as the plan carries it (base64), as raw bytes; CheckFailed for anything else."""
    try:
        data = base64.b64decode(content, validate=True) if isinstance(content, str) else None
    except (binascii.Error, ValueError):
        data = None
    if data is None:
        raise CheckFailed("a buffer of the launches is not described as bytes")
    return torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)


def _bytes_of(t: torch.Tensor) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8).set_(t.untyped_storage())


def as_view(description: dict, inputs: dict[str, torch.Tensor], buffers: list[torch.Tensor]) -> torch.Tensor:
    """The tensor a description names, on the replay's own storages (a view outside its storage is refused)."""
    try:
        raw = inputs[description["input"]] if "input" in description else buffers[int(description["buffer"])]
        return strided_view(raw, description)
    except (KeyError, IndexError, TypeError, ValueError):
        raise CheckFailed("a launch's tensor reaches outside the memory it was made in") from None


def replay(
    data: dict, kernels: dict[str, Any], inputs: dict[str, torch.Tensor], watch: Any
) -> tuple[list[torch.Tensor | None], list[dict]]:
    """Run the plan's launches in order with the rebuilt kernels on fresh storages; (the returned views' values,
    what `watch(handed)` saw of each launch: a context manager yielding its counts)."""
    raw_inputs, buffers = storages_of(data, inputs)
    storages = list(raw_inputs.values()) + buffers
    seen = []
    for launch in data["launches"]:
        kernel = kernels[launch["kernel"]]
        args = {}
        for name in inspect.signature(kernel.fn).parameters:
            if name not in launch["args"]:
                raise CheckFailed(f"a launch of `{launch['kernel']}` does not give its argument `{name}`")
            arg = launch["args"][name]
            args[name] = as_view(arg["tensor"], raw_inputs, buffers) if "tensor" in arg else arg["value"]
        with watch(storages) as counts:
            kernel[tuple(launch["grid"])](**args)
        seen.append(dict(counts))
    values = [
        None if r is None or r.get("made_after") else as_view(r, raw_inputs, buffers).to(torch.float64).clone()
        for r in data["returns"]
    ]
    return values, seen
