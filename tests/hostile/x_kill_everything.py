"""Kills every process it can see (pid 1 of the sandbox included) after the tests: nothing is lost."""
APPEND = ["import os, signal\nfor pid in range(1, 200):\n    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass"]
NEEDS_SANDBOX = True  # only bubblewrap hides files, the network and other processes
EXPECT = {"score": 7, "flags": set(), "message": "kernel crashed"}
