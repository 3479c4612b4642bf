"""The course's grading side: checks that test cells call, and the instructor's grading command.

Learner-facing helpers for drawing and measuring live in ``coursetools``; nothing here is needed
to *do* an exercise, only to check one.
"""
