"""Each test cell's probe records, received from outside the kernel while the cell runs and judged as it ends; every
other use of the record channel seen from outside (Linux inotify, in the grader's process) and never judged.

The kernel's process is the learner's: it can write the channel folder just as the probes could, duplicate, reopen or
write through any descriptor it holds, and read the probe calls (hidden cases included) from its own input history.
So a record never passes through a descriptor of that process. The grader listens on a socket of its own, made
before the kernel starts in a folder of the channel that is the grader's (``grader/records.sock``); a probe hands
each record, after the learner's code of its call has returned, to a courier process of its own
(``probes/courier.py``: no learner code runs in it) with the record's cell, call, size and SHA-256 in its arguments;
the courier sends exactly one frame and ends the stream. A thread here reads every connection as it comes (a record
may be far larger than a socket's buffer), into a file out of the sandbox's reach. For each cell:
- outside a test cell no connection is made and nothing happens in the channel;
- in a test cell each check call's record arrives once, on a connection of its own, whole: its header, exactly the
  bytes it names, their SHA-256, the end of the stream;
- when the cell ends, its records are judged from those files; the channel folder is emptied.
A record with any other history (sent twice, before or after its cell, for a call or a cell not running, with bytes
that are not the ones its probe hashed, or while the grader's socket was touched) is never judged, and the notebook
is flagged; a read of the channel is flagged too. What no probe sends -- a connection with no record on it, a file
in the channel -- is flagged as well. Without inotify (not Linux) the records are still received per cell and the
channel is listed instead.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import selectors
import shutil
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ..probes.channel import (
    HEADER_MAX,
    MAGIC,
    RECORD_MAX,
    SOCKET_FOLDER,
    SOCKET_NAME,
    ProbeRecord,
    identity,
    parse_header,
)
from ..probes.launches import LaunchLog
from .launch_service import LaunchService
from .unix_socket import listen

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
    """A non-blocking inotify watch of folders: `drain()` gives (mask, name) of every event since the last, each name
    with its folder's prefix ("" for the first folder, "grader/..." for a folder watched as "grader")."""

    def __init__(self, folders: dict[str, Path]):
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify")
        self.prefixes: dict[int, str] = {}
        for prefix, folder in folders.items():
            wd = libc.inotify_add_watch(self.fd, str(folder).encode(), _ALL)
            if wd < 0:
                os.close(self.fd)
                raise OSError(ctypes.get_errno(), "inotify")
            self.prefixes[wd] = prefix

    def drain(self) -> list[tuple[int, str]]:
        events: list[tuple[int, str]] = []
        while True:
            try:
                buf = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return events
            at = 0
            while at < len(buf):
                wd, mask, _, length = _EVENT.unpack_from(buf, at)
                name = buf[at + 16 : at + 16 + length].rstrip(b"\0").decode(errors="replace")
                prefix = self.prefixes.get(wd, "")
                events.append((mask, f"{prefix}/{name}".rstrip("/") if prefix else name))
                at += 16 + length

    def close(self) -> None:
        os.close(self.fd)


def _watch(folder: Path, socket_folder: Path) -> _Inotify | None:
    try:
        return _Inotify({"": folder, SOCKET_FOLDER: socket_folder})
    except (OSError, AttributeError):  # not Linux: records are still taken per cell; the channel is listed
        return None


CONNECTIONS_MAX = 256  # connections kept per cell; more are turned away (and the cell's records refused)
STORED_MAX = 16 * RECORD_MAX  # bytes of records received and not yet judged; more are refused the same way
SWEEP_MAX = RECORD_MAX + HEADER_MAX + len(MAGIC) + 1  # bytes one look reads from one connection


class _Connection:
    """One connection to the grader's socket, read as it comes: its header, then its record into a file."""

    def __init__(self, sock: socket.socket, path: Path):
        self.sock, self.path = sock, path
        self.head = bytearray()
        self.header: tuple[str, int, int, str] | None = None  # (cell, call, size, sha256)
        self.file: BinaryIO | None = None
        self.hash = hashlib.sha256()
        self.got = 0
        self.broken: str | None = None  # why it is not a record (then nothing more is kept of it)
        self.short = False  # it ended before its record did: its sender was stopped
        self.ended = False

    @property
    def named(self) -> tuple[str, int] | None:
        return self.header[:2] if self.header else None

    def feed(self, data: bytes) -> int:
        """Take bytes as they come; returns how many were kept in its file."""
        if self.broken:
            return 0
        if self.header is None:
            self.head += data
            if not (self.head.startswith(MAGIC) or MAGIC.startswith(bytes(self.head))):
                return self.refuse("sent something that is not a record")
            end = self.head.find(b"\n", len(MAGIC))
            if end < 0:
                return 0 if len(self.head) <= len(MAGIC) + HEADER_MAX else self.refuse("sent no record header")
            try:
                self.header = parse_header(bytes(self.head[len(MAGIC) : end]))
            except ValueError:
                return self.refuse("sent a record header that is not one")
            data, self.head = bytes(self.head[end + 1 :]), bytearray()
            self.file = open(self.path, "wb")  # noqa: SIM115 -- closed when it ends
        if self.got + len(data) > self.header[2]:
            return self.refuse("sent more bytes than its header says")
        assert self.file is not None
        self.file.write(data)
        self.hash.update(data)
        self.got += len(data)
        return len(data)

    def refuse(self, why: str) -> int:
        """Nothing more of it is kept (the receiver closes it)."""
        self.broken = self.broken or why
        return 0

    def end(self) -> None:
        """It is over (its stream ended, or the grader ended it): what it holds is decided, its socket closed."""
        if self.broken:
            pass
        elif self.header is None:
            self.broken = "ended before a record header" if self.head else "sent nothing"
        elif self.got < self.header[2]:
            self.short = True
        elif self.hash.hexdigest() != self.header[3]:
            self.broken = "holds bytes that are not the ones its probe sent (their SHA-256 differs)"
        self.ended = True
        if self.file is not None:
            self.file.close()
            self.file = None
        if self.broken or self.short:
            self.discard()
        try:
            self.sock.close()
        except OSError:
            pass

    def discard(self) -> None:
        try:
            self.path.unlink()
        except OSError:
            pass


def _listen(folder: Path) -> socket.socket:
    """The grader's record socket in `folder`, not blocking (a selector reads it)."""
    sock = listen(folder / SOCKET_NAME, 64)
    sock.setblocking(False)
    return sock


class _Receiver:
    """The grader's end of the socket: a thread that accepts every connection and reads each as its bytes come.
    `take()` hands over, in the order they came, the connections that have ended since the last `take()`."""

    def __init__(self, folder: Path, collected: Path):
        self.collected = collected
        self.listener = _listen(folder)
        self.lock = threading.Condition()
        self.open: list[_Connection] = []
        self.done: list[_Connection] = []
        self.turned_away = 0
        self.stored = 0  # bytes of records received and not yet handed over
        self.count = 0  # connections accepted since the last take
        self.serial = 0
        self.asked = self.stopping = self.closed = False
        self.selector = selectors.DefaultSelector()
        self.wake_out, self.wake_in = os.pipe()
        os.set_blocking(self.wake_out, False)
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.selector.register(self.wake_out, selectors.EVENT_READ)
        self.thread = threading.Thread(target=self._run, name="revad-records", daemon=True)
        self.thread.start()

    def take(self) -> tuple[list[_Connection], int]:
        """(connections ended since the last take, how many were turned away meanwhile), once everything that had
        reached the socket when it was called has been read (a probe's courier has ended before its cell does)."""
        with self.lock:
            if not self.closed:
                self.asked = True
                os.write(self.wake_in, b".")
                while self.asked and self.thread.is_alive():
                    self.lock.wait(1.0)
            done, turned_away = self.done, self.turned_away
            self.done, self.turned_away = [], 0
            for conn in done:
                if not conn.broken and not conn.short:
                    self.stored -= conn.got
            self.count = len(self.open)
            return done, turned_away

    def stop(self) -> None:
        with self.lock:
            self.stopping = True
            os.write(self.wake_in, b".")
        self.thread.join(timeout=30)
        with self.lock:  # what never ended is ended now
            self.closed = True
            os.close(self.wake_out)
            os.close(self.wake_in)
            for conn in list(self.open):
                self._finish(conn)

    def _run(self) -> None:
        try:
            while True:
                ready = self.selector.select()
                with self.lock:
                    for key, _ in ready:
                        if key.fileobj is self.listener:
                            self._accept()
                        elif key.fileobj == self.wake_out:
                            self._drain_wake()
                        else:
                            self._read(key.data)
                    if self.asked or self.stopping:
                        self._sweep()
                        self.asked = False
                        self.lock.notify_all()
                    if self.stopping:
                        break
        finally:
            self.selector.close()
            self.listener.close()
            with self.lock:
                self.asked = False
                self.lock.notify_all()

    def _drain_wake(self) -> None:
        try:
            while os.read(self.wake_out, 4096):
                pass
        except BlockingIOError:
            pass

    def _accept(self) -> bool:
        try:
            sock, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:  # out of descriptors: it waits in the queue (a short pause: no busy loop meanwhile)
            time.sleep(0.01)
            return False
        if self.count >= CONNECTIONS_MAX:
            self.turned_away += 1
            sock.close()
            return True
        self.count += 1
        self.serial += 1
        sock.setblocking(False)
        conn = _Connection(sock, self.collected / f".incoming-{self.serial}")
        self.open.append(conn)
        self.selector.register(sock, selectors.EVENT_READ, conn)
        return True

    def _read(self, conn: _Connection, limit: int = 1 << 20) -> None:
        """Read what has come on one connection (up to `limit` bytes); an ended or broken one is done."""
        read = 0
        while read < limit and not conn.broken:
            try:
                data = conn.sock.recv(min(1 << 20, limit - read))
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:
                self._finish(conn)
                return
            read += len(data)
            if self.stored + len(data) > STORED_MAX:
                conn.refuse("came when the grader's room for records was full")
                continue
            try:
                self.stored += conn.feed(data)
            except OSError as exc:  # the grader's own disk: said as such to the instructor
                conn.refuse(f"could not be kept by the grader ({exc.strerror})")
        if conn.broken:
            self._finish(conn)

    def _finish(self, conn: _Connection) -> None:
        try:
            self.selector.unregister(conn.sock)
        except (KeyError, ValueError, OSError, RuntimeError):  # never registered, or the selector is closed
            pass
        conn.end()
        if conn.broken or conn.short:
            self.stored -= conn.got
        self.open.remove(conn)
        self.done.append(conn)

    def _sweep(self) -> None:
        """Everything that has reached the socket: every connection waiting to be accepted, every byte sent."""
        while self._accept():
            pass
        for conn in list(self.open):
            self._read(conn, SWEEP_MAX)


@dataclass
class RecordCollector:
    """The grader's side of the record channel for one run. `tests`: index of each graded test cell in the run ->
    (grade_id, number of check calls). After the run, `taken` holds the calls whose record was kept in `collected`
    (the only records judged), `refused` the calls whose record is not judged, `problems` what to flag."""

    channel: Path
    collected: Path
    tests: dict[int, tuple[str, int]]
    taken: dict[str, set[int]] = field(default_factory=dict)
    refused: dict[str, set[int]] = field(default_factory=dict)
    problems: list[ChannelProblem] = field(default_factory=list)
    watch: _Inotify | None = None
    overflowed: bool = False
    pending: list[tuple[int, str]] = field(default_factory=list)  # seen while the grader cleared the channel
    # calls of a test cell that ended without their record (a timeout: the kernel may still be finishing that cell
    # while the next one waits): the probe's own late record for one is neither judged nor flagged
    unfinished: set[tuple[str, int]] = field(default_factory=set)
    receiver: _Receiver | None = None
    socket_id: str | None = None  # the grader's socket as it was made (device, inode, change time)
    launcher: LaunchService | None = None  # computes the stand-in kernels' launches, and logs them, out of the kernel

    @property
    def launch_log(self) -> LaunchLog | None:
        return self.launcher.log if self.launcher is not None else None

    @property
    def socket_folder(self) -> Path:
        return self.channel / SOCKET_FOLDER

    def start(self) -> None:
        """Before the kernel starts: the grader's socket listening in a folder of the channel that is its own, the
        channel empty and watched, the folder for the records out of the kernel's reach."""
        shutil.rmtree(self.collected, ignore_errors=True)
        self.collected.mkdir(mode=0o700, parents=True)
        self.channel.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.socket_folder, ignore_errors=True)
        self.socket_folder.mkdir(mode=0o755)
        self.socket_folder.chmod(0o755)  # the grader's: a kernel of another uid can replace nothing in it
        self.receiver = _Receiver(self.socket_folder, self.collected)
        self.socket_id = identity(os.stat(self.socket_folder / SOCKET_NAME))
        self.launcher = LaunchService(self.socket_folder)
        self.watch = _watch(self.channel, self.socket_folder)

    @property
    def watching(self) -> bool:
        return self.watch is not None

    def before(self, index: int) -> None:
        """Cell `index` is about to run: whatever happened since the last cell ended happened in no cell."""
        self._settle(index, None)
        if self.launcher is not None:  # launches that come now are this cell's
            self.launcher.cell = self.tests[index][0] if index in self.tests else None

    def after(self, index: int) -> None:
        """Cell `index` ended (however: a test cell that did not end well scores nothing, grading/worker.py)."""
        if self.launcher is not None:
            self.launcher.cell = None
        self._settle(index, self.tests.get(index))

    def finish(self) -> None:
        """After the run: anything sent or written since the last cell ended is flagged; the socket and the watch
        closed."""
        if self.receiver is not None:
            self.receiver.stop()
        if self.launcher is not None:
            self.launcher.stop()  # its log stays, for the judges
        self._settle(-1, None)
        self.receiver = None
        if self.watch is not None:
            self.watch.close()
            self.watch = None

    def _settle(self, index: int, test: tuple[str, int] | None) -> None:
        """What happened in the channel since the last look, in cell `index` (-1: after the last one); `test`: the
        test cell that ran there, if one did."""
        events = self._events()
        conns, turned_away = self.receiver.take() if self.receiver is not None else ([], 0)
        gid = test[0] if test else None
        disturbed = self._look(index, gid, events)
        if turned_away or self.overflowed:
            self._problem(
                "forged",
                index,
                gid,
                "more connections to the grader's socket or changes to the channel than the grader could follow",
            )
            disturbed = True
        arrived: dict[int, list[_Connection]] = {}
        for conn in conns:
            named = conn.named
            if named is not None and named in self.unfinished:  # a stopped probe's record, coming late
                self.unfinished.discard(named)
                conn.discard()
            elif test is not None and named is not None and named[0] == gid and 0 <= named[1] < test[1]:
                arrived.setdefault(named[1], []).append(conn)
            else:
                self._stray_connection(index, gid, conn)
                disturbed = disturbed or test is not None and named is None
        if test is not None:
            self._judge(index, test, arrived, disturbed)
        self._clear()
        self.overflowed = False

    def _judge(self, index: int, test: tuple[str, int], arrived: dict[int, list[_Connection]], disturbed: bool) -> None:
        """Each call's record of the test cell that ended: taken when exactly one came, whole, and nothing else
        disturbed the cell; else refused and flagged (or, when none came, or only a part of one, not recorded)."""
        gid, count = test
        for k in range(count):
            conns = arrived.get(k, [])
            name = ProbeRecord.file_name(gid, k)
            if not conns or len(conns) == 1 and conns[0].short:
                self.unfinished.add((gid, k))  # its probe did not finish: not recorded
                continue
            verdict = None
            if len(conns) > 1:
                verdict = f"came {len(conns)} times (a probe sends it once)"
            elif conns[0].broken:
                verdict = f"came on a connection that {conns[0].broken}"
            elif k in self.refused.get(gid, set()):
                verdict = "was also sent, or written, outside its probe's call"
            elif disturbed:
                verdict = "came while the grader's socket or the channel was disturbed"
            if verdict is None:
                try:
                    os.rename(conns[0].path, self.collected / name)
                except OSError as exc:
                    verdict = f"could not be kept ({exc.strerror})"
                else:
                    self.taken.setdefault(gid, set()).add(k)
                    continue
            for conn in conns:
                conn.discard()
            self.refused.setdefault(gid, set()).add(k)
            self._problem("forged", index, gid, f"the record {name} {verdict}")

    def _stray_connection(self, index: int, gid: str | None, conn: _Connection) -> None:
        """A connection no probe makes then: flagged; the record it names, if any, is never judged."""
        conn.discard()
        named = conn.named
        if named is None:
            self._problem("forged", index, gid, f"a connection to the grader's socket {conn.broken or 'sent nothing'}")
            return
        self.refused.setdefault(named[0], set()).add(named[1])
        self._problem(
            "forged", index, gid, f"a record for {ProbeRecord.file_name(*named)} was sent (no probe sends it then)"
        )

    def _look(self, index: int, gid: str | None, events: list[tuple[int, str]]) -> bool:
        """The channel folder's events (or, unwatched, its files): each is flagged; True when the grader's socket or
        its folder was touched (every record of the cell is then refused)."""
        disturbed = False
        by_name = _by_name(events if self.watching else self._listed())
        for name, masks in by_name.items():
            kind = self._stray(index, gid, name, masks)
            grader = name == SOCKET_FOLDER or name.startswith(SOCKET_FOLDER + "/")
            disturbed = disturbed or kind == "forged" and (grader or not name)
        return disturbed

    def _events(self) -> list[tuple[int, str]]:
        events, self.pending = self.pending, []
        if self.watch is not None:
            events += self.watch.drain()
        if any(m & OVERFLOW for m, _ in events):
            self.overflowed = True
        return [(m, n) for m, n in events if not m & (OVERFLOW | IGNORED)]

    def _stray(self, index: int, gid: str | None, name: str, masks: list[int]) -> str:
        """Events no probe makes, on one name: reading only is flagged; writing is flagged and, when it names a
        record, that record is not judged (whenever it is written)."""
        if all(m & (OPEN | ACCESS | CLOSE_NOWRITE) and not m & CLOSE_WRITE for m in masks):
            self._problem("read", index, gid, f"{name} was read" if name else "the probe channel's folder was listed")
            return "read"
        cell, _, rest = name.partition(".")
        call, _, kind = rest.partition(".")
        if kind == "tampered" and call.isdigit():
            what = f"the probe of {cell}.{call} could not send its record (its courier was stopped or its input cut)"
        elif name == SOCKET_FOLDER or name.startswith(SOCKET_FOLDER + "/"):
            what = f"the grader's socket folder was changed ({name})"
        else:
            what = f"{name} was written, moved or removed" if name else "the probe channel's folder was changed"
            what += " (no probe writes it)"
        self._problem("forged", index, gid, what)
        if call.isdigit() and "/" not in cell:
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
        """Without inotify, the files in the channel as the events that made them, and the grader's socket changed
        as an event on it."""
        out = [(CREATE | CLOSE_WRITE, name) for name in self._listing()]
        try:
            same = self.socket_id is None or identity(os.stat(self.socket_folder / SOCKET_NAME)) == self.socket_id
        except OSError:
            same = False
        return out + ([] if same else [(ATTRIB, f"{SOCKET_FOLDER}/{SOCKET_NAME}")])

    def _listing(self) -> list[str]:
        try:
            return sorted(n for n in os.listdir(self.channel) if n != SOCKET_FOLDER)
        except OSError:
            return []

    def _clear(self) -> None:
        """Empty the channel (nothing left in it is judged) but for the grader's socket folder; the events of the
        grader's own clearing are dropped, any other event seen meanwhile is kept for the next look."""
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
