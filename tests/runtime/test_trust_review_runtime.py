"""Adversarial review, runtime side: results whose storage breaks the Tensor contract.

Marked ``xfail(strict=True)`` where the fix belongs to ``runtime/core/tensor.py`` (another work
package): the test turns into a pass, and the marker must go, when it is fixed.
"""

from __future__ import annotations

import numpy as np

import runtime as rt
from runtime.core import lax as F


def test_a_0d_binary_result_is_backed_by_an_ndarray() -> None:
    a = rt.asarray(3.0)
    b = rt.asarray(2.0)
    for _ in range(3):  # the first call and the cached paths
        for out in (a * b, F.mul(a, b), a + 1.0):
            assert isinstance(out.numpy(), np.ndarray)
            np.testing.assert_array_equal(np.asarray(out), np.asarray(out.numpy()))
