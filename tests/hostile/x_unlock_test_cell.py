"""Wrong primal trace; the test cell is marked as an answer cell and edited."""
ANSWERS = {"primal_trace": WRONG["primal_trace"]}
def build(nb):
    for cell in nb["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("grade_id") == "test_primal_trace":
            meta.update(solution=True, locked=False)
            cell["source"] = "pass"
    return nb
EXPECT = {"score": 5, "flags": {"locked_cell_edited", "metadata_changed"}}
