"""How a graded notebook reads, for the learner (feedback HTML) and for the instructor (formgrader).

* :func:`notes_cell` -- the grader's notes as the notebook's first cell: its messages and each flag
  with its reason. The instructor's copy (``autograded/``, what formgrader shows) has every detail;
  the learner's feedback has the flags that concern them, without the grader's internal errors.
* :func:`feedback_exporter` -- nbgrader's feedback template, rendered for reading anywhere: maths as
  MathML on the server (no MathJax from a CDN; autograder.offline_math) and long lines wrapped.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import nbformat

from .jobs import Flag

NOTES_ROLE = "grader-notes"  # metadata.revad.role of the notes cell, so it is added once


def notes_markdown(messages: list[str], flags: list[Flag], *, for_learner: bool) -> str | None:
    """Markdown for the notes cell, or None when there is nothing to say."""
    lines = []
    if flags:
        heading = "**Flagged for your instructor:**" if for_learner else "**Flagged by the grader:**"
        lines += [heading, ""]
        for flag in flags:
            if for_learner:
                detail = "" if flag.code == "grader_error" else flag.detail
                lines.append(f"- `{flag.code}`: {flag.kind.learner}" + (f" ({detail})" if detail else "") + ".")
            elif flag.code == "grader_error":
                # its detail is the grader's own traceback: kept to the score table and the CSV, since
                # autograded/ may become a learner's feedback through nbgrader generate_feedback
                lines.append(f"- `{flag.code}`: {flag.kind.instructor}.")
            else:
                lines.append(f"- `{flag.code}`: {flag.kind.instructor}" + (f": {flag.detail}" if flag.detail else "."))
        lines.append("")
    if messages:
        lines += ["**From the grader:**", ""] + [f"- {m}" for m in messages]
    return "\n".join(lines).strip() or None


def notes_cell(messages: list[str], flags: list[Flag], *, for_learner: bool) -> nbformat.NotebookNode | None:
    text = notes_markdown(messages, flags, for_learner=for_learner)
    if text is None:
        return None
    cell = nbformat.v4.new_markdown_cell(text)
    cell.metadata["revad"] = {"role": NOTES_ROLE}
    return cell


def with_notes(nb: nbformat.NotebookNode, cell: nbformat.NotebookNode | None) -> nbformat.NotebookNode:
    """`nb` with `cell` as its first cell, replacing a notes cell it already has."""
    nb.cells = [c for c in nb.cells if c.metadata.get("revad", {}).get("role") != NOTES_ROLE]
    if cell is not None:
        nb.cells.insert(0, cell)
    return nb


_EXPORTER = None

# What nbconvert's accessibility pass edits: images (alt text) and JupyterLab's cells (tabindex).
_ACCESSIBILITY_TARGETS = ("<img", "jp-Cell-inputWrapper", "jp-OutputArea-output")


def _exporter_class() -> type:
    from nbconvert import HTMLExporter
    from nbconvert.exporters.templateexporter import TemplateExporter
    from nbconvert.filters.highlight import Highlight2HTML
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

    class FeedbackExporter(HTMLExporter):
        """HTMLExporter without its accessibility pass where that pass has nothing to change. The pass re-parses the
        whole page with BeautifulSoup to give images an alt text and JupyterLab's cells a tabindex: profiled, over
        half of a feedback page's cost, for nothing on a page with neither (nbgrader's feedback template has no
        JupyterLab cells, and most pages have no image). A page that has one is rendered again the stock way."""

        def from_notebook_node(self, nb: Any, resources: Any = None, **kw: Any) -> Any:
            original = copy.deepcopy(resources)
            # the filters HTMLExporter.from_notebook_node registers before it renders (nbconvert 7.17)
            langinfo = nb.metadata.get("language_info", {})
            lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
            self.register_filter(
                "highlight_code", self.filters.get("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self))
            )
            resources = self._init_resources(resources)
            self.register_filter(
                "filter_data_type",
                WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self, resources=resources),
            )
            html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
            if any(target in html for target in _ACCESSIBILITY_TARGETS):
                return super().from_notebook_node(nb, original, **kw)
            return html, resources

    return FeedbackExporter


def feedback_exporter() -> Any:
    """nbgrader's feedback template with the notebook's CSS inlined, maths as MathML, long lines wrapped."""
    global _EXPORTER
    if _EXPORTER is None:
        import nbgrader
        from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor

        from ..offline_math import TEMPLATES, MathToMathML, WrapLongLines

        formgrader = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
        # TEMPLATES/base/mathjax.html.j2 replaces nbconvert's (which loads MathJax from a CDN)
        exporter = _exporter_class()(
            template_name="feedback",
            extra_template_basedirs=[str(formgrader / "templates"), str(TEMPLATES)],
            extra_template_paths=[str(formgrader / "static" / "node_modules" / "bootstrap" / "dist" / "css")],
        )
        exporter.register_preprocessor(CSSHTMLHeaderPreprocessor(), enabled=True)
        exporter.register_preprocessor(WrapLongLines(), enabled=True)
        exporter.register_preprocessor(MathToMathML(), enabled=True)  # last: after any sanitising of markdown
        _EXPORTER = exporter
    return _EXPORTER
