"""What every notebook's judges share; they decide OUTSIDE the grading sandbox.

A judge, ``@decides("check_x", draw=draw_x) def judge_x(data, **params) -> points | Verdict | None``, is declared in
its notebook's judges module (``autograder/nbNN/judges.py`` or ``judges/``). It recomputes its references itself
(PyTorch's autograd, independent computations), accepts only a complete answer to exactly the cases it asked for, and
raises :class:`autograder.feedback.CheckFailed` with the learner's message otherwise. Here: reading a probe's data
(:mod:`.answers`), verdicts with parts (:mod:`.verdict`) and the generic Function judge (:mod:`.function`).
Nothing here is ever mounted into the sandbox; probes never import it.
"""
