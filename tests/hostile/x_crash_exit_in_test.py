"""central_difference calls os._exit in the middle of its test; the notebook goes on in a fresh kernel."""
ANSWERS = {"central_difference": """import os
def central_difference(f, x, h):
    os._exit(3)"""}
EXPECT = {"score": 5, "flags": set(), "message": "crashed the Python kernel"}
