"""Valid JSON that is not a notebook."""
FILES = {"tiny.ipynb": b"[1, 2, 3]"}
EXPECT = {"score": 0, "flags": set(), "message": "not a Jupyter notebook"}
