"""Blank answers; the probe function's __globals__ dict is edited to swap its helper."""
BLANK = True
PREPEND = ["""from autograder import nb01
nb01.probe_adjoint_trace.__globals__['_probe_traces'] = lambda fn, name, calls: [dict(w1=1.0, w2=1.0, w3=1.0, w4=1.0, w5=1.0)] * len(calls)"""]
EXPECT = {"score": 0, "flags": {"patched", "reaches_for_grader"}}
