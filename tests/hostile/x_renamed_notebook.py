"""Right answers in a notebook saved under another name."""
NOTEBOOK_NAME = "tiny (1).ipynb"
EXPECT = {"score": 7, "flags": set(), "message": "graded instead"}
