"""Every Python code block in README.md and docs/*.md runs, so documentation cannot rot.

Blocks of one file share a namespace and run in order, like a tutorial.
docs/testing.md is executed by tests/autodiff/test_testing_docs.py (its blocks
are pytest files).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKIP = {"testing.md"}


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


@pytest.mark.parametrize("path", [p for p in DOCS if p.name not in SKIP], ids=lambda p: p.name)
def test_code_blocks_run(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = python_blocks(path)
    namespace: dict[str, object] = {"__name__": f"docs_{path.stem}"}
    for i, block in enumerate(blocks):
        try:
            exec(compile(block, f"{path.name}[block {i}]", "exec"), namespace)
        except Exception as err:
            raise AssertionError(f"{path.name}, code block {i} failed: {err!r}\n{block}") from err


def test_docs_have_code() -> None:
    for name in ("plan.md", "graph.md", "autodiff.md", "promotion.md", "architecture.md"):
        assert python_blocks(ROOT / "docs" / name), name
