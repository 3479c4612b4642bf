"""Records received cell by cell, from outside (autograder/grading/records.py): the probe's own records, as the kernel
sends them (autograder.probes.kernel._Records: each through a courier process of its own, autograder/probes/courier.py)
are taken; a record with any other history is refused and flagged. Each test plays the cells of one run in this
process, with the learner's moves in between -- or, for a move that must land while a probe sends its record, at the
moment its courier has started (what a thread of the learner's could do)."""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys

import pytest
import torch

from autograder.grading import records as records_module
from autograder.grading.judge import read_channel
from autograder.grading.records import OVERFLOW, RecordCollector, _Connection
from autograder.probes import kernel as kernel_module
from autograder.probes.channel import (
    MAGIC,
    RECORD_MAX,
    SOCKET_FOLDER,
    SOCKET_NAME,
    ProbeRecord,
    header,
    identity,
    parse_header,
)
from autograder.probes.kernel import ChannelError, _payload, _Records
from autograder.registry import FAILED

pytestmark = pytest.mark.grading

TEST = 2  # the run's cell index of the one test cell, "test_a", with two check calls


def payload(cell: str, call: int, value) -> bytes:
    buf = io.BytesIO()
    torch.save(ProbeRecord(cell, call, {"value": value}).to_payload(), buf)
    return buf.getvalue()


def frame(cell: str, call: int, value, data: bytes | None = None) -> bytes:
    """A well-formed frame, as a courier sends it (the learner can make one: the format is no secret)."""
    data = payload(cell, call, value) if data is None else data
    return MAGIC + header(cell, call, data).encode() + b"\n" + data


def connect(channel) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(channel / SOCKET_FOLDER / SOCKET_NAME))
    return sock


def send(channel, data: bytes) -> None:
    """The learner's own connection to the grader's socket: `data`, then the end of the stream."""
    with connect(channel) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)


def _collector(tmp_path) -> tuple[RecordCollector, _Records]:
    channel = tmp_path / "probe"
    channel.mkdir()
    collector = RecordCollector(channel, tmp_path / "taken", {TEST: ("test_a", 2)})
    collector.start()
    return collector, _Records(str(channel))  # installed after the grader's socket is made, as in a run


@pytest.fixture(params=["inotify", "listing"])
def run(request, tmp_path, monkeypatch):
    """(collector, the probes' side) for a run whose cell 2 is test_a with two calls; `listing`: no inotify."""
    if request.param == "listing":
        monkeypatch.setattr(records_module, "_watch", lambda *folders: None)
    collector, probes = _collector(tmp_path)
    assert collector.watching == (request.param == "inotify")
    yield collector, probes
    collector.finish()


@pytest.fixture
def watched(tmp_path):
    """The same run, watched by inotify (what only inotify sees: reads, moves, the folder's mode)."""
    collector, probes = _collector(tmp_path)
    assert collector.watching
    yield collector, probes
    collector.finish()


def honest_cell(collector: RecordCollector, probes: _Records, during=None, between=None, after=None) -> None:
    """Cell TEST: two probe calls; `during` is the learner's code the first probe calls (before it sends its record),
    `between` what runs after the first record was sent (the learner's code the second probe calls), `after` what
    runs once both were sent, still in the cell (a `__del__`, the cell's last line)."""
    collector.before(TEST)
    if during:
        during()
    probes.write(ProbeRecord("test_a", 0, None), payload("test_a", 0, 1.0))
    if between:
        between()
    probes.write(ProbeRecord("test_a", 1, None), payload("test_a", 1, 2.0))
    if after:
        after()
    collector.after(TEST)


def kinds(collector: RecordCollector) -> set[str]:
    return {p.kind for p in collector.problems}


def described(collector: RecordCollector) -> str:
    return " | ".join(p.describe() for p in collector.problems)


# ------------------------------------------------------------------------------------------------ honest histories


def test_the_probes_own_records_are_taken_and_read_back(run):
    collector, probes = run
    for cell in (0, 1):
        collector.before(cell)
        collector.after(cell)
    honest_cell(collector, probes)
    collector.finish()
    assert collector.taken == {"test_a": {0, 1}} and not collector.refused and not collector.problems
    results, _ = read_channel(collector.collected, "test_a", 2)
    assert results == [{"value": 1.0}, {"value": 2.0}]
    assert os.listdir(collector.channel) == [SOCKET_FOLDER]  # nothing for the kernel to read or rewrite
    assert sorted(os.listdir(collector.collected)) == ["test_a.0.pt", "test_a.1.pt"]


def test_a_record_larger_than_a_pipe_and_a_socket_buffer_is_taken_whole(run):
    """Records are torch.save payloads of up to 32 MB: the grader reads while the courier sends."""
    collector, probes = run
    big = torch.randn(5_000_000, dtype=torch.float64)  # 40 MB of data: within the limit as float32 below
    collector.before(TEST)
    probes.write(ProbeRecord("test_a", 0, None), payload("test_a", 0, big.float()))
    probes.write(ProbeRecord("test_a", 1, None), payload("test_a", 1, 2.0))
    collector.after(TEST)
    results, _ = read_channel(collector.collected, "test_a", 2)
    assert collector.taken == {"test_a": {0, 1}} and not collector.problems
    assert torch.equal(results[0]["value"], big.float())


def test_a_record_larger_than_the_limit_becomes_a_message_that_says_so(monkeypatch):
    monkeypatch.setattr(kernel_module, "RECORD_MAX", 2000)
    data = _payload(torch.save, ProbeRecord("test_a", 0, {"value": torch.zeros(1000)}), FAILED)
    assert len(data) <= 2000
    assert torch.load(io.BytesIO(data))["results"] == [
        {FAILED: "The values your code returned were too large to record."}
    ]
    assert RECORD_MAX == 32 * 2**20


def test_a_probe_that_never_finished_is_not_recorded_and_not_flagged(run):
    collector, probes = run
    collector.before(TEST)
    probes.write(ProbeRecord("test_a", 0, None), payload("test_a", 0, 1.0))
    collector.after(TEST)  # the second probe was stopped (a timeout, a crash)
    assert collector.taken == {"test_a": {0}} and not collector.refused and not collector.problems


def test_a_stopped_probe_finishing_late_is_neither_judged_nor_flagged(run):
    collector, probes = run
    collector.before(TEST)
    probes.write(ProbeRecord("test_a", 0, None), payload("test_a", 0, 1.0))
    collector.after(TEST)  # a timeout: the kernel is still in the second call
    collector.before(TEST + 1)
    probes.write(ProbeRecord("test_a", 1, None), payload("test_a", 1, 2.0))  # the interrupted probe's late record
    collector.after(TEST + 1)
    assert collector.taken == {"test_a": {0}} and not collector.refused and not collector.problems
    collector.before(TEST + 2)
    send(collector.channel, frame("test_a", 1, 9.0))  # a second late one is no probe's
    collector.after(TEST + 2)
    assert collector.refused == {"test_a": {1}} and kinds(collector) == {"forged"}


def test_a_courier_cut_short_by_a_timeout_is_neither_judged_nor_flagged(run):
    """A probe interrupted while it feeds its courier: the courier's input ends early, it sends part of a record."""
    collector, probes = run
    data = payload("test_a", 0, 1.0)
    collector.before(TEST)
    with connect(collector.channel) as sock:  # what such a courier sends: its header and part of the record
        sock.sendall(MAGIC + header("test_a", 0, data).encode() + b"\n" + data[:100])
    probes.write(ProbeRecord("test_a", 1, None), payload("test_a", 1, 2.0))
    collector.after(TEST)
    assert collector.taken == {"test_a": {1}} and not collector.refused and not collector.problems


def test_the_learners_own_signal_dispositions_do_not_stop_a_probe(run):
    """SIGCHLD ignored (children reaped by the kernel), the courier's pipe made non-blocking while a record larger
    than the pipe goes through it: the record is still sent whole."""
    collector, probes = run
    big = torch.arange(2_000_000.0)
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        collector.before(TEST)
        at_start(probes, _make_the_pipe_non_blocking)
        probes.write(ProbeRecord("test_a", 0, None), payload("test_a", 0, big))
        probes.write(ProbeRecord("test_a", 1, None), payload("test_a", 1, 2.0))
        collector.after(TEST)
    finally:
        signal.signal(signal.SIGCHLD, previous)
    assert collector.taken == {"test_a": {0, 1}} and not collector.problems
    assert torch.equal(read_channel(collector.collected, "test_a", 2)[0][0]["value"], big)


# ---------------------------------------------------------------------- records that are not the probe's own call


@pytest.mark.parametrize("how", ["a frame", "its own courier"])
@pytest.mark.parametrize("when", ["before the probe's", "after the probe's"])
def test_a_record_sent_twice_is_not_judged(run, how, when):
    """The learner's code sends a well-formed record for the call running, before or after the probe's own: with a
    frame it made, or through a courier exactly as a probe starts one (the grader's own probe code, run again)."""
    collector, probes = run

    def forge():
        if how == "a frame":
            send(collector.channel, frame("test_a", 0, 9.0))
        else:
            _Records(str(collector.channel)).write(ProbeRecord("test_a", 0, None), payload("test_a", 0, 9.0))

    honest_cell(collector, probes, **{"during" if when == "before the probe's" else "between": forge})
    assert collector.refused == {"test_a": {0}} and collector.taken["test_a"] == {1}
    assert kinds(collector) == {"forged"} and "came 2 times" in described(collector)


@pytest.mark.parametrize("when", ["in an earlier cell", "between cells", "in the next cell", "after the last cell"])
def test_a_record_sent_outside_its_cell_is_not_judged(run, when):
    collector, probes = run
    forged = frame("test_a", 1, 9.0)
    if when in ("in an earlier cell", "between cells"):
        collector.before(1)
        if when == "in an earlier cell":
            send(collector.channel, forged)
        collector.after(1)
        if when == "between cells":
            send(collector.channel, forged)
    honest_cell(collector, probes)
    if when == "in the next cell":
        collector.before(TEST + 1)
        send(collector.channel, forged)
        collector.after(TEST + 1)
    elif when == "after the last cell":
        send(collector.channel, forged)
    collector.finish()
    assert 1 in collector.refused["test_a"] and kinds(collector) == {"forged"}
    place = {"in an earlier cell": "in cell 1", "between cells": "in cell 2", "in the next cell": "in cell 3"}
    assert place.get(when, "after the notebook's last cell") in described(collector)


def test_a_record_for_another_cell_sent_during_a_test_is_not_judged_later(run):
    collector, probes = run
    collector.tests[5] = ("test_b", 1)
    honest_cell(collector, probes, during=lambda: send(collector.channel, frame("test_b", 0, 9.0)))
    collector.before(5)
    probes.write(ProbeRecord("test_b", 0, None), payload("test_b", 0, 1.0))
    collector.after(5)
    assert collector.refused == {"test_b": {0}} and collector.taken["test_a"] == {0, 1}


def _tampered(value: float) -> bytes:
    """A frame whose header is the probe's own (the hash of the probe's record), with other bytes of the same size."""
    right, wrong = payload("test_a", 0, 1.0), payload("test_a", 0, value)
    assert len(right) == len(wrong)
    return MAGIC + header("test_a", 0, right).encode() + b"\n" + wrong


BROKEN = {  # what the learner sends on a connection of its own -> the calls of test_a refused
    "bytes that are not a frame": (b"not a record at all", {0, 1}),
    "a header that is not one": (MAGIC + b'{"cell": "test_a"}\n', {0, 1}),
    "no header within its limit": (MAGIC + b"x" * 5000, {0, 1}),
    "nothing": (b"", {0, 1}),
    "a hash that is not its bytes'": (_tampered(9.0), {0}),
    "more bytes than its header says": (frame("test_a", 0, 9.0) + b"!", {0}),
    "two frames on one connection": (frame("test_a", 0, 9.0) + frame("test_a", 1, 9.0), {0}),
    "a record larger than the limit": (
        MAGIC + b'{"call": 0, "cell": "test_a", "sha256": "' + b"0" * 64 + b'", '
        b'"size": ' + str(RECORD_MAX + 1).encode() + b"}\n",
        {0, 1},
    ),
}


@pytest.mark.parametrize("what", sorted(BROKEN))
def test_a_connection_that_is_not_one_whole_record_refuses_what_it_names(run, what):
    """What does not parse as a record names no call: every record of its cell is refused; a frame that names a call
    but is not whole (other bytes than its hash, bytes past its size) refuses that call."""
    collector, probes = run
    data, refused = BROKEN[what]
    honest_cell(collector, probes, during=lambda: send(collector.channel, data))
    assert collector.refused["test_a"] == refused and kinds(collector) == {"forged"}
    assert collector.taken.get("test_a", set()) == {0, 1} - refused


def test_a_connection_left_open_refuses_the_record_it_names_when_it_ends(run):
    """A connection that is still open when its cell ends is judged when it ends: a second record for a call that
    was judged already refuses it; one that never says what it is, is flagged."""
    collector, probes = run
    named, anonymous = connect(collector.channel), connect(collector.channel)
    named.sendall(frame("test_a", 0, 9.0))  # whole, but never ended
    anonymous.sendall(MAGIC[:4])
    honest_cell(collector, probes)
    named.close()
    anonymous.close()
    collector.finish()
    assert collector.refused == {"test_a": {0}} and kinds(collector) == {"forged"}
    assert "ended before a record header" in described(collector)


def test_more_connections_than_the_grader_keeps_refuse_the_cell(run, monkeypatch):
    """Connections past the grader's limit are turned away (a probe's among them would stop its cell): every record
    of the cell is refused, those that came whole included."""
    collector, probes = run
    monkeypatch.setattr(records_module, "CONNECTIONS_MAX", 3)
    honest_cell(collector, probes, after=lambda: [connect(collector.channel).close() for _ in range(5)])
    assert collector.refused.get("test_a") == {0, 1} and not collector.taken and kinds(collector) == {"forged"}
    assert "more connections" in described(collector)


# ------------------------------------------------- moves against a probe's courier, at the moment it has started


def at_start(probes: _Records, move) -> None:
    """Make `move(pid, write_end)` run once, right after the probe's next courier has started: the learner's thread
    winning every race it could (the write end found in /proc/self/fd, as the learner's code would find it)."""
    spawn = probes.spawn

    def spawned(*args, **kwargs):
        pid = spawn(*args, **kwargs)
        probes.spawn = spawn
        read_end = kwargs["file_actions"][0][1]
        pipe = os.readlink(f"/proc/self/fd/{read_end}")
        write_end = next(int(fd) for fd in os.listdir("/proc/self/fd") if int(fd) != read_end and _target(fd) == pipe)
        move(pid, write_end, probes) if move is _steal_from_the_pipe else move(pid, write_end)
        return pid

    probes.spawn = spawned


def _target(fd: str) -> str | None:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def _push_into_the_pipe(pid, write_end):  # the learner's right answer, in first (through a new open of the pipe)
    fd = os.open(f"/proc/self/fd/{write_end}", os.O_WRONLY)
    os.write(fd, payload("test_a", 0, 9.0))
    os.close(fd)


def _push_through_a_dup(pid, write_end):  # the same through a duplicate of the probe's own descriptor
    os.write(os.dup(write_end), payload("test_a", 0, 9.0))


def _steal_from_the_pipe(pid, write_end, probes):
    """A read end of the courier's pipe (a new open of it), read as soon as the probe has written: the courier is
    still starting then, and gets the record less what was taken."""
    stolen = os.open(f"/proc/self/fd/{write_end}", os.O_RDONLY | os.O_NONBLOCK)
    write = probes.write_fd

    def write_then_steal(fd, data):
        written = write(fd, data)
        probes.write_fd = write
        os.read(stolen, 5)
        return written

    probes.write_fd = write_then_steal


def _dup2_over_the_pipe(pid, write_end):
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, write_end)
    os.close(null)


def _close_the_pipe(pid, write_end):
    os.close(write_end)
    os.pipe()  # the number taken by another pipe


def _kill_the_courier(pid, write_end):
    os.kill(pid, signal.SIGKILL)


def _reap_the_courier(pid, write_end):
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def _make_the_pipe_non_blocking(pid, write_end):
    os.set_blocking(write_end, False)


@pytest.mark.parametrize(
    "move",
    [
        _push_into_the_pipe,
        _push_through_a_dup,
        _steal_from_the_pipe,
        _dup2_over_the_pipe,
        _close_the_pipe,
        _kill_the_courier,
        _reap_the_courier,
    ],
    ids=lambda f: f.__name__,
)
def test_a_courier_whose_input_or_life_was_touched_delivers_no_record(run, move):
    """Bytes pushed into the courier's input (its probe's hash then fails at the grader), bytes taken out of it, its
    input replaced or closed, the courier killed: the record is refused (or, where its probe saw it, the cell stops
    with ChannelError and the probe says so in the channel), never replaced; the other call's record stands."""
    collector, probes = run
    raised = []

    def first_call():
        at_start(probes, move)
        try:
            probes.write(ProbeRecord("test_a", 0, None), payload("test_a", 0, 1.0))
        except ChannelError as exc:
            raised.append(str(exc))

    collector.before(TEST)
    first_call()
    probes.write(ProbeRecord("test_a", 1, None), payload("test_a", 1, 2.0))
    collector.after(TEST)
    assert collector.refused == {"test_a": {0}} and collector.taken == {"test_a": {1}}, described(collector)
    assert kinds(collector) == {"forged"}
    if move in (_kill_the_courier, _reap_the_courier, _dup2_over_the_pipe, _close_the_pipe, _steal_from_the_pipe):
        assert raised and "could not send its record" in described(collector)


def test_a_duplicated_descriptor_reaches_nothing_after_the_probe_has_sent(run):
    """The attack of issue 47: every descriptor the process holds, duplicated while the learner's code runs and while
    the courier runs, then written through after the probe's record was sent (from a `__del__`, a thread, a child
    that kept them): nothing reaches the grader, the records stand, and none was there to rewrite."""
    collector, probes = run
    dups = []

    before = {(fd, _target(fd)) for fd in os.listdir("/proc/self/fd")}  # this test process's own (pytest's output)

    def dup_everything(*_):  # every pipe and socket (the courier's input among them), every file of the channel
        for fd in os.listdir("/proc/self/fd"):
            target = _target(fd) or ""
            if (fd, target) in before:
                continue
            if target.startswith(("pipe:", "socket:")) or str(collector.channel) in target:
                try:
                    dups.append(os.dup(int(fd)))
                except OSError:
                    pass

    def write_through_them():
        for fd in dups:
            try:
                os.write(fd, frame("test_a", 0, 9.0))
            except OSError:
                pass

    honest_cell(
        collector,
        probes,
        during=lambda: (dup_everything(), at_start(probes, dup_everything)),
        between=write_through_them,
    )
    write_through_them()
    for fd in dups:
        os.close(fd)
    assert collector.taken == {"test_a": {0, 1}} and not collector.refused and not collector.problems
    results, _ = read_channel(collector.collected, "test_a", 2)
    assert results == [{"value": 1.0}, {"value": 2.0}]


def _replace_the_socket(channel):
    """The learner (here of the grader's uid) puts a socket of its own where the grader's was."""
    folder = channel / SOCKET_FOLDER
    os.rename(folder / SOCKET_NAME, folder / "kept.sock")
    own = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    own.bind(str(folder / SOCKET_NAME))
    own.listen(4)
    return own


def _move_the_socket_folder(channel):
    os.rename(channel / SOCKET_FOLDER, channel / "moved")
    (channel / SOCKET_FOLDER).mkdir()
    own = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    own.bind(str(channel / SOCKET_FOLDER / SOCKET_NAME))
    own.listen(4)
    return own


@pytest.mark.parametrize("move", [_replace_the_socket, _move_the_socket_folder], ids=lambda f: f.__name__)
def test_a_courier_sends_only_to_the_grader_socket_it_was_given(run, move):
    """A socket of the learner's in the grader's place (where the learner may change that folder: the grader's own
    user, without a sandbox): the courier refuses it, the probe stops the cell, and the grader flags the change."""
    collector, probes = run
    collector.before(TEST)
    own = move(collector.channel)
    with pytest.raises(ChannelError, match="replaced or moved|ended with status"):
        probes.write(ProbeRecord("test_a", 0, None), payload("test_a", 0, 1.0))
    collector.after(TEST)
    own.close()
    assert collector.refused["test_a"] == {0} and "test_a" not in collector.taken
    assert kinds(collector) == {"forged"}


def test_the_grader_socket_is_the_graders_and_its_folder_is_not_the_kernels(run):
    """What a kernel of another uid meets: the socket's folder is the grader's (0755), the socket open to connect."""
    collector, _ = run
    folder = collector.channel / SOCKET_FOLDER
    assert folder.stat().st_uid == os.getuid() and folder.stat().st_mode & 0o777 == 0o755
    assert (folder / SOCKET_NAME).stat().st_mode & 0o777 == 0o666
    assert collector.socket_id == identity(os.stat(folder / SOCKET_NAME))


# -------------------------------------------------------------------------------------- the channel folder itself


def _file_under_a_records_name(channel):
    with open(channel / "test_a.0.pt", "wb") as fh:
        fh.write(payload("test_a", 0, 9.0))


def _moved_under_a_records_name(channel):
    (channel / "x.tmp").write_bytes(payload("test_a", 0, 9.0))
    os.replace(channel / "x.tmp", channel / "test_a.0.pt")


@pytest.mark.parametrize("move", [_file_under_a_records_name, _moved_under_a_records_name], ids=lambda f: f.__name__)
def test_a_file_written_in_the_channel_under_a_records_name_refuses_that_record(run, move):
    collector, probes = run
    honest_cell(collector, probes, during=lambda: move(collector.channel))
    assert collector.refused["test_a"] == {0} and collector.taken["test_a"] == {1}
    assert kinds(collector) == {"forged"}


def test_a_channel_folder_made_read_only_disturbs_every_record_of_its_cell(watched):
    collector, probes = watched
    honest_cell(collector, probes, during=lambda: os.chmod(collector.channel, 0o500))
    os.chmod(collector.channel, 0o700)
    assert collector.refused["test_a"] == {0, 1} and not collector.taken


def test_reading_the_channel_is_flagged_and_the_records_still_count(watched):
    collector, probes = watched

    def peek():
        os.listdir(collector.channel)
        os.listdir(collector.channel / SOCKET_FOLDER)

    honest_cell(collector, probes, during=peek)
    assert collector.taken["test_a"] == {0, 1} and kinds(collector) == {"read"}
    assert "listed" in described(collector) and f"{SOCKET_FOLDER} was read" in described(collector)


def test_a_file_written_after_the_last_cell_is_flagged(run):
    collector, probes = run
    honest_cell(collector, probes)
    (collector.channel / "test_a.0.pt").write_bytes(b"late")  # an atexit handler, a thread
    collector.finish()
    assert kinds(collector) == {"forged"} and "after the notebook's last cell" in described(collector)


def test_more_changes_than_the_watch_can_follow_refuse_the_cell(watched):
    collector, probes = watched
    honest_cell(collector, probes, during=lambda: collector.pending.append((OVERFLOW, "")))
    assert collector.refused["test_a"] == {0, 1} and kinds(collector) == {"forged"}


# ------------------------------------------------------------------------------------------- the frame, read alone


@pytest.mark.parametrize("step", [1, 7, 4096, 1 << 20])
def test_a_frame_reads_the_same_however_its_bytes_arrive(tmp_path, step):
    data = frame("test_a", 1, torch.arange(1000.0))
    conn = _Connection(socket.socket(socket.AF_UNIX), tmp_path / "in")
    for at in range(0, len(data), step):
        conn.feed(data[at : at + step])
    conn.end()
    assert not conn.broken and not conn.short and conn.named == ("test_a", 1)
    assert torch.equal(torch.load(tmp_path / "in")["results"][0]["value"], torch.arange(1000.0))


@pytest.mark.parametrize(
    "line",
    [
        b"not json",
        b"[]",
        b'{"cell": "t", "call": 0, "size": 1}',
        b'{"cell": "t", "call": true, "size": 1, "sha256": "' + b"0" * 64 + b'"}',
        b'{"cell": "t", "call": -1, "size": 1, "sha256": "' + b"0" * 64 + b'"}',
        b'{"cell": "../t", "call": 0, "size": 1, "sha256": "' + b"0" * 64 + b'"}',
        b'{"cell": "t", "call": 0, "size": 1, "sha256": "' + b"g" * 64 + b'"}',
        b'{"cell": "t", "call": 0, "size": 1, "sha256": "' + b"0" * 64 + b'", "more": 1}',
    ],
)
def test_a_header_is_read_as_untrusted_input(line):
    with pytest.raises(ValueError):
        parse_header(line)


def test_the_courier_sends_nothing_to_a_socket_it_was_not_given_and_nothing_partial_without_saying_so(run):
    collector, probes = run
    code = probes.courier
    folder = str(collector.channel / SOCKET_FOLDER)

    def courier(socket_id: str, data: bytes, size: int) -> int:
        argv = [sys.executable, "-I", "-S", "-c", code, folder, socket_id, header("t", 0, data), str(size)]
        return subprocess.run(argv, input=data, check=False).returncode

    data = payload("t", 0, 1.0)
    collector.before(0)
    assert courier("0:0:0", data, len(data)) == 2  # not the grader's socket: not even a connection
    collector.after(0)
    assert not collector.problems
    collector.before(1)
    assert courier(probes.socket_id, data[:10], len(data)) == 3  # its input ended early: a part of a record
    assert courier(probes.socket_id, data, len(data)) == 0
    collector.after(1)
    assert "t.0.pt was sent" in described(collector) and collector.refused == {"t": {0}}


# ----------------------------------------------------------------------------------------------- what is flagged


@pytest.mark.parametrize(
    "code",
    [
        "for fd in os.listdir('/proc/self/fd'):\n    os.dup(int(fd))",
        "os.open(f'/proc/self/fd/{fd}', os.O_WRONLY)",
        "mem = open('/proc/self/mem', 'r+b')",
        "mem = open(f'/proc/{pid}/mem', 'r+b')",
        "fd = os.open(f'/proc/{pid}/fd/0', os.O_RDWR)",
        "spans = open('/proc/self/maps').read()",
        "here = b'/proc/thread-self/fd'",
    ],
)
def test_the_screen_flags_a_process_descriptors_or_memory_reached_through_proc(code):
    """What cannot be kept from the kernel's process is flagged where the screen reads it: its own memory (what a probe
    computes its record in, before the courier takes it) and its descriptors, by a path into /proc."""
    from autograder.grading.screen import reaches

    assert any("descriptors or memory through /proc" in r for r in reaches(code)), reaches(code)


@pytest.mark.parametrize(
    "code", ["used = open('/proc/self/status').read()", "pids = os.listdir('/proc')", "t = 'processing/fd'"]
)
def test_the_screen_spares_other_uses_of_proc(code):
    from autograder.grading.screen import reaches

    assert reaches(code) == []


def test_couriers_run_on_an_execute_only_copy_of_python_the_sandbox_holds(run, tmp_path):
    """The sandbox's view of the package holds the copy (grading/probe_view.py): run but never read by the kernel's
    uid, so the couriers started from it are not dumpable (x_records_courier_memory_rewritten, in the sandbox)."""
    from autograder.grading.probe_view import courier_interpreter, probe_view
    from autograder.probes.channel import COURIER_PYTHON
    from autograder.probes.kernel import _courier_python

    copy = courier_interpreter(tmp_path)
    assert copy is not None and copy.stat().st_mode & 0o777 == 0o111
    assert _courier_python(copy) == str(copy) and _courier_python(tmp_path / "missing") == sys.executable
    assert (probe_view() / "probes" / COURIER_PYTHON).stat().st_mode & 0o777 == 0o111
    collector, probes = run
    probes.python = str(copy)
    honest_cell(collector, probes)
    assert collector.taken == {"test_a": {0, 1}} and not collector.problems


def test_a_method_replaced_on_the_class_after_install_does_not_send_the_record(run, monkeypatch):
    """The learner's code replacing what sends a record (`_Records._send`, reached through the module: flagged as an
    autograder import) after the probes were installed: the probes keep what they took at install."""
    collector, probes = run

    def forged(self, record, data, socket_id):
        return _Records._send.__wrapped__(self, record, payload(record.cell, record.call, 9.0), socket_id)

    forged.__wrapped__ = _Records._send
    monkeypatch.setattr(_Records, "_send", forged)
    honest_cell(collector, probes)
    assert collector.taken == {"test_a": {0, 1}} and not collector.problems
    assert read_channel(collector.collected, "test_a", 2)[0] == [{"value": 1.0}, {"value": 2.0}]


def test_a_record_the_grader_cannot_keep_is_refused_with_the_graders_reason(run, monkeypatch):
    """The grader's own disk failing as it keeps a record: the record is not judged, the flag says whose the failure
    was, and the receiving thread goes on (the next record is taken)."""
    collector, probes = run
    failed = []

    def full_disk(path, mode="r", *args, **kwargs):
        if not failed and ".incoming-" in str(path):
            failed.append(path)
            raise OSError(28, "No space left on device")
        return open(path, mode, *args, **kwargs)

    monkeypatch.setattr(records_module, "open", full_disk, raising=False)
    collector.before(TEST)
    try:
        probes.write(ProbeRecord("test_a", 0, None), payload("test_a", 0, 1.0))
    except ChannelError:
        pass  # its courier saw the grader close the connection
    probes.write(ProbeRecord("test_a", 1, None), payload("test_a", 1, 2.0))
    collector.after(TEST)
    assert failed and collector.refused == {"test_a": {0}} and collector.taken == {"test_a": {1}}
    assert "could not be kept by the grader (No space left on device)" in described(collector)
