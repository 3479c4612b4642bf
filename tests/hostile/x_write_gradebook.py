"""Tries to overwrite the gradebook, the checks and the system."""
APPEND = ["""import os
for p in ["{COURSE}/gradebook.db", "/usr/lib/evil", "{REPO}/autograder/nb01/__init__.py"]:
    try:
        open(p, "w").write("owned")
    except OSError as e:
        print(p, e)"""]
EXPECT = {"score": 7, "flags": set()}
