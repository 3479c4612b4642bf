"""Each test cell's probe records, taken out of the kernel's reach as the cell ends; every other change to the probe
channel seen from outside (Linux inotify, in the grader's process) and never judged.

The kernel's process is the learner's: it can write the channel folder just as the probes do, and read the probe
calls (hidden cases included) from its own input history. What it cannot undo is what the grader saw happen in the
folder, and when. So the grader runs the notebook cell by cell and, for each cell:
- outside a test cell nothing may happen in the channel;
- in a test cell, the probes create the cell's records when it begins (before any learner code of the cell runs,
  ``__revad_probe__.begin``) and each writes and closes its own once when it finishes: exactly CREATE, OPEN,
  MODIFY..., CLOSE_WRITE on each record, nothing else;
- when the cell ends, its records are moved to a folder the sandbox does not hold.
A record with any other history (there before its cell, opened again for writing, moved, removed, written for a
call or a cell not running, or in a cell that did not end) is never judged, and the notebook is flagged; a read of
the channel is flagged too. Without inotify (not Linux) the records are still taken per cell, by listing the folder.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path

from ..probes.channel import ProbeRecord

ACCESS, MODIFY, ATTRIB, CLOSE_WRITE, CLOSE_NOWRITE, OPEN = 0x1, 0x2, 0x4, 0x8, 0x10, 0x20
MOVED_FROM, MOVED_TO, CREATE, DELETE, DELETE_SELF, MOVE_SELF = 0x40, 0x80, 0x100, 0x200, 0x400, 0x800
OVERFLOW, IGNORED, ISDIR = 0x4000, 0x8000, 0x40000000
_ALL = 0xFFF
_EVENT = struct.Struct("iIII")


@dataclass
class ChannelProblem:
    """What the learner's process did to the probe channel in one cell: `forged` (records not judged) or `read`."""

    kind: str
    cell: int  # the cell of the graded run it happened in (its index), or -1 after the last one
    gid: str | None  # the test cell running then, if one was
    what: list[str] = field(default_factory=list)  # for the instructor, each thing seen once

    def describe(self) -> str:
        if self.gid:
            when = f"while test {self.gid} ran"
        else:
            when = f"in cell {self.cell} of the graded notebook" if self.cell >= 0 else "after the notebook's last cell"
        shown = "; ".join(self.what[:4]) + (f"; and {len(self.what) - 4} more" if len(self.what) > 4 else "")
        return f"{when}: {shown}"


class _Inotify:
    """A non-blocking inotify watch of one folder: `drain()` gives (mask, name) of every event since the last."""

    def __init__(self, folder: Path):
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0 or libc.inotify_add_watch(self.fd, str(folder).encode(), _ALL) < 0:
            raise OSError(ctypes.get_errno(), "inotify")

    def drain(self) -> list[tuple[int, str]]:
        events: list[tuple[int, str]] = []
        while True:
            try:
                buf = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return events
            at = 0
            while at < len(buf):
                _, mask, _, length = _EVENT.unpack_from(buf, at)
                name = buf[at + 16 : at + 16 + length].rstrip(b"\0").decode(errors="replace")
                events.append((mask, name))
                at += 16 + length

    def close(self) -> None:
        os.close(self.fd)


def _watch(folder: Path) -> _Inotify | None:
    try:
        return _Inotify(folder)
    except (OSError, AttributeError):  # not Linux: records are still taken per cell, by listing
        return None


@dataclass
class RecordCollector:
    """The grader's side of the channel for one run. `tests`: index of each graded test cell in the run -> (grade_id,
    number of check calls). After the run, `taken` holds the calls whose record was moved to `collected` (the only
    records judged), `refused` the calls whose record was not judged, `problems` what to flag."""

    channel: Path
    collected: Path
    tests: dict[int, tuple[str, int]]
    taken: dict[str, set[int]] = field(default_factory=dict)
    refused: dict[str, set[int]] = field(default_factory=dict)
    problems: list[ChannelProblem] = field(default_factory=list)
    watch: _Inotify | None = None
    overflowed: bool = False
    pending: list[tuple[int, str]] = field(default_factory=list)  # seen while the grader cleared the channel
    # records a probe created but had not written when its cell ended (a timeout: the kernel may still be finishing
    # that cell while the next one waits); the probe's own late write to them is neither judged nor flagged
    unfinished: set[str] = field(default_factory=set)

    def start(self) -> None:
        """Before the kernel starts: the channel empty and watched, the folder for taken records out of its reach."""
        shutil.rmtree(self.collected, ignore_errors=True)
        self.collected.mkdir(mode=0o700, parents=True)
        self.watch = _watch(self.channel)

    @property
    def watching(self) -> bool:
        return self.watch is not None

    def before(self, index: int) -> None:
        """Cell `index` is about to run: whatever happened since the last cell ended happened in no cell."""
        self._outside(index, self._events())

    def after(self, index: int) -> None:
        """Cell `index` ended (however: a test cell that did not end well scores nothing, grading/worker.py)."""
        events = self._events()
        if index not in self.tests:
            self._outside(index, events)
            return
        gid, count = self.tests[index]
        expected = {ProbeRecord.file_name(gid, k): k for k in range(count)}
        by_name = _by_name(events if self.watching else self._listed())
        disturbed = False  # a change to the folder itself (its permissions, say) disturbs every record of the cell
        for name in [n for n in by_name if n not in expected]:
            kind = self._stray(index, gid, name, by_name.pop(name))
            disturbed = disturbed or (kind == "forged" and not name)
        for name, k in expected.items():
            if name not in by_name:
                continue  # the probe never began: not recorded
            verdict, read = history(by_name[name])
            if read:
                self._problem("read", index, gid, f"the record {name} was read")
            if k in self.refused.get(gid, ()):
                verdict = "was written while a probe found its own file taken from it, or by another cell"
            elif self.overflowed:
                verdict = "was among more changes to the channel than the grader could follow"
            elif disturbed:
                verdict = "was written while the channel's folder was changed"
            if verdict is None:
                try:
                    os.rename(self.channel / name, self.collected / name)
                except OSError as exc:
                    verdict = f"could not be taken out of the channel ({exc.strerror})"
                else:
                    self.taken.setdefault(gid, set()).add(k)
                    continue
            if verdict == UNFINISHED:
                self.unfinished.add(name)
                continue  # its probe was stopped: not recorded
            self.refused.setdefault(gid, set()).add(k)
            self._problem("forged", index, gid, f"the record {name} {verdict}")
        self._clear()
        self.overflowed = False

    def finish(self) -> None:
        """After the run: anything written since the last cell ended is flagged; the watch closed."""
        self._outside(-1, self._events())
        if self.watch is not None:
            self.watch.close()
            self.watch = None

    def _events(self) -> list[tuple[int, str]]:
        events, self.pending = self.pending, []
        if self.watch is not None:
            events += self.watch.drain()
        if any(m & OVERFLOW for m, _ in events):
            self.overflowed = True
        kept = []
        for mask, name in events:
            if mask & (OVERFLOW | IGNORED):
                continue
            if name in self.unfinished and not mask & ~(MODIFY | CLOSE_WRITE):
                if mask & CLOSE_WRITE:
                    self.unfinished.discard(name)
                continue  # a stopped probe finishing late, through the file it created in its own cell
            kept.append((mask, name))
        return kept

    def _outside(self, index: int, events: list[tuple[int, str]]) -> None:
        """Events (or, unwatched, files) in the channel while no test cell ran: each is flagged."""
        for name, masks in _by_name(events if self.watching else self._listed()).items():
            self._stray(index, None, name, masks)
        if self.overflowed:
            self._problem("forged", index, None, "more changes to the channel than the grader could follow")
        self._clear()
        self.overflowed = False

    def _stray(self, index: int, gid: str | None, name: str, masks: list[int]) -> str:
        """Events no probe makes at this time, on one name: reading only is flagged; writing is flagged and, when it
        names a record, that record is not judged (whenever it is written)."""
        if all(m & (OPEN | ACCESS | CLOSE_NOWRITE) and not m & CLOSE_WRITE for m in masks):
            self._problem("read", index, gid, f"{name} was read" if name else "the probe channel's folder was listed")
            return "read"
        what = f"{name} was written, moved or removed" if name else "the probe channel's folder was changed"
        self._problem("forged", index, gid, what + " (no probe writes it then)")
        cell, _, rest = name.partition(".")
        call = rest.split(".")[0]
        if call.isdigit():
            self.refused.setdefault(cell, set()).add(int(call))
        return "forged"

    def _problem(self, kind: str, index: int, gid: str | None, what: str) -> None:
        problem = next((p for p in self.problems if (p.kind, p.cell, p.gid) == (kind, index, gid)), None)
        if problem is None:
            problem = ChannelProblem(kind, index, gid)
            self.problems.append(problem)
        if what not in problem.what:
            problem.what.append(what)

    def _listed(self) -> list[tuple[int, str]]:
        """Without inotify, the files in the channel as the events that made them: a record is taken when its probe
        wrote it (it is not empty); any other file is a stray."""
        out = []
        for name in self._listing():
            try:
                written = (self.channel / name).stat().st_size > 0
            except OSError:
                written = False
            out += [(CREATE, name), (OPEN, name)] + ([(CLOSE_WRITE, name)] if written else [])
        return out

    def _listing(self) -> list[str]:
        try:
            return sorted(os.listdir(self.channel))
        except OSError:
            return []

    def _clear(self) -> None:
        """Empty the channel (nothing left in it is judged); the events of the grader's own clearing are dropped,
        any other event seen meanwhile is kept for the next window."""
        for name in self._listing():
            path = self.channel / name
            try:
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
            except OSError:
                pass
        if self.watch is not None:
            ours = MOVED_FROM | DELETE | DELETE_SELF | OPEN | ACCESS | CLOSE_NOWRITE | ISDIR
            self.pending += [(m, n) for m, n in self.watch.drain() if m & ~ours]


def _by_name(events: list[tuple[int, str]]) -> dict[str, list[int]]:
    """Each name's event masks in order ("" for the folder itself)."""
    out: dict[str, list[int]] = {}
    for mask, name in events:
        out.setdefault(name, []).append(mask)
    return out


UNFINISHED = "was never written: its probe did not finish"


def history(masks: list[int]) -> tuple[str | None, bool]:
    """(None when a record's events are exactly a probe's: created, opened once for writing, written, closed once,
    else what happened instead; whether it was read as well)."""
    reads = sum(1 for m in masks if m & CLOSE_NOWRITE)
    read = reads > 0 or any(m & ACCESS for m in masks)
    writes = [m for m in masks if not m & (ACCESS | CLOSE_NOWRITE)]
    write_opens = sum(1 for m in masks if m & OPEN) - reads
    if any(m & (MOVED_FROM | MOVED_TO | DELETE | ATTRIB) for m in writes):
        return "was moved, removed or had its permissions changed", read
    if not writes[0] & CREATE or sum(1 for m in writes if m & CREATE) != 1:
        return "was there before its test cell began, or was created twice", read
    closes = sum(1 for m in writes if m & CLOSE_WRITE)
    if write_opens > 1 or closes > 1:
        return "was opened for writing a second time", read
    if closes == 0:
        return UNFINISHED, read
    if not writes[-1] & CLOSE_WRITE:
        return "was written after its probe closed it", read
    return None, read
