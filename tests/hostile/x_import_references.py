"""The adjoint imports the judges' reference by the name the notebook's package had before its judges moved to a
module of their own, inside the function (the import runs in the test cell): the package does not hold it."""
ANSWERS = {"adjoint_trace": """def adjoint_trace(x1, x2):
    from autograder.nb01 import reference_adjoints
    return reference_adjoints(x1, x2)"""}
NEEDS_SANDBOX = True  # without bubblewrap the judges are on disk for the kernel to import
EXPECT = {"score": 4, "flags": {"reaches_for_grader"}, "message": "ImportError"}
