"""What a learner sees when a check fails in their notebook: the check's message and their own code.

IPython prints every frame of a traceback, so a failed check used to show the grader's internals
(the registry, the probes, call_learner, with their source comments) and none consistently. This
installs, once per kernel, IPython's hook for one exception type (``set_custom_exc``) for
:class:`CheckFailed`: the traceback it prints keeps only frames of the learner's own code (their
cells and functions) -- in the failure and in the exception that caused it (their crash) -- and
drops every frame from the ``autograder`` package, whichever notebook or check raised it.
"""

from __future__ import annotations

import os
import re
import sys
import textwrap
import types

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_INSTALLED = False


def is_grader_frame(tb: types.TracebackType) -> bool:
    filename = os.path.abspath(tb.tb_frame.f_code.co_filename)
    return filename.startswith(_PACKAGE + os.sep)


def learners_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback with the grader's frames removed (a new chain; the frames themselves are shared)."""
    kept = []
    while tb is not None:
        if not is_grader_frame(tb):
            kept.append(tb)
        tb = tb.tb_next
    chain = None
    for frame_tb in reversed(kept):
        chain = types.TracebackType(chain, frame_tb.tb_frame, frame_tb.tb_lasti, frame_tb.tb_lineno)
    return chain


def trim(exc: BaseException) -> BaseException:
    """`exc` and the exceptions it was raised from, each with only the learner's frames."""
    seen = set()
    current = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current.__traceback__ = learners_frames(current.__traceback__)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return exc


# nbgrader's Validate cuts every traceback line at 87 characters ("..."): lines of at most 70, plus
# "CheckFailed: " and Validate's indent, arrive whole, so the hint at the end of a message is read.
SHOWN_WIDTH = 70


def wrapped(message: str, width: int = SHOWN_WIDTH) -> str:
    """`message` with every line folded at `width`, each continuation keeping its line's indent."""
    out = []
    for line in message.split("\n"):
        lead = re.match(r"\s*(\[[^\]]*\] )?", line).group(0)  # a part's "[FAIL] " hangs its continuation
        out.append(
            textwrap.fill(
                line,
                width,
                subsequent_indent=" " * len(lead),
                break_long_words=False,
                break_on_hyphens=False,
                drop_whitespace=True,
            )
            if len(line) > width
            else line
        )
    return "\n".join(out)


def _show_check_failure(shell, etype, value, tb, tb_offset=None):
    trim(value)
    value.args = (wrapped(str(value)),)
    shell.showtraceback((etype, value, value.__traceback__), tb_offset=tb_offset)
    return None


def install() -> None:
    """In an IPython kernel, print CheckFailed with the learner's frames only (no-op elsewhere)."""
    global _INSTALLED
    if _INSTALLED or "IPython" not in sys.modules:  # not in a kernel: leave IPython unimported
        return
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return
    from .feedback import CheckFailed

    shell.set_custom_exc((CheckFailed,), _show_check_failure)
    _INSTALLED = True
