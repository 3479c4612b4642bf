"""A probe's courier: the process that hands one probe record to the grader (``autograder/grading/records.py``).

The probe (``autograder/probes/kernel.py``) starts one for each record, once the learner's code has returned, as

    python -I -S -c <this file's text> FOLDER SOCKET_ID HEADER SIZE      (the record on its standard input)

No learner code runs in it: a fresh interpreter, isolated (``-I``: no environment variable, neither the current nor
the script's folder on its path) and without ``site`` (``-S``), that imports nothing but the standard library's
``_socket``; its descriptors are its own, and its arguments were set by the probe when it started it. It goes into
FOLDER and connects to the grader's socket there only if that socket is still the very one the probe saw when it
was installed (device, inode and change time: ``SOCKET_ID``), so a socket put in its place, or a folder moved, is
refused. It sends one frame -- ``MAGIC``, the header it was given (the record's cell, call, size and SHA-256: the
probe's own arguments) and a newline, then exactly SIZE bytes of its input -- and ends the stream.

The learner's code can write into the courier's input (the probe's end of that pipe is in its process), never into
its arguments: a record whose bytes are not the probe's fails its hash at the grader. It cannot write into the
courier's connection either (no descriptor of it exists outside the courier) nor add a byte after it: the stream
is ended (``shutdown``) before the courier exits. Exit status: 0 sent; 2 the socket is not the grader's; 3 the
input ended early; 1 anything else.

Kept free of imports from the course (it is run with ``-c``): ``autograder/probes/channel.py`` re-exports the names
the grader reads.
"""

import os
import sys

MAGIC = b"revad-record/1\n"
SOCKET_NAME = "records.sock"
READ_CHUNK = 1 << 20


def identity(st: os.stat_result) -> str:
    """What the courier checks of the grader's socket: device, inode and change time (a new file, a link or a change
    of mode moves the last; an inode number used again does not come with the old change time)."""
    return f"{st.st_dev}:{st.st_ino}:{st.st_ctime_ns}"


def main(argv: list) -> int:
    import _socket

    folder, expected, header, size = argv[1], argv[2], argv[3], int(argv[4])
    os.chdir(folder)  # the checks and the connection below go through this folder, whatever is renamed meanwhile
    if identity(os.stat(SOCKET_NAME)) != expected:
        return 2
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    conn.connect(SOCKET_NAME)
    conn.sendall(MAGIC + header.encode() + b"\n")
    left = size
    while left > 0:
        chunk = os.read(0, min(left, READ_CHUNK))
        if not chunk:
            return 3
        conn.sendall(chunk)
        left -= len(chunk)
    conn.shutdown(_socket.SHUT_WR)
    conn.close()
    return 0


if __name__ == "__main__":
    status = 1
    try:
        status = main(sys.argv)
    finally:
        os._exit(status)
