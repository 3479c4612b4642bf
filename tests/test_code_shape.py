"""The grader's code stays readable: no function in autograder/ runs over 60 lines unless a comment at its top (by
the signature or after the docstring) says why (`# long: ...`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import autograder

pytestmark = pytest.mark.grading
LIMIT = 60


def long_functions(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text()
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                # the signature, the first statement (a docstring, say) and the line after it
                head = "\n".join(lines[node.lineno - 1 : node.body[0].end_lineno + 1])
                if length > LIMIT and "# long:" not in head:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_in_the_grader_runs_over_60_lines_without_saying_why():
    assert long_functions(Path(autograder.__file__).parent) == []


def test_the_rule_finds_a_long_function_and_accepts_a_reason(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "long.py").write_text(f"def too_long():\n{body}\n")
    (tmp_path / "pkg" / "said.py").write_text(f"def said_why():\n    # long: one table, read top to bottom\n{body}\n")
    assert long_functions(tmp_path / "pkg") == ["pkg/long.py:1 too_long (61 lines)"]


def untyped_public_functions(*places: Path) -> list[str]:
    """Public functions (and public classes' methods) with a parameter or return type left out."""
    found = []
    paths = [p for place in places for p in (sorted(place.rglob("*.py")) if place.is_dir() else [place])]
    for path in paths:
        for node in ast.parse(path.read_text()).body:
            functions = [node]
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                functions = [m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for f in functions:
                if not isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) or f.name.startswith("_"):
                    continue
                params = [a for a in f.args.args + f.args.kwonlyargs if a.arg not in ("self", "cls")]
                params += [a for a in (f.args.vararg, f.args.kwarg) if a is not None]
                if any(a.annotation is None for a in params) or f.returns is None:
                    found.append(f"{path.name}:{f.lineno} {f.name}")
    return found


def test_the_grading_commands_public_functions_are_typed():
    assert untyped_public_functions(Path(autograder.__file__).parent / "grading") == []


def test_the_checks_public_functions_are_typed():
    """The probes (each notebook's checks folder and the shared probes/) and the judges: their public functions say
    what they take and return (ProbeData: the plain data a probe hands the judge)."""
    package = Path(autograder.__file__).parent
    folders = sorted(p for p in package.glob("nb[0-9]*") if p.is_dir())
    assert len(folders) >= 5
    assert untyped_public_functions(package / "probes", package / "judges", *folders) == []


def test_the_typing_rule_finds_what_is_left_out(tmp_path):
    (tmp_path / "m.py").write_text(
        "def typed(a: int, *rest: int) -> int: ...\ndef no_return(a: int): ...\ndef no_param(a) -> None: ...\n"
        "def no_star(*rest) -> None: ...\ndef _private(a): ...\n"
    )
    assert untyped_public_functions(tmp_path / "m.py") == ["m.py:2 no_return", "m.py:3 no_param", "m.py:4 no_star"]
