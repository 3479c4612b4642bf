"""Not JSON at all."""
FILES = {"tiny.ipynb": b"this is not json {"}
EXPECT = {"score": 0, "flags": set(), "message": "not a readable notebook"}
