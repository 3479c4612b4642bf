"""Right answers; every cell's nbgrader metadata is stripped."""
def build(nb):
    for cell in nb["cells"]:
        cell["metadata"].pop("nbgrader", None)
    return nb
EXPECT = {"score": 7, "flags": {"metadata_stripped", "answer_cell_missing"}}
