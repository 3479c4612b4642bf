"""`python -m autograder grade ...`: see autograder.grading.cli."""

import sys

from .grading.cli import main

sys.exit(main())
