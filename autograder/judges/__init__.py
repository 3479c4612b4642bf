"""What decides OUTSIDE the grading sandbox: the judges.

``@decides("check_x", draw=draw_x) def judge_x(data, **params) -> points | Verdict | None`` recomputes its
references itself (PyTorch's autograd, independent computations), accepts only a complete answer to exactly the
cases it asked for, and raises :class:`autograder.feedback.CheckFailed` with the learner's message otherwise.
Nothing here is ever mounted into the sandbox; probes never import it.
"""
