"""Similar answers across a class (autograder/similarity.py), on the planted class of tests/similarity_class/: its
figures (planted copies found, independent pairs flagged) and the time to compare a class of 200.

    .venv/bin/python -m benchmarks.similarity [--n 200]

The planted class: notebook 02's answers written by four authors, eight independent learners each (tests/
similarity_class/<author>/<learner>/<grade_id>.txt, one file per answer cell), the course's own reference answers as
one more learner, and two copiers per author whose answers are another learner's under one disguise per exercise
(each author's copies.toml says whose, and which disguise). A class of n: the planted learners again and again
(a learner's k-th repeat is a copy of it, every name changed), the worst case for the comparison: every repeat
pairs with its original on every exercise.
"""

from __future__ import annotations

import argparse
import shutil
import time
from copy import deepcopy
from pathlib import Path

import nbformat
import tomllib

from autograder.coursedir import REPO, SOLUTIONS
from autograder.grading.read import nbgrader_meta

ASSIGNMENT = "02-scalar-engine"
NOTEBOOK = "scalar_engine.ipynb"
PLANTED = REPO / "tests" / "similarity_class"  # the class the measure's numbers were chosen on
HELD_OUT = REPO / "tests" / "similarity_heldout"  # written later by other authors, never used to choose a number


def planted_answers(planted: Path = PLANTED) -> dict[str, dict[str, str]]:
    """learner -> grade_id -> the answer cell's code, for every planted learner (the reference one included)."""
    learners: dict[str, dict[str, str]] = {}
    for folder in sorted(p for p in planted.glob("*/*") if p.is_dir()):
        learners[folder.name] = {f.stem: f.read_text() for f in sorted(folder.glob("*.txt"))}
    reference = nbformat.read(SOLUTIONS / ASSIGNMENT / NOTEBOOK, as_version=4)
    learners["reference"] = {
        nbgrader_meta(c)["grade_id"]: c.source for c in reference.cells if nbgrader_meta(c).get("solution")
    }
    return learners


def planted_copies(planted: Path = PLANTED) -> dict[tuple[str, str, str], str]:
    """(exercise, copier, original) -> the disguise, from each author's copies.toml."""
    copies = {}
    for manifest in sorted(planted.glob("*/copies.toml")):
        for copy in tomllib.loads(manifest.read_text())["copy"]:
            for exercise, disguise in copy["disguise"].items():
                copies[(exercise, copy["learner"], copy["source"])] = disguise
    return copies


def build_class(root: Path, learners: dict[str, dict[str, str]]) -> list[str]:
    """A course directory: source (the solutions), release (the course), and each learner's submission: the
    released notebook with their answer cells in place (a cell they did not write keeps its template)."""
    if root.exists():
        shutil.rmtree(root)
    for kind, origin in (("source", SOLUTIONS), ("release", REPO / "course")):
        shutil.copytree(origin / ASSIGNMENT, root / kind / ASSIGNMENT, ignore=shutil.ignore_patterns("__pycache__"))
    released = nbformat.read(root / "release" / ASSIGNMENT / NOTEBOOK, as_version=4)
    for learner, answers in learners.items():
        nb = deepcopy(released)
        for cell in nb.cells:
            gid = nbgrader_meta(cell).get("grade_id")
            if nbgrader_meta(cell).get("solution") and gid in answers:
                cell.source = answers[gid]
        folder = root / "submitted" / learner / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / NOTEBOOK)
    return sorted(learners)


def renamed_everywhere(code: str, tag: str) -> str:
    """The code with every name it binds changed (a copier's disguise, done by the tokenizer)."""
    import builtins
    import io
    import keyword
    import tokenize

    bound = set()
    tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    for i, tok in enumerate(tokens[:-1]):
        after, before = tokens[i + 1].string, tokens[i - 1].string if i else ""
        if tok.type == tokenize.NAME and before != "." and after in ("=", ",", ")", ":", "+=", "-=", "*="):
            bound.add(tok.string)
    names = bound - set(keyword.kwlist) - set(dir(builtins)) - {"self", "other", "Variable", "math"}
    out = [
        (
            t.type,
            f"{t.string}_{tag}" if t.type == tokenize.NAME and t.string in names and not dotted else t.string,
        )
        for t, dotted in zip(tokens, [False] + [t.string == "." for t in tokens[:-1]])
    ]
    return tokenize.untokenize(out)


def planted_figures(
    root: Path,
    planted: dict[str, dict[str, str]],
    threshold: float,
    copies: dict[tuple[str, str, str], str],
    normal_forms: bool = True,
) -> tuple[set, set, set, list]:
    """(copies wanted on the compared exercises, those found, independent pairs listed, the results) on a planted
    class at `threshold`, with the fingerprint length autograder.similarity.NOISE_T has now."""
    from autograder.similarity import compare_class

    results, _ = compare_class(root, ASSIGNMENT, threshold=threshold, normal_forms=normal_forms)
    listed = {(c.exercise, *sorted((p.first, p.second))) for c in results for p in c.pairs}
    compared = {c.exercise for c in results if c.compared}
    wanted = {(e, *sorted((a, b))) for (e, a, b) in copies if e in compared and planted[b].get(e)}
    false = listed - {(e, *sorted((a, b))) for (e, a, b) in copies}
    return wanted, wanted & listed, false, results


def sweep(root: Path, planted: dict[str, dict[str, str]]) -> None:
    """The table the measure's two numbers were chosen from: planted copies found, independent pairs listed."""
    from autograder import similarity

    shares = (0.7, 0.75, 0.8, 0.85)
    print("k \\ share | " + " | ".join(f"{t:g}" for t in shares))
    chosen = similarity.NOISE_T
    try:
        for k in (12, 13, 15, 17, 20, 25):
            similarity.NOISE_T = k
            cells = []
            for t in shares:
                wanted, found, false, _ = planted_figures(root, planted, t, planted_copies())
                cells.append(f"{len(found)} of {len(wanted)}, {len(false)}")
            print(f"{k} | " + " | ".join(cells))
    finally:
        similarity.NOISE_T = chosen


def report(
    what: str, root: Path, planted: dict[str, dict[str, str]], copies: dict[tuple[str, str, str], str], threshold: float
) -> None:
    for share in sorted({threshold, 0.75, 0.8}):
        for normal_forms in (False, True):
            wanted, found, false, _ = planted_figures(root, planted, share, copies, normal_forms)
            form = "as written and in normal form" if normal_forms else "as written only"
            print(f"{what}, {form}, share {share:g}: {len(found)} of {len(wanted)} found, {len(false)} independent")
    wanted, found, false, results = planted_figures(root, planted, threshold, copies)
    compared = {c.exercise for c in results if c.compared}
    print(f"{what}: {len(planted)} learners, exercises compared {len(compared)} of {len(results)}")
    print(f"  planted copies on compared exercises: {len(found)} of {len(wanted)} found")
    found_by: dict[str, list[int]] = {}
    for (e, a, b), disguise in copies.items():
        if (e, *sorted((a, b))) in wanted:
            seen = found_by.setdefault(disguise, [0, 0])
            seen[0] += (e, *sorted((a, b))) in found
            seen[1] += 1
    print("  by disguise: " + ", ".join(f"{d} {n} of {m}" for d, (n, m) in sorted(found_by.items())))
    for e, a, b in sorted(wanted - found):
        print(f"    missed: {e}: {a} and {b} ({copies.get((e, a, b)) or copies.get((e, b, a))})")
    shares = {(c.exercise, *sorted((p.first, p.second))): p.similarity for c in results for p in c.pairs}
    print(f"  independent pairs flagged: {len(false)}")
    for e, a, b in sorted(false):
        print(f"    {e}: {a} and {b} ({shares[(e, a, b)]:.0%})")


def main() -> None:
    from autograder.similarity import THRESHOLD, compare_class

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200, help="learners in the timed class (default 200)")
    parser.add_argument("--dir", type=Path, default=REPO / "build" / "bench-similarity")
    parser.add_argument("--sweep", action="store_true", help="also the planted figures for other k and shares")
    args = parser.parse_args()

    planted = planted_answers()
    build_class(args.dir / "planted", planted)
    if args.sweep:
        sweep(args.dir / "planted", planted)
    report("planted class", args.dir / "planted", planted, planted_copies(), THRESHOLD)
    if HELD_OUT.is_dir():
        held_out = planted_answers(HELD_OUT)
        build_class(args.dir / "held-out", held_out)
        report("held-out class", args.dir / "held-out", held_out, planted_copies(HELD_OUT), THRESHOLD)

    names = list(planted)
    big = {}
    for i in range(args.n):
        original = names[i % len(names)]
        repeat = i // len(names)
        big[f"{original}-{repeat}"] = (
            planted[original]
            if repeat == 0
            else {g: renamed_everywhere(code, f"r{repeat}") for g, code in planted[original].items()}
        )
    build_class(args.dir / "big", big)
    start = time.perf_counter()
    results, _ = compare_class(args.dir / "big", ASSIGNMENT)
    seconds = time.perf_counter() - start
    pairs = sum(len(c.pairs) for c in results)
    print(f"a class of {args.n}: compared in {seconds:.1f} s ({pairs} pairs listed), one process")


if __name__ == "__main__":
    main()
