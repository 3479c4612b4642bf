"""The gradebook on PostgreSQL: the grading command works with a PostgreSQL URL as with SQLite.

Starts a throw-away PostgreSQL server from Debian's packages (`make system-deps` installs them);
skips, saying why, where none is installed. As root the server runs as the `postgres` user.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hostile  # noqa: E402

from autograder.grading import (  # noqa: E402
    grade_assignment,  # noqa: E402
    record,
    sandbox,
)

pytestmark = pytest.mark.slow  # starts a PostgreSQL server and grades into it

STUDENTS = ["h_correct", "h_partly_wrong", "h_blank", "x_patch_gradcheck_allclose_abs"]


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@pytest.fixture(scope="module")
def postgres_url():
    pytest.importorskip("psycopg2", reason="psycopg2-binary is not installed (requirements.txt pins it)")
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip(
            "PostgreSQL is not installed here (initdb not found): run `make system-deps` "
            "(apt-get install postgresql) to run this test"
        )
    as_root = os.geteuid() == 0
    run_as = ["runuser", "-u", "postgres", "--"] if as_root else []
    if as_root:
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no `postgres` user to run the server as")
    data = Path(tempfile.mkdtemp(prefix="revad-pg-"))
    os.chmod(data, 0o755)
    if as_root:
        shutil.chown(data, "postgres", "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
    subprocess.run(
        run_as + [str(bindir / "initdb"), "-D", str(data / "db"), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
        check=True,
        capture_output=True,
        env=env,
    )
    subprocess.run(
        run_as
        + [
            str(bindir / "pg_ctl"),
            "-D",
            str(data / "db"),
            "-l",
            str(data / "log"),
            "-w",
            "start",
            "-o",
            f"-p {port} -k {data} -h 127.0.0.1",
        ],
        check=True,
        capture_output=True,
        env=env,
    )
    try:
        subprocess.run(
            run_as
            + [
                str(bindir / "createdb") if (bindir / "createdb").exists() else "createdb",
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-U",
                "postgres",
                "gradebook",
            ],
            check=True,
            capture_output=True,
            env=env,
        )
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/gradebook"
    finally:
        subprocess.run(
            run_as + [str(bindir / "pg_ctl"), "-D", str(data / "db"), "-m", "immediate", "stop"],
            capture_output=True,
            env=env,
        )
        shutil.rmtree(data, ignore_errors=True)


def test_grading_into_a_postgresql_gradebook(postgres_url, tmp_path, grading_pool):
    hostile.make_course(tmp_path, postgres_url)
    hostile.write_submissions(tmp_path, {"COURSE": tmp_path, "REPO": "", "PORT": 1}, only=STUDENTS)
    logs: list[str] = []

    def grade():  # the same run twice: the second finds every submission graded
        return grade_assignment(
            tmp_path,
            hostile.ASSIGNMENT,
            db_url=postgres_url,
            workers=2,
            limits=sandbox.Limits(cell_timeout_s=20, timeout_s=60),
            progress=False,
            log=logs.append,
            pool=grading_pool,
        )

    rows = {r.student: r for r in grade()}
    assert {s: rows[s].score for s in STUDENTS} == {
        "h_correct": 7,
        "h_partly_wrong": 2,
        "h_blank": 0,
        "x_patch_gradcheck_allclose_abs": 0,
    }
    assert any(f.startswith("patched") for f in rows["x_patch_gradcheck_allclose_abs"].flags)
    assert not rows["h_correct"].flags
    before = record.dump(postgres_url, hostile.ASSIGNMENT)
    logs.clear()
    grade()
    assert any("4 submission(s) already graded" in line for line in logs)
    assert record.dump(postgres_url, hostile.ASSIGNMENT) == before


GRADE_ONE = """
import json, sys
from pathlib import Path
from autograder.grading.sandbox import Limits
from autograder.scale import service
settings = service.WorkerSettings(Path(sys.argv[1]), sys.argv[2], "source", "release")
print(service.grade(json.loads(Path(sys.argv[3]).read_text()), settings, Limits(timeout_s=120)))
"""


@pytest.mark.celery
def test_celery_workers_write_each_submission_once_into_postgresql_newest_winning(postgres_url, tmp_path):
    """Four worker processes at once on one learner: her older and newer submission, each delivered twice.
    PostgreSQL's advisory lock lets one write at a time: the newer is written once, the older never."""
    from autograder.scale import ledger
    from autograder.scale.payload import Payload, from_submission
    from benchmarks.grading import ASSIGNMENT, build

    root = tmp_path / "course"
    ada, _, cleo = build(root, 3)
    good, blank = (from_submission(root / "submitted", s, ASSIGNMENT) for s in (ada, cleo))
    older = Payload(ASSIGNMENT, ada, "2026-11-01T11:00:00+00:00", blank.files)
    newer = Payload(ASSIGNMENT, ada, "2026-11-01T12:00:00+00:00", good.files)
    files = []
    for name, payload in (("older", older), ("newer", newer)):
        (tmp_path / f"{name}.json").write_text(__import__("json").dumps(payload.to_dict()))
        files += [tmp_path / f"{name}.json"] * 2
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", GRADE_ONE, str(root), postgres_url, str(f)],
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for f in files
    ]
    ran = [p.communicate(timeout=900) for p in procs]
    outcomes = [out.strip().splitlines()[-1:] for out, _ in ran]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in ran]
    rows = ledger.states(postgres_url, ASSIGNMENT)
    assert rows[(ada, newer.sha256)]["written"] == 1 and rows[(ada, newer.sha256)]["state"] == "graded", outcomes
    assert rows[(ada, older.sha256)]["state"] == "superseded", outcomes
    from autograder.grading.report import read_scores

    (score,) = read_scores(postgres_url, ASSIGNMENT, [ada])
    assert score.score == score.max_score == 15, "the newer (correct) submission is the one in the gradebook"
