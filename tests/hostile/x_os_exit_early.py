"""os._exit(0) right after the imports: the notebook goes on in a fresh kernel, every test runs."""
PREPEND = ["import os\nos._exit(0)"]
EXPECT = {"score": 7, "flags": set(), "message": "kernel crashed"}
