"""Grading as a service on Celery: submissions travel as tasks, workers on any machine grade them.

    python -m autograder worker --broker URL --db-url URL       (a worker: autograder.scale.service)
    python -m autograder grade NN-slug --broker URL --db-url URL (queue and wait: autograder.scale.client)

A task carries a submission's files (:mod:`.payload`); a worker grades it with the local grading
command in a scratch course built from its own copy of the course source; the result goes to the
gradebook database exactly once, the newest submission of a learner winning (:mod:`.ledger`).
"""
