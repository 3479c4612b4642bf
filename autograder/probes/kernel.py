"""The grader's setup inside the sandboxed kernel: one call before the notebook's first cell.

    from autograder.probes.kernel import install
    __revad_probe__ = install(modules=[...], watched=[...], channel="/path/to/scratch/probe")

``install`` imports the checks' modules, remembers what the learner's code might replace (watched
functions, the checks, IPython's hooks, tracing), and returns the probe runner. In the run the
grader assembles, each check call of a graded test cell is replaced by
``__revad_probe__(grade_id, k, check, learner_expression, params)``: it evaluates the learner's
expression, runs the check's probe on it (never the judge: that is absent here) and sends the data,
plus what was found replaced, to the grader's socket in the channel folder, through a courier process.

Nothing here decides a score: whatever the learner's code does to this module can at most spoil
the data, and the judges outside accept only complete answers to the cases they asked for.
"""

from __future__ import annotations

import importlib
import io
import os
import select
import signal
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from . import courier
from .channel import COURIER_PYTHON, RECORD_MAX, SOCKET_FOLDER, SOCKET_NAME, ProbeRecord, identity
from .channel import header as channel_header

# What the setup watches for replacement (flags only: this runs in the learner's kernel).
WATCHED = [
    "torch.autograd.gradcheck",
    "torch.autograd.gradgradcheck",
    "torch.autograd.grad",
    "torch.allclose",
    "torch.isclose",
    "torch.equal",
    "torch.testing.assert_close",
    "torch.Tensor.allclose",
    "torch.Tensor.backward",
    "torch.autograd.Function.apply",
    "torch.save",
    "torch.load",
    "builtins.abs",
    "builtins.all",
    "builtins.any",
    "builtins.isinstance",
    "builtins.float",
    "builtins.len",
    "builtins.max",
    "builtins.min",
    "builtins.sum",
    "builtins.round",
    "builtins.print",
    "builtins.eval",
    "builtins.__import__",
    "math.isclose",
    "math.isnan",
    "math.isfinite",
    "autograder.registry.Check.collect",
    "autograder.registry.Check.decide",
    "autograder.registry.Check.__call__",
    "autograder.feedback.close",
    "autograder.probes.call.call_learner",
    "autograder.feedback.as_float",
    "autograder.feedback.mismatch",
    "autograder.feedback.CheckFailed",
    "IPython.display.display",
    # what the probes of notebooks 04 and 05 lean on (they keep their own references; replacing one is still a flag)
    "torch.vmap",
    "torch.compile",
    "torch.library.opcheck",
    "torch.autograd.graph.saved_tensors_hooks",
    "torch.autograd.forward_ad.make_dual",
    "torch.autograd.forward_ad.unpack_dual",
    "torch.autograd.forward_ad.dual_level",
    "torch.Tensor.untyped_storage",
    "torch.Tensor.data_ptr",
    "torch.Tensor.requires_grad_",
    "triton.runtime.interpreter.InterpretedFunction.run",
    "triton.runtime.jit.JITFunction.run",
]
_KNOWN_HOOK_MODULES = ("IPython", "ipykernel", "matplotlib", "matplotlib_inline", "ipywidgets")
_OWN_PACKAGES = ("autograder", "coursetools")  # the probes' code: every name in it is looked up when a probe runs


def _own_attributes() -> dict[tuple[str, str], Any]:
    """(module, name) -> value for every attribute of the probes' own modules loaded here: a probe calls its
    helpers (and Check.probe resolves the probe itself) by name at run time, so replacing one through
    sys.modules would hand the judge data the learner's code made up."""
    out = {}
    for name, module in list(sys.modules.items()):
        if isinstance(module, types.ModuleType) and name.split(".")[0] in _OWN_PACKAGES:
            for attr, value in list(vars(module).items()):
                if not (attr.startswith("__") and attr.endswith("__")) and not isinstance(value, bool):
                    out[(name, attr)] = value  # (flags such as learner_traceback._INSTALLED change by design)
    return out


def _same(a: Any, b: Any) -> bool:
    return a is b or type(a) in (int, float, str) and type(a) is type(b) and a == b


def _resolve(path: str) -> Any:
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in sys.modules:
            obj = sys.modules[".".join(parts[:i])]
            for attr in parts[i:]:
                obj = getattr(obj, attr)
            return getattr(obj, "__func__", obj)
    raise LookupError(path)


_MISSING = object()


class _Watch:
    """A snapshot of what learner code could replace; `changed()` lists what it did replace."""

    def __init__(self, ip, modules: list[str], watched: list[str], checks: dict):
        self.ip, self.checks = ip, checks
        self.watched = {}
        for path in watched:
            try:
                self.watched[path] = _resolve(path)
            except Exception:  # noqa: BLE001 -- not importable here: nothing to watch
                pass
        self.parts = {name: (c, c.probe) for name, c in checks.items()}
        self.own = _own_attributes()
        self.modules = {
            m: sys.modules.get(m)
            for m in (
                "torch",
                "torch.autograd",
                "builtins",
                "math",
                "autograder.registry",
                "autograder.feedback",
                *modules,
            )
        }
        self.events = {k: list(v) for k, v in ip.events.callbacks.items()}
        self.transformers = self._transformers()
        self.trace = (sys.gettrace(), sys.getprofile())
        self.custom_exc = tuple(getattr(ip, "custom_exceptions", ()))

    def replaced_own(self) -> list[str]:
        out = []
        for (m, attr), value in self.own.items():
            module = sys.modules.get(m)
            if module is not None and not _same(vars(module).get(attr, _MISSING), value):
                out.append(f"{m}.{attr}")
        return out

    def restore_own(self) -> list[str]:
        """Put back what the learner's code replaced in the probes' own modules (before a probe runs: the probe then
        runs as installed); returns what was replaced."""
        replaced = self.replaced_own()
        for path in replaced:
            m, _, attr = path.rpartition(".")
            setattr(sys.modules[m], attr, self.own[(m, attr)])
        return replaced

    def _transformers(self):
        ip = self.ip
        return (list(ip.input_transformers_cleanup), list(ip.input_transformers_post), list(ip.ast_transformers))

    def changed(self) -> list[str]:
        from autograder.registry import CHECKS

        out = []
        for path, obj in self.watched.items():
            try:
                now = _resolve(path)
            except Exception:  # noqa: BLE001
                now = None
            if now is not obj:
                out.append(path)
        for name, (c, probe) in self.parts.items():
            if CHECKS.get(name) is not c or c.probe is not probe:
                out.append("autograder check " + name)
        out += self.replaced_own()
        for m, mod in self.modules.items():
            if sys.modules.get(m) is not mod:
                out.append(f"sys.modules[{m!r}]")
        for k, v in self.ip.events.callbacks.items():
            before = self.events.get(k, [])
            added = [
                cb
                for cb in v
                if cb not in before and not str(getattr(cb, "__module__", "") or "").startswith(_KNOWN_HOOK_MODULES)
            ]
            if added or any(cb not in v for cb in before):
                out.append("IPython event hook " + k)
        if self._transformers() != self.transformers:
            out.append("IPython input/AST transformers")
        if tuple(getattr(self.ip, "custom_exceptions", ())) != self.custom_exc:
            out.append("IPython custom exception handler")
        if (sys.gettrace(), sys.getprofile()) != self.trace:
            out.append("sys.settrace/setprofile")
        return out


@contextmanager
def _no_modes(torch, disable_current_modes: Callable) -> Iterator[None]:
    """While a probe runs: no torch function or dispatch mode the learner's code left active (they are flagged, and
    put back after), and nothing else changed: torch functions stay on, as in a learner's own call, so that nothing
    the learner's code can read tells a probe's call from its own."""
    popped = []
    while torch._C._len_torch_function_stack() > 0:
        popped.append(torch._C._pop_torch_function_stack())
    try:
        with disable_current_modes():
            yield
    finally:
        for mode in reversed(popped):
            torch._C._push_on_torch_function_stack(mode)


def _active_torch_modes(torch) -> list[str]:
    """TorchFunctionMode / TorchDispatchMode left active by the learner's code."""
    found = []
    try:
        if torch.overrides._get_current_function_mode_stack():
            found.append("an active TorchFunctionMode")
    except Exception:  # noqa: BLE001 -- an older torch without the helper
        pass
    try:
        from torch.utils._python_dispatch import _get_current_dispatch_mode

        if _get_current_dispatch_mode() is not None:
            found.append("an active TorchDispatchMode")
    except Exception:  # noqa: BLE001
        pass
    return found


class ChannelError(RuntimeError):
    """A probe's record did not reach the grader: the test cell stops with this error (a cell that ends in an error
    scores 0). No honest notebook meets it: something stopped the record's courier or changed the grader's socket."""


class _Records:
    """The probe's side of the record channel (the grader's side: ``grading/records.py``).

    Each record goes to the grader through a courier process of its own (``probes/courier.py``), started after the
    learner's code of the call has returned, with the record's cell, call, size and SHA-256 in its arguments and the
    record on a pipe: no descriptor that reaches the grader exists in this process while the learner's code runs,
    none is left for it to duplicate, reopen or write through after, and bytes it pushes into the pipe fail their
    hash at the grader. Everything this class calls was taken when the grader's setup installed the probes, before
    any learner code ran. A courier that did not deliver raises ChannelError (and leaves a file that says so in the
    channel, which the grader flags): the record is then missing or refused, never replaced."""

    def __init__(self, channel: str):
        self.channel = os.path.abspath(channel)
        self.folder = os.path.join(self.channel, SOCKET_FOLDER)
        try:
            self.socket_id: str | None = identity(os.stat(os.path.join(self.folder, SOCKET_NAME)))
        except OSError:
            self.socket_id = None  # no grader listens: every write says so
        self.courier = Path(courier.__file__).read_text()
        self.python = _courier_python(Path(courier.__file__).with_name(COURIER_PYTHON))
        self.spawn, self.pipe, self.open_fd, self.write_fd, self.close = (
            os.posix_spawn,
            os.pipe,
            os.open,
            os.write,
            os.close,
        )
        self.wait, self.exit_code, self.select = os.waitpid, os.waitstatus_to_exitcode, select.select
        self.signal, self.header = signal.signal, channel_header
        self.actions = [
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
        ]
        self.send_one, self.say = self._send, self._signal  # bound now: a method replaced on the class is not used

    def write(self, record: ProbeRecord, payload: bytes) -> None:
        """Hand one record to a courier and wait until it has sent it; ChannelError when it did not."""
        socket_id = self.socket_id
        if socket_id is None:
            raise ChannelError("the grader's record channel is not there: this test's record could not be sent")
        try:
            previous = self.signal(signal.SIGCHLD, signal.SIG_DFL)  # a courier's exit is ours to collect
        except (ValueError, OSError):  # not the main thread
            previous = None
        try:
            why, started = self.send_one(record, payload, socket_id)
        finally:
            if previous is not None:
                self.signal(signal.SIGCHLD, previous)
        if why:
            if started:  # something stopped its courier, or cut its input: said in the channel, for the grader
                self.say(record, "tampered")
            raise ChannelError(f"this test's record could not be sent to the grader ({why})")

    def _send(self, record: ProbeRecord, payload: bytes, socket_id: str) -> tuple[str, bool]:
        """(why the record was not sent, "" when it was; whether a courier started)."""
        head = self.header(record.cell, record.call, payload)
        argv = (self.python, "-I", "-S", "-c", self.courier, self.folder, socket_id, head, str(len(payload)))
        try:
            read_end, write_end = self.pipe()
        except OSError as exc:
            return f"no pipe for its courier: {exc.strerror}", False
        try:
            pid = self.spawn(
                self.python, argv, {}, file_actions=[(os.POSIX_SPAWN_DUP2, read_end, 0), *self.actions], setsigmask=()
            )
        except OSError as exc:
            self.close(write_end)
            return f"its courier could not start: {exc.strerror}", False
        finally:
            self.close(read_end)
        broken = False
        try:
            view = memoryview(payload)
            while view:
                try:
                    view = view[self.write_fd(write_end, view[: 1 << 20]) :]
                except BlockingIOError:  # the pipe was made non-blocking from outside: wait until it takes more
                    self.select([], [write_end], [])
                except OSError:  # the courier is gone, or the descriptor is no longer the pipe
                    broken = True
                    break
        finally:
            self.close(write_end)
        try:
            code = self.exit_code(self.wait(pid, 0)[1])
        except ChildProcessError:  # collected by someone else
            return "its courier's end was taken from it", True
        if code != 0 or broken:
            why = {2: "the grader's socket was replaced or moved", 3: "its input ended early"}
            return why.get(code, f"its courier ended with status {code}"), True
        return "", True

    def _signal(self, record: ProbeRecord, what: str) -> None:
        """A file in the channel that no probe writes otherwise: the grader sees it and flags the notebook."""
        try:
            self.close(self.open_fd(os.path.join(self.channel, f"{record.cell}.{record.call}.{what}"), _FLAGS, 0o600))
        except OSError:
            pass


_FLAGS = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)


def _courier_python(own: Path) -> str:
    """The couriers' interpreter: the grader's execute-only copy of Python where the sandbox has one and it runs here
    (grading/probe_view.py: a process started from it is not dumpable, so this kernel's uid cannot write its memory
    or reach its descriptors), else this Python. Tried once, at install, before any learner code runs."""
    if not os.access(own, os.X_OK):
        return sys.executable
    try:
        pid = os.posix_spawn(str(own), (str(own), "-I", "-S", "-c", "import _socket"), {})
        works = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    except OSError:
        works = False
    return str(own) if works else sys.executable


def _payload(save: Callable, record: ProbeRecord, failed: str) -> bytes:
    """The probe's record as torch.save writes it; data that cannot be saved, or that is larger than a record may be
    (channel.RECORD_MAX), becomes a message that says so."""
    buf = io.BytesIO()
    try:
        save(record.to_payload(), buf)
    except Exception as exc:  # noqa: BLE001
        why = f"could not be recorded ({type(exc).__name__}): return numbers, dicts or tensors."
    else:
        if buf.getbuffer().nbytes <= RECORD_MAX:
            return buf.getvalue()
        why = "were too large to record."
    buf = io.BytesIO()
    save(replace(record, data={failed: f"The values your code returned {why}"}).to_payload(), buf)
    return buf.getvalue()


def install(modules: list[str], watched: list[str], channel: str) -> Callable[..., None]:
    """Import the checks' modules and return the probe runner for this kernel.

    ``probe(grade_id, k, check, expr, params)`` runs the k-th check call of the cell and sends its data (torch.save)
    to the grader's socket in the channel folder, through a courier process of its own (``_Records``): not on the
    output, so that no output cap, display hook or printing thread touches it, and out of the kernel's reach as soon
    as it is sent. Whatever the learner's code raises is data; it raises only ChannelError, when its record could not
    be sent (the cell then ends in an error, and scores 0).
    """
    import torch
    from IPython import get_ipython

    for name in modules:
        importlib.import_module(name)
    from autograder.probes import launches
    from autograder.registry import CHECKS, FAILED

    launches.use_grader(os.path.join(channel, SOCKET_FOLDER))  # the stand-in kernels' launches: the grader's log

    ip = get_ipython()
    checks = dict(CHECKS)
    watch = _Watch(ip, modules, watched, checks)
    from torch.utils._python_dispatch import _disable_current_modes as disable_current_modes

    save = torch.save
    # what runs after the learner's code of a call, taken now: a replacement made meanwhile (of a module's function or
    # of a class's method: restore_own puts back only the first, and only before the call) is not what sends a record
    records = _Records(channel)
    send, record_of, payload_of = records.write, ProbeRecord, _payload

    def probe(cell: str, k: int, check: str, expr: str, params: dict) -> None:
        if probe.replaying:  # the kernel was restarted after a crash: earlier cells run again, unprobed
            return
        modes = _active_torch_modes(torch)
        replaced = watch.restore_own()  # a probe or helper swapped through sys.modules runs as installed
        try:
            try:
                obj = eval(expr, ip.user_ns)
            except NameError:
                data = {
                    FAILED: f"`{expr}` is not defined when this test runs. Run the cell that defines it "
                    "(and keep its name as the exercise asks)."
                }
            else:
                with _no_modes(torch, disable_current_modes):
                    data = checks[check].collect(obj, **params)
        except KeyboardInterrupt:
            data = {
                FAILED: "Your code was stopped: it ran longer than this test allows. Look for an "
                "infinite loop, or work that grows much faster than the input."
            }
        except BaseException as exc:  # noqa: BLE001 -- whatever the learner's code raised is data
            data = {FAILED: f"Your code raised {type(exc).__name__} while it was being tested: {exc}"}
        patched = list(dict.fromkeys(replaced + watch.changed() + modes))
        record = record_of(cell, k, data, patched)
        send(record, payload_of(save, record, FAILED))

    probe.replaying = False
    return probe
