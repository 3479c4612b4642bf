"""Launches of the course's stand-in kernels (autograder/course_kernels.py), computed where the learner's code cannot
write what they did.

A Function check of notebooks 05 and 06 binds the notebook's kernel names to the course's stand-ins. Each launch of
one goes to a launcher, which computes it, writes the results back into the tensors the Function handed it, logs
what it stored (`Launch`) and answers the launch's number:
- while a submission is graded, the grader (autograder/grading/launch_service.py): the launch's tensors travel on a
  socket in the grader's own folder of the record channel, the stand-in runs in the grader's process on that data,
  and the log the judges read is the grader's, which nothing in the kernel's process can write;
- anywhere else (a learner's notebook, the self-check, the tests), this process's own `LOCAL` log.
The probe names, for each window it watches (a forward, a backward), the numbers its launches were answered with
(`Window`). Those numbers are the learner's process's word; what they lead to is the grader's: a number that is no
launch's, or another test cell's, leads nowhere (autograder/judges/launch_evidence.py).

On the wire, a frame is a length-prefixed JSON header and the bytes of the storages it names, each whole (a kernel
may reach any of its storage through its pointer); the answer is a header with the launch's number (or the
stand-in's error) and the storages as the stand-in left them.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

LAUNCH_SOCKET = "launches.sock"  # in the record channel's grader folder (probes/channel.SOCKET_FOLDER)
MAX_LAUNCH_BYTES = 64 << 20  # the storages of one launch, all together
KEEP_LAUNCHES = 4096  # the last launches a log keeps
LOG_BYTES = 512 << 20  # and at most this much of what they stored
DTYPES = {
    str(t).removeprefix("torch."): t
    for t in (torch.float64, torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.int32, torch.int16)
} | {"int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}
_LENGTH = struct.Struct("<Q")
ERRORS: dict[str, type[Exception]] = {"TypeError": TypeError, "ValueError": ValueError, "IndexError": IndexError}


@dataclass
class Launch:
    """What one launch of a stand-in stored, as its launcher saw it: for each view it wrote, `stored`, the memory from
    the view's first entry to its last in the view's dtype, NaN where the view does not reach (strides wider than a
    row: the gaps hold what the launch did not write), and `written`, the view's values (float64, flattened);
    `read`, the values it computed from (float64: a row kernel's rows of logits); `cell`, the test cell that was
    running when it came (the grader's log)."""

    number: int
    name: str
    stored: list[torch.Tensor] = field(default_factory=list)
    written: list[torch.Tensor] = field(default_factory=list)
    read: list[torch.Tensor] = field(default_factory=list)
    cell: str | None = None

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (*self.stored, *self.written, *self.read))


@dataclass
class LaunchLog:
    """Launches by number: the last ones, as many as KEEP_LAUNCHES and LOG_BYTES allow."""

    launches: dict[int, Launch] = field(default_factory=dict)
    numbers: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    lock: threading.Lock = field(default_factory=threading.Lock)
    nbytes: int = 0

    def add(self, name: str, done: tuple[list[torch.Tensor], list[torch.Tensor]], cell: str | None = None) -> int:
        """Log a launch of `name` that wrote the views done[0] after reading done[1]; answer its number."""
        stored, read = done
        written = [t.detach().to("cpu", torch.float64, copy=True).flatten() for t in stored]
        read = [t.detach().to("cpu", torch.float64, copy=True) for t in read]
        launch = Launch(0, name, [span(t) for t in stored], written, read, cell)
        with self.lock:
            launch.number = next(self.numbers)
            self.launches[launch.number] = launch
            self.nbytes += launch.nbytes
            while len(self.launches) > KEEP_LAUNCHES or self.nbytes > LOG_BYTES and len(self.launches) > 1:
                self.nbytes -= self.launches.pop(next(iter(self.launches))).nbytes
        return launch.number

    def of(self, numbers: Any, names: set[str], cell: str | None = None) -> list[Launch]:
        """The launches these numbers name, in their order and each once, that are launches of `names` (and, where
        `cell` is given, came while that cell ran); a number that is no such launch's is left out."""
        found: list[Launch] = []
        for n in numbers if isinstance(numbers, (list, tuple)) else ():
            launch = self.launches.get(n) if type(n) is int else None
            if launch is None or launch in found or launch.name not in names:
                continue
            if cell is None or launch.cell == cell:
                found.append(launch)
        return found


def span(view: torch.Tensor) -> torch.Tensor:
    """The memory from the view's first entry to its last (strides >= 0), in its dtype, on the CPU: the view's
    values where it reaches, NaN between."""
    extent = 1 + sum((n - 1) * s for n, s in zip(view.shape, view.stride())) if view.numel() else 0
    out = torch.full((extent,), float("nan"), dtype=view.dtype)
    torch.as_strided(out, view.shape, view.stride()).copy_(view.detach().cpu())
    return out


LOCAL = LaunchLog()
made: list[int] = []  # the numbers this process's launches were answered with, in order (the probe's windows)
_remote: list[str] = []
_Thread = threading.Thread  # as imported, before any learner code runs


def use_grader(folder: str) -> bool:
    """In a grading kernel, before any learner code runs: launches go to the grader's socket in `folder`."""
    path = os.path.join(folder, LAUNCH_SOCKET)
    if os.path.exists(path):
        _remote[:] = [path]
    return bool(_remote)


def launch(name: str, grid: tuple[int, ...] | None, values: tuple) -> int:
    """Run one launch of the stand-in `name` on `values` (tensors and numbers, in the order its computation reads
    them) and answer its number. Done in a thread of its own: PyTorch's profiler records the allocations of the
    thread they are made in, so the launcher's copies stay out of the memory a check measures."""
    number = _aside(_launch_remote if _remote else _launch_here, name, grid, values)
    made.append(number)
    return number


def _launch_here(name: str, grid: tuple[int, ...] | None, values: tuple) -> int:
    from ..course_kernels import execute

    return LOCAL.add(name, execute(name, grid, values))


def _aside(fn: Any, *args: Any) -> Any:
    out: list[Any] = []
    failure: list[BaseException] = []

    def body() -> None:
        try:
            out.append(fn(*args))
        except BaseException as error:  # handed back to the caller's thread
            failure.append(error)

    helper = _Thread(target=body, name="launch")
    helper.start()
    helper.join()
    if failure:
        raise failure[0]
    return out[0]


@dataclass
class Window:
    """The launch numbers answered while it was open (the probe's word: the judges look them up in the log)."""

    start: int = 0
    numbers: list[int] = field(default_factory=list)


@contextmanager
def window() -> Iterator[Window]:
    seen = Window(len(made))
    try:
        yield seen
    finally:
        seen.numbers = list(made[seen.start :])


def layout(t: Any) -> dict | None:
    """What a judge needs, beside a returned tensor's values, to find it in a launch's memory: dtype and strides."""
    if not isinstance(t, torch.Tensor) or t.device.type == "meta":
        return None
    return {"dtype": str(t.dtype).removeprefix("torch."), "stride": list(t.stride())}


# --------------------------------------------------------------------------------------------- the wire


def pack(name: str, grid: tuple[int, ...] | None, values: tuple) -> tuple[dict, list[torch.Tensor]]:
    """(header, storages as uint8 CPU tensors) of a launch: each tensor by its storage (each storage once), offset,
    shape, strides and dtype; numbers as they are."""
    storages: list[Any] = []
    blobs: list[torch.Tensor] = []

    def describe(value: Any) -> dict:
        if isinstance(value, torch.Tensor):
            if value.device.type == "meta":
                raise TypeError("a kernel cannot read a tensor on the meta device")
            storage = value.untyped_storage()
            index = next((i for i, s in enumerate(storages) if _same_storage(s, storage)), None)
            if index is None:
                index = len(storages)
                storages.append(storage)
                blobs.append(torch.empty(0, dtype=torch.uint8, device=value.device).set_(storage).to("cpu"))
            return {"storage": index} | view_layout(value)
        if value is None or type(value) in (bool, int, float):
            return {"value": value}
        raise TypeError(f"a kernel argument of type {type(value).__name__}")

    header = {
        "name": name,
        "grid": list(grid) if grid is not None else None,
        "values": [describe(v) for v in values],
        "storages": [b.numel() for b in blobs],
    }
    return header, blobs


def _same_storage(a: Any, b: Any) -> bool:
    return a.data_ptr() == b.data_ptr() and a.nbytes() == b.nbytes() and a.device == b.device


def unpack(header: Any, blobs: list[bytes]) -> tuple[str, tuple[int, ...] | None, tuple]:
    """(name, grid, values) rebuilt from a launch's header and bytes, read as untrusted input: ValueError when it
    names anything outside them."""
    if not isinstance(header, dict):
        raise ValueError("not a launch")
    name, grid = header.get("name"), header.get("grid")
    if not isinstance(name, str) or not (grid is None or _ints(grid, lowest=1)):
        raise ValueError("not a launch")
    storages = [
        torch.frombuffer(bytearray(b), dtype=torch.uint8) if b else torch.empty(0, dtype=torch.uint8) for b in blobs
    ]

    def build(desc: Any) -> Any:
        if not isinstance(desc, dict):
            raise ValueError("not an argument")
        if "value" in desc:
            value = desc["value"]
            if value is None or type(value) in (bool, int, float):
                return value
            raise ValueError("not a number")
        index = desc.get("storage")
        if type(index) is not int or not 0 <= index < len(storages):
            raise ValueError("no such storage")
        return strided_view(storages[index], desc)

    values = header.get("values")
    if not isinstance(values, list) or len(values) > 32:
        raise ValueError("not a launch")
    return name, tuple(grid) if grid is not None else None, tuple(build(d) for d in values)


def view_layout(t: torch.Tensor) -> dict:
    """A tensor as a view of its storage, on the wire: dtype, offset, shape and strides (in entries)."""
    dtype = str(t.dtype).removeprefix("torch.")
    if dtype not in DTYPES:
        raise TypeError(f"a kernel argument of dtype {dtype}")
    return {"dtype": dtype, "offset": int(t.storage_offset()), "shape": list(t.shape), "stride": list(t.stride())}


def strided_view(raw: torch.Tensor, layout: dict) -> torch.Tensor:
    """The view a `view_layout` describes, on a storage's raw bytes (uint8), read as untrusted input: ValueError
    when it is no layout or reaches past the storage's end."""
    dtype = DTYPES.get(layout.get("dtype"))  # type: ignore[arg-type]
    shape, stride, offset = layout.get("shape"), layout.get("stride"), layout.get("offset")
    if dtype is None:
        raise ValueError("no such dtype")
    if not (_ints(shape, 0) and _ints(stride, 0) and len(shape) == len(stride)) or type(offset) is not int:
        raise ValueError("not a tensor's layout")
    size = torch.empty((), dtype=dtype).element_size()
    last = offset + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else offset - 1
    if offset < 0 or (last + 1) * size > raw.numel():
        raise ValueError("a tensor past the end of its storage")
    typed = raw[: raw.numel() // size * size].view(dtype)
    return torch.as_strided(typed, shape, stride, offset)


def _ints(values: Any, lowest: int) -> bool:
    return isinstance(values, list) and len(values) <= 8 and all(type(v) is int and v >= lowest for v in values)


def send_frame(conn: socket.socket, header: dict, blobs: list[Any]) -> None:
    head = json.dumps(header).encode()
    conn.sendall(_LENGTH.pack(len(head)) + head)
    for blob in blobs:
        conn.sendall(blob.numpy().data if isinstance(blob, torch.Tensor) else blob)


def read_frame(conn: socket.socket, limit: int = MAX_LAUNCH_BYTES) -> tuple[dict, list[bytes]]:
    """A header and the storages it announces; ValueError when it announces more than `limit` bytes, or breaks off."""
    (length,) = _LENGTH.unpack(_exactly(conn, _LENGTH.size))
    if length > 1 << 16:
        raise ValueError("a header too long")
    try:
        header = json.loads(_exactly(conn, length))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError("not a header") from exc
    sizes = header.get("storages") if isinstance(header, dict) else None
    if not isinstance(sizes, list) or len(sizes) > 32 or not all(type(n) is int and n >= 0 for n in sizes):
        raise ValueError("storages not said")
    if sum(sizes) > limit:
        raise ValueError(f"the launch's tensors are larger than the grader takes ({limit >> 20} MiB)")
    return header, [_exactly(conn, n) for n in sizes]


def _exactly(conn: socket.socket, n: int) -> bytes:
    parts, left = [], n
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            raise ValueError("the frame broke off")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _launch_remote(name: str, grid: tuple[int, ...] | None, values: tuple) -> int:
    """The launch computed by the grader: the storages go there and come back as the stand-in left them, written
    back into this process's tensors."""
    header, blobs = pack(name, grid, values)
    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    storages: list[Any] = []
    for t in tensors:
        if not any(_same_storage(s, t.untyped_storage()) for s in storages):
            storages.append(t.untyped_storage())
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(_remote[0])
        send_frame(conn, header, blobs)
        answer, back = read_frame(conn)
    if "error" in answer:
        raise ERRORS.get(str(answer.get("type")), RuntimeError)(str(answer["error"])[:2000])
    number = answer.get("number")
    if type(number) is not int or len(back) != len(storages):
        raise RuntimeError("the grader answered another launch")
    for storage, data in zip(storages, back):
        if len(data) != storage.nbytes():
            raise RuntimeError("the grader answered another launch")
        target = torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)
        target.copy_(torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else target.cpu())
    return number
