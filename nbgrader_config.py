"""nbgrader configuration for the course repository.

solutions/ is nbgrader's source directory (full solutions, hidden tests) and course/ its release
directory (what learners open). The gradebook stays out of the repository, under .grading/.
"""

import os

c = get_config()  # noqa: F821  (provided by nbgrader when it loads this file)

here = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.root = here
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "course"
os.makedirs(os.path.join(here, ".grading"), exist_ok=True)  # a fresh clone has none; nbgrader collect needs it
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(here, ".grading", "gradebook.db")
c.CourseDirectory.course_id = "revad"
# The local exchange that `make lab` releases into and learners submit to (nbgrader's default,
# /usr/local/share/nbgrader/exchange, is not writable): `nbgrader collect NN-slug` reads it.
c.Exchange.root = os.path.join(here, ".exchange")
# nbgrader's own HTML (generate_feedback, formgrader) with maths rendered here, no MathJax from a CDN
from autograder.coursedir import put_interpreter_scripts_on_path  # noqa: E402
from autograder.offline_math import offline_html_config  # noqa: E402

offline_html_config(c)
# nbgrader's gradebook runs `alembic` from PATH: `.venv/bin/nbgrader collect …` works without an activated venv
put_interpreter_scripts_on_path()
