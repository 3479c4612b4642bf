"""Take a submission in without following a single symbolic link.

The grader runs as root: a learner's symlink to /etc/shadow, /proc/self/environ, the gradebook or
the instructor's source notebook would otherwise be read with root's rights and its contents
shown back in feedback. Every file here is opened relative to an already-open directory with
O_NOFOLLOW, and only regular files are kept:

    snapshot(submitted, student, assignment, dest)  -> Intake   (a copy with no links in it)
    tree_hash(submitted, student, assignment, salt) -> str      (hashes link texts, never targets)
    read_timestamp(submitted, student, assignment)  -> str|None

A notebook that is a link is refused with a message; any other link, device or FIFO is dropped
and reported, its target never opened. A submission folder that is itself a link is refused whole.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

MAX_FILE_BYTES = 64 * 2**20  # larger learner files are left out (the notebook reader has its own limit)
MAX_TOTAL_BYTES = 256 * 2**20  # the whole snapshot
MAX_ENTRIES = 2000  # files and folders
MAX_DEPTH = 8  # folder nesting
SKIPPED_DIRS = (".ipynb_checkpoints", "__pycache__", ".git")
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_OPEN_FILE = (
    os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
)  # NONBLOCK: a FIFO cannot hang us


class SubmissionRefused(Exception):
    """The whole submission cannot be taken in; the message is for the learner."""


@dataclass
class Intake:
    folder: Path  # the copy: regular files and folders only
    dropped: list[str] = field(default_factory=list)  # relative paths of links and special files left out
    refused: dict[str, str] = field(default_factory=dict)  # notebook file name -> message for the learner
    skipped: list[str] = field(default_factory=list)  # regular files left out for size or count

    WHOLE = "(the submission folder)"

    @classmethod
    def refused_whole(cls, folder: Path, message: str) -> Intake:
        """What a submission folder that is itself a link (or not a folder) amounts to: nothing, and why."""
        return cls(Path(folder), refused={cls.WHOLE: message})

    def left_out(self) -> dict:
        """What was left out, as data (a Celery task carries it: the worker's copy of the files has no links)."""
        return {"dropped": list(self.dropped), "refused": dict(self.refused), "skipped": list(self.skipped)}

    def add_left_out(self, notes: dict) -> None:
        """What an earlier reading of the same submission left out (see left_out), as if read here."""
        self.dropped += [str(p) for p in notes.get("dropped", [])]
        self.refused.update({str(k): str(v) for k, v in notes.get("refused", {}).items()})
        self.skipped += [str(p) for p in notes.get("skipped", [])]

    def refuses(self, notebook_file: str) -> bool:
        """Whether this notebook file (or the whole folder) was refused as a link."""
        return notebook_file in self.refused or self.WHOLE in self.refused

    def flags(self) -> list[dict]:
        """One `symlink` flag for the instructor, naming what was left out (never what it pointed to)."""
        links = sorted(set(self.dropped) | set(self.refused))
        if not links:
            return []
        return [
            {
                "code": "symlink",
                "detail": "links or special files in the submission, not followed: " + ", ".join(links[:20]),
            }
        ]

    def messages(self) -> list[str]:
        out = list(self.refused.values())
        others = [p for p in self.dropped if p not in self.refused]
        if others:
            out.append(
                "These entries of your submission are links or special files, not ordinary files, and were left "
                f"out (the grader does not follow links): {', '.join(others[:20])}. Submit the files themselves."
            )
        if self.skipped:
            out.append(
                f"These files were too large or too many to copy and were left out: {', '.join(self.skipped[:20])}."
            )
        return out


def refused_notebook_message(name: str) -> str:
    return (
        f"{name} in your submission is a symbolic link, not a notebook file. The grader does not follow links, "
        "so it was not graded (0 points for its tests). Submit the notebook file itself."
    )


def open_submission(submitted: Path, student: str, assignment: str) -> int:
    """A directory fd for submitted/<student>/<assignment>, refusing if either part is a link or not a folder."""
    for part in (student, assignment):
        if not part or part in (".", "..") or "/" in part or "\0" in part:
            raise SubmissionRefused(f"{part!r} is not a plain folder name.")
    fd = os.open(submitted, _OPEN_DIR & ~os.O_NOFOLLOW)  # the instructor's own folder: may be anywhere
    try:
        for part in (student, assignment):
            try:
                new = os.open(part, _OPEN_DIR, dir_fd=fd)
            except OSError as exc:
                kind = "a symbolic link" if _is_link(fd, part) else f"not an openable folder ({exc.strerror})"
                raise SubmissionRefused(
                    f"The submission folder {part} is {kind}: the grader does not follow links, "
                    "so nothing in it was graded (0 points). Submit the files themselves."
                ) from None
            os.close(fd)
            fd = new
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _walk(dir_fd: int, prefix: str = "", depth: int = 0):
    """(relative path, kind, lstat, name, parent fd) for every entry, folders first-visited; no link followed."""
    for name in sorted(os.listdir(dir_fd)):
        rel = f"{prefix}{name}"
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            if name in SKIPPED_DIRS:
                continue
            if depth >= MAX_DEPTH:
                yield rel, "toodeep", st, name, dir_fd
                continue
            try:
                sub = os.open(name, _OPEN_DIR, dir_fd=dir_fd)
            except OSError:  # replaced by a link between the lstat and the open: not followed
                yield rel, "special", st, name, dir_fd
                continue
            try:
                yield rel, "dir", st, name, dir_fd
                yield from _walk(sub, rel + "/", depth + 1)
            finally:
                os.close(sub)
        elif stat.S_ISREG(st.st_mode):
            yield rel, "file", st, name, dir_fd
        else:
            yield rel, "special", st, name, dir_fd


def _open_regular(dir_fd: int, name: str) -> int | None:
    """An fd for a regular file, or None if it is (or became) anything else."""
    try:
        fd = os.open(name, _OPEN_FILE, dir_fd=dir_fd)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    os.set_blocking(fd, True)
    return fd


def _read_chunks(fd: int, limit: int):
    left = limit
    while left > 0:
        chunk = os.read(fd, min(1 << 20, left))
        if not chunk:
            return
        left -= len(chunk)
        yield chunk


def snapshot(submitted: Path, student: str, assignment: str, dest: Path) -> Intake:
    """Copy submitted/<student>/<assignment> to `dest` (created): regular files and folders only."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=False)
    intake = Intake(dest)
    root = open_submission(Path(submitted), student, assignment)
    total = count = 0
    try:
        for rel, kind, st, name, parent in _walk(root):
            count += 1
            if kind == "dir":
                if count <= MAX_ENTRIES:
                    (dest / rel).mkdir(exist_ok=True)
                continue
            if kind == "special":
                intake.dropped.append(rel)
                if rel.endswith(".ipynb") and "/" not in rel:
                    intake.refused[rel] = refused_notebook_message(rel)
                continue
            if (
                kind == "toodeep"
                or count > MAX_ENTRIES
                or st.st_size > MAX_FILE_BYTES
                or total + st.st_size > MAX_TOTAL_BYTES
            ):
                intake.skipped.append(rel)
                continue
            fd = _open_regular(parent, name)
            if fd is None:
                intake.dropped.append(rel)
                continue
            try:
                with open(dest / rel, "wb") as out:
                    for chunk in _read_chunks(fd, MAX_FILE_BYTES + 1):
                        out.write(chunk)
                        total += len(chunk)
            finally:
                os.close(fd)
            os.utime(dest / rel, ns=(st.st_atime_ns, st.st_mtime_ns))
    finally:
        os.close(root)
    return intake


def tree_hash(submitted: Path, student: str, assignment: str, salt: str) -> str:
    """A digest of the submission (names, file bytes, link texts); it never opens a link's target."""
    h = hashlib.sha256(salt.encode())
    try:
        root = open_submission(Path(submitted), student, assignment)
    except (SubmissionRefused, OSError) as exc:
        h.update(f"refused: {exc}".encode())
        return h.hexdigest()
    try:
        for rel, kind, st, name, parent in _walk(root):
            h.update(f"{kind}\0{rel}\0".encode())
            if kind == "special" and stat.S_ISLNK(st.st_mode):
                try:
                    h.update(os.readlink(name, dir_fd=parent).encode(errors="surrogateescape"))
                except OSError:
                    pass
            elif kind == "file":
                fd = _open_regular(parent, name)
                if fd is not None:
                    try:
                        for chunk in _read_chunks(fd, MAX_FILE_BYTES + 1):
                            h.update(chunk)
                    finally:
                        os.close(fd)
            h.update(b"\1")
    finally:
        os.close(root)
    return h.hexdigest()


def read_small_file(submitted: Path, student: str, assignment: str, name: str, limit: int = 4096) -> bytes | None:
    """The bytes of a small regular file at the top of the submission, or None (missing, a link, too big)."""
    try:
        root = open_submission(Path(submitted), student, assignment)
    except (SubmissionRefused, OSError):
        return None
    try:
        fd = _open_regular(root, name)
        if fd is None:
            return None
        try:
            data = b"".join(_read_chunks(fd, limit + 1))
        finally:
            os.close(fd)
    finally:
        os.close(root)
    return data if len(data) <= limit else None


def read_timestamp(submitted: Path, student: str, assignment: str) -> str | None:
    """timestamp.txt if it is a regular file holding one parseable time (nbgrader's format), else None."""
    raw = read_small_file(submitted, student, assignment, "timestamp.txt", limit=64)
    if raw is None:
        return None
    text = raw.decode("utf-8", errors="replace").strip()
    if not text:
        return None
    from nbgrader.utils import parse_utc

    try:
        parse_utc(text)
    except Exception:  # noqa: BLE001 -- whatever nbgrader cannot parse is no timestamp
        return None
    return text
