"""Records collected cell by cell, from outside (autograder/grading/records.py): the probe's own writes, as the
kernel makes them (autograder.probes.kernel._Records), are taken; a record with any other history is refused and
flagged. Each test plays the cells of one run in this process, with the learner's moves in between."""

from __future__ import annotations

import io
import os

import pytest
import torch

from autograder.grading import records as records_module
from autograder.grading.judge import read_channel
from autograder.grading.records import OVERFLOW, RecordCollector, history
from autograder.probes.channel import ProbeRecord
from autograder.probes.kernel import _Records

pytestmark = pytest.mark.grading

TEST = 2  # the run's cell index of the one test cell, "test_a", with two check calls


def payload(cell: str, call: int, value: float) -> bytes:
    buf = io.BytesIO()
    torch.save(ProbeRecord(cell, call, {"value": value}).to_payload(), buf)
    return buf.getvalue()


def _collector(tmp_path) -> tuple[RecordCollector, _Records]:
    channel = tmp_path / "probe"
    channel.mkdir()
    collector = RecordCollector(channel, tmp_path / "taken", {TEST: ("test_a", 2)})
    collector.start()
    return collector, _Records(str(channel))


@pytest.fixture(params=["inotify", "listing"])
def run(request, tmp_path, monkeypatch):
    """(collector, the probes' side) for a run whose cell 2 is test_a with two calls; `listing`: no inotify."""
    if request.param == "listing":
        monkeypatch.setattr(records_module, "_watch", lambda folder: None)
    collector, probes = _collector(tmp_path)
    assert collector.watching == (request.param == "inotify")
    yield collector, probes
    collector.finish()


@pytest.fixture
def watched(tmp_path):
    """The same run, watched by inotify (what only inotify sees: reads, moves, a second open, the folder's mode)."""
    collector, probes = _collector(tmp_path)
    assert collector.watching
    yield collector, probes
    collector.finish()


def honest_cell(collector: RecordCollector, probes: _Records, during=None) -> None:
    collector.before(TEST)
    probes.begin("test_a", 2)
    if during:
        during()  # the learner's code, called by the first probe
    probes.write(ProbeRecord("test_a", 0, None), payload("test_a", 0, 1.0))
    probes.write(ProbeRecord("test_a", 1, None), payload("test_a", 1, 2.0))
    collector.after(TEST)


def kinds(collector: RecordCollector) -> set[str]:
    return {p.kind for p in collector.problems}


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
    assert os.listdir(collector.channel) == []  # nothing left for the kernel to read or rewrite


def test_a_record_written_after_its_cell_is_not_judged(run):
    collector, probes = run
    honest_cell(collector, probes)
    collector.before(TEST + 1)
    (collector.channel / "test_a.0.pt").write_bytes(payload("test_a", 0, 9.0))  # the last cell forges
    collector.after(TEST + 1)
    collector.finish()
    assert collector.refused["test_a"] == {0} and kinds(collector) == {"forged"}
    assert "cell 3" in collector.problems[0].describe()


@pytest.mark.parametrize("when", ["in an earlier cell", "between cells"])
def test_a_record_there_before_its_cell_is_not_judged(run, when):
    collector, probes = run
    collector.before(1)
    (collector.channel / "test_a.1.pt").write_bytes(payload("test_a", 1, 9.0))
    if when == "in an earlier cell":
        collector.after(1)
    honest_cell(collector, probes)
    assert 1 in collector.refused["test_a"] and "forged" in kinds(collector)


def test_a_record_for_another_cell_written_during_a_test_is_not_judged_later(run):
    collector, probes = run
    collector.tests[5] = ("test_b", 1)
    honest_cell(collector, probes, during=lambda: (collector.channel / "test_b.0.pt").write_bytes(b"forged"))
    collector.before(5)
    probes.begin("test_b", 1)
    probes.write(ProbeRecord("test_b", 0, None), payload("test_b", 0, 1.0))
    collector.after(5)
    assert collector.refused == {"test_b": {0}} and collector.taken["test_a"] == {0, 1}


def _second_open(channel):
    with open(channel / "test_a.0.pt", "wb") as fh:
        fh.write(payload("test_a", 0, 9.0))


def _replace(channel):
    (channel / "x.tmp").write_bytes(payload("test_a", 0, 9.0))
    os.replace(channel / "x.tmp", channel / "test_a.0.pt")


def _through_the_probes_fd(probes):
    fd, _ = probes.open[("test_a", 0)]
    os.pwrite(fd, payload("test_a", 0, 9.0), 0)


def _close_the_probes_fd(probes):
    os.close(probes.open[("test_a", 0)][0])


def _remove(channel):
    os.unlink(channel / "test_a.0.pt")
    (channel / "test_a.0.pt").write_bytes(payload("test_a", 0, 9.0))


@pytest.mark.parametrize("move", [_through_the_probes_fd, _close_the_probes_fd], ids=lambda f: f.__name__)
def test_a_probe_whose_own_file_was_touched_says_so(run, move):
    collector, probes = run
    honest_cell(collector, probes, during=lambda: move(probes))
    assert collector.refused["test_a"] == {0} and collector.taken["test_a"] == {1}
    assert kinds(collector) == {"forged"}


@pytest.mark.parametrize("move", [_second_open, _replace, _remove], ids=lambda f: f.__name__)
def test_a_record_the_learners_code_rewrites_during_its_cell_is_not_judged(watched, move):
    collector, probes = watched
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
        (collector.channel / "test_a.1.pt").read_bytes()

    honest_cell(collector, probes, during=peek)
    assert collector.taken["test_a"] == {0, 1} and kinds(collector) == {"read"}
    assert "listed" in collector.problems[0].describe() and "read" in collector.problems[0].describe()


def test_a_probe_that_never_finished_is_not_recorded_and_not_flagged(run):
    collector, probes = run
    collector.before(TEST)
    probes.begin("test_a", 2)
    probes.write(ProbeRecord("test_a", 0, None), payload("test_a", 0, 1.0))
    collector.after(TEST)  # the second probe was stopped (a timeout, a crash)
    assert collector.taken == {"test_a": {0}} and not collector.refused and not collector.problems


def test_a_stopped_probe_finishing_late_is_neither_judged_nor_flagged(watched):
    collector, probes = watched
    collector.before(TEST)
    probes.begin("test_a", 2)
    probes.write(ProbeRecord("test_a", 0, None), payload("test_a", 0, 1.0))
    collector.after(TEST)  # a timeout: the kernel is still in the second call
    collector.before(TEST + 1)
    probes.write(ProbeRecord("test_a", 1, None), payload("test_a", 1, 2.0))  # the interrupted probe's late record
    collector.after(TEST + 1)
    assert collector.taken == {"test_a": {0}} and not collector.refused and not collector.problems
    collector.before(TEST + 2)
    with open(collector.channel / "test_a.1.pt", "wb") as fh:  # a new file of that name is not the probe's
        fh.write(b"forged")
    collector.after(TEST + 2)
    assert collector.refused == {"test_a": {1}} and kinds(collector) == {"forged"}


def test_a_record_written_after_the_last_cell_is_flagged(run):
    collector, probes = run
    honest_cell(collector, probes)
    (collector.channel / "test_a.0.pt").write_bytes(b"late")  # an atexit handler, a thread
    collector.finish()
    assert kinds(collector) == {"forged"} and "after the notebook's last cell" in collector.problems[0].describe()


def test_more_changes_than_the_watch_can_follow_refuse_the_cell(watched):
    collector, probes = watched
    honest_cell(collector, probes, during=lambda: collector.pending.append((OVERFLOW, "")))
    assert collector.refused["test_a"] == {0, 1} and kinds(collector) == {"forged"}


@pytest.mark.parametrize(
    "masks, verdict",
    [
        ([0x100, 0x20, 0x2, 0x8], None),  # created, opened, written, closed: the probe's
        ([0x100, 0x20, 0x8], None),  # an empty payload is still the probe's (the judge refuses it)
        ([0x100, 0x20], "was never written: its probe did not finish"),
        ([0x20, 0x2, 0x8], "was there before its test cell began, or was created twice"),
        ([0x100, 0x20, 0x2, 0x8, 0x20, 0x2, 0x8], "was opened for writing a second time"),
        ([0x100, 0x20, 0x2, 0x8, 0x2], "was written after its probe closed it"),
        ([0x100, 0x20, 0x2, 0x8, 0x40], "was moved, removed or had its permissions changed"),
        ([0x100, 0x20, 0x4, 0x2, 0x8], "was moved, removed or had its permissions changed"),
    ],
)
def test_history_accepts_only_the_probes_own_sequence(masks, verdict):
    assert history(masks)[0] == verdict


def test_a_read_between_the_probes_own_events_is_only_a_read():
    assert history([0x100, 0x20, 0x20, 0x1, 0x10, 0x2, 0x8]) == (None, True)
