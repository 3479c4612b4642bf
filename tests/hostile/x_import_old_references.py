"""The primal trace imports the judges' reference function from autograder/nb01/judges.py: the sandbox's copy of
the package has no judges module."""
ANSWERS = {"primal_trace": """from autograder.nb01.judges import reference_primal as primal_trace"""}
NEEDS_SANDBOX = True  # without bubblewrap the kernel imports the whole module, judges and all
EXPECT = {"score": 2, "flags": {"reaches_for_grader"}, "message": "No module named"}
