"""os._exit(0) right after the imports: no test can run."""
PREPEND = ["import os\nos._exit(0)"]
EXPECT = {"score": 0, "flags": set(), "message": "kernel stopped"}
