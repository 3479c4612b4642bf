"""The grader's launcher of the course's stand-in kernels (autograder/course_kernels.py), for one run.

A Function check binds the notebook's kernel names to the stand-ins; each launch comes here on a socket of the
grader's, in its own folder of the record channel (``grader/launches.sock``), as data: the storages of the tensors
the launch was handed and their layouts (autograder/probes/launches.py). A thread here rebuilds them (refusing any
layout outside the bytes sent), runs the course's stand-in on them -- course code, on the learner's numbers: no
learner text runs here -- logs what it stored, and sends the storages back with the launch's number. The judges read
this log (autograder/judges/launch_evidence.py), never a count kept in the kernel's process.

Bounded so that a flood costs only the flooder: one launch at a time, each at most MAX_LAUNCH_BYTES, each connection
given CONNECTION_TIMEOUT_S, and the log keeps the last launches (KEEP_LAUNCHES, LOG_BYTES).
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

from ..probes.launches import LAUNCH_SOCKET, LaunchLog, pack, read_frame, send_frame, unpack
from .unix_socket import listen

CONNECTION_TIMEOUT_S = 30.0


class LaunchService:
    def __init__(self, folder: Path):
        self.log = LaunchLog()
        self.cell: str | None = None  # the test cell running now (set by the record collector)
        self.refused = 0  # frames that were no launch
        self.path = folder / LAUNCH_SOCKET
        self.listener = _listen(self.path)
        self.stopping = False
        self.thread = threading.Thread(target=self._run, name="revad-launches", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopping = True
        try:  # wake the thread's accept() now, not at its next look (every run of a notebook ends here)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as wake:
                wake.settimeout(1.0)
                wake.connect(str(self.path))
        except OSError:
            pass
        self.thread.join(timeout=CONNECTION_TIMEOUT_S + 5)
        self.listener.close()

    def _run(self) -> None:
        while not self.stopping:
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self.stopping:  # stop()'s own connection, or a launch after the run: none is made
                conn.close()
                return
            with conn:
                conn.settimeout(CONNECTION_TIMEOUT_S)
                try:
                    self._serve(conn)
                except (OSError, ValueError):  # broke off, or not a frame: the launch (if any) was not made
                    self.refused += 1

    def _serve(self, conn: socket.socket) -> None:
        from ..course_kernels import execute

        header, blobs = read_frame(conn)
        cell = self.cell  # the cell running when the launch came
        try:
            name, grid, values = unpack(header, blobs)
            done = execute(name, grid, values)
        except ValueError as error:
            self.refused += 1
            send_frame(
                conn,
                {"error": f"the grader could not run this launch: {error}", "type": "ValueError", "storages": []},
                [],
            )
            return
        except Exception as error:  # noqa: BLE001 -- the stand-in's own complaint about its arguments, for the learner
            send_frame(conn, {"error": str(error)[:2000], "type": type(error).__name__, "storages": []}, [])
            return
        number = self.log.add(name, done, cell)
        _, back = pack(name, grid, values)  # the storages as the stand-in left them, in the order they came
        send_frame(conn, {"number": number, "storages": [b.numel() for b in back]}, back)


def _listen(path: Path) -> socket.socket:
    sock = listen(path, 16)
    sock.settimeout(0.2)  # a look at `stopping` between connections
    return sock
