"""A top-level infinite loop in a learner cell (interruptible)."""
PREPEND = ["while True:\n    pass"]
EXPECT = {"score": 7, "flags": set(), "message": "interrupted"}
