"""Every answer right, in a notebook saved as nbformat 3 (an older Jupyter)."""
import json

import nbformat


def build(nb):
    return json.dumps(nbformat.convert(nbformat.from_dict(nb), 3)).encode()


EXPECT = {"score": 7, "flags": set(), "message": "nbformat 3"}
