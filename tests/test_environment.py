"""Versions are pinned once (requirements.txt); environment.yml installs the same pins."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import yaml
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parent.parent


def _pins(lines):
    """name -> (version, environment marker or "")."""
    pins = {}
    for line in lines:
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            requirement = Requirement(line)
            (spec,) = requirement.specifier
            assert spec.operator == "==", f"unpinned requirement: {line!r}"
            pins[re.sub(r"[-_.]+", "-", requirement.name).lower()] = (spec.version, str(requirement.marker or ""))
    return pins


def test_environment_yml_installs_the_pinned_versions():
    requirements = _pins((REPO / "requirements.txt").read_text().splitlines())
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    deps = env["dependencies"]
    assert "python=3.11" in deps
    (pip_section,) = [d["pip"] for d in deps if isinstance(d, dict)]
    assert "-e ." in pip_section, "environment.yml installs the course package too"
    assert _pins(pip_section) == requirements


def test_the_required_pins():
    pins = _pins((REPO / "requirements.txt").read_text().splitlines())
    assert pins["torch"] == ("2.13.0", "") and pins["nbgrader"] == ("0.9.6", "")
    assert pins["jupyterlab"][0].startswith("4.")


def test_triton_alone_is_pinned_for_linux_only():
    """Triton has Linux wheels only: pinned for every platform, `make venv` failed on macOS and Windows for the whole
    course, notebooks 01-04 included. Every other pin installs everywhere (.ci/run resolves them for macOS arm64 and
    Windows amd64)."""
    pins = _pins((REPO / "requirements.txt").read_text().splitlines())
    assert pins["triton"] == ("3.9.0", 'sys_platform == "linux"')
    assert {name for name, (_, marker) in pins.items() if marker} == {"triton"}
    assert "make pins-elsewhere" in (REPO / ".ci" / "run").read_text()
    make = (REPO / "Makefile").read_text()
    assert "OTHER_PLATFORMS := aarch64-apple-darwin x86_64-pc-windows-msvc" in make


def test_course_code_does_not_pin_torch_exactly():
    # The course's own code must run on any torch >= 2.4 (a GPU machine brings its own build).
    text = (REPO / "pyproject.toml").read_text()
    assert '"torch>=2.4"' in text


def test_ci_runs_the_readme_test_command():
    assert "make test" in (REPO / ".ci" / "run").read_text()
    assert "make test" in (REPO / "README.md").read_text()


def test_environment_yml_is_valid_for_conda_if_available():
    conda = shutil.which("conda") or shutil.which("mamba")
    if not conda:
        import pytest

        pytest.skip("conda is not installed here; the YAML structure is checked above")
    out = subprocess.run(
        [conda, "env", "create", "--dry-run", "-f", str(REPO / "environment.yml")], capture_output=True
    )
    assert out.returncode == 0, out.stderr.decode()[-2000:]


def test_importing_jsonschema_builds_no_grammar():
    """Every grading worker, gradebook and nbgrader command imports jsonschema (through nbformat): from 4.25 on it
    builds an IRI grammar with lark at import, 2.3 CPU-seconds each time (requirements.txt pins 4.24)."""
    import sys

    script = "import sys, nbformat, jsonschema; print(sorted(m for m in sys.modules if 'lark' in m))"
    loaded = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert loaded == "[]", loaded
