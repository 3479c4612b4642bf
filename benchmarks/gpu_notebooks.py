"""Run notebooks 05 and 06's solutions on a real GPU, cell by cell, and report what the compiler made of each kernel.

For a machine with a CUDA GPU (no notebook server needed: each code cell is executed in one namespace, the way
the kernel would). It prints, per cell, whether it ran and what it printed; then, for every Triton kernel the
notebook compiled, its registers per thread, spills and shared memory as the GPU's compiler reports them; and
two facts the CPU-only course states about hardware: a loop accumulator that changes type does not compile, and
how the GPU rounds float32 to bfloat16 in a Triton kernel.

    python -m benchmarks.gpu_notebooks [--only 05|06]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import linecache
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = {
    "05": ROOT / "solutions/05-gpu-functions/gpu_functions.ipynb",
    "06": ROOT / "solutions/06-fused-cross-entropy/fused_cross_entropy.ipynb",
}
CELL_SECONDS = 120


def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError(f"cell ran past {CELL_SECONDS} s")


def run_notebook(path: Path) -> dict[str, Any]:
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    namespace: dict[str, Any] = {"__name__": "__main__"}
    failed = 0
    for index, cell in enumerate(cells):
        source = "".join(cell["source"])
        if any(line.lstrip().startswith(("%", "!")) for line in source.splitlines()):
            source = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
        out = io.StringIO()
        start = time.perf_counter()
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(CELL_SECONDS)
        try:
            with contextlib.redirect_stdout(out):
                filename = f"<{path.stem} cell {index}>"
                # as IPython does: Triton reads a kernel's source through inspect, which reads linecache
                linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
                exec(compile(source, filename, "exec"), namespace)
            status = "ok"
        except BaseException as error:  # noqa: BLE001 - report every cell, go on
            failed += 1
            first = (str(error).strip().splitlines() or [""])[0][:300]
            status = f"FAILED {type(error).__name__}: {first}"
            tail = traceback.format_exc().strip().splitlines()[-6:]
            status += "\n      " + "\n      ".join(tail)
        finally:
            signal.alarm(0)
        printed = out.getvalue().strip()
        print(f"  [{index:2d}] {time.perf_counter() - start:6.2f} s {status}")
        for line in printed.splitlines()[:14]:
            print(f"        | {line[:160]}")
    return {"namespace": namespace, "failed": failed, "cells": len(cells)}


def compiled_report(namespace: dict[str, Any]) -> None:
    from triton.runtime.jit import JITFunction

    for name, obj in sorted(namespace.items()):
        if not isinstance(obj, JITFunction):
            continue
        for kernel in _compiled(obj):
            with contextlib.suppress(Exception):
                kernel._init_handles()
            signature = getattr(kernel, "src", None)
            signature = getattr(signature, "signature", None) or getattr(kernel.metadata, "signature", "")
            print(
                f"  {name:28s} regs/thread {getattr(kernel, 'n_regs', '?'):>4}"
                f" spills {getattr(kernel, 'n_spills', '?'):>3}"
                f" shared {getattr(kernel.metadata, 'shared', '?'):>6} B"
                f"  warps {getattr(kernel.metadata, 'num_warps', '?')}"
                f"  ptx {len(kernel.asm.get('ptx', ''))} chars  {_short(signature)}"
            )


def _compiled(fn: Any) -> list[Any]:
    found: list[Any] = []
    for cache in getattr(fn, "device_caches", {}).values():
        table = cache[0] if isinstance(cache, tuple) else cache
        if isinstance(table, dict):
            found.extend(table.values())
    found.extend(getattr(fn, "cache", {}).get(0, {}).values() if isinstance(getattr(fn, "cache", None), dict) else [])
    return found


def _short(signature: Any) -> str:
    if isinstance(signature, dict):
        return ", ".join(f"{v}" for v in signature.values())
    return str(signature)[:120]


LOOP_TYPE_KERNEL = '''
import triton
import triton.language as tl

@triton.jit
def python_float_accumulators(logits_ptr, lse_ptr, stride, V, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    m = -float("inf")
    s = 0.0
    for start in range(0, V, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * stride + cols, mask=cols < V, other=-float("inf")).to(lse_ptr.dtype.element_ty)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    tl.store(lse_ptr + row, m + tl.log(s))

@triton.jit
def to_bf16(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n).to(tl.bfloat16), mask=offs < n)
'''


def hardware_facts() -> None:
    import torch

    path = Path("/tmp/gpu_facts_kernels.py")
    path.write_text(LOOP_TYPE_KERNEL)
    sys.path.insert(0, str(path.parent))
    import gpu_facts_kernels as k  # noqa: E402

    for dtype in (torch.float32, torch.float64):
        logits = torch.randn(3, 50, dtype=dtype, device="cuda")
        lse = torch.empty(3, dtype=dtype, device="cuda")
        try:
            k.python_float_accumulators[(3,)](logits, lse, logits.stride(0), 50, BLOCK_V=16)
            ok = torch.allclose(lse, logits.logsumexp(1))
            print(f"  accumulators started as Python floats, {dtype}: compiled and ran, right: {ok}")
        except Exception as error:  # noqa: BLE001
            lines = [line for line in str(error).splitlines() if "Loop-carried" in line or "Error" in line]
            print(
                f"  accumulators started as Python floats, {dtype}: {type(error).__name__}: {(lines or [''])[-1][:200]}"
            )
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1 << 20, generator=gen, dtype=torch.float32).cuda()
    y = torch.empty(x.numel(), dtype=torch.bfloat16, device="cuda")
    k.to_bf16[(x.numel() // 1024,)](x, y, x.numel(), BLOCK=1024)
    nearest = x.to(torch.bfloat16)
    truncated = (x.view(torch.int32) & ~0xFFFF).view(torch.float32).to(torch.bfloat16)
    print(
        f"  float32 -> bfloat16 in a Triton kernel on this GPU, {x.numel()} values: "
        f"equal to round-to-nearest {float((y == nearest).float().mean()):.4f},"
        f" to truncation {float((y == truncated).float().mean()):.4f}"
    )


def _stub_if_missing(*names: str) -> None:
    """Plots are not what this script checks: a machine without matplotlib gets a stand-in that draws nothing."""
    from unittest import mock

    try:
        __import__(names[0])
    except ImportError:
        print(f"  ({names[0]} is not installed here: plots are skipped)")
        for name in names:
            sys.modules[name] = mock.MagicMock()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(NOTEBOOKS))
    args = parser.parse_args()
    import torch
    import triton

    if not torch.cuda.is_available():
        print("no CUDA GPU visible: this script is for a GPU machine")
        return 2
    print(
        f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()},"
        f" Python {sys.version.split()[0]}"
    )
    sys.path.insert(0, str(ROOT))
    _stub_if_missing("matplotlib", "matplotlib.pyplot")
    failed = 0
    for key, path in NOTEBOOKS.items():
        if args.only and key != args.only:
            continue
        print(f"notebook {key}: {path.name}")
        result = run_notebook(path)
        failed += result["failed"]
        print(f"notebook {key}: {result['cells'] - result['failed']}/{result['cells']} cells ran; kernels compiled:")
        compiled_report(result["namespace"])
    print("hardware facts:")
    hardware_facts()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
