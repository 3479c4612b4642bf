"""An answer's independent statements in one order (autograder/statement_order.py), the other half of the normal
form the similarity check compares: what may move, what may not."""

from __future__ import annotations

import ast
import textwrap

from autograder.statement_order import in_canonical_order


def ordered(code: str) -> str:
    return ast.unparse(in_canonical_order(ast.parse(textwrap.dedent(code))))


def test_statements_that_touch_none_of_each_others_names_come_out_in_one_order():
    first = """
        def f(root):
            order = []
            seen = {}
            stack = [root]
            return order, seen, stack
        """
    swapped = """
        def f(root):
            stack = [root]
            seen = {}
            order = []
            return order, seen, stack
        """
    assert ordered(first) == ordered(swapped)


def test_the_order_depends_on_what_statements_do_not_on_their_names():
    one = "def f(a):\n    xs = []\n    ys = {}\n    return xs, ys\n"
    other = "def f(a):\n    zz = {}\n    aa = []\n    return aa, zz\n"
    shape = [type(s.value).__name__ for s in ast.parse(ordered(one)).body[0].body[:2]]  # type: ignore[attr-defined]
    other_shape = [type(s.value).__name__ for s in ast.parse(ordered(other)).body[0].body[:2]]  # type: ignore[attr-defined]
    assert shape == other_shape


def test_a_statement_keeps_its_place_after_what_it_reads_or_changes():
    """Each second statement's text sorts first, so it would move up were it free: the controls (other names) do."""
    for code, control in (
        ("x = g()\ny = (x, 1)\n", "x = g()\ny = (z, 1)\n"),  # reads what the first writes
        ("xs.append(1)\nfirst = xs[0]\n", "xs.append(1)\nfirst = ys[0]\n"),  # a method call changes its object
        ("d[k] = 2\nv = d[k]\n", "d[k] = 2\nv = e[k]\n"),  # a subscript store changes the dict
    ):
        assert ordered(code) == ast.unparse(ast.parse(code)), code
        moved = ast.parse(control).body[::-1]
        assert ordered(control) == ast.unparse(ast.Module(moved, [])), control


def test_nothing_moves_across_a_loop_or_a_return_inside_a_function():
    code = """
        def f(xs):
            total = 0
            for x in xs:
                total += x
            a = []
            return total
        """
    body = ast.parse(ordered(code)).body[0].body  # type: ignore[attr-defined]
    assert [type(s).__name__ for s in body] == ["Assign", "For", "Assign", "Return"]


def test_at_the_top_of_a_cell_a_constant_moved_below_the_function_reads_alike():
    above = "WHITE, GREY = 0, 1\n\n\ndef f(n):\n    return WHITE if n else GREY\n"
    below = "def f(n):\n    return WHITE if n else GREY\n\n\nWHITE, GREY = 0, 1\n"
    assert ordered(above) == ordered(below)


def test_an_if_not_with_an_else_is_turned_around():
    assert ordered("if not ready:\n    wait()\nelse:\n    go()\n") == ordered(
        "if ready:\n    go()\nelse:\n    wait()\n"
    )
    assert ordered("if not ready:\n    wait()\n") == "if not ready:\n    wait()"  # no else: nothing to turn
