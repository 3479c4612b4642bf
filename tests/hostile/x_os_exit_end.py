"""Right answers, then os._exit(0) in the last cell: nothing is lost."""
APPEND = ["import os\nos._exit(0)"]
EXPECT = {"score": 7, "flags": set(), "message": "kernel crashed"}
