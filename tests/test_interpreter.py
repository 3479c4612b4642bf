"""Triton's interpreter with cheap device calls (coursetools.interpreter): the same values, the same errors, the
language restored as Triton restores it; installed only over the Triton it was written for."""

from __future__ import annotations

import json
import subprocess
import sys
import types

from coursetools import interpreter

# Run in a fresh process: every kernel stock first, then again with the cheap device calls. Triton reads a kernel's
# source from its file, so this is a file.
KERNELS = '''
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton
import triton.language as tl
from triton.runtime import interpreter as stock
from coursetools.interpreter import faster_device_calls

@triton.jit
def twice(v):
    return v + v

@triton.jit
def softplus_twice(v):  # a helper calling a helper and a @triton.jit function of Triton's
    return twice(tl.log(1 + tl.exp(v))) + tl.sigmoid(v) * 0

@triton.jit
def larger(a, b):
    return tl.maximum(a, b)

from bare_helper import no_language_visible

@triton.jit
def rows(x_ptr, o_ptr, N: tl.constexpr, HELPER_WITHOUT_LANGUAGE: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * N + tl.arange(0, N))
    m = tl.max(x, axis=0)
    s = tl.sum(tl.exp(x - m), axis=0) + tl.sum(softplus_twice(x), axis=0)
    r = tl.reduce(x, 0, larger)
    c = tl.cumsum(x, axis=0)
    if HELPER_WITHOUT_LANGUAGE:
        s += no_language_visible(x)
    tl.store(o_ptr + row, m + tl.log(s) + r + tl.sum(c, axis=0) + tl.cdiv(N, 3))

def run():
    x = torch.linspace(-3, 3, 24 * 32, dtype=torch.float64).reshape(24, 32)
    o = torch.zeros(24, dtype=torch.float64)
    rows[(24,)](x, o, N=32, HELPER_WITHOUT_LANGUAGE=False)
    try:
        rows[(24,)](x, o * 0, N=32, HELPER_WITHOUT_LANGUAGE=True)
        refused = None
    except Exception as error:
        refused = f"{type(error).__name__}: {error}"
    try:
        tl.sum(x)
        outside = None
    except Exception as error:
        outside = type(error).__name__
    return {"values": o.tolist(), "refused": refused, "outside": outside, "tl.sum": repr(tl.sum), "load": repr(tl.load)}

walks = []
patch_builtin = stock._patch_builtin
stock._patch_builtin = lambda *a: walks.append(1) or patch_builtin(*a)
before = run(); stock_walks = len(walks); del walks[:]
installed = faster_device_calls()
after = run()
print(json.dumps({"stock": before, "faster": after, "installed": installed, "walks": [stock_walks, len(walks)]}))
'''


BARE_HELPER = """
import triton


@triton.jit
def no_language_visible(v):  # its globals name neither triton.language nor its core: Triton refuses it
    return triton.language.sum(v, axis=0)
"""


def test_kernels_compute_and_fail_as_in_triton_with_far_fewer_walks_of_the_language(tmp_path):
    script = tmp_path / "kernels.py"
    script.write_text(KERNELS)
    (tmp_path / "bare_helper.py").write_text(BARE_HELPER)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["installed"] is True, "the pinned Triton is the one the replacement was written for"
    assert got["faster"] == got["stock"], (got["faster"], got["stock"])  # values bit for bit, errors, the language
    assert "triton.language must be visible" in got["stock"]["refused"]
    assert got["stock"]["outside"] is not None, "outside a kernel tl.sum is refused, as in Triton"
    stock_walks, faster_walks = got["walks"]
    assert faster_walks * 10 < stock_walks, got["walks"]  # 24 programs, several device calls in each


def test_another_triton_is_left_as_it_is():
    def __call__(self, *args, **kwargs):  # a device call written otherwise
        return None

    other = types.SimpleNamespace(
        InterpretedFunction=type("InterpretedFunction", (), {"__call__": __call__}),
        GridExecutor=object,
        InterpreterError=Exception,
        _patch_lang=lambda fn: None,
    )
    assert interpreter.written_for(other) is False
    assert interpreter.written_for(types.SimpleNamespace()) is False
    assert interpreter.faster_device_calls() is True, "the pinned Triton's is the one it was written for"
