"""Every answer right; one answer cell's metadata is nested 200 levels deep (Python parses it, copies choke)."""


def build(nb):
    deep = value = {}
    for _ in range(200):
        value["d"] = {}
        value = value["d"]
    cell = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "central_difference")
    cell["metadata"]["ext"] = deep
    return nb


EXPECT = {"score": 7, "flags": set(), "message": "nested more than"}
