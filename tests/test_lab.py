"""`make lab` serves the course on loopback, headless, with nbgrader's extension enabled."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest
from browser import REPO, free_port, running_server

TOKEN = "course-test-token"


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read().decode()


@pytest.fixture
def lab_server(tmp_path):
    port = free_port()
    args = (
        f"--no-browser --port={port} --ServerApp.port_retries=0 --IdentityProvider.token={TOKEN} "
        f"--exchange {tmp_path / 'exchange'} --config-dir {tmp_path / 'config'} --work-dir {tmp_path / 'work'}"
    )
    base = f"http://127.0.0.1:{port}"
    # nbgrader keeps its record of submissions in JUPYTER_DATA_DIR: one of the test's own
    env = {"BROWSER": "false", "JUPYTER_DATA_DIR": str(tmp_path / "data")}
    command = ["make", "-s", "lab", f"LAB_ARGS={args}"]
    with running_server(command, tmp_path / "lab.log", f"{base}/api/status?token={TOKEN}", env, REPO, 120) as proc:
        yield proc, base, port, tmp_path


@pytest.mark.slow
def test_lab_serves_the_course_with_nbgrader(lab_server):
    proc, base, port, tmp = lab_server
    status, body = _get(f"{base}/api/contents/01-reverse-accumulation/reverse_accumulation.ipynb?token={TOKEN}")
    model = json.loads(body)
    assert status == 200 and model["type"] == "notebook"
    assert any("check_primal_trace" in c["source"] for c in model["content"]["cells"]), "serves the learner's copy"
    assert (tmp / "work" / "01-reverse-accumulation" / "reverse_accumulation.ipynb").is_file(), "made from course/"

    status, page = _get(f"{base}/lab?token={TOKEN}")
    assert status == 200 and "@jupyter/nbgrader" in page, (
        "the nbgrader lab extension is in the page's federated extensions"
    )
    status, version = _get(f"{base}/nbgrader_version?version=0.9.6")
    assert status == 200, "the nbgrader server extension (validate button) answers"

    listening = set()
    for p in [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]:
        try:
            connections = p.net_connections(kind="inet")
        except psutil.NoSuchProcess:  # a short-lived child (a helper the server ran) ended meanwhile
            continue
        listening |= {c.laddr.ip for c in connections if c.status == psutil.CONN_LISTEN and c.laddr.port == port}
    assert listening == {"127.0.0.1"}, f"listens on {listening}: it must be loopback only"


@pytest.mark.slow
def test_lab_is_the_learners_interface_with_a_local_exchange(lab_server):
    """No instructor tools for learners; nbgrader's Assignments panel lists the course from the local exchange."""
    proc, base, port, tmp = lab_server
    status, page = _get(f"{base}/lab?token={TOKEN}")
    disabled = json.loads(page.split('id="jupyter-config-data"')[1].split(">", 1)[1].split("</script>")[0])[
        "disabledExtensions"
    ]
    assert {
        "@jupyter/nbgrader:create-assignment",
        "@jupyter/nbgrader:formgrader",
        "@jupyter/nbgrader:course-list",
    } <= set(disabled)
    with pytest.raises(urllib.error.HTTPError) as missing:
        _get(f"{base}/formgrader?token={TOKEN}")
    assert missing.value.code == 404, "formgrader is not served to learners"
    status, body = _get(f"{base}/assignments?course_id=revad&token={TOKEN}")
    listed = json.loads(body)
    assert listed["success"], listed
    released = sorted(p.name for p in (Path(__file__).resolve().parent.parent / "course").iterdir() if p.is_dir())
    assert len(released) >= 5, released
    assert {a["assignment_id"]: a["status"] for a in listed["value"]} == {name: "fetched" for name in released}
    assert (
        tmp / "exchange" / "revad" / "outbound" / "01-reverse-accumulation" / "reverse_accumulation.ipynb"
    ).is_file()
