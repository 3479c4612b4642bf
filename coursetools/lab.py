"""Start JupyterLab for learners: on course/, on this machine only (loopback), nbgrader enabled.

`make lab` runs this; extra arguments go to JupyterLab (e.g. --no-browser --port=8899).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

COURSE = Path(__file__).resolve().parent.parent / "course"


def lab_command(extra: list[str]) -> list[str]:
    command = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={COURSE}", "--ServerApp.ip=127.0.0.1"]
    if os.geteuid() == 0:  # containers and CI often run as root; JupyterLab refuses that unless told
        command.append("--allow-root")
    return command + extra


def nbgrader_enabled() -> bool:
    """True when the nbgrader JupyterLab extension is installed and enabled in this environment."""
    out = subprocess.run([sys.executable, "-m", "jupyter", "labextension", "list"], capture_output=True, text=True)
    text = out.stdout + out.stderr
    return any("@jupyter/nbgrader" in line and "enabled" in line for line in text.splitlines())


def main() -> None:
    if not COURSE.is_dir():
        sys.exit(f"There is no course/ folder at {COURSE}: run `make release` first.")
    if not nbgrader_enabled():
        print("Warning: the nbgrader JupyterLab extension is not enabled; the Validate button will be missing.\n"
              "Run: jupyter labextension enable @jupyter/nbgrader", file=sys.stderr)
    os.execv(sys.executable, lab_command(sys.argv[1:]))


if __name__ == "__main__":
    main()
