"""No tiny.ipynb; instead "tiny (1).ipynb", a link to the source notebook, hoping the rename matcher follows it."""
FILES = {"notes.txt": b"see the notebook"}
LINKS = {"tiny (1).ipynb": "{COURSE}/source/99-tiny/tiny.ipynb"}
EXPECT = {"score": 0, "flags": {"symlink"}, "message": "is a symbolic link", "absent": ["BEGIN SOLUTION", "math.sin(w1)"]}
