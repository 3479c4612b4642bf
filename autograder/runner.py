"""Grade one submission: the work of one worker process.

    python -m autograder.runner JOB.json      (started by autograder.grading, one per submission)

1. Read the submitted notebooks defensively (missing, renamed, empty, truncated or malformed JSON
   all become a message and a zero, never an exception) and compare them with the release:
   edited or deleted locked cells, changed points, stripped metadata -> flags.
2. Build the notebook to run: the learner's answer cells and own cells, the instructor's test cells
   (with hidden tests), a setup cell first and a probe cell after each test cell. A probe runs
   ``CHECKS[name].collect(obj, **params)`` for each ``check_x(obj, key=<literal>)`` call of the
   instructor's test cell and emits the data as a display output (torch.save, base64).
3. Run it in a sandboxed kernel (autograder.sandbox) with limits per cell and per notebook, output
   caps, and a hard kill at the deadline.
4. Here, in the grader's own process, load the data (torch.load(weights_only=True)) and run each
   check's *judge* with the parameters from the instructor's copy. The judges decide the score; the
   kernel's own verdict only raises a flag when it disagrees.
5. Write result.json, the autograded notebooks (no hidden tests, trusted outcomes in the test
   cells' outputs) and the feedback HTML into the job's output folder. The parent process records
   them in the gradebook.
"""
from __future__ import annotations

import ast
import asyncio
import base64
import copy
import importlib
import io
import json
import math
import os
import re
import shutil
import sys
import time
import traceback
from pathlib import Path

import nbformat

PROBE_MIME = "application/x-revad-probe"
MAX_NOTEBOOK_BYTES = 50 * 2**20
MAX_PROBE_BYTES = 32 * 2**20
HIDDEN_BEGIN, HIDDEN_END = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"

# What the setup cell watches for replacement (flags only: this runs in the learner's kernel).
WATCHED = [
    "torch.autograd.gradcheck", "torch.autograd.gradgradcheck", "torch.autograd.grad", "torch.allclose",
    "torch.isclose", "torch.equal", "torch.testing.assert_close", "torch.Tensor.allclose", "torch.Tensor.backward",
    "torch.autograd.Function.apply", "torch.save", "torch.load",
    "builtins.abs", "builtins.all", "builtins.any", "builtins.isinstance", "builtins.float", "builtins.len",
    "builtins.max", "builtins.min", "builtins.sum", "builtins.round", "builtins.print", "builtins.eval",
    "builtins.__import__", "math.isclose", "math.isnan", "math.isfinite",
    "autograder.registry.Check.collect", "autograder.registry.Check.decide", "autograder.registry.Check.__call__",
    "autograder.feedback.close", "autograder.feedback.call_learner", "autograder.feedback.as_float",
    "autograder.feedback.mismatch", "autograder.feedback.CheckFailed",
    "IPython.display.display",
]

SETUP = r'''
def _revad_setup(modules, watched_paths):
    import base64, builtins, importlib, io, sys
    import torch
    from IPython import get_ipython
    from IPython.display import display
    for name in modules:
        importlib.import_module(name)
    from autograder.registry import CHECKS, FAILED
    ip = get_ipython()

    def resolve(path):
        parts = path.split(".")
        for i in range(len(parts), 0, -1):
            if ".".join(parts[:i]) in sys.modules:
                obj = sys.modules[".".join(parts[:i])]
                for attr in parts[i:]:
                    obj = getattr(obj, attr)
                return getattr(obj, "__func__", obj)
        raise LookupError(path)

    watched = {}
    for path in watched_paths:
        try:
            watched[path] = resolve(path)
        except Exception:
            pass
    checks = dict(CHECKS)
    parts = {name: (c, c.probe, c.judge) for name, c in checks.items()}
    mods = {m: sys.modules.get(m) for m in ("torch", "torch.autograd", "builtins", "math", "autograder.registry",
                                           "autograder.feedback", *modules)}
    events = {k: list(v) for k, v in ip.events.callbacks.items()}
    transformers = (list(ip.input_transformers_cleanup), list(ip.input_transformers_post), list(ip.ast_transformers))
    trace = (sys.gettrace(), sys.getprofile())
    custom_exc = tuple(getattr(ip, "custom_exceptions", ()))

    def patched():
        out = []
        for path, obj in watched.items():
            try:
                now = resolve(path)
            except Exception:
                now = None
            if now is not obj:
                out.append(path)
        for name, (c, p, j) in parts.items():
            if CHECKS.get(name) is not c or c.probe is not p or c.judge is not j:
                out.append("autograder check " + name)
        for m, mod in mods.items():
            if sys.modules.get(m) is not mod:
                out.append("sys.modules[%r]" % m)
        for k, v in ip.events.callbacks.items():
            before = events.get(k, [])
            added = [cb for cb in v if cb not in before and not str(getattr(cb, "__module__", "") or "").startswith(
                ("IPython", "ipykernel", "matplotlib", "matplotlib_inline", "ipywidgets"))]
            if added or any(cb not in v for cb in before):
                out.append("IPython event hook " + k)
        now = (list(ip.input_transformers_cleanup), list(ip.input_transformers_post), list(ip.ast_transformers))
        if now != transformers:
            out.append("IPython input/AST transformers")
        if tuple(getattr(ip, "custom_exceptions", ())) != custom_exc:
            out.append("IPython custom exception handler")
        if (sys.gettrace(), sys.getprofile()) != trace:
            out.append("sys.settrace/setprofile")
        return out

    def probe(cell, calls):
        results = []
        for check, expr, params in calls:
            try:
                try:
                    obj = eval(expr, ip.user_ns)
                except NameError:
                    data = {FAILED: "`%s` is not defined when this test runs. Run the cell that defines it "
                                    "(and keep its name as the exercise asks)." % expr}
                else:
                    data = checks[check].collect(obj, **params)
            except KeyboardInterrupt:
                data = {FAILED: "Your code was stopped: it ran longer than this test allows. Look for an "
                                "infinite loop, or work that grows much faster than the input."}
            except BaseException as exc:
                data = {FAILED: "Your code raised %s while it was being tested: %s" % (type(exc).__name__, exc)}
            results.append(data)
        payload = {"cell": cell, "results": results, "patched": patched()}
        buf = io.BytesIO()
        try:
            torch.save(payload, buf)
        except Exception as exc:
            buf = io.BytesIO()
            torch.save({"cell": cell, "results": [{FAILED: "The values your code returned could not be "
                        "recorded (%s): return numbers, dicts or tensors." % type(exc).__name__}] * len(calls),
                        "patched": payload["patched"]}, buf)
        display({__PROBE_MIME__: base64.b64encode(buf.getvalue()).decode()}, raw=True)

    return probe
__revad_probe__ = _revad_setup(__MODULES__, __WATCHED__)
del _revad_setup
'''


# --------------------------------------------------------------------------------------------- spec

def _split_hidden(source: str) -> tuple[list[str], list[str]]:
    """(visible lines, hidden-test lines) of a test cell; the marker lines belong to neither."""
    visible, hidden_part, hidden = [], [], False
    for line in source.splitlines():
        if HIDDEN_BEGIN in line:
            hidden = True
        elif HIDDEN_END in line:
            hidden = False
        else:
            (hidden_part if hidden else visible).append(line)
    return visible, hidden_part


def hidden_stripped(source: str) -> str:
    return "\n".join(_split_hidden(source)[0])


def hidden_lines(source: str) -> list[str]:
    return [line.strip() for line in _split_hidden(source)[1] if len(line.strip()) >= 8]


def check_modules(source: str) -> list[str]:
    """autograder.* modules a test cell imports its checks from."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return sorted({n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
                   and n.module.startswith("autograder.")}
                  | {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
                     if a.name.startswith("autograder.")})


def parse_check_calls(source: str, known: set[str]) -> list[tuple[str, str, dict]] | None:
    """The `check_x(learner_name, key=<literal>, ...)` calls of an instructor's test cell, in order:
    (check name, source of the learner expression, params). None when the cell has none."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    aliases = {name: name for name in known}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("autograder"):
            for alias in node.names:
                if alias.name in known:
                    aliases[alias.asname or alias.name] = alias.name
    calls = []
    for stmt in tree.body:
        value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in aliases):
            continue
        if len(value.args) != 1 or any(k.arg is None for k in value.keywords):
            raise ValueError(f"{value.func.id}(...) must be called as check_x(learner_name, key=<literal>, ...)")
        params = {k.arg: ast.literal_eval(k.value) for k in value.keywords}
        calls.append((aliases[value.func.id], ast.unparse(value.args[0]), params))
    return calls or None


# ------------------------------------------------------------------------------ reading a submission

class Unreadable(Exception):
    """A submitted notebook that cannot be read; the message is for the learner."""


def read_notebook(path: Path) -> nbformat.NotebookNode:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise Unreadable(f"The file {path.name} could not be opened ({exc.strerror}).") from None
    if size == 0:
        raise Unreadable(f"{path.name} is empty (0 bytes): the file was saved or uploaded without content. "
                         "Open it in JupyterLab, check your work is there, save, and submit again.")
    if size > MAX_NOTEBOOK_BYTES:
        raise Unreadable(f"{path.name} is {size / 2**20:.0f} MB, more than the {MAX_NOTEBOOK_BYTES // 2**20} MB "
                         "the grader reads. Clear the outputs (Edit -> Clear Outputs of All Cells), save, submit again.")
    raw = path.read_bytes()
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
    except json.JSONDecodeError as exc:
        raise Unreadable(f"{path.name} is not a readable notebook: its JSON stops or breaks at line {exc.lineno}, "
                         f"column {exc.colno} ({exc.msg}). The file was probably cut short or edited by hand. "
                         "Open the last good copy (File -> Revert or a checkpoint), save, and submit again.") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells", None), list):
        raise Unreadable(f"{path.name} is JSON but not a Jupyter notebook (no list of cells).")
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


def _fresh_ids(nb) -> None:
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index}"


def nbgrader_meta(cell) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def _norm(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def find_notebooks(folder: Path, spec_notebooks: dict) -> tuple[dict[str, Path | None], list[str]]:
    """Expected notebook name -> file in the submission (renamed files matched by their cells)."""
    messages = []
    present = sorted(p for p in folder.glob("*.ipynb")) if folder.is_dir() else []
    found = {name: (folder / f"{name}.ipynb" if (folder / f"{name}.ipynb").is_file() else None) for name in spec_notebooks}
    spare = [p for p in present if p.stem not in spec_notebooks]
    for name, path in found.items():
        if path is not None or not spare:
            continue
        ids = {c["grade_id"] for c in spec_notebooks[name]["cells"] if c.get("grade_id")}
        best, best_score = None, 0
        for candidate in spare:
            try:
                text = candidate.read_text(errors="replace")[:MAX_NOTEBOOK_BYTES]
            except OSError:
                continue
            score = sum(f'"{i}"' in text for i in ids) + (0.5 if name.lower() in candidate.stem.lower() else 0)
            if score > best_score:
                best, best_score = candidate, score
        if best is None and len(spare) == 1 and len(spec_notebooks) == 1:
            best = spare[0]
        if best is not None:
            found[name] = best
            spare.remove(best)
            messages.append(f"{name}.ipynb was not in your submission, but {best.name} looks like it: it was graded "
                            f"instead. Keep the file name {name}.ipynb next time.")
    return found, messages


# -------------------------------------------------------------------------------------------- flags

SUSPICIOUS_TARGETS = ("torch", "builtins", "__builtins__", "math", "autograder", "sys", "IPython", "get_ipython",
                      "check_", "CHECKS", "np", "numpy")


HARMLESS_SETTINGS = ("torch.backends.", "np.random.", "numpy.random.", "sys.path", "sys.argv", "sys.stdout", "sys.stderr",
                     "sys.setrecursionlimit", "torch.set_", "np.set_")


def _root_name(node) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    if isinstance(node, ast.Call):
        return _root_name(node.func)
    return node.id if isinstance(node, ast.Name) else None


def static_patches(source: str) -> list[str]:
    """Assignments in a learner's code that replace parts of torch, builtins, the checks or the kernel."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") and node.args:
            root = _root_name(node.args[0])
            if root and root.startswith(SUSPICIOUS_TARGETS):
                found.append(f"{node.func.id}({ast.unparse(node.args[0])}, ...)")
            continue
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "__setattr__", "__delattr__"):
            found.append(ast.unparse(node.func) + "(...)")
            continue
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "register", "settrace", "setprofile", "set_custom_exc", "register_magic_function",
                "set_hook") and _root_name(node.func) in ("sys", "get_ipython", "ip", "IPython"):
            found.append(ast.unparse(node.func))
            continue
        for target in targets:
            if isinstance(target, (ast.Attribute, ast.Subscript)):
                root = _root_name(target)
                text = ast.unparse(target)
                if root and root.startswith(SUSPICIOUS_TARGETS) and not text.startswith(HARMLESS_SETTINGS):
                    found.append(text)
            elif isinstance(target, ast.Name) and target.id in ("__builtins__", "CHECKS", "__revad_probe__") or (
                    isinstance(target, ast.Name) and target.id.startswith("check_")):
                found.append(target.id)
    return found


def structural_flags(nb, spec_nb: dict) -> tuple[list[dict], dict[str, str]]:
    """Compare a submission with the release by grade_id. Returns (flags, grade_id -> how the cell was found)."""
    flags = []
    by_id: dict[str, list] = {}
    for cell in nb.cells:
        gid = nbgrader_meta(cell).get("grade_id")
        if gid:
            by_id.setdefault(gid, []).append(cell)
    sources_plain = {_norm(c.source): c for c in nb.cells if not nbgrader_meta(c)}
    state = {}
    for spec_cell in spec_nb["cells"]:
        gid = spec_cell.get("grade_id")
        if not gid:
            continue
        cells = by_id.get(gid, [])
        if len(cells) > 1:
            flags.append({"code": "duplicated_cell", "detail": f"{gid} appears {len(cells)} times"})
        if not cells:
            if _norm(spec_cell["release_source"]) in sources_plain and spec_cell["release_source"].strip():
                flags.append({"code": "metadata_stripped", "detail": f"{gid}: the cell is there without its nbgrader metadata"})
                state[gid] = "stripped"
            elif spec_cell["solution"]:
                flags.append({"code": "answer_cell_missing", "detail": f"{gid}: no cell carries this grade_id"})
                state[gid] = "missing"
            else:
                flags.append({"code": "locked_cell_deleted", "detail": f"{gid}: deleted (restored from the instructor's copy)"})
                state[gid] = "deleted"
            continue
        cell = cells[0]
        meta = nbgrader_meta(cell)
        state[gid] = "present"
        if spec_cell["locked"] and not spec_cell["solution"] and _norm(cell.source) != _norm(spec_cell["release_source"]):
            flags.append({"code": "locked_cell_edited", "detail": f"{gid}: edited (the instructor's copy was run instead)"})
        if spec_cell["grade"] and "points" in meta:
            try:
                changed = float(meta["points"]) != float(spec_cell["points"])
            except (TypeError, ValueError):
                changed = True
            if changed:
                flags.append({"code": "points_changed", "detail": f"{gid}: points {meta['points']!r} instead of {spec_cell['points']:g}"})
        for key in ("grade", "solution", "locked"):
            if key in meta and bool(meta[key]) != bool(spec_cell[key]):
                flags.append({"code": "metadata_changed", "detail": f"{gid}: {key} set to {meta[key]!r}"})
        if cell.cell_type != spec_cell["cell_type"]:
            flags.append({"code": "metadata_changed", "detail": f"{gid}: cell type changed to {cell.cell_type}"})
    known = {c.get("grade_id") for c in spec_nb["cells"]}
    for gid in by_id:
        if gid not in known:
            flags.append({"code": "unknown_cell", "detail": f"a cell claims grade_id {gid!r}, which the assignment does not have"})
    return flags, state


# ------------------------------------------------------------------------------ the notebook to run

def build_execution(nb, spec_nb: dict, state: dict[str, str], calls: dict[str, list | None], modules: list[str]):
    """(notebook to run, index of each graded test cell in it, index of each probe cell in it)."""
    spec_by_id = {c["grade_id"]: c for c in spec_nb["cells"] if c.get("grade_id")}
    order = [c["grade_id"] for c in spec_nb["cells"] if c.get("grade_id")]
    cells = []
    placed = set()
    stripped = {_norm(c["release_source"]): c["grade_id"] for c in spec_nb["cells"]
                if c.get("grade_id") and state.get(c["grade_id"]) == "stripped" and not c["solution"]}

    def instructor_cell(spec_cell):
        if spec_cell["cell_type"] == "code":
            cell = nbformat.v4.new_code_cell(spec_cell["source"])
        else:
            cell = nbformat.v4.new_markdown_cell(spec_cell["source"])
        cell.metadata["nbgrader"] = copy.deepcopy(spec_cell["metadata"])
        return cell

    def insert_missing_before(gid):
        # deleted locked/test cells that come before `gid` in the release go back in, in order
        for other in order[:order.index(gid)] if gid in order else order:
            if other not in placed and state.get(other) in ("deleted",):
                cells.append(instructor_cell(spec_by_id[other]))
                placed.add(other)

    for cell in nb.cells:
        gid = nbgrader_meta(cell).get("grade_id")
        if gid in spec_by_id and gid not in placed:
            insert_missing_before(gid)
            spec_cell = spec_by_id[gid]
            if spec_cell["solution"]:
                new = copy.deepcopy(cell)
                new.cell_type = spec_cell["cell_type"]
                if new.cell_type == "code":
                    new.setdefault("outputs", [])
                    new.setdefault("execution_count", None)
                else:
                    new.pop("outputs", None)
                    new.pop("execution_count", None)
                new.metadata["nbgrader"] = copy.deepcopy(spec_cell["metadata"])
            else:
                new = instructor_cell(spec_cell)
            cells.append(new)
            placed.add(gid)
        elif gid in spec_by_id:
            continue  # a duplicate of a graded cell: the first one counts
        elif not gid and _norm(cell.source) in stripped:
            other = stripped.pop(_norm(cell.source))  # a locked cell without its metadata: the instructor's copy runs
            insert_missing_before(other)
            cells.append(instructor_cell(spec_by_id[other]))
            placed.add(other)
        else:
            new = copy.deepcopy(cell)
            if nbgrader_meta(new):
                new.metadata.pop("nbgrader", None)  # unknown grade_id: an ordinary cell
            cells.append(new)
    for gid in order:
        if gid not in placed and state.get(gid) == "deleted":
            cells.append(instructor_cell(spec_by_id[gid]))
            placed.add(gid)

    run = nbformat.v4.new_notebook()
    setup = nbformat.v4.new_code_cell(SETUP.replace("__PROBE_MIME__", repr(PROBE_MIME))
                                      .replace("__MODULES__", repr(modules)).replace("__WATCHED__", repr(WATCHED)))
    setup.metadata["revad"] = {"role": "setup"}
    run.cells.append(setup)
    test_index, probe_index = {}, {}
    for cell in cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        run.cells.append(cell)
        gid = nbgrader_meta(cell).get("grade_id")
        if gid in spec_by_id and spec_by_id[gid]["grade"] and not spec_by_id[gid]["solution"] and cell.cell_type == "code":
            test_index[gid] = len(run.cells) - 1
            if calls.get(gid):
                probe = nbformat.v4.new_code_cell(f"__revad_probe__({gid!r}, {calls[gid]!r})")
                probe.metadata["revad"] = {"role": "probe", "grade_id": gid}
                run.cells.append(probe)
                probe_index[gid] = len(run.cells) - 1
    _fresh_ids(run)
    return run, test_index, probe_index


# -------------------------------------------------------------------------------------- execution

def _make_client_class():
    from nbclient import NotebookClient

    class GradingClient(NotebookClient):
        """nbclient with a cap on the output kept per cell, and a record of cells that timed out."""

        output_cap = 512 * 1024
        timed_out: set
        truncated: set
        current = -1
        _sizes: dict

        def output(self, outs, msg, display_id, cell_index):
            size = len(json.dumps(msg.get("content", {}), default=str))
            used = self._sizes.get(cell_index, 0)
            if used + size > self.output_cap and msg["msg_type"] in ("stream", "display_data", "execute_result", "update_display_data"):
                self.truncated.add(cell_index)
                return None
            self._sizes[cell_index] = used + size
            return super().output(outs, msg, display_id, cell_index)

        async def _async_handle_timeout(self, timeout, cell=None):
            self.timed_out.add(self.current)
            return await super()._async_handle_timeout(timeout, cell)

    return GradingClient


def execute(run_nb, scratch: Path, job: dict, log: list[str]) -> dict:
    """Run the notebook in a sandboxed kernel. Returns {"status": {index: ok|error|timeout|not_run}, "stopped": reason}."""
    from jupyter_client.kernelspec import KernelSpec
    from jupyter_client.manager import AsyncKernelManager
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    from . import sandbox

    limits = sandbox.Limits(**job["limits"])
    info = sandbox.SandboxInfo(**job["sandbox"])
    uid = sandbox.slot_uid(info, job["uid_seq"])
    home = scratch / "home"
    env = {"HOME": str(home), "MPLBACKEND": "Agg", "MPLCONFIGDIR": str(home / "mpl"), "IPYTHONDIR": str(home / "ipython"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTER_DATA_DIR": str(home / "data"), "TMPDIR": "/tmp" if info.active else str(home / "tmp"),
           "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": str(job.get("threads", 1)),
           "MKL_NUM_THREADS": str(job.get("threads", 1)), "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    for sub in ("mpl", "ipython", "runtime", "data", "tmp"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    hide = [Path(p) for p in job.get("hide", [])]
    argv = sandbox.kernel_command(info, limits, scratch, job["uid_seq"], env, hide)
    if uid is not None:
        for path in [scratch, *scratch.rglob("*")]:
            os.lchown(path, uid, uid)

    class SandboxKernelManager(AsyncKernelManager):
        def write_connection_file(self, **kwargs):
            result = super().write_connection_file(**kwargs)
            if uid is not None:
                os.chown(self.connection_file, uid, uid)
            return result

    km = SandboxKernelManager(transport="ipc", ip=str(scratch / "k"), connection_file=str(scratch / "kernel.json"))
    km._kernel_spec = KernelSpec(argv=argv, display_name="grading sandbox", language="python",
                                 interrupt_mode="message", env={})
    if not info.active or shutil.which("prlimit") is None:
        def preexec():
            import resource
            for res, value in ((resource.RLIMIT_AS, limits.memory_mb * 2**20), (resource.RLIMIT_CPU, limits.cpu_s),
                               (resource.RLIMIT_NPROC, limits.nproc), (resource.RLIMIT_FSIZE, limits.fsize_mb * 2**20)):
                try:
                    resource.setrlimit(res, (value, value))
                except (ValueError, OSError):
                    pass
        start_kwargs = {"cwd": str(scratch / "work"), "preexec_fn": preexec if shutil.which("prlimit") is None else None}
    else:
        start_kwargs = {"cwd": str(scratch / "work")}
    start_kwargs = {k: v for k, v in start_kwargs.items() if v is not None}

    Client = _make_client_class()
    client = Client(run_nb, km=km, timeout=limits.cell_timeout_s, allow_errors=True, interrupt_on_timeout=True,
                    error_on_timeout={"ename": "TimeoutError", "evalue": f"cell stopped after {limits.cell_timeout_s} s"},
                    startup_timeout=120, record_timing=False, iopub_timeout=4, shutdown_kernel="immediate",
                    resources={"metadata": {"path": str(scratch / "work")}})
    client.output_cap = limits.output_kb * 1024
    client.timed_out, client.truncated, client._sizes = set(), set(), {}
    status = {i: "not_run" for i in range(len(run_nb.cells))}
    deadline = time.monotonic() + limits.timeout_s
    stopped = None

    async def run_all():
        nonlocal stopped
        try:
            t0 = time.monotonic()
            await client.async_start_new_kernel(**start_kwargs)
            await client.async_start_new_kernel_client()
            if os.environ.get("REVAD_DEBUG"):
                print(f"kernel start: {time.monotonic() - t0:.2f} s", file=sys.stderr, flush=True)
        except Exception as exc:  # noqa: BLE001
            stopped = f"kernel_start: {type(exc).__name__}: {exc}"
            return
        try:
            for index, cell in enumerate(run_nb.cells):
                if cell.cell_type != "code":
                    status[index] = "ok"
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    stopped = "deadline"
                    break
                client.current = index
                t0 = time.monotonic()
                try:
                    await asyncio.wait_for(client.async_execute_cell(cell, index), timeout=remaining)
                except asyncio.TimeoutError:
                    status[index] = "timeout"
                    stopped = "deadline"
                    break
                except DeadKernelError:
                    status[index] = "died"
                    stopped = "died"
                    break
                except CellTimeoutError:
                    status[index] = "timeout"
                    continue
                except Exception as exc:  # noqa: BLE001 -- a protocol error from a misbehaving kernel
                    status[index] = "died"
                    stopped = f"died: {type(exc).__name__}"
                    break
                if os.environ.get("REVAD_DEBUG"):
                    print(f"cell {index}: {time.monotonic() - t0:.2f} s", file=sys.stderr, flush=True)
                if index in client.timed_out:
                    status[index] = "timeout"
                elif any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
                    status[index] = "error"
                else:
                    status[index] = "ok"
                if status[index] == "ok" and not await client.km.is_alive():
                    status[index] = "died"
                    stopped = "died"
                    break
        finally:
            try:
                await asyncio.wait_for(client._async_cleanup_kernel(), timeout=15)
            except Exception:  # noqa: BLE001
                pass

    try:
        asyncio.run(asyncio.wait_for(run_all(), timeout=limits.timeout_s + 200))
    except Exception as exc:  # noqa: BLE001
        stopped = stopped or f"deadline ({type(exc).__name__})"
    finally:
        try:
            if km.provisioner and km.provisioner.process:
                km.provisioner.process.kill()
        except Exception:  # noqa: BLE001
            pass
        sandbox.kill_uid(uid)
    return {"status": status, "stopped": stopped, "truncated": sorted(client.truncated)}


# ------------------------------------------------------------------------------------------ judging

def load_payload(cell) -> tuple[dict | None, str | None]:
    import torch
    blobs = [o["data"][PROBE_MIME] for o in cell.get("outputs", [])
             if o.get("output_type") == "display_data" and PROBE_MIME in o.get("data", {})]
    if not blobs:
        return None, None
    blob = blobs[-1]
    if not isinstance(blob, str) or len(blob) > MAX_PROBE_BYTES:
        return None, "The values your code returned were too large to record."
    try:
        payload = torch.load(io.BytesIO(base64.b64decode(blob)), weights_only=True, map_location="cpu")
    except Exception as exc:  # noqa: BLE001
        return None, f"The values your code returned could not be read back ({type(exc).__name__})."
    if not isinstance(payload, dict) or not isinstance(payload.get("results"), list):
        return None, "The values your code returned could not be read back."
    return payload, None


def judge_cell(calls: list, payload: dict | None, points: float) -> tuple[float, list[str], bool]:
    """(score, messages, failed) for one test cell, decided here from the probe's data."""
    from .feedback import CheckFailed
    from .registry import CHECKS

    messages, failed, partial = [], False, []
    results = payload["results"] if payload else []
    for i, (check, expr, params) in enumerate(calls):
        if i >= len(results):
            failed = True
            continue
        try:
            verdict = CHECKS[check].decide(results[i], **params)
        except CheckFailed as exc:
            failed = True
            messages.append(str(exc))
        except RecursionError:
            failed = True
            messages.append("The values your code returned could not be checked (they are nested too deeply).")
        except Exception as exc:  # noqa: BLE001 -- malformed data: the learner's values, not the grader, are at fault
            failed = True
            messages.append(f"The values your code returned for `{expr}` have an unexpected form, so they could not be "
                            f"checked ({type(exc).__name__}: {str(exc)[:200]}).")
        else:
            if isinstance(verdict, (int, float)) and not isinstance(verdict, bool) and math.isfinite(verdict):
                partial.append(float(verdict))
                # A partial verdict (nb03's Verdict) explains itself: keep its report for the feedback.
                report = getattr(verdict, "report", None)
                if callable(report) and not getattr(verdict, "passed", True):
                    messages.append(str(report()))
    if failed:
        return 0.0, list(dict.fromkeys(messages)), True
    if partial:
        return max(0.0, min(points, min(partial))), messages, False
    return float(points), messages, False


# ------------------------------------------------------------------------------------------ grading

def _redact(text: str, secrets: list[str]) -> str:
    if not secrets or not isinstance(text, str):
        return text
    lines = text.splitlines(keepends=True)
    return "".join("[hidden test code removed]\n" if any(s in line for s in secrets) else line for line in lines)


def _redact_outputs(cell, secrets: list[str]) -> None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            out["text"] = _redact("".join(out["text"]) if isinstance(out["text"], list) else out["text"], secrets)
        elif out.get("output_type") == "error":
            out["evalue"] = _redact(out.get("evalue", ""), secrets)
            out["traceback"] = [_redact(t, secrets) for t in out.get("traceback", [])]
        elif "data" in out:
            for mime, value in list(out["data"].items()):
                if isinstance(value, str) and mime.startswith("text/"):
                    out["data"][mime] = _redact(value, secrets)


STOP_MESSAGES = {
    "died": "The notebook's kernel stopped at the cell shown (it crashed, ran out of memory, or your code called "
            "os._exit / killed the process). Tests after that point could not run and score 0.",
    "deadline": "Your notebook ran longer than the {timeout} s the grader allows for the whole notebook, so it was "
                "stopped. Tests after that point could not run and score 0. Look for an infinite loop or a very slow cell.",
}


def grade_notebook(name: str, path: Path | None, spec_nb: dict, job: dict, scratch: Path, out_dir: Path) -> dict:
    """Everything about one notebook of the submission: scores per grade_id, messages, flags."""
    from .registry import CHECKS

    known = set(CHECKS)
    result = {"notebook": name, "grades": {}, "comments": {}, "messages": [], "flags": [], "status": "graded"}
    grade_cells = [c for c in spec_nb["cells"] if c["grade"]]
    for c in grade_cells:
        result["grades"][c["grade_id"]] = {"score": 0.0, "max": float(c["points"]), "messages": []}
    for c in spec_nb["cells"]:
        if c["solution"]:
            result["comments"][c["grade_id"]] = None

    if path is None:
        result["status"] = "missing"
        result["messages"].append(f"{name}.ipynb is missing from your submission, so none of its tests could run "
                                  "(0 points). Submit the notebook under that name.")
        return result
    try:
        nb = read_notebook(path)
    except Unreadable as exc:
        result["status"] = "unreadable"
        result["messages"].append(str(exc) + " Its tests could not run (0 points).")
        return result

    flags, state = structural_flags(nb, spec_nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            for target in static_patches(cell.source):
                flags.append({"code": "patched", "detail": f"the learner's code assigns to {target}"})
    by_id = {c["grade_id"]: c for c in spec_nb["cells"] if c.get("grade_id")}
    answered = {nbgrader_meta(c).get("grade_id"): c for c in nb.cells if nbgrader_meta(c).get("grade_id")}
    for gid, spec_cell in by_id.items():
        if spec_cell["solution"]:
            cell = answered.get(gid)
            if cell is None or _norm(cell.source) == _norm(spec_cell["release_source"]):
                result["comments"][gid] = "No response."
    if not any(c.cell_type == "code" and c.source.strip() for c in nb.cells):
        result["messages"].append(f"{name}.ipynb has no code in it: nothing to grade (0 points).")

    calls, untrusted = {}, []
    for c in grade_cells:
        if c["cell_type"] != "code" or c["solution"]:
            continue
        try:
            calls[c["grade_id"]] = parse_check_calls(c["source"], known)
        except (ValueError, SyntaxError) as exc:
            calls[c["grade_id"]] = None
            result["messages"].append(f"(instructor) {c['grade_id']}: {exc}")
        if not calls[c["grade_id"]]:
            untrusted.append(c["grade_id"])
    modules = sorted({m for c in grade_cells for m in check_modules(c["source"])})

    run_nb, test_index, probe_index = build_execution(nb, spec_nb, state, calls, modules)
    report = execute(run_nb, scratch, job, result["messages"])
    status, stopped = report["status"], report["stopped"]
    if os.environ.get("REVAD_DEBUG"):
        nbformat.write(run_nb, out_dir / f"{name}.run.ipynb")
        (out_dir / f"{name}.status.json").write_text(json.dumps(report, default=str))
    if stopped and stopped.startswith("kernel_start"):
        result["messages"].append("The grader could not start Python for your notebook, so no test ran (0 points). "
                                  "Your instructor has the details.")
        result["flags"].append({"code": "grader_error", "detail": stopped[:500]})
    elif stopped:
        reason = "died" if stopped.startswith("died") else "deadline"
        where = next((i for i, s in status.items() if s in ("died", "timeout")), None)
        result["messages"].append(STOP_MESSAGES[reason].format(timeout=job["limits"]["timeout_s"])
                                  + (f" (cell {where} of the graded notebook)" if where is not None else ""))
    timed = [i for i, s in status.items() if s == "timeout"]
    if timed:
        result["messages"].append(f"{len(timed)} cell(s) ran longer than {job['limits']['cell_timeout_s']} s and were "
                                  "interrupted.")
    if report["truncated"]:
        result["messages"].append("Some cells printed more output than the grader keeps; the rest of it was dropped.")

    patched = set()
    for gid, tindex in test_index.items():
        spec_cell = by_id[gid]
        points = float(spec_cell["points"])
        kernel_failed = status[tindex] != "ok"
        if gid in untrusted:
            score = 0.0 if kernel_failed else points
            msgs = [] if not kernel_failed else ["This test failed when your notebook ran (see the output)."]
            result["grades"][gid] = {"score": score, "max": points, "messages": msgs, "trusted": False}
            continue
        pindex = probe_index[gid]
        payload, problem = load_payload(run_nb.cells[pindex])
        if payload is None:
            if status[tindex] == "not_run" or status[pindex] == "not_run":
                msgs = ["This test did not run: the notebook stopped before reaching it."]
            elif status[pindex] in ("timeout", "died"):
                msgs = ["Your code was stopped while this test ran: it took longer than the grader allows, or crashed."]
            else:
                msgs = [problem or "This test could not record what your code returned (was the output of the test "
                                   "cell replaced or the kernel changed?)."]
            score, failed = 0.0, True
        else:
            score, msgs, failed = judge_cell(calls[gid], payload, points)
            patched.update(p for p in payload.get("patched", []) if isinstance(p, str))
        result["grades"][gid] = {"score": score, "max": points, "messages": msgs, "trusted": True,
                                 "kernel_passed": not kernel_failed}
        if status[tindex] in ("ok", "error") and kernel_failed != failed:
            flags.append({"code": "verdict_mismatch",
                          "detail": f"{gid}: the learner's kernel says {'fail' if kernel_failed else 'pass'}, the trusted check says "
                                    f"{'fail' if failed else 'pass'}"})
    for p in sorted(patched):
        flags.append({"code": "patched", "detail": f"replaced in the kernel: {p}"})
    result["flags"] = result["flags"] + flags

    # the autograded notebook: no setup/probe cells, release test code, trusted outcomes as outputs
    secrets = [line for c in grade_cells for line in hidden_lines(c["source"])]
    graded = nbformat.v4.new_notebook(metadata=nb.metadata if isinstance(nb.metadata, dict) else {})
    graded.metadata = nbformat.from_dict(copy.deepcopy(dict(nb.metadata)))
    for index, cell in enumerate(run_nb.cells):
        role = cell.metadata.get("revad", {}).get("role")
        if role:
            continue
        cell = copy.deepcopy(cell)
        gid = nbgrader_meta(cell).get("grade_id")
        if gid in result["grades"] and gid in test_index:
            g = result["grades"][gid]
            cell.source = by_id[gid]["release_source"]
            if g["score"] >= g["max"]:
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"Passed: {g['score']:g} / {g['max']:g} points.\n")]
            elif g["messages"] and g["score"] > 0:
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                       text=f"Partly right: {g['score']:g} / {g['max']:g} points.\n" + "\n".join(g["messages"]) + "\n")]
            else:
                text = "\n".join(g["messages"]) or "This test did not pass."
                cell.outputs = [nbformat.v4.new_output("error", ename="CheckFailed", evalue=text,
                                                       traceback=[f"CheckFailed: {text}"])]
        elif cell.cell_type == "code":
            _redact_outputs(cell, secrets)
            if status.get(index) == "timeout":
                cell.outputs.append(nbformat.v4.new_output("stream", name="stderr", text=f"[stopped by the grader after {job['limits']['cell_timeout_s']} s]\n"))
            if index in report["truncated"]:
                cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text="[more output was dropped by the grader]\n"))
        graded.cells.append(cell)
    _fresh_ids(graded)
    (out_dir / "autograded").mkdir(parents=True, exist_ok=True)
    nbformat.write(graded, out_dir / "autograded" / f"{name}.ipynb")
    return result


_EXPORTER = None


def write_feedback(name: str, result: dict, out_dir: Path, spec_nb: dict) -> None:
    """Feedback HTML with nbgrader's feedback template: scores, trusted messages, no hidden tests."""
    import nbgrader
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor

    path = out_dir / "autograded" / f"{name}.ipynb"
    if path.exists():
        nb = nbformat.read(path, as_version=4)
    else:
        nb = nbformat.v4.new_notebook()
    notes = result["messages"]
    if notes:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell("**From the grader:**\n\n" + "\n".join(f"- {m}" for m in notes)))
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        gid = meta.get("grade_id")
        if gid in result["grades"]:
            meta["score"] = result["grades"][gid]["score"]
            meta["points"] = result["grades"][gid]["max"]
        if gid in result["comments"]:
            meta["comment"] = result["comments"][gid]
    score = sum(g["score"] for g in result["grades"].values())
    max_score = sum(g["max"] for g in result["grades"].values())
    templates = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"
    css = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "static" / "node_modules" / "bootstrap" / "dist" / "css"
    global _EXPORTER
    if _EXPORTER is None:
        _EXPORTER = HTMLExporter(template_name="feedback", extra_template_basedirs=[str(templates)],
                                 extra_template_paths=[str(css)])
        _EXPORTER.register_preprocessor(CSSHTMLHeaderPreprocessor(), enabled=True)
    exporter = _EXPORTER
    resources = {"nbgrader": {"notebook": name, "score": score, "max_score": max_score, "late_penalty": 0}}
    html, _ = exporter.from_notebook_node(nb, resources=resources)
    (out_dir / "feedback").mkdir(parents=True, exist_ok=True)
    (out_dir / "feedback" / f"{name}.html").write_text(html)


def grade_submission(job: dict) -> dict:
    spec = json.loads(Path(job["spec"]).read_text())
    for module in spec["modules"]:
        importlib.import_module(module)
    folder = Path(job["submission"])
    out_dir = Path(job["out"])
    found, messages = find_notebooks(folder, spec["notebooks"])
    result = {"student": job["student"], "assignment": spec["assignment"], "notebooks": {}, "messages": messages,
              "sandbox": job["sandbox_text"]}
    if not folder.is_dir() or not any(folder.iterdir()):
        result["messages"].append("Your submission is empty: no files were handed in (0 points).")
    elif not any(p for p in found.values()):
        listing = ", ".join(sorted(p.name for p in folder.iterdir())[:10]) or "nothing"
        result["messages"].append(f"None of the assignment's notebooks ({', '.join(n + '.ipynb' for n in spec['notebooks'])}) "
                                  f"is in your submission (found: {listing}).")
    for name, spec_nb in spec["notebooks"].items():
        scratch = Path(job["scratch"]) / name.replace("/", "_")[:40]
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)
        (scratch / "work").mkdir(parents=True)
        if found[name] is not None:
            for item in folder.iterdir():  # the learner's own files travel with the notebook
                if item.is_file() and item.stat().st_size <= 64 * 2**20 and item.suffix != ".ipynb":
                    shutil.copy2(item, scratch / "work" / item.name)
        try:
            nb_result = grade_notebook(name, found[name], spec_nb, job, scratch, out_dir)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        result["notebooks"][name] = nb_result
        write_feedback(name, nb_result, out_dir, spec_nb)
    return result


def run_job(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text())
    out = Path(job["out"])
    out.mkdir(parents=True, exist_ok=True)
    try:
        result = grade_submission(job)
    except Exception:  # noqa: BLE001 -- the parent records a zero with this, and grading goes on
        (out / "error.txt").write_text(traceback.format_exc())
        return 1
    tmp = out / "result.json.tmp"
    tmp.write_text(json.dumps(result, indent=1, default=str))
    os.replace(tmp, out / "result.json")
    return 0


def serve() -> int:
    """A long-lived worker: one job file path per line on stdin, "done <path>" on stdout when graded.
    (Importing nbclient, nbconvert and torch costs seconds: pay it once per worker, not per submission.)"""
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stray prints from libraries go to the log, not into the protocol
    import nbclient  # noqa: F401  -- warm up
    import nbconvert  # noqa: F401
    import torch  # noqa: F401
    protocol.write("ready\n")
    for line in sys.stdin:
        path = line.strip()
        if not path:
            continue
        rc = run_job(path)
        protocol.write(f"done {rc} {path}\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--serve":
        return serve()
    return run_job(argv[0])


if __name__ == "__main__":
    sys.exit(main())
