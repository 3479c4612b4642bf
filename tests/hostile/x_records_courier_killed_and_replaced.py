"""Against the probe's courier: `adjoint_trace` is blank (zeros); while a probe calls it, it works the right answers
out with autograd and sends a record of them to the grader's socket itself, and a thread (started under a name the
screen does not read) kills each courier of that test as it starts, so that the learner's record would be the only
one. A probe whose courier dies says so in the channel and stops the cell with an error; a record that comes twice
(the thread too late) is not judged either way: 4 of 7, record_forged."""
from hostile.record_attacks import ADJOINT_HEAD, HELPERS, ZEROS

PREPEND = [
    HELPERS
    + """

def _kill(pid):
    if _courier(pid):
        os.kill(pid, signal.SIGKILL)

_each_new_child(_kill)"""
]
ANSWERS = {
    "adjoint_trace": ADJOINT_HEAD
    + """    if len(RIGHT[k]) == len(params['at']):
        _send(k)
"""
    + ZEROS
}
EXPECT = {"score": 4, "flags": {"record_forged", "by_hand_with_autograd", "reaches_for_grader"}, "message": "did not judge"}
