"""Prints hundreds of megabytes."""
APPEND = ["for _ in range(400):\n    print('x' * 1_000_000)"]
EXPECT = {"score": 7, "flags": set(), "message": "dropped"}
