"""Where a learner's kernel text runs and compiles for the judges: a child process per request, forked from a
factory that no learner text ever ran in.

    python -m autograder.probes.kernel_runner SOCKET interpret|compile [--isolate]

The factory imports what its children need (torch and the notebooks' kernel probes with Triton's interpreter;
or Triton alone, in compiled mode, for the GPU compile; the warm kernels' factory, autograder/probes/kernel_fork.py,
has imported the first already and serves the interpreter's requests too) and waits on a Unix socket only the
grader can reach. For each request it forks a child that takes namespaces of its own (mounts, IPC, network,
hostname), the submission's unprivileged uid with no groups, capabilities or new privileges (kernel_fork's isolate
and drop_to), limits on CPU
time and processes, an empty environment and stdin/stdout/stderr on /dev/null. The child rebuilds the recorded
kernel from its text (coursetools.kernel_text), runs one of the notebooks' kernel probes on it or compiles it for
a GPU, and writes its answer -- the request's nonce, a length, torch.save bytes -- on a pipe of its own. The
factory reads that pipe, kills whatever the uid left running, empties /tmp, and hands the grader the bytes and how
the child ended. So a kernel's text reaches nothing of the grader's, answers nothing but its own request, and
leaves nothing for the next one; what it prints is read by nobody.

Without a sandbox (no bubblewrap, or not root: no `--isolate`) the children get no namespaces of their own, and
run as the grader's own user unless the grader is root (then the request names a uid): the grading command says
which protections are off.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import select
import shutil
import signal
import socket
import struct
import sys
import tempfile
import time
from typing import Any

NONCE_BYTES = 16
HEADER = struct.Struct("<16sQ")  # nonce, length of the answer that follows
MAX_ANSWER_BYTES = 64 << 20
# the notebooks' kernel probes a request may name (module:function): each takes the kernel first
KERNEL_PROBES = {
    "autograder.nb05.probes:probe_kernel",
    "autograder.nb06.probes:probe_row_lse",
    "autograder.nb06.probes:probe_ce_forward",
    "autograder.nb06.probes:probe_ce_backward",
    "autograder.nb07.probes:probe_forward_kernel",
    "autograder.nb07.probes:replay_backward",
}


WARM_KERNEL = {
    "entry": "warm",
    "functions": {
        "warm": "def warm(x_ptr, n, BLOCK: tl.constexpr):\n    o = tl.arange(0, BLOCK)\n"
        "    tl.store(x_ptr + o, tl.sigmoid(tl.load(x_ptr + o, mask=o < n)), mask=o < n)\n"
    },
    "globals": {"tl": {"kind": "module", "value": "triton.language"}},
}

# --------------------------------------------------------------------------------------------- what a child does


def answer(kind: str, body: dict) -> Any:
    """The answer to one request, as plain data (what torch.save writes)."""
    if kind == "compile":
        return compile_answers(body["record"], body["launches"], int(body["arch"]))
    if kind == "probe":
        return probe_answer(body["probe"], body["record"], body["params"])
    raise ValueError(f"no such request: {kind}")


def compile_answers(record: dict, launches: list, arch: int) -> list[dict]:
    """One compile answer per (signature, constexprs): coursetools.gpu_compile.compile_record's, after the screen
    (its refusal is the answer to every launch: the text is never handed to Triton's code generator)."""
    from coursetools.gpu_compile import compile_record
    from coursetools.kernel_screen import screen

    refused = screen(record)
    if refused:
        return [{"ok": False, "why": refused, "line": None, "error": "Refused"} for _ in launches]
    return [compile_record(record, signature, constexprs, arch) for signature, constexprs in launches]


def probe_answer(probe: str, record: dict, params: dict) -> Any:
    """What the named kernel probe returns for the recorded kernel, rebuilt from its text and interpreted; a
    failure the probe words (CheckFailed) becomes {FAILED: its message}, as in a probe record."""
    from coursetools.kernel_text import rebuild

    from ..feedback import CheckFailed
    from ..registry import FAILED

    if probe not in KERNEL_PROBES:
        raise ValueError(f"not a kernel probe: {probe}")
    module, _, name = probe.partition(":")
    function = getattr(importlib.import_module(module), name)
    try:
        kernel = rebuild(record, interpreted=True)
    except Exception as error:  # noqa: BLE001 - the learner's text, as Python reads it: the message says how
        return {FAILED: f"Your kernel could not be defined from its source ({type(error).__name__}: {error})"[:600]}
    try:
        return function(kernel, **params)
    except CheckFailed as failure:
        return {FAILED: str(failure)}


def serialize(nonce: bytes, kind: str, data: Any) -> bytes:
    """The answer as the grader reads it: a compile's as JSON (its child never imports torch), a probe's as
    torch.save writes it (tensors)."""
    if kind == "compile":
        body = json.dumps(data).encode()
    else:
        import torch

        buffer = io.BytesIO()
        torch.save(data, buffer)
        body = buffer.getvalue()
    return HEADER.pack(nonce, len(body)) + body


# --------------------------------------------------------------------------------------------- the factory


def warm(mode: str) -> None:
    """What every child needs, imported once here. The interpreter's children import the notebooks' probes (which
    choose Triton's interpreter where there is no GPU, before importing Triton); the compiler's import Triton in
    compiled mode, and nothing of torch's."""
    if mode == "interpret":
        for probe in KERNEL_PROBES:
            importlib.import_module(probe.partition(":")[0])
        warm_launch()
    else:
        os.environ.pop("TRITON_INTERPRET", None)
        import triton.compiler  # noqa: F401
        import triton.language  # noqa: F401

        import coursetools.kernel_screen  # noqa: F401
        from coursetools.gpu_compile import compile_record

        # the compiler's first compile in a process loads its backend and libraries (0.5 s): done here, once,
        # on the course's own kernel, so that each child only compiles
        compile_record(WARM_KERNEL, {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 32})
    from coursetools.kernel_text import real_modules

    real_modules()


def warm_launch() -> None:
    """One launch of the course's own kernel in Triton's interpreter: the interpreter imports parts of itself at its
    first launch (80 ms), here once rather than in every child. Without Triton (off Linux) there is none to warm."""
    import importlib.util

    import torch

    if importlib.util.find_spec("triton") is None:
        return

    from coursetools.kernel_text import rebuild

    rebuild(WARM_KERNEL, interpreted=True)[(1,)](torch.zeros(32), 32, BLOCK=32)


def child(request: dict, answers: int, isolated: bool) -> None:
    """In the forked child: isolated, dropped, limited; the answer on its own pipe. Never returns."""
    code = 1
    try:
        import resource

        from .kernel_fork import drop_to, isolate, reseed

        home = request["home"]
        if isolated:
            isolate()
        if request.get("uid") is not None:
            os.chown(home, int(request["uid"]), int(request["uid"]))
            drop_to(int(request["uid"]))
            nproc = int(request.get("nproc", 64))
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        cpu = int(request.get("cpu_s", 60))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        os.chdir(home)
        os.environ.clear()
        os.environ.update({"HOME": home, "TRITON_CACHE_DIR": f"{home}/triton", "TMPDIR": home, "PATH": "/usr/bin:/bin"})
        os.environ.update({"TRITON_DEFAULT_FP_FUSION": "1", "LANG": "C.UTF-8"})
        if request["kind"] == "probe":  # Triton reads it again as it imports parts of itself at a first launch
            os.environ["TRITON_INTERPRET"] = "1"
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        if "torch" in sys.modules:  # (the compiler's children never import it)
            reseed()
        kind = request["kind"]
        out = serialize(bytes.fromhex(request["nonce"]), kind, answer(kind, request["body"]))
        view = memoryview(out)
        while view:
            view = view[os.write(answers, view) :]
        code = 0
    except BaseException:  # noqa: B036 - the grader sees no answer and says so; nothing of this reaches it
        code = 3
    finally:
        os._exit(code)


def serve_one(conn: socket.socket, listener: socket.socket, isolated: bool) -> None:
    serve_request(json.loads(conn.makefile("rb").readline() or b"{}"), conn, listener, isolated)


def serve_request(request: dict, conn: socket.socket, listener: socket.socket, isolated: bool) -> None:
    """One request, read from `conn`: its child forked, watched, and its answer handed back on `conn`. (The warm
    kernels' factory serves the interpreter's requests this way too: it has imported all they need.)"""
    request["home"] = tempfile.mkdtemp(prefix="kernel-run-")  # the child's, emptied after it
    answers_read, answers_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        listener.close()
        conn.close()
        os.close(answers_read)
        child(request, answers_write, isolated)
    os.close(answers_write)
    os.set_blocking(answers_read, False)
    pidfd = os.pidfd_open(pid)
    deadline = time.monotonic() + float(request.get("timeout_s", 60))
    received, status, exited, timed_out = bytearray(), 0, False, False
    try:
        while not exited:
            left = deadline - time.monotonic()
            ready = select.select([answers_read, pidfd, conn], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                timed_out = True
                break
            if answers_read in ready or pidfd in ready:
                _drain(answers_read, received)
            if pidfd in ready:
                _, status = os.waitpid(pid, 0)
                exited = True
            elif conn in ready:  # the grader went away: so does the child
                break
    finally:
        if not exited:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        if request.get("uid") is not None:
            from .kernel_fork import kill_uid

            kill_uid(int(request["uid"]))  # whatever the child left, before its last bytes are taken
        shutil.rmtree(request["home"], ignore_errors=True)
        if isolated:
            from .kernel_fork import empty_tmp

            empty_tmp()
        _drain(answers_read, received)
        os.close(answers_read)
        os.close(pidfd)
    ended = {"exit": os.waitstatus_to_exitcode(status), "timed_out": timed_out, "bytes": len(received)}
    conn.sendall(json.dumps(ended).encode() + b"\n" + bytes(received))


def _drain(fd: int, received: bytearray) -> None:
    """What the pipe holds now, up to the largest answer (more than that is never an answer)."""
    while True:
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            return
        if len(received) <= MAX_ANSWER_BYTES + HEADER.size:
            received += chunk


def serve(socket_path: str, mode: str, isolated: bool) -> None:
    from .kernel_fork import listening

    warm(mode)
    listener = listening(socket_path)
    while True:
        conn, _ = listener.accept()
        with conn:
            try:
                serve_one(conn, listener, isolated)
            except (OSError, ValueError):
                pass


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], "--isolate" in sys.argv[3:])
