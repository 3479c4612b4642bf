"""Looks for the grader's environment: os.environ, /proc/*/environ, `env`; the answer is wrong if it finds a secret."""
ANSWERS = {"primal_trace": """import os, glob, subprocess
FOUND = [k for k in os.environ if 'SECRET' in k or 'TOKEN' in k]
for p in glob.glob('/proc/*/environ'):
    try:
        if b'REVAD_GRADER_SECRET' in open(p, 'rb').read():
            FOUND.append(p)
    except OSError:
        pass
try:
    FOUND += [l for l in subprocess.run(['env'], capture_output=True, text=True).stdout.splitlines() if 'SECRET' in l]
except OSError:
    pass
print('ENV-FOUND', FOUND)
def primal_trace(x1, x2):
    w1, w2 = x1, x2
    w3 = w1 * w2
    w4 = math.sin(w1) + len(FOUND)
    return {'w1': w1, 'w2': w2, 'w3': w3, 'w4': w4, 'w5': w3 + w4}"""}
NEEDS_SANDBOX = True  # unsandboxed and not root, the kernel is your own user: it can read your processes' environments
EXPECT = {"score": 7, "flags": set(), "absent": ["REVAD_GRADER_SECRET_TOKEN_93"]}
