"""The autograder package as the grading sandbox sees it: the probes, and no judge.

The boundary is a file boundary. A notebook's checks are a folder, ``autograder/nbNN/``: its probes (``probes.py``),
its cases (``cases.py``), its registrations (``__init__.py``) and its judges (``judges.py``, or a ``judges/`` folder).
The sandbox binds, over the package, a copy without any judges module or folder and without ``grading/``: the
learner's code can neither import nor read what decides a score or computes a reference, from the source or its
bytecode. A module the sandbox sees that declares a judge or imports a judges module is refused when the copy is
built.
"""

from __future__ import annotations

import ast
import atexit
import compileall
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import autograder

from ..probes.channel import COURIER_PYTHON

OUTSIDE_ONLY = ("grading",)  # autograder's subpackages the sandbox does not contain, besides every judges module
JUDGES = "judges"  # a module or folder of this name, anywhere in the package, never enters the sandbox


def outside(relative: Path) -> bool:
    """Whether a path of the package (relative to it) stays out of the sandbox."""
    parts = relative.parts
    return bool(parts) and parts[0] in OUTSIDE_ONLY or any(p == JUDGES or p == f"{JUDGES}.py" for p in parts)


def refuse_judges(source: str, path: str = "<module>") -> None:
    """Refuse a module the sandbox would see that declares a judge or imports a judges module."""
    for node in ast.walk(ast.parse(source, path)):
        if _judge_side(node):
            raise ValueError(
                f"{path}:{getattr(node, 'lineno', '?')}: a judge, or an import of a judges module, in a module the"
                " grading sandbox sees; judges live in a notebook's judges.py (or judges/) or in autograder/judges/"
            )


def _judge_side(node: ast.AST) -> bool:
    """A judge's declaration (`@decides(...)`) or an import of a judges module."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        calls = [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list]
        return any(getattr(c, "id", getattr(c, "attr", None)) == "decides" for c in calls)
    if isinstance(node, ast.Import):
        return any(JUDGES in a.name.split(".") for a in node.names)
    if isinstance(node, ast.ImportFrom):
        return JUDGES in (node.module or "").split(".") or any(a.name == JUDGES for a in node.names)
    return False


def build(package: Path, dest: Path) -> Path:
    """Write the sandbox's copy of `package` into `dest` (a new folder), compiled, readable by every user."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")

    def left_out(folder: str, names: list[str]) -> list[str]:
        here = Path(folder).relative_to(package)
        return [*ignore(folder, names), *(n for n in names if outside(here / n))]

    shutil.copytree(package, dest, ignore=left_out)
    for module in sorted(dest.rglob("*.py")):
        refuse_judges(module.read_text(), str(module.relative_to(dest.parent)))
    compileall.compile_dir(dest, quiet=1, workers=1)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dest


@functools.cache
def probe_view() -> Path:
    """This process's copy of the installed autograder package as the sandbox sees it (built on first use), with the
    interpreter of the probes' couriers."""
    holder = Path(tempfile.mkdtemp(prefix="revad-probe-view-"))
    holder.chmod(0o755)  # the kernel's unprivileged uid reads through it
    atexit.register(shutil.rmtree, holder, True)
    view = build(Path(autograder.__file__).resolve().parent, holder / "autograder")
    courier_interpreter(view / "probes")
    return view


def courier_interpreter(folder: Path) -> Path | None:
    """An execute-only copy of this Python for the probes' couriers (``probes/courier.py``, started by
    ``probes/kernel.py``), or None where such a copy does not run here (couriers then run on the kernel's own Python).

    A process started from a file its user may run but not read is not dumpable: a kernel of another uid (the
    sandbox's) can then neither write its memory (``/proc/PID/mem``) nor reach its descriptors (``/proc/PID/fd``,
    ptrace, pidfd_getfd), as it could with any other process of its uid, a child of its own included. The copy beside
    it, ``pyvenv.cfg``, tells the copy where its standard library is."""
    real = Path(os.path.realpath(sys.executable))
    target, config = folder / COURIER_PYTHON, folder / "pyvenv.cfg"
    shutil.copyfile(real, target)
    config.write_text(f"home = {real.parent}\n")
    config.chmod(0o644)
    target.chmod(0o111)
    try:
        ran = subprocess.run([str(target), "-I", "-S", "-c", "import _socket"], capture_output=True, timeout=60)
        works = ran.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        works = False
    if not works:
        target.unlink()
        config.unlink()
        return None
    return target
