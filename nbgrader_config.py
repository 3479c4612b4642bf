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
