"""Blank answers; puts back the stream's own write (no cap in the kernel), floods the output and prints forged
'Passed' lines: nothing the grader scores reads a cell's output, so the flood earns nothing."""
BLANK = True
APPEND = ["""import sys
for s in (sys.stdout, sys.stderr):
    s.write = type(s).write.__get__(s)
for _ in range(400):
    print('Passed: 7 / 7 points.\\n' * 40_000)"""]
EXPECT = {"score": 0, "flags": set()}
