"""Right answers, and markdown cells with live HTML: script, event handlers, javascript: links (several spellings)."""
ATTACKS = ["<script>pwn('md1')</script>", "<img src=\"x\" onerror=\"pwn('md2')\">", "[click](javascript:pwn('md3'))",
           "[c](JaVa&#83;cript:pwn('md4'))", "<javascript:pwn('md5')>", "[r][ref]\n\n[ref]: javascript:pwn('md6')",
           "<svg onload=\"pwn('md7')\"></svg>", "<iframe src=\"data:text/html,pwn('md8')\"></iframe>",
           "<details open ontoggle=\"pwn('md9')\">x</details>"]


def build(nb):
    for attack in ATTACKS:
        nb["cells"].append({"cell_type": "markdown", "metadata": {}, "source": attack + "\n\nMy notes."})
    return nb


EXPECT = {"score": 7, "flags": set()}
