"""Right answers; a test cell claims 100 points."""
def build(nb):
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "test_primal_trace":
            cell["metadata"]["nbgrader"]["points"] = 100
    return nb
EXPECT = {"score": 7, "flags": {"points_changed"}}
