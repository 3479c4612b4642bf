"""A listening Unix socket of the grader's, which the sandbox's kernel (another user) may connect to."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def listen(path: Path, backlog: int) -> socket.socket:
    """A socket listening at `path` (bound through its folder's descriptor where the path is too long for one)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    target, fd = str(path), None
    if len(target.encode()) > 100 and hasattr(os, "O_PATH") and os.path.isdir("/proc/self/fd"):
        fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
        target = f"/proc/self/fd/{fd}/{path.name}"
    try:
        sock.bind(target)
    finally:
        if fd is not None:
            os.close(fd)
    os.chmod(path, 0o666)  # any process of the sandbox may connect: each connection is counted
    sock.listen(backlog)
    return sock
