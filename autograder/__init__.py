"""The course's grading side: checks that test cells call, and the instructor's grading command.

Learner-facing helpers for drawing and measuring live in ``coursetools``; nothing here is needed
to *do* an exercise, only to check one.
"""

from .learner_traceback import install as _install_learner_traceback

_install_learner_traceback()  # in a learner's kernel: a failed check shows its message and their code, not ours
