"""The grading perimeter end to end, through the instructor's real command (`python -m autograder grade`):
hostile student ids in the CSV export and the terminal table; a course and a Python kept in private
folders (mode 0700), with and without bubblewrap."""

from __future__ import annotations

import csv
import os
import shutil
import site
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hostile  # noqa: E402
from nbgrader.api import Gradebook  # noqa: E402
from nbgrader.plugins import CsvExportPlugin  # noqa: E402

from autograder.coursedir import REPO  # noqa: E402
from autograder.grading import safe_text  # noqa: E402
from autograder.grading.report import nbgrader_rows  # noqa: E402
from autograder.grading.sandbox import detect  # noqa: E402

HOSTILE_IDS = ["=2+5+cmd|' -C calc'!A0", "+ben", "@SUM(A1)", "-carl", "ada\x1b[2J\x1b[Hforged\rrow"]


def _course(root: Path, students: list[str]) -> None:
    """The tiny assignment, generated, with every answer right for each of `students`."""
    hostile.make_course(root, f"sqlite:///{root / 'gradebook.db'}")
    spec = hostile.specs()["h_correct"]
    files = hostile.submission_files(spec, root / "release" / hostile.ASSIGNMENT / f"{hostile.NOTEBOOK}.ipynb", {})
    for student in students:
        folder = root / "submitted" / student / hostile.ASSIGNMENT
        folder.mkdir(parents=True)
        for name, data in files.items():
            (folder / name).write_bytes(data)


def _grade(python: str, root: Path, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    argv = [
        python,
        "-m",
        "autograder",
        "grade",
        hostile.ASSIGNMENT,
        "--course-dir",
        str(root),
        "--quiet",
        "--workers",
        "2",
        "--timeout",
        "120",
        *extra,
    ]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=600, cwd=str(root), env={**os.environ, **(env or {})}
    )


@pytest.mark.slow
def test_hostile_student_ids_are_inert_in_the_csv_and_the_terminal(tmp_path):
    _course(tmp_path, HOSTILE_IDS)
    out = _grade(sys.executable, tmp_path, "--export", str(tmp_path / "grades.csv"))
    assert out.returncode == 0, out.stderr[-3000:]
    for stream in (out.stdout, out.stderr):
        assert "\x1b" not in stream and "\r" not in stream
    assert "ada\\x1b[2J\\x1b[Hforged\\rrow" in out.stdout
    assert out.stdout.count("7 / 7") == len(HOSTILE_IDS)
    with (tmp_path / "grades.csv").open(newline="") as fh:
        rows = list(csv.reader(fh))
    cells = [cell for row in rows for cell in row]
    assert not [c for c in cells if c.startswith(safe_text.FORMULA_STARTS)]
    ids = {row[rows[0].index("student_id")] for row in rows[1:]}
    assert ids == {"'" + s if s[0] in "=+-@" else s for s in HOSTILE_IDS}
    # the same rows as nbgrader's own exporter, wherever its unquoted CSV can be read back at all
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gb:
        CsvExportPlugin(to=str(tmp_path / "stock.csv")).export(gb)
        ours = {row["student_id"]: row for row in nbgrader_rows(gb)}
    with (tmp_path / "stock.csv").open(newline="") as fh:
        stock = {row["student_id"]: row for row in csv.DictReader(fh) if row["student_id"] in ours}
    assert len(stock) == len(HOSTILE_IDS) - 1 and all(ours[k] == row for k, row in stock.items())


@pytest.fixture
def private_python():
    """A virtual environment inside a private folder (0700, like a home directory) that uses this one's packages."""
    private = Path(tempfile.mkdtemp(prefix="revad-home-", dir="/tmp"))
    os.chmod(private, 0o700)
    venv = private / "venv"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    packages = next(venv.glob("lib/python3*/site-packages"))
    (packages / "revad_parent.pth").write_text("\n".join([*site.getsitepackages(), str(REPO)]) + "\n")
    (venv / "share").symlink_to(Path(sys.prefix) / "share")  # nbconvert's templates
    yield private, str(venv / "bin" / "python")
    shutil.rmtree(private, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="the kernel's own uid exists only when grading as root")
def test_without_bubblewrap_a_private_python_is_refused_before_grading(tmp_path, private_python):
    private, python = private_python
    _course(tmp_path, ["ada"])
    out = _grade(python, tmp_path, env={"REVAD_BWRAP": ""})
    assert out.returncode != 0
    assert "Refusing to grade" in out.stderr and str(private) in out.stderr and "drwx------" in out.stderr
    assert "bubblewrap" in out.stderr
    assert not (tmp_path / "feedback").exists(), "nothing may be graded (and scored 0) before the refusal"


@pytest.mark.slow
def test_with_bubblewrap_a_private_course_and_python_grade_full_marks(tmp_path, private_python):
    if detect().protections_off():
        pytest.skip("bubblewrap is not usable here: " + detect().describe())
    _, python = private_python
    course = tmp_path / "home" / "course"  # pytest's tmp folders are private (0700) already; one more level
    course.mkdir(parents=True)
    os.chmod(tmp_path / "home", 0o700)
    _course(course, ["ada"])
    out = _grade(python, course)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "7 / 7" in out.stdout, out.stdout[-3000:]


def test_a_kernel_killed_while_it_starts_is_started_again(tmp_path, monkeypatch):
    import nbformat

    from autograder.grading import execute as running
    from autograder.grading import sandbox
    from autograder.grading.jobs import Job, SandboxSettings

    info = sandbox.detect()
    marker = tmp_path / "killed-once"
    real_command = sandbox.kernel_command

    def killed_on_first_start(*args, **kwargs):  # the first start dies by SIGKILL before Python runs
        kill_once = 'if mkdir "$0" 2>/dev/null; then kill -KILL $$; fi; exec "$@"'
        return ["/bin/sh", "-c", kill_once, str(marker), *real_command(*args, **kwargs)]

    monkeypatch.setattr(sandbox, "kernel_command", killed_on_first_start)
    scratch = Path(tempfile.mkdtemp(prefix="rg-test-", dir="/tmp"))
    os.chmod(scratch, 0o711)
    (scratch / "work").mkdir()
    job = Job(
        student="ada",
        spec="",
        submission="",
        out=str(tmp_path),
        scratch=str(scratch),
        slot=0,
        kernel_uid=sandbox.slot_uid(info, int.from_bytes(os.urandom(2), "little")),
        limits=sandbox.Limits(timeout_s=120),
        sandbox=SandboxSettings(info.tool, info.as_root, info.drop_uid),
        sandbox_text=info.describe(),
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    try:
        report = running.execute(nb, scratch, job)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert marker.is_dir(), "the first start was not killed"
    assert report["stopped"] is None and report["status"][0] == "ok"
    assert nb.cells[0].outputs[0]["text"] == "42\n"
    assert len(report["kernel_start_failures"]) == 1 and "attempt 1" in report["kernel_start_failures"][0]
