"""What runs INSIDE the grading sandbox (and in the learner's kernel): the probes.

A probe calls the learner's object, only through :func:`autograder.probes.call.call_learner`, on the
cases it is given, and returns plain data for exactly those cases. Probes hold no references and no
hidden inputs, and never import :mod:`autograder.judges` (which the sandbox does not contain).
"""
