"""Generate the learners' course/ from solutions/ with nbgrader's generate_assignment.

The generation runs in a scratch course directory (with a throwaway gradebook), so the repository
never holds a gradebook and a failed generation leaves course/ as it was. A graded test cell that the
grader could not read as trusted (a check call inside a loop, an `if` or a function; no check call)
is refused first, with the cell named.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import nbformat

from .coursedir import COURSE, SOLUTIONS, assignments, nbgrader_api, quiet_nbgrader, require_success


def generate_in_course(root: Path, ids: list[str], db_url: str | None = None) -> None:
    """nbgrader generate_assignment in course directory `root` (root/source -> root/release),
    recording each assignment and its graded cells in that course's gradebook."""
    api = nbgrader_api(root, db_url=db_url)
    with quiet_nbgrader():
        for assignment in ids:
            require_success(
                api.generate_assignment(assignment, force=True, create=True), f"generate_assignment {assignment}"
            )


def untrusted_test_cells(folder: Path) -> list[str]:
    """'notebook: grade_id: why' for each graded test cell under `folder` the grader cannot read as trusted, and
    'notebook: cell N: why' for each measurement mark that leaving the cell out could make untrue."""
    from .grading.measurements import measurement_problems
    from .grading.spec import NotebookSpec

    problems = []
    for path in sorted(folder.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        nb = nbformat.read(path, as_version=4)
        problems += [f"{path.relative_to(folder)}: {why}" for why in measurement_problems(nb.cells)]
        for cell in NotebookSpec.from_release(nb).cells:
            if not cell.has_calls:
                continue
            where = f"{path.relative_to(folder)}: {cell.grade_id}"
            if cell.untrusted is not None:
                problems.append(f"{where}: {cell.untrusted}")
            problems += [f"{where}: {why}" for why in points_disagree(list(cell.calls), cell.metadata)]
    return problems


def points_disagree(calls: list, meta: dict) -> list[str]:
    """A check call whose `points=` (a score) differs from the cell's nbgrader points: the metadata is what
    nbgrader adds up, so the call must say the same or say nothing."""
    out = []
    for call in calls:
        given = call.params.get("points")
        if (
            isinstance(given, (int, float))
            and not isinstance(given, bool)
            and float(given) != float(meta.get("points", 0))
        ):
            out.append(
                f"{call.check}(..., points={given:g}) but the cell's nbgrader points are "
                f"{float(meta.get('points', 0)):g}: make them agree, or leave points= out (the cell's points "
                "are then used)"
            )
    return out


def generate_release(out_dir: Path, solutions: Path = SOLUTIONS, only: list[str] | None = None) -> list[str]:
    """Write the release of every assignment (or `only` these) into out_dir/NN-slug/. Returns the ids."""
    ids = only or assignments(solutions)
    problems = [p for assignment in ids for p in untrusted_test_cells(solutions / assignment)]
    if problems:
        raise SystemExit(
            "Refusing to release: the grader could not read these test cells as trusted:\n  " + "\n  ".join(problems)
        )
    with tempfile.TemporaryDirectory(prefix="revad-release-") as tmp:
        root = Path(tmp)
        shutil.copytree(solutions, root / "source", ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        generate_in_course(root, ids)
        out_dir.mkdir(parents=True, exist_ok=True)
        for assignment in ids:
            target = out_dir / assignment
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(root / "release" / assignment, target)
    return ids


def main() -> None:
    ids = generate_release(COURSE)
    stale = sorted(p.name for p in COURSE.iterdir() if p.is_dir() and p.name not in ids)
    for name in stale:  # an assignment removed from solutions/ leaves the release too
        shutil.rmtree(COURSE / name)
    print(f"course/ regenerated from solutions/: {', '.join(ids)}")


if __name__ == "__main__":
    main()
