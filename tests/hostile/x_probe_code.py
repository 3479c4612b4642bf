"""Blank answers; the probe's __code__ is rewritten to return made-up traces."""
BLANK = True
PREPEND = ["""import autograder.nb01 as probes
def forged(fn, at):
    return [{'w1': 1.0, 'w2': 2.0, 'w3': 3.0, 'w4': 4.0, 'w5': 5.0} for _ in at]
for name in ('probe_primal_trace', 'probe_adjoint_trace'):
    getattr(probes, name).__code__ = forged.__code__"""]
EXPECT = {"score": 0, "flags": {"reaches_for_grader"}, "message": "is not written yet"}
