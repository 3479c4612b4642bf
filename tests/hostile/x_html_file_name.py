"""Right answers in a notebook whose file name is HTML; the grader's note names the file in the feedback."""
NOTEBOOK_NAME = "tiny <img src=\"x\" onerror=\"pwn('name')\">.ipynb"
EXPECT = {"score": 7, "flags": set(), "message": "graded instead"}
