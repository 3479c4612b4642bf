"""What runs INSIDE the grading sandbox (and in the learner's kernel): what every notebook's probes share.

A probe calls the learner's object, only through :func:`autograder.probes.call.call_learner`, on the
cases it is given, and returns plain data for exactly those cases. Each notebook's probes are in its checks
module (``autograder/nbNN.py``); the generic Function probe and the in-kernel setup are here. Probes hold no
references and no hidden inputs, and never import :mod:`autograder.judges` (which the sandbox does not contain).
"""
