"""The whole submission folder is a symbolic link to the instructor's source folder."""
FOLDER_LINK = "{COURSE}/source/99-tiny"
EXPECT = {"score": 0, "flags": {"symlink"}, "message": "is a symbolic link", "absent": ["BEGIN SOLUTION", "math.sin(w1)"]}
