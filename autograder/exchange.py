"""nbgrader's exchange, with one thing said plainly: that there is no feedback yet.

Stock `nbgrader fetch_feedback` (and the Assignments panel's *Fetch Feedback*) asked before the instructor
released any feedback fails with "Assignment not found at: …/feedback", or, once feedback exists for
others, only logs a warning per notebook. The course's learner configuration names this class
(`c.ExchangeFactory.fetch_feedback = "autograder.exchange.FetchFeedback"`), so a learner reads what is
happening and what to do. Everything else is nbgrader's own.
"""

from __future__ import annotations

import os

from nbgrader.exchange.default.fetch_feedback import ExchangeFetchFeedback


def not_yet(assignment: str) -> str:
    return (
        f"There is no feedback for {assignment or 'your assignments'} yet: your submission has not been graded, "
        "or its feedback not released. Ask again after your instructor says it is out "
        "(fetching feedback changes nothing in your work)."
    )


class FetchFeedback(ExchangeFetchFeedback):
    def init_src(self) -> None:
        outbound = os.path.join(self.root, self.coursedir.course_id, "feedback")
        if self.coursedir.course_id and not os.path.isdir(outbound):
            self.fail(not_yet(self.coursedir.assignment_id))
        super().init_src()
        if not self.feedback_files:
            self.fail(not_yet(self.coursedir.assignment_id))
