"""A grading worker's side of the kernel runners: where the judges' requests for one submission's kernels go.

Each worker process keeps two factories (autograder/probes/kernel_runner.py): one whose children interpret a
recorded kernel with the notebooks' kernel probes, one whose children compile it for a GPU. Both are started in a
sandbox like a kernel's the first time a submission needs them, and kept while the settings stay the same; neither
ever runs a learner's text. Every request is a child forked for it, with the submission's uid, that answers on a
pipe of its own: the factory hands back the bytes (the request's nonce, a length, torch.save data) and how the
child ended; the answer is read here as untrusted data (torch.load with weights_only). A child's stdout and stderr
go nowhere.

    runner = SandboxedRunner(info, limits, uid, threads, hide)
    with kernel_runs.using(runner):       # the judges of one submission
        ...
"""

from __future__ import annotations

import atexit
import io
import json
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from ..judges.kernel_runs import RunFailed
from ..probes.kernel_runner import HEADER, MAX_ANSWER_BYTES
from . import sandbox
from .warm import Factory

READY_WITHIN_S = 180  # a factory slower than this to import torch and Triton (a machine under load) is not used
COMPILE_TIMEOUT_S = 60
CRASHED = (
    "Your kernel crashed Triton's interpreter while the check ran it (its process died), so this check scores "
    "nothing. Hint: likely an unmasked tl.load/tl.store: a block that reaches past the end of a tensor reads or "
    "writes memory that is not the tensor's."
)
TIMED_OUT = (
    "Your kernel ran longer than the {seconds:.0f} s the grader allows this check, so it was stopped and the check "
    "scores nothing. Look for a loop that never ends, or one far longer than the row it covers."
)


class RunnerUnavailable(RuntimeError):
    """The grader could not run the request (its factory did not start): never the learner's doing."""


def _wait_ready(made: Factory) -> bool:
    deadline = time.monotonic() + READY_WITHIN_S
    while not made.poll_ready() and made.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    return made.poll_ready()


_factories: dict[str, Factory] = {}
_folder: list[Path] = []


def _base() -> Path:
    if not _folder:
        _folder.append(Path(tempfile.mkdtemp(prefix="revad-kernel-runs-")))
        atexit.register(stop_all)
    return _folder[0]


def stop_all() -> None:
    for factory in _factories.values():
        factory.stop()
    _factories.clear()
    if _folder:
        shutil.rmtree(_folder[0], ignore_errors=True)


def _key(mode: str, info: sandbox.SandboxInfo, limits: sandbox.Limits, hide: list[Path]) -> tuple:
    hidden = tuple(str(p) for p in sandbox.hidden_in_view(hide))
    return (mode, info.tool, info.as_root, info.drop_uid, limits.memory_mb, limits.tmp_mb, limits.fsize_mb, hidden)


def start(mode: str, info: sandbox.SandboxInfo, limits: sandbox.Limits, threads: int, hide: list[Path]) -> Factory:
    """This worker process's factory of `mode` for these settings, started if it has none (without waiting for it:
    it imports while the worker runs the submission's notebook)."""
    from .execute import kernel_environment

    key = _key(mode, info, limits, hide)
    current = _factories.get(mode)
    if current is not None and current.key == key and current.alive():
        return current
    if current is not None:
        current.stop()
    folder = _base() / mode
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    folder.chmod(0o700)  # the grader's only: no child can ask for another's run
    env = kernel_environment(folder / "home", threads, info.active)
    argv = sandbox.kernel_runner_command(info, limits, folder, env, [Path(p) for p in key[-1]], mode)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError as error:
        raise RunnerUnavailable(f"the kernel runner did not start ({error})") from None
    made = Factory(key, proc, folder, folder / "runner.sock")
    _factories[mode] = made
    return made


def factory(mode: str, info: sandbox.SandboxInfo, limits: sandbox.Limits, threads: int, hide: list[Path]) -> Factory:
    """This worker process's factory of `mode` for these settings, ready (started and waited for if need be)."""
    made = start(mode, info, limits, threads, hide)
    if not _wait_ready(made):
        made.stop()
        _factories.pop(mode, None)
        raise RunnerUnavailable("the kernel runner did not become ready")
    return made


class SandboxedRunner:
    """The kernel runs of one submission: its uid, its limits. `warm`: the worker's warm kernels' factory, which
    serves the interpreter's runs where there is one (it has imported torch and the probes already); the GPU
    compiles always go to a factory of their own (Triton in compiled mode)."""

    def __init__(
        self,
        info: sandbox.SandboxInfo,
        limits: sandbox.Limits,
        uid: int | None,
        threads: int,
        hide: list[Path],
        warm: Factory | None = None,
    ) -> None:
        self.info, self.limits, self.uid, self.threads, self.hide, self.warm = info, limits, uid, threads, hide, warm

    def prestart(self) -> None:
        """Start the factories this submission's kernel checks will ask, without waiting for them."""
        try:
            start("compile", self.info, self.limits, self.threads, self.hide)
            if not self._warm_ready():
                start("interpret", self.info, self.limits, self.threads, self.hide)
        except RunnerUnavailable:
            pass  # said when a request needs it

    def _warm_ready(self) -> bool:
        return self.warm is not None and self.uid is not None and self.warm.poll_ready()

    def probe(self, probe: str, record: dict, params: dict) -> Any:
        body = {"probe": probe, "record": record, "params": params}
        try:
            return self._ask("interpret", "probe", body, float(self.limits.cell_timeout_s))
        except RunnerUnavailable as error:
            raise RunFailed(
                f"The grader could not run your kernel ({error}): this is the grader's failure, not yours, and your "
                "instructor has been told."
            ) from None

    def compile(self, record: dict, launches: list, arch: int) -> list[dict]:
        body = {"record": record, "launches": launches, "arch": arch}
        try:
            answer = self._ask("compile", "compile", body, COMPILE_TIMEOUT_S)
        except RunnerUnavailable as error:
            return [{"ok": None, "why": str(error)}]
        except RunFailed as failure:  # a compile that hangs or kills its process: the kernel's doing
            why = "Triton's compiler did not finish this kernel (" + (
                f"stopped after {COMPILE_TIMEOUT_S} s)" if "longer" in str(failure) else "its process died)"
            )
            return [{"ok": False, "why": why, "line": None, "error": "Timeout"}]
        return answer if isinstance(answer, list) else [{"ok": False, "why": "no answer", "line": None}]

    def _ask(self, mode: str, kind: str, body: dict, timeout_s: float) -> Any:
        made = self.warm if mode == "interpret" and self._warm_ready() else None
        own = made is None
        if made is None:
            made = factory(mode, self.info, self.limits, self.threads, self.hide)
        nonce = secrets.token_bytes(16)
        request = {
            "kind": kind,
            "body": body,
            "nonce": nonce.hex(),
            "uid": self.uid,
            "nproc": self.limits.nproc,
            "cpu_s": int(timeout_s) + 1,
            "timeout_s": timeout_s,
        }
        line = json.dumps(request, default=_plain).encode() + b"\n"
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(timeout_s + 60)
                conn.connect(str(made.socket))
                conn.sendall(line)
                ended, received = _read_answer(conn)
        except OSError as error:
            if own:
                made.stop()
            else:  # the warm kernels' factory is the worker's: this runner asks its own from now on
                self.warm = None
            raise RunnerUnavailable(f"the kernel runner stopped answering ({error})") from None
        if ended.get("timed_out"):
            raise RunFailed(TIMED_OUT.format(seconds=timeout_s))
        return _unpack(nonce, kind, received)


def _read_answer(conn: socket.socket) -> tuple[dict, bytes]:
    """The factory's line (how the child ended, how many bytes it wrote) and those bytes."""
    buffer = b""
    while b"\n" not in buffer:
        chunk = conn.recv(1 << 16)
        if not chunk:
            raise OSError("the kernel runner closed the connection")
        buffer += chunk
    head, _, rest = buffer.partition(b"\n")
    ended = json.loads(head)
    size = int(ended.get("bytes", 0))
    if size > MAX_ANSWER_BYTES + HEADER.size + (1 << 20):
        raise OSError("the kernel runner sent more than an answer")
    chunks = [rest]
    have = len(rest)
    while have < size:
        chunk = conn.recv(min(1 << 20, size - have))
        if not chunk:
            break
        chunks.append(chunk)
        have += len(chunk)
    return ended, b"".join(chunks)


def _unpack(nonce: bytes, kind: str, received: bytes) -> Any:
    """The child's answer: its header (this request's nonce, the length of what follows, which is all that follows)
    and the data (JSON for a compile, torch.save for a probe); a child that died without one crashed."""
    import torch

    if len(received) < HEADER.size:
        raise RunFailed(CRASHED)
    got, length = HEADER.unpack_from(received)
    if got != nonce or length != len(received) - HEADER.size or length > MAX_ANSWER_BYTES:
        raise RunFailed(CRASHED)
    body = received[HEADER.size :]
    try:
        if kind == "compile":
            return json.loads(body)
        return torch.load(io.BytesIO(body), weights_only=True, map_location="cpu")
    except Exception:  # noqa: BLE001 - not data this grader reads
        raise RunFailed(CRASHED) from None


def _plain(value: Any) -> Any:
    """JSON for the tuples and numbers test cells write (tuples become lists: every probe iterates them)."""
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"a kernel request holds a {type(value).__name__}")
