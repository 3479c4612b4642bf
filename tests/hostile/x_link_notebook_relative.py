"""The notebook is a relative symbolic link up and into the instructor's source folder."""
FILES = {}
LINKS = {"tiny.ipynb": "../../../source/99-tiny/tiny.ipynb"}
EXPECT = {"score": 0, "flags": {"symlink"}, "message": "tiny.ipynb in your submission is a symbolic link",
          "absent": ["BEGIN SOLUTION", "math.sin(w1)"]}
