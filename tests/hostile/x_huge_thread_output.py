"""Prints hundreds of megabytes from a thread of its own."""
APPEND = ["import threading\nt = threading.Thread(target=lambda: [print('t' * 1_000_000) for _ in range(400)])\nt.start()\nt.join()"]
EXPECT = {"score": 7, "flags": {"reaches_for_grader"}, "message": "dropped"}  # a thread is flagged, not scored
