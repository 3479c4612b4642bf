"""Nothing a learner writes is ever lost.

A learner clones the course, opens it with `make lab` (their copy of the course is made in work/), writes in
every notebook (notebook 01 answered whole) and adds a file of their own. Then every make target that touches the
course's files runs — release, check (all notebooks and one), lab again, the instructor's collect, grade (fresh
gradebook) and feedback, clean — and a course update is pulled (`git pull` of a commit that changes course/ and
adds an assignment). The learner's files stay byte for byte what they wrote; the new assignment is added beside them.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from browser import REPO, free_port, running_server

from autograder.selfcheck import answer_cells
from autograder.submissions import fill_answers, solution_sources
from coursetools.workspace import ORIGINS

pytestmark = [pytest.mark.lifecycle, pytest.mark.slow]

VENV = Path(sys.executable).parent.parent
GIT = ["git", "-c", "user.name=course", "-c", "user.email=course@example.invalid", "-c", "init.defaultBranch=main"]


def run(cwd: Path, *command: str, timeout: int = 900) -> str:
    out = subprocess.run(list(command), cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{' '.join(command)}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout + out.stderr


def make(clone: Path, *targets: str, timeout: int = 900) -> str:
    """A make target in the learner's clone, with this test run's virtual environment (never rebuilt: -o)."""
    return run(clone, "make", "-s", f"VENV={VENV}", "-o", f"{VENV}/.installed", *targets, timeout=timeout)


def snapshot(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".ipynb_checkpoints" not in p.parts and p.name != ORIGINS
    }  # the course's own record of where each copy came from


def start_lab(clone: Path, tmp: Path) -> None:
    """`make lab` until JupyterLab answers, then stopped: what a learner's first session does to the files."""
    port = free_port()
    exchange = tmp / "exchange"
    args = f"--no-browser --port={port} --ServerApp.port_retries=0 --IdentityProvider.token=t --exchange {exchange}"
    command = ["make", "-s", f"VENV={VENV}", "-o", f"{VENV}/.installed", "lab", f"LAB_ARGS={args}"]
    env = {"BROWSER": "false", "JUPYTER_DATA_DIR": str(tmp / "data")}
    with running_server(command, tmp / "lab.log", f"http://127.0.0.1:{port}/api/status?token=t", env, clone, 120):
        pass


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("learner")
    upstream, clone = tmp / "upstream", tmp / "clone"
    tracked = run(REPO, "git", "ls-files", "-co", "--exclude-standard", "-z").split("\0")
    for name in filter(None, tracked):
        if (REPO / name).is_file():
            (upstream / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, upstream / name)
    run(upstream, *GIT, "init", "-q")
    run(upstream, *GIT, "add", "-A")
    run(upstream, *GIT, "commit", "-qm", "the course")
    run(tmp, *GIT, "clone", "-q", str(upstream), str(clone))
    return tmp, upstream, clone


def answer_everything(work: Path) -> None:
    """A learner's writing in every notebook: notebook 01 answered (right answers, one wrong, one left blank), a
    line of their own in one answer cell of each other notebook (its bytes now theirs; grading it stays quick), and
    a file of their own."""
    for notebook in sorted(work.glob("*/*.ipynb")):
        solved = solution_sources(REPO / "solutions" / notebook.parent.name / notebook.name)
        if notebook.parent.name.startswith("01-"):
            answers = dict(solved)
            first, *rest = sorted(answers)
            answers[first] = answers[first] + "\n# my own note: I am not sure about this one\n"
            answers.pop(rest[-1])  # left blank
            answers["central_difference"] = (
                "def central_difference(f, x, h):\n    return (f(x + h) - f(x)) / h\n"  # a slip
            )
        else:
            stubs = answer_cells(notebook)
            first = sorted(set(stubs) & set(solved))[0]
            answers = {first: stubs[first] + "\n# my own note: I will come back to this one\n"}
        nbformat.write(fill_answers(notebook, answers), notebook)
    (work / "01-reverse-accumulation" / "my_notes.md").write_text("What I learned today.\n")


def test_no_command_ever_overwrites_a_learners_file(clone):
    tmp, upstream, learner = clone
    start_lab(learner, tmp)
    work = learner / "work"
    assert sorted(p.name for p in work.iterdir() if p.is_dir()) == sorted(
        p.name for p in (learner / "course").iterdir() if p.is_dir()
    ), "make lab copies the whole course into work/"
    answer_everything(work)
    before = snapshot(work)
    assert run(learner, "git", "status", "--porcelain") == "", "the learner's work is not in any tracked file"

    make(learner, "release")
    one = make(learner, "check", "NB=01")
    assert one.strip().splitlines()[-1].startswith("total: "), one[-2000:]
    everything = make(learner, "check")
    assert everything.strip().splitlines()[-1].startswith("total: ")
    assert "reference solution" in everything, "a tried exercise that lost points says where its solution is"

    # the instructor's targets, run in the same clone: a hand-in, a fresh gradebook, collect, grade, feedback
    handed_in = learner / "submitted" / "ada" / "01-reverse-accumulation"
    shutil.copytree(work / "01-reverse-accumulation", handed_in)
    assert not (learner / ".grading" / "gradebook.db").exists()
    # a learner from before work/ existed answered in course/: grading with a fresh gradebook once regenerated
    # course/ from solutions/ over those answers
    old_style = learner / "course" / "01-reverse-accumulation" / "reverse_accumulation.ipynb"
    nbformat.write(
        fill_answers(old_style, solution_sources(REPO / "solutions" / old_style.parent.name / old_style.name)),
        old_style,
    )
    old_bytes = old_style.read_bytes()
    make(learner, "hand-out", "ASSIGNMENT=01-reverse-accumulation")
    make(learner, "collect", "ASSIGNMENT=01-reverse-accumulation")
    make(learner, "grade", "ASSIGNMENT=01-reverse-accumulation")
    assert old_style.read_bytes() == old_bytes, "grading wrote into course/"
    run(learner, "git", "checkout", "--", "course")
    make(learner, "feedback", "ASSIGNMENT=01-reverse-accumulation")
    make(learner, "clean")
    assert run(learner, "git", "status", "--porcelain", "--", "course", "solutions", "autograder") == "", (
        "grading and release write no tracked file"
    )

    # a course update: course/01 changes, an assignment is added; the learner pulls it and opens the lab
    changed = upstream / "course" / "01-reverse-accumulation" / "reverse_accumulation.ipynb"
    nb = nbformat.read(changed, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("A correction from your instructor."))
    nbformat.write(nb, changed)
    shutil.copytree(upstream / "course" / "01-reverse-accumulation", upstream / "course" / "99-bonus")
    run(upstream, *GIT, "add", "-A")
    run(upstream, *GIT, "commit", "-qm", "course update")
    run(learner, *GIT, "pull", "-q")
    start_lab(learner, tmp)

    after = snapshot(work)
    assert {k: v for k, v in after.items() if k in before} == before, "every file the learner had is unchanged"
    added = sorted(k for k in after if k not in before)
    assert added == ["99-bonus/reverse_accumulation.ipynb"], added


# Targets the test above runs, and the others with why they cannot touch a learner's file: a new target must be
# placed in one of the two (and, if it writes anything, run above).
RUN_ABOVE = {"lab", "release", "check", "hand-out", "collect", "grade", "feedback", "clean"}
NOT_RUN = {
    "venv": "installs into .venv/",
    "system-deps": "apt packages",
    "sandbox": "alias of system-deps",
    "test": "the test suite itself",
    "test-fast": "the test suite's fast tier",
    "lint": "reads the code",
    "demo": "writes build/demo/ only",
    "formgrader": "runs the demo into build/demo/ when it is missing, then a server",
    "hub": "writes build/hub/ only (tests/test_hub.py runs its configuration in a scratch folder)",
    "bench-engine": "prints figures",
    "bench-checks": "prints figures",
    "bench-grading": "grades in a temporary folder",
    "bench-on-submit": "grades in a temporary folder (with its own exchange, redis-server and Celery workers)",
    "pins-elsewhere": "resolves requirements.txt for other platforms with uv (reads the registry, writes nothing)",
}


def test_every_make_target_is_accounted_for():
    targets = set(re.findall(r"^([a-z][a-z0-9-]*):(?!=)", (REPO / "Makefile").read_text(), re.M))
    assert {"lab", "check", "grade"} <= targets
    assert targets <= RUN_ABOVE | set(NOT_RUN), (
        f"place these in RUN_ABOVE or NOT_RUN: {targets - RUN_ABOVE - set(NOT_RUN)}"
    )
    for target in NOT_RUN:
        recipe = (REPO / "Makefile").read_text().split(f"\n{target}:", 1)
        if len(recipe) == 2:
            body = recipe[1].split("\n\n", 1)[0]
            assert not re.search(r"\bwork/", body), f"{target} mentions work/: run it in the test above"
