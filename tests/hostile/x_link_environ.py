"""Right answers, plus links to the grader's environment; the answer turns wrong if a link reaches the kernel."""
LINKS = {"environ.txt": "/proc/self/environ", "parent_environ.txt": "/proc/1/environ"}
ANSWERS = {"primal_trace": """import os
LEAK = [open(p, errors='replace').read() for p in ['environ.txt', 'parent_environ.txt'] if os.path.exists(p)]
print('LEAKED-ENV', LEAK)
def primal_trace(x1, x2):
    w1, w2 = x1, x2
    w3 = w1 * w2
    w4 = math.sin(w1) + len(LEAK)
    return {'w1': w1, 'w2': w2, 'w3': w3, 'w4': w4, 'w5': w3 + w4}"""}
EXPECT = {"score": 7, "flags": {"symlink"}, "message": "environ.txt", "absent": ["REVAD_GRADER_SECRET_TOKEN_93"]}
