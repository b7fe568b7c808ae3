"""Every autodiff test runs with unsaved values poisoned.

A recording holds only the values its op's VJP rule declares it reads
(``autodiff.rules.VJP_SAVES``). Under ``poison_unsaved`` every other inexact
value reaches the rule as NaN, even when it happens to be still available, so a
rule that reads an undeclared value makes the test that exercises it fail.
"""

from collections.abc import Iterator

import pytest

from autodiff.engine import poison_unsaved


@pytest.fixture(autouse=True)
def _poison_unsaved_values() -> Iterator[None]:
    with poison_unsaved():
        yield
