"""Compile a Triton kernel for a GPU on a machine without one, and read what the compiler reports.

Triton compiles ahead of time for a named GPU target with no driver and no device: the source goes to Triton's
IR, then PTX, then a cubin made by the ptxas Triton ships. Triton's interpreter, which runs the course's kernels
on a CPU, forgives what this compiler does not (a loop variable whose type changes, ``break``, a global that is
not a ``tl.constexpr``); this module shows those errors without a GPU. It says nothing about numerics or speed on
the device: nothing runs.

    record = kernel_record(kernel)                      # the kernel's source, its helpers and globals: plain data
    result = compile_record(record, signature, constexprs, arch=90)
    result["ok"], result["why"], result["line"]         # a compile error cut to the line that says why
    result["registers"], result["spill_bytes"], ...     # ptxas's own report (-v) when it compiled

The record is coursetools.kernel_text's (the one text every judge reads), rebuilt from its text here; a record
the screen (coursetools.kernel_screen) refuses is never compiled. Only the standard library, Triton and those two
modules are imported here: ``CompileProcess`` runs this module in a fresh process of its own (``serve``: one JSON
request per line on stdin, one answer per line on stdout), since Triton's interpreter patches the process it runs
in. (The grader compiles learners' kernels in its sandbox instead: autograder/probes/kernel_runner.py.)
"""

from __future__ import annotations

import ast
import contextlib
import functools
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

from coursetools.kernel_screen import screen
from coursetools.kernel_text import rebuild, take


def kernel_record(kernel: Any) -> dict:
    """The kernel's record (coursetools.kernel_text.take): the one text every judge reads."""
    return take(kernel)


# --------------------------------------------------------------------------------------------- compiling


def launch_signature(record: dict, positional: Sequence[Any], constexprs: dict[str, Any]) -> tuple[dict, dict]:
    """(signature, constexprs) of a launch `kernel[grid](*positional, **constexprs)` for the recorded kernel's own
    parameter names: positional arguments in order (a pointer's type such as "*fp32", or a number's value: the
    compile specializes it as a real launch would, see `specialize`), the named constexprs, other parameters'
    constant defaults."""
    try:
        fn = ast.parse(record["functions"][record["entry"]]).body[0]
    except (KeyError, TypeError, SyntaxError, IndexError):
        return {}, dict(constexprs)
    if not isinstance(fn, ast.FunctionDef):
        return {}, dict(constexprs)
    params = [a.arg for a in fn.args.args]
    defaults = dict(zip(params[len(params) - len(fn.args.defaults) :], fn.args.defaults))
    signature, values = dict(zip(params, positional)), {}
    for name in params[len(positional) :]:
        if name in constexprs:
            signature[name], values[name] = "constexpr", constexprs[name]
        elif name in defaults and isinstance(defaults[name], ast.Constant):
            signature[name], values[name] = "constexpr", defaults[name].value
    return signature, values


def compile_record(record: dict, signature: dict[str, str], constexprs: dict[str, Any], arch: int = 90) -> dict:
    """Compile the recorded kernel for sm_<arch> with this signature ({"x_ptr": "*fp32", "n": "i32", "BLOCK":
    "constexpr"}) and these constexpr values. {"ok": True, registers, spill_bytes, shared_bytes, ptx_chars} or
    {"ok": False, "why": the compiler's reason, "line": the kernel's line it points at, "error": its type}."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    try:
        kernel = rebuild(record, interpreted=False)
        target = GPUTarget("cuda", arch, 32)
        signature, constexprs, attrs = specialize(kernel, signature, constexprs, target)
        source = ASTSource(fn=kernel, signature=signature, constexprs=constexprs, attrs=attrs)
        compiled, log = _compile_keeping_ptxas_log(source, target)
    except Exception as error:  # noqa: BLE001 - every compile error is the answer, as the compiler gives it
        why, line = compile_error_summary(error)
        return {"ok": False, "why": why, "line": line, "error": type(error).__name__}
    report = ptxas_report(compiled.asm["ptx"], arch, log)
    report.update(ok=True, ptx_chars=len(compiled.asm["ptx"]), shared_bytes=int(compiled.metadata.shared))
    return report


class _Pointer:
    """What Triton's launch reads of a tensor argument to specialize it: its dtype and its address (16-byte aligned,
    as a tensor PyTorch allocates is)."""

    def __init__(self, dtype: Any) -> None:
        self.dtype = dtype

    def data_ptr(self) -> int:
        return 0


# A number of each type that Triton specializes neither as 1 nor as a multiple of 16: a bare type's stand-in, and the
# class every such number falls in (specialization_class).
_UNSPECIALIZED = {"i32": 3, "i64": 2**33 + 3, "u64": 2**63 + 3, "fp32": 0.5, "fp64": 0.5}


def _launch_value(given: Any) -> Any:
    """The argument a launch would pass for a signature entry: a pointer for "*fp32", a number as it is; a bare type
    ("i32", "fp32") is a number Triton does not specialize (neither 1 nor a multiple of 16)."""
    if isinstance(given, str) and given.startswith("*"):
        return _Pointer(given[1:])  # Triton reads the dtype's name: "fp32", "i64", "bf16"
    return _UNSPECIALIZED.get(given, given) if isinstance(given, str) else given


def specialization_class(given: Any) -> Any:
    """A launch's number replaced by the one Triton's launch binder treats alike (`specialize`): an integer by its
    type (i32, i64, u64) and whether it is 1 or a multiple of 16; a float by 0.5 (a float parameter is fp32 whatever
    its value). Anything else as it is. tests/test_gpu_compile.py checks this against the binder."""
    if isinstance(given, bool) or not isinstance(given, (int, float)):
        return given
    if isinstance(given, float):
        return _UNSPECIALIZED["fp32"]
    if given == 1:
        return 1
    aligned = given % 16 == 0
    if -(2**31) <= given < 2**31:
        return 16 if aligned else _UNSPECIALIZED["i32"]
    if -(2**63) <= given < 2**63:
        return 2**34 if aligned else _UNSPECIALIZED["i64"]
    if given < 2**64:
        return 2**63 if aligned else _UNSPECIALIZED["u64"]
    return given


def specialize(kernel: Any, given: dict, constexprs: dict, target: Any) -> tuple[dict, dict, dict]:
    """(signature, constexprs, attrs) that a real launch with these arguments compiles, by Triton's own launch
    binder: a parameter annotated `tl.constexpr` is a constant of the launch's value (`V: tl.constexpr` included),
    an integer equal to 1 becomes the constant 1 and one divisible by 16 carries that divisibility, like a pointer
    16-byte aligned. Without that binder (another Triton), the given types as they are."""
    try:
        from triton.compiler.compiler import make_backend
        from triton.runtime.jit import create_function_from_signature
    except ImportError:  # pragma: no cover - Triton 3.9 has both
        typed = {k: "fp32" if isinstance(v, float) else "i32" if isinstance(v, int) else v for k, v in given.items()}
        return typed, dict(constexprs), {}
    values = {}
    for name in kernel.arg_names:
        if name in constexprs:
            values[name] = constexprs[name]
        elif name in given and given[name] != "constexpr":
            values[name] = _launch_value(given[name])
    backend = make_backend(target)
    _, specialization, _ = create_function_from_signature(kernel.signature, kernel.params, backend)(**values)
    signature, constants, attrs = {}, {}, {}
    for i, (param, (kind, key)) in enumerate(zip(kernel.params, specialization)):
        signature[param.name] = kind
        if kind == "constexpr":
            constants[(i,)] = key
        elif isinstance(key, str) and key:
            attrs[(i,)] = backend.parse_attr(key)
    return signature, constants, attrs


def compile_error_summary(error: BaseException) -> tuple[str, int | None]:
    """(the reason, the kernel's line) from a Triton compile error: Triton prints the source around the error;
    the reason is its last line, the line number is the "at L:C" it starts with (1 = the def line)."""
    text = str(error).strip()
    line = None
    located = re.match(r"at (\d+):(\d+):", text)
    if located:
        line = int(located.group(1))
    reason = text.splitlines()[-1] if text else type(error).__name__
    wrapped = re.fullmatch(r"\w+Error\((['\"])(.*)\1\)", reason)
    if wrapped:
        reason = wrapped.group(2)
    if "Cannot access global variable" in text:
        reason = re.sub(r"\s+", " ", text[text.index("Cannot access global variable") :]).split(". ")[0] + "."
    lines = text.splitlines()
    if not reason.strip(" ^~") and len(lines) >= 2:  # no message: the caret under the source line is all there is
        what = "tl.static_assert failed" if type(error).__name__ == "CompileTimeAssertionFailure" else "refused"
        reason = f"{what}: {lines[-2].strip()}"
    return reason.strip()[:400], line


def _compile_keeping_ptxas_log(source: Any, target: Any) -> tuple[Any, str | None]:
    """triton.compile, and what the ptxas run that made its cubin said (-v), or None where no such run happened (its
    cache answered, or another Triton). Only that run's printing is kept, never what the kernel prints as it compiles
    (tl.static_print prints earlier, while Triton reads the kernel's source)."""
    import triton

    try:
        from triton import knobs
        from triton.backends.nvidia.compiler import CUDABackend
    except ImportError:  # pragma: no cover - Triton 3.9 has both
        return triton.compile(source, target=target), None
    if not (hasattr(knobs.nvidia, "scope") and hasattr(type(knobs.nvidia), "dump_ptxas_log")):  # another Triton
        return triton.compile(source, target=target), None
    made, logs = CUDABackend.make_cubin, []

    def make_cubin(self: Any, *args: Any, **kwargs: Any) -> Any:
        printed = io.StringIO()
        with knobs.nvidia.scope(), contextlib.redirect_stdout(printed):
            knobs.nvidia.dump_ptxas_log = True
            cubin = made(self, *args, **kwargs)
        logs.append(printed.getvalue())
        return cubin

    CUDABackend.make_cubin = make_cubin
    try:
        compiled = triton.compile(source, target=target)
    finally:
        CUDABackend.make_cubin = made
    return compiled, (logs[-1] if logs and "Used" in logs[-1] else None)


def ptxas_report(ptx: str, arch: int, log: str | None = None) -> dict:
    """What ptxas -v says about the kernel: registers per thread, spill bytes (stores + loads), stack bytes. `log`:
    what the ptxas run of the compile itself said; without it, ptxas runs here on the PTX."""
    log = log if log is not None else _ptxas_log(ptx, arch)

    def figure(pattern: str) -> int:
        found = re.search(pattern, log)
        return int(found.group(1)) if found else 0

    return {
        "registers": figure(r"Used (\d+) registers"),
        "spill_bytes": figure(r"(\d+) bytes spill stores") + figure(r"(\d+) bytes spill loads"),
        "stack_bytes": figure(r"(\d+) bytes stack frame"),
        "ptxas": " ".join(line.split("info    :")[-1].strip() for line in log.splitlines() if "Used" in line),
    }


@functools.lru_cache(maxsize=128)
def _ptxas_log(ptx: str, arch: int) -> str:
    """ptxas -v's report on this PTX, run once per PTX text and arch in this process: a kernel compiled again with
    the same specialization (Triton's cache answers it) has the same PTX, and this run was most of its cost."""
    from triton.backends.nvidia.compiler import get_ptxas, sm_arch_from_capability

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.ptx")
        with open(path, "w") as f:
            f.write(ptx)
        run = subprocess.run(
            [
                get_ptxas(arch).path,
                "-v",
                f"--gpu-name={sm_arch_from_capability(arch)}",
                path,
                "-o",
                os.path.join(tmp, "kernel.cubin"),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    return run.stderr


def occupancy(registers: int, threads_per_block: int = 128, registers_per_sm: int = 65536, max_threads: int = 2048):
    """The fraction of an SM's thread slots its register file can fill, when registers alone limit it: each warp's
    registers are allocated in units of 256 (8 per thread), each block whole. The defaults: an H100's SM, and the
    128 threads of Triton's default 4 warps."""
    per_thread = -(-max(registers, 1) // 8) * 8
    blocks = registers_per_sm // (per_thread * threads_per_block)
    return min(blocks * threads_per_block, max_threads) / max_threads


# the compile process's program: this module from the folder it lies in (where the course is not installed too)
_SERVE = (
    f"import sys; sys.path.insert(0, {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))!r}); "
    "from coursetools.gpu_compile import serve; serve(int(sys.argv[1]))"
)


class CompileProcess:
    """A fresh Python process that compiles recorded kernels (this module's `serve`): Triton's interpreter
    patches triton.language in the process it runs in, so compiling happens in a process that never ran one.
    Environment: PATH and a cache directory of its own; TRITON_INTERPRET is not passed on. Its answers come back
    on a pipe of their own: what a kernel prints as it compiles (tl.static_print) goes to its stdout, which nobody
    reads."""

    def __init__(self, timeout_s: float = 60.0) -> None:
        self.timeout_s, self.owner = timeout_s, os.getpid()
        self._tmp = tempfile.TemporaryDirectory(prefix="gpu-compile-")
        cache = os.path.join(self._tmp.name, "triton-cache")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self._tmp.name, "TRITON_CACHE_DIR": cache}
        env["TRITON_DEFAULT_FP_FUSION"] = "1"  # Triton's default, said out loud (it warns otherwise)
        answers, self._answers_in = os.pipe()
        self._answers = os.fdopen(answers, "r")
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-c", _SERVE, str(self._answers_in)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                text=True,
                cwd=self._tmp.name,
                env=env,
                preexec_fn=_limits,
                pass_fds=(self._answers_in,),
            )
        finally:
            os.close(self._answers_in)
        self._asked = 0

    def ask(self, record: dict, signature: dict[str, str], constexprs: dict[str, Any], arch: int = 90) -> dict:
        """The compile's answer; {"ok": None, "why": ...} when the process could not be reached at all."""
        import select

        self._asked += 1
        request = {"id": self._asked, "record": record, "signature": signature, "constexprs": constexprs, "arch": arch}
        process = self._process
        try:
            assert process.stdin is not None
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
            ready, _, _ = select.select([self._answers], [], [], self.timeout_s)
            line = self._answers.readline() if ready else ""
        except (OSError, ValueError) as error:
            return {"ok": None, "why": f"the compile process stopped ({error})"}
        try:
            answer = json.loads(line) if line else None
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or answer.pop("id", None) != self._asked:
            # the compile hung or killed its process (an unrolled loop of millions, memory): the kernel's doing
            self.close()
            return {
                "ok": False,
                "why": f"Triton's compiler did not finish this kernel (stopped after {self.timeout_s:.0f} s or its "
                "memory limit)",
                "line": None,
                "error": "Timeout",
            }
        return answer

    def compile(self, kernel: Any, positional: Sequence[str], constexprs: dict[str, Any], arch: int = 90) -> dict:
        """Compile a notebook's kernel as `kernel[grid](*args of these types, **constexprs)` would launch it."""
        record = kernel_record(kernel)
        return self.ask(record, *launch_signature(record, positional, constexprs), arch=arch)

    def alive(self) -> bool:
        return self._process.poll() is None

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        for stream in (self._process.stdin, self._answers):
            if stream is not None and not stream.closed:
                stream.close()
        self._tmp.cleanup()

    def __enter__(self) -> CompileProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _limits() -> None:
    """In the compile process before it starts: its memory bounded. (Its time is bounded per request, by the wall
    clock in `ask`: a CPU-time limit would add up over the many kernels one process compiles in a grading run.)"""
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_AS)  # inside a grading sandbox there is one already: only lower it
    limit = 4 << 30 if hard == resource.RLIM_INFINITY else min(4 << 30, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def serve(answers_fd: int) -> None:
    """A compile process: one JSON request per line in, one JSON answer per line out on its own descriptor. A record
    the screen refuses is never handed to Triton's code generator (which evaluates parts of a kernel as Python): the
    refusal is the answer."""
    out = os.fdopen(answers_fd, "w")
    for line in sys.stdin:
        request = json.loads(line)
        refused = screen(request["record"])
        if refused:
            answer = {"ok": False, "why": refused, "line": None, "error": "Refused"}
        else:
            answer = compile_record(request["record"], request["signature"], request["constexprs"], request["arch"])
        out.write(json.dumps({**answer, "id": request["id"]}) + "\n")
        out.flush()


if __name__ == "__main__":
    serve(int(sys.argv[1]))
