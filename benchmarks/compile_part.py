"""What a kernel check's judge costs in grading: the kernel's recorded text run and compiled, four ways.

    python -m benchmarks.compile_part

Row kernel of notebook 06 (the solution's), the check's visible cases (float64 and float32, one BLOCK_V), judged as
a grading worker judges it: each run of the text and each compile in a child of the kernel runners' factories
(bubblewrap, as root; without them, in this process and a local compile process):
  cold       the first kernel judged in a grading process: the factories start (torch, Triton imported)
  cached     the same kernel and cases again (a hidden test cell): run again, compile answered from the cache
  new kernel another submission's kernel, same process: its run and its two compiles, each in a child
  recompile  the same kernel with the compile cache emptied: its run and two compiles in children
Each figure is the whole judge call: the run in the interpreter (two per case, guard memory NaN then 2.0), the
compiles, the judging.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from contextlib import nullcontext  # noqa: E402

import test_nb06_checks as kernels  # noqa: E402

from autograder import nb06  # noqa: E402
from autograder.grading import kernel_sandbox, sandbox  # noqa: E402
from autograder.judges import kernel_compile, kernel_runs  # noqa: E402


def judged(data, label: str) -> float:
    start = time.perf_counter()
    verdict = nb06.check_row_lse.decide(data, cases=kernels.CASES)
    seconds = time.perf_counter() - start
    print(f"  {label:11s} {seconds:6.2f} s   ({float(verdict):g} of {verdict.points:g} points)")
    return seconds


def main() -> None:
    right = nb06.check_row_lse.probe(kernels.right, cases=kernels.CASES)
    other = {"kernel": kernels.catalogued_record("row_lse_mask_on_the_chunks_lanes")[1]}  # another kernel's text
    info = sandbox.detect()
    whole = info.active and info.as_root and info.drop_uid
    runner = kernel_sandbox.SandboxedRunner(info, sandbox.Limits(), sandbox.BASE_UID, 1, []) if whole else None
    where = "in the kernel runners' sandboxed children" if whole else "here and in a local compile process"
    arch = kernel_compile.GRADED_ARCH
    print(f"judging row_lse_kernel with its compile part (sm_{arch}), {where}, {os.cpu_count()} cores:")
    with kernel_runs.using(runner) if runner else nullcontext():
        judged(right, "cold")
        judged(right, "cached")
        judged(other, "new kernel")
        kernel_runs._compiled.clear()
        judged(right, "recompile")
    kernel_sandbox.stop_all()


if __name__ == "__main__":
    main()
