"""The worker pool: long-lived worker processes (autograder.grading.worker --serve), one job at a time
each, replaced when one dies or overruns; and the progress line."""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from .safe_text import terminal_text


class Progress:
    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.enabled = total, 0, enabled
        self.tty = sys.stderr.isatty()
        self.start = time.perf_counter()

    def update(self, student: str, text: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        bar = "#" * filled + "-" * (width - filled)
        elapsed = time.perf_counter() - self.start
        line = f"[{bar}] {self.done}/{self.total}  {elapsed:4.0f} s  {terminal_text(student)}: {terminal_text(text)}"
        if self.tty:
            sys.stderr.write("\r\033[K" + line + ("\n" if self.done == self.total else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _die_with_parent():
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001
        pass


class Worker:
    """A long-lived `python -m autograder.grading.worker --serve` process; replaced when it dies or hangs.
    It says "done ..." on its protocol pipe when a job is graded; the pipe closes when it dies (nothing else
    holds it: the worker keeps it out of its children).

    Its temporary folders (its probes' view, its warm-kernel factory's, its compile process's) live in a folder of
    its own (its TMPDIR) that `stop` removes: a worker is stopped with SIGKILL, so it never cleans up after itself."""

    def __init__(self, slot: int, state_dir: Path):
        self.slot, self.state_dir = slot, state_dir
        self.proc: subprocess.Popen[bytes] | None = None
        self.tmp: Path | None = None
        self.job: tuple[str, Path] | None = None
        self.uid: int | None = None
        self.deadline = 0.0
        self._buffer = b""

    def _spawn(self) -> None:
        log = open(self.state_dir / f"worker-{self.slot}.log", "ab")
        self.tmp = Path(tempfile.mkdtemp(prefix=f"revad-worker-{self.slot}-"))
        self.tmp.chmod(0o755)  # as /tmp: a kernel's uid reads the probes' view in it where nothing is mounted for it
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autograder.grading.worker", "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env={**os.environ, "TMPDIR": str(self.tmp)},
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        log.close()
        assert self.proc.stdout is not None  # stdout=PIPE
        os.set_blocking(self.proc.stdout.fileno(), False)
        self._buffer = b""

    def started(self) -> Worker:
        """This worker with its process running (it imports what grading needs before its first job)."""
        if self.proc is None or self.proc.poll() is not None:
            self.stop()  # a process that died by itself leaves its folder too
            self._spawn()
        return self

    def submit(self, student: str, job_dir: Path, limit: float) -> None:
        """Hand the worker a job (starting a fresh process if it has none); it is overdue after `limit` s."""
        self.started()
        assert self.proc is not None and self.proc.stdin is not None
        self.job = (student, job_dir)
        self.deadline = time.monotonic() + limit
        try:
            self.proc.stdin.write(f"{job_dir / 'job.json'}\n".encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died already: its pipe reads as closed, and the job ends as "died"

    def fileno(self) -> int:
        """The protocol pipe, for a selector."""
        assert self.proc is not None and self.proc.stdout is not None, "fileno() before submit()"
        return self.proc.stdout.fileno()

    def collect(self) -> str | None:
        """After the pipe became readable: "done", "died" (closed), or None (not a whole "done" line yet)."""
        try:
            chunk = os.read(self.fileno(), 65536)
        except BlockingIOError:
            return None
        except OSError:
            chunk = b""
        if not chunk:
            return "died"
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        return "done" if any(line.startswith(b"done ") for line in lines) else None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self.proc = None
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None


def run_jobs(
    pool: list[Worker],
    todo: list[str],
    start: Callable[[Worker, str], None],
    finish: Callable[[Worker, str], None],
) -> None:
    """Schedule: each idle worker takes the next of `todo` (`start(worker, item)` submits it), then wait, blocked
    on the workers' pipes until one says done, closes (it died) or passes its deadline (overdue: stopped), and
    call `finish(worker, state)`; until every item is finished. A worker that died or overran is stopped and
    started afresh with its next job. What a job does is `start`'s and `finish`'s business, not this loop's."""
    pending = list(todo)
    with selectors.DefaultSelector() as selector:

        def next_job(worker: Worker) -> None:
            if pending:
                start(worker, pending.pop(0))
                selector.register(worker.fileno(), selectors.EVENT_READ, worker)

        for worker in pool:
            next_job(worker)
        while busy := [w for w in pool if w.job is not None]:
            wait = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            readable = {key.data for key, _ in selector.select(wait)}
            for worker in busy:
                state = worker.collect() if worker in readable else None
                if state is None and time.monotonic() > worker.deadline:
                    state = "overdue"
                if state is None:
                    continue
                selector.unregister(worker.fileno())
                if state != "done":
                    worker.stop()
                finish(worker, state)
                worker.job = None
                next_job(worker)
