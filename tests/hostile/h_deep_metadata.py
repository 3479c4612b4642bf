"""Every answer right; an extension wrote notebook metadata nested 5 000 levels deep (valid JSON)."""
import json


def build(nb):
    nb["metadata"]["ext"] = "DEEP"
    return json.dumps(nb).replace('"DEEP"', "[" * 5000 + "1" + "]" * 5000).encode()


EXPECT = {"score": 7, "flags": set(), "message": "nested more than"}
