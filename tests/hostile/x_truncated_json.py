"""A correct notebook cut in half."""
def build(nb):
    import json
    text = json.dumps(nb).encode()
    return text[: len(text) // 2]
EXPECT = {"score": 0, "flags": set(), "message": "cut short"}
