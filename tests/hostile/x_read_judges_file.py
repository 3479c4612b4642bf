"""The adjoint reads autograder/nb01/judges.py from disk, cuts the judges' reference function out of it and runs it
in the cases' namespace (which works wherever the file is there): the sandbox's copy has no judges module."""
ANSWERS = {"adjoint_trace": """import ast, os, autograder, autograder.nb01.cases as module
def adjoint_trace(x1, x2):
    source = open(os.path.join(os.path.dirname(autograder.__file__), 'nb01', 'judges.py')).read()
    found = [n for n in ast.parse(source).body if getattr(n, 'name', '') == 'reference_adjoints'][0]
    namespace = dict(vars(module))
    exec(ast.get_source_segment(source, found), namespace)
    return namespace['reference_adjoints'](x1, x2)"""}
NEEDS_SANDBOX = True
EXPECT = {"score": 4, "flags": {"reaches_for_grader"}, "message": "FileNotFoundError"}
