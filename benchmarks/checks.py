"""How long each exercise's checks take: every test cell of a solution notebook (visible and hidden tests),
run on the reference solution, on one CPU thread.

    python -m benchmarks.checks [03-custom-functions 05-gpu-functions]      (or: make bench-checks)

Target: under 2 s per exercise on one core.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import linecache
import os
import statistics
import sys
import time
import warnings

os.environ.setdefault("MPLBACKEND", "Agg")

import nbformat  # noqa: E402
import torch  # noqa: E402

from autograder.coursedir import SOLUTIONS  # noqa: E402
from autograder.submissions import solution_sources  # noqa: E402

TARGET_S = 2.0


def _compile(source: str, name: str):
    """compile(), with the source kept in linecache: @triton.jit reads a kernel's source with inspect."""
    filename = f"<{name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    return compile(source, filename, "exec")


def _namespace(notebook) -> dict:
    """The notebook's set-up cell, the helper cells its answers use, and every answer, executed."""
    nb = nbformat.read(notebook, as_version=4)
    ns: dict = {"__name__": "__bench__"}
    code = [c for c in nb.cells if c.cell_type == "code"]
    exec(_compile(code[0].source, "setup"), ns)
    for cell in code:  # helpers that answers call (e.g. analytical_jacobian): the functions of worked examples
        if "nbgrader" not in cell.metadata and cell.source.lstrip().startswith("def "):
            tree = ast.parse(cell.source)
            tree.body = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
            exec(compile(tree, "helper", "exec"), ns)
    for grade_id, source in solution_sources(notebook).items():
        exec(_compile(source, grade_id), ns)
    return ns, [c for c in code if c.metadata.get("nbgrader", {}).get("grade")]


def bench(assignment: str, repeat: int = 3) -> list[tuple[str, float, float]]:
    (notebook,) = sorted((SOLUTIONS / assignment).glob("*.ipynb"))
    ns, test_cells = _namespace(notebook)
    rows = []
    for cell in test_cells:
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                exec(_compile(cell.source, cell.metadata.nbgrader.grade_id), ns)
            times.append(time.perf_counter() - start)
        rows.append((cell.metadata.nbgrader.grade_id, statistics.median(times), times[0]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("assignments", nargs="*", default=["03-custom-functions"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} thread, "
        f"CUDA {'available' if torch.cuda.is_available() else 'not available (CUDA parts skipped)'}"
    )
    slow = []
    for assignment in args.assignments:
        print(f"\n{assignment}: seconds per test cell (visible + hidden tests), median of {args.repeat}", flush=True)
        for grade_id, median, worst in bench(assignment, args.repeat):
            flag = "" if median < TARGET_S else f"   over the {TARGET_S:g} s target"
            print(f"  {grade_id:28s} {median:6.3f} s   (first run, with one-off start-up costs: {worst:.3f} s){flag}")
            if median >= TARGET_S:
                slow.append(grade_id)
    sys.exit(1 if slow else 0)


if __name__ == "__main__":
    main()
