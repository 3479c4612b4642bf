"""A tiny assignment that uses notebook 01's checks, and a corpus of submissions built from its release.

Each spec in this folder (``h_*.py`` honest, ``x_*.py`` hostile or broken) turns the released
notebook into one learner's submission and says what grading must make of it:

    ANSWERS = {"central_difference": "def central_difference(f, x, h): ..."}  # answer cells (default: correct)
    BLANK = True                       # start from the release as handed out (stubs) instead
    APPEND = ["code of extra cells"]   # learner cells added at the end
    PREPEND = ["..."]                  # learner cells added right after the imports
    def build(nb: dict) -> dict | bytes | None: ...   # free-form edit of the notebook JSON
    FILES = {"name": b"bytes"}         # the submission folder holds exactly these files instead
    LINKS = {"name": "target"}         # symbolic links added to the submission (replacing a file of that name)
    FOLDER_LINK = "target"             # the submission folder itself is a symbolic link to target
    EXPECT = {"score": 7, "flags": {"patched"}, "message": "substring of a message",
              "absent": ["text that must appear nowhere in its feedback or autograded notebook"]}

Placeholders in code: {COURSE} (course directory), {REPO}, {PORT} (a TCP port listening on the host).
"""
from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
ASSIGNMENT = "99-tiny"
NOTEBOOK = "tiny"
MAX_SCORE = 7.0

CORRECT = {
    "primal_trace": "def primal_trace(x1, x2):\n    w1, w2 = x1, x2\n    w3 = w1 * w2\n    w4 = math.sin(w1)\n"
                    "    return {'w1': w1, 'w2': w2, 'w3': w3, 'w4': w4, 'w5': w3 + w4}",
    "central_difference": "def central_difference(f, x, h):\n    return (f(x + h) - f(x - h)) / (2 * h)",
    "adjoint_trace": "def adjoint_trace(x1, x2):\n    w = primal_trace(x1, x2)\n"
                     "    return {'w1': w['w2'] + math.cos(w['w1']), 'w2': w['w1'], 'w3': 1.0, 'w4': 1.0, 'w5': 1.0}",
}
WRONG = {
    "primal_trace": CORRECT["primal_trace"].replace("math.sin(w1)", "math.cos(w1)"),
    "central_difference": "def central_difference(f, x, h):\n    return (f(x + h) - f(x)) / h",
    "adjoint_trace": CORRECT["adjoint_trace"].replace(" + math.cos(w['w1'])", ""),
}
TESTS = {  # (points, check, visible params, hidden params: cases drawn at grading time)
    "primal_trace": (2, "check_primal_trace", "at=[(2.0, 3.0)]", "draw=2"),
    "central_difference": (2, "check_central_difference", "cases=[('sin', 1.0, 1e-3)]", "draw=3"),
    "adjoint_trace": (3, "check_adjoint_trace", "at=[(2.0, 3.0)]", "draw=2"),
}


def _meta(**kw):
    return {"nbgrader": {"schema_version": 3, "task": False, **kw}}


def source_notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells.append(nbformat.v4.new_markdown_cell("# A tiny assignment\nThree exercises from notebook 01."))
    nb.cells.append(nbformat.v4.new_code_cell("import math\nimport torch"))
    for name, (points, check, visible, hidden) in TESTS.items():
        body = CORRECT[name].split("\n", 1)
        answer = body[0] + "\n    ### BEGIN SOLUTION\n" + body[1] + "\n    ### END SOLUTION"
        nb.cells.append(nbformat.v4.new_code_cell(answer, metadata=_meta(grade=False, solution=True, locked=False, grade_id=name)))
        test = (f"from autograder.nb01 import {check}\n\n{check}({name}, {visible})\n### BEGIN HIDDEN TESTS\n"
                f"{check}({name}, {hidden})\n### END HIDDEN TESTS\nprint('{name} passes the visible tests.')")
        nb.cells.append(nbformat.v4.new_code_cell(test, metadata=_meta(grade=True, solution=False, locked=True,
                                                                        points=points, grade_id=f"test_{name}")))
    nb.cells.append(nbformat.v4.new_markdown_cell("That's all."))
    return nb


def make_course(root: Path, db_url: str) -> None:
    """A course directory with the tiny assignment generated (nbgrader generate_assignment) into db_url."""
    from autograder.release import generate_in_course

    folder = root / "source" / ASSIGNMENT
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(source_notebook(), folder / f"{NOTEBOOK}.ipynb")
    generate_in_course(root, [ASSIGNMENT], db_url)


def specs() -> dict[str, object]:
    out = {}
    for path in sorted(HERE.glob("[hx]_*.py")):
        spec = importlib.util.spec_from_file_location(f"hostile_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        module.CORRECT, module.WRONG = CORRECT, WRONG  # what specs build their answers from
        spec.loader.exec_module(module)
        out[path.stem] = module
    return out


def _fill(text: str, context: dict) -> str:
    for key, value in context.items():
        text = text.replace("{" + key + "}", str(value))
    return text


def submission_files(spec, release_nb: Path, context: dict) -> dict[str, bytes]:
    if hasattr(spec, "FILES"):
        return {k: (_fill(v, context).encode() if isinstance(v, str) else v) for k, v in spec.FILES.items()}
    nb = json.loads(release_nb.read_text())
    answers = {} if getattr(spec, "BLANK", False) else dict(CORRECT)
    answers.update(getattr(spec, "ANSWERS", {}))
    for cell in nb["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell["source"] = _fill(answers[gid], context)
    new = lambda src: {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],  # noqa: E731
                       "source": _fill(src, context)}
    for i, src in enumerate(getattr(spec, "PREPEND", [])):
        nb["cells"].insert(2 + i, new(src))
    nb["cells"] += [new(src) for src in getattr(spec, "APPEND", [])]
    for cell in nb["cells"]:
        cell.pop("id", None)
    nb["nbformat_minor"] = 4
    if hasattr(spec, "build"):
        built = spec.build(nb)
        if isinstance(built, bytes):
            return {f"{NOTEBOOK}.ipynb": built}
        nb = built if built is not None else nb
    name = getattr(spec, "NOTEBOOK_NAME", f"{NOTEBOOK}.ipynb")
    return {name: json.dumps(nb, indent=1).encode()}


def write_submissions(root: Path, context: dict, only: list[str] | None = None) -> dict[str, object]:
    release_nb = root / "release" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    chosen = {k: v for k, v in specs().items() if not only or k in only}
    for name, spec in chosen.items():
        folder = root / "submitted" / name / ASSIGNMENT
        if hasattr(spec, "FOLDER_LINK"):
            folder.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(_fill(spec.FOLDER_LINK, context), folder)
            continue
        folder.mkdir(parents=True, exist_ok=True)
        for fname, data in submission_files(spec, release_nb, context).items():
            (folder / fname).write_bytes(data)
        for fname, target in getattr(spec, "LINKS", {}).items():
            (folder / fname).parent.mkdir(parents=True, exist_ok=True)
            if (folder / fname).exists():
                (folder / fname).unlink()
            os.symlink(_fill(target, context), folder / fname)
        if not getattr(spec, "EMPTY", False):
            (folder / "timestamp.txt").write_text("2026-11-01 12:00:00.000000 UTC")
    return chosen
