"""Triton's interpreter with its own device calls, then with coursetools.interpreter's: CPU seconds per launch of
kernels that call @triton.jit functions (tl.max, tl.sum, tl.sigmoid, a helper of their own), and the same values.

    python -m benchmarks.interpreter
"""

from __future__ import annotations

import os
import time

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from coursetools.interpreter import faster_device_calls  # noqa: E402


@triton.jit
def _twice(v):
    return v + v


@triton.jit
def row_logsumexp(x_ptr, o_ptr, N: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * N + tl.arange(0, N))
    m = tl.max(x, axis=0)
    s = tl.sum(tl.exp(x - m), axis=0)
    tl.store(o_ptr + row, m + tl.log(s) + tl.sigmoid(m) * 0)


@triton.jit
def row_helpers(x_ptr, o_ptr, N: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * N + tl.arange(0, N))
    tl.store(o_ptr + row, tl.sum(_twice(x), axis=0) + tl.max(_twice(x), axis=0))


KERNELS = {"row log-sum-exp (tl.max, tl.sum, tl.sigmoid)": row_logsumexp, "a helper of its own, twice": row_helpers}
ROWS, N, REPEATS = 256, 64, 5


def cpu_per_launch(kernel, x: torch.Tensor, out: torch.Tensor) -> float:
    kernel[(ROWS,)](x, out, N=N)  # the first launch reads the kernel's text
    start = time.process_time()
    for _ in range(REPEATS):
        kernel[(ROWS,)](x, out, N=N)
    return (time.process_time() - start) / REPEATS


def main() -> None:
    x = torch.randn(ROWS, N, generator=torch.Generator().manual_seed(0))
    stock = {}
    for name, kernel in KERNELS.items():
        out = torch.empty(ROWS)
        stock[name] = (cpu_per_launch(kernel, x, out), out)
    print(f"Triton {triton.__version__}, {ROWS} programs per launch, CPU seconds per launch (mean of {REPEATS})")
    if not faster_device_calls():
        print("coursetools.interpreter is not installed over this Triton: nothing to compare")
        return
    for name, kernel in KERNELS.items():
        out = torch.empty(ROWS)
        faster = cpu_per_launch(kernel, x, out)
        before, stock_out = stock[name]
        same = torch.equal(out, stock_out)
        print(
            f"  {name}: Triton's {before:.3f} s, faster device calls {faster:.3f} s ({before / faster:.1f}x), "
            f"values {'the same' if same else 'DIFFERENT'}"
        )


if __name__ == "__main__":
    main()
