"""Fills the sandbox's /tmp past the memory limit in 64 MB files; right answers only if the writes get through."""
ANSWERS = {"primal_trace": """import os
WRITTEN = 0
try:
    for i in range(56):  # 3.5 GB, more than the 3 GB limit
        with open(f'/tmp/fill{i}', 'wb') as fh:
            fh.write(bytes(64 * 2**20))
        WRITTEN += 64
except OSError as exc:
    print('stopped after', WRITTEN, 'MB:', exc)
for i in range(56):
    try:
        os.remove(f'/tmp/fill{i}')
    except OSError:
        pass
def primal_trace(x1, x2):
    w1, w2 = x1, x2
    w3 = w1 * w2
    w4 = math.sin(w1) + (WRITTEN >= 3072)
    return {'w1': w1, 'w2': w2, 'w3': w3, 'w4': w4, 'w5': w3 + w4}"""}
NEEDS_SANDBOX = True  # without bubblewrap /tmp is the machine's own
EXPECT = {"score": 7, "flags": set()}
