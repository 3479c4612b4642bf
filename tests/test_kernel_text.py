"""One text for every judge (issue 47, routes 4 and 5), through the real record-taking: a kernel is taken from the
object @triton.jit made in the learner's process (`coursetools.kernel_text.take`), screened, and rebuilt from its
text in a namespace of its own. A text that Triton's interpreter and compiler would read as two kernels is refused
by the screen and by the rebuild; a module that poses as one of the kernel modules is refused by identity, whatever
its name, and using it in the rebuilt kernel says what it is."""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: the kernels run in the interpreter

import importlib.util  # noqa: E402
import sys  # noqa: E402
import types  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

from coursetools.kernel_screen import screen  # noqa: E402
from coursetools.kernel_text import real_modules, rebuild, take  # noqa: E402

HEADER = "import math\nimport torch\nimport triton\nimport triton.language as tl\n\n\n"
DOUBLE = '''@triton.jit
def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    tl.store(y_ptr + offsets, x * 2, mask=offsets < n)
'''


def kernels_from(tmp_path, source: str, name: str = "learner_kernels", **globals_):
    """The module a learner's file of kernels makes (Triton reads a kernel's text from its file), with `globals_`
    bound in it after import, as a later cell would."""
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for key, value in globals_.items():
        setattr(module, key, value)
    return module


def test_an_honest_kernel_is_taken_screened_and_rebuilt(tmp_path):
    kernel = kernels_from(tmp_path, DOUBLE).double
    record = take(kernel)
    assert screen(record) is None
    x = torch.arange(10, dtype=torch.float32)
    y = torch.zeros_like(x)
    rebuild(record, interpreted=True)[(1,)](x, y, 10, BLOCK=16)
    assert torch.equal(y, 2 * x)


SECOND_DEF = {
    # the route: a `def` in a string literal; the interpreter reads from its last `def` line
    "a def in a string": DOUBLE.replace(
        "    offsets", '    s = """\ndef double(x_ptr, y_ptr, n, BLOCK):\n    pass\n"""\n    offsets', 1
    ),
    "a def in the kernel's docstring": DOUBLE.replace(
        "    offsets", '    """Doubles.\ndef double(x_ptr, y_ptr, n, BLOCK):\n    pass\n    """\n    offsets', 1
    ),
    "a def in a static_print message": DOUBLE.replace(
        "    offsets", '    tl.static_print("""\ndef double(x_ptr, y_ptr, n, BLOCK):\n""")\n    offsets', 1
    ),
    "a def nested in the kernel": DOUBLE.replace("    offsets", "    def inner(v):\n        return v\n    offsets", 1),
    "a def in a string of a helper": DOUBLE.replace("x * 2", "twice(x)")
    + '''

@triton.jit
def twice(v):
    """
def twice(v):
    return v * 3
"""
    return v * 2
''',
}


@pytest.mark.parametrize("source", list(SECOND_DEF.values()), ids=list(SECOND_DEF))
def test_a_text_the_interpreter_and_the_compiler_would_read_apart_is_refused(tmp_path, source):
    record = take(kernels_from(tmp_path, source).double)
    assert "second line that starts with `def`" in (screen(record) or ""), screen(record)
    with pytest.raises(ValueError, match="second line that starts with `def`"):
        rebuild(record, interpreted=True)


def _posing_module(name: str, **members) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(members)
    return module


POSING = {
    # (the kernel's text, the name it uses, what is bound under that name)
    "a module named triton.language with PyTorch's sigmoid": (
        DOUBLE.replace("x * 2", "fake.sigmoid(x)"),
        "fake",
        _posing_module("triton.language", sigmoid=torch.sigmoid),
    ),
    "a module named math whose exp is PyTorch's": (
        DOUBLE.replace("x * 2", "x * mymath.exp(1.0)"),
        "mymath",
        _posing_module("math", exp=torch.exp),
    ),
    "the name tl rebound to another module": (DOUBLE, "tl", _posing_module("triton.language", load=torch.load)),
    "an object that calls itself triton.language": (
        DOUBLE.replace("x * 2", "fake.sigmoid(x)"),
        "fake",
        types.SimpleNamespace(__name__="triton.language", sigmoid=torch.sigmoid),
    ),
}


@pytest.mark.parametrize(("source", "name", "value"), list(POSING.values()), ids=list(POSING))
def test_a_module_posing_as_a_kernel_module_is_refused_by_identity(tmp_path, source, name, value):
    record = take(kernels_from(tmp_path, source, **{name: value}).double)
    assert record["globals"][name]["kind"] == "object", record["globals"]
    refused = screen(record) or ""  # the compile share: refused, with a sentence that names what it met
    assert name in refused and ("is not it" in refused or "cannot" in refused or "not one" in refused), refused
    rebuilt = rebuild(record, interpreted=True)  # the posing module never enters the rebuilt namespace
    x = torch.arange(10, dtype=torch.float32)
    with pytest.raises(Exception, match="cannot use|must be visible"):  # the interpreter refuses to run it
        rebuilt[(1,)](x, torch.zeros_like(x), 10, BLOCK=16)


def test_triton_language_swapped_in_sys_modules_after_the_probes_imported_is_not_taken_for_it(tmp_path, monkeypatch):
    """The probes take the real modules once, before any learner code runs; a module put in sys.modules' place
    later, and imported by the learner's file under the usual name, is a posing module."""
    real_modules()
    fake = _posing_module("triton.language", sigmoid=torch.sigmoid, constexpr=object)
    monkeypatch.setitem(sys.modules, "triton.language", fake)
    source = DOUBLE.replace("x * 2", "tl.sigmoid(x)")
    module = kernels_from(tmp_path, source, tl=sys.modules["triton.language"])
    monkeypatch.undo()  # Triton's own machinery back before the record is taken and rebuilt
    record = take(module.double)
    assert record["globals"]["tl"]["kind"] == "object", record["globals"]
    assert "tl" in (screen(record) or ""), screen(record)
