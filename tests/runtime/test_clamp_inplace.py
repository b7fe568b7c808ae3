"""``Tensor.clamp_`` (issue 23, the PyTorch habits), held to ``torch.clamp_``'s documented semantics.

Oracle: ``min(max(x, min), max)`` in NumPy (NaN propagating, ``max`` winning where ``min > max``,
as PyTorch documents), the in-place category rule of PyTorch (a float bound of an int tensor is
refused), and ``torch.Tensor.clamp_`` itself where torch is installed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

ROWS: list[tuple[str, Any, Any]] = [
    ("float32", -1.0, 2.0), ("float32", None, 0.5), ("float32", 0.0, None), ("float64", 2.0, 1.0),
    ("int32", 0, 3), ("int64", -2, None), ("float32", np.float64(0.25), 1), ("float16", -0.5, 0.5),
]  # fmt: skip


def _data(dtype: str) -> np.ndarray:
    if dtype.startswith("int"):
        return np.array([-5, -1, 0, 2, 7], dtype)
    return np.array([-3.0, -0.75, 0.0, 0.6, np.nan, 4.0], dtype)


def _reference(x: np.ndarray, low: Any, high: Any) -> np.ndarray:
    out = x if low is None else np.where(np.isnan(x), x, np.maximum(x, np.asarray(low, x.dtype)))
    return out if high is None else np.where(np.isnan(out), out, np.minimum(out, np.asarray(high, x.dtype)))


@pytest.mark.parametrize(("dtype", "low", "high"), ROWS)
@pytest.mark.parametrize("policy", ["torch", "jax", "numpy"])
def test_clamp_in_place_is_torchs(dtype: str, low: Any, high: Any, policy: str) -> None:
    data = _data(dtype)
    with rt.use_policy(policy):
        x = rt.asarray(data.copy())
        before = x.numpy()
        out = x.clamp_(low, high)
    assert out is x and x.dtype.name == dtype
    np.testing.assert_array_equal(x.numpy(), _reference(data, low, high))
    assert np.shares_memory(before, x.numpy())  # the same storage, written


def test_clamp_in_place_refuses_what_torch_refuses() -> None:
    with rt.use_policy("torch"):
        x = rt.asarray(np.array([1, 2, 3], np.int32))
        with pytest.raises(rt.OpTypeError, match="clamp_ result of dtype float32 cannot be stored"):
            x.clamp_(0.5, 2)
        np.testing.assert_array_equal(x.numpy(), [1, 2, 3])  # nothing written
        with pytest.raises(rt.OpTypeError, match="clamp_: at least one of min and max"):
            x.clamp_()


def test_clamp_in_place_matches_torch_where_installed() -> None:
    torch = pytest.importorskip("torch")
    for dtype, low, high in ROWS:
        data = _data(dtype)
        with rt.use_policy("torch"):
            x = rt.asarray(data.copy())
            x.clamp_(low, high)
        t = torch.tensor(data.copy())
        t.clamp_(low, high)
        np.testing.assert_array_equal(x.numpy(), t.numpy())
