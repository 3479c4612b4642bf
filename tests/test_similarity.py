"""Similar answers across a class (issue 50), on the planted class of tests/similarity_class/ (notebook 02's answers
by four authors, eight independent learners each, the course's reference answers, and two copiers per author: each
exercise another learner's answer under one disguise). Every planted copy on an exercise long enough to compare is
listed; no pair of independent learners is; the short exercises are said to be too short, not flagged."""

from __future__ import annotations

import csv
import re
import subprocess
import sys

import nbformat
import pytest

from autograder import similarity
from autograder.coursedir import REPO
from benchmarks.similarity import ASSIGNMENT, HELD_OUT, build_class, planted_answers, planted_copies

pytestmark = pytest.mark.slow  # builds classes of 41 notebooks and runs the command

DISGUISES = {"renamed", "reordered", "comments", "temporaries", "inlined"}


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    root = tmp_path_factory.mktemp("similarity") / "course"
    answers = planted_answers()
    build_class(root, answers)
    results, notes = similarity.compare_class(root, ASSIGNMENT)
    return root, answers, {c.exercise: c for c in results}, notes


def pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def test_the_planted_class_is_what_the_issue_asks_for():
    answers, copies = planted_answers(), planted_copies()
    copiers = {c for _, c, _ in copies}
    assert len(set(answers) - copiers) >= 30, "at least 30 learners written independently"
    assert {d for d in copies.values()} == DISGUISES, "every disguise planted"
    assert all(c in answers and o in answers for _, c, o in copies)


def test_copies_renamed_or_recommented_are_listed_on_every_compared_exercise(planted):
    """What the measure is built to see through whole: names and comments. (Reordered statements and temporaries
    change the fingerprints around each edit: docs/figures.md has how many of those it finds.)"""
    _, answers, results, notes = planted
    assert not notes
    checked, missed = 0, []
    for (exercise, copier, original), disguise in planted_copies().items():
        comparison = results[exercise]
        if disguise not in ("renamed", "comments") or not comparison.compared:
            continue
        if not similarity._fingerprint(answers[original].get(exercise, ""), None).hashes:
            continue  # the original left it blank
        checked += 1
        if pair(copier, original) not in {pair(p.first, p.second) for p in comparison.pairs}:
            missed.append((exercise, copier, original, disguise))
    assert checked >= 2 and not missed, (checked, missed)


# Copies that did more than inline or make up a helper (docs/figures.md, "Similar answers across a class"): d10 also
# wrote d08's list comprehension out as a loop; a09's made-up `push` also builds the first entries that a02 writes as
# literals (77 % in normal form); h09 wrote in h03's helper that returns from inside its loop, as a loop with a break
# (the inliner leaves a helper with a return in the middle alone)
REWRITTEN_TOO = {
    ("gradient_check", "d10", "d08"),
    ("topological_order", "a09", "a02"),
    ("topological_order", "h09", "h03"),
}


def test_copies_that_inline_the_originals_helpers_or_make_new_ones_are_listed(planted):
    """A copier who writes the original's helpers into their calls, or pulls its code out into helpers of their own
    (a09's `push`): compared with each answer's helpers written in, they are listed."""
    _, _, results, _ = planted
    inlined = {k for k, disguise in planted_copies().items() if disguise == "inlined" and results[k[0]].compared}
    missed = [
        (exercise, copier, original)
        for exercise, copier, original in sorted(inlined - REWRITTEN_TOO)
        if pair(copier, original) not in {pair(p.first, p.second) for p in results[exercise].pairs}
    ]
    assert len(inlined - REWRITTEN_TOO) >= 6 and not missed, missed
    listed = [
        p for k in inlined - REWRITTEN_TOO for p in results[k[0]].pairs if pair(p.first, p.second) == pair(*k[1:])
    ]
    assert any(p.normal_form for p in listed), "some were found only with the helpers written in"


SPLIT = {  # (expression, its temporaries): a copier's edits to an answer that keep what it computes
    "f(variables).backward()": "out = f(variables)\n    out.backward()",
    "numeric = (f(up).value - f(down).value) / (2 * h)": (
        "f_up = f(up).value\n        f_down = f(down).value\n        difference = f_up - f_down\n"
        "        numeric = difference / (2 * h)"
    ),
    "errors.append(0.0 if scale == 0 else abs(analytic - numeric) / scale)": (
        "gap = abs(analytic - numeric)\n        errors.append(0.0 if scale == 0 else gap / scale)"
    ),
    "numeric_grad = (value_plus - value_minus) / (2 * h)": (
        "change = value_plus - value_minus\n        two_h = 2 * h\n        numeric_grad = change / two_h"
    ),
}


def test_an_expression_split_over_temporaries_is_listed(planted):
    """Each split alone; docs/figures.md has what more splits in one short answer do (three in the reference's 13
    lines: 77 %, not listed)."""
    root, answers, _, _ = planted
    released = nbformat.read(root / "release" / ASSIGNMENT / "scalar_engine.ipynb", as_version=4)
    boilerplate = similarity.boilerplate_of(str(c.source) for c in released.cells if c.cell_type == "code")
    tried = 0
    for original in (answers["reference"]["gradient_check"], answers["c01"]["gradient_check"]):
        for expression, temporaries in SPLIT.items():
            if expression not in original:
                continue
            copy = original.replace(expression, temporaries)
            comparison = similarity.compare_exercise(
                "gradient_check", {"ada": original, "ben": copy}, boilerplate, None
            )
            assert [(p.first, p.second) for p in comparison.pairs] == [("ada", "ben")], (expression, comparison)
            tried += 1
    assert tried >= 4


def test_on_a_class_written_after_the_numbers_were_chosen_renamed_recommented_reordered_and_inlined_copies_are_listed(
    tmp_path,
):
    """tests/similarity_heldout/: four more authors, written after NOISE_T and THRESHOLD were chosen on the planted
    class (docs/figures.md has all its figures, the independent pairs listed among them)."""
    root = tmp_path / "course"
    build_class(root, planted_answers(HELD_OUT))
    results = {c.exercise: c for c in similarity.compare_class(root, ASSIGNMENT)[0]}
    copies = planted_copies(HELD_OUT)
    whole = {
        k: d
        for k, d in copies.items()
        if d in ("renamed", "comments", "inlined", "reordered") and results[k[0]].compared and k not in REWRITTEN_TOO
    }
    missed = [k for k in whole if pair(*k[1:]) not in {pair(p.first, p.second) for p in results[k[0]].pairs}]
    assert len(whole) >= 8 and not missed, missed


def test_answers_identical_but_for_names_are_listed(planted):
    root, answers, _, _ = planted
    original = answers["reference"]["topological_order"]
    renamed = original.replace("uses", "times_used").replace("ready", "frontier").replace("order", "result")
    released = nbformat.read(root / "release" / ASSIGNMENT / "scalar_engine.ipynb", as_version=4)
    boilerplate = similarity.boilerplate_of(str(c.source) for c in released.cells if c.cell_type == "code")
    three = {"ada": original, "ben": renamed, "cleo": answers["a01"]["topological_order"]}
    comparison = similarity.compare_exercise("topological_order", three, boilerplate, original)
    assert [(p.first, p.second, p.shares) for p in comparison.pairs] == [("ada", "ben", (1.0, 1.0))]
    assert "<mark>" in comparison.pairs[0].marked[0]


def test_short_and_uniform_exercises_are_said_so_and_the_others_compared(planted):
    _, _, results, _ = planted
    skipped = {e for e, c in results.items() if not c.compared}
    assert skipped and len(skipped) < len(results), {e: c.compared for e, c in results.items()}
    for exercise in skipped:
        why = results[exercise].why_not
        assert ("too short to compare" in why or "too uniform to compare" in why) and not results[exercise].pairs
    assert {"topological_order", "gradient_check"} <= set(results) - skipped
    assert "too short to compare" in results["variable_mul"].why_not  # one line beyond its template


def test_the_template_alone_is_never_an_answer(planted):
    root, _, _, _ = planted
    released = nbformat.read(root / "release" / ASSIGNMENT / "scalar_engine.ipynb", as_version=4)
    boilerplate = similarity.boilerplate_of(str(c.source) for c in released.cells if c.cell_type == "code")
    template = similarity.answer_cells(released)["topological_order"]
    comparison = similarity.compare_exercise(
        "topological_order", {f"blank{i}": template for i in range(3)}, boilerplate, None
    )
    assert comparison.answers == 0 and not comparison.pairs


def test_the_command_the_report_and_the_csv(planted, tmp_path):
    root, _, results, _ = planted
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    out = subprocess.run(
        [sys.executable, "-m", "autograder", "similarity", ASSIGNMENT, "--course-dir", str(root), "--db-url", db_url],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "topological_order:" in out.stdout and "too short to compare" in out.stdout, out.stdout
    page = (root / "reports" / ASSIGNMENT / "similarity.html").read_text()
    some = next(p for c in results.values() for p in c.pairs)
    assert f"<b>{some.first}</b> and <b>{some.second}</b>" in page and "<mark>" in page
    assert "never" in page and "language model" in page  # what it is, and what it cannot see
    normal = next(p for c in results.values() for p in c.pairs if p.normal_form)
    assert normal.marked[0] in page and normal.marked_normal[0] in page, "as handed in, then as compared"
    assert "In normal form, as compared" in page and normal.marked != normal.marked_normal
    from autograder.gradebook import Gradebook
    from autograder.grading.report import export_csv

    with Gradebook(db_url) as gb:
        gb.update_or_create_assignment(ASSIGNMENT)
        for student in sorted(p.name for p in (root / "submitted").iterdir()):
            gb.update_or_create_student(student)
    with open(export_csv(db_url, tmp_path / "grades.csv")) as fh:
        rows = {r["student_id"]: r for r in csv.DictReader(fh)}
    best = similarity.closest(list(results.values()))
    for student, (value, partner, exercise) in best.items():
        assert rows[student]["highest_similarity"] == f"{value:.2f}"
        assert rows[student]["similar_to"] == f"{partner} ({exercise})"
    alone = [s for s in rows if s not in best]
    assert alone and all(rows[s]["highest_similarity"] == "" for s in alone)


def test_the_class_report_has_the_section(planted, tmp_path):
    from autograder.class_report import write_report
    from autograder.gradebook import Gradebook

    root, _, _, _ = planted
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(db_url) as gb:
        gb.update_or_create_assignment(ASSIGNMENT)
    page = write_report(root, ASSIGNMENT, db_url, tmp_path / "report").read_text()
    assert "<h2>Similar answers</h2>" in page and 'href="similarity.html"' in page
    assert "too short to compare" in page and (tmp_path / "report" / "similarity.html").is_file()
    pairs_page = (tmp_path / "report" / "similarity.html").read_text()
    headings = re.findall(r"<h[12]>([^<]*)</h[12]>", pairs_page)
    assert headings == [f"Similar answers: {ASSIGNMENT}"], headings  # one heading, then each exercise's (h3)
    assert "topological_order: 41 answers compared, " in page and "pair(s) above the threshold" in page
    learners = [p.name for p in (root / "submitted").iterdir()]
    assert not [who for who in learners if f">{who}<" in page or f" {who} " in page], "the report names no one"


def test_a_malformed_notebook_is_a_note_not_a_crash(tmp_path):
    root = tmp_path / "course"
    build_class(root, {"ada": {}, "ben": {}})
    (root / "submitted" / "ben" / ASSIGNMENT / "scalar_engine.ipynb").write_text("{ not json")
    results, notes = similarity.compare_class(root, ASSIGNMENT)
    assert results and len(notes) == 1 and notes[0].startswith("ben: "), notes
