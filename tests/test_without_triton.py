"""Learners off Linux have no Triton (it ships Linux wheels only; requirements.txt pins it for Linux alone):
notebooks 01-04 must run and be graded without it. Tested in a virtual environment of its own that holds every
package of this one except Triton (hard links, made offline): `make demo`'s grading of notebooks 01-04 there gives
each example learner the score it gets here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_demo import EXPECTED_PARTIAL, points_lost  # noqa: E402

from autograder.coursedir import REPO  # noqa: E402

WITHOUT_TRITON = ["01-reverse-accumulation", "02-scalar-engine", "03-custom-functions", "04-ctx-toolbox"]


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system: a copy
        shutil.copy2(src, dst)


def environment_without_triton(folder: Path) -> Path:
    """A virtual environment with this one's packages but Triton's; its python."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    python = folder / "bin" / "python"
    theirs = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in ours.iterdir():
        if entry.name == "triton" or entry.name.startswith("triton-"):
            continue
        _link_tree(entry, theirs / entry.name)
    for data in ("share", "etc"):  # Jupyter's data files: nbconvert's templates, kernel specs, configuration
        if (Path(sys.prefix) / data).is_dir():
            _link_tree(Path(sys.prefix) / data, folder / data)
    return python


def _link_tree(src: Path, dst: Path) -> None:
    if src.is_dir() and not src.is_symlink():
        shutil.copytree(src, dst, symlinks=True, copy_function=_link_or_copy, dirs_exist_ok=True)
    else:
        _link_or_copy(str(src), str(dst))


CHECKS_LOADED = """
import sys
from autograder.registry import UNAVAILABLE, import_notebook_modules
import_notebook_modules()
loaded = sorted(m.split(".")[1] for m in sys.modules if m.startswith("autograder.nb") and m.count(".") == 1)
print(*sorted(UNAVAILABLE), "|", *loaded)
"""


@pytest.mark.slow
def test_notebooks_01_to_04_run_and_are_graded_without_triton(tmp_path):
    python = environment_without_triton(tmp_path / "venv")
    probe = subprocess.run([python, "-c", "import triton"], capture_output=True, text=True)
    assert probe.returncode != 0 and "No module named 'triton'" in probe.stderr
    listed = subprocess.run(
        [python, "-c", CHECKS_LOADED], cwd=REPO, capture_output=True, text=True, timeout=300, check=True
    ).stdout.split()
    unavailable = ["autograder.nb05", "autograder.nb06", "autograder.nb07"]
    assert listed == [*unavailable, "|", "nb01", "nb02", "nb03", "nb04"], listed
    course = tmp_path / "course"
    run = subprocess.run(
        [python, "-m", "autograder.demo", "--dir", str(course), "--workers", "2", *WITHOUT_TRITON],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    # graded in warm kernels: the factory imports every notebook's checks it can (05-07 need Triton), and lives
    # (a cold kernel, ipykernel started on its own, prints its banner into the worker's log; a forked one does not)
    logs = [log.read_text() for log in (course / ".grading").glob("worker-*.log")]
    assert len(logs) == 2
    assert not any("kernels start cold" in log or "ipython kernel" in log for log in logs), logs
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for assignment in WITHOUT_TRITON:
            full, partly, blank = (gb.find_submission(assignment, s) for s in ("ada", "ben", "cleo"))
            assert full.max_score > 0 and full.score == full.max_score, (assignment, full.score, run.stdout[-2000:])
            assert blank.score == 0, assignment
            assert partly.score == EXPECTED_PARTIAL[assignment], (assignment, partly.score, points_lost(partly))
