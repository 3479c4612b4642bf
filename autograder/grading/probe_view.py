"""The autograder package as the grading sandbox sees it: the probes, and no judge.

A notebook's checks module (``autograder/nbNN.py``) holds both halves of its checks: the probes above its judges
line (:data:`JUDGES_LINE`), the judges, drawers and references below it. The sandbox binds, over the package, a
copy in which each checks module ends at that line and ``judges/`` and ``grading/`` are absent: the learner's code
can neither import nor read what decides a score or computes a reference, from the module or its bytecode.
"""

from __future__ import annotations

import ast
import atexit
import compileall
import functools
import shutil
import tempfile
from pathlib import Path

import autograder

JUDGES_LINE = "# ==== judges: decided outside the grading sandbox"  # how a checks module's judges line begins
OUTSIDE_ONLY = ("judges", "grading")  # autograder's subpackages the sandbox does not contain


def probe_half(source: str, path: str = "<module>") -> str:
    """The part of a module the sandbox sees: up to its judges line, or all of it when it has none.
    Refuses a module whose visible part still declares a judge or imports the judges."""
    lines = source.splitlines(keepends=True)
    cut = [i for i, line in enumerate(lines) if line.startswith(JUDGES_LINE)]
    if len(cut) > 1:
        raise ValueError(f"{path}: {len(cut)} judges lines; a checks module has one, above its first judge")
    visible = "".join(lines[: cut[0]] if cut else lines)
    for node in ast.walk(ast.parse(visible, path)):
        if _judge_side(node):
            raise ValueError(
                f"{path}:{getattr(node, 'lineno', '?')}: a judge or an import of autograder.judges above the judges"
                f" line, where the grading sandbox would see it; move it below the line '{JUDGES_LINE} ...'"
            )
    return visible


def _judge_side(node: ast.AST) -> bool:
    """A judge's declaration (`@decides(...)`) or an import of autograder.judges."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        calls = [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list]
        return any(getattr(c, "id", getattr(c, "attr", None)) == "decides" for c in calls)
    if isinstance(node, ast.Import):
        return any(a.name.startswith("autograder.judges") for a in node.names)
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        if node.level == 0:
            return module.startswith("autograder.judges") or module == "autograder" and _names(node, "judges")
        return module.split(".")[0] == "judges" or not module and _names(node, "judges")
    return False


def _names(node: ast.ImportFrom, name: str) -> bool:
    return any(a.name == name for a in node.names)


def build(package: Path, dest: Path) -> Path:
    """Write the sandbox's copy of `package` into `dest` (a new folder), compiled, readable by every user."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(package, dest, ignore=lambda d, names: [*ignore(d, names), *_outside(package, d, names)])
    for module in sorted(dest.rglob("*.py")):
        module.write_text(probe_half(module.read_text(), str(module.relative_to(dest.parent))))
    compileall.compile_dir(dest, quiet=1, workers=1)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dest


def _outside(package: Path, folder: str, names: list[str]) -> list[str]:
    return [n for n in names if Path(folder) == package and n in OUTSIDE_ONLY]


@functools.cache
def probe_view() -> Path:
    """This process's copy of the installed autograder package as the sandbox sees it (built on first use)."""
    holder = Path(tempfile.mkdtemp(prefix="revad-probe-view-"))
    holder.chmod(0o755)  # the kernel's unprivileged uid reads through it
    atexit.register(shutil.rmtree, holder, True)
    return build(Path(autograder.__file__).resolve().parent, holder / "autograder")
