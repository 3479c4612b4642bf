"""Right answers; the submitted file carries a forged saved output and notebook metadata with script in them."""


def build(nb):
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "x": "</script><script>pwn('w')</script>"}}
    nb["metadata"]["title"] = "</title><script>pwn('title')</script>"
    nb["cells"].append({"cell_type": "code", "metadata": {}, "execution_count": 1, "source": "1",
                        "outputs": [{"output_type": "display_data", "metadata": {},
                                     "data": {"text/html": "<script>pwn('saved')</script>", "text/plain": "1"}}]})
    nb["cells"].append({"cell_type": "raw", "metadata": {"format": "text/html"}, "source": "<script>pwn('raw')</script>"})
    return nb


EXPECT = {"score": 7, "flags": set()}
