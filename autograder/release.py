"""Generate the learners' course/ from solutions/ with nbgrader's generate_assignment.

The generation runs in a scratch course directory (with a throwaway gradebook), so the repository
never holds a gradebook and a failed generation leaves course/ as it was.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from .coursedir import COURSE, SOLUTIONS, assignments, nbgrader_api, quiet_nbgrader, require_success


def generate_in_course(root: Path, ids: list[str], db_url: str | None = None) -> None:
    """nbgrader generate_assignment in course directory `root` (root/source -> root/release),
    recording each assignment and its graded cells in that course's gradebook."""
    api = nbgrader_api(root, db_url=db_url)
    with quiet_nbgrader():
        for assignment in ids:
            require_success(api.generate_assignment(assignment, force=True, create=True),
                            f"generate_assignment {assignment}")


def generate_release(out_dir: Path, solutions: Path = SOLUTIONS, only: list[str] | None = None) -> list[str]:
    """Write the release of every assignment (or `only` these) into out_dir/NN-slug/. Returns the ids."""
    ids = only or assignments(solutions)
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
