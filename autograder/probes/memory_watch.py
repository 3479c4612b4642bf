"""What a kernel run in Triton's interpreter reads and writes, seen at each of its loads, stores and atomics.

    with watching(handed=[buffers...], reads=Spans.of(views) or Spans.per_row(views),
                  writes=Spans.per_row(outputs)) as seen:
        kernel[grid](...)
    seen["reads_outside"], seen["writes_elsewhere"], seen["refused_reads"], seen["refused_writes"]

The interpreter turns every tl.load and tl.store -- masked or not, through a pointer, a block pointer or a tensor
descriptor -- and every atomic into calls of its builder's memory methods (taken here as Triton defines them, before
any kernel runs). Wrapped for the body's length, they count:
- reads_outside: entries a program read (its mask on) that are not in the spans it may read (its own row, for a
  row kernel): a load without the mask it needs, or at the wrong offset, whatever it does with what it read;
- writes_elsewhere: entries a program stored into another program's row (a race on a GPU, where the programs run
  at once; the interpreter runs them one by one, so the last writer wins and the values can look right);
- races (when asked for): plain stores (not atomics) into an address another program of the launch stored into:
  on a GPU the programs run at once and the last writer is anyone's guess;
- reads_costly: entries a program read (its mask on) inside `costly` spans: memory it may read but need not (a causal
  attention kernel's key blocks entirely above its diagonal), counted apart;
- refused_reads, refused_writes: accesses outside every tensor handed to the launch. Those are not performed at all
  (their lanes are masked off; a load gives its `other`, or 0, there): the process the kernel runs in stays whole,
  whatever address it computes.
Compiled kernels on a GPU are not seen here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

try:
    from triton.runtime.interpreter import InterpreterBuilder as _Builder
    from triton.runtime.interpreter import TensorHandle as _Handle

    _METHODS = {
        name: getattr(_Builder, name)
        for name in ("create_masked_load", "create_masked_store", "create_atomic_rmw", "create_atomic_cas")
    }
except ImportError:  # pragma: no cover - triton is pinned in requirements.txt
    _Builder, _Handle, _METHODS = None, None, {}

_EMPTY = (np.zeros(0, np.uint64), np.zeros(0, np.uint64))


@dataclass(frozen=True)
class Spans:
    """Byte spans [start, end) of memory, sorted, for every program (`common`) or for program r (`rows[r]`)."""

    common: tuple[np.ndarray, np.ndarray] | None = None
    rows: dict[int, tuple[np.ndarray, np.ndarray]] | None = None

    @classmethod
    def of(cls, views: Sequence[torch.Tensor]) -> Spans:
        """The entries of these views, for any program."""
        starts, ends = [], []
        for view in views:
            s, e = _entry_spans(view)
            starts.append(s.reshape(-1))
            ends.append(e.reshape(-1))
        return cls(common=_sorted(starts, ends))

    @classmethod
    def per_program(cls, views_of: dict[int, Sequence[torch.Tensor]]) -> Spans:
        """For each program (by program_index), the entries of its own views: a tiled kernel's own memory."""
        rows = {}
        for program, views in views_of.items():
            spans = [_entry_spans(v) for v in views]
            rows[program] = _sorted([s.reshape(-1) for s, _ in spans], [e.reshape(-1) for _, e in spans])
        return cls(rows=rows)

    @classmethod
    def per_row(cls, views: Sequence[torch.Tensor]) -> Spans:
        """Row r of each view (entry r of a 1-D one) for program r: a row kernel's own memory."""
        rows: dict[int, tuple[list, list]] = {}
        for view in views:
            s, e = _entry_spans(view)
            for r in range(s.shape[0] if s.ndim else 0):
                mine = rows.setdefault(r, ([], []))
                mine[0].append(s[r].reshape(-1))
                mine[1].append(e[r].reshape(-1))
        return cls(rows={r: _sorted(*mine) for r, mine in rows.items()})

    def of_program(self, program: int) -> tuple[np.ndarray, np.ndarray]:
        if self.common is not None:
            return self.common
        return (self.rows or {}).get(program, _EMPTY)

    def others(self, program: int) -> tuple[np.ndarray, np.ndarray]:
        """The memory of every program but this one (a per-row Spans)."""
        starts = [s for r, (s, _) in (self.rows or {}).items() if r != program]
        ends = [e for r, (_, e) in (self.rows or {}).items() if r != program]
        return _sorted(starts, ends) if starts else _EMPTY


def _entry_spans(view: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) byte addresses of each entry of the view, in the view's shape."""
    size = view.element_size()
    if view.numel() == 0:
        return np.zeros((0,), np.uint64), np.zeros((0,), np.uint64)
    last = view.storage_offset() + 1 + sum((n - 1) * st for n, st in zip(view.shape, view.stride()))
    offsets = torch.arange(last).as_strided(view.shape, view.stride(), view.storage_offset())
    if offsets.ndim == 0:
        offsets = offsets.reshape(1)
    starts = np.uint64(view.untyped_storage().data_ptr()) + offsets.numpy().astype(np.uint64) * np.uint64(size)
    return starts, starts + np.uint64(size)


def _sorted(starts: list, ends: list) -> tuple[np.ndarray, np.ndarray]:
    start = np.concatenate(starts) if starts else np.zeros(0, np.uint64)
    end = np.concatenate(ends) if ends else np.zeros(0, np.uint64)
    order = np.argsort(start, kind="stable")
    return start[order], end[order]


def _inside(addresses: np.ndarray, spans: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    starts, ends = spans
    if not len(starts):
        return np.zeros(addresses.shape, bool)
    where = np.searchsorted(starts, addresses, side="right") - 1
    return (where >= 0) & (addresses < ends[np.clip(where, 0, None)])


def program_index(x: int, y: int = 0, z: int = 0, grid: Sequence[int] = (1, 1, 1)) -> int:
    """The program (x, y, z) of a launch on `grid`, as one number: x for a 1-D grid (a row kernel's row)."""
    nx, ny = (list(grid) + [1, 1])[:2]
    return x + nx * (y + ny * z)


def _int1() -> Any:
    import triton.language as tl

    return tl.int1


class _Watcher:
    """The counts of one watched body, and the interpreter's memory methods as they run while it is watched."""

    def __init__(
        self,
        handed: Sequence[torch.Tensor],
        reads: Spans,
        writes: Spans | None,
        costly: Spans | None = None,
        races: bool = False,
    ) -> None:
        self.reads, self.writes, self.costly = reads, writes, costly
        self.seen = {"reads_outside": 0, "writes_elsewhere": 0, "refused_reads": 0, "refused_writes": 0}
        if costly is not None:
            self.seen["reads_costly"] = 0
        self.stored_by: dict[int, int] | None = None
        if races:  # address -> the program that stored there first (plain stores only)
            self.stored_by, self.seen["races"] = {}, 0
        storages = [t.untyped_storage() for t in handed]
        self.safe = _sorted(
            [np.array([s.data_ptr()], np.uint64) for s in storages],
            [np.array([s.data_ptr() + s.nbytes()], np.uint64) for s in storages],
        )

    def checked(self, builder: Any, ptrs: Any, mask: Any, read: bool, write: bool) -> Any:
        """The mask with the lanes outside every handed tensor turned off, after counting what the lanes on do."""
        addresses = np.asarray(ptrs.data, dtype=np.uint64)
        on = np.broadcast_to(np.asarray(True if mask is None else mask.data, dtype=bool), addresses.shape)
        allowed = _inside(addresses, self.safe)
        refused = int((on & ~allowed).sum())
        self.seen["refused_reads"] += refused if read else 0
        self.seen["refused_writes"] += refused if write else 0
        program = program_index(*(int(i) for i in builder.grid_idx), grid=builder.grid_dim)
        if read:
            self.seen["reads_outside"] += int((on & ~_inside(addresses, self.reads.of_program(program))).sum())
            if self.costly is not None:
                self.seen["reads_costly"] += int((on & _inside(addresses, self.costly.of_program(program))).sum())
        if write and not read and self.stored_by is not None:  # a plain store (an atomic's address may be shared)
            for address in addresses[on & allowed].tolist():
                if self.stored_by.setdefault(address, program) != program:
                    self.seen["races"] += 1
        if write and self.writes is not None and self.writes.rows is not None:
            elsewhere = on & allowed & _inside(addresses, self.writes.others(program))
            self.seen["writes_elsewhere"] += int(elsewhere.sum())
        if refused:
            return _Handle(np.asarray(on & allowed), mask.dtype if mask is not None else _int1())
        return mask

    def methods(self) -> dict[str, Callable]:
        """The builder's memory methods, each counting and masking before it calls Triton's own."""
        checked, original = self.checked, _METHODS

        def load(builder: Any, ptrs: Any, mask: Any, other: Any, *args: Any, **kwargs: Any) -> Any:
            mask = checked(builder, ptrs, mask, True, False)
            return original["create_masked_load"](builder, ptrs, mask, other, *args, **kwargs)

        def store(builder: Any, ptrs: Any, value: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
            mask = checked(builder, ptrs, mask, False, True)
            return original["create_masked_store"](builder, ptrs, value, mask, *args, **kwargs)

        def rmw(builder: Any, op: Any, ptrs: Any, value: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
            mask = checked(builder, ptrs, mask, True, True)
            return original["create_atomic_rmw"](builder, op, ptrs, value, mask, *args, **kwargs)

        def cas(builder: Any, ptrs: Any, *args: Any, **kwargs: Any) -> Any:
            outside = ~_inside(np.asarray(ptrs.data, dtype=np.uint64), self.safe)
            if outside.any():  # an atomic_cas has no mask to turn lanes off with: the run stops
                self.seen["refused_writes"] += int(outside.sum())
                raise IndexError("an atomic_cas outside every tensor the kernel was handed")
            checked(builder, ptrs, None, True, True)
            return original["create_atomic_cas"](builder, ptrs, *args, **kwargs)

        return {"create_masked_load": load, "create_masked_store": store, "create_atomic_rmw": rmw,
                "create_atomic_cas": cas}  # fmt: skip


@contextmanager
def watching(
    handed: Sequence[torch.Tensor],
    reads: Spans,
    writes: Spans | None = None,
    costly: Spans | None = None,
    races: bool = False,
) -> Iterator[dict]:
    """While the body runs a kernel in Triton's interpreter: what its programs read outside `reads` (and inside
    `costly`), stored into another program's `writes` (per-program spans), and tried outside every tensor in
    `handed` (not performed)."""
    watcher = _Watcher(handed, reads, writes, costly, races)
    if _Builder is None:
        yield watcher.seen
        return
    before = {name: _Builder.__dict__.get(name) for name in _METHODS}
    for name, method in watcher.methods().items():
        setattr(_Builder, name, method)
    try:
        yield watcher.seen
    finally:
        for name, method in before.items():
            setattr(_Builder, name, method)
