"""The servers the suite starts (tests/browser.py's running_server: JupyterHub, JupyterLab, formgrader) leave nothing
running after their test, even when the server is gone before it stopped what it started in sessions of their own."""

from __future__ import annotations

import sys
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser import free_port, running_server  # noqa: E402

# A server that starts a helper in a session of its own (as a hub starts its proxy and each learner's server) and dies
# at SIGTERM without stopping it: the case of a hub killed before its shutdown was done.
SERVER = """
import http.server, pathlib, subprocess, sys
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
pathlib.Path(sys.argv[2]).write_text(str(helper.pid))

class Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()

http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Ok).serve_forever()
"""


def test_a_server_that_dies_before_stopping_its_helpers_leaves_none_running(tmp_path):
    port, pid_file = free_port(), tmp_path / "helper.pid"
    command = [sys.executable, "-c", SERVER, str(port), str(pid_file)]
    with running_server(command, tmp_path / "server.log", f"http://127.0.0.1:{port}/", {}, tmp_path, timeout=60):
        helper = psutil.Process(int(pid_file.read_text()))
        assert helper.is_running() and helper.ppid() != 0
    try:
        helper.wait(timeout=10)
    except psutil.TimeoutExpired:
        helper.kill()
        raise AssertionError("the server's helper outlived its test") from None
