"""Shared fixtures: each solution and each released notebook is executed once per test session."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import nbformat
import pytest
from nbgrader.validator import Validator
from traitlets.config import Config

from autograder.coursedir import COURSE, SOLUTIONS, assignments

ASSIGNMENTS = assignments()
os.environ.setdefault("MPLBACKEND", "Agg")


def pytest_configure(config: pytest.Config) -> None:
    """A marker per notebook of solutions/ (nb01, nb02, ...): a new notebook's tests get theirs without a line here."""
    for assignment in ASSIGNMENTS:
        config.addinivalue_line("markers", f"nb{assignment[:2]}: checks of notebook {assignment[:2]}'s exercises")


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


SOLUTION_NOTEBOOKS = [nb for a in ASSIGNMENTS for nb in notebooks_of(SOLUTIONS / a)]
RELEASED_NOTEBOOKS = [nb for a in ASSIGNMENTS for nb in notebooks_of(COURSE / a)]
