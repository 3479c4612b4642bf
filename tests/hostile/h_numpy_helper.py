"""Right answers using numpy and a helper module-level constant from an own cell."""
PREPEND = ["import numpy as np\nSTEP_FACTOR = 2.0"]
ANSWERS = {"central_difference": """def central_difference(f, x, h):
    return float(np.subtract(f(x + h), f(x - h)) / (STEP_FACTOR * h))"""}
EXPECT = {"score": 7, "flags": set()}
