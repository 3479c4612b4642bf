"""The grading sandbox's copy of autograder: each checks module cut at its judges line, no judges/, no grading/.

The sandbox tests (tests/test_grading_trust.py, the hostile corpus) try to reach a judge from inside; these test the
cut itself, and that a judge written where the sandbox would see it is refused before any kernel starts."""

from __future__ import annotations

import importlib
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

import autograder
from autograder.grading.probe_view import JUDGES_LINE, build, probe_half, probe_view
from autograder.registry import CHECKS, JUDGES

pytestmark = pytest.mark.grading
PACKAGE = Path(autograder.__file__).resolve().parent
CHECKS_MODULES = sorted(p.stem for p in PACKAGE.glob("nb[0-9][0-9].py"))
LINE = JUDGES_LINE + " ===="


@pytest.mark.parametrize("name", CHECKS_MODULES)
def test_each_checks_module_keeps_its_probes_in_view_and_every_judge_out_of_it(name):
    source = (PACKAGE / f"{name}.py").read_text()
    assert sum(line.startswith(JUDGES_LINE) for line in source.splitlines()) == 1, f"{name}: one judges line"
    seen = probe_half(source, name)
    module = importlib.import_module(f"autograder.{name}")
    declared = [c for c in CHECKS.values() if c.judges_module == module.__name__]
    assert declared, f"{name} declares no check"
    for check in declared:
        assert f'"{check.name}"' in seen, f"{check.name}: declared below the judges line, where the sandbox lacks it"
        assert check.name in JUDGES and JUDGES[check.name].judge.__module__ == module.__name__
        judge = JUDGES[check.name].judge.__name__
        assert f"def {judge}(" in source and f"def {judge}(" not in seen, f"{judge} is in the sandbox's copy"


@pytest.mark.parametrize(
    "above",
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
        "def helper():\n    from ..judges import answers\n    return answers\n",
    ],
)
def test_a_judge_or_a_judges_import_above_the_line_is_refused(above):
    source = f'"""A checks module."""\n\n{above}\n{LINE}\nimport random\n'
    with pytest.raises(ValueError, match="above the judges line"):
        probe_half(source, "nb77.py")


def test_two_judges_lines_are_refused_and_the_words_alone_are_not():
    with pytest.raises(ValueError, match="2 judges lines"):
        probe_half(f"x = 1\n{LINE}\ny = 2\n{LINE}\n", "nb77.py")
    honest = '"""Mentions @decides and autograder.judges in words only."""\n# from .judges import answers\nx = 1\n'
    assert probe_half(honest) == honest  # a module without a judges line is seen whole
    assert probe_half(f"x = 1\n{LINE}\n@decides('c', draw=d)\ndef judge(data):\n    pass\n") == "x = 1\n"


def scratch_package(root: Path) -> Path:
    package = root / "autograder"
    for sub in ("judges", "grading", "probes", "__pycache__"):
        (package / sub).mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "judges" / "__init__.py").write_text("SECRET = 'judges package'\n")
    (package / "grading" / "__init__.py").write_text("SECRET = 'grading command'\n")
    (package / "probes" / "__init__.py").write_text("VISIBLE = 'probes'\n")
    (package / "__pycache__" / "nb77.cpython-311.pyc").write_bytes(b"stale whole-module bytecode reference_answer")
    (package / "nb77.py").write_text(
        f"def probe_x(obj):\n    return obj\n\n\n{LINE}\ndef reference_answer(x):\n    return 2 * x\n"
    )
    return package


def test_the_copy_is_cut_compiled_from_the_cut_and_readable_by_every_user(tmp_path):
    view = build(scratch_package(tmp_path / "src"), tmp_path / "view" / "autograder")
    assert sorted(p.name for p in view.iterdir()) == ["__init__.py", "__pycache__", "nb77.py", "probes"]
    assert "reference_answer" not in (view / "nb77.py").read_text()
    (compiled,) = (view / "__pycache__").glob("nb77.*.pyc")
    code = marshal.loads(compiled.read_bytes()[16:])
    assert "probe_x" in code.co_names and "reference_answer" not in code.co_names
    for path in [view, *view.rglob("*")]:
        assert path.stat().st_mode & 0o777 == (0o755 if path.is_dir() else 0o644), path


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
