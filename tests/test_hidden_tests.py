"""The one reader of nbgrader's hidden-test markers (autograder/hidden_tests.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autograder.hidden_tests import BEGIN, END, hidden_line_numbers, hidden_source_lines, line_kinds, visible_source

pytestmark = pytest.mark.grading

CELL = f"""check(a, x=1)
### {BEGIN}
check(a, draw=2)
check(b, draw=1)
### {END}
print("done")"""


def test_a_cell_splits_into_visible_hidden_and_markers():
    assert line_kinds(CELL) == ["visible", "marker", "hidden", "hidden", "marker", "visible"]
    assert hidden_line_numbers(CELL) == {3, 4}
    assert visible_source(CELL) == 'check(a, x=1)\nprint("done")'
    assert hidden_source_lines(CELL) == ["check(a, draw=2)", "check(b, draw=1)"]


def test_an_unclosed_section_hides_the_rest():
    assert line_kinds(f"a\n# {BEGIN}\nb\nc") == ["visible", "marker", "hidden", "hidden"]


@given(st.lists(st.sampled_from(["x = 1", f"### {BEGIN}", f"### {END}", "check(y)"]), max_size=12))
def test_every_line_is_exactly_one_kind(lines):
    source = "\n".join(lines)
    kinds = line_kinds(source)
    assert len(kinds) == len(source.splitlines())
    visible = [line for line in visible_source(source).splitlines()]
    assert len(visible) + len(hidden_source_lines(source)) + kinds.count("marker") == len(kinds)
    assert not any(BEGIN in line or END in line for line in visible + hidden_source_lines(source))
