"""complex32 and bcomplex32 compute in complex64, whatever ml_dtypes release is installed.

ml_dtypes 0.7 gave its complex types NumPy's kind "c" (0.6: "V"), and NumPy's
``.real`` of them returns the complex array itself. A kernel that branched on the
kind then ran complex32 through a path written for complex64 and gave wrong
numbers without an error (max/min with NaN parts did). The oracle here is the
definition: every kernel on a small complex operand equals the same kernel on
the operand widened to complex64, rounded back to the small dtype (or to its
part dtype for real results), and raises where that one raises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime import dtypes as dt
from runtime.dtypes import DType
from runtime.ops import OPS
from runtime.tensor import apply

_PARTS = [0.0, -0.0, 1.0, -2.5, 0.3, np.inf, -np.inf, np.nan]
_GRID = np.array([complex(a, b) for a in _PARTS for b in _PARTS], np.complex64)

#: how each op is called: op -> (operands from the grid x and its reverse y, params)
Call = Callable[[np.ndarray, np.ndarray], tuple[tuple[np.ndarray, ...], dict[str, Any]]]


def _m(v: np.ndarray) -> np.ndarray:
    return v[:16].reshape(4, 4)


_WINDOW = {
    "window_dimensions": (2, 2),
    "window_strides": (1, 1),
    "padding": ((0, 0), (0, 0)),
    "base_dilation": (1, 1),
    "window_dilation": (1, 1),
}

_REDUCTIONS = ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min")
_SCANS = ("cumsum", "cumprod", "cummax", "cummin")
_WINDOWED = ("reduce_window_sum", "reduce_window_max", "reduce_window_min")

CALLS: dict[str, Call] = {
    **{op.name: (lambda x, y: ((x,), {})) for op in OPS.values() if op.family == "unary" and not op.params},
    **{
        op.name: (lambda x, y: ((x, y), {}))
        for op in OPS.values()
        if op.family in ("binary", "compare", "logical") and not op.params
    },
    "round": lambda x, y: ((x,), {"rounding_method": 0}),
    "select": lambda x, y: ((np.real(x.astype(np.complex64)) > 0, x, y), {}),
    "clamp": lambda x, y: ((y, x, y), {}),
    **{name: (lambda x, y: ((_m(x),), {"axes": (1,)})) for name in _REDUCTIONS},
    **{name: (lambda x, y: ((_m(x),), {"axis": 1, "reverse": False})) for name in _SCANS},
    **{name: (lambda x, y: ((_m(x),), dict(_WINDOW))) for name in _WINDOWED},
    "dot_general": lambda x, y: ((_m(x), _m(y)), {"dimension_numbers": (((1,), (0,)), ((), ()))}),
    "pad": lambda x, y: ((x,), {"padding_config": ((1, 2, 1),), "padding_value": complex(y[0])}),
    "reverse": lambda x, y: ((x,), {"dimensions": (0,)}),
    "transpose": lambda x, y: ((_m(x),), {"permutation": (1, 0)}),
    "concatenate": lambda x, y: ((x, y), {"dimension": 0}),
}  # fmt: skip


def _widened(a: np.ndarray) -> np.ndarray:
    return a.astype(np.complex64) if a.dtype in SMALL_STORAGE else a


SMALL_STORAGE = {d.storage for d in dt.SMALL_COMPLEX}


def _rounded(want: np.ndarray, small: DType) -> np.ndarray:
    """complex64 -> the small dtype; float32 -> its part dtype; anything else unchanged."""
    if want.dtype == np.complex64:
        return want.astype(small.storage)
    if want.dtype == np.float32:
        return want.astype(dt.COMPLEX_PART[small].storage)
    return want


def _bits(a: np.ndarray) -> np.ndarray:
    """Bit patterns, each complex part on its own."""
    a = np.ascontiguousarray(a)
    kind = dt.from_numpy(a.dtype).kind
    if kind == "bool":
        return a
    return a.view(np.dtype(f"u{a.dtype.itemsize // 2 if kind == 'complex' else a.dtype.itemsize}"))


def _nan(a: np.ndarray) -> np.ndarray:
    """Where ``a`` is NaN, laid out as ``_bits(a)`` (NaN payloads are each side's own)."""
    a = np.ascontiguousarray(a)
    kind = dt.from_numpy(a.dtype).kind
    if kind not in ("float", "complex"):
        return np.zeros(_bits(a).shape, bool)
    wide = a.astype(np.complex128)
    if kind == "float":
        return np.isnan(wide.real)
    return np.stack([np.isnan(wide.real), np.isnan(wide.imag)], axis=-1).reshape(_bits(a).shape)


def _run(name: str, operands: tuple[np.ndarray, ...], params: dict[str, Any]) -> list[np.ndarray]:
    out = apply(OPS[name], [rt.asarray(o) for o in operands], params)
    return [np.asarray(t.numpy()) for t in (out if isinstance(out, tuple) else (out,))]


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("small", dt.SMALL_COMPLEX, ids=lambda d: d.short)
@pytest.mark.parametrize("name", sorted(CALLS))
def test_small_complex_computes_in_complex64(name: str, small: DType) -> None:
    operands, params = CALLS[name](_GRID.astype(small.storage), _GRID[::-1].astype(small.storage))
    with np.errstate(all="ignore"):
        try:
            wide = _run(name, tuple(_widened(o) for o in operands), params)
        except Exception as error:  # complex64 is refused: so is the small dtype
            with pytest.raises(type(error)):
                _run(name, operands, params)
            return
        got = _run(name, operands, params)
    assert len(got) == len(wide)
    for g, w in zip(got, wide, strict=True):
        w = _rounded(w, small)
        assert g.dtype == w.dtype and g.shape == w.shape, (name, g.dtype, g.shape, w.dtype, w.shape)
        same = (_bits(g) == _bits(w)) | (_nan(g) & _nan(w))
        assert same.all(), f"{name}[{small.name}] differs at {np.argwhere(~same)[:4].tolist()}: got {g}, want {w}"
