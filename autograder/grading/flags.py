"""Flags for the instructor: what a submission changed in the release, and learner code that patches the grader.

Flags never change a score; they put the submission in front of the instructor with the reason.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from nbformat import NotebookNode

from .jobs import Flag
from .read import nbgrader_meta, normalized
from .screen import import_aliases

if TYPE_CHECKING:  # spec.py reads with this module's helpers
    from .spec import NotebookSpec

SUSPICIOUS_TARGETS = (
    "torch",
    "builtins",
    "__builtins__",
    "math",
    "autograder",
    "sys",
    "IPython",
    "get_ipython",
    "check_",
    "CHECKS",
    "np",
    "numpy",
)

HARMLESS_SETTINGS = (
    "torch.backends.",
    "np.random.",
    "numpy.random.",
    "sys.path",
    "sys.argv",
    "sys.stdout",
    "sys.stderr",
    "sys.setrecursionlimit",
    "torch.set_",
    "np.set_",
)


def _root_name(node) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    if isinstance(node, ast.Call):
        return _root_name(node.func)
    return node.id if isinstance(node, ast.Name) else None


def _module_aliases(tree) -> dict[str, str]:
    """Local names that stand for a suspicious module or object: `import torch as T`, `from torch import library as L`,
    `lib = torch.library` -> {"T": "torch", "L": "torch.library", "lib": "torch.library"}."""
    aliases = {k: v for k, v in import_aliases(tree).items() if v.startswith(SUSPICIOUS_TARGETS) and k != v}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Name, ast.Attribute)):
            root = _root_name(node.value)
            if root and (root in aliases or root.startswith(SUSPICIOUS_TARGETS)):
                value = ast.unparse(node.value)
                value = aliases.get(root, root) + value[len(root) :]
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id != root:
                        aliases[target.id] = value
    return aliases


def static_patches(source: str) -> list[str]:
    """Assignments in a learner's code that replace parts of torch, builtins, the checks or the kernel (also
    through another name for them: `import torch as T; T.vmap = ...`)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    aliases = _module_aliases(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            call = _patching_call(node, aliases)
            if call:
                found.append(call)
            continue
        for target in _assigned(node):
            if isinstance(target, (ast.Attribute, ast.Subscript)):
                text = _suspicious_target(target, aliases)
                if text:
                    found.append(text)
            elif isinstance(target, ast.Name) and (
                target.id in ("__builtins__", "CHECKS", "__revad_probe__") or target.id.startswith("check_")
            ):
                found.append(target.id)
    return found


def _assigned(node: ast.AST) -> list[ast.expr]:
    """What an assignment, augmented or annotated assignment, or del statement writes to."""
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    if isinstance(node, ast.Delete):
        return list(node.targets)
    return []


def _suspicious_target(target: ast.expr, aliases: dict[str, str]) -> str | None:
    """The target's text with its root spelled out, when it is a suspicious one and no harmless setting."""
    root = _root_name(target)
    if not root:
        return None
    text = ast.unparse(target)
    if root in aliases:
        text = aliases[root] + text[len(root) :]
        root = aliases[root].split(".")[0]
    return text if root.startswith(SUSPICIOUS_TARGETS) and not text.startswith(HARMLESS_SETTINGS) else None


HOOKS = ("register", "settrace", "setprofile", "set_custom_exc", "register_magic_function", "set_hook")


def _patching_call(node: ast.Call, aliases: dict[str, str]) -> str | None:
    """setattr/delattr on a suspicious object, a __setattr__/__delattr__ call, or a hook set on sys or IPython."""
    func = node.func
    if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args:
        root = _root_name(node.args[0])
        if root and (root in aliases or root.startswith(SUSPICIOUS_TARGETS)):
            return f"{func.id}({ast.unparse(node.args[0])}, ...)"
        return None
    if isinstance(func, ast.Attribute) and func.attr in ("__setattr__", "__delattr__"):
        return ast.unparse(func) + "(...)"
    if (
        isinstance(func, ast.Attribute)
        and func.attr in HOOKS
        and _root_name(func) in ("sys", "get_ipython", "ip", "IPython")
    ):
        return ast.unparse(func)
    return None


def structural_flags(nb: NotebookNode, spec_nb: NotebookSpec) -> tuple[list[Flag], dict[str, str]]:
    """Compare a submission with the release by grade_id. Returns (flags, grade_id -> how the cell was found)."""
    flags = []
    by_id: dict[str, list] = {}
    for cell in nb.cells:
        gid = nbgrader_meta(cell).get("grade_id")
        if gid:
            by_id.setdefault(gid, []).append(cell)
    sources_plain = {normalized(c.source): c for c in nb.cells if not nbgrader_meta(c)}
    state = {}
    for spec_cell in spec_nb.cells:
        gid = spec_cell.grade_id
        if not gid:
            continue
        cells = by_id.get(gid, [])
        if len(cells) > 1:
            flags.append(Flag("duplicated_cell", f"{gid} appears {len(cells)} times"))
        if not cells:
            if normalized(spec_cell.release_source) in sources_plain and spec_cell.release_source.strip():
                flags.append(Flag("metadata_stripped", f"{gid}: the cell is there without its nbgrader metadata"))
                state[gid] = "stripped"
            elif spec_cell.solution:
                flags.append(Flag("answer_cell_missing", f"{gid}: no cell carries this grade_id"))
                state[gid] = "missing"
            else:
                flags.append(Flag("locked_cell_deleted", f"{gid}: deleted (restored from the instructor's copy)"))
                state[gid] = "deleted"
            continue
        cell = cells[0]
        meta = nbgrader_meta(cell)
        state[gid] = "present"
        if (
            spec_cell.locked
            and not spec_cell.solution
            and normalized(cell.source) != normalized(spec_cell.release_source)
        ):
            flags.append(Flag("locked_cell_edited", f"{gid}: edited (the instructor's copy was run instead)"))
        if spec_cell.grade and "points" in meta:
            try:
                changed = float(meta["points"]) != float(spec_cell.points)
            except (TypeError, ValueError):
                changed = True
            if changed:
                flags.append(
                    Flag("points_changed", f"{gid}: points {meta['points']!r} instead of {spec_cell.points:g}")
                )
        for key in ("grade", "solution", "locked"):
            if key in meta and bool(meta[key]) != bool(getattr(spec_cell, key)):
                flags.append(Flag("metadata_changed", f"{gid}: {key} set to {meta[key]!r}"))
        if cell.cell_type != spec_cell.cell_type:
            flags.append(Flag("metadata_changed", f"{gid}: cell type changed to {cell.cell_type}"))
    known = {c.grade_id for c in spec_nb.cells}
    for gid in by_id:
        if gid not in known:
            flags.append(Flag("unknown_cell", f"a cell claims grade_id {gid!r}, which the assignment does not have"))
    return flags, state
