"""adjoint_trace aborts the interpreter when its test calls it: that test scores 0, the rest runs in a fresh kernel."""
ANSWERS = {"adjoint_trace": """import os
def adjoint_trace(x1, x2):
    os.abort()"""}
EXPECT = {"score": 4, "flags": set(), "message": "crashed the Python kernel"}
