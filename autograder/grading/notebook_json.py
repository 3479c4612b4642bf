"""Turn a submitted notebook file's bytes into nbformat-4 JSON, or a message saying why not.

    load(raw, name) -> (data, notes)    raises NotebookUnreadable(message for the learner)

Nothing honest is lost: a notebook saved as nbformat 3 (older Jupyter) is upgraded with nbformat's
own converter; valid JSON nested deeper than Python's parser goes (say, metadata written by an
extension) is read with the too-deep parts replaced by null, and a note says so.
"""

from __future__ import annotations

import json
import re

MAX_DEPTH = 64  # nesting kept; a notebook's own structure needs 6 (cells -> outputs -> data -> ...)
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)


class NotebookUnreadable(ValueError):
    """The file is not a notebook the grader can read; str() is the message for the learner."""


def _prune_deep(raw: bytes, limit: int) -> tuple[bytes, int]:
    """The same JSON text with every array/object that starts deeper than `limit` replaced by null.
    Scans tokens (strings are skipped whole, so brackets inside them do not count); no recursion."""
    out, depth, cut_from, last, pruned = [], 0, None, 0, 0
    for match in _TOKEN.finditer(raw):
        token = match.group()
        if token[:1] == b'"':
            continue
        if token in (b"[", b"{"):
            depth += 1
            if depth == limit + 1 and cut_from is None:
                cut_from = match.start()
        else:
            if depth == limit + 1 and cut_from is not None:
                out.append(raw[last:cut_from] + b"null")
                last, cut_from = match.end(), None
                pruned += 1
            depth -= 1
    out.append(raw[last:])
    return b"".join(out), pruned


def _depth(data) -> int:
    """Nesting depth of parsed JSON, without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def _parse(raw: bytes, name: str) -> tuple[object, list[str]]:
    text = raw.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
        if _depth(data) <= MAX_DEPTH:  # deeper parts would break later copies and conversions
            return data, []
    except RecursionError:
        pass
    except json.JSONDecodeError as exc:
        raise NotebookUnreadable(
            f"{name} is not a readable notebook: its JSON stops or breaks at line {exc.lineno}, column {exc.colno} "
            f"({exc.msg}). The file was probably cut short or edited by hand. Open the last good copy "
            "(File -> Revert or a checkpoint), save, and submit again."
        ) from None
    pruned_raw, pruned = _prune_deep(raw, MAX_DEPTH)
    try:
        data = json.loads(pruned_raw.decode("utf-8", errors="replace"))
    except (RecursionError, json.JSONDecodeError):
        raise NotebookUnreadable(
            f"{name} is not a readable notebook: its JSON is nested too deeply to read "
            "(or broken inside the deep part)."
        ) from None
    return data, [
        f"{name}: {pruned} part(s) of the file were nested more than {MAX_DEPTH} levels deep (in metadata "
        "or outputs, most likely) and were left out; the rest was graded as usual."
    ]


def _upgrade(data: dict, name: str) -> tuple[dict, list[str]]:
    """nbformat 3 (cells inside worksheets) -> 4, with nbformat's converter."""
    import nbformat

    version = data.get("nbformat")
    if "cells" in data and version in (4, None):
        return data, []
    if version == 3 or "worksheets" in data:
        try:
            node = nbformat.from_dict(data)
            node.setdefault("nbformat", 3)
            node.setdefault("nbformat_minor", 0)
            upgraded = nbformat.convert(node, 4)
        except Exception as exc:  # noqa: BLE001 -- a malformed old notebook: say so
            raise NotebookUnreadable(
                f"{name} is an old-format (nbformat 3) notebook that could not be converted "
                f"({type(exc).__name__}). Open it in JupyterLab, save it, and submit again."
            ) from None
        return json.loads(json.dumps(upgraded)), [
            f"{name} was saved in the old nbformat 3; it was upgraded to nbformat 4 and graded as usual."
        ]
    if isinstance(version, int) and version > 4 and isinstance(data.get("cells"), list):
        return data, []
    raise NotebookUnreadable(f"{name} is JSON but not a Jupyter notebook (no list of cells).")


def load(raw: bytes, name: str) -> tuple[dict, list[str]]:
    """The notebook's JSON as a dict with a `cells` list (nbformat 4 shape), and notes for the learner."""
    data, notes = _parse(raw, name)
    if not isinstance(data, dict):
        raise NotebookUnreadable(f"{name} is JSON but not a Jupyter notebook (no list of cells).")
    data, more = _upgrade(data, name)
    if not isinstance(data.get("cells"), list):
        raise NotebookUnreadable(f"{name} is JSON but not a Jupyter notebook (no list of cells).")
    return data, notes + more
