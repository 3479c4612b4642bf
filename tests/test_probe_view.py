"""The grading sandbox's copy of autograder: no judges module or folder anywhere, no grading/.

The sandbox tests (tests/test_grading_trust.py, the hostile corpus) try to reach a judge from inside; these test the
copy itself, and that a judge written where the sandbox would see it is refused before any kernel starts."""

from __future__ import annotations

import importlib
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

import autograder
from autograder.grading.probe_view import build, outside, probe_view, refuse_judges
from autograder.registry import CHECKS, JUDGES

pytestmark = pytest.mark.grading
PACKAGE = Path(autograder.__file__).resolve().parent
CHECKS_MODULES = sorted(p.name for p in PACKAGE.glob("nb[0-9][0-9]") if (p / "__init__.py").exists())


@pytest.mark.parametrize("name", CHECKS_MODULES)
def test_each_notebooks_folder_keeps_its_probes_in_view_and_every_judge_out_of_it(name):
    folder = PACKAGE / name
    assert not (PACKAGE / f"{name}.py").exists(), f"{name}: one folder, no module beside it"
    module = importlib.import_module(f"autograder.{name}")
    declared = [c for c in CHECKS.values() if c.judges_module.startswith(module.__name__ + ".")]
    assert declared, f"{name} declares no check"
    for check in declared:
        assert check.probe.__module__.startswith(module.__name__) and not outside(
            Path(*check.probe.__module__.split(".")[1:])
        ), f"{check.name}: its probe is where the sandbox lacks it"
        assert check.decision and check.name in JUDGES
        judge = JUDGES[check.name].judge
        assert outside(Path(*judge.__module__.split(".")[1:])), f"{judge.__name__} is in the sandbox's copy"
    for source in folder.rglob("*.py"):
        relative = source.relative_to(PACKAGE)
        if not outside(relative):
            refuse_judges(source.read_text(), str(relative))  # what the sandbox sees declares and imports no judge
        assert len(source.read_text().splitlines()) <= 660, f"{relative}: a module reads in one sitting"


def test_what_stays_out_is_chosen_by_name():
    for relative in ("grading/worker.py", "judges/answers.py", "nb05/judges.py", "nb04/judges/ctx.py"):
        assert outside(Path(relative)), relative
    for relative in ("nb05/probes.py", "nb05/cases.py", "nb05/__init__.py", "probes/function.py", "registry.py"):
        assert not outside(Path(relative)), relative


@pytest.mark.parametrize(
    "seen",
    [
        '@decides("check_x", draw=draw_x)\ndef judge_x(data):\n    pass\n',
        '@registry.decides("check_x", draw=draw_x)\ndef judge_x(data):\n    pass\n',
        "class Holder:\n    @decides('check_x', draw=d)\n    def judge(self, data):\n        pass\n",
        "from .judges import answers\n",
        "from .judges.verdict import Part\n",
        "from autograder.judges.function import add_reference\n",
        "import autograder.judges.answers as answers\n",
        "from . import judges\n",
        "from autograder import judges\n",
        "from autograder.nb05 import judges\n",
        "from autograder.nb05.judges.kernels import judge_kernel\n",
        "import autograder.nb05.judges\n",
        "def helper():\n    from ..judges import answers\n    return answers\n",
    ],
)
def test_a_judge_or_a_judges_import_where_the_sandbox_sees_it_is_refused(seen):
    with pytest.raises(ValueError, match="a module the grading sandbox sees"):
        refuse_judges(f'"""A probes module."""\n\n{seen}', "nb77/probes.py")


def test_the_words_alone_are_not_refused():
    words = '"""Mentions @decides and autograder.judges in words only."""\n# from .judges import answers\nx = 1\n'
    refuse_judges(words)


def scratch_package(root: Path) -> Path:
    package = root / "autograder"
    for sub in ("judges", "grading", "probes", "nb77/__pycache__", "nb78/judges"):
        (package / sub).mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "judges" / "__init__.py").write_text("SECRET = 'judges package'\n")
    (package / "grading" / "__init__.py").write_text("SECRET = 'grading command'\n")
    (package / "probes" / "__init__.py").write_text("VISIBLE = 'probes'\n")
    (package / "nb77" / "__init__.py").write_text("from .probes import probe_x\n")
    (package / "nb77" / "probes.py").write_text("def probe_x(obj):\n    return obj\n")
    (package / "nb77" / "judges.py").write_text("def reference_answer(x):\n    return 2 * x\n")
    (package / "nb77" / "__pycache__" / "judges.cpython-311.pyc").write_bytes(b"stale bytecode reference_answer")
    (package / "nb78" / "__init__.py").write_text("")
    (package / "nb78" / "judges" / "__init__.py").write_text("SECRET = 'a judges folder'\n")
    return package


def test_the_copy_leaves_out_every_judge_compiles_what_is_left_and_is_readable_by_every_user(tmp_path):
    view = build(scratch_package(tmp_path / "src"), tmp_path / "view" / "autograder")
    assert sorted(p.name for p in view.iterdir()) == ["__init__.py", "__pycache__", "nb77", "nb78", "probes"]
    assert sorted(p.name for p in (view / "nb77").iterdir()) == ["__init__.py", "__pycache__", "probes.py"]
    assert sorted(p.name for p in (view / "nb78").iterdir()) == ["__init__.py", "__pycache__"]
    compiled = sorted(p.name.split(".")[0] for p in (view / "nb77" / "__pycache__").iterdir())
    assert compiled == ["__init__", "probes"], "no bytecode of a judge, stale or fresh"
    code = marshal.loads(next((view / "nb77" / "__pycache__").glob("probes.*.pyc")).read_bytes()[16:])
    assert "probe_x" in code.co_names or any(getattr(c, "co_name", "") == "probe_x" for c in code.co_consts)
    for path in [view, *view.rglob("*")]:
        assert path.stat().st_mode & 0o777 == (0o755 if path.is_dir() else 0o644), path


def test_a_probes_module_that_imports_its_judges_is_refused_when_the_copy_is_built(tmp_path):
    package = scratch_package(tmp_path / "src")
    (package / "nb77" / "probes.py").write_text("from .judges import reference_answer\n")
    with pytest.raises(ValueError, match="nb77/probes.py:1"):
        build(package, tmp_path / "view" / "autograder")


def test_the_installed_packages_copy_imports_every_probe_and_no_judge():
    """What the kernel gets, imported as the kernel imports it (whether or not bubblewrap is here to bind it)."""
    view = probe_view()
    assert view.name == "autograder" and not (view / "judges").exists() and not (view / "grading").exists()
    code = (
        "import importlib, autograder\n"
        f"for n in {CHECKS_MODULES!r}: importlib.import_module('autograder.' + n)\n"
        "from autograder.registry import CHECKS, JUDGES\n"
        "print(autograder.__file__, len(JUDGES), *sorted(CHECKS))"
    )
    env = {**os.environ, "PYTHONPATH": str(view.parent)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=view.parent, timeout=120
    )
    assert done.returncode == 0, done.stderr
    where, judges, *checks = done.stdout.split()
    assert Path(where).is_relative_to(view) and judges == "0"
    assert set(checks) == {c.name for c in CHECKS.values() if c.judges_module.startswith("autograder.")}
