"""The catalogue of kernels only the GPU compiler refuses (tests/compile_mistakes/, one file per learner answer: the
kernel, the idea it costs, the words its message and its hint must use, the fix words the hint must not give).
Each costs the "compiles for a GPU" part with a message that names its construct and line and a hint that names
its idea (issue 48: each got the generic "keep to the Triton language", or a wrong one)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from autograder.judges import kernel_compile
from autograder.judges.verdict import Part
from coursetools.gpu_compile import launch_signature

CATALOGUE = sorted((Path(__file__).parent / "compile_mistakes").glob("*.toml"))
HELPERS = {"python": {"kind": "object", "value": "a Python function, not a @triton.jit one"}}


def record_of(entry: dict) -> dict:
    helpers = {name: HELPERS[kind] for name, kind in entry.get("helpers", {}).items()}
    return {
        "entry": "k",
        "functions": {"k": entry["kernel"].strip() + "\n"},
        "globals": {"tl": {"kind": "module", "value": "triton.language"}, **helpers},
    }


def test_the_catalogue_is_there():
    assert len(CATALOGUE) >= 12


@pytest.mark.parametrize("path", CATALOGUE, ids=[p.stem for p in CATALOGUE])
def test_each_compile_only_mistake_costs_the_compile_part_with_its_idea(path):
    entry = tomllib.loads(path.read_text())
    assert entry["idea"] and entry["hint"]
    record = record_of(entry)
    part = kernel_compile.compile_part()
    launch = launch_signature(record, ["*fp32", "*fp32", 37], {"BLOCK_SIZE": 16})
    kernel_compile.judge_compiles(part, record, [("float32 tensors", *launch)], others=[Part("values")])
    assert part.passed is False, part.messages
    message, hints = " ".join(part.messages), " ".join(part.hints)
    for words in entry.get("reason", []):
        assert words in message, (words, message)
    for words in entry["hint"]:
        assert words in hints, (words, hints)
    for words in entry.get("not_in_hint", []):
        assert words not in hints, (words, hints)
    generic = (kernel_compile.compile_hints.DEFAULT, kernel_compile.compile_hints.SCREEN_DEFAULT)
    assert not any(words in hints for words in generic), hints
