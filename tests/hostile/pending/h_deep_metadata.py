"""Every answer right; an extension wrote notebook metadata nested 5 000 levels deep (valid JSON)."""
import json


def build(nb):
    text = json.dumps(nb)
    deep = "[" * 5000 + "1" + "]" * 5000
    return text.replace('"metadata": {', '"metadata": {"ext": ' + deep + ", ", 1).encode()


EXPECT = {"score": 7, "flags": set(), "message": "nested more than"}
