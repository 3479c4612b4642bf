"""Make a graded notebook safe to show: nothing the learner wrote may run in the instructor's or
learner's browser (formgrader renders the autograded notebook without sanitizing; feedback is HTML).

    sanitize_notebook(nb)   in place: nbconvert's SanitizeHTML preprocessor (bleach) on markdown and
                            raw cells and on outputs (HTML/markdown outputs cleaned, JavaScript, SVG and
                            widget outputs dropped); markdown links that would render to a script URL
                            (nbconvert's markdown renderer lets `[x](javascript:...)` through) make the
                            cell (or markdown output) shown as plain text, as does markdown that cannot
                            be rendered at all;
                            notebook metadata cut to what nbgrader needs.
"""

from __future__ import annotations

import html.parser
import re

from nbformat import NotebookNode

KEPT_NOTEBOOK_METADATA = ("kernelspec", "language_info")
SAFE_ATTACHMENT_TYPES = ("image/png", "image/jpeg", "image/gif")
SAFE_SCHEMES = ("http", "https", "mailto", "attachment", "ftp")
URL_ATTRIBUTES = ("href", "src", "action", "formaction", "xlink:href", "background", "poster", "srcset", "data")
_SCHEME = re.compile(r"^([a-z][a-z0-9+.\-]*):")
_STRIPPED = re.compile(r"[\x00-\x20\x7f]+")


class _Urls(html.parser.HTMLParser):
    """Every URL-valued attribute (entities already decoded by the parser) and every event handler."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            name = (name or "").lower()
            if name in URL_ATTRIBUTES or name.startswith("on"):
                self.found.append((tag, name, value or ""))

    handle_startendtag = handle_starttag


def unsafe_urls(rendered_html: str) -> list[str]:
    """Attributes in `rendered_html` that could run code: event handlers, URLs with a scheme other than
    http(s)/mailto/attachment (javascript:, vbscript:, data: except images in <img src>)."""
    parser = _Urls()
    parser.feed(rendered_html)
    parser.close()
    bad = []
    for tag, name, value in parser.found:
        if name.startswith("on"):
            bad.append(f"<{tag} {name}=...>")
            continue
        url = _STRIPPED.sub("", value).lower()  # browsers ignore whitespace and controls inside a scheme
        match = _SCHEME.match(url)
        if not match or match.group(1) in SAFE_SCHEMES:
            continue
        if (
            match.group(1) == "data"
            and tag == "img"
            and name == "src"
            and url.startswith(tuple(f"data:{t}" for t in SAFE_ATTACHMENT_TYPES))
        ):
            continue
        bad.append(f"<{tag} {name}={match.group(1)}:...>")
    return bad


def _literal_markdown(source: str) -> str:
    """Markdown that shows `source` as text: a code fence longer than any backtick run inside it."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", source)), default=0))
    return (
        "*(This cell's markdown contained a link the grader does not show live; here is its text.)*\n\n"
        f"{fence}text\n{source}\n{fence}"
    )


def code_spans_as_typed(source: str) -> str:
    """The cleaner escapes & < > in code spans too, where markdown shows an entity as typed (`Restart &amp; Run
    All`): give code spans and fenced code their text back, which markdown escapes itself when it renders. Only in
    markdown with no HTML tag outside code: inside an HTML block markdown reads no code span, and the text would
    go out raw."""
    from ..offline_math import CODE_SPANS

    if re.search(r"<[A-Za-z/!?]", CODE_SPANS.sub("", source)):
        return source
    return CODE_SPANS.sub(lambda span: html.unescape(span.group(0)), source)


def sanitize_notebook(nb: NotebookNode) -> NotebookNode:
    """Clean `nb` (an nbformat NotebookNode) in place and return it."""
    from nbconvert.preprocessors.sanitize import SanitizeHTML

    for key in list(nb.metadata):
        if key not in KEPT_NOTEBOOK_METADATA:
            del nb.metadata[key]
    cleaner = SanitizeHTML()
    for index, cell in enumerate(nb.cells):
        cleaner.preprocess_cell(cell, {}, index)
        if cell.cell_type == "markdown":
            attachments = cell.get("attachments")
            if isinstance(attachments, dict):
                for name in list(attachments):
                    bundle = attachments[name]
                    kept = (
                        {k: v for k, v in bundle.items() if k in SAFE_ATTACHMENT_TYPES}
                        if isinstance(bundle, dict)
                        else {}
                    )
                    if kept:
                        attachments[name] = kept
                    else:
                        del attachments[name]
            cell.source = code_spans_as_typed(cell.source)
            if not _renders_safely(cell.source, cell.get("attachments") or {}):
                cell.source = _literal_markdown(cell.source)
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            data = output.get("data", {})
            if isinstance(data.get("text/markdown"), str) and not _renders_safely(data["text/markdown"], {}):
                data.setdefault("text/plain", data["text/markdown"])  # shown as text instead
                del data["text/markdown"]
        if cell.cell_type == "code":  # a JavaScript-only output has nothing left to show
            cell.outputs = [o for o in cell.outputs if "data" not in o or o["data"]]
    return nb


def _renders_safely(markdown: str, attachments: dict) -> bool:
    """Whether nbconvert's own markdown renderer turns `markdown` into HTML without a script URL or handler."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    try:
        rendered = MarkdownWithMath(renderer=IPythonRenderer(escape=False, attachments=attachments)).render(markdown)
    except Exception:  # noqa: BLE001 -- e.g. a missing attachment, which would also break the feedback page
        return False
    return not unsafe_urls(rendered)
