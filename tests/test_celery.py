"""Grading as a service on Celery workers, with redis-server as the broker (started here, on a free port).

Each guarantee of the service is one test: same scores as the local command; each submission written once,
the newest winning; a worker killed mid-task loses nothing; a broker restart loses nothing; a submission
that kills its worker every time ends as a failed row; bad payloads get their message; the broker carries
the learner's files only.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from autograder.coursedir import REPO
from autograder.grading import grade_assignment
from autograder.grading.sandbox import Limits
from autograder.scale import ledger, service
from autograder.scale.client import install_outputs, queue_assignment, wait
from autograder.scale.payload import MAX_PAYLOAD_BYTES, Payload, SubmittedFile, from_submission
from benchmarks.grading import ASSIGNMENT, build
from tests.celery_service import Redis, Worker

pytestmark = [pytest.mark.celery, pytest.mark.slow]

if shutil.which("redis-server") is None:
    pytest.skip("redis-server is not installed (make system-deps)", allow_module_level=True)

LIMITS = Limits(timeout_s=60)  # each notebook's deadline; the task's limits follow from it


@pytest.fixture(autouse=True)
def service_grades_on_the_session_pool(monkeypatch, grading_pool):
    """The task's own function, called in this process (service.grade), grades on the session's warm grading
    processes rather than starting one more."""
    monkeypatch.setattr(service, "_POOL", grading_pool[:1])


@pytest.fixture
def redis(tmp_path):
    server = Redis(tmp_path / "redis").start()
    yield server
    server.stop()


@pytest.fixture
def workers(tmp_path):
    started: list[Worker] = []

    def start(broker: str, db_url: str, course: Path, **kw) -> Worker:
        worker = Worker(broker, db_url, course, tmp_path / f"worker{len(started)}.log", f"w{len(started)}", **kw)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


def course(root: Path, n: int) -> tuple[Path, str, list[str]]:
    students = build(root, n)
    return root, f"sqlite:///{root / 'gradebook.db'}", students


@pytest.fixture(scope="session")
def local_scores(tmp_path_factory, grading_pool) -> dict[int, tuple]:
    """The local command's scores of the three example learners (correct, mistakes, blank), by i % 3. Once per test
    process (a few seconds), so that the tests comparing with it can run on different workers."""
    root, db_url, students = course(tmp_path_factory.mktemp("local") / "course", 3)
    rows = grade_assignment(
        root,
        ASSIGNMENT,
        db_url=db_url,
        workers=2,
        progress=False,
        limits=LIMITS,
        log=lambda *_: None,
        pool=grading_pool,
    )
    by = {r.student: r for r in rows}
    return {i: (by[s].score, by[s].max_score, sorted(by[s].by_cell.items())) for i, s in enumerate(students)}


def scores(db_url: str, students: list[str]) -> dict[str, tuple]:
    from autograder.grading.report import read_scores

    return {
        r.student: (r.score, r.max_score, sorted(r.by_cell.items())) for r in read_scores(db_url, ASSIGNMENT, students)
    }


def written_once(db_url: str, students: list[str]) -> None:
    rows = ledger.states(db_url, ASSIGNMENT)
    for student in students:
        mine = [r for (s, _), r in rows.items() if s == student]
        seen = [(r["state"], r["written"], r["attempts"], r["reason"]) for r in mine]
        assert [r["written"] for r in mine] == [1] and mine[0]["state"] == "graded", (student, seen)


def test_workers_grade_as_the_local_command_does_and_feedback_comes_home(redis, workers, local_scores, tmp_path):
    root, db_url, students = course(tmp_path / "course", 6)
    pool = [workers(redis.url, db_url, root, tmpdir=tmp_path / f"tmp{i}") for i in range(2)]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            ASSIGNMENT,
            "--course-dir",
            str(root),
            "--broker",
            redis.url,
            "--db-url",
            db_url,
            "--timeout",
            str(LIMITS.timeout_s),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "Queued 6 submission(s)" in out.stdout and "learner001" in out.stdout
    got = scores(db_url, students)
    assert got == {s: local_scores[i % 3] for i, s in enumerate(students)}
    written_once(db_url, students)
    for student in students:
        page = root / "feedback" / student / ASSIGNMENT / "reverse_accumulation.html"
        assert b"<html" in page.read_bytes()[:500].lower()
        assert (root / "autograded" / student / ASSIGNMENT / "reverse_accumulation.ipynb").is_file()
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            ASSIGNMENT,
            "--course-dir",
            str(root),
            "--broker",
            redis.url,
            "--db-url",
            db_url,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "6 submission(s) already queued or graded" in again.stdout and "Queued 0" in again.stdout
    for worker in pool:
        worker.stop()
    # each worker's temporary folders (its grading process's, the tasks' scratch) went with it
    assert [sorted(p.name for p in (tmp_path / f"tmp{i}").iterdir()) for i in range(2)] == [[], []]


def settings(root: Path, db_url: str) -> service.WorkerSettings:
    return service.WorkerSettings(root, db_url, "source", "release")


def test_each_submission_is_written_once_and_the_newest_wins_in_any_order(tmp_path, local_scores):
    """Without a broker: the task's own function, delivered twice, and two submissions finishing out of order."""
    root, db_url, (ada, ben, cleo) = course(tmp_path / "course", 3)
    good = from_submission(root / "submitted", ada, ASSIGNMENT)
    blank = from_submission(root / "submitted", cleo, ASSIGNMENT)
    older = Payload(ASSIGNMENT, ada, "2026-11-01T11:00:00+00:00", blank.files)  # ada's first try: blank
    newer = Payload(ASSIGNMENT, ada, "2026-11-01T12:00:00+00:00", good.files)  # her later one: correct
    assert service.grade({**newer.to_dict(), "sha256": newer.sha256}, settings(root, db_url), LIMITS) == "written"
    assert service.grade(newer.to_dict(), settings(root, db_url), LIMITS) == "already graded", "a redelivery"
    assert service.grade(older.to_dict(), settings(root, db_url), LIMITS) == "superseded", "finished last, older"
    rows = ledger.states(db_url, ASSIGNMENT)
    assert rows[(ada, newer.sha256)]["written"] == 1 and rows[(ada, newer.sha256)]["state"] == "graded"
    assert rows[(ada, older.sha256)]["written"] == 0 and rows[(ada, older.sha256)]["state"] == "superseded"
    assert scores(db_url, [ada])[ada] == local_scores[0], "the gradebook holds the newer, correct submission"
    newest = Payload(
        ASSIGNMENT,
        ada,
        "2026-11-01T13:00:00+00:00",
        blank.files[:-1]
        + blank.files[-1:]
        + [SubmittedFile("notes.txt", base64.b64encode(b"x").decode(), hashlib.sha256(b"x").hexdigest())],
    )
    assert service.grade(newest.to_dict(), settings(root, db_url), LIMITS) == "written"
    rows = ledger.states(db_url, ASSIGNMENT)
    assert rows[(ada, newer.sha256)]["state"] == "superseded" and rows[(ada, newest.sha256)]["state"] == "graded"
    assert scores(db_url, [ada])[ada][0] == local_scores[2][0], "now her newest (blank) one counts"
    install_outputs(root, ASSIGNMENT, ada, db_url)
    assert (root / "feedback" / ada / ASSIGNMENT / "reverse_accumulation.html").is_file()


@pytest.mark.parametrize(
    "damage, message",
    [
        (
            lambda d: {**d, "files": [{**d["files"][0], "data": base64.b64encode(b"other").decode()}] + d["files"][1:]},
            "do not match their sha256",
        ),
        (
            lambda d: {
                **d,
                "files": d["files"]
                + [{"path": "../../escape.py", "data": "", "sha256": hashlib.sha256(b"").hexdigest()}],
            },
            "not a path inside the submission",
        ),
        (
            lambda d: {
                **d,
                "files": d["files"] + [{"path": "/etc/x", "data": "", "sha256": hashlib.sha256(b"").hexdigest()}],
            },
            "not a path inside the submission",
        ),
        (
            lambda d: {
                **d,
                "files": d["files"]
                + [{"path": "big.bin", "data": "A" * (MAX_PAYLOAD_BYTES * 4 // 3 + 8), "sha256": "0" * 64}],
            },
            "the grading service takes at most",
        ),
        (lambda d: {**d, "sha256": "f" * 64}, "do not match the sha256 it was queued with"),
    ],
)
def test_a_bad_payload_ends_as_a_failed_row_with_its_reason(tmp_path, damage, message):
    root, db_url, (ada, *_) = course(tmp_path / "course", 1)
    payload = from_submission(root / "submitted", ada, ASSIGNMENT)
    data = damage({**payload.to_dict(), "sha256": payload.sha256})
    assert service.grade(data, settings(root, db_url), LIMITS) == "written"
    (row,) = ledger.states(db_url, ASSIGNMENT).values()
    assert row["state"] == "failed" and message in row["reason"], row
    assert scores(db_url, [ada])[ada][0] == 0


def test_links_bad_json_and_a_missing_notebook_get_the_local_commands_flags_and_messages(tmp_path, grading_pool):
    """The payload carries the files, not the links; what reading the submission left out travels with it, so a
    worker's grade has the local command's `symlink` flag and messages, and a linked notebook is refused. A
    notebook that is not JSON, and one that is missing, get the local command's messages too."""
    from autograder.grading.record import graded_rows

    rows = {}
    for where in ("local", "service"):
        root, db_url, (ada, ben, cy, dee) = course(tmp_path / where, 4)
        for student in (ada, ben):
            folder = root / "submitted" / student / ASSIGNMENT
            (folder / "passwords.txt").symlink_to("/etc/passwd")
        notebook = root / "submitted" / ben / ASSIGNMENT / "reverse_accumulation.ipynb"
        shutil.move(notebook, tmp_path / f"{where}-outside.ipynb")
        notebook.symlink_to(tmp_path / f"{where}-outside.ipynb")
        cut = root / "submitted" / cy / ASSIGNMENT / "reverse_accumulation.ipynb"
        cut.write_text(cut.read_text()[:5000])  # truncated: not JSON
        (root / "submitted" / dee / ASSIGNMENT / "reverse_accumulation.ipynb").unlink()
        (root / "submitted" / dee / ASSIGNMENT / "notes.txt").write_text("my answers are in my head")
        if where == "local":
            grade_assignment(
                root, ASSIGNMENT, db_url=db_url, workers=2, progress=False, limits=LIMITS, log=print, pool=grading_pool
            )
        else:
            for student in (ada, ben, cy, dee):
                payload = from_submission(root / "submitted", student, ASSIGNMENT)
                assert [f.path for f in payload.files if "passwords" in f.path] == []
                data = {**payload.to_dict(), "sha256": payload.sha256}
                assert service.grade(data, settings(root, db_url), LIMITS) == "written"
        rows[where] = {s: (r.score, r.flags, r.messages) for (_, s), r in graded_rows(db_url).items()}
    assert rows["service"] == rows["local"]
    ada_row, ben_row = rows["local"]["learner000"], rows["local"]["learner001"]
    assert [f.code for f in ada_row[1]] == ["symlink"] and "passwords.txt" in ada_row[1][0].detail
    assert any("is a symbolic link, not a notebook file" in m for m in ben_row[2]) and ben_row[0] == 0
    cy_row, dee_row = rows["local"]["learner002"], rows["local"]["learner003"]
    assert cy_row[0] == 0 and any("JSON" in m for m in cy_row[2]), cy_row
    assert dee_row[0] == 0 and any("is missing from your submission" in m for m in dee_row[2]), dee_row


@pytest.mark.parametrize("notes", [{"dropped": "x"}, {"refused": ["a"]}, {"other": []}, {"skipped": [1]}, "links"])
def test_a_note_of_what_was_left_out_in_another_shape_is_a_bad_payload(tmp_path, notes):
    root, db_url, (ada, *_) = course(tmp_path / "course", 1)
    payload = from_submission(root / "submitted", ada, ASSIGNMENT)
    data = {**payload.to_dict(), "left_out": notes}
    assert service.grade(data, settings(root, db_url), LIMITS) == "written"
    (row,) = ledger.states(db_url, ASSIGNMENT).values()
    assert row["state"] == "failed" and "left out is not in the expected form" in row["reason"], row


def test_a_submission_folder_that_is_a_link_is_refused_before_it_is_queued(tmp_path, redis):
    root, db_url, (ada, *_) = course(tmp_path / "course", 1)
    folder = root / "submitted" / ada / ASSIGNMENT
    shutil.move(folder, tmp_path / "elsewhere")
    folder.symlink_to(tmp_path / "elsewhere")
    keys = queue_assignment(
        root,
        ASSIGNMENT,
        None,
        broker=redis.url,
        db_url=db_url,
        source="source",
        release="release",
        limits=LIMITS,
        log=lambda *_: None,
    )
    assert redis.cli("llen", service.QUEUE).strip() == "0", "nothing went to the broker"
    row = ledger.state(db_url, keys[ada])
    assert row["state"] == "failed" and "is a symbolic link" in row["reason"], row


def test_a_submission_too_large_for_the_broker_is_refused_before_it_is_queued(tmp_path, redis):
    root, db_url, (ada, *_) = course(tmp_path / "course", 1)
    (root / "submitted" / ada / ASSIGNMENT / "weights.bin").write_bytes(b"\0" * (MAX_PAYLOAD_BYTES + 1))
    keys = queue_assignment(
        root,
        ASSIGNMENT,
        None,
        broker=redis.url,
        db_url=db_url,
        source="source",
        release="release",
        limits=LIMITS,
        log=lambda *_: None,
    )
    assert redis.cli("llen", service.QUEUE).strip() == "0", "nothing went to the broker"
    row = ledger.state(db_url, keys[ada])
    assert (
        row["state"] == "failed" and "takes at most 32 MiB" in row["reason"] and "Remove large files" in row["reason"]
    )


def test_the_broker_carries_the_learners_files_and_no_hidden_test(tmp_path, redis):
    root, db_url, students = course(tmp_path / "course", 2)
    queue_assignment(
        root,
        ASSIGNMENT,
        None,
        broker=redis.url,
        db_url=db_url,
        source="source",
        release="release",
        limits=LIMITS,
        log=lambda *_: None,
    )
    messages = redis.cli("lrange", service.QUEUE, "0", "-1")
    assert messages.count("revad.grade_submission") == 2
    source = (root / "source" / ASSIGNMENT / "reverse_accumulation.ipynb").read_text()
    assert "BEGIN HIDDEN TESTS" in source
    import json

    for raw in messages.strip().splitlines():
        body = json.loads(base64.b64decode(json.loads(raw)["body"]))
        text = json.dumps(body) + "".join(
            base64.b64decode(f["data"]).decode("utf-8", "replace") for f in body[0][0]["files"]
        )
        assert "BEGIN HIDDEN TESTS" not in text and "HIDDEN" not in text


def test_a_killed_worker_loses_nothing_and_no_submission_counts_twice(redis, workers, local_scores, tmp_path):
    """12 submissions, 3 workers; one worker's whole process group is SIGKILLed mid-task and another started. The
    broker hands the killed worker's task on after its visibility timeout, which must exceed a task's hard limit:
    both are made short here (a notebook's 60 s, as the other tests give it, and 30 s for the rest: soft 90 s, hard
    120 s) so that the test waits 150 s, not the 240 s that the default two minutes for the rest would need. A
    submission here takes a few seconds, but a worker's first also starts its warm-kernel factory, and on a loaded CI
    machine both take many times that: with soft 40 s the first submission failed there, and with a notebook deadline
    of 20 s a replacement worker's first learner got 0 points."""
    visibility = 150
    limits = Limits(timeout_s=60)
    root, db_url, students = course(tmp_path / "course", 12)  # about four per worker
    pool = [workers(redis.url, db_url, root, visibility_s=visibility) for _ in range(3)]
    import os

    os.environ["REVAD_VISIBILITY_TIMEOUT"] = str(visibility)
    try:
        service.app.conf.broker_transport_options = service.broker_options(visibility)
        service.VISIBILITY_TIMEOUT_S, service.TASK_SLACK_S = visibility, 30
        assert service.time_limits(limits, 1) == (90, 120)
        keys = queue_assignment(
            root,
            ASSIGNMENT,
            None,
            broker=redis.url,
            db_url=db_url,
            source="source",
            release="release",
            limits=limits,
            log=lambda *_: None,
        )
        victim = pool[0]
        deadline = time.monotonic() + 300
        # Celery's pool process is the worker's child from the start; the grading process that the victim's first
        # task starts is its grandchild. Waiting for "some task running" alone let another worker's task stand for
        # the victim's, and the victim was killed before it had counted an attempt (CI, stop 58).
        while not victim.grading_started():
            assert time.monotonic() < deadline, "no task started on the worker to be killed"
            time.sleep(0.2)
        time.sleep(2)  # mid-task: the victim's first task is starting its grading process, or grading
        running_before = {k for k, r in ledger.states(db_url, ASSIGNMENT).items() if r["state"] == "running"}
        victim.kill()
        workers(redis.url, db_url, root, visibility_s=visibility)
        rows = wait(root, ASSIGNMENT, keys, db_url, progress=False, timeout_s=visibility + 600)
    finally:
        service.VISIBILITY_TIMEOUT_S, service.TASK_SLACK_S = 7200, 120
        service.app.conf.broker_transport_options = service.broker_options(7200)
        os.environ.pop("REVAD_VISIBILITY_TIMEOUT", None)
    assert running_before, "a task was running when the worker was killed"
    assert len(rows) == 12
    written_once(db_url, students)
    states = ledger.states(db_url, ASSIGNMENT)
    attempts = [r["attempts"] for r in states.values()]
    assert max(attempts) >= 2, "the task the killed worker held was delivered again"
    got = scores(db_url, students)
    expected = {s: local_scores[i % 3] for i, s in enumerate(students)}
    rows_of = {s: [r for (who, _), r in states.items() if who == s] for s in students}
    differing = {s: (got.get(s), rows_of[s]) for s in students if got.get(s) != expected[s]}
    assert not differing, differing


def test_a_dead_workers_task_goes_back_at_the_first_sweep_after_its_visibility_timeout(redis):
    """The app's broker settings reach kombu's channel, and every sweep looks: a task taken and never acknowledged
    (its worker died) is back on the queue at the first sweep after its timeout. (kombu's default looks on every
    tenth sweep only: the second sweep here would leave the task where it is.)"""
    with service.app.connection_for_write(redis.url) as conn:
        channel = conn.default_channel
        assert (channel.unacked_restore_interval, channel.unacked_restore_throttle) == (service.RESTORE_SWEEP_S, 1)
        channel.visibility_timeout = 1  # the app's is two hours; the sweeping is what is checked here
        queue = conn.SimpleQueue("sweep-check")
        queue.put({"submission": "s01"})
        taken = queue.get(timeout=5)  # taken and never acknowledged: the worker holding it died

        def sweep():  # what each worker's event loop calls every RESTORE_SWEEP_S seconds
            conn.transport.cycle.maybe_restore_messages()

        assert redis.cli("llen", "sweep-check").strip() == "0"
        sweep()  # the first sweep, before the timeout: nothing to hand back
        assert redis.cli("llen", "sweep-check").strip() == "0"
        time.sleep(1.5)
        sweep()
        assert redis.cli("llen", "sweep-check").strip() == "1", "the dead worker's task is back on the queue"
        assert queue.get(timeout=5).payload == taken.payload
        queue.close()


def test_a_broker_restart_loses_nothing(redis, workers, local_scores, tmp_path):
    root, db_url, students = course(tmp_path / "course", 3)
    keys = queue_assignment(
        root,
        ASSIGNMENT,
        None,
        broker=redis.url,
        db_url=db_url,
        source="source",
        release="release",
        limits=LIMITS,
        log=lambda *_: None,
    )
    assert redis.cli("llen", service.QUEUE).strip() == "3"
    redis.stop()
    redis.start()
    assert redis.cli("llen", service.QUEUE).strip() == "3", "the queue survived the restart"
    workers(redis.url, db_url, root)
    wait(root, ASSIGNMENT, keys, db_url, progress=False, timeout_s=600)
    assert scores(db_url, students) == {s: local_scores[i] for i, s in enumerate(students)}
    written_once(db_url, students)


def test_a_submission_that_kills_its_worker_every_time_ends_failed_and_the_queue_moves_on(
    redis, workers, tmp_path, local_scores
):
    root, db_url, (poisoned, honest) = course(tmp_path / "course", 2)
    worker = workers(redis.url, db_url, root)
    keys = queue_assignment(
        root,
        ASSIGNMENT,
        [poisoned],
        broker=redis.url,
        db_url=db_url,
        source="source",
        release="release",
        limits=LIMITS,
        log=lambda *_: None,
    )
    stop = threading.Event()
    kills = []

    def poison():  # what such a submission does: once its code runs in a kernel, its worker's process dies
        import psutil

        killed = set()  # a killed process lingers a moment with its kernel: kill it once, count it once
        while not stop.is_set():
            for pid in set(worker.children()) - killed:
                try:
                    kernels = [  # a cold kernel, or the client of a warm one (the kernel is forked in the sandbox)
                        p
                        for p in psutil.Process(pid).children(recursive=True)
                        if any(name in " ".join(p.cmdline()) for name in ("ipykernel", "fork_client"))
                    ]
                except psutil.Error:
                    continue
                if kernels:
                    subprocess.run(["kill", "-9", str(pid)])
                    killed.add(pid)
                    kills.append((ledger.state(db_url, keys[poisoned]) or {}).get("attempts"))
            time.sleep(0.1)

    killer = threading.Thread(target=poison, daemon=True)
    killer.start()
    try:
        wait(root, ASSIGNMENT, keys, db_url, progress=False, timeout_s=600)
    finally:
        stop.set()
        killer.join()
    row = ledger.state(db_url, keys[poisoned])
    assert row["state"] == "failed" and row["attempts"] == service.MAX_ATTEMPTS + 1, row
    assert "stopped 3 times" in row["reason"] and kills == [1, 2, 3]
    assert scores(db_url, [poisoned])[poisoned][0] == 0
    more = queue_assignment(
        root,
        ASSIGNMENT,
        [honest],
        broker=redis.url,
        db_url=db_url,
        source="source",
        release="release",
        limits=LIMITS,
        log=lambda *_: None,
    )
    wait(root, ASSIGNMENT, more, db_url, progress=False, timeout_s=600)
    assert scores(db_url, [honest])[honest] == local_scores[1], "the worker goes on with the next submission"
