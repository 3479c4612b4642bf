"""The primal trace imports reference functions from autograder.nb01 (where they used to live): not there any more."""
ANSWERS = {"primal_trace": """from autograder.nb01 import reference_primal as primal_trace"""}
EXPECT = {"score": 2, "flags": {"reaches_for_grader"}, "message": "ImportError"}
