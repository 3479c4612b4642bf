"""An empty folder."""
FILES = {}
EMPTY = True
EXPECT = {"score": 0, "flags": set(), "message": "empty"}
