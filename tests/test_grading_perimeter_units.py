"""The grading perimeter's small modules, one by one: taking a submission in without following links
(intake), text safe for spreadsheets and terminals (safe_text), reading any notebook JSON
(notebook_json), showing a notebook without live learner HTML (sanitize), reaching the kernel's
files as its uid (reach), retrying a kernel start (kernel_start)."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import sys
from pathlib import Path

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.grading import intake, kernel_start, notebook_json, reach, safe_text, sanitize

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostile.pages import active_parts  # noqa: E402

SECRET = "TOP-SECRET-CONTENT-4711"


# ----------------------------------------------------------------------------------------- intake


@pytest.fixture
def submitted(tmp_path):
    """submitted/ada/a1 with a notebook, a data file, a subfolder, and links to secrets outside it."""
    secret_dir = tmp_path / "secret"
    secret_dir.mkdir()
    (secret_dir / "shadow").write_text(SECRET)
    (secret_dir / "solution.ipynb").write_text(json.dumps({"cells": [], "note": SECRET}))
    folder = tmp_path / "submitted" / "ada" / "a1"
    (folder / "data").mkdir(parents=True)
    (folder / "tiny.ipynb").write_text('{"cells": []}')
    (folder / "notes.txt").write_text("mine")
    (folder / "data" / "points.csv").write_text("1,2")
    (folder / "timestamp.txt").write_text("2026-11-01 12:00:00.000000 UTC")
    return tmp_path, folder, secret_dir


def test_snapshot_copies_regular_files_and_drops_every_link(submitted, tmp_path):
    root, folder, secret = submitted
    os.symlink(secret / "shadow", folder / "shadow.txt")
    os.symlink("/proc/self/environ", folder / "environ")
    os.symlink(secret, folder / "linked_dir")
    os.symlink(secret / "shadow", folder / "data" / "deep_link")
    os.symlink("/nonexistent/target", folder / "dangling")
    os.mkfifo(folder / "pipe")
    got = intake.snapshot(root / "submitted", "ada", "a1", tmp_path / "copy")
    files = sorted(str(p.relative_to(got.folder)) for p in got.folder.rglob("*"))
    assert files == ["data", "data/points.csv", "notes.txt", "timestamp.txt", "tiny.ipynb"]
    assert not any(p.is_symlink() for p in got.folder.rglob("*"))
    assert sorted(got.dropped) == ["dangling", "data/deep_link", "environ", "linked_dir", "pipe", "shadow.txt"]
    assert not got.refused
    for path in got.folder.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text()
    flag = got.flags()[0]
    assert flag["code"] == "symlink" and "shadow.txt" in flag["detail"] and SECRET not in flag["detail"]
    assert "shadow.txt" in got.messages()[0] and "/secret" not in got.messages()[0]


def test_a_notebook_that_is_a_link_is_refused_with_a_message(submitted, tmp_path):
    root, folder, secret = submitted
    (folder / "tiny.ipynb").unlink()
    os.symlink(secret / "solution.ipynb", folder / "tiny.ipynb")
    got = intake.snapshot(root / "submitted", "ada", "a1", tmp_path / "copy")
    assert not (got.folder / "tiny.ipynb").exists()
    assert "symbolic link" in got.refused["tiny.ipynb"] and "0 points" in got.refused["tiny.ipynb"]
    assert got.flags()[0]["code"] == "symlink"


@pytest.mark.parametrize("which", ["student", "assignment"])
def test_a_submission_folder_that_is_a_link_is_refused_whole(tmp_path, which):
    target = tmp_path / "instructor" / "source" / "a1"
    target.mkdir(parents=True)
    (target / "tiny.ipynb").write_text(SECRET)
    submitted = tmp_path / "submitted"
    if which == "student":
        submitted.mkdir()
        os.symlink(target.parent, submitted / "ada")
    else:
        (submitted / "ada").mkdir(parents=True)
        os.symlink(target, submitted / "ada" / "a1")
    with pytest.raises(intake.SubmissionRefused, match="symbolic link") as refusal:
        intake.snapshot(submitted, "ada", "a1", tmp_path / "copy")
    got = intake.Intake.refused_whole(tmp_path / "copy", str(refusal.value))
    assert got.refuses("tiny.ipynb") and got.messages() == [str(refusal.value)] and got.flags()[0]["code"] == "symlink"
    assert intake.read_timestamp(submitted, "ada", "a1") is None


def test_hash_never_reads_a_link_target_but_sees_the_link_change(submitted, tmp_path):
    root, folder, secret = submitted
    os.symlink(secret / "shadow", folder / "shadow.txt")
    before = intake.tree_hash(root / "submitted", "ada", "a1", "salt")
    (secret / "shadow").write_text("changed " + SECRET)  # the target changes: the hash must not notice
    assert intake.tree_hash(root / "submitted", "ada", "a1", "salt") == before
    (folder / "shadow.txt").unlink()
    os.symlink("/etc/passwd", folder / "shadow.txt")  # the link itself changes: graded again
    assert intake.tree_hash(root / "submitted", "ada", "a1", "salt") != before
    (folder / "notes.txt").write_text("edited")
    assert intake.tree_hash(root / "submitted", "ada", "a1", "salt") != before


def test_timestamp_is_read_only_from_a_regular_file(submitted):
    root, folder, secret = submitted
    assert intake.read_timestamp(root / "submitted", "ada", "a1") == "2026-11-01 12:00:00.000000 UTC"
    (secret / "ts").write_text("2026-11-02 12:00:00.000000 UTC")
    (folder / "timestamp.txt").unlink()
    os.symlink(secret / "ts", folder / "timestamp.txt")
    assert intake.read_timestamp(root / "submitted", "ada", "a1") is None
    (folder / "timestamp.txt").unlink()
    (folder / "timestamp.txt").write_text("not a time")
    assert intake.read_timestamp(root / "submitted", "ada", "a1") is None


def test_too_big_files_are_left_out_and_said(submitted, tmp_path, monkeypatch):
    root, folder, _ = submitted
    monkeypatch.setattr(intake, "MAX_FILE_BYTES", 10)
    (folder / "big.bin").write_bytes(b"x" * 11)
    got = intake.snapshot(root / "submitted", "ada", "a1", tmp_path / "copy")
    assert "big.bin" in got.skipped and not (got.folder / "big.bin").exists()
    assert any("big.bin" in m for m in got.messages())


# -------------------------------------------------------------------------------------- safe_text


@pytest.mark.parametrize("value", ["=2+5+cmd|' /C calc'!A0", "+1", "-1+2", "@SUM(A1)", "\t=1", "\r=1"])
def test_formula_cells_are_neutralised(value):
    out = safe_text.spreadsheet_cell(value)
    assert out == "'" + value
    buffer = io.StringIO()
    csv.writer(buffer).writerow([out])
    assert not buffer.getvalue().lstrip('"').startswith(safe_text.FORMULA_STARTS)


@given(st.text())
def test_spreadsheet_cells_never_start_a_formula_and_lose_nothing(value):
    out = safe_text.spreadsheet_cell(value)
    assert not out.startswith(safe_text.FORMULA_STARTS) or safe_text._PLAIN_NUMBER.fullmatch(out)
    assert out in (value, "'" + value)


def test_numbers_stay_numbers():
    assert safe_text.spreadsheet_cell(-3.5) == -3.5 and safe_text.spreadsheet_cell("ada") == "ada"
    assert safe_text.spreadsheet_cell("-3.5") == "-3.5" and safe_text.spreadsheet_cell("-1e-3") == "-1e-3"
    assert safe_text.spreadsheet_cell("-3.5+cmd") == "'-3.5+cmd"


@given(st.text())
@settings(max_examples=300)
def test_terminal_text_has_no_control_characters(value):
    out = safe_text.terminal_text(value)
    assert all(ch.isprintable() or ch == " " for ch in out)


def test_terminal_text_escapes_what_it_must():
    assert safe_text.terminal_text("ada\x1b[2J\nFLAG none") == "ada\\x1b[2J\\nFLAG none"
    assert safe_text.terminal_text("zoë") == "zoë"


# ---------------------------------------------------------------------------------- notebook_json


def _v4_notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell("# Title"))
    cell = nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {"grade_id": "ans", "solution": True}})
    nb.cells.append(cell)
    return nb


def test_nbformat_3_is_upgraded_with_its_cells_and_metadata():
    nb3 = nbformat.convert(_v4_notebook(), 3)
    data, notes = notebook_json.load(json.dumps(nb3).encode(), "tiny.ipynb")
    assert data["nbformat"] == 4
    code = [c for c in data["cells"] if c["cell_type"] == "code"][0]
    assert code["source"] == "x = 1" and code["metadata"]["nbgrader"]["grade_id"] == "ans"
    assert "nbformat 3" in notes[0]


@pytest.mark.parametrize("depth", [100, 5000, 200_000])
def test_deep_but_valid_json_is_read_with_a_note(depth):
    nb = json.loads(json.dumps(_v4_notebook()))
    deep = "[" * depth + "1" + "]" * depth
    raw = json.dumps(nb)[:-1] + ', "extra": {"a": "[{\\"not a bracket", "deep": ' + deep + "}}"
    raw = raw.replace('"metadata": {}, "nbformat"', '"metadata": {"deep": ' + deep + '}, "nbformat"', 1)
    data, notes = notebook_json.load(raw.encode(), "tiny.ipynb")
    assert [c["source"] for c in data["cells"]] == ["# Title", "x = 1"]
    assert data["extra"]["a"] == '[{"not a bracket'
    assert notes and "nested more than" in notes[0]
    assert notebook_json._depth(data) <= notebook_json.MAX_DEPTH


def test_shallow_notebooks_are_read_untouched():
    raw = json.dumps(_v4_notebook()).encode()
    data, notes = notebook_json.load(raw, "tiny.ipynb")
    assert data == json.loads(raw) and notes == []


@pytest.mark.parametrize(
    "raw, text",
    [
        (b"not json {", "not a readable notebook"),
        (b"[1, 2]", "not a Jupyter notebook"),
        (b'{"nbformat": 4}', "not a Jupyter notebook"),
        (b"[" * 100_000, "not a readable"),
    ],
)
def test_what_is_not_a_notebook_gets_a_message(raw, text):
    with pytest.raises(notebook_json.NotebookUnreadable, match=text):
        notebook_json.load(raw, "tiny.ipynb")


# --------------------------------------------------------------------------------------- sanitize

ATTACKS = [
    "<script>pwn('md')</script>",
    "<img src=\"x\" onerror=\"pwn('md')\">",
    "[click](javascript:pwn('md'))",
    "[click](JaVa&#83;cript:pwn('md'))",
    "<javascript:pwn('md')>",
    "[r][ref]\n\n[ref]: javascript:pwn('md')",
    "<a href='javascript:pwn(1)'>a</a>",
    "<svg onload=\"pwn('md')\"></svg>",
    "<iframe src='http://x'></iframe>",
]


def _rendered(nb) -> str:
    from nbconvert import HTMLExporter

    html, _ = HTMLExporter(template_name="classic").from_notebook_node(nb)
    return html


@pytest.mark.parametrize("attack", ATTACKS)
def test_markdown_attacks_are_shown_as_text(attack):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(attack + "\n\nIntro")])
    assert active_parts(_rendered(nb)), "the attack must be live without sanitizing"
    sanitize.sanitize_notebook(nb)
    assert active_parts(_rendered(nb)) == []
    assert "Intro" in nb.cells[0].source


def test_outputs_lose_scripts_and_keep_text():
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={
                "text/html": "<b>hi</b><script>pwn('out')</script>",
                "application/javascript": "pwn('js')",
                "image/svg+xml": "<svg onload=pwn('svg')/>",
                "text/plain": "plain",
            },
        ),
        nbformat.v4.new_output("display_data", data={"text/markdown": "[x](javascript:pwn('mdout'))"}),
        nbformat.v4.new_output("display_data", data={"application/javascript": "pwn('js only')"}),
        nbformat.v4.new_output("stream", name="stdout", text="<script>pwn('stream')</script>"),
    ]
    nb = nbformat.v4.new_notebook(
        cells=[cell],
        metadata={
            "widgets": {"x": "</script><script>pwn('w')</script>"},
            "kernelspec": {"name": "python3", "display_name": "P"},
        },
    )
    sanitize.sanitize_notebook(nb)
    data = nb.cells[0].outputs[0]["data"]
    assert (
        set(data) == {"text/html", "text/plain"}
        and "<script>" not in data["text/html"]
        and "<b>hi</b>" in data["text/html"]
    )
    assert nb.cells[0].outputs[1]["data"] == {"text/plain": "[x](javascript:pwn('mdout'))"}
    assert len(nb.cells[0].outputs) == 3  # the JavaScript-only output is gone; the stream stays
    assert set(nb.metadata) == {"kernelspec"}
    assert active_parts(_rendered(nb)) == []


def test_honest_markdown_is_kept():
    text = "# Heading\n\nSome *math* $x^2$, a [link](https://pytorch.org) and ![img](attachment:a.png)."
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])
    nb.cells[0].attachments = {"a.png": {"image/png": "iVBORw0KGgo="}}
    sanitize.sanitize_notebook(nb)
    assert nb.cells[0].source == text and nb.cells[0].attachments == {"a.png": {"image/png": "iVBORw0KGgo="}}


def test_code_spans_keep_what_was_typed_and_stay_code():
    """Before, feedback showed `Kernel → Restart &amp; Run All`: the cleaner's entity, shown as typed in code."""
    typed = "Use `Kernel → Restart & Run All`, then `a < b` and\n\n```python\nif a < b & c:\n    pass\n```\n"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(typed)])
    sanitize.sanitize_notebook(nb)
    assert nb.cells[0].source == typed
    for attack in (
        "`<script>alert('code')</script>`",
        "<div>`<script>alert('block')</script>`</div>",
        "<div>\n`<img src=x onerror=alert(1)>`\n</div>",
        "<span>`</span><script>alert(2)</script>`",
    ):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(attack)])
        sanitize.sanitize_notebook(nb)
        assert active_parts(_rendered(nb)) == [], attack


# ------------------------------------------------------------------------------------------ reach


def test_a_private_folder_blocks_another_uid():
    import tempfile

    tmp_path = Path(tempfile.mkdtemp(dir="/tmp"))  # pytest's own tmp folders are private already
    private = tmp_path / "home"
    (private / "venv" / "bin").mkdir(parents=True)
    python = private / "venv" / "bin" / "python"
    python.write_text("#!")
    os.chmod(python, 0o755)
    for d in (tmp_path, private / "venv", private / "venv" / "bin"):
        os.chmod(d, 0o755)
    os.chmod(private, 0o700)
    uid = os.getuid() + 12345
    why = reach.why_blocked(python, uid, uid)
    assert why and str(private) in why and "drwx------" in why
    assert reach.why_blocked(python, os.getuid(), os.getgid()) is None
    os.chmod(private, 0o711)
    assert reach.blocked([python], uid, uid) == {}


# ------------------------------------------------------------------------------------ kernel_start


def test_a_failed_start_is_retried_then_given_up():
    calls, cleaned = [], []

    async def flaky():
        calls.append(1)
        if len(calls) < 2:
            raise RuntimeError("Kernel died before replying to kernel_info")

    async def clean_up():
        cleaned.append(1)

    failures = asyncio.run(kernel_start.start_with_retries(flaky, clean_up, pause_s=0))
    assert len(calls) == 2 and len(cleaned) == 1 and "attempt 1" in failures[0]

    async def broken():
        raise OSError("no such file")

    with pytest.raises(kernel_start.KernelStartFailed, match="attempt 3: OSError"):
        asyncio.run(kernel_start.start_with_retries(broken, clean_up, pause_s=0))
