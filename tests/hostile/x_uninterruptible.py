"""Ignores SIGINT and loops forever before the last test: the notebook deadline stops it."""
def build(nb):
    idx = [i for i, c in enumerate(nb["cells"]) if c["metadata"].get("nbgrader", {}).get("grade_id") == "adjoint_trace"][0]
    nb["cells"].insert(idx, {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
        "source": "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"})
    return nb
EXPECT = {"score": 4, "flags": set(), "message": "longer than"}
