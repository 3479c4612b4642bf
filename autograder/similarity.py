"""Similar answers across a class: every pair of learners' answers to each exercise compared, offline, and the pairs
above a threshold listed for a person to read. A flag, never a score change.

The measure is copydetect's (winnowing, as MOSS does): each answer's code is tokenised, every name becomes `V`
(`F` a function's, `O` a class's) and every string `S`, comments and white space go; its fingerprints are the hashes
of each run of NOISE_T characters of what is left. The course's own code is the boilerplate: a fingerprint found in
any code cell of the released notebook (the answer cell's template, the code the course gives) never counts. A
pair's similarity is, for each of the two answers, the share of its fingerprinted code found in the other; a pair
is listed when both shares reach the threshold (so a copy buried in a much longer answer is not).

Each answer is compared twice: as written, and in its normal form (its own helper functions written into their
calls: autograder/helpers_inlined.py; its independent statements in one order and each `if not` with an else turned
around: autograder/statement_order.py; laid out by ast.unparse); a pair's similarity is the higher of the two.
copydetect alone cannot see through a helper inlined (the original's helper definitions are missing from the copy)
nor, in a short answer, through a few statements swapped; the planted and held-out classes' figures are in
docs/figures.md.

What it sees through: names changed, comments and blank lines changed, helpers inlined or made up (when a person
could inline them by hand), independent statements reordered; an expression split over temporaries changes only the
fingerprints around each edit (enough, where several are split in a short answer, to hide a copy). What it cannot
see: an answer rewritten by hand, or by a language model, with the same idea in other code (a loop for a
comprehension); and it cannot tell a copy from two learners who wrote the same code, which short or prescribed
exercises make common. So an exercise is compared only where its answers differ: where the course's reference
answer, less its template, is shorter than TOO_SHORT fingerprinted characters, it is said to be too short to
compare; where one pair in ten of the class shares UNIFORM of its code or more, too uniform to compare; and no pair
of it is listed.
"""

from __future__ import annotations

import ast
import html
import io
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from .helpers_inlined import helpers_inlined
from .statement_order import in_canonical_order

NOISE_T = 15  # characters of normalised code a fingerprint covers (copydetect: 25; chosen on the planted class)
THRESHOLD = 0.8  # both answers of a listed pair share at least this much of their code (chosen on the planted class)
TOO_SHORT = 120  # fingerprinted characters of the reference answer, template removed, below which nothing is listed
UNIFORM = 0.5  # where one pair in ten of the class shares this much, the exercise's answers are alike: nothing listed


@dataclass(frozen=True)
class SimilarPair:
    exercise: str
    first: str
    second: str
    shares: tuple[float, float]  # of the first's code found in the second's, and the other way
    marked: tuple[str, str] = ("", "")  # the two answers as handed in, as HTML, the code shared as written in <mark>
    normal_form: bool = False  # compared in normal form (helpers written in, statements in one order)
    marked_normal: tuple[str, str] = ("", "")  # then: the two normal forms, the shared code in <mark>

    @property
    def similarity(self) -> float:
        return min(self.shares)


@dataclass
class ExerciseComparison:
    exercise: str
    answers: int  # learners who wrote something of their own here
    compared: bool
    why_not: str = ""
    pairs: list[SimilarPair] = field(default_factory=list)


def _fingerprint(code: str, boilerplate: Any = None) -> Any:
    from copydetect.detector import CodeFingerprint

    return CodeFingerprint("answer.py", NOISE_T, 1, boilerplate, fp=io.StringIO(code))


def normal_form(code: str) -> tuple[str, bool]:
    """The answer as compared besides its own text: its helpers written into their calls, its independent statements
    in one order, laid out by ast.unparse; and whether that changed more than the layout. The text itself where it is
    not Python, or is nested deeper than the parser and the tree's walkers take (a learner's cell can be anything)."""
    try:
        laid_out = ast.unparse(ast.parse(code))
        normal = ast.unparse(in_canonical_order(ast.parse(helpers_inlined(code) or code)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return code, False
    return normal, normal != laid_out


def boilerplate_of(cells: Iterable[str]) -> np.ndarray:
    """The fingerprints of the course's own code (every code cell of the released notebook, as written and in its
    normal form)."""
    hashes: set[int] = set()
    for code in cells:
        hashes |= _fingerprint(code).hashes | _fingerprint(normal_form(code)[0]).hashes
    return np.array(sorted(hashes), dtype=np.int64)


@dataclass
class _Answer:
    written: Any  # the fingerprints of the code as handed in
    normal: Any  # of its normal form
    reshaped: bool  # its normal form is more than the code as written laid out again


def _answer(code: str, boilerplate: np.ndarray) -> _Answer:
    normal, reshaped = normal_form(code)
    return _Answer(_fingerprint(code, boilerplate), _fingerprint(normal, boilerplate), reshaped)


def _closer(first: _Answer, second: _Answer, normal_forms: bool = True) -> tuple[Any, Any]:
    """copydetect's comparison of the two answers as written; and of their normal forms where those share more
    (else None)."""
    from copydetect.detector import compare_files

    written = compare_files(first.written, second.written)
    if not normal_forms or not (first.reshaped or second.reshaped):
        return written, None  # their normal forms are the same code laid out again
    normal = compare_files(first.normal, second.normal)
    return written, (normal if min(normal[1]) > min(written[1]) else None)


def _marked(pair: tuple[_Answer, _Answer], result: Any, form: str) -> tuple[str, str]:
    """The two answers' code (`form`: as written or normal) as HTML, the code copydetect found shared in <mark>."""
    from copydetect.utils import highlight_overlap

    first, second = (
        highlight_overlap(getattr(answer, form).raw_code, cut, "<mark>", "</mark>", escape_html=True)[0]
        for answer, cut in zip(pair, result[2])
    )
    return first, second


def compare_exercise(
    exercise: str,
    answers: dict[str, str],
    boilerplate: np.ndarray,
    reference: str | None,
    threshold: float = THRESHOLD,
    normal_forms: bool = True,
) -> ExerciseComparison:
    """Every pair of `answers` (student -> the cell's code) above `threshold`, unless the exercise is too short.
    `normal_forms=False`: the answers as written only (copydetect's measure alone, for the figures)."""
    prints = {s: _answer(code, boilerplate) for s, code in sorted(answers.items())}
    prints = {s: a for s, a in prints.items() if a.written.hashes}  # a template left as it was has none of its own
    comparison = ExerciseComparison(exercise, len(prints), compared=True)
    if reference is not None and _fingerprint(reference, boilerplate).token_coverage < TOO_SHORT:
        comparison.compared = False
        comparison.why_not = (
            "too short to compare: the course's own answer is a few lines beyond the template, so every right "
            "answer looks alike"
        )
        return comparison
    holders: dict[int, set[str]] = {}  # a fingerprint -> the learners whose answers have it
    for student, answer in prints.items():
        for h in answer.written.hashes | answer.normal.hashes:
            holders.setdefault(h, set()).add(student)
    candidates = {tuple(sorted(p)) for group in holders.values() if len(group) > 1 for p in combinations(group, 2)}
    compared = {pair: _closer(prints[pair[0]], prints[pair[1]], normal_forms) for pair in sorted(candidates)}
    # pairs with no fingerprint in common share nothing: the class's 90th percentile counts them as 0
    pairs = len(prints) * (len(prints) - 1) // 2
    shared = sorted((float(min((normal or written)[1])) for written, normal in compared.values()), reverse=True)
    typical = shared[pairs // 10] if pairs >= 10 and len(shared) > pairs // 10 else 0.0
    if typical >= UNIFORM:
        comparison.compared = False
        comparison.why_not = (
            f"too uniform to compare: answers look alike across the class (one pair in ten shares {typical:.0%} of "
            "its code or more), so a copy cannot be told from the common answer"
        )
        return comparison
    for (first, second), (written, normal) in compared.items():
        shares = (normal or written)[1]
        if min(shares) < threshold:
            continue
        pair = (prints[first], prints[second])
        shared_pair = SimilarPair(
            exercise,
            first,
            second,
            (float(shares[0]), float(shares[1])),
            _marked(pair, written, "written"),
            normal is not None,
            _marked(pair, normal, "normal") if normal is not None else ("", ""),
        )
        comparison.pairs.append(shared_pair)
    comparison.pairs.sort(key=lambda p: -p.similarity)
    return comparison


# --------------------------------------------------------------------------------------------- a course's class


def answer_cells(nb: Any) -> dict[str, str]:
    """grade_id -> code of each answer cell (nbgrader's solution cells) of a notebook."""
    from .grading.read import nbgrader_meta

    out = {}
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type == "code" and meta.get("solution") and meta.get("grade_id"):
            out[str(meta["grade_id"])] = str(cell.source)
    return out


def compare_class(
    course_root: Path,
    assignment: str,
    source: str = "source",
    release: str = "release",
    threshold: float = THRESHOLD,
    normal_forms: bool = True,
) -> tuple[list[ExerciseComparison], list[str]]:
    """Each exercise of the assignment compared across every learner who submitted it; and notes for the instructor
    (a notebook that could not be read)."""
    from .grading.command import submitted_students
    from .grading.read import Unreadable, read_notebook

    notes: list[str] = []
    results = []
    submitted = course_root / "submitted"
    students = submitted_students(course_root, assignment)
    for released_path in sorted((course_root / release / assignment).glob("*.ipynb")):
        released = read_notebook(released_path)
        boilerplate = boilerplate_of(str(c.source) for c in released.cells if c.cell_type == "code")
        source_path = course_root / source / assignment / released_path.name
        references = answer_cells(read_notebook(source_path)) if source_path.is_file() else {}
        by_exercise: dict[str, dict[str, str]] = {gid: {} for gid in answer_cells(released)}
        for student in students:
            path = submitted / student / assignment / released_path.name
            if not path.is_file():
                continue
            try:
                mine = answer_cells(read_notebook(path))
            except Unreadable as why:
                notes.append(f"{student}: {why}")
                continue
            for gid, code in mine.items():
                if gid in by_exercise:
                    by_exercise[gid][student] = code
        for gid, answers in by_exercise.items():
            results.append(compare_exercise(gid, answers, boilerplate, references.get(gid), threshold, normal_forms))
    return results, notes


def closest(results: list[ExerciseComparison]) -> dict[str, tuple[float, str, str]]:
    """student -> (their highest similarity, its partner, the exercise) over the listed pairs."""
    best: dict[str, tuple[float, str, str]] = {}
    for comparison in results:
        for pair in comparison.pairs:
            for me, other in ((pair.first, pair.second), (pair.second, pair.first)):
                if pair.similarity > best.get(me, (0.0, "", ""))[0]:
                    best[me] = (pair.similarity, other, pair.exercise)
    return best


# --------------------------------------------------------------------------------------------- what a person reads


def summary(results: list[ExerciseComparison], named: bool = True) -> list[str]:
    """A line per exercise; `named=False`: the pairs counted, no learner named (the class report is anonymous)."""
    lines = []
    for c in results:
        if not c.compared:
            lines.append(f"{c.exercise}: {c.why_not}.")
        elif not c.pairs:
            lines.append(f"{c.exercise}: {c.answers} answers compared, no pair above the threshold.")
        elif not named:
            lines.append(f"{c.exercise}: {c.answers} answers compared, {len(c.pairs)} pair(s) above the threshold.")
        else:
            listed = ", ".join(f"{p.first} and {p.second} ({p.similarity:.0%})" for p in c.pairs[:10])
            more = f" and {len(c.pairs) - 10} more" if len(c.pairs) > 10 else ""
            lines.append(f"{c.exercise}: {c.answers} answers compared; similar: {listed}{more}.")
    return lines


HOW_IT_WORKS = (
    "Each exercise's answers are compared in pairs with copydetect (winnowing over tokens: names, strings, comments "
    "and white space normalised; the released notebook's own code never counts). A pair is listed when each answer "
    "shares at least {threshold:.0%} of its code with the other, as written or in normal form (each answer's own "
    "helper functions written into their calls, its independent statements in one order). It sees through renamed "
    "variables, changed comments, inlined helpers and reordered statements; a split expression changes the code "
    "around it, and several in a short answer can hide a copy. It cannot see an "
    "answer rewritten by hand or by a language model, nor tell a copy from two learners who wrote the same code. "
    "A listed pair is for a person to read: it changes no score."
)


def _side_by_side(marked: tuple[str, str]) -> str:
    return f"<table class='pair'><tr><td><pre>{marked[0]}</pre></td><td><pre>{marked[1]}</pre></td></tr></table>"


def html_section(results: list[ExerciseComparison], threshold: float = THRESHOLD) -> str:
    """similarity.html under its heading: how it works, each exercise's outcome, each listed pair side by side."""
    rows = []
    for c in results:
        if not c.compared:
            rows.append(f"<h3><code>{html.escape(c.exercise)}</code></h3><p>{html.escape(c.why_not)}.</p>")
            continue
        if not c.pairs:
            rows.append(
                f"<h3><code>{html.escape(c.exercise)}</code></h3><p>{c.answers} answers compared: no pair above "
                "the threshold.</p>"
            )
            continue
        rows.append(f"<h3><code>{html.escape(c.exercise)}</code></h3><p>{c.answers} answers compared.</p>")
        for p in c.pairs:
            form = " in normal form" if p.normal_form else ""
            rows.append(
                f"<p><b>{html.escape(p.first)}</b> and <b>{html.escape(p.second)}</b>: {p.shares[0]:.0%} and "
                f"{p.shares[1]:.0%} shared{form}</p>" + _side_by_side(p.marked)
            )
            if p.normal_form:
                rows.append(
                    "<p>In normal form, as compared (each answer's own helpers written into their calls, its "
                    "independent statements in one order):</p>" + _side_by_side(p.marked_normal)
                )
    return "<p>" + html.escape(HOW_IT_WORKS.format(threshold=threshold)) + "</p>" + "".join(rows)


def save(db_url: str, assignment: str, results: list[ExerciseComparison]) -> None:
    """Each learner's highest similarity, kept in the gradebook for the CSV export (revad_similarity)."""
    from sqlalchemy import delete

    from .grading.record import SIMILARITY, engine

    with engine(db_url).begin() as conn:
        conn.execute(delete(SIMILARITY).where(SIMILARITY.c.assignment == assignment))
        for student, (value, partner, exercise) in sorted(closest(results).items()):
            conn.execute(
                SIMILARITY.insert().values(
                    assignment=assignment, student=student, similarity=value, partner=partner, exercise=exercise
                )
            )


def to_json(results: list[ExerciseComparison]) -> str:
    return json.dumps([asdict(c) for c in results], indent=1)
