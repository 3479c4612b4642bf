"""Valid JSON, a million arrays deep, and nothing else."""
FILES = {"tiny.ipynb": b"[" * 1_000_000 + b"]" * 1_000_000}
EXPECT = {"score": 0, "flags": set(), "message": "not a Jupyter notebook"}
