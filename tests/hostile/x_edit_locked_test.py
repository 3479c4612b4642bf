"""Wrong central difference; its test cell is emptied so nothing fails."""
ANSWERS = {"central_difference": WRONG["central_difference"]}
def build(nb):
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "test_central_difference":
            cell["source"] = "print('all good')"
    return nb
EXPECT = {"score": 5, "flags": {"locked_cell_edited"}}
