"""Feedback and formgrader render maths without a network: LaTeX in markdown becomes MathML on the server."""

from __future__ import annotations

import re

import nbformat
from hypothesis import given
from hypothesis import strategies as st

from autograder.coursedir import COURSE, assignments
from autograder.offline_math import markdown_with_mathml


def test_inline_and_display_maths_become_mathml():
    out = markdown_with_mathml("the trace $w_1, \\dots, w_5$ of\n$$f(x_1, x_2) = x_1 x_2 + \\sin x_1$$")
    assert out.count("<math ") == 2 and 'display="block"' in out and 'display="inline"' in out
    assert "$" not in out and "<msub>" in out


def test_code_prices_and_escaped_dollars_are_not_maths():
    text = "costs $5 and $6; `x = \"$a$\"` stays code; \\$ is a dollar\n```\nprint('$b$')\n```\n"
    assert markdown_with_mathml(text) == text


@given(st.text(alphabet=st.characters(blacklist_characters="$")))
def test_text_without_dollars_is_unchanged(text):
    assert markdown_with_mathml(text) == text


def test_every_formula_of_the_course_converts():
    for assignment in assignments():
        for path in (COURSE / assignment).glob("*.ipynb"):
            for cell in nbformat.read(path, as_version=4).cells:
                if cell.cell_type == "markdown":
                    left = re.findall(r"\$[^$\n]+\$", markdown_with_mathml(re.sub(r"`[^`]*`", "", cell.source)))
                    assert not left, f"{path.name}: not converted: {left[:3]}"
