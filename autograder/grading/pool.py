"""The worker pool: long-lived worker processes (autograder.grading.worker --serve), one job at a time
each, replaced when one dies or overruns; and the progress line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
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
    """A long-lived `python -m autograder.grading.worker --serve` process; replaced when it dies or hangs."""

    def __init__(self, slot: int, state_dir: Path):
        self.slot, self.state_dir = slot, state_dir
        self.proc: subprocess.Popen[bytes] | None = None
        self.job: tuple[str, Path] | None = None
        self.uid: int | None = None
        self.started = 0.0
        self._buffer = b""

    def _spawn(self) -> None:
        log = open(self.state_dir / f"worker-{self.slot}.log", "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autograder.grading.worker", "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        log.close()
        assert self.proc.stdout is not None  # stdout=PIPE
        os.set_blocking(self.proc.stdout.fileno(), False)
        self._buffer = b""

    def submit(self, student: str, job_dir: Path) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self._spawn()
        assert self.proc is not None and self.proc.stdin is not None
        self.job = (student, job_dir)
        self.started = time.monotonic()
        try:
            self.proc.stdin.write(f"{job_dir / 'job.json'}\n".encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass

    def poll(self, limit: float) -> str:
        """running | done | died | overdue"""
        assert self.proc is not None and self.proc.stdout is not None, "poll() before submit()"
        try:
            chunk = self.proc.stdout.read()
        except (OSError, ValueError):
            chunk = None
        if chunk:
            self._buffer += chunk
        if b"done " in self._buffer:
            self._buffer = self._buffer.split(b"\n")[-1] if self._buffer.endswith(b"\n") is False else b""
            return "done"
        if self.proc.poll() is not None:
            self.proc = None
            return "died"
        if time.monotonic() - self.started > limit:
            self.stop()
            return "overdue"
        return "running"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self.proc = None
