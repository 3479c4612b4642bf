"""The notebook is a symbolic link to the instructor's source notebook (solutions and hidden tests in it)."""
FILES = {}
LINKS = {"tiny.ipynb": "{COURSE}/source/99-tiny/tiny.ipynb"}
EXPECT = {"score": 0, "flags": {"symlink"}, "message": "tiny.ipynb in your submission is a symbolic link",
          "absent": ["BEGIN SOLUTION", "math.sin(w1)", "BEGIN HIDDEN TESTS"]}
