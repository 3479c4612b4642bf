"""Wrong answers; IPython's display publisher is replaced so that nothing the grader displays gets out."""
ANSWERS = dict(WRONG)
PREPEND = ["""ip = get_ipython()
ip.display_pub.publish = lambda *a, **k: None"""]
EXPECT = {"score": 0, "flags": {"reaches_for_grader"}}
