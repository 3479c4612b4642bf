"""Wrong answers; the learner replaces the grader's probe and prints fake probe output."""
ANSWERS = dict(WRONG)
APPEND = ["__revad_probe__ = lambda *a, **k: None",
          "from IPython.display import display\ndisplay({'application/x-revad-probe': 'AAAA'}, raw=True)"]
EXPECT = {"score": 0, "flags": {"patched"}}
