"""Does the compile judge compile what a real launch compiles? On a machine with a CUDA GPU: each kernel below is
launched for real on the GPU and also compiled the judge's way (coursetools.gpu_compile: the recorded text, the
signature Triton's launch binder gives for the check's arguments, ahead of time for this GPU's arch); the two
verdicts are printed side by side and must agree.

    python -m benchmarks.launch_specialization
"""

from __future__ import annotations

import linecache
import sys

import torch
import triton
import triton.language as tl  # noqa: F401 - the kernels' text names it

from coursetools.gpu_compile import compile_record, kernel_record, launch_signature

KERNELS = {
    "n a run-time int": """
def double(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * 2, mask=offsets < n)
""",
    "n: tl.constexpr": """
def double(x_ptr, y_ptr, n: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * 2, mask=offsets < n)
""",
    "n.to(tl.int64)": """
def double(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n.to(tl.int64)) * 2, mask=offsets < n)
""",
    "static_range to a constexpr n": """
def double(x_ptr, y_ptr, n: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    for start in tl.static_range(0, n, BLOCK_SIZE):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * 2, mask=offsets < n)
""",
}
SIZES = (1, 7, 32, 40)


def jit(name: str, text: str):
    filename = f"<launch_specialization {name}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    space = {"tl": tl, "triton": triton}
    exec(compile(text, filename, "exec"), space)
    return triton.jit(space["double"])


def real_launch(kernel, n: int) -> str:
    x = torch.arange(n, dtype=torch.float32, device="cuda")
    y = torch.zeros_like(x)
    try:
        kernel[(triton.cdiv(n, 16),)](x, y, n, BLOCK_SIZE=16)
        torch.cuda.synchronize()
    except Exception as error:  # noqa: BLE001 - the verdict is the point
        return f"fails ({type(error).__name__})"
    return "ok" if torch.equal(y, x * 2) else "wrong values"


def main() -> int:
    if not torch.cuda.is_available():
        print("launch_specialization: no CUDA GPU here; nothing to compare.")
        return 0
    major, minor = torch.cuda.get_device_capability()
    arch = major * 10 + minor
    print(f"{torch.cuda.get_device_name()} (sm_{arch}), torch {torch.__version__}, Triton {triton.__version__}")
    print(f"{'kernel':32s} {'n':>3s}  {'real launch':24s} judge")
    disagree = 0
    for name, text in KERNELS.items():
        kernel = jit(name, text)
        record = kernel_record(kernel)
        for n in SIZES:
            real = real_launch(kernel, n)
            answer = compile_record(record, *launch_signature(record, ["*fp32", "*fp32", n], {"BLOCK_SIZE": 16}), arch)
            judge = "ok" if answer["ok"] else f"fails: {str(answer.get('why'))[:60]}"
            same = (real == "ok") == bool(answer["ok"])
            disagree += not same
            print(f"{name:32s} {n:3d}  {real:24s} {judge}{'' if same else '   <-- DISAGREE'}")
    print(f"{disagree} disagreement(s)")
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main())
