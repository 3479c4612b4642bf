"""No notebook, only a text file."""
FILES = {"answers.txt": b"I did it in my head"}
EXPECT = {"score": 0, "flags": set(), "message": "is missing"}
