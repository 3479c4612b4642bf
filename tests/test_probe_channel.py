"""The probe record, from the kernel's torch.save to the grader's read: an honest record comes back whole; a file
the learner's code forged, moved, corrupted or inflated is refused with the learner's message, never an
exception in the grader."""

from __future__ import annotations

import pytest
import torch

from autograder.grading.judge import MAX_PROBE_BYTES, NOT_RECORDED, read_channel
from autograder.probes.channel import ProbeRecord
from autograder.registry import FAILED

pytestmark = pytest.mark.grading


def write(channel, name, payload) -> None:
    torch.save(payload, channel / name)


def test_an_honest_record_comes_back_whole(tmp_path):
    data = {"values": [1.5, -2.0], "grad": torch.arange(3.0), "name": "adjoint_trace"}
    record = ProbeRecord("test_adjoint", 0, data, ["autograder.nb01.check_x"])
    write(tmp_path, ProbeRecord.file_name("test_adjoint", 0), record.to_payload())
    results, patched = read_channel(tmp_path, "test_adjoint", 1)
    assert results[0]["values"] == [1.5, -2.0] and torch.equal(results[0]["grad"], torch.arange(3.0))
    assert patched == ["autograder.nb01.check_x"]


@pytest.mark.parametrize(
    "payload",
    [
        [{"cell": "test_a", "call": 0, "results": [1.0]}],  # not a dict
        {"cell": "test_a", "call": 0, "results": 1.0},  # results not a list
        {"cell": "test_a", "call": 0, "results": [1.0, 2.0]},  # two answers for one call
        {"cell": "test_a", "call": 0, "results": []},
        {"cell": 7, "call": 0, "results": [1.0]},  # cell not a name
        {"cell": "test_a", "call": "0", "results": [1.0]},  # call not an int
        {"cell": "test_a", "call": False, "results": [1.0]},  # a bool is not a call number
        {"call": 0, "results": [1.0]},  # no cell
    ],
)
def test_a_forged_record_is_refused_with_a_message(tmp_path, payload):
    write(tmp_path, "test_a.0.pt", payload)
    results, _ = read_channel(tmp_path, "test_a", 1)
    assert results == [{FAILED: "The values your code returned could not be read back."}]


def test_a_record_of_another_call_or_cell_copied_into_place_is_not_taken(tmp_path):
    write(tmp_path, "test_a.0.pt", ProbeRecord("test_a", 1, 2.0).to_payload())  # call 1's record under call 0's name
    write(tmp_path, "test_a.1.pt", ProbeRecord("test_b", 1, 2.0).to_payload())  # another cell's
    assert read_channel(tmp_path, "test_a", 2)[0] == [NOT_RECORDED, NOT_RECORDED]


def test_a_missing_corrupt_or_oversized_file_is_the_learners_message(tmp_path):
    (tmp_path / "test_a.1.pt").write_bytes(b"not a torch file")
    (tmp_path / "test_a.2.pt").write_bytes(b"\0" * (MAX_PROBE_BYTES + 1))
    results, patched = read_channel(tmp_path, "test_a", 3)
    assert results[0] == NOT_RECORDED and patched == []
    assert "could not be read back" in results[1][FAILED] and "too large" in results[2][FAILED]


def test_patched_names_that_are_not_strings_are_dropped(tmp_path):
    payload = {**ProbeRecord("test_a", 0, 1.0).to_payload(), "patched": ["x.y", 3, None]}
    write(tmp_path, "test_a.0.pt", payload)
    assert read_channel(tmp_path, "test_a", 1) == ([1.0], ["x.y"])
