"""The grader's setup inside the sandboxed kernel: one call before the notebook's first cell.

    from autograder.probes.kernel import install
    __revad_probe__ = install(modules=[...], watched=[...], channel="/path/to/scratch/probe")

``install`` imports the checks' modules, remembers what the learner's code might replace (watched
functions, the checks, IPython's hooks, tracing), and returns the probe runner. In the run the
grader assembles, each check call of a graded test cell is replaced by
``__revad_probe__(grade_id, k, check, learner_expression, params)``: it evaluates the learner's
expression, runs the check's probe on it (never the judge: that is absent here) and writes the data,
plus what was found replaced, to a file in the channel folder.

Nothing here decides a score: whatever the learner's code does to this module can at most spoil
the data, and the judges outside accept only complete answers to the cases they asked for.
"""

from __future__ import annotations

import importlib
import io
import os
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from .channel import ProbeRecord

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


_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


class _Records:
    """The record files of the running test cell, created when it begins (before any learner code of the cell runs)
    and each written and closed once by its probe. The grader watches the folder from outside
    (``grading/records.py``): a record with any other history is not judged, so each anomaly the probe notices here
    is made visible there, as a file no probe writes."""

    def __init__(self, channel: str):
        self.channel = channel
        self.open: dict[tuple[str, int], tuple[int, int]] = {}  # (cell, call) -> (fd, inode)

    def begin(self, cell: str, count: int) -> None:
        for fd, _ in self.open.values():
            self._close(fd)
        self.open = {}
        for k in range(count):
            slot = self._create(cell, k)
            if slot is not None:
                self.open[(cell, k)] = slot

    def _create(self, cell: str, k: int) -> tuple[int, int] | None:
        try:
            fd = os.open(os.path.join(self.channel, ProbeRecord.file_name(cell, k)), _OPEN_FLAGS, 0o600)
        except OSError:
            return None  # it was there already: the grader saw who made it
        return fd, os.fstat(fd).st_ino

    def write(self, record: ProbeRecord, payload: bytes) -> None:
        slot = self.open.pop((record.cell, record.call), None) or self._create(record.cell, record.call)
        if slot is None or not self._intact(slot):
            if slot is not None:
                self._close(slot[0])
            self._signal(record, "tampered")
            return
        fd = slot[0]
        try:
            view = memoryview(payload)
            while view:
                view = view[os.pwrite(fd, view, len(payload) - len(view)) :]
        finally:
            os.close(fd)

    @staticmethod
    def _close(fd: int) -> None:
        try:
            os.close(fd)
        except OSError:
            pass

    @staticmethod
    def _intact(slot: tuple[int, int]) -> bool:
        """The probe's file is still the record it created, and still empty."""
        try:
            st = os.fstat(slot[0])
        except OSError:
            return False
        return st.st_ino == slot[1] and st.st_size == 0

    def _signal(self, record: ProbeRecord, what: str) -> None:
        try:
            os.close(os.open(os.path.join(self.channel, f"{record.cell}.{record.call}.{what}"), _OPEN_FLAGS, 0o600))
        except OSError:
            pass


def _payload(save: Callable, record: ProbeRecord, failed: str) -> bytes:
    """The probe's record as torch.save writes it; data that cannot be saved becomes a message that says so."""
    buf = io.BytesIO()
    try:
        save(record.to_payload(), buf)
    except Exception as exc:  # noqa: BLE001
        buf = io.BytesIO()
        failure = {
            failed: "The values your code returned could not be "
            f"recorded ({type(exc).__name__}): return numbers, dicts or tensors."
        }
        save(replace(record, data=failure).to_payload(), buf)
    return buf.getvalue()


def install(modules: list[str], watched: list[str], channel: str) -> Callable[..., None]:
    """Import the checks' modules and return the probe runner for this kernel.

    ``probe.begin(grade_id, n)`` opens a test cell: its n record files created. ``probe(grade_id, k, check, expr,
    params)`` runs the k-th check call of the cell and writes its data to ``<channel>/<grade_id>.<k>.pt``
    (torch.save): a file, so that no output cap, display hook or printing thread touches it, taken out of the
    kernel's reach by the grader as soon as the cell ends. It never raises: a failure is data too.
    """
    import torch
    from IPython import get_ipython

    for name in modules:
        importlib.import_module(name)
    from autograder.registry import CHECKS, FAILED

    ip = get_ipython()
    checks = dict(CHECKS)
    watch = _Watch(ip, modules, watched, checks)
    from torch.utils._python_dispatch import _disable_current_modes as disable_current_modes

    save = torch.save

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
        record = ProbeRecord(cell, k, data, patched)
        records.write(record, _payload(save, record, FAILED))

    def begin(cell: str, count: int) -> None:
        """The first line of each graded test cell: its records created before any of its learner code runs."""
        if not probe.replaying:
            records.begin(cell, count)

    records = _Records(channel)
    probe.replaying = False
    probe.begin = begin
    return probe
