"""The grading scheduler (autograder.grading.pool.run_jobs): every job ends exactly once, as done, died or
overdue, each worker takes the next job when its last one ends, and nothing waits longer than it must."""

from __future__ import annotations

import os
import threading
import time

import pytest

from autograder.grading.pool import Worker, run_jobs

pytestmark = pytest.mark.grading


class PipeWorker(Worker):
    """A worker whose 'process' is a pipe written by a thread: it says done, closes (dies) or stays silent."""

    def __init__(self, slot: int):
        super().__init__(slot, state_dir=None)  # type: ignore[arg-type]
        self.read_end = -1
        self.stopped = 0

    def submit(self, student, job_dir, limit):
        self.job, self.deadline = (student, job_dir), time.monotonic() + limit
        self.read_end, write_end = os.pipe()
        os.set_blocking(self.read_end, False)
        behaviour, delay = student.split(":")

        def act():
            time.sleep(float(delay))
            if behaviour == "done":
                os.write(write_end, b"ready\ndone 0 ")  # the line arrives in two pieces
                time.sleep(0.01)
                os.write(write_end, b"job.json\n")
            if behaviour != "silent":
                os.close(write_end)

        threading.Thread(target=act, daemon=True).start()

    def fileno(self):
        return self.read_end

    def stop(self):
        self.stopped += 1


def test_every_job_ends_once_with_its_state_and_workers_take_the_next():
    pool = [PipeWorker(0), PipeWorker(1)]
    todo = ["done:0.05", "died:0.02", "silent:0", "done:0.01", "done:0.03"]
    ended: list[tuple[str, str, int]] = []

    def start(worker, student):
        worker.submit(student, None, 0.5)

    def finish(worker, state):
        ended.append((worker.job[0], state, worker.slot))

    began = time.monotonic()
    run_jobs(pool, todo, start, finish)
    elapsed = time.monotonic() - began
    states = {student: state for student, state, _ in ended}
    assert sorted(states) == sorted(todo) and len(ended) == len(todo), ended
    assert states == {
        "done:0.05": "done",
        "died:0.02": "died",
        "silent:0": "overdue",
        "done:0.01": "done",
        "done:0.03": "done",
    }
    assert sum(w.stopped for w in pool) == 2, "the worker that died and the one that overran are replaced"
    assert {slot for _, _, slot in ended} == {0, 1}, "both workers took jobs"
    assert elapsed < 2.0, f"the overdue job ends at its deadline (0.5 s), not later: {elapsed:.2f} s"


def test_nothing_to_do_returns_at_once():
    run_jobs([PipeWorker(0)], [], lambda w, s: pytest.fail("no job to start"), lambda w, s: pytest.fail("none"))
