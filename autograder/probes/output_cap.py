"""A cap on what one cell prints, applied inside the grading kernel before ipykernel buffers it.

ipykernel collects what a cell prints between two sends of its IOPub thread and packs it into one message. A cell
that prints hundreds of megabytes fills that buffer faster than the thread sends it. Packing the message then runs
out of the sandbox's memory in that thread, which logs a MemoryError and sends nothing. The grader never sees the
output, so it cannot tell the learner that output was dropped.

So past a limit per cell, stdout and stderr drop what is written here. The grader's own cap (grading/execute.py,
`output_kb`) still decides what is kept. The kernel's limit is twice that cap (`kernel_environment`), so a cell that
printed too much still arrives over the cap and is reported as cut.

Every grading kernel loads this as an IPython extension (kernel_fork.KERNEL_OPTIONS), after ipykernel has set up its
streams and before the first cell. It cannot be installed from a cell: IPython puts back each stream's `write` as it
was when the cell began (InteractiveShell._tee). Nothing scored depends on it: a learner who removes it only lets
their own kernel run out of memory.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

OUTPUT_LIMIT_VARIABLE = "REVAD_CELL_OUTPUT_LIMIT"


def kernel_environment(output_kb: int) -> dict[str, str]:
    """What a grading kernel's environment needs for its cap, given the output the grader keeps per cell."""
    return {OUTPUT_LIMIT_VARIABLE: str(2 * output_kb * 1024)}


def load_ipython_extension(ip: InteractiveShell) -> None:
    limit = os.environ.get(OUTPUT_LIMIT_VARIABLE, "")
    if limit.isdigit():
        cap_cell_output(int(limit))


def cap_cell_output(limit: int) -> None:
    """Cap the kernel's stdout and stderr at `limit` characters per cell, both streams together. A cell is one
    execute request: ipykernel's streams know it as their parent message."""
    used = {"cell": None, "chars": 0}
    lock = threading.Lock()
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "parent_header"):  # ipykernel's OutStream; any other stream is not the kernel's
            stream.write = _capped(stream, stream.write, used, limit, lock)


def _capped(stream, write: Callable[[str], int | None], used: dict, limit: int, lock: threading.Lock):
    def capped(text):
        if not isinstance(text, str):
            return write(text)  # the stream's own TypeError
        cell = stream.parent_header.get("msg_id")
        with lock:
            if used["cell"] != cell:
                used["cell"], used["chars"] = cell, 0
            room = max(limit - used["chars"], 0)
            used["chars"] += min(len(text), room)
        if room:
            write(text[:room])
        return len(text)  # print() and file.write() callers see the whole text taken, as a full stream would

    return capped
