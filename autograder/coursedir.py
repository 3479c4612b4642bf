"""Where things are, and how to run nbgrader on a course directory from Python."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
COURSE = REPO / "course"


def assignments(solutions: Path = SOLUTIONS) -> list[str]:
    """Assignment folders (NN-slug) in the source directory, in course order."""
    return sorted(p.name for p in solutions.iterdir() if p.is_dir() and p.name[:2].isdigit())


def put_interpreter_scripts_on_path() -> None:
    # nbgrader's gradebook shells out to `alembic` (and autograde to `jupyter`): make sure the ones
    # next to this interpreter are found even when the virtual environment is not activated.
    scripts = str(Path(sys.executable).parent)
    if scripts not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")


def nbgrader_api(
    root: Path,
    *,
    source: str = "source",
    release: str = "release",
    db_url: str | None = None,
    extra: dict | None = None,
):
    """An NbGraderAPI on course directory `root`; the gradebook defaults to root/gradebook.db."""
    put_interpreter_scripts_on_path()
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    from autograder import gradebook  # noqa: F401  (a new gradebook without nbgrader's alembic process)

    config = Config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.source_directory = source
    config.CourseDirectory.release_directory = release
    config.CourseDirectory.db_url = db_url or f"sqlite:///{root / 'gradebook.db'}"
    config.CourseDirectory.course_id = "revad"
    config.Exchange.assignment_dir = str(root)
    for section, values in (extra or {}).items():
        for key, value in values.items():
            config[section][key] = value
    coursedir = CourseDirectory(config=config)
    return NbGraderAPI(coursedir=coursedir, config=config)


@contextlib.contextmanager
def quiet_nbgrader():
    """nbgrader logs every step at INFO; keep the console for what the user asked for."""
    logger = logging.getLogger("traitlets")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def require_success(result: dict, what: str) -> None:
    if not result.get("success"):
        raise RuntimeError(f"nbgrader {what} failed:\n{result.get('error') or ''}\n{result.get('log') or ''}")


def course_config(course_dir: Path):
    """The course directory's nbgrader_config.py, as nbgrader reads it when run there (empty without one)."""
    from traitlets.config.loader import load_pyconfig_files

    return load_pyconfig_files(["nbgrader_config.py"], str(course_dir))
