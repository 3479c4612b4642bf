"""Blank answers; the probe module's call_learner (a global of the probes) answers instead of the learner."""
BLANK = True
PREPEND = ["""import autograder.nb01.probes as probes
probes.call_learner = lambda fn, *args, **kw: {'w1': 0.0, 'w2': 0.0, 'w3': 0.0, 'w4': 0.0, 'w5': 0.0}"""]
EXPECT = {"score": 0, "flags": {"patched", "reaches_for_grader"}}
