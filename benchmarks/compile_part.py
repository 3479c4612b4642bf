"""What the "compiles for a GPU" part of a kernel check costs in grading: the judge's compile, four ways.

    python -m benchmarks.compile_part

Row kernel of notebook 06 (the solution's), the check's visible cases (float64 and float32, one BLOCK_V):
  cold       the first kernel judged in a grading process: the compile process starts, Triton's backend loads
  cached     the same kernel and cases again (a hidden test cell): answered from the judge's own cache
  new kernel another submission's kernel, same process: two compiles in a warm compile process
  recompile  the same kernel with the judge's cache emptied: Triton's on-disk cache in the compile process answers
Each figure is the whole judge call (the interpreter's parts are decided from recorded data and cost little).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import test_nb06_checks as kernels  # noqa: E402

from autograder import nb06  # noqa: E402
from autograder.judges import kernel_compile  # noqa: E402


def judged(data, label: str) -> float:
    start = time.perf_counter()
    verdict = nb06.check_row_lse.decide(data, cases=kernels.CASES)
    seconds = time.perf_counter() - start
    print(f"  {label:11s} {seconds:6.2f} s   ({float(verdict):g} of {verdict.points:g} points)")
    return seconds


def main() -> None:
    right = nb06.check_row_lse.probe(kernels.right, cases=kernels.CASES)
    other = nb06.check_row_lse.probe(kernels.mask_on_the_row, cases=kernels.CASES)
    print(f"judging row_lse_kernel with its compile part (sm_{kernel_compile.GRADED_ARCH}), {os.cpu_count()} cores:")
    judged(right, "cold")
    judged(right, "cached")
    judged(other, "new kernel")
    kernel_compile._answers.clear()
    judged(right, "recompile")


if __name__ == "__main__":
    main()
