"""Right answers plus the learner's own scratch cells, prints, a plot and a warning on stderr."""
APPEND = ["print(primal_trace(1.0, 2.0))",
          "import sys\nprint('a note on stderr', file=sys.stderr)",
          "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()"]
EXPECT = {"score": 7, "flags": set()}
