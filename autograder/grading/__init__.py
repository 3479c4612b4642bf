"""OUTSIDE the sandbox: the instructor's grading command (its command line: autograder/cli.py).

  command   grade_assignment: students, the run's spec and hashes, jobs started and ended, recording, resuming
  pool      long-lived worker processes and run_jobs, the scheduler (no polling: it blocks on their pipes)
  jobs      the typed Job / SubmissionResult contract (JSON) between the command and its workers
  worker    one submission: read -> flag -> assemble -> execute -> judge -> write, per notebook
  spec      the typed assignment spec (AssignmentSpec / NotebookSpec / CellSpec); an instructor's check calls
  read      reading submitted notebooks defensively
  flags     structural and static flags
  assemble  the notebook the sandbox runs (in-kernel setup: autograder.probes.kernel)
  execute   the sandboxed kernel (nbclient), limits, a fresh kernel after a crash (SandboxedRun)
  sandbox   bubblewrap, uids, resource limits
  probe_view the autograder the sandbox sees: no judges module or folder anywhere, no grading/
  judge     probe data read back, judged with the instructor's parameters
  write     the autograded notebook and the feedback HTML
  record    nbgrader's gradebook, and what is done (resume)
  report    score table, CSV export
  stock     stock nbgrader autograde (the benchmark's baseline)
the perimeter (what comes in, what goes out):
  intake        the submission copied without following a single link; its hash and timestamp likewise
  notebook_json any notebook JSON read: nbformat 3 upgraded, too-deep parts cut with a note
  reach         whether the kernel's uid can reach Python (without bubblewrap)
  kernel_start  a kernel that fails to start is started again
  sanitize      nothing live from the learner in the autograded notebook and feedback
  safe_text     CSV cells that are never formulas; terminal text without control characters
"""

from .command import grade_assignment
from .report import SubmissionScore, export_csv, format_table, read_scores
from .stock import autograde

__all__ = ["grade_assignment", "SubmissionScore", "export_csv", "format_table", "read_scores", "autograde"]
