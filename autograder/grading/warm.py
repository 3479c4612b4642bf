"""Warm kernels for a grading worker: one factory per worker process (autograder/probes/kernel_fork.py), started in
the sandbox when the worker takes its first job and kept while the job settings stay the same.

A worker's first kernel waits for its factory (the factory's start costs what a cold kernel's imports cost); every
kernel after it is forked warm. A kernel is started by `kernel_command`, a small client (grading/fork_client.py) that
jupyter_client launches like any kernel: it asks the factory for a kernel on the connection file and waits for it to
end; killed, it takes the kernel with it. The factory has already imported torch, IPython, the checks and what the
course's cells import later, so a submission's kernel starts in a fraction of a second.

On by default where the sandbox is whole (bubblewrap, the grader as root, an unprivileged uid per submission);
REVAD_WARM_KERNELS=0 turns it off. Anywhere else, or when the factory cannot start or is not ready in time, kernels
start cold as before.
"""

from __future__ import annotations

import atexit
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import sandbox


@dataclass
class Factory:
    key: tuple
    proc: subprocess.Popen
    kernels_dir: Path  # the kernels' scratch folders live here (bound writable into the factory's sandbox)
    socket: Path
    ready: bool = False

    def alive(self) -> bool:
        return self.proc.poll() is None

    def poll_ready(self) -> bool:
        """Whether it has said "ready" (without waiting): it warms up while the worker grades cold."""
        if not self.ready and self.alive():
            assert self.proc.stdout is not None
            if select.select([self.proc.stdout], [], [], 0)[0]:
                self.ready = self.proc.stdout.readline().strip() == b"ready"
        return self.ready and self.alive()

    def stop(self) -> None:
        if self.alive():
            self.proc.kill()
            self.proc.wait(timeout=10)


_factory: Factory | None = None
_failed: set[tuple] = set()  # settings whose factory died: their kernels start cold, without another try


READY_WITHIN_S = 120  # a factory slower than this to warm up (a machine under load): this kernel starts cold


def enabled(info: sandbox.SandboxInfo) -> bool:
    return (
        os.environ.get("REVAD_WARM_KERNELS", "1") != "0"
        and info.active
        and info.as_root
        and info.drop_uid
        and sys.platform == "linux"
    )


def factory_limits(limits: sandbox.Limits) -> tuple[int, ...]:
    """The limits the factory's own sandbox is started with (sandbox.factory_command), which its kernels inherit. The
    others (a cell's and a notebook's time, the output kept, processes per uid) are each kernel's or the worker's:
    a new value of those keeps the factory, so a worker grading with other deadlines keeps its warm kernels."""
    return (limits.memory_mb, limits.tmp_mb, limits.cpu_s, limits.fsize_mb)


def factory_for(info: sandbox.SandboxInfo, limits: sandbox.Limits, threads: int, hide: list[Path]) -> Factory | None:
    """This worker process's factory for these settings, started (and waited for) if it has none; None: this kernel
    starts cold. It outlives jobs and grading runs (a Celery worker keeps one across its tasks): its folders are the
    process's own."""
    global _factory
    if not enabled(info):
        return None
    hidden = tuple(str(p) for p in sandbox.hidden_in_view(hide))  # the only paths of `hide` its sandbox could show
    key = (info.tool, factory_limits(limits), threads, hidden)
    if key in _failed:
        return None
    if _factory is None or _factory.key != key:
        stop()
        try:
            _factory = _start(key, info, limits, _base(), threads, [Path(p) for p in hidden])
        except OSError as exc:
            print(f"warm kernels: the factory did not start ({exc}); kernels start cold", file=sys.stderr)
            _failed.add(key)
            return None
    deadline = time.monotonic() + READY_WITHIN_S
    while _factory.alive() and not _factory.poll_ready() and time.monotonic() < deadline:
        time.sleep(0.05)
    if not _factory.alive():
        print("warm kernels: the factory stopped (did its imports fail?); kernels start cold", file=sys.stderr)
        _failed.add(key)
        stop()
        return None
    return _factory if _factory.poll_ready() else None


_folder: list[Path] = []


def _base() -> Path:
    """This process's folder for its factory: the kernels' scratch folders and the factory's socket."""
    if not _folder:
        _folder.append(Path(tempfile.mkdtemp(prefix="revad-warm-")))
        _folder[0].chmod(0o755)
        atexit.register(shutil.rmtree, _folder[0], True)
    return _folder[0]


def current() -> Factory | None:
    """This worker's factory, when it is up and ready."""
    return _factory if _factory is not None and _factory.ready and _factory.alive() else None


def current_for(scratch: Path) -> Factory | None:
    """The warm factory whose kernels' folder holds this scratch folder."""
    if _factory is not None and _factory.ready and _factory.alive() and scratch.parent == _factory.kernels_dir:
        return _factory
    return None


def _start(
    key: tuple, info: sandbox.SandboxInfo, limits: sandbox.Limits, base: Path, threads: int, hide: list[Path]
) -> Factory:
    from .execute import kernel_environment

    kernels_dir, socket_dir = base / "kernels", base / "factory"
    for folder in (kernels_dir, socket_dir):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    kernels_dir.chmod(0o711)  # each kernel reaches its own folder by name, and lists none
    socket_dir.chmod(0o700)  # root only: no kernel can ask for another
    env = kernel_environment(socket_dir / "home", threads, True)
    argv = sandbox.factory_command(info, limits, kernels_dir, socket_dir, env, hide)
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return Factory(key, proc, kernels_dir, socket_dir / "factory.sock")


def kernel_command(factory: Factory, scratch: Path, uid: int, env: dict[str, str], limits: sandbox.Limits) -> list[str]:
    """jupyter_client's command for one kernel from the factory (`{connection_file}` filled in by it)."""
    client = Path(__file__).with_name("fork_client.py")
    argv = [sys.executable, "-I", "-S", str(client), str(factory.socket), "{connection_file}"]
    argv += [f"--cwd={scratch / 'work'}", f"--uid={uid}", f"--tmp-mb={limits.tmp_mb}", f"--nproc={limits.nproc}"]
    return argv + [f"--env={key}={value}" for key, value in env.items()]


def stop() -> None:
    global _factory
    if _factory is not None:
        _factory.stop()
        _factory = None
