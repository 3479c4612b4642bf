"""An answer's own helpers written into their calls (autograder/helpers_inlined.py), the form the similarity check
compares besides the answer as written: what is written in, what is left as it was."""

from __future__ import annotations

import ast
import textwrap

import pytest

from autograder.helpers_inlined import helpers_inlined


def inlined(code: str) -> str | None:
    return helpers_inlined(textwrap.dedent(code))


def same(a: str, b: str) -> bool:
    return ast.dump(ast.parse(a)) == ast.dump(ast.parse(textwrap.dedent(b)))


def test_a_returning_helper_becomes_its_expression_and_its_statements_go_before_the_call():
    out = inlined(
        """
        def shifted(values, i, step):
            '''A copy with entry i moved.'''
            moved = list(values)
            moved[i] = moved[i] + step
            return moved

        def check(f, xs, h=1e-6):
            up = f(shifted(xs, 0, h))
            down = f(shifted(xs, 0, -h))
            return (up - down) / (2 * h)
        """
    )
    assert out is not None and same(
        out,
        """
        def check(f, xs, h=1e-6):
            moved = list(xs)
            moved[0] = moved[0] + h
            up = f(moved)
            moved = list(xs)
            moved[0] = moved[0] - h
            down = f(moved)
            return (up - down) / (2 * h)
        """,
    ), out


def test_a_nested_helper_called_as_a_statement_becomes_its_body():
    out = inlined(
        """
        def order(root):
            seen, stack = {}, []

            def push(node):
                seen[id(node)] = True
                stack.append(node)

            push(root)
            while stack:
                push(stack.pop().parent)
            return seen
        """
    )
    assert out is not None and same(
        out,
        """
        def order(root):
            seen, stack = {}, []
            seen[id(root)] = True
            stack.append(root)
            while stack:
                seen[id(stack.pop().parent)] = True
                stack.append(stack.pop().parent)
            return seen
        """,
    ), out


def test_an_early_return_becomes_a_conditional_expression_and_defaults_and_keywords_bind():
    out = inlined(
        """
        def relative(a, b, floor=0.0):
            scale = max(abs(a), abs(b))
            if scale == floor:
                return 0.0
            return abs(a - b) / scale

        def errors(pairs):
            return [relative(b=n, a=g) for g, n in pairs]
        """
    )
    assert out is not None and same(
        out,
        """
        def errors(pairs):
            scale = max(abs(g), abs(n))
            return [0.0 if scale == 0.0 else abs(g - n) / scale for g, n in pairs]
        """,
    ), out


def test_a_helper_calling_a_helper_is_written_in_too():
    out = inlined(
        """
        def square(x):
            return x * x

        def norm(v):
            return sum(square(e) for e in v) ** 0.5

        def answer(v):
            return norm(v) + 1
        """
    )
    assert out is not None and same(out, "def answer(v):\n    return sum(e * e for e in v) ** 0.5 + 1\n"), out


def test_what_no_person_would_inline_by_hand_is_left_as_written():
    recursive = """
        def visit(node, out):
            for p in node.parents:
                visit(p, out)
            out.append(node)

        def order(root):
            out = []
            visit(root, out)
            return out
        """
    middle_return = """
        def first_big(xs):
            for x in xs:
                if x > 3:
                    return x
            return None

        def answer(xs):
            return first_big(xs) or 0
        """
    decorated = """
        import functools

        @functools.cache
        def fib(n):
            return n

        def answer(n):
            return fib(n)
        """
    starred = """
        def add(a, b):
            return a + b

        def answer(pair):
            return add(*pair)
        """
    for code in (recursive, middle_return, decorated, starred):
        assert inlined(code) is None, code


def test_an_answer_without_helpers_or_that_does_not_parse_has_no_other_form():
    assert inlined("def f(x):\n    return x + 1\n") is None
    assert inlined("def f(x):\n    return x +\n") is None
    assert inlined("raise NotImplementedError()\n") is None


@pytest.mark.slow  # reads every solution notebook
def test_every_answer_and_course_cell_comes_out_as_python_or_as_none():
    """Over every planted answer and every code cell of the solutions: no crash, and what comes out parses (the
    inliner alone, and the whole normal form)."""
    import nbformat

    from autograder.coursedir import SOLUTIONS
    from benchmarks.similarity import planted_answers

    codes = [code for answers in planted_answers().values() for code in answers.values()]
    for path in sorted(SOLUTIONS.glob("*/*.ipynb")):
        codes += [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    from autograder.similarity import normal_form

    written_in = 0
    for code in codes:
        out = helpers_inlined(code)
        if out is not None:
            ast.parse(out)
            written_in += 1
        normal, reshaped = normal_form(code)  # with the statements in order too
        if reshaped:
            ast.parse(normal)
    assert len(codes) > 400 and written_in >= 20, (len(codes), written_in)


DEEP = {  # a learner's cell can be anything: nested past what Python's parser, or a walker of its tree, takes
    "unary minus 10^4 deep (the parser runs out of memory)": "x = " + "-" * 10_000 + "1",
    "unary minus 10^3 deep (the parser runs out of stack)": "x = " + "-" * 1_000 + "1",
    "a sum of 5000 terms (ast.unparse runs out of stack)": "x = " + " + ".join(["1"] * 5_000),
    "a helper called 10^3 deep": "def f(a):\n    return a\n\n\ny = " + "f(" * 1_000 + "1" + ")" * 1_000,
}


@pytest.mark.slow  # fingerprints a 5 000-term sum
def test_an_answer_nested_too_deep_has_no_other_form_and_is_compared_as_written():
    import numpy as np

    from autograder.similarity import compare_exercise, normal_form

    for name, code in DEEP.items():
        assert helpers_inlined(code) is None and normal_form(code) == (code, False), name
    summed = "a sum of 5000 terms (ast.unparse runs out of stack)"
    deepest = "unary minus 10^4 deep (the parser runs out of memory)"
    answers = {summed: DEEP[summed], "its twin": DEEP[summed], deepest: DEEP[deepest], "plain": "x = sum(range(9))\n"}
    comparison = compare_exercise("deep", answers, np.array([], dtype=np.int64), None)
    assert comparison.compared and comparison.answers == 4
    assert (summed, "its twin") in {(p.first, p.second) for p in comparison.pairs}
