"""A notebook with no cells."""
def build(nb):
    nb["cells"] = []
    return nb
EXPECT = {"score": 0, "flags": {"answer_cell_missing", "locked_cell_deleted"}, "message": "no code"}
