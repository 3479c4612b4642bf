"""Crashes the interpreter (segmentation fault) before the last test."""
def build(nb):
    idx = [i for i, c in enumerate(nb["cells"]) if c["metadata"].get("nbgrader", {}).get("grade_id") == "adjoint_trace"][0]
    nb["cells"].insert(idx, {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
        "source": "import ctypes\nctypes.string_at(0)"})
    return nb
EXPECT = {"score": 4, "flags": set(), "message": "kernel stopped"}
