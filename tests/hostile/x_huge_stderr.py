"""Writes hundreds of megabytes to stderr."""
APPEND = ["import sys\nfor _ in range(400):\n    sys.stderr.write('e' * 1_000_000)"]
EXPECT = {"score": 7, "flags": set(), "message": "dropped"}
