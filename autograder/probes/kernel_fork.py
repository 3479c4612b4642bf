"""Warm kernels: a process inside the grading sandbox that has imported what every kernel imports (torch, IPython,
the checks) and forks a fresh kernel for each submission.

It runs as root inside the sandbox's namespaces (bubblewrap, with only the capabilities below) and never runs a
learner's code. Each kernel it forks first gets namespaces of its own -- mounts, IPC, network, hostname -- then drops
to the submission's unprivileged uid with no groups, no capabilities and no new privileges (what setpriv does for a
cold kernel), reseeds every random generator, takes the submission's environment and working folder, and becomes an
ipykernel on the connection file the grader wrote. Nothing one kernel does (files, mounts, modules imported or
patched, random state, threads, environment) reaches the next: each is a fresh copy of the factory, which no learner
code ran in.

The grader talks to it over a Unix socket only root can reach (grading/warm.py): one line of JSON per kernel asked
for; the answer, when the kernel ends, is its exit status. A grader that goes away kills its kernel. A line that
asks for a kernel text's run instead (autograder/probes/kernel_runner.py) is served by a child of its own the same
way: this factory has imported everything such a run needs.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import shutil
import signal
import socket
import sys
import time
import traceback

CAPABILITIES = "CAP_SETUID,CAP_SETGID,CAP_SETPCAP,CAP_SYS_ADMIN,CAP_KILL"  # what the factory keeps (sandbox.py)
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWNET = 0x00020000, 0x04000000, 0x08000000, 0x40000000
MS_REC, MS_PRIVATE = 16384, 1 << 18
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38
_libc = ctypes.CDLL(None, use_errno=True)


# Every kernel's, warm or cold: no input history on disk. A submission's kernel lives for one notebook (In and _ih
# stay, in memory); writing the history's SQLite file cost a tenth of a second of each kernel's CPU (profiled). And the
# cap on what a cell prints (output_cap.py), loaded before the first cell.
KERNEL_OPTIONS = ["--HistoryManager.enabled=False", "--IPKernelApp.extra_extensions=autograder.probes.output_cap"]


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def warm() -> None:
    """What every kernel would import before its first cell, and what the course's cells import later: done once,
    here. (Profiled, a cold kernel grading notebook 01 spends nine tenths of its CPU time importing: torch;
    torch._dynamo and sympy, which torch.func.jacrev brings in; pyplot and its font cache; the debugger.) The
    factory's environment is a kernel's (MPLBACKEND=Agg), so pyplot chooses the backend a cold kernel would."""
    import ipykernel.debugger  # noqa: F401
    import ipykernel.ipkernel  # noqa: F401
    import ipykernel.kernelapp  # noqa: F401
    import IPython  # noqa: F401
    import matplotlib.pyplot  # noqa: F401
    import torch
    import torch._decomp.decompositions_for_jvp  # noqa: F401
    import torch._dynamo  # noqa: F401
    import torch.func  # noqa: F401

    from autograder.registry import import_notebook_modules

    import_notebook_modules()
    from autograder.probes import kernel  # noqa: F401  (the grader's in-kernel setup)
    from autograder.probes.kernel_runner import warm_launch

    warm_launch()  # a kernel's first launch in the interpreter (the learner's, or a kernel run's) costs less after

    torch.func.jvp(torch.sin, (torch.zeros(1),), (torch.ones(1),))  # forward mode's first call loads the rest


def isolate() -> None:
    """Namespaces of the kernel's own: its mounts, IPC objects, network, hostname. (/tmp holds the sandbox's bound
    folders where they live under /tmp, so it is not replaced: the factory empties it after each kernel; /dev is
    read-only, as in a cold kernel's sandbox.)"""
    _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWUTS), "unshare")
    _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "private mounts")
    socket.sethostname("grader")


def kill_uid(uid: int) -> None:
    """Every process the kernel's uid left running (forks that outlived it), in the factory's PID namespace."""
    for _ in range(5):
        left = []
        for entry in os.listdir("/proc"):
            try:
                if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid == uid:
                    left.append(int(entry))
            except OSError:
                pass
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)


def empty_tmp() -> None:
    """What kernels wrote in /tmp, gone: every entry but the folders that lead to the sandbox's mounts (root's)."""
    mounts = [line.split()[4] for line in open("/proc/self/mountinfo")]
    keep = {m.split("/")[2] for m in mounts if m.startswith("/tmp/") and len(m.split("/")) > 2}
    for entry in os.listdir("/tmp"):
        if entry in keep:
            continue
        path = os.path.join("/tmp", entry)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass


def drop_to(uid: int) -> None:
    """The submission's uid and gid, no groups, an empty capability bounding set, no new privileges."""
    for cap in range(64):
        _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # past the last capability it fails, harmlessly
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # from root to a nonzero uid: every capability left is cleared
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no new privileges")


def reseed() -> None:
    """A fork copies the factory's random state: every generator is seeded afresh (Python's own reseeds itself)."""
    import torch

    torch.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(int.from_bytes(os.urandom(4), "little"))


def become_kernel(request: dict) -> None:
    """In the forked child: isolate, drop, take the submission's environment, and run the kernel until it ends."""
    if request.get("uid") is not None:
        isolate()
        drop_to(int(request["uid"]))
    import resource

    nproc = int(request["nproc"])  # per uid: the factory's other limits (memory, CPU, file size) are inherited
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    reseed()
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    app.initialize(["-f", request["connection_file"], *KERNEL_OPTIONS])
    app.start()


def _serve_one(conn: socket.socket, listener: socket.socket) -> None:
    request = json.loads(conn.makefile("r").readline() or "{}")
    if request.get("kind") == "probe":  # a kernel text to run with a notebook's kernel probe: a child of its own
        from .kernel_runner import serve_request

        serve_request(request, conn, listener, isolated=True)
        return
    errors_out, errors_in = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            listener.close()
            conn.close()
            os.close(errors_out)
            become_kernel(request)
            code = 0
        except BaseException:  # noqa: B036  (what went wrong reaches the grader, then the child ends)
            os.write(errors_in, traceback.format_exc()[-4000:].encode())
        finally:
            os._exit(code)
    os.close(errors_in)
    pidfd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([pidfd, conn], [], [])
        if conn in ready and pidfd not in ready:  # the grader went away (or killed its end): so does the kernel
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        if request.get("uid") is not None:  # nothing of this kernel is left for the next one
            kill_uid(int(request["uid"]))
            empty_tmp()
        error = os.read(errors_out, 8000).decode(errors="replace")
        conn.sendall(json.dumps({"exit": os.waitstatus_to_exitcode(status), "error": error}).encode() + b"\n")
    except OSError:
        pass
    finally:
        os.close(pidfd)
        os.close(errors_out)


def listening(socket_path: str) -> socket.socket:
    """The factory's socket, root's only, listened on; then "ready" to the grader (a factory of kernel_runner.py's
    too)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    os.chmod(socket_path, 0o600)
    listener.listen(4)
    print("ready", flush=True)
    return listener


def serve(socket_path: str) -> None:
    warm()
    listener = listening(socket_path)
    while True:
        conn, _ = listener.accept()
        with conn:
            _serve_one(conn, listener)


if __name__ == "__main__":
    serve(sys.argv[1])
