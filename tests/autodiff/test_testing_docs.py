"""Every ```python block of docs/testing.md runs, so the documentation cannot rot.

A block runs as a module of its own. When it defines ``test_*`` functions (a
pytest-style block, like the worked example), each of them is called too, with
no arguments: such blocks must not use pytest fixtures (Hypothesis ``@given``
tests take none).
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("jax")
pytest.importorskip("hypothesis")

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", flags=re.S | re.M)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """``(line number, source)`` of every ```python block."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in BLOCK.finditer(text)]


def run_block(source: str, name: str) -> list[str]:
    """Execute ``source`` as module ``name``; call its ``test_*`` functions; return their names."""
    module = types.ModuleType(name)
    module.__file__ = str(DOC)
    code = compile(source, f"{DOC}:{name}", "exec")
    exec(code, module.__dict__)
    tests: list[tuple[str, Callable[[], object]]] = [
        (key, value) for key, value in vars(module).items() if key.startswith("test_") and callable(value)
    ]
    for _, test in tests:
        test()
    return [key for key, _ in tests]


BLOCKS = python_blocks(DOC.read_text())


def test_the_page_has_python_blocks_and_a_pytest_file() -> None:
    assert len(BLOCKS) >= 4
    assert any("def test_" in source and "check_against_jax" in source for _, source in BLOCKS)


@pytest.mark.parametrize(("line", "source"), BLOCKS, ids=[f"line{line}" for line, _ in BLOCKS])
def test_python_block_runs(line: int, source: str) -> None:
    ran = run_block(source, f"docs_testing_line{line}")
    if "def test_" in source:
        assert ran, "a pytest-style block defined no test_* function that ran"


def test_the_block_runner_reports_failures() -> None:
    with pytest.raises(AssertionError, match="boom"):
        run_block("def test_fails():\n    raise AssertionError('boom')\n", "docs_testing_selfcheck")
    assert run_block("x = 1\n", "docs_testing_plain") == []
