"""Blank answers; defaults and keyword defaults of the probes' helpers are rewritten."""
BLANK = True
PREPEND = ["""import autograder.probes.call as call
call.call_learner.__kwdefaults__ = dict(call.call_learner.__kwdefaults__, seconds=None)
import autograder.feedback as fb
fb.as_float.__defaults__ = (0.0,)"""]
EXPECT = {"score": 0, "flags": {"patched", "reaches_for_grader"}, "message": "is not written yet"}
