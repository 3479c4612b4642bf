"""Wrong adjoint; its test cell is deleted."""
ANSWERS = {"adjoint_trace": WRONG["adjoint_trace"]}
def build(nb):
    nb["cells"] = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") != "test_adjoint_trace"]
    return nb
EXPECT = {"score": 4, "flags": {"locked_cell_deleted"}}
