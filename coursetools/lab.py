"""Start JupyterLab for a learner (`make lab`) or formgrader for an instructor (`make formgrader`).

Learners get JupyterLab on their own copy of the course, work/ (made from course/ and never overwritten:
coursetools.workspace; loopback only), with nbgrader's Validate button and its
Assignments panel; nbgrader's instructor tools (Create Assignment sidebar, Formgrader and Course
List) are switched off for this server only. The Assignments panel works with a local exchange,
`.exchange/` in the repository (nbgrader's default, /usr/local/share/nbgrader/exchange, is not
writable for most users): every assignment of the course is released into it at start, so
*Assignments -> Submit* hands work in, and the instructor's `nbgrader collect NN-slug` picks it up.

Instructors get JupyterLab with formgrader open on a graded course directory: by default the
demo's scratch course (build/demo, made with `make demo` first if missing), or `--course-dir .`.

Nothing in the user's own Jupyter configuration is changed: the settings live in a generated
config directory under build/, put first on JUPYTER_CONFIG_PATH for this server only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .workspace import COURSE, REPO, WORK, describe, sync_work

EXCHANGE = REPO / ".exchange"
COURSE_ID = "revad"

# nbgrader's JupyterLab plugins and server extensions that belong to the instructor.
INSTRUCTOR_PLUGINS = [
    "@jupyter/nbgrader:create-assignment",
    "@jupyter/nbgrader:formgrader",
    "@jupyter/nbgrader:course-list",
]
# JupyterLab's news would fetch from the internet: the course runs offline.
NEWS_PLUGIN = "@jupyterlab/apputils-extension:announcements"
INSTRUCTOR_SERVER_EXTENSIONS = ["nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.course_list"]


def write_config(config_dir: Path, *, learner: bool, nbgrader_config: str) -> Path:
    """A Jupyter config directory for one server: which nbgrader parts are on, and nbgrader's settings."""
    if config_dir.exists():
        shutil.rmtree(config_dir)
    (config_dir / "labconfig").mkdir(parents=True)
    off = (INSTRUCTOR_PLUGINS if learner else ["@jupyter/nbgrader:create-assignment"]) + [NEWS_PLUGIN]
    (config_dir / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {name: True for name in off}}, indent=1)
    )
    server_off = INSTRUCTOR_SERVER_EXTENSIONS if learner else []
    (config_dir / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {name: False for name in server_off}}}, indent=1)
    )
    (config_dir / "nbgrader_config.py").write_text(nbgrader_config)
    return config_dir


def learner_nbgrader_config(work: Path, exchange: Path) -> str:
    return (
        "c = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.Exchange.root = {str(exchange)!r}\n"
        f"c.Exchange.assignment_dir = {str(work)!r}  # the learner's own copy: submit and feedback work from it\n"
        "c.ExchangeFactory.fetch_feedback = 'autograder.exchange.FetchFeedback'  # says when there is none yet\n"
    )


def release_to_exchange(course: Path, exchange: Path) -> list[str]:
    """Put every assignment of `course` into the exchange's outbound folder with nbgrader's own release,
    unless the same files are there already (a course update is released again; learners' copies, fetched
    or in work/, are theirs and untouched)."""
    from autograder.coursedir import nbgrader_api, quiet_nbgrader, require_success

    released = []
    api = nbgrader_api(
        course.parent,
        release=course.name,
        db_url="sqlite:///:memory:",
        extra={"Exchange": {"root": str(exchange)}, "ExchangeReleaseAssignment": {"force": True}},
    )
    for folder in sorted(p for p in course.iterdir() if p.is_dir() and p.name[:2].isdigit()):
        if _same_files(folder, exchange / COURSE_ID / "outbound" / folder.name):
            continue
        with quiet_nbgrader():
            require_success(api.release_assignment(folder.name), f"release_assignment {folder.name}")
        released.append(folder.name)
    return released


def _same_files(a: Path, b: Path) -> bool:
    def files(root: Path) -> dict[Path, bytes]:
        return {
            p.relative_to(root): p.read_bytes()
            for p in root.rglob("*")
            if p.is_file() and ".ipynb_checkpoints" not in p.parts
        }

    return b.is_dir() and files(a) == files(b)


def ensure_exchange(exchange: Path) -> None:
    """The exchange's folders for this course: outbound (released), inbound (submissions), feedback."""
    for sub in ("inbound", "outbound", "feedback"):
        (exchange / COURSE_ID / sub).mkdir(parents=True, exist_ok=True)


def jupyterlab_command(root: Path, extra: list[str], default_url: str | None = None) -> list[str]:
    command = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={root}", "--ServerApp.ip=127.0.0.1"]
    if default_url:
        command.append(f"--LabApp.default_url={default_url}")
    return command + allow_root() + extra


def allow_root() -> list[str]:
    """Containers and CI often run as root; a Jupyter server refuses that unless told."""
    return ["--allow-root"] if os.geteuid() == 0 else []


def lab_command(extra: list[str]) -> list[str]:
    """The learner's JupyterLab command on work/ (kept for callers of the old name)."""
    return jupyterlab_command(WORK, extra)


def nbgrader_enabled() -> bool:
    """True when the nbgrader JupyterLab extension is installed and enabled in this environment."""
    out = subprocess.run([sys.executable, "-m", "jupyter", "labextension", "list"], capture_output=True, text=True)
    text = out.stdout + out.stderr
    return any("@jupyter/nbgrader" in line and "enabled" in line for line in text.splitlines())


# formgrader shows submissions with nbconvert, whose template loads MathJax from a CDN: render the
# maths on the server instead (MathML), as the feedback does, so the instructor's view works offline.
INSTRUCTOR_NBGRADER_CONFIG = """\
from autograder.offline_math import offline_html_config
c = get_config()  # noqa: F821
offline_html_config(c)
"""

SCRATCH_COURSE_CONFIG = """\
# Written by `make formgrader`: this scratch course directory's layout, for formgrader and nbgrader's CLI.
import os
c = get_config()  # noqa: F821
here = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.root = here
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "release"
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(here, "gradebook.db")
c.CourseDirectory.course_id = "revad"
"""


def prepare_instructor(course_dir: Path) -> Path:
    """A graded course directory for formgrader: the demo's is made (`make demo`) when missing."""
    course_dir = course_dir.resolve()
    if course_dir == (REPO / "build" / "demo").resolve() and not (course_dir / "gradebook.db").is_file():
        print(f"No graded course in {course_dir} yet: running the demo (release, grade three learners) first ...")
        subprocess.run([sys.executable, "-m", "autograder.demo", "--dir", str(course_dir)], check=True)
    if not (course_dir / "nbgrader_config.py").is_file():
        if not (course_dir / "source").is_dir():
            sys.exit(f"{course_dir} is not an nbgrader course directory (no nbgrader_config.py, no source/).")
        (course_dir / "nbgrader_config.py").write_text(SCRATCH_COURSE_CONFIG)
    return course_dir


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--formgrader", action="store_true", help="instructor: formgrader on a graded course directory")
    parser.add_argument(
        "--course-dir",
        type=Path,
        default=None,
        help="learner: the released notebooks to copy from (default course/); instructor: the nbgrader course "
        "directory (default build/demo, graded by `make demo`)",
    )
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="learner: the learner's own copy, made from the course and never overwritten (default work/)",
    )
    parser.add_argument(
        "--exchange", type=Path, default=EXCHANGE, help="learner: the nbgrader exchange (default .exchange/)"
    )
    parser.add_argument(
        "--config-dir", type=Path, default=None, help="where the generated Jupyter config goes (default under build/)"
    )
    args, extra = parser.parse_known_args(argv)

    env = dict(os.environ)
    if args.formgrader:
        root = prepare_instructor(args.course_dir or REPO / "build" / "demo")
        config_dir = write_config(
            args.config_dir or REPO / "build" / "jupyter-instructor",
            learner=False,
            nbgrader_config=INSTRUCTOR_NBGRADER_CONFIG,
        )
        command = jupyterlab_command(root, extra, default_url="/formgrader")
        from autograder.offline_math import JUPYTER_DATA  # formgrader's pages load no MathJax from a CDN

        env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(JUPYTER_DATA), env.get("JUPYTER_PATH")]))
        print(f"formgrader on {root}: the browser opens at /formgrader (Manage Assignments, Manual Grading).")
    else:
        course = (args.course_dir or COURSE).resolve()
        if not course.is_dir():
            sys.exit(f"There is no course folder at {course}: the repository is incomplete (course/ is committed).")
        root = (args.work_dir or WORK).resolve()
        news = describe(sync_work(course, root), course, root)
        if news:
            print(news)
        exchange = args.exchange.resolve()
        ensure_exchange(exchange)
        released = release_to_exchange(course, exchange)
        config_dir = write_config(
            args.config_dir or REPO / "build" / "jupyter-learner",
            learner=True,
            nbgrader_config=learner_nbgrader_config(root, exchange),
        )
        command = jupyterlab_command(root, extra)
        if released:
            print(f"Released to the local exchange {exchange}: {', '.join(released)}")
    if not nbgrader_enabled():
        print(
            "Warning: the nbgrader JupyterLab extension is not enabled; the Validate button will be missing.\n"
            "Run: jupyter labextension enable @jupyter/nbgrader",
            file=sys.stderr,
        )
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
        filter(None, [str(config_dir.resolve()), env.get("JUPYTER_CONFIG_PATH")])
    )
    os.chdir(root)  # nbgrader's server extensions read nbgrader_config.py from the working directory
    os.execve(sys.executable, command, env)


if __name__ == "__main__":
    main()
