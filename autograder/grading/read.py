"""Reading a submission defensively: missing, renamed, empty, truncated or malformed notebooks
become a message for the learner, never an exception."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from . import notebook_json

MAX_NOTEBOOK_BYTES = 50 * 2**20


class Unreadable(Exception):
    """A submitted notebook that cannot be read; the message is for the learner."""


def read_notebook(path: Path, notes: list[str] | None = None) -> nbformat.NotebookNode:
    """The notebook at `path` (cells rebuilt one by one); notes for the learner (upgraded, cut) go to `notes`."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise Unreadable(f"The file {path.name} could not be opened ({exc.strerror}).") from None
    if size == 0:
        raise Unreadable(
            f"{path.name} is empty (0 bytes): the file was saved or uploaded without content. "
            "Open it in JupyterLab, check your work is there, save, and submit again."
        )
    if size > MAX_NOTEBOOK_BYTES:
        raise Unreadable(
            f"{path.name} is {size / 2**20:.0f} MB, more than the {MAX_NOTEBOOK_BYTES // 2**20} MB "
            "the grader reads. Clear the outputs (Edit -> Clear Outputs of All Cells), save, submit again."
        )
    try:  # nbformat 3 upgraded; JSON deeper than Python copes with cut, with a note
        data, read_notes = notebook_json.load(path.read_bytes(), path.name)
    except notebook_json.NotebookUnreadable as exc:
        raise Unreadable(str(exc)) from None
    if notes is not None:
        notes.extend(read_notes)
    cells = []
    for raw_cell in data["cells"]:
        if not isinstance(raw_cell, dict):
            continue
        cell_type = raw_cell.get("cell_type")
        source = raw_cell.get("source", "")
        if isinstance(source, list):
            source = "".join(str(s) for s in source)
        if not isinstance(source, str):
            source = str(source)
        meta = raw_cell.get("metadata") if isinstance(raw_cell.get("metadata"), dict) else {}
        if cell_type == "code":
            cell = nbformat.v4.new_code_cell(source)
        elif cell_type == "markdown":
            cell = nbformat.v4.new_markdown_cell(source)
        elif cell_type == "raw":
            cell = nbformat.v4.new_raw_cell(source)
        else:
            continue
        cell.metadata = nbformat.from_dict(meta)
        cells.append(cell)
    nb = nbformat.v4.new_notebook(cells=cells)
    meta = data.get("metadata")
    if isinstance(meta, dict):
        nb.metadata = nbformat.from_dict(meta)
    return nb


def nbgrader_meta(cell: NotebookNode) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def normalized(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def find_notebooks(folder: Path, grade_ids: Mapping[str, Collection[str]]) -> tuple[dict[str, Path | None], list[str]]:
    """Expected notebook name -> file in the submission (renamed files matched by their cells' grade ids, which
    `grade_ids` gives per expected notebook)."""
    messages = []
    present = sorted(p for p in folder.glob("*.ipynb")) if folder.is_dir() else []
    found = {name: (folder / f"{name}.ipynb" if (folder / f"{name}.ipynb").is_file() else None) for name in grade_ids}
    spare = [p for p in present if p.stem not in grade_ids]
    for name, path in found.items():
        if path is not None or not spare:
            continue
        ids = grade_ids[name]
        best: Path | None = None
        best_score: float = 0
        for candidate in spare:
            try:
                text = candidate.read_text(errors="replace")[:MAX_NOTEBOOK_BYTES]
            except OSError:
                continue
            score = sum(f'"{i}"' in text for i in ids) + (0.5 if name.lower() in candidate.stem.lower() else 0)
            if score > best_score:
                best, best_score = candidate, score
        if best is None and len(spare) == 1 and len(grade_ids) == 1:
            best = spare[0]
        if best is not None:
            found[name] = best
            spare.remove(best)
            messages.append(
                f"{name}.ipynb was not in your submission, but {best.name} looks like it: it was graded "
                f"instead. Keep the file name {name}.ipynb next time."
            )
    return found, messages
