"""Can an unprivileged user reach the files a kernel needs? (Without bubblewrap, nothing is re-mounted
for the kernel's uid: a virtual environment inside a private folder, mode 0700 like a home directory,
is out of its reach, and every kernel would fail to start.)

    blocked(paths, uid, gid) -> {path: the first folder on its way that uid cannot pass, with why}

Mode bits only (owner, group, other), as the kernel's uid has no supplementary groups.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path


def _allows(st: os.stat_result, uid: int, gid: int, want: int) -> bool:
    """want: a mask of 4 (read), 2 (write), 1 (execute/search)."""
    if st.st_uid == uid:
        bits = (st.st_mode >> 6) & 7
    elif st.st_gid == gid:
        bits = (st.st_mode >> 3) & 7
    else:
        bits = st.st_mode & 7
    return bits & want == want


def why_blocked(path: Path, uid: int, gid: int) -> str | None:
    """None if uid can reach `path` (search every folder on the way, read it), else which folder stops it."""
    path = Path(os.path.realpath(path))  # where exec and open end up
    current = Path("/")
    for part in path.parts[1:]:
        try:
            st = os.stat(current)
        except OSError as exc:
            return f"{current} cannot be read ({exc.strerror})"
        if not _allows(st, uid, gid, 1):
            return (
                f"{current} (mode {stat.filemode(st.st_mode)}, owner uid {st.st_uid}) does not let uid {uid} "
                "pass through it"
            )
        current = current / part
    try:
        st = os.stat(current)
    except OSError as exc:
        return f"{current} cannot be read ({exc.strerror})"
    need = 5 if stat.S_ISDIR(st.st_mode) else 4
    if not _allows(st, uid, gid, need):
        return f"{current} (mode {stat.filemode(st.st_mode)}, owner uid {st.st_uid}) cannot be read by uid {uid}"
    return None


def blocked(paths: Iterable[str | Path], uid: int, gid: int) -> dict[str, str]:
    out = {}
    for path in paths:
        reason = why_blocked(Path(path), uid, gid)
        if reason:
            out[str(path)] = reason
    return out
