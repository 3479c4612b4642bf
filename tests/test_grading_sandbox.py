"""The sandbox itself, and grading on a machine without it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hostile  # noqa: E402

from autograder.grading import (  # noqa: E402
    grade_assignment,  # noqa: E402
    reach,
    sandbox,
    spec,
)
from autograder.grading.flags import static_patches  # noqa: E402


def test_without_bubblewrap_it_says_which_protections_are_off(monkeypatch):
    monkeypatch.setenv("REVAD_BWRAP", "")
    info = sandbox.detect()
    assert not info.active
    text = info.describe()
    assert "OFF" in text and "network" in text and "solutions/" in text and "bubblewrap" in text


def test_require_sandbox_refuses_without_it(monkeypatch, tmp_path):
    monkeypatch.setenv("REVAD_BWRAP", "")
    with pytest.raises(SystemExit, match="Refusing to grade"):
        grade_assignment(tmp_path, hostile.ASSIGNMENT, require_sandbox=True, log=lambda *_: None)


@pytest.mark.slow
def test_grading_still_works_without_bubblewrap(monkeypatch, tmp_path):
    monkeypatch.setenv("REVAD_BWRAP", "")
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    hostile.make_course(tmp_path, db_url)
    hostile.write_submissions(
        tmp_path, {"COURSE": tmp_path, "REPO": "", "PORT": 1}, only=["h_correct", "x_patch_gradcheck_allclose_abs"]
    )
    logs = []
    if sandbox.detect().drop_uid and reach.blocked(sandbox.kernel_paths(), sandbox.BASE_UID, sandbox.BASE_UID):
        # Python lives where the kernel's uid cannot pass (a checkout under /root or `mktemp -d`): every
        # kernel would fail, so grading refuses up front (tests/test_grading_perimeter.py -k private)
        with pytest.raises(SystemExit, match="cannot reach the Python it needs"):
            grade_assignment(tmp_path, hostile.ASSIGNMENT, db_url=db_url, workers=2, progress=False, log=logs.append)
        return
    rows = {
        r.student: r
        for r in grade_assignment(
            tmp_path, hostile.ASSIGNMENT, db_url=db_url, workers=2, progress=False, log=logs.append
        )
    }
    assert any("WARNING" in line and "OFF" in line for line in logs)
    assert rows["h_correct"].score == 7 and rows["x_patch_gradcheck_allclose_abs"].score == 0


def test_static_scan_flags_patches_but_not_ordinary_code():
    assert static_patches("import torch\ntorch.allclose = lambda *a: True")
    assert static_patches("import builtins\nbuiltins.abs = abs")
    assert static_patches("get_ipython().set_custom_exc((Exception,), h)")
    honest = (
        "import torch\ntorch.manual_seed(0)\ntorch.backends.cudnn.deterministic = True\nx = torch.ones(3)\n"
        "x.grad = None\nimport numpy as np\nnp.random.seed(0)\nclass F(torch.autograd.Function):\n    pass"
    )
    assert static_patches(honest) == []


def test_check_calls_are_read_from_the_instructors_cell():
    source = (
        "from autograder.nb01 import check_primal_trace as cpt\n\ncpt(primal_trace, at=[(2.0, 3.0)])\n"
        "### BEGIN HIDDEN TESTS\ncpt(primal_trace, at=[(1.0, 2.0)])\n### END HIDDEN TESTS\nprint('ok')"
    )
    calls = spec.parse_check_calls(source, {"check_primal_trace"})
    assert [(c.check, c.expr, c.params, c.hidden) for c in calls] == [
        ("check_primal_trace", "primal_trace", {"at": [(2.0, 3.0)]}, False),
        ("check_primal_trace", "primal_trace", {"at": [(1.0, 2.0)]}, True),
    ]
    assert spec.hidden_stripped(source).count("cpt(") == 1
