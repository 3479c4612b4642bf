"""The probe's error, hidden: `adjoint_trace` answers the visible call right (autograd) and the hidden one with zeros,
but sends the right record for the hidden call to the grader's socket itself, then lowers its own limit on open
files so that the probe cannot start the courier of its record (the probe raises ChannelError), and puts the limit
back once the probe is gone; an IPython exception handler swallows the error, so the cell shows none. Only the
learner's record of the hidden call came, once: with the cell's status read from what it showed, it was judged (7
of 7). The kernel's reply still says the cell ended in an error: the cell scores 0, 4 of 7."""
from hostile.record_attacks import ADJOINT_HEAD, HELPERS, ZEROS

PREPEND = [HELPERS + "\nget_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)"]
ANSWERS = {
    "adjoint_trace": ADJOINT_HEAD
    + """    if k == 0:
        return RIGHT[0][-1]
    if len(RIGHT[k]) == len(params['at']) and '_limit' not in params:
        import resource
        _send(k)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        free = 0
        while True:
            try:
                os.fstat(free)
            except OSError:
                break
            free += 1
        resource.setrlimit(resource.RLIMIT_NOFILE, (free, hard))

        class Limit:
            def __del__(self):
                resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

        params['_limit'] = Limit()
"""
    + ZEROS
}
EXPECT = {"score": 4, "flags": {"by_hand_with_autograd", "patched", "reaches_for_grader"}, "message": "scores 0"}
