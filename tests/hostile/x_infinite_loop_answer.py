"""central_difference never returns."""
ANSWERS = {"central_difference": "def central_difference(f, x, h):\n    while True:\n        pass"}
EXPECT = {"score": 5, "flags": set(), "message": "longer than"}
