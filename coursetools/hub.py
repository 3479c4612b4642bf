"""A class on JupyterHub, on one machine (`make hub`; the configuration is deploy/jupyterhub_config.py).

Learners log in to the hub and get JupyterLab in a home of their own, with nbgrader's Assignments panel and
Validate button (the instructor's nbgrader tools switched off, as `make lab` does). The course's assignments are
released to an nbgrader exchange; fetched assignments land in <home>/revad/NN-slug (`path_includes_course`), so a
learner of several courses keeps them apart. Instructors are members of the group `formgrade-revad`, which alone
may open the hub service `revad`: a Jupyter server on the instructor's course directory with formgrader
(nbgrader's multiple-classes pattern). The class report (`python -m autograder report NN-slug`) is written into
the course directory's reports/ folder, which that server shows.

For the demo and the tests: one shared password and local processes (JupyterHub's SharedPasswordAuthenticator and
SimpleLocalProcessSpawner), every learner's server run by the hub's own Unix user. That user keeps one learner
out of another's files only through the hub (each server answers its owner alone); on a real class use local
Unix users or containers (README: "A class on JupyterHub").

Everything is set by environment variables so a test can run a hub of its own:
REVAD_HUB_DIR (default build/hub: the hub's database, secrets, homes and generated config), REVAD_HUB_COURSE
(default <hub dir>/course, made from solutions/ when missing), REVAD_HUB_EXCHANGE (default <hub dir>/exchange),
REVAD_HUB_PORT (8000), REVAD_HUB_SERVICE_PORT (9999), REVAD_HUB_LEARNERS ("ada,ben"), REVAD_HUB_INSTRUCTORS
("grace"), REVAD_HUB_PASSWORD (the demo's shared password; at least 8 characters).
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .lab import COURSE_ID, INSTRUCTOR_NBGRADER_CONFIG, allow_root, ensure_exchange, write_config
from .workspace import REPO

SERVICE = COURSE_ID  # the formgrader service's name: /services/revad/
DEMO_PASSWORD = "revad-demo-class"  # the demo's shared password: never for a real class

COURSE_CONFIG = """\
# Written by `make hub`: the instructor's course directory, its exchange and maths rendered offline.
import os
from autograder.coursedir import put_interpreter_scripts_on_path
from autograder.offline_math import offline_html_config
c = get_config()  # noqa: F821
here = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.root = here
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(here, "gradebook.db")
c.CourseDirectory.course_id = {course_id!r}
c.Exchange.root = {exchange!r}
c.Exchange.path_includes_course = True
offline_html_config(c)
put_interpreter_scripts_on_path()
"""

LEARNER_CONFIG = """\
import os
c = get_config()  # noqa: F821
# nbgrader names a submission after the Unix user; the demo's learners share one, so name it after the hub user
c.CourseDirectory.student_id = os.environ["JUPYTERHUB_USER"]
c.CourseDirectory.course_id = {course_id!r}
c.Exchange.root = {exchange!r}
c.Exchange.path_includes_course = True
c.ExchangeFactory.fetch_feedback = "autograder.exchange.FetchFeedback"  # says when there is none yet
"""


@dataclass(frozen=True)
class HubClass:
    """Where one class's hub keeps its files, who is in it, and where it listens."""

    state: Path
    course: Path
    exchange: Path
    port: int = 8000
    service_port: int = 9999
    learners: tuple[str, ...] = ("ada", "ben")
    instructors: tuple[str, ...] = ("grace",)
    password: str = DEMO_PASSWORD

    @classmethod
    def from_environment(cls, env: dict[str, str] | None = None) -> HubClass:
        env = dict(os.environ if env is None else env)
        state = Path(env.get("REVAD_HUB_DIR", REPO / "build" / "hub")).resolve()

        def names(key: str, default: str) -> tuple[str, ...]:
            return tuple(n.strip() for n in env.get(key, default).split(",") if n.strip())

        return cls(
            state=state,
            course=Path(env.get("REVAD_HUB_COURSE", state / "course")).resolve(),
            exchange=Path(env.get("REVAD_HUB_EXCHANGE", state / "exchange")).resolve(),
            port=int(env.get("REVAD_HUB_PORT", 8000)),
            service_port=int(env.get("REVAD_HUB_SERVICE_PORT", 9999)),
            learners=names("REVAD_HUB_LEARNERS", "ada,ben"),
            instructors=names("REVAD_HUB_INSTRUCTORS", "grace"),
            password=env.get("REVAD_HUB_PASSWORD", DEMO_PASSWORD),
        )

    @property
    def home_template(self) -> str:
        return str(self.state / "home" / "{username}")


def prepare(hub: HubClass) -> None:
    """The hub's folders, the instructor's course directory (made from solutions/ and released to the exchange when
    missing) and the two generated Jupyter config directories (learners', instructors')."""
    (hub.state / "home").mkdir(parents=True, exist_ok=True)
    ensure_exchange(hub.exchange)
    os.chmod(hub.exchange, 0o777)  # nbgrader's exchange: writable by every learner
    if not (hub.course / "nbgrader_config.py").is_file():
        make_course(hub)
    write_config(
        hub.state / "config" / "learner",
        learner=True,
        nbgrader_config=LEARNER_CONFIG.format(course_id=COURSE_ID, exchange=str(hub.exchange)),
    )
    write_config(hub.state / "config" / "instructor", learner=False, nbgrader_config=INSTRUCTOR_NBGRADER_CONFIG)


def make_course(hub: HubClass) -> None:
    """The instructor's course directory: the course's sources, released with nbgrader's own commands (the
    gradebook records the cells) and put into the exchange."""
    from autograder.coursedir import SOLUTIONS, assignments, nbgrader_api, quiet_nbgrader, require_success

    hub.course.mkdir(parents=True, exist_ok=True)
    for assignment in assignments():
        shutil.copytree(
            SOLUTIONS / assignment, hub.course / "source" / assignment, ignore=shutil.ignore_patterns(".ipynb_*")
        )
    (hub.course / "reports").mkdir(exist_ok=True)
    (hub.course / "nbgrader_config.py").write_text(
        COURSE_CONFIG.format(course_id=COURSE_ID, exchange=str(hub.exchange))
    )
    api = nbgrader_api(
        hub.course,
        source="source",
        release="release",
        db_url=f"sqlite:///{hub.course / 'gradebook.db'}",
        extra={
            "Exchange": {"root": str(hub.exchange), "path_includes_course": True},
            "CourseDirectory": {"course_id": COURSE_ID},
        },
    )
    with quiet_nbgrader():
        for assignment in assignments():
            require_success(api.generate_assignment(assignment, force=True, create=True), f"generate {assignment}")
            require_success(api.release_assignment(assignment), f"release_assignment {assignment}")


def _config_path(config: Path) -> str:
    return os.pathsep.join(filter(None, [str(config), os.environ.get("JUPYTER_CONFIG_PATH")]))


def configure(c: Any, hub: HubClass) -> None:
    """JupyterHub's settings for the class: loopback only, its files under hub.state, the shared-password login,
    groups and roles (formgrader for instructors only), local learners' servers, the formgrader service."""
    from autograder.offline_math import JUPYTER_DATA

    c.JupyterHub.ip = "127.0.0.1"
    c.JupyterHub.port = hub.port
    c.JupyterHub.hub_ip = "127.0.0.1"
    c.JupyterHub.hub_port = hub.port + 1
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{hub.port + 2}"
    c.ConfigurableHTTPProxy.pid_file = str(hub.state / "proxy.pid")
    c.JupyterHub.db_url = f"sqlite:///{hub.state / 'jupyterhub.sqlite'}"
    c.JupyterHub.cookie_secret_file = str(hub.state / "cookie_secret")
    c.JupyterHub.template_paths = [str(REPO / "deploy" / "templates")]  # home: the instructors' links
    c.JupyterHub.authenticator_class = "shared-password"
    c.SharedPasswordAuthenticator.user_password = hub.password
    c.Authenticator.allowed_users = set(hub.learners) | set(hub.instructors)
    c.JupyterHub.load_groups = {
        "instructors": {"users": list(hub.instructors)},
        f"formgrade-{COURSE_ID}": {"users": list(hub.instructors)},
        f"nbgrader-{COURSE_ID}": {"users": list(hub.learners) + list(hub.instructors)},
    }
    c.JupyterHub.load_roles = [
        {
            "name": f"formgrade-{COURSE_ID}",
            "groups": [f"formgrade-{COURSE_ID}"],
            "scopes": [f"access:services!service={SERVICE}"],
        },
        {
            "name": f"nbgrader-{COURSE_ID}",
            "groups": [f"nbgrader-{COURSE_ID}"],
            "scopes": ["list:services", f"read:services!service={SERVICE}"],
        },
    ]
    c.JupyterHub.spawner_class = "simple"
    c.SimpleLocalProcessSpawner.home_dir_template = hub.home_template
    c.Spawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
    c.Spawner.args = allow_root()
    c.Spawner.default_url = "/lab"
    c.Spawner.http_timeout = 120
    c.Spawner.environment = {
        "JUPYTER_CONFIG_PATH": _config_path(hub.state / "config" / "learner"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    c.JupyterHub.services = [
        {
            "name": SERVICE,
            "url": f"http://127.0.0.1:{hub.service_port}",
            "command": [
                sys.executable,
                "-m",
                "jupyterhub.singleuser",
                f"--ServerApp.root_dir={hub.course}",
                *allow_root(),
            ],
            "cwd": str(hub.course),
            "oauth_no_confirm": True,
            "environment": {
                "JUPYTERHUB_DEFAULT_URL": "/formgrader",
                "JUPYTER_CONFIG_PATH": _config_path(hub.state / "config" / "instructor"),
                "JUPYTER_PATH": os.pathsep.join(filter(None, [str(JUPYTER_DATA), os.environ.get("JUPYTER_PATH")])),
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            },
        }
    ]
