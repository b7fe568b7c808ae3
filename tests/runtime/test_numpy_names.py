"""One meaning per name: every function the top level ``runtime`` exports under a name NumPy also
defines, and every Tensor method with a NumPy name, held against NumPy's own call (policy
``numpy``) and jax.numpy's (policy ``jax``, x64), values and dtypes; the gradients and vmap of
the functions ``runtime.numpy.shared_names`` writes against ``jax.grad`` and ``jax.vmap``.

``ROWS`` is the table: a name whose castwise meaning differed (``rt.round`` rounding halves away
from zero, ``rt.max`` elementwise, ``rt.logical_and(3, 4) == 0``, ``reshape`` refusing ``-1``,
``cumsum`` over axis 0, ``argmax`` needing an axis ...) is a failing row. A new export whose name
NumPy defines needs a row (``test_every_numpy_name_has_a_row``), or an entry in ``OWN_MEANING``
saying why castwise's meaning is its own. PyTorch is not installed here, so the torch policy has
no oracle in this file. lax's meanings stay under ``rt.lax`` (``test_lax_keeps_lax_meanings``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autodiff
import runtime as rt
from tests import jax_oracles

jax.config.update("jax_enable_x64", True)

#: exported names NumPy also defines whose castwise meaning is castwise's own, each with why
OWN_MEANING: dict[str, str] = {
    "trace": "castwise's recorder (a Graph of a function's ops), as the brief keeps it; NumPy's "
    "diagonal sum is rt.diagonal(x).sum()",
    "dtype": "returns a castwise DType (every ml_dtypes dtype), not a numpy.dtype",
    "result_type": "the active policy's promotion (docs/promotion.md; tests/runtime/test_policies.py)",
    "promote_types": "the active policy's promotion (docs/promotion.md; tests/runtime/test_policies.py)",
    "can_cast": "the active policy's casting rule: NumPy's safe casting (np.can_cast, jnp.can_cast) under "
    "numpy and jax, PyTorch's under torch (tests/runtime/test_can_cast.py holds it against both)",
}

M = np.array([[-2.5, 0.5, 1.5], [3.0, -0.5, 2.5]])  # halves, to tell the rounding rules apart
P = np.array([[0.5, 1.5, 2.0], [3.0, 0.25, 4.0]])  # positive (log, sqrt ...)
U = np.array([[-0.5, 0.25, 0.75], [0.0, -0.9, 0.5]])  # in (-1, 1) (arcsin, arctanh ...)
G = np.array([[1.5, 2.0, 3.0], [1.25, 4.0, 2.5]])  # >= 1 (arccosh)
I32 = np.array([[3, -4, 0], [7, 2, -1]], np.int32)
I64 = np.array([[15, 25, -35], [1234, -5, 0]], np.int64)
B = np.array([[True, False, True], [False, False, True]])
C = np.array([1.5 + 2.5j, -0.5 - 1.5j, 3 - 4j])
V = np.array([2.0, -1.0, 0.5])
N = np.array([[np.nan, 1.0, 2.0], [3.0, np.nan, -1.0]])
T3 = np.arange(24.0).reshape(2, 3, 4)


@dataclass(frozen=True)
class Row:
    """``name(*args, **kwargs)``: castwise's call (arrays as Tensors) against NumPy's and
    jax.numpy's (``oracles``: the policies it runs under)."""

    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    oracles: tuple[str, ...] = ("jax", "numpy")


def row(name: str, *args: Any, label: str = "", oracles: tuple[str, ...] = ("jax", "numpy"), **kwargs: Any) -> Row:
    return Row(name, args, kwargs, label, oracles)


UNARY_REAL = ["abs", "absolute", "cbrt", "ceil", "floor", "sign", "square", "negative", "exp", "exp2", "expm1",
              "sin", "cos", "tan", "sinh", "cosh", "tanh", "arctan", "atan", "arcsinh", "asinh", "conj", "conjugate",
              "real", "imag", "isnan", "isinf", "isfinite", "reciprocal", "ravel", "atleast_1d", "atleast_2d",
              "atleast_3d", "zeros_like", "ones_like", "diagonal", "tril", "triu", "flip"]  # fmt: skip
UNARY_POSITIVE = ["log", "log10", "log1p", "log2", "sqrt"]
UNARY_UNIT = ["arcsin", "asin", "arccos", "acos", "arctanh", "atanh"]
BINARY_REAL = ["add", "subtract", "multiply", "divide", "true_divide", "power", "pow", "maximum", "minimum",
               "fmax", "fmin", "arctan2", "atan2", "nextafter", "equal", "not_equal", "less", "less_equal",
               "greater", "greater_equal", "remainder", "mod", "floor_divide"]  # fmt: skip
BINARY_INT = ["bitwise_and", "bitwise_or", "bitwise_xor", "remainder", "mod", "floor_divide", "add", "multiply"]
LOGICAL = ["logical_and", "logical_or", "logical_xor"]
REDUCTIONS = ["sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin", "any", "all", "count_nonzero"]

ROWS: list[Row] = [
    *[row(n, M) for n in UNARY_REAL],
    *[row(n, I32, label="int32") for n in ("abs", "sign", "square", "negative", "ceil", "floor", "sin", "exp")],
    *[row(n, C, label="complex") for n in ("abs", "sign", "conj", "real", "imag", "square", "exp", "sqrt")],
    *[row(n, P) for n in UNARY_POSITIVE],
    *[row(n, U) for n in UNARY_UNIT],
    row("arccosh", G), row("acosh", G),
    *[row(n, M, V) for n in BINARY_REAL],
    *[row(n, I32, np.array([2, -3, 5], np.int32), label="int32") for n in BINARY_INT],
    *[row(n, I32, np.array([2, 0, 5], np.int32), label="ints") for n in LOGICAL],
    *[row(n, 3, 4, label="python-ints") for n in LOGICAL],
    *[row(n, M, 0.0, label="floats") for n in LOGICAL],
    row("logical_not", I32), row("logical_not", 2, label="python-int"), row("logical_not", B, label="bool"),
    row("bitwise_not", I32), row("invert", I32), row("bitwise_not", B, label="bool"),
    # rounding: halves to even, decimals= as NumPy
    row("round", 2.5, label="python-half"), row("round", M), row("round", np.array([2.675, 0.125, -1.5]), 2),
    row("round", np.array([1250.0, 1350.0, -2500.0]), -2, label="negative-decimals"),
    row("round", np.array([2.675, 0.125, -1.5], np.float32), 2, label="float32"),
    row("round", I64, -1, label="int-negative-decimals", oracles=("numpy",)), row("round", I64, 2, label="int"),
    row("round", np.array([15, 25, -35, 104, -96], np.int8), -1, label="int8-negative-decimals", oracles=("numpy",)),
    row("round", np.array([150, 250, 45], np.uint8), -2, label="uint8-negative-decimals", oracles=("numpy",)),
    row("round", C, label="complex"),
    # reductions: axis=None over everything, keepdims=, initial=/where= where NumPy has them
    *[row(n, M) for n in REDUCTIONS],
    *[row(n, M, axis=1, keepdims=True, label="axis1-keepdims") for n in REDUCTIONS],
    *[row(n, M, axis=(0, -1), label="axes") for n in ("sum", "max", "min", "amax", "prod")],
    row("max", M, axis=0, initial=2.0, label="initial"), row("min", M, initial=-9.0, label="initial"),
    row("max", M, axis=1, initial=-9.0, where=B, label="where"),
    row("min", M, axis=1, initial=9.0, where=B, label="where"),
    row("max", np.zeros((0, 2)), axis=0, initial=3.0, label="empty-initial"),
    row("max", np.zeros((0, 2)), axis=0, initial=3.0, where=np.zeros((0, 2), bool), label="empty-where"),
    row("min", I32, axis=0, initial=-2, label="int-initial"),
    row("max", M, axis=1, initial=0.0, where=B[0], label="where-bcast"),
    row("max", N, axis=1, label="nan"), row("sum", I32, dtype=np.float64, label="dtype"),
    row("argmax", M), row("argmin", M), row("argmax", M, axis=0), row("argmin", M, axis=-1),
    row("argmax", M, axis=1, keepdims=True, label="keepdims"), row("argmin", M, keepdims=True, label="keepdims-none"),
    row("argmax", N, axis=1, label="nan"),
    row("cumsum", M), row("cumprod", M), row("cumsum", M, axis=1), row("cumprod", M, axis=0),
    row("cumsum", I32, axis=1, dtype=np.float64, label="dtype"), row("cumsum", B, label="bool"),
    # shapes
    row("reshape", T3, (4, -1)), row("reshape", T3, -1, label="int-hole"), row("reshape", T3, (6, 4), order="F"),
    row("reshape", M, (3, 2), "F", label="order-positional"),
    row("transpose", T3), row("transpose", T3, (1, 0, 2)), row("transpose", T3, (-1, 0, 1), label="negative"),
    row("squeeze", np.ones((1, 3, 1))), row("squeeze", np.ones((1, 3, 1)), axis=-1),
    row("expand_dims", M, 1), row("expand_dims", M, (0, -1), label="tuple"),
    row("concatenate", [M, P]), row("concatenate", [M, P], axis=1), row("concatenate", [M, V], axis=None),
    row("concatenate", [I32, M], axis=-1, label="promotes"),
    row("stack", [M, P]), row("stack", [M, P], axis=-1), row("vstack", [M, P]), row("hstack", [M, P]),
    row("split", np.arange(6.0), 3), row("split", np.arange(6.0), [2, 5]), row("split", M, [1], axis=1),
    row("split", np.arange(6.0), [-2, 9], label="clipped", oracles=("numpy",)),
    row("tile", M, (2, 1)), row("tile", V, 2), row("repeat", M, 2), row("repeat", M, 2, axis=1),
    row("broadcast_to", V, (2, 3)), row("moveaxis", T3, 0, -1), row("swapaxes", T3, 0, 2), row("roll", M, 1),
    row("take", M, np.array([0, 4])), row("take_along_axis", M, np.array([[0, 2, 1], [1, 1, 0]]), 1),
    row("diag", V), row("diag", M), row("flip", M, 0, label="axis"),
    # sorting: axis=-1 by default, None flattens (no ties: NumPy's default sort kind is not stable)
    row("sort", M), row("sort", M, axis=0), row("sort", M, axis=None), row("sort", N, label="nan"),
    row("argsort", M), row("argsort", M, axis=0), row("argsort", M, axis=None),
    row("sort", M, descending=True, label="descending", oracles=("jax",)),
    # creation
    row("full", (2, 3), 1.5), row("full", (2, 3), 7), row("full", (2, 3), V, label="array-fill"),
    row("full", (2,), 3, np.float32, label="dtype"), row("full", (2,), np.array([True, False]), label="bool-array"),
    row("zeros", (2, 3)), row("ones", (2, 3)),
    row("zeros", 3, np.int32, label="dtype"), row("full_like", M, 2), row("arange", 5), row("arange", 0.5, 3),
    row("linspace", 0.0, 1.0, 5), row("eye", 3), row("eye", 2, 3, 1), row("identity", 2),
    row("meshgrid", V, np.arange(2.0)), row("asarray", [1, 2]), row("asarray", [1.5, 2]),
    row("array", [1, 2]), row("array", M), row("array", V, np.float32, label="dtype"),
    row("array", V, ndmin=3, label="ndmin"),
    row("from_dlpack", P),
    # selection and padding (NumPy's signatures, not lax's)
    row("where", B, M, P), row("where", B, M, 0.0, label="scalar"),
    row("select", [B, ~B], [M, P]), row("select", [M > 1, M > 0], [M, -M], 9.0, label="default"),
    row("pad", M, 1), row("pad", M, ((1, 0), (0, 2))), row("pad", M, (1, 2), constant_values=7.0, label="value"),
    row("pad", M, 1, constant_values=((1.0, 2.0), (3.0, 4.0)), label="values-per-axis", oracles=("numpy",)),
    row("pad", M, ((1, 2), (2, 1)), "edge", label="edge"), row("pad", I32, 1, label="int32"),
    row("pad", I32, 1, constant_values=2.7, label="cast-value"), row("pad", B, (0, 1), label="bool"),
    row("clip", M, -1.0, 2.0), row("clip", M, None, 1.0, label="max-only"),
    row("nan_to_num", N), row("isclose", M, M + 1e-9), row("allclose", M, M + 1e-9),
    # products
    row("matmul", T3, np.ones((4, 2))), row("matmul", V, np.ones((3, 2)), label="vector"),
    row("dot", T3, np.ones((5, 4, 2)), label="n-d"), row("dot", M, V[:, None], label="matrix"),
    row("dot", V, V, label="vectors"), row("inner", M, P), row("outer", V, V), row("tensordot", T3, np.ones((4, 2)), 1),
    row("einsum", "ij,kj->ik", M, P),
    # math functions with no op of their own (runtime/numpy/math_functions.py)
    *[row(n, M, V) for n in ("logaddexp", "logaddexp2", "hypot", "copysign", "heaviside", "fmod", "float_power")],
    *[row(n, I32, np.array([2, -3, 5], np.int32), label="int32") for n in ("logaddexp", "hypot", "copysign",
                                                                            "fmod", "float_power")],
    row("logaddexp", np.array([-np.inf, 1.0, 2.0]), np.array([-np.inf, np.inf, -np.inf]), label="infinities"),
    row("logaddexp", np.array([1, 2], np.int8), np.array([3, -1], np.int8), label="int8"),
    row("hypot", np.array([np.inf, 3.0, 0.0]), np.array([np.nan, 4.0, 0.0]), label="inf-nan-zero"),
    row("copysign", np.array([1.0, 2.0, 3.0]), np.array([-0.0, 0.0, -np.nan]), label="signed-zeros"),
    row("heaviside", np.array([-1.5, 0.0, 2.0, np.nan]), 0.5, label="scalar"),
    *[row(n, M) for n in ("deg2rad", "rad2deg", "degrees", "radians", "fabs", "trunc", "rint", "signbit", "sinc",
                          "positive", "isposinf", "isneginf", "iscomplex", "isreal", "iscomplexobj", "isrealobj",
                          "angle", "around")],
    *[row(n, I32, label="int32") for n in ("deg2rad", "fabs", "trunc", "rint", "signbit", "sinc", "positive",
                                            "isposinf", "angle", "around")],
    *[row(n, np.array([1, -2, 3], np.int8), label="int8") for n in ("sinc", "deg2rad", "rint", "angle", "fabs")],
    *[row(n, C, label="complex") for n in ("iscomplex", "isreal", "iscomplexobj", "angle", "rint", "sinc")],
    row("signbit", np.array([-0.0, 0.0, -np.nan, np.inf, -1.0]), label="zeros-nan"),
    row("isposinf", np.array([np.inf, -np.inf, np.nan, 1.0]), label="infinities"),
    row("isneginf", np.array([np.inf, -np.inf, np.nan, 1.0]), label="infinities"),
    row("angle", C, deg=True, label="degrees"), row("angle", np.array([-0.0, -np.inf, 2.0]), label="signed-zero"),
    row("around", np.array([2.675, 0.125, -1.5]), 2, label="decimals"), row("sinc", np.array([0.0, 0.5, -2.0])),
    # NaN-ignoring reductions, order statistics and averages (runtime/numpy/nan_functions.py)
    *[row(n, N) for n in ("nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "nanargmax",
                          "nanargmin", "nancumsum", "nancumprod", "nanmedian", "ptp", "average", "median")],
    *[row(n, N, axis=1, label="axis1") for n in ("nansum", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd",
                                                  "nanargmax", "nanargmin", "nancumsum", "nanmedian")],
    *[row(n, M, axis=0, keepdims=True, label="axis0-keepdims") for n in ("nansum", "nanmax", "nanmean", "nanstd",
                                                                         "ptp", "median")],
    *[row(n, I32, axis=1, label="int32") for n in ("nansum", "nanmax", "nanmean", "nanvar", "nanargmax", "ptp",
                                                    "median", "average")],
    row("nanvar", N, ddof=1, label="ddof"), row("nanstd", M, axis=1, ddof=1, label="ddof"),
    row("nanmax", np.array([[np.nan, np.nan], [1.0, np.nan]]), axis=1, label="all-nan-slice", oracles=("jax",)),
    row("nanmean", np.array([[np.nan, np.nan], [1.0, np.nan]]), axis=1, label="all-nan-slice", oracles=("jax",)),
    row("nanmedian", np.array([[np.nan, np.nan], [1.0, np.nan]]), axis=1, label="all-nan-slice", oracles=("jax",)),
    row("nanargmax", np.array([[np.nan, np.nan], [1.0, np.nan]]), axis=1, label="all-nan-slice", oracles=("jax",)),
    *[row(n, M, q) for n in ("quantile", "nanquantile") for q in (0.3, np.array([0.0, 0.5, 1.0]))],
    *[row(n, N, 40.0, axis=1) for n in ("percentile", "nanpercentile")],
    row("quantile", T3, 0.25, axis=(0, 2), keepdims=True, label="axes-keepdims"),
    row("quantile", I32, np.array([0.1, 0.9]), axis=0, label="int32"), row("median", N, axis=0, label="nan"),
    row("median", T3, axis=(1, 2), label="axes"), row("percentile", T3, np.array([10.0, 90.0]), axis=-1),
    row("average", M, axis=1, weights=V, label="weights-1d"), row("average", M, weights=P, label="weights"),
    row("average", M, axis=0, weights=np.array([1.0, 3.0]), returned=True, label="returned"),
    row("average", M, returned=True, label="returned-no-weights"),
    # array helpers (runtime/numpy/arrays.py)
    row("diff", M), row("diff", T3, 2, 1, label="n2-axis1"), row("diff", B, label="bool"),
    row("diff", V, prepend=0.0, append=np.array([4.0, 5.0]), label="prepend-append"),
    row("ediff1d", M), row("ediff1d", V, to_end=9.0, to_begin=np.array([-1.0, -2.0]), label="ends"),
    row("append", M, V), row("append", M, P, axis=0, label="axis"),
    row("fliplr", M), row("flipud", M), row("rot90", M), row("rot90", T3, 3, (1, 2), label="k3-axes"),
    row("rot90", M, 2, label="k2"), row("rot90", M, -1, label="k-negative"),
    row("column_stack", [V, V]), row("column_stack", [M.T, V], label="2d-1d"), row("dstack", [M, P]),
    row("dstack", [V, V], label="1d"),
    row("array_split", np.arange(7.0), 3), row("array_split", M, [1, 5], axis=1, label="indices", oracles=("numpy",)),
    row("hsplit", M, 3), row("hsplit", np.arange(6.0), 2, label="1d"), row("vsplit", T3, 2), row("dsplit", T3, 2),
    row("broadcast_arrays", V, M[:, :1]), row("broadcast_shapes", (2, 1), (3,), label="shapes"),
    row("kron", M, P), row("kron", V, M, label="ranks"), row("kron", I32, np.eye(2, dtype=np.int32), label="int32"),
    row("vdot", M, P), row("vdot", C, C[::-1], label="complex"),
    row("tri", 3), row("tri", 2, 4, 1, label="m-k"), row("tri", 3, dtype=np.int32, label="dtype"),
    row("diagflat", M), row("diagflat", V, 1, label="k"),
    row("trapezoid", M), row("trapezoid", M, dx=0.5, axis=0, label="dx"), row("trapezoid", M, V, label="x"),
    row("ndim", T3), row("shape", T3), row("size", T3), row("size", T3, 1, label="axis"),
    # lookups, polynomials, windows, correlations and vector products (runtime/numpy/numerics.py)
    row("searchsorted", np.array([1.0, 2.0, 2.0, 3.0, np.nan]), np.array([[2.0, 0.5], [np.nan, 3.0]])),
    row("searchsorted", np.array([1.0, 2.0, 2.0, 3.0]), np.array([2.0, 9.0]), side="right", label="right"),
    row("searchsorted", np.array([3, 1, 2], np.int32), 2, sorter=np.array([1, 2, 0]), label="sorter"),
    *[row("digitize", V, b, right=r, label=f"{d}-{r}") for d, b in (("up", np.array([-1.0, 0.0, 1.0])),
                                                                   ("down", np.array([1.0, 0.0, -1.0])))
      for r in (False, True)],
    row("interp", np.array([-1.0, 0.5, 1.5, 9.0]), np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 2.0])),
    row("interp", V, np.array([0.0, 1.0]), np.array([5.0, 6.0]), left=-1.0, right=9.0, label="left-right"),
    row("isin", M, np.array([0.5, 3.0])), row("isin", I32, np.array([3, 7], np.int32), invert=True, label="invert"),
    row("polyval", np.array([1.0, 2.0, 3.0]), V), row("polyval", np.array([2, -1], np.int32), I32, label="int32"),
    row("vander", V), row("vander", V, 4, increasing=True, label="n-increasing"),
    *[row(fn, np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.0, 1.0, 0.5]), mode, label=mode)
      for fn in ("convolve", "correlate") for mode in ("full", "same", "valid")],
    row("convolve", np.array([1.0, 2.0]), np.array([1.0, 1.0, 1.0, 1.0]), "same", label="short-first"),
    row("correlate", np.array([1.0, 2.0]), np.array([1.0, 2.0, 3.0]), "full", label="short-first"),
    row("correlate", C, C[::-1], "full", label="complex"), row("convolve", I32[0], I32[1], label="int32"),
    row("cov", M), row("cov", M, rowvar=False, label="columns"), row("cov", V, label="one-variable"),
    row("cov", M, bias=True, label="bias"), row("cov", M, ddof=0, label="ddof"), row("cov", M[0], M[1], label="y"),
    row("cov", I32, label="int32"), row("corrcoef", M), row("corrcoef", M[0], M[1], label="y"),
    *[row(w, 5) for w in ("hanning", "hamming", "blackman", "bartlett")], row("hanning", 1, label="one"),
    row("logspace", 0.0, 2.0, 5), row("logspace", 1.0, 3.0, 3, base=2.0, endpoint=False, label="base"),
    row("geomspace", 1.0, 1000.0, 4), row("geomspace", -1.0, -100.0, 3, label="negative"),
    row("matvec", np.ones((2, 3, 4)), np.arange(4.0)), row("vecmat", C, np.ones((3, 2)), label="complex"),
]  # fmt: skip


def _ours(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return rt.asarray(value)
    if isinstance(value, list) and value and isinstance(value[0], np.ndarray):
        return [rt.asarray(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, rt.Tensor):
        return value.numpy()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return np.asarray(value)


def _same(name: str, got: Any, want: Any) -> None:
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), (name, got, want)
        for g, w in zip(got, want, strict=True):
            _same(name, g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{name}: shape {got.shape} where the oracle gives {want.shape}"
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype} where the oracle gives {want.dtype}"
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12, equal_nan=True, err_msg=name)
    else:
        np.testing.assert_array_equal(got, want, err_msg=name)


def _oracle(policy: str, name: str) -> Callable[..., Any]:
    return getattr(jnp if policy == "jax" else np, name)  # type: ignore[no-any-return]


def _oracle_args(policy: str, r: Row) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if r.name == "from_dlpack" and policy == "jax":
        return (jnp.asarray(r.args[0]),), {}
    return r.args, r.kwargs


#: one row in ``_EVERY`` of a name that has others runs by default, besides each name's first row
#: under each oracle: every name keeps both oracles in the default run; ``-m slow`` runs the rest
_EVERY = 3


def _cases() -> list[Any]:
    seen: set[tuple[str, str]] = set()
    out = []
    for i, r in enumerate(ROWS):
        for policy in r.oracles:
            first = (r.name, policy) not in seen
            seen.add((r.name, policy))
            marks = [] if first or i % _EVERY == 0 else [pytest.mark.slow]
            out.append(pytest.param(r, policy, id=f"{r.name}-{r.label or len(r.args)}-{i}-{policy}", marks=marks))
    return out


CASES = _cases()


@pytest.mark.parametrize(("r", "policy"), CASES)
def test_each_numpy_name_means_what_numpy_means(r: Row, policy: str) -> None:
    args, kwargs = _oracle_args(policy, r)
    want = _oracle(policy, r.name)(*args, **kwargs)
    with rt.use_policy(policy):
        got = getattr(rt, r.name)(*[_ours(a) for a in r.args], **r.kwargs)
    _same(r.name, _plain(got), _plain(want) if not isinstance(want, (list, tuple)) else [np.asarray(w) for w in want])


def _numpy_named_exports() -> set[str]:
    out = set()
    for name in rt.__all__:
        obj = getattr(rt, name)
        if inspect.isclass(obj) or inspect.ismodule(obj) or isinstance(obj, rt.DType) or not callable(obj):
            continue
        if hasattr(np, name):
            out.add(name)
    return out


def test_every_numpy_name_has_a_row() -> None:
    names = _numpy_named_exports()
    covered = {r.name for r in ROWS}
    missing = sorted(names - covered - set(OWN_MEANING))
    assert not missing, f"exported under NumPy's names with no oracle row (add them to ROWS): {missing}"
    assert not set(OWN_MEANING) & covered
    assert covered <= names | set(rt.__all__), sorted(covered - names)


# -- Tensor methods ----------------------------------------------------------------------------

#: Tensor methods with a NumPy name: (method, args, kwargs); the oracle is ``ndarray.<method>``
#: (jax.Array's under jax), or the NumPy function of that name where ndarray has no such method
METHOD_ROWS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("round", (), {}), ("round", (1,), {}), ("max", (), {}), ("max", (1,), {"keepdims": True}), ("min", (0,), {}),
    ("clip", (-1.0, 2.0), {}), ("sum", (), {}), ("sum", (1,), {}), ("prod", (0,), {}), ("mean", (), {}),
    ("var", (), {}), ("std", (1,), {}), ("any", (), {}), ("all", (0,), {}), ("argmax", (), {}), ("argmax", (1,), {}),
    ("argmin", (0,), {}), ("cumsum", (), {}), ("cumsum", (1,), {}), ("cumprod", (0,), {}), ("reshape", (3, -1), {}),
    ("reshape", ((-1,),), {}), ("ravel", (), {}), ("flatten", (), {}), ("transpose", (), {}),
    ("transpose", (1, 0), {}), ("squeeze", (), {}), ("astype", (np.int32,), {}), ("copy", (), {}), ("conj", (), {}),
    ("item", (), {}), ("tolist", (), {}),
    *[(n, (), {}) for n in ("abs", "absolute", "negative", "sign", "exp", "exp2", "expm1", "sin", "cos", "tan",
                            "sinh", "cosh", "tanh", "arctan", "atan", "arcsinh", "asinh", "floor", "ceil", "square",
                            "reciprocal")],
]  # fmt: skip
POSITIVE_METHODS = ["log", "log1p", "log2", "log10", "sqrt", "arccosh", "acosh"]
UNIT_METHODS = ["arcsin", "asin", "arccos", "acos", "arctanh", "atanh"]
#: the array API methods NumPy's ndarray has too, held against NumPy in test_array_api_namespace.py
#: (``to_device``: jax.Array's takes no "cpu" string, so no row of this table's jax column)
ARRAY_API_METHODS = ["to_device"]


def _method_data(name: str) -> np.ndarray:
    if name == "item":
        return np.array([2.5])
    if name in POSITIVE_METHODS:
        return G
    return U if name in UNIT_METHODS else M


def _method_oracle(policy: str, a: np.ndarray, name: str) -> Callable[..., Any]:
    arr: Any = jnp.asarray(a) if policy == "jax" else a
    if hasattr(arr, name):
        return getattr(arr, name)  # type: ignore[no-any-return]
    return lambda *args, **kwargs: _oracle(policy, name)(arr, *args, **kwargs)


METHOD_CASES = [
    pytest.param(name, args, kwargs, policy, id=f"{name}-{i}-{policy}")
    for i, (name, args, kwargs) in enumerate([*METHOD_ROWS, *[(n, (), {}) for n in POSITIVE_METHODS + UNIT_METHODS]])
    for policy in ("jax", "numpy")
]


@pytest.mark.parametrize(("name", "args", "kwargs", "policy"), METHOD_CASES)
def test_each_numpy_named_method_means_what_numpy_means(name: str, args: Any, kwargs: Any, policy: str) -> None:
    a = _method_data(name)
    want = _method_oracle(policy, a, name)(*args, **kwargs)
    with rt.use_policy(policy):
        got = getattr(rt.asarray(a), name)(*args, **kwargs)
    if name in ("item", "tolist"):
        assert got == want and type(got) is type(want)
        return
    _same(name, _plain(got), np.asarray(want))


def test_every_numpy_named_method_has_a_row() -> None:
    public = {n for n in dir(rt.Tensor) if not n.startswith("_") and callable(getattr(rt.Tensor, n, None))}
    numpy_named = {n for n in public if hasattr(np.ndarray, n) or hasattr(np, n)}
    covered = {n for n, _, _ in METHOD_ROWS} | set(POSITIVE_METHODS) | set(UNIT_METHODS) | set(ARRAY_API_METHODS)
    assert not sorted(numpy_named - covered), sorted(numpy_named - covered)


# -- lax's meanings, under rt.lax ---------------------------------------------------------------

LAX_ROWS: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
    ("round", lambda: rt.lax.round(rt.asarray(M)), lambda: jax.lax.round(M)),
    ("max", lambda: rt.lax.max(rt.asarray(M), rt.asarray(P)), lambda: jax.lax.max(M, P)),
    ("min", lambda: rt.lax.min(rt.asarray(M), rt.asarray(P)), lambda: jax.lax.min(M, P)),
    ("logical_and", lambda: rt.lax.logical_and(rt.asarray(I32), rt.asarray(I32 + 1)),
     lambda: jax.lax.bitwise_and(I32, I32 + 1)),
    ("cumsum", lambda: rt.lax.cumsum(rt.asarray(M)), lambda: jax.lax.cumsum(M)),
    ("argmax", lambda: rt.lax.argmax(rt.asarray(M), 1), lambda: jax.lax.argmax(M, 1, np.int64)),
    ("pad", lambda: rt.lax.pad(rt.asarray(V), 0.0, [(1, -1, 1)]), lambda: jax.lax.pad(V, 0.0, [(1, -1, 1)])),
    ("select", lambda: rt.lax.select(rt.asarray(B), rt.asarray(M), rt.asarray(P)), lambda: jax.lax.select(B, M, P)),
    ("rem", lambda: rt.lax.rem(rt.asarray(I32), 3), lambda: jax.lax.rem(I32, np.int32(3))),
]  # fmt: skip


@pytest.mark.parametrize(("name", "ours", "theirs"), LAX_ROWS, ids=[r[0] for r in LAX_ROWS])
def test_lax_keeps_lax_meanings(name: str, ours: Callable[[], Any], theirs: Callable[[], Any]) -> None:
    _same(name, ours().numpy(), np.asarray(theirs()))


def test_no_lax_only_name_at_the_top_level() -> None:
    """The top level is NumPy's vocabulary: an op function is there only under a name NumPy gives
    the same meaning (``rt.sin is rt.lax.sin``); lax-only names (``sub``, ``reduce_sum``,
    ``dot_general``, ``rem``, ``clamp`` ...) are under ``rt.lax`` alone."""
    for name in rt.lax.__all__:
        if hasattr(rt, name):
            assert hasattr(np, name), f"rt.{name} is a lax-only name at the top level"
    for name in ("sub", "mul", "div", "reduce_sum", "dot_general", "rem", "clamp", "convert", "iota"):
        assert not hasattr(rt, name), name


# -- gradients and vmap of the functions runtime.numpy.shared_names writes ---------------------

W6 = np.arange(1.0, 7.0)
GRAD_ROWS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("max-where", lambda xp, a: xp.max(a, axis=1, initial=-9.0, where=B).sum()),
    ("min", lambda xp, a: xp.min(a, axis=0).sum()),
    ("reshape-F", lambda xp, a: (xp.reshape(a, (3, 2), order="F") * W6.reshape(3, 2)).sum()),
    ("pad", lambda xp, a: (xp.pad(a, ((1, 0), (0, 2)), constant_values=2.0) ** 2).sum()),
    ("pad-edge", lambda xp, a: (xp.pad(a, 2, mode="edge") ** 2).sum()),
    ("select", lambda xp, a: xp.select([a > 1, a > 0], [a * a, -a], 9.0).sum()),
    ("sort", lambda xp, a: (xp.sort(a, axis=None) * W6).sum()),
    ("sort-descending", lambda xp, a: (xp.sort(a, axis=0, descending=True) * W6.reshape(2, 3)).sum()),
    ("cumsum", lambda xp, a: (xp.cumsum(a) ** 2).sum()),
    ("cumprod", lambda xp, a: xp.cumprod(a, axis=1).sum()),
    ("concatenate", lambda xp, a: (xp.concatenate([a, a * a], axis=None) * np.arange(12.0)).sum()),
    ("split", lambda xp, a: (xp.split(a, [1], axis=1)[1] ** 2).sum()),
    ("full", lambda xp, a: (xp.full((2, 2, 3), a) ** 2).sum()),
    ("round", lambda xp, a: xp.round(a, 1).sum() + (a * a).sum()),
    ("transpose", lambda xp, a: (xp.transpose(a) * W6.reshape(3, 2)).sum()),
    ("expand_dims", lambda xp, a: (xp.expand_dims(a, (0, -1)) ** 3).sum()),
    ("stack", lambda xp, a: (xp.stack([a, 2 * a], axis=-1) ** 2).sum()),
]


@pytest.mark.parametrize(("label", "f"), GRAD_ROWS, ids=[r[0] for r in GRAD_ROWS])
def test_gradients_match_jax(label: str, f: Callable[[Any, Any], Any]) -> None:
    got = autodiff.grad(lambda a: f(rt, a))(rt.asarray(M))
    want = jax_oracles.jitted(jax.grad(lambda a: f(jnp, a)))(M)  # compiled whole: one executable, not one per primitive
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-12, err_msg=label)


VMAP_ROWS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("max-initial", lambda xp, r: xp.max(r, initial=0.5)),
    ("argmax", lambda xp, r: xp.argmax(r)),
    ("reshape-F", lambda xp, r: xp.reshape(r, (3, 1), order="F")),
    ("pad", lambda xp, r: xp.pad(r, (1, 2), constant_values=-1.0)),
    ("select", lambda xp, r: xp.select([r > 1], [r], 0.0)),
    ("sort", lambda xp, r: xp.sort(r)),
    ("argsort", lambda xp, r: xp.argsort(r, descending=True)),
    ("cumsum", lambda xp, r: xp.cumsum(r)),
    ("concatenate", lambda xp, r: xp.concatenate([r, r * 2], axis=None)),
    ("full", lambda xp, r: xp.full((2, 3), r)),
    ("round", lambda xp, r: xp.round(r * 3.3, 1)),
    ("logical_and", lambda xp, r: xp.logical_and(r, r > 1)),
    ("split", lambda xp, r: xp.split(r, 3)[2]),
]


@pytest.mark.parametrize(("label", "f"), VMAP_ROWS, ids=[r[0] for r in VMAP_ROWS])
def test_vmap_matches_jax(label: str, f: Callable[[Any, Any], Any]) -> None:
    xs = np.concatenate([M, P])
    got = autodiff.vmap(lambda r: f(rt, r))(rt.asarray(xs))
    _same(label, got.numpy(), np.asarray(jax.vmap(lambda r: f(jnp, r))(xs)))
