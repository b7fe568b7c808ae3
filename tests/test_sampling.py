"""The default run's sampling of expensive tables (``SAMPLED`` in tests/conftest.py) keeps
every op family and dtype family a table has, and every k-th row."""

from __future__ import annotations

import itertools
from pathlib import Path

from runtime.core import dtypes, ops
from tests.conftest import SAMPLED, _families, _sampled_rows


def test_a_sampled_table_keeps_every_op_family_and_dtype_family() -> None:
    families = _families()
    names = sorted(ops.OPS)
    rows = [f"{op}-{d.short}" for op, d in itertools.product(names, dtypes.ALL_DTYPES)]
    kept = _sampled_rows(rows, 1000, families)
    assert 0 in kept and len(kept) < len(rows) // 10  # a sample, not the table
    want = {families[op] for op in names} | {families[d.short] for d in dtypes.ALL_DTYPES}
    got = {families[token] for i in kept for token in rows[i].split("-")}
    assert got == want


def test_every_kth_row_is_kept_and_rows_naming_no_family_are_sampled_plainly() -> None:
    rows = [f"case{i}" for i in range(20)]
    assert _sampled_rows(rows, 4, _families()) == {0, 4, 8, 12, 16}
    assert _sampled_rows(rows, 1, _families()) == set(range(20))


def test_sampled_tests_are_named_by_file_and_function() -> None:
    for key, k in SAMPLED.items():
        path, sep, function = key.partition("::")
        assert sep and path.startswith("tests/") and path.endswith(".py") and function.startswith("test_"), key
        assert k >= 2, key
        source = Path(__file__).parent.parent / path
        assert source.is_file() and f"def {function}(" in source.read_text(), f"{key}: no such test"
