"""Blank answers; the probes return the right traces for the visible test's input (2, 3), hard-coded."""
BLANK = True
PREPEND = ["""import math, autograder.nb01 as probes
def forged(fn, at):
    w3, w4 = 6.0, math.sin(2.0)
    return [{'w1': 2.0, 'w2': 3.0, 'w3': w3, 'w4': w4, 'w5': w3 + w4}]
probes.probe_primal_trace.__code__ = forged.__code__"""]
EXPECT = {"score": 0, "flags": {"patched", "reaches_for_grader"}}
