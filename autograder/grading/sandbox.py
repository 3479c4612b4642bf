"""Where a learner's code runs while it is graded: a bubblewrap sandbox, and what it costs to lack one.

The kernel that executes a submission is started as

    prlimit (memory, CPU time, processes, file size)
      -> bwrap   (own mount, PID, network, IPC and UTS namespaces; read-only system; scratch dir only)
        -> setpriv (an unprivileged uid of its own, no capabilities, no new privileges)
          -> python -m ipykernel_launcher

The file system inside is an allow-list: the system directories (/usr, /etc and their links), the
Python installation and the two course packages that notebooks import (autograder, coursetools),
all read-only, autograder being the probes' copy of it (:mod:`autograder.grading.probe_view`: no judges
module or folder, no grading/: references and the grading command never enter);
a fresh /tmp; and the submission's scratch copy, writable. The course directory (solutions, gradebook,
other submissions), the repository's other folders and /root are not there.
There is no network: the kernel talks to the grader over Unix sockets in the scratch directory.

Where the sandbox is whole (unless REVAD_WARM_KERNELS=0), a worker's kernels are forked, warm, by a factory in a
sandbox of the same kind (:mod:`autograder.grading.warm`, :mod:`autograder.probes.kernel_fork`): the same limits
and mounts, and, for each kernel, namespaces, a uid and a /tmp that nothing before it touched.

Without bubblewrap (or where it cannot start), grading still works -- the limits and the
unprivileged uid still apply -- and :func:`detect` says which protections are off;
``require=True`` refuses instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import autograder
import coursetools

from .probe_view import probe_view

BASE_UID = 62000  # job k runs as uid/gid BASE_UID + k % UID_RANGE: its own process-count budget, nothing left over
UID_RANGE = 3000


@dataclass
class Limits:
    memory_mb: int = 4096  # memory of each sandboxed process: its address space plus the sandbox's /tmp
    tmp_mb: int = 256  # the sandbox's /tmp, a tmpfs (memory): taken out of memory_mb
    cpu_s: int = 600  # CPU seconds per process (RLIMIT_CPU)
    nproc: int = 128  # processes + threads of the slot's uid (RLIMIT_NPROC)
    fsize_mb: int = 64  # largest file the code may write (RLIMIT_FSIZE)
    cell_timeout_s: int = 120  # one cell
    timeout_s: int = 900  # the whole notebook, wall clock
    output_kb: int = 512  # output kept per cell (the rest is dropped, with a note)


@dataclass
class SandboxInfo:
    tool: str | None  # path of bwrap, or None when grading runs unsandboxed
    as_root: bool  # whether the grader is root (then bwrap runs as root, setpriv drops)
    drop_uid: bool  # whether kernels run under an unprivileged uid of their own
    problems: list[str] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return self.tool is not None

    def protections_off(self) -> list[str]:
        off = []
        if not self.active:
            off += [
                "network isolation (the learner's code can reach the network)",
                "file-system isolation (it can read solutions/, the gradebook and other submissions, "
                "and write wherever the grader's user can)",
                "process isolation (its processes are cleaned up by uid, not by a PID namespace)",
            ]
        if not self.drop_uid:
            off.append("unprivileged user (the code runs as the grader's own user)")
        return off

    def describe(self) -> str:
        off = self.protections_off()
        if not off:
            return (
                "sandbox: bubblewrap (no network, read-only system, scratch copy only, unprivileged uid, "
                "limits on memory, CPU time, processes, file size and wall time)"
            )
        text = "WARNING: grading without full sandbox protection. OFF: " + "; ".join(off) + "."
        text += (
            " Still on: limits on memory, CPU time, processes, file size and wall time; verdicts decided outside the "
            "learner's process."
        )
        if self.problems:
            text += " (" + " ".join(self.problems) + ")"
        if not self.active:
            text += " Install bubblewrap (apt-get install bubblewrap, or `make sandbox`) to turn it on."
        return text


def _bwrap_path() -> str | None:
    override = os.environ.get("REVAD_BWRAP")
    if override is not None:  # tests and instructors can point elsewhere, or disable with an empty value
        return override if override and os.access(override, os.X_OK) else None
    return shutil.which("bwrap")


def _setpriv() -> str | None:
    return shutil.which("setpriv")


def detect(course_root: Path | None = None) -> SandboxInfo:
    """Find bubblewrap and check that it really starts a sandbox here."""
    as_root = os.geteuid() == 0
    drop_uid = as_root and _setpriv() is not None
    tool = _bwrap_path()
    problems = []
    if tool is None:
        problems.append("bubblewrap (bwrap) was not found.")
        return SandboxInfo(None, as_root, drop_uid, problems)
    info = SandboxInfo(tool, as_root, drop_uid, problems)
    scratch = Path(os.environ.get("TMPDIR", "/tmp"))
    argv = bwrap_argv(info, scratch_dir=None, hide=[course_root] if course_root else []) + ["/bin/true"]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        problems.append(f"bwrap could not start ({exc}).")
        return SandboxInfo(None, as_root, drop_uid, problems)
    if out.returncode != 0:
        problems.append(f"bwrap could not start a sandbox here: {out.stderr.strip()[:300]}")
        return SandboxInfo(None, as_root, drop_uid, problems)
    del scratch
    return info


def _readonly_roots() -> list[Path]:
    """What the kernel needs to see: system dirs, Python, and the course packages (not the repository)."""
    roots = [Path(p) for p in ("/usr", "/etc", "/opt") if Path(p).is_dir()]
    python = {
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(os.path.realpath(sys.executable)).parent.parent,
        Path(autograder.__file__).resolve().parent,
        Path(coursetools.__file__).resolve().parent,
    }
    repo = Path(autograder.__file__).resolve().parent.parent
    for entry in sys.path:
        if not entry or not Path(entry).is_dir():
            continue
        p = Path(entry).resolve()
        if p == repo or p == Path("/") or repo.is_relative_to(p) and p != repo:
            continue  # never the repository itself (solutions/, .git) or a parent of it
        if (
            p.name in ("site-packages", "dist-packages")
            or "python" in p.name
            or p.is_relative_to(Path(sys.prefix).resolve())
        ):
            python.add(p)
    out: list[Path] = []
    for p in sorted(roots + [q.resolve() for q in python], key=lambda q: len(q.parts)):
        if not any(p.is_relative_to(q) for q in out):
            out.append(p)
    return out


def kernel_paths() -> list[Path]:
    """What the kernel's own uid must reach when nothing is mounted for it: Python and the course packages."""
    system = {Path("/usr"), Path("/etc"), Path("/opt")}
    return [Path(sys.executable)] + [p for p in _readonly_roots() if p not in system]


def bwrap_argv(
    info: SandboxInfo,
    scratch_dir: Path | None,
    hide: list[Path] | None = None,
    tmp_mb: int = 0,
    extra_binds: list[Path] | None = None,
    caps: str | None = None,
) -> list[str]:
    """The bubblewrap command line (without the command to run inside). `extra_binds`: folders bound writable
    besides the scratch folder; `caps`: capabilities kept inside (warm kernels' factory only, grader as root)."""
    if info.tool is None:
        raise RuntimeError("bwrap_argv needs bubblewrap, which is not installed")
    argv = [info.tool, "--die-with-parent", "--new-session", "--tmpfs", "/"]
    for link in ("bin", "lib", "lib64", "sbin", "lib32", "libx32"):
        p = Path("/") / link
        if p.is_symlink():
            argv += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            argv += ["--ro-bind", str(p), str(p)]
    # Fresh /tmp and /var/tmp first: a virtual environment or checkout that lives under /tmp (a CI
    # clone, say) is bound on top of them below, instead of being hidden by them.
    # /tmp is the only tmpfs the code can write to; files there are memory, so it has a size of its own
    # (a part of the memory limit); /var/tmp points into it; /, /dev and /run are made read-only below.
    size = ["--size", str(tmp_mb * 2**20)] if tmp_mb else []
    argv += [
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--perms",
        "1777",
        *size,
        "--tmpfs",
        "/tmp",
        "--perms",
        "0755",
        "--dir",
        "/var",
        "--symlink",
        "/tmp",
        "/var/tmp",
        "--dir",
        "/run",
    ]
    argv += _readonly_mounts(hide)
    argv += _scratch_mount(scratch_dir)
    for extra in extra_binds or []:
        argv += _parents(extra) + ["--bind", str(extra), str(extra)]
    argv += ["--remount-ro", "/", "--remount-ro", "/dev"]
    return argv + _namespaces(info, caps)


def _namespaces(info: SandboxInfo, caps: str | None) -> list[str]:
    """Namespaces of its own (a user namespace where the grader is not root), a clean environment, and the
    capabilities `caps` kept (as root only: the warm kernels' factory)."""
    argv = [
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "grader",
        "--clearenv",
    ]
    if not info.as_root:
        argv += ["--unshare-user"]
    for cap in caps.split(",") if caps else []:
        argv += ["--cap-add", cap]
    return argv


def hidden_in_view(hide: list[Path] | None) -> list[Path]:
    """The paths of `hide` that the sandbox would otherwise show (under one of the roots it binds)."""
    roots = _readonly_roots()
    return [
        Path(path).resolve()
        for path in hide or []
        if path and Path(path).exists() and any(Path(path).resolve().is_relative_to(r) for r in roots)
    ]


def _readonly_mounts(hide: list[Path] | None) -> list[str]:
    """The roots the kernel needs (Python, the packages), read-only, autograder replaced by its probes' copy (no
    judge, no grading command); the paths in `hide` covered by empty folders."""
    argv: list[str] = []
    roots = _readonly_roots()
    parents = sorted(
        {
            str(q)
            for r in roots
            for q in Path(r).parents
            if str(q) not in ("/", "/tmp", "/var/tmp") and not any(q.is_relative_to(x) for x in roots)
        },
        key=len,
    )
    for parent in parents:  # mount points' parents, world-traversable (bwrap would make them 0700)
        argv += ["--perms", "0755", "--dir", parent]
    for root in roots:
        argv += ["--ro-bind", str(root), str(root)]
    argv += ["--ro-bind", str(probe_view()), str(Path(autograder.__file__).resolve().parent)]
    for path in hidden_in_view(hide):  # in case one of them sits under an allowed root
        argv += ["--tmpfs", str(path), "--remount-ro", str(path)]
    return argv


def _parents(folder: Path) -> list[str]:
    """A mount point's parents, world-traversable (bwrap would make them 0700)."""
    argv: list[str] = []
    for parent in sorted({str(q) for q in Path(folder).parents if str(q) not in ("/", "/tmp", "/var/tmp")}, key=len):
        argv += ["--perms", "0755", "--dir", parent]
    return argv


def _scratch_mount(scratch_dir: Path | None) -> list[str]:
    """The job's scratch folder, the only place bound writable, and the kernel's working directory in it."""
    if scratch_dir is None:
        return []
    return _parents(scratch_dir) + ["--bind", str(scratch_dir), str(scratch_dir), "--chdir", str(scratch_dir / "work")]


def address_space_mb(info: SandboxInfo, limits: Limits) -> int:
    """The address-space limit: the memory limit less the sandbox's /tmp, whose files are memory too."""
    return limits.memory_mb - (limits.tmp_mb if info.active else 0)


def kernel_command(
    info: SandboxInfo, limits: Limits, scratch_dir: Path, uid: int | None, env: dict[str, str], hide: list[Path]
) -> list[str]:
    """The full command that starts one sandboxed ipykernel; `{connection_file}` is filled by jupyter_client.
    `uid`: the job's kernel uid (sandbox.slot_uid), used where the sandbox drops to one."""
    if info.drop_uid and uid is None:
        raise ValueError("this sandbox runs kernels as an unprivileged uid, and the job names none")
    cmd = [
        "prlimit",
        f"--as={address_space_mb(info, limits) * 2**20}",
        f"--cpu={limits.cpu_s}",
        f"--nproc={limits.nproc}",
        f"--fsize={limits.fsize_mb * 2**20}",
        "--core=0",
        "--",
    ]
    if shutil.which("prlimit") is None:
        cmd = []  # execute.py applies the same limits with resource.setrlimit instead
    if info.active:
        cmd += bwrap_argv(info, scratch_dir, hide, tmp_mb=limits.tmp_mb)
        for key, value in env.items():
            cmd += ["--setenv", key, value]
        if info.drop_uid:
            cmd += ["--", *_drop_to(uid)]
        cmd += ["--"]
    else:
        cmd += ["env", "-i"] + [f"{k}={v}" for k, v in env.items()]
        if info.drop_uid:
            cmd += [*_drop_to(uid), "--"]
    from ..probes.kernel_fork import KERNEL_OPTIONS

    cmd += [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}", *KERNEL_OPTIONS]
    return cmd


def factory_command(
    info: SandboxInfo, limits: Limits, kernels_dir: Path, socket_dir: Path, env: dict[str, str], hide: list[Path]
) -> list[str]:
    """The command that starts the warm kernels' factory (autograder/probes/kernel_fork.py): the same limits and
    sandbox as a kernel's, with the folder its kernels' scratch folders live in and the folder of its socket bound
    writable, kept as root with the capabilities it needs to give each kernel namespaces and a uid of its own."""
    from ..probes.kernel_fork import CAPABILITIES

    cmd = [
        "prlimit",
        f"--as={address_space_mb(info, limits) * 2**20}",
        f"--cpu={limits.cpu_s}",
        f"--fsize={limits.fsize_mb * 2**20}",
        "--core=0",
        "--",
    ]
    cmd += bwrap_argv(info, None, hide, tmp_mb=limits.tmp_mb, extra_binds=[kernels_dir, socket_dir], caps=CAPABILITIES)
    for key, value in env.items():
        cmd += ["--setenv", key, value]
    return cmd + ["--", sys.executable, "-m", "autograder.probes.kernel_fork", str(socket_dir / "factory.sock")]


def kernel_runner_command(
    info: SandboxInfo, limits: Limits, socket_dir: Path, env: dict[str, str], hide: list[Path], mode: str
) -> list[str]:
    """The command that starts a kernel runner's factory (autograder/probes/kernel_runner.py, `mode` interpret or
    compile): a kernel's limits and sandbox, the folder of its socket bound writable; kept as root with the
    capabilities it needs to give each request's child namespaces and the submission's uid, where the grader is
    root; without bubblewrap, a plain process of the grader's user (its children are not isolated)."""
    from ..probes.kernel_fork import CAPABILITIES

    cmd = [
        "prlimit",
        f"--as={address_space_mb(info, limits) * 2**20}",
        f"--fsize={limits.fsize_mb * 2**20}",
        "--core=0",
        "--",
    ]
    if shutil.which("prlimit") is None:
        cmd = []
    runner = [sys.executable, "-m", "autograder.probes.kernel_runner", str(socket_dir / "runner.sock"), mode]
    if not (info.active and info.as_root and info.drop_uid):
        return cmd + ["env", "-i", *[f"{k}={v}" for k, v in env.items()], *runner]
    runner.append("--isolate")
    cmd += bwrap_argv(info, None, hide, tmp_mb=limits.tmp_mb, extra_binds=[socket_dir], caps=CAPABILITIES)
    for key, value in env.items():
        cmd += ["--setenv", key, value]
    return cmd + ["--", *runner]


def _drop_to(uid: int | None) -> list[str]:
    """setpriv's arguments that run what follows as `uid`, with no groups, capabilities or new privileges."""
    setpriv = _setpriv() or "setpriv"  # drop_uid is only set where setpriv was found
    return [
        setpriv,
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
    ]


def slot_uid(info: SandboxInfo, slot: int) -> int | None:
    return BASE_UID + slot % UID_RANGE if info.drop_uid else None


def kill_uid(uid: int | None, upto: int | None = None) -> int:
    """Kill every process left running under a job's uid (or uids uid..upto-1): forks that escaped a session."""
    if uid is None:
        return 0
    upto = upto or uid + 1
    import psutil

    killed = 0
    for _ in range(5):
        victims = []
        for proc in psutil.process_iter(["uids"]):
            try:
                if proc.info["uids"] and uid <= proc.info["uids"].real < upto:
                    victims.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        if not victims:
            break
        for proc in victims:
            try:
                proc.kill()
                killed += 1
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        psutil.wait_procs(victims, timeout=2)
    return killed
