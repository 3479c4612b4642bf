"""A new gradebook made through autograder.gradebook: stamped as nbgrader stamps it, with no alembic process."""

from __future__ import annotations

import sqlite3
import subprocess

from autograder.coursedir import put_interpreter_scripts_on_path
from autograder.gradebook import Gradebook, _nbgraders_own, alembic_head


def test_the_revision_read_in_process_is_the_one_alembic_heads_prints():
    put_interpreter_scripts_on_path()  # nbgrader's own way runs the `alembic` next to this interpreter
    assert alembic_head() == _nbgraders_own()
    assert len(alembic_head()) == 12, alembic_head()


def test_a_new_gradebook_is_stamped_without_starting_a_process(tmp_path, monkeypatch):
    def no_process(*args, **kwargs):
        raise AssertionError(f"a process was started: {args}")

    monkeypatch.setattr(subprocess, "check_output", no_process)
    monkeypatch.setattr(subprocess, "Popen", no_process)
    db = tmp_path / "gradebook.db"
    with Gradebook(f"sqlite:///{db}") as gb:
        gb.add_student("ada")
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT version_num FROM alembic_version").fetchall() == [(alembic_head(),)]


def test_nbgraders_own_way_would_have_started_one(tmp_path, monkeypatch):
    """The test above can fail: nbgrader's function, restored, starts `alembic heads`."""
    import nbgrader.api

    started = []
    monkeypatch.setattr(nbgrader.api, "get_alembic_version", _nbgraders_own)
    monkeypatch.setattr(nbgrader.api.sp, "check_output", lambda argv, **kw: started.append(argv) or b"x (head)\n")
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}"):
        pass
    assert started and started[0][0] == "alembic", started
