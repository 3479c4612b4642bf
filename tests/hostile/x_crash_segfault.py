"""Crashes the interpreter (segmentation fault) before the last answer: that cell is skipped, the rest runs in a fresh kernel."""
def build(nb):
    idx = [i for i, c in enumerate(nb["cells"]) if c["metadata"].get("nbgrader", {}).get("grade_id") == "adjoint_trace"][0]
    nb["cells"].insert(idx, {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
        "source": "import ctypes\nctypes.string_at(0)"})
    return nb
EXPECT = {"score": 7, "flags": {"reaches_for_grader"}, "message": "kernel crashed"}
