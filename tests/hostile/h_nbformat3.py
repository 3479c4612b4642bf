"""Every answer right, in a notebook saved as nbformat 3 (an older Jupyter)."""
import json

import nbformat


def build(nb):
    v4 = nbformat.reads(json.dumps(nb), as_version=4)
    return nbformat.writes(nbformat.convert(v4, 3), version=3).encode()


EXPECT = {"score": 7, "flags": set(), "message": "nbformat 3"}
