"""Servers for the Celery tests: a redis-server and grading workers, each started on free ports and stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from autograder.coursedir import REPO
from tests.browser import free_port


class Redis:
    """redis-server with an append-only file, so that a restart keeps what was queued."""

    def __init__(self, folder: Path):
        self.folder, self.port, self.proc = folder, free_port(), None
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> Redis:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.folder),
                "--appendonly",
                "yes",
                "--save",
                "",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(100):
            if self.cli("ping").strip() == "PONG":
                return self
            time.sleep(0.1)
        raise RuntimeError("redis-server did not start")

    def cli(self, *args: str) -> str:
        out = subprocess.run(["redis-cli", "-p", str(self.port), *args], capture_output=True, text=True)
        return out.stdout

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: redis writes its append-only file and exits
            self.proc.wait(timeout=30)


class Worker:
    """`python -m autograder worker` in a process group of its own (SIGKILL takes the whole group)."""

    def __init__(
        self,
        broker: str,
        db_url: str,
        course: Path,
        log: Path,
        name: str,
        visibility_s: int = 7200,
        concurrency: int = 1,
        tmpdir: Path | None = None,
    ):
        env = {**os.environ, "REVAD_VISIBILITY_TIMEOUT": str(visibility_s)}
        if tmpdir is not None:  # where the worker's temporary folders go (a test looks there once it stopped)
            tmpdir.mkdir(mode=0o755)
            env["TMPDIR"] = str(tmpdir)
        self.log = log
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "autograder",
                "worker",
                "--broker",
                broker,
                "--db-url",
                db_url,
                "--course-dir",
                str(course),
                "--concurrency",
                str(concurrency),
                "--hostname",
                f"{name}@test",
            ],
            cwd=REPO,
            env=env,
            stdout=open(log, "ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def children(self) -> list[int]:
        import psutil

        try:
            return [p.pid for p in psutil.Process(self.proc.pid).children(recursive=False)]
        except psutil.NoSuchProcess:
            return []

    def grading_started(self) -> bool:
        """Whether a task has started here: the grading process is started by a worker's first task (after the
        task counted its attempt), as a child of Celery's pool process, so it is the worker's grandchild."""
        import psutil

        try:
            return any(p.children() for p in psutil.Process(self.proc.pid).children())
        except psutil.NoSuchProcess:
            return False

    def kill(self) -> None:
        """SIGKILL the worker's whole process group: nothing gets to clean up or acknowledge."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                self.kill()
