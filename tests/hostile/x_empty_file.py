"""An empty notebook file."""
FILES = {"tiny.ipynb": b""}
EXPECT = {"score": 0, "flags": set(), "message": "is empty"}
