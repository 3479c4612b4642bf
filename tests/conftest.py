"""Shared fixtures (each solution and each released notebook executed once per session; the demo graded once), and
the scheduling of the suite over the cores (pytest-xdist): tests that share work stay together, the long ones first."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from _pytest.nodeid import coerce_node_id
from nbgrader.validator import Validator
from traitlets.config import Config

from autograder.coursedir import COURSE, SOLUTIONS, assignments

ASSIGNMENTS = assignments()
os.environ.setdefault("MPLBACKEND", "Agg")


def pytest_configure(config: pytest.Config) -> None:
    """A marker per notebook of solutions/ (nb01, nb02, ...): a new notebook's tests get theirs without a line here."""
    for assignment in ASSIGNMENTS:
        config.addinivalue_line("markers", f"nb{assignment[:2]}: checks of notebook {assignment[:2]}'s exercises")
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # one xdist worker per core: torch's own threads in each would only compete for the same cores
        import torch

        torch.set_num_threads(1)


def notebooks_of(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


class RecordingValidator(Validator):
    """nbgrader's Validator, keeping the executed notebook so other checks need not run it again."""

    executed = None

    def _preprocess(self, nb):
        self.executed = super()._preprocess(nb)
        return self.executed


def validate(notebook: Path, tmp_root: Path) -> tuple[dict, nbformat.NotebookNode, float]:
    """Validate a scratch copy of the notebook's folder; return (results, executed notebook, seconds)."""
    scratch = tmp_root / notebook.parent.name
    if not scratch.exists():
        shutil.copytree(notebook.parent, scratch)
    # nbgrader's per-cell execution timeout defaults to 30 s; measurement cells may take longer.
    validator = RecordingValidator(config=Config({"Execute": {"timeout": 600}}))
    start = time.perf_counter()
    results = validator.validate(str(scratch / notebook.name))
    return results, validator.executed, time.perf_counter() - start


@pytest.fixture(scope="session")
def validated_solutions(tmp_path_factory):
    cache: dict[Path, tuple] = {}
    root = tmp_path_factory.mktemp("solutions")

    def get(notebook: Path):
        if notebook not in cache:
            cache[notebook] = validate(notebook, root)
        return cache[notebook]

    return get


@pytest.fixture(scope="session")
def validated_releases(tmp_path_factory):
    cache: dict[Path, tuple] = {}
    root = tmp_path_factory.mktemp("release")

    def get(notebook: Path):
        if notebook not in cache:
            cache[notebook] = validate(notebook, root)
        return cache[notebook]

    return get


class DemoRun:
    """`python -m autograder.demo` (release, grade ada, ben and cleo in every notebook, feedback, CSV), started in the
    background when a test first asks for it; `graded()` waits for it. One per session: test_demo asks it questions,
    test_browser shows it in formgrader, and the browser's learner test runs while it grades."""

    def __init__(self, root: Path):
        self.root, self.log = root, (root.parent / "demo.log").open("w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autograder.demo", "--dir", str(root)],
            cwd=Path(__file__).resolve().parent.parent,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def graded(self) -> tuple[Path, str]:
        """(the graded course, what the demo printed), once it finished; fails with its output if it did not."""
        returncode = self.proc.wait(timeout=3000)
        self.log.seek(0)
        out = self.log.read()
        assert returncode == 0, out[-6000:]
        return self.root, out

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    run = DemoRun(tmp_path_factory.mktemp("demo") / "course")
    yield run
    run.stop()


@pytest.fixture(scope="session")
def grading_pool(tmp_path_factory):
    """Two grading processes for the gradings this test process runs in process (grade_assignment(pool=...)):
    started when first given a job and kept warm between tests, with their warm-kernel factory, as a Celery worker
    keeps its own. A test about the processes themselves, or one that sets the grader's environment for a run (the
    corpus's secret), starts its own."""
    from autograder.grading.pool import Worker

    state_dir = tmp_path_factory.mktemp("grading-pool")
    pool = [Worker(slot, state_dir) for slot in range(2)]
    yield pool
    for worker in pool:
        worker.stop()


SOLUTION_NOTEBOOKS = [nb for a in ASSIGNMENTS for nb in notebooks_of(SOLUTIONS / a)]
RELEASED_NOTEBOOKS = [nb for a in ASSIGNMENTS for nb in notebooks_of(COURSE / a)]


# ------------------------------------------------------------------------------------------- scheduling
# `make test` runs the suite on every core (pytest-xdist, --dist loadgroup). Tests that share an expensive fixture
# must run on one worker, one after another, or each worker would build it again: a module-scoped fixture (a
# graded class, a started server) keeps its module's tests together, and a notebook executed by the session's
# validated_* fixtures keeps the tests that read it together. Everything else is spread test by test.
SESSION_CACHES = ("validated_solutions", "validated_releases")  # one notebook executed per parameter
SESSION_RUNS = ("demo_run",)  # one run for the whole session


def shared_work(item: pytest.Item) -> str | None:
    """The xdist group of a test that shares an expensive fixture, or None."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    for name in info.names_closure:
        if name in SESSION_RUNS:
            return name
        if name in SESSION_CACHES:
            notebook = item.callspec.params.get("notebook") if hasattr(item, "callspec") else None
            return f"{name}:{_notebook_id(notebook)}"
    for name in info.names_closure:
        defs = info.name2fixturedefs.get(name, ())
        if any(d.scope == "module" for d in defs):
            return item.module.__name__
    return None


def _notebook_id(notebook) -> str:
    return f"{notebook.parent.name}/{notebook.name}" if isinstance(notebook, Path) else str(notebook)


# The modules that take longest (seconds of test time, `make test` on 3 workers and 2 cores, 2026-11-27): started
# first, so that no worker is left with a long one at the end. A module missing here starts after them if it is slow.
LONGEST_FIRST = {
    "test_celery": 331,  # its tests spread over the workers; the longest alone takes about 75 s (the killed worker)
    "test_grading_corpus": 121,
    "test_lifecycle_work": 88,
    "test_hub": 83,
    "test_solutions": 79,
    "test_demo": 63,  # with test_browser: both use the session's demo run
    "test_browser": 61,
    "test_warm_kernels": 60,
    "test_contributing": 52,
    "test_release": 49,
    "test_grading_resume": 46,
    "test_celery_on_submit": 41,
    "test_late_penalties": 80,  # stock nbgrader grades two classes; measured here (slow cores): 196 s
    "test_nb05_checks": 36,  # the longest of `make test-fast`, so that its run ends with short tests too
    "test_postgres": 32,
    "test_grading_perimeter": 32,
    "test_lifecycle_exchange": 28,
    "test_grading_hostile_123": 28,
    "test_nb06_checks": 24,
    "test_nb07_checks": 60,  # the kernel checks replay launches in the interpreter
    "test_grading_hostile_45": 23,
    "test_nb02_checks": 17,
}


def _start_order(items: list[pytest.Item]) -> dict[str, tuple[int, int]]:
    """Each module's place: the longest first, then the other modules with a slow test, then the rest. A module's
    tests stay together (a module fixture is built once)."""
    slow = {item.module.__name__ for item in items if item.get_closest_marker("slow")}
    return {
        item.module.__name__: (0, -LONGEST_FIRST[item.module.__name__])
        if item.module.__name__ in LONGEST_FIRST
        else (1 if item.module.__name__ in slow else 2, 0)
        for item in items
    }


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group the tests that share work, and start the long ones first: the workers then finish together."""
    for item in items:
        group = shared_work(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
    place = _start_order(items)
    order = {id(item): i for i, item in enumerate(items)}
    items.sort(key=lambda item: (place[item.module.__name__], order[id(item)]))


@pytest.hookimpl(tryfirst=True)  # before xdist's worker sends the collection to the scheduler
def pytest_collection_finish(session: pytest.Session) -> None:
    """On an xdist worker, name each grouped test `<node id>@<group>`, as xdist's loadgroup does: xdist 3.8 writes the
    name into `item._nodeid`, which pytest 9.2 no longer reads, so without this every group would be split."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    for item in session.items:
        groups = sorted({str(mark.args[0]) for mark in item.iter_markers("xdist_group")})
        if groups and "@" not in item.nodeid:
            item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(groups)}")
