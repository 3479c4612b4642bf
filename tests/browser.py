"""Helpers for the browser tests (tests/test_browser.py): servers, Chromium, screenshots.

Playwright (pinned in requirements.txt) drives Debian's chromium (`make system-deps` installs it):
Playwright's own browser download is not used.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
SHOTS = REPO / "build" / "browser"
TOKEN = "browser-test-token"


def require_browser():
    """The browser tests need Playwright and Debian's chromium; say how to get them when missing."""
    try:
        import playwright  # noqa: F401
    except ImportError:
        pytest.skip("Playwright is not installed: make venv (it is pinned in requirements.txt)")
    if not CHROMIUM.exists():
        pytest.skip("chromium is not installed: make system-deps (or apt-get install chromium)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def jupyter_server(command: list[str], tmp: Path, port: int, timeout: float = 120):
    """Run a JupyterLab server command (make lab / make formgrader) until the block ends."""
    # nbgrader's record of submissions lives in the data dir: each test has its own
    env = {"BROWSER": "false", "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"), "JUPYTER_DATA_DIR": str(tmp / "data")}
    base = f"http://127.0.0.1:{port}"
    with running_server(command, tmp / f"server-{port}.log", f"{base}/api/status?token={TOKEN}", env, REPO, timeout):
        yield base


@contextmanager
def running_server(command: list[str], log_path: Path, ready_url: str, env: dict, cwd: Path, timeout: float):
    """Run a server command in a session of its own until the block ends, once `ready_url` answers 200; stop its
    whole process group after (a hub takes its proxy and the servers it spawned with it), and then every process it
    started that is still there: a hub starts its proxy and each learner's server in a session of their own, and one
    killed before it has stopped them (its shutdown outlasting the wait, on a loaded machine) would leave them running
    after the suite."""
    log = log_path.open("wb")
    proc = subprocess.Popen(
        command, cwd=cwd, start_new_session=True, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **env}
    )
    deadline = time.monotonic() + timeout
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail("the server exited early:\n" + log_path.read_text()[-3000:])
            try:
                with urllib.request.urlopen(ready_url, timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the server did not come up within {timeout:.0f} s:\n" + log_path.read_text()[-3000:])
            time.sleep(0.5)
        yield proc
    finally:
        started = _descendants(proc.pid)
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for child in started:  # psutil signals no process that took a reused pid
            try:
                child.kill()
            except psutil.NoSuchProcess:
                pass
        log.close()


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:  # it had already exited
        return []


def server_args(tmp: Path, port: int) -> str:
    """JupyterLab options that keep a test's server to itself: port, token, settings, workspaces."""
    return (
        f"--no-browser --port={port} --ServerApp.port_retries=0 --IdentityProvider.token={TOKEN} "
        f"--LabApp.user_settings_dir={tmp / 'settings'} --LabApp.workspaces_dir={tmp / 'workspaces'}"
    )


class Shots:
    """Numbered screenshots of one test's steps, under build/browser/<test>/ (kept as test artefacts)."""

    def __init__(self, page, name: str):
        self.page, self.n = page, 0
        self.folder = SHOTS / name
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)

    def __call__(self, step: str) -> Path:
        self.n += 1
        path = self.folder / f"{self.n:02d}-{re.sub(r'[^a-z0-9]+', '-', step.lower()).strip('-')}.png"
        self.page.screenshot(path=str(path))
        return path


@contextmanager
def chromium_page(width: int = 1400, height: int = 900):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        try:
            # the token on every request, page loads and the pages' own API calls alike
            context = browser.new_context(
                viewport={"width": width, "height": height}, extra_http_headers={"Authorization": f"token {TOKEN}"}
            )
            context.set_default_timeout(60_000)
            yield context.new_page()
        finally:
            browser.close()
