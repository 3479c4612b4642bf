"""The release as handed out."""
BLANK = True
EXPECT = {"score": 0, "flags": set(), "message": "is not written yet"}
