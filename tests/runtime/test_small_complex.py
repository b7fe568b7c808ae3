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
from runtime import GatherDimensionNumbers, ScatterDimensionNumbers, Tensor
from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.dtypes import DType
from runtime.core.executor import apply
from runtime.core.ops import OPS
from runtime.core.shapes import OpTypeError
from tests.runtime.bit_helpers import assert_same_bits

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


def assert_rounded_from(
    wide: list[np.ndarray], got: list[np.ndarray], small: DType, name: str, rounded: bool = True
) -> None:
    """``got`` (computed in ``small``) is ``wide`` (computed in complex64) rounded to ``small``: bit for bit."""
    assert len(got) == len(wide)
    for g, w in zip(got, wide, strict=True):
        assert_same_bits(g, _rounded(w, small) if rounded else w, f"{name}[{small.name}]")


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
    assert_rounded_from(wide, got, small, name)


# -- calls through the public functions: indexing, sorting, linear algebra, convolution, convert ----------


def _matrices() -> tuple[np.ndarray, np.ndarray]:
    """A well-conditioned 3x3 complex matrix and a Hermitian positive definite one (the grid's
    corners would make every factor NaN)."""
    rng = np.random.default_rng(3)
    m = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)) + 3 * np.eye(3)
    return m.astype(np.complex64), (m @ m.conj().T).astype(np.complex64)


_POINTS = ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
_GATHER = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
_ROWS = np.array([[2], [0], [5], [-1]], np.int32)

FUNCTION_CALLS: dict[str, Callable[[Tensor, Tensor, Tensor, Tensor], Any]] = {
    "sort": lambda x, y, m, h: F.sort(x),
    "sort-two-keys": lambda x, y, m, h: F.sort([x, y], num_keys=2),
    "top_k": lambda x, y, m, h: F.top_k(x, 3),
    "select_n": lambda x, y, m, h: F.select_n(rt.asarray(np.arange(64) % 2 == 0), x, y),
    "dynamic_slice": lambda x, y, m, h: F.dynamic_slice(x, [rt.asarray(np.int32(60))], (8,)),
    "dynamic_update_slice": lambda x, y, m, h: F.dynamic_update_slice(x, y[:8], [rt.asarray(np.int32(3))]),
    "gather": lambda x, y, m, h: F.gather(x.reshape(16, 4), rt.asarray(_ROWS), _GATHER, (1, 4), mode="fill"),
    "scatter_add": lambda x, y, m, h: F.scatter_add(
        x.reshape(16, 4), rt.asarray(_ROWS), y[:16].reshape(4, 4), _POINTS, mode="clip"
    ),
    "cumlogsumexp": lambda x, y, m, h: F.cumlogsumexp(x.reshape(8, 8), axis=1),
    "conv": lambda x, y, m, h: F.conv(x.reshape(1, 4, 4, 4), y[:36].reshape(3, 4, 3, 1), (1, 1), "VALID"),
    "triangular_solve": lambda x, y, m, h: F.triangular_solve(m, h[:, :2], left_side=True, lower=True),
    **{f"convert-{d.short}": (lambda x, y, m, h, d=d: F.convert(x, d)) for d in dt.ALL_DTYPES},
}  # fmt: skip


#: factorisations take float32/float64/complex64/complex128 only, as in jax.lax.linalg: the
#: small complex types are refused by name, never computed
FACTORISATIONS: dict[str, Callable[[Tensor], Any]] = {
    "cholesky": F.cholesky, "eigh": F.eigh, "lu": F.lu, "qr": F.qr, "svd": F.svd, "eig": F.eig,
}  # fmt: skip


@pytest.mark.parametrize("small", dt.SMALL_COMPLEX, ids=lambda d: d.short)
@pytest.mark.parametrize("name", sorted(FACTORISATIONS))
def test_factorisations_refuse_small_complex_by_name(name: str, small: DType) -> None:
    m, _ = _matrices()
    with pytest.raises(OpTypeError, match=rf"{name}: x dtype {small.short} not accepted"):
        FACTORISATIONS[name](rt.asarray(m).astype(small))


def _outputs(out: Any) -> list[np.ndarray]:
    return [np.asarray(t.numpy()) for t in (out if isinstance(out, (tuple, list)) else (out,))]


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("small", dt.SMALL_COMPLEX, ids=lambda d: d.short)
@pytest.mark.parametrize("name", sorted(FUNCTION_CALLS))
def test_small_complex_functions_compute_in_complex64(name: str, small: DType) -> None:
    call = FUNCTION_CALLS[name]
    operands = [rt.asarray(a).astype(small) for a in (_GRID, _GRID[::-1].copy(), *_matrices())]
    with np.errstate(all="ignore"):
        try:
            wide = _outputs(call(*(o.astype(rt.complex64) for o in operands)))
        except Exception as error:  # complex64 is refused: so is the small dtype
            with pytest.raises(type(error)):
                call(*operands)
            return
        got = _outputs(call(*operands))
    # a convert's result dtype is its target: nothing to round
    assert_rounded_from(wide, got, small, name, rounded=not name.startswith("convert-"))
