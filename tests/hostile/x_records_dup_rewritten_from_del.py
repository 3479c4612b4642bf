"""The attack of issue 47 (measured on notebook 05's FusedSiLU and FusedGELU left blank: 30/30, no `record_forged`),
on the tiny assignment: `adjoint_trace` is blank; while a probe calls it, it `os.dup`s the descriptor the probe writes
its record through (the same open file description: the probe's own close then ends nothing) and leaves an object in
the probe runner's `params` dict whose `__del__`, once the probe has written its record and returned, still inside the
test cell, rewrites that record with the right answers worked out by autograd. Before, both records were judged (7
of 7, no `record_forged`). Now a probe hands its record, after the learner's code has returned, to a courier process
of its own that no learner code runs in: there is no record descriptor to duplicate while the learner's code runs and
nothing to rewrite after, so `adjoint_trace` earns nothing: 4 of 7."""
from hostile.record_attacks import ADJOINT_HEAD, DUPLICATES_OF_THE_RECORD, HELPERS, ZEROS

PREPEND = [HELPERS + "\n\n" + DUPLICATES_OF_THE_RECORD]
ANSWERS = {"adjoint_trace": ADJOINT_HEAD + """    if '_rewrite' not in params:
        kept = _dups_of_the_record('test_adjoint_trace', k)

        class Rewrite:
            def __del__(self):
                for dup in kept:
                    os.ftruncate(dup, 0)
                    os.pwrite(dup, _record(k), 0)
                    os.close(dup)

        params['_rewrite'] = Rewrite()
""" + ZEROS}
EXPECT = {"score": 4, "flags": {"by_hand_with_autograd", "reaches_for_grader"}}
