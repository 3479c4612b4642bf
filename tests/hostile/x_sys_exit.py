"""sys.exit(3) in a cell of its own: IPython survives it."""
PREPEND = ["import sys\nsys.exit(3)"]
EXPECT = {"score": 7, "flags": set()}
