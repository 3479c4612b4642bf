"""Time notebook 02's reference engine against PyTorch scalar-tensor autograd.

The engine is not a copy: its code is executed from the cells of the solution notebook that are
tagged `engine` (solutions/02-scalar-engine/scalar_engine.ipynb), with the nbgrader solution
markers removed -- the notebook is the one source of truth.

Workload: a chain of steps y <- tanh(y * w[i % 16] + w[(i + 1) % 16]) over 16 input Variables, so
every step adds three nodes (*, +, tanh) and the graph is one chain as deep as it is long. The
same graph is built from 0-d float64 tensors with requires_grad for PyTorch (one intra-op thread:
0-d tensors do not use more). Both are timed in this process, alternately, each size `--repeat`
times (the median is reported), in CPU time of this process (time.process_time), which other
programs on a busy machine do not inflate.

Python's cyclic garbage collector matters here: every Variable is a tracked Python object, and a
full collection scans all of them -- and every object torch brought into the process. The
benchmark therefore measures twice: with the collector on, as Python runs by default (it is
run once before each timed build, so each measurement starts from the same state), and with the
collector paused during the timed region, as `timeit` does by default. PyTorch's graph lives in
C++ and hardly notices either way.

    python -m benchmarks.engine                  # 10^4, 10^5, 10^6 nodes
    python -m benchmarks.engine --sizes 1000     # a quick run
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
import re
import statistics
import sys
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK = REPO / "solutions" / "02-scalar-engine" / "scalar_engine.ipynb"
_MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")
WIDTH = 16  # input Variables the chain cycles through
NODES_PER_STEP = 3  # *, +, tanh


def engine_source(notebook: Path = NOTEBOOK) -> str:
    """The source of the notebook's engine cells, solution markers removed."""
    nb = nbformat.read(notebook, as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code" and "engine" in c.metadata.get("tags", [])]
    if not cells:
        raise RuntimeError(f"no cell tagged 'engine' in {notebook}")
    return "\n\n".join("\n".join(line for line in src.splitlines() if not _MARKER.match(line)) for src in cells)


def load_reference_engine(notebook: Path = NOTEBOOK) -> dict:
    """Execute the engine cells in a fresh namespace; returns it (Variable, topological_order, ...)."""
    namespace: dict = {"__name__": "scalar_engine", "math": math}
    exec(compile(engine_source(notebook), str(notebook), "exec"), namespace)
    return namespace


def steps_for(nodes: int) -> int:
    return max(1, (nodes - WIDTH) // NODES_PER_STEP)


def build_engine(Variable, steps: int):
    w = [Variable(0.1 * (i % 7) - 0.3) for i in range(WIDTH)]
    y = w[0]
    for i in range(steps):
        y = (y * w[i % WIDTH] + w[(i + 1) % WIDTH]).tanh()
    return w, y


def build_torch(torch, steps: int):
    w = [torch.tensor(0.1 * (i % 7) - 0.3, dtype=torch.float64, requires_grad=True) for i in range(WIDTH)]
    y = w[0]
    for i in range(steps):
        y = torch.tanh(y * w[i % WIDTH] + w[(i + 1) % WIDTH])
    return w, y


@contextlib.contextmanager
def _collector(paused: bool):
    gc.collect()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _time(build, backend, steps: int, paused: bool) -> tuple[float, float, float]:
    """(forward seconds, backward seconds, gradient of w[0]) for one graph of `steps` steps."""
    with _collector(paused):
        start = time.process_time()
        w, y = build(backend, steps)
        built = time.process_time()
        y.backward()
        done = time.process_time()
    return built - start, done - built, float(w[0].grad)


def _time_engine(Variable, steps: int, paused: bool) -> tuple[float, float, float]:
    return _time(build_engine, Variable, steps, paused)


def _time_torch(torch, steps: int, paused: bool) -> tuple[float, float, float]:
    return _time(build_torch, torch, steps, paused)


def run(sizes: list[int], repeat: int = 3, out=sys.stdout, modes: tuple[str, ...] = ("on", "paused")) -> list[dict]:
    rows = []
    for mode in modes:
        rows += _run_mode(sizes, repeat, out, mode)
    return rows


def _run_mode(sizes: list[int], repeat: int, out, mode: str) -> list[dict]:
    import torch

    torch.set_num_threads(1)
    engine = load_reference_engine()
    Variable = engine["Variable"]
    rows = []
    paused = mode == "paused"
    print(
        f"\n== garbage collector "
        f"{'paused during the timed region (timeit convention)' if paused else 'on (Python default)'} ==",
        file=out,
    )
    print(
        f"Reference engine from {NOTEBOOK.relative_to(REPO)} (cells tagged 'engine'); torch {torch.__version__}, "
        f"Python {sys.version.split()[0]}, {repeat} runs per size (median), CPU time.",
        file=out,
    )
    print(
        f"{'nodes':>9} | {'engine fwd':>10} {'bwd':>8} {'total':>8} | {'torch fwd':>10} {'bwd':>8} {'total':>8} | "
        f"{'torch/engine':>12} | grads agree",
        file=out,
    )
    print(f"{'':>9} | {'ns/node':>10} {'':>8} {'':>8} | {'ns/node':>10}", file=out)
    for size in sizes:
        steps = steps_for(size)
        nodes = WIDTH + NODES_PER_STEP * steps
        engine_runs, torch_runs = [], []
        for _ in range(repeat):
            engine_runs.append(_time_engine(Variable, steps, paused))
            torch_runs.append(_time_torch(torch, steps, paused))
        ef = statistics.median(r[0] for r in engine_runs) / nodes * 1e9
        eb = statistics.median(r[1] for r in engine_runs) / nodes * 1e9
        tf = statistics.median(r[0] for r in torch_runs) / nodes * 1e9
        tb = statistics.median(r[1] for r in torch_runs) / nodes * 1e9
        agree = math.isclose(engine_runs[0][2], torch_runs[0][2], rel_tol=1e-9, abs_tol=1e-300)
        row = {
            "nodes": nodes,
            "engine_forward_ns": ef,
            "engine_backward_ns": eb,
            "torch_forward_ns": tf,
            "torch_backward_ns": tb,
            "ratio": (tf + tb) / (ef + eb),
            "agree": agree,
            "gc": mode,
        }
        rows.append(row)
        print(
            f"{nodes:>9} | {ef:>10.0f} {eb:>8.0f} {ef + eb:>8.0f} | {tf:>10.0f} {tb:>8.0f} {tf + tb:>8.0f} | "
            f"{row['ratio']:>11.1f}x | {'yes' if agree else 'NO'}",
            file=out,
        )
    by_size = {r["nodes"]: r for r in rows}
    pairs = [(a, b) for a in by_size for b in by_size if 9 <= b / a <= 11]
    for a, b in pairs:
        for name, key in (("engine", "engine"), ("torch", "torch")):
            per_a = by_size[a][f"{key}_forward_ns"] + by_size[a][f"{key}_backward_ns"]
            per_b = by_size[b][f"{key}_forward_ns"] + by_size[b][f"{key}_backward_ns"]
            print(
                f"scaling {a} -> {b} nodes ({b / a:.0f}x the nodes): {name} takes {per_b * b / (per_a * a):.1f}x the "
                f"time",
                file=out,
            )
    deepest = max(rows, key=lambda r: r["nodes"])
    print(
        f"deepest chain: {deepest['nodes']} nodes deep, differentiated without error "
        f"(gradient agrees with PyTorch: {'yes' if deepest['agree'] else 'NO'}).",
        file=out,
    )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000], help="graph sizes (nodes)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per size; the median is reported")
    parser.add_argument("--gc", choices=["on", "paused", "both"], default="both", help="garbage collector setting(s)")
    args = parser.parse_args(argv)
    run(args.sizes, args.repeat, modes=("on", "paused") if args.gc == "both" else (args.gc,))


if __name__ == "__main__":
    main()
