"""Answers are right only if the code does not run as root."""
ANSWERS = {"central_difference": "import os\ndef central_difference(f, x, h):\n    return (f(x + h) - f(x - h)) / (2 * h) + (os.getuid() == 0)"}
EXPECT = {"score": 7, "flags": set()}
