"""Maths in feedback HTML without a network: LaTeX in markdown cells becomes MathML on the server.

nbgrader's feedback template loads MathJax from a CDN, so on a machine without internet a learner
sees raw ``$$...$$``. Browsers render MathML themselves (Chromium, Firefox, Safari), so the
feedback converts every ``$...$`` and ``$$...$$`` of its markdown cells with latex2mathml (pinned
in requirements.txt) and needs no script at all. Code spans, fenced code and ``\\$`` are left
alone; a formula latex2mathml cannot read stays as its LaTeX text, as before.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from nbconvert.preprocessors import Preprocessor

# fenced code blocks and inline code spans are never maths
CODE_SPANS = re.compile(r"(^[ \t]*(```|~~~)[^\n]*\n.*?^[ \t]*\2[ \t]*$|(`+)[^`].*?\3)", re.S | re.M)
# $$display$$ first, then $inline$ (no space after the opening dollar, no digit after the closing one:
# "$5 and $6" is not maths)
_MATH = re.compile(r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|(?<![\\$])\$(?=\S)([^$\n]+?)(?<!\\)\$(?!\d)", re.S)


def tex_to_mathml(tex: str, display: bool) -> str | None:
    from latex2mathml.converter import convert

    try:
        mathml = convert(tex.strip(), display="block" if display else "inline")
    except Exception:  # noqa: BLE001  (latex2mathml raises many kinds of error on TeX it does not know)
        return None
    # keep the source for copy-paste and screen readers that prefer it
    return mathml.replace("<math ", f'<math alttext="{html.escape(tex.strip(), quote=True)}" ', 1)


def _convert_text(text: str) -> str:
    def one(match: re.Match) -> str:
        display = match.group(1) is not None
        mathml = tex_to_mathml(match.group(1) if display else match.group(2), display)
        return mathml if mathml else match.group(0)

    return _MATH.sub(one, text)


def markdown_with_mathml(source: str) -> str:
    """The markdown with its maths as MathML; code spans and fenced code untouched."""
    out, last = [], 0
    for code in CODE_SPANS.finditer(source):
        out.append(_convert_text(source[last : code.start()]))
        out.append(code.group(0))
        last = code.end()
    out.append(_convert_text(source[last:]))
    return "".join(out)


class MathToMathML(Preprocessor):
    """nbconvert preprocessor: markdown cells' LaTeX -> MathML (run it after any HTML sanitising of
    the learner's markdown: the MathML it writes is built from escaped text)."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "markdown":
            cell.source = markdown_with_mathml(cell.source)
        return cell, resources


# Feedback must be readable without scrolling sideways: long lines (a hint, a traceback) wrap.
WRAP_CSS = """
div.output_area pre, div.output_subarea pre, div.output_text pre, div.input_area pre, .highlight pre,
div.text_cell_render pre {
  white-space: pre-wrap; overflow-wrap: anywhere; word-break: normal;
}
div.output_subarea, div.output_area, div.input_area, div.text_cell_render { overflow-x: visible; max-width: 100%; }
math[display="block"] { margin: 0.6em 0; overflow-x: auto; }
"""


class WrapLongLines(Preprocessor):
    """nbconvert preprocessor: adds the wrapping CSS to the page's inlined styles (after
    CSSHTMLHeaderPreprocessor, which fills them)."""

    def preprocess(self, nb, resources):
        resources.setdefault("inlining", {}).setdefault("css", []).append(WRAP_CSS)
        return nb, resources


# A Jupyter data directory whose nbconvert/templates/base/mathjax.html.j2 loads no MathJax. As a template base
# directory it serves our own exporter and `nbgrader generate_feedback`; formgrader resets the base directories,
# so a server that runs it gets this directory first on JUPYTER_PATH, which nbconvert searches as well.
JUPYTER_DATA = Path(__file__).parent / "jupyter_data"
TEMPLATES = JUPYTER_DATA / "nbconvert" / "templates"


def offline_html_config(c) -> None:
    """nbgrader configuration (`c` of an nbgrader_config.py) under which `nbgrader generate_feedback` (and
    formgrader, with JUPYTER_DATA on JUPYTER_PATH) renders maths as MathML, loads no MathJax and wraps long lines."""
    import nbgrader

    formgrader_templates = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"
    c.HTMLExporter.extra_template_basedirs = [str(formgrader_templates), str(TEMPLATES)]
    c.HTMLExporter.preprocessors = ["autograder.offline_math.MathToMathML", "autograder.offline_math.WrapLongLines"]
