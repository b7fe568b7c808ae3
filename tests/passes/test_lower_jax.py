"""Lowering graphs to JAX: every op, several dtypes, derivative programs, random programs.

Each case traces one small castwise function into a graph, lowers it with
``passes.lower_to_jax``, runs it under ``jax.jit`` and compares with the NumPy
interpreter (``runtime.evaluate``): exactly for bool and integers, within a
few ulps of the dtype for floats. Inputs include the corners where castwise
documents XLA's meaning (integer division by zero, INT_MIN / -1, float -> int
saturation, out-of-bounds gathers and scatters, negative dynamic-slice starts).
Lowering is also an independent check of ``promote``: lax refuses the mixed
dtypes of a raw graph and accepts every promoted one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import autodiff
import runtime as rt
from autodiff import parity
from passes import LOWERINGS, GraphBuilder, LoweringError, export_stablehlo, lower_to_jax, promote, verify
from passes.lower_jax import graph_dtypes, uniform_value
from runtime.core import lax as F
from runtime.core import ops
from runtime.core.dtypes import DType
from runtime.core.graph import Graph, GraphError
from runtime.core.shapes import GatherDimensionNumbers, ScatterDimensionNumbers
from runtime.core.tensor import Tensor
from tests.autodiff.programs import programs

jax = pytest.importorskip("jax")

# -- running and comparing -----------------------------------------------------------------------


def run_lowered(graph: Graph, args: Sequence[Any], jit: bool = True) -> list[np.ndarray]:
    """``jax.jit`` of the lowering (or ``lax`` op by op), with x64 on (castwise graphs hold 64-bit values)."""
    arrays = [a.numpy() if isinstance(a, Tensor) else np.asarray(a) for a in args]
    fn = lower_to_jax(graph)
    with jax.enable_x64(True):
        outs = jax.jit(fn)(*arrays) if jit else fn(*arrays)
        return [np.asarray(o) for o in outs]


def tolerance(dtype: DType) -> float:
    """A few ulps of ``dtype`` (XLA and NumPy may round transcendental functions differently)."""
    if dtype.kind == "complex":
        return 1e-12 if dtype is rt.complex128 else 2e-5
    if dtype is rt.float64:
        return 1e-12
    if dtype in (rt.float32, rt.float32r):
        return 2e-5
    return float(ml_dtypes.finfo(dtype.storage).eps)  # one ulp (all narrow cases agree bit for bit today)


def assert_same(got: np.ndarray, want: Tensor, what: str = "", tol: float | None = None) -> None:
    """``got`` (from JAX) equals ``want`` (from the interpreter): dtype, shape, values.

    ``tol`` defaults to the tolerance of ``want``'s dtype.
    """
    dtype = want.dtype
    expected = want.numpy()
    assert got.dtype == dtype.storage, f"{what}: JAX gave {got.dtype}, castwise {dtype.storage}"
    assert got.shape == expected.shape, f"{what}: JAX gave shape {got.shape}, castwise {expected.shape}"
    if dtype.kind in ("bool", "int", "uint"):
        np.testing.assert_array_equal(got, expected, err_msg=what)
        return
    wide = np.complex128 if dtype.kind == "complex" else np.float64
    tol = tolerance(dtype) if tol is None else tol
    np.testing.assert_allclose(got.astype(wide), expected.astype(wide), rtol=tol, atol=tol, equal_nan=True,
                               err_msg=what)  # fmt: skip


def check_graph(graph: Graph, args: Sequence[Any], what: str = "", jit: bool = True) -> None:
    """The lowered graph computes what the interpreter computes, output by output.

    Floats compare within the tolerance of the least precise inexact dtype the
    graph computes in (an f32 sine feeding a c128 product carries f32 error).
    ``jit=False`` runs the lowering ``lax`` op by op: the semantics of each op
    without XLA's whole-program rewrites.
    """
    verify(graph)
    want = rt.evaluate(graph, *args)
    got = run_lowered(graph, args, jit)
    assert len(got) == len(want)
    inexact = [d for d in graph_dtypes(graph) if d.is_inexact]
    tol = max((tolerance(d) for d in inexact), default=0.0)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_same(g, w, f"{what} output {i}", tol)


# -- data ------------------------------------------------------------------------------------------

RNG_SEED = 0


def data(dtype: str | DType, shape: tuple[int, ...] = (2, 3), lo: float = -2.0, hi: float = 2.0,
         seed: int = 0) -> Tensor:  # fmt: skip
    """Random values of ``dtype`` in [lo, hi) (integers: rounded; bool: coin flips)."""
    d = rt.dtype(dtype)
    rng = np.random.default_rng(seed)
    if d.kind == "bool":
        return rt.asarray(rng.integers(0, 2, shape).astype(bool))
    raw = rng.uniform(lo, hi, shape)
    if d.kind in ("int", "uint"):
        return rt.asarray(np.round(raw).astype(np.int64).astype(d.storage), d)
    if d.kind == "complex":
        raw = raw + 1j * rng.uniform(lo, hi, shape)
    return rt.asarray(np.asarray(raw).astype(d.storage), d)


def of(dtype: str | DType, values: Any) -> Tensor:
    d = rt.dtype(dtype)
    if d.kind in ("int", "uint"):  # exact Python ints (2**64 - 1 has no float64)
        return rt.asarray(np.array(values, dtype=d.storage), d)
    return rt.asarray(np.asarray(values).astype(d.storage), d)


def int_corners(dtype: str) -> tuple[Tensor, Tensor]:
    """Dividends and divisors with zero divisors, sign mixes and (signed) INT_MIN / -1."""
    d = rt.dtype(dtype)
    if d.kind == "uint":
        top = int(np.iinfo(d.storage).max)
        return of(d, [7, top, 5, 0, 9, 3]), of(d, [2, 3, 0, 0, top, 1])
    low = int(np.iinfo(d.storage).min) if d is not rt.int4 else -8
    return of(d, [7, -7, low, 5, 0, -3, 3, low]), of(d, [2, -2, -1, 0, 0, 3, -1, 0])


def float_corners(dtype: str) -> tuple[Tensor, Tensor]:
    """Dividends and divisors with zeros of both signs, negatives, an infinity and a NaN."""
    return (of(dtype, [7.5, -7.5, 3.0, -1.0, 0.0, 2.5, np.inf, np.nan]),
            of(dtype, [2.0, 2.0, -0.0, 0.0, 0.0, -0.5, 3.0, 1.0]))  # fmt: skip


# -- the table -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One small graph: ``fn`` traced on ``args`` (``op`` must appear in it), or a graph built by hand."""

    op: str
    label: str
    make: Callable[[], tuple[Callable[..., Any], list[Tensor]]]
    build: Callable[[], Graph] | None = None

    @property
    def id(self) -> str:
        return f"{self.op}-{self.label}"

    def graph(self) -> tuple[Graph, list[Tensor]]:
        fn, args = self.make()
        return (self.build() if self.build is not None else rt.trace(fn, *args)), args


CASES: list[Case] = []


def case(op: str, label: str, fn: Callable[..., Any], *args: Any) -> None:
    """Add a case; each of ``args`` is a Tensor or a zero-argument function making one."""

    def make() -> tuple[Callable[..., Any], list[Tensor]]:
        return fn, [a() if callable(a) else a for a in args]

    CASES.append(Case(op, label, make))


def nullary_case(op: str, label: str, **params: Any) -> None:
    """``iota`` and ``full`` have no operands, so no recording holds them: build the graph by hand."""

    def build() -> Graph:
        b = GraphBuilder()
        return b.build(b.op(op, **params))

    def make() -> tuple[Callable[..., Any], list[Tensor]]:
        return (lambda: None), []

    CASES.append(Case(op, label, make, build))


def binary_cases(op: str, fn: Callable[..., Any], dtypes: Sequence[str], lo: float = -2.0, hi: float = 2.0) -> None:
    for d in dtypes:
        case(op, d, fn, lambda d=d: data(d, lo=lo, hi=hi), lambda d=d: data(d, lo=lo, hi=hi, seed=1))


_fn: Callable[..., Any]  # loop variables below hold functions of different arities
# elementwise arithmetic (a 0-d operand broadcasts, as lax's scalar rule allows)
binary_cases("add", F.add, ["f32", "bf16", "c64", "i32", "u8", "i4", "f8e4m3fn"])
case("add", "f64-scalar", F.add, data("f64"), of("f64", 0.5))
binary_cases("sub", F.sub, ["f64", "f16", "c128", "i8", "u16"])
binary_cases("mul", F.mul, ["f32", "f8e5m2", "c64", "i64", "u4", "f32r"])
case("mul", "c64-scalar", F.mul, of("c64", 2 - 1j), data("c64"))
binary_cases("div", F.div, ["f32", "c128", "bf16"])
case("div", "f64-corners", F.div, *float_corners("f64"))
for _d in ("i32", "i8", "u8", "i64"):
    case("div", f"{_d}-corners", F.div, *int_corners(_d))
case("rem", "f32-corners", F.rem, *float_corners("f32"))
case("rem", "bf16", F.rem, data("bf16"), data("bf16", lo=0.5, hi=2))
for _d in ("i32", "u16", "i16"):
    case("rem", f"{_d}-corners", F.rem, *int_corners(_d))
binary_cases("pow", F.pow, ["f32", "f64"], lo=0.1, hi=2)
binary_cases("pow", F.pow, ["c64"])
case("pow", "i32-corners", F.pow, of("i32", [2, -3, 0, 0, 1, -1, 3, 2]), of("i32", [3, 2, 0, 5, -1, -3, 5, 70]))
case("pow", "u8", F.pow, of("u8", [2, 3, 0, 7, 255]), of("u8", [7, 2, 0, 0, 2]))
case("pow", "i4", F.pow, of("i4", [2, -3, 0, 1, -1, 3]), of("i4", [2, 1, 3, -1, -3, 7]))
case("max", "f32-nan", F.max, of("f32", [1.0, np.nan, -0.0, 2.0]), of("f32", [np.nan, 3.0, 0.0, -1.0]))
binary_cases("max", F.max, ["c128", "i8", "bool"])
case("min", "f64-nan", F.min, of("f64", [1.0, np.nan, -0.0, 2.0]), of("f64", [np.nan, 3.0, 0.0, -1.0]))
binary_cases("min", F.min, ["c64", "u8", "bool", "bf16"])
binary_cases("atan2", F.atan2, ["f32", "f64", "bf16"])
case("floor_div", "f64-corners", F.floor_div, *float_corners("f64"))
case("floor_div", "f32-corners", F.floor_div, *float_corners("f32"))
binary_cases("floor_div", F.floor_div, ["bf16"], lo=-8, hi=8)
for _d in ("i32", "u8", "i8"):
    case("floor_div", f"{_d}-corners", F.floor_div, *int_corners(_d))

# comparisons and logical ops
_NANS = (of("f32", [1.0, np.nan, 2.0, -0.0]), of("f32", [1.0, 1.0, np.nan, 0.0]))
for _op, _fn in (("eq", F.eq), ("ne", F.ne), ("lt", F.lt), ("le", F.le), ("gt", F.gt), ("ge", F.ge)):
    case(_op, "f32-nan", _fn, *_NANS)
    binary_cases(_op, _fn, ["i64", "bool"], lo=-1, hi=1)
binary_cases("eq", F.eq, ["c64"])
binary_cases("ne", F.ne, ["c128"])
for _op, _fn in (("and", F.logical_and), ("or", F.logical_or), ("xor", F.logical_xor)):
    binary_cases(_op, _fn, ["bool", "i32", "u8"], lo=-50, hi=50)

# contraction, selection, joining
_MATMUL = (((1,), (0,)), ((), ()))
_BATCHED = (((2,), (1,)), ((0,), (0,)))
for _d in ("f32", "c64", "i32", "bf16", "bool"):
    case("dot_general", _d, lambda a, b: F.dot_general(a, b, _MATMUL),
         lambda _d=_d: data(_d, (2, 3)), lambda _d=_d: data(_d, (3, 4), seed=1))  # fmt: skip
case("dot_general", "f64-batched", lambda a, b: F.dot_general(a, b, _BATCHED),
     data("f64", (2, 3, 4)), data("f64", (2, 4, 5), seed=1))  # fmt: skip
for _d in ("f32", "c128", "i32"):
    case("select", _d, F.select, lambda: data("bool", seed=3), lambda _d=_d: data(_d), lambda _d=_d: data(_d, seed=1))
case("select", "f64-scalars", F.select, data("bool", seed=3), of("f64", 1.5), data("f64"))
case("select", "scalar-pred", F.select, of("bool", True), data("i8"), data("i8", seed=1))
case("clamp", "f32-nan", F.clamp, of("f32", -0.5), of("f32", [-1.0, 0.0, np.nan, 2.0]), of("f32", 1.0))
case("clamp", "i32", F.clamp, data("i32", seed=2), data("i32", lo=-9, hi=9), of("i32", 3))
case("clamp", "bf16", F.clamp, data("bf16", seed=2), data("bf16"), data("bf16", seed=3))
for _d in ("f32", "bool", "c64", "u4"):
    case("concatenate", _d, lambda a, b: F.concatenate([a, b, a], 1),
         lambda _d=_d: data(_d), lambda _d=_d: data(_d, (2, 1), seed=1))  # fmt: skip

# indexing (out-of-bounds indices on purpose)
_ROWS = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
_POINTS = ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
_IDX = of("i32", [[0], [3], [-1], [1], [7]])
for _mode in ("clip", "fill", "promise_in_bounds"):
    case(
        "gather", f"f32-{_mode}", lambda x, i, m=_mode: F.gather(x, i, _ROWS, (1, 3), mode=m), data("f32", (4, 3)), _IDX
    )
case("gather", "i16-fill-value", lambda x, i: F.gather(x, i, _ROWS, (1, 3), mode="fill", fill_value=-5),
     data("i16", (4, 3), lo=-9, hi=9), _IDX)  # fmt: skip
case("gather", "u8-default-fill", lambda x, i: F.gather(x, i, _ROWS, (1, 3), mode="fill"),
     data("u8", (4, 3), lo=0, hi=9), of("u32", [[2], [9]]))  # fmt: skip
_SIDX = of("i32", [[2], [0], [5], [-1]])
for _mode in ("clip", "fill", "promise_in_bounds"):
    case("scatter", f"f32-{_mode}", lambda x, i, u, m=_mode: F.scatter(x, i, u, _POINTS, mode=m),
         data("f32", (4, 3)), _SIDX, data("f32", (4, 3), seed=1))  # fmt: skip
    case("scatter_add", f"c64-{_mode}", lambda x, i, u, m=_mode: F.scatter_add(x, i, u, _POINTS, mode=m),
         data("c64", (4, 3)), _SIDX, data("c64", (4, 3), seed=1))  # fmt: skip
case("scatter", "bool", lambda x, i, u: F.scatter(x, i, u, _POINTS), data("bool", (4, 3)), of("i64", [[1], [3]]),
     data("bool", (2, 3), seed=1))  # fmt: skip
case("scatter_add", "i32-duplicates", lambda x, i, u: F.scatter_add(x, i, u, _POINTS), data("i32", (4, 3)),
     of("u8", [[1], [1], [3]]), data("i32", (3, 3), seed=1))  # fmt: skip
for _name in ("scatter_min", "scatter_max"):
    case(_name, "f32-duplicates", lambda x, i, u, n=_name: getattr(F, n)(x, i, u, _POINTS), data("f32", (4, 3)),
         of("i32", [[1], [1], [3], [7]]), data("f32", (4, 3), seed=1))  # fmt: skip
# scatter_mul's updates are differentiable only with unique indices (as in JAX)
case("scatter_mul", "f32-unique", lambda x, i, u: F.scatter_mul(x, i, u, _POINTS, unique_indices=True),
     data("f32", (4, 3)), of("i32", [[1], [3], [7]]), data("f32", (3, 3), seed=1))  # fmt: skip
case("scatter_mul", "i32-duplicates", lambda x, i, u: F.scatter_mul(x, i, u, _POINTS), data("i32", (4, 3)),
     of("i32", [[1], [1], [3], [7]]), data("i32", (4, 3), seed=1))  # fmt: skip
for _name in ("scatter_mul", "scatter_min", "scatter_max"):
    case(_name, "i16-clip", lambda x, i, u, n=_name: getattr(F, n)(x, i, u, _POINTS, mode="clip"),
         data("i16", (4, 3), lo=-3, hi=3), of("i32", [[1], [-2]]),
         data("i16", (2, 3), lo=-3, hi=3, seed=1))  # fmt: skip
case("sort", "f32", lambda x: F.sort(x, 0), data("f32", (4, 3)))
case("sort", "i8-bf16-num_keys-2", lambda x, y: F.sort((x, y), 1, num_keys=2), data("i8", (3, 5), lo=-2, hi=2),
     data("bf16", (3, 5), seed=1))  # fmt: skip
case("top_k", "f64", lambda x: F.top_k(x, 2), data("f64", (3, 4)))
case("top_k", "u8-ties", lambda x: F.top_k(x, 3), data("u8", (2, 5), lo=0, hi=2))
case("top_k", "f32-axis0", lambda x: F.top_k(x, 2, axis=0), data("f32", (3, 4)))
case("split", "c64", lambda x: tuple(F.split(x, (1, 0, 2), 1)), data("c64", (2, 3)))
case("select_n", "i64-which", lambda w, a, b, c: F.select_n(w, a, b, c), of("i64", [2, 0, 1, 1]),
     data("f32", (4,)), data("f32", (4,), seed=1), data("f32", (4,), seed=2))  # fmt: skip
case("select_n", "bool-0d-case", lambda w, a, b: F.select_n(w, a, b), of("bool", [True, False]), of("c64", 1j),
     data("c64", (2,)))  # fmt: skip
case("dynamic_slice", "f32", lambda x, i, j: F.dynamic_slice(x, [i, j], (2, 2)), data("f32", (4, 5)),
     of("i32", 1), of("i32", 2))  # fmt: skip
case("dynamic_slice", "negative-and-oob", lambda x, i, j: F.dynamic_slice(x, [i, j], (2, 2)), data("c64", (4, 5)),
     of("i32", -1), of("i32", 9))  # fmt: skip
case("dynamic_slice", "mixed-index-dtypes", lambda x, i, j: F.dynamic_slice(x, [i, j], (2, 3)), data("i8", (4, 5)),
     of("u8", 3), of("i64", -2))  # fmt: skip
case("dynamic_slice", "u64-huge", lambda x, i, j: F.dynamic_slice(x, [i, j], (2, 3)), data("f64", (4, 5)),
     of("u64", 2**63 + 5), of("i8", 1))  # fmt: skip
case("dynamic_update_slice", "f32", lambda x, u, i, j: F.dynamic_update_slice(x, u, [i, j]), data("f32", (4, 5)),
     data("f32", (2, 2), seed=1), of("i32", 1), of("i32", 2))  # fmt: skip
case("dynamic_update_slice", "negative-and-oob", lambda x, u, i, j: F.dynamic_update_slice(x, u, [i, j]),
     data("bool", (4, 5)), data("bool", (2, 3), seed=1), of("i16", -3), of("u32", 99))  # fmt: skip

# elementwise unary
_POS = {"log", "sqrt", "rsqrt", "log1p"}
for _op, _fn in (("exp", F.exp), ("log", F.log), ("expm1", F.expm1), ("log1p", F.log1p), ("sin", F.sin),
                 ("cos", F.cos), ("tanh", F.tanh), ("logistic", F.logistic), ("sqrt", F.sqrt),
                 ("rsqrt", F.rsqrt), ("reciprocal", F.reciprocal)):  # fmt: skip
    for _d in ("f32", "f64", "bf16", "c64"):
        lo = 0.1 if _op in _POS else -2.0
        case(_op, _d, _fn, lambda _d=_d, lo=lo: data(_d, lo=lo))
case("expm1", "f16", F.expm1, data("f16", (4, 4), lo=-1, hi=1))
case("expm1", "f8e4m3fn", F.expm1, data("f8e4m3fn", (4, 4), lo=-1, hi=1))
case("log", "f32-specials", F.log, of("f32", [0.0, -1.0, np.inf, np.nan, 1.0]))
case("tanh", "f16", F.tanh, data("f16"))
for _d in ("f32", "i8", "u8", "c128", "f8e4m3fn"):
    case("neg", _d, F.neg, lambda _d=_d: data(_d, lo=-9, hi=9))
case("neg", "i8-min", F.neg, of("i8", [-128, 127, 0]))
for _d in ("f64", "i32", "c64", "bf16"):
    case("abs", _d, F.abs, lambda _d=_d: data(_d, lo=-9, hi=9))
case("abs", "i8-min", F.abs, of("i8", [-128, 127, 0, -1]))
case("sign", "f32-specials", F.sign, of("f32", [-0.0, 0.0, np.nan, -3.0, 2.0, -np.inf]))
for _d in ("i32", "u8", "c128", "f16"):
    case("sign", _d, F.sign, lambda _d=_d: data(_d, lo=-9, hi=9))
for _d in ("c64", "c128"):  # conj of a real operand is the operand: a trace records no equation
    case("conj", _d, F.conj, lambda _d=_d: data(_d))
for _d in ("c64", "c128"):
    case("real", _d, F.real, lambda _d=_d: data(_d))
    case("imag", _d, F.imag, lambda _d=_d: data(_d))
for _d in ("f32", "i16", "u8", "c128", "bf16"):
    case("square", _d, F.square, lambda _d=_d: data(_d, lo=-9, hi=9))

# rounding, tests, exponentials, trigonometric and hyperbolic; integer bit ops
_HALVES = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.0, 3.7, np.nan, np.inf]
for _d in ("f32", "bf16", "f64"):
    case("floor", _d, F.floor, lambda _d=_d: data(_d, lo=-9, hi=9))
    case("ceil", _d, F.ceil, lambda _d=_d: data(_d, lo=-9, hi=9))
    case("round", f"{_d}-away", lambda x: F.round(x, 0), of(_d, _HALVES))
    case("round", f"{_d}-even", lambda x: F.round(x, 1), of(_d, _HALVES))
    case("is_finite", _d, F.is_finite, of(_d, _HALVES))
    case("cbrt", _d, F.cbrt, lambda _d=_d: data(_d, lo=-9, hi=9))
    case("nextafter", _d, F.nextafter, lambda _d=_d: data(_d), lambda _d=_d: data(_d, seed=1))
for _op, _fn, _lo, _hi in (("exp2", F.exp2, -2.0, 2.0), ("sinh", F.sinh, -2.0, 2.0), ("cosh", F.cosh, -2.0, 2.0),
                           ("tan", F.tan, -1.0, 1.0), ("asin", F.asin, -0.9, 0.9), ("acos", F.acos, -0.9, 0.9),
                           ("atan", F.atan, -3.0, 3.0), ("asinh", F.asinh, -3.0, 3.0), ("acosh", F.acosh, 1.1, 4.0),
                           ("atanh", F.atanh, -0.9, 0.9)):  # fmt: skip
    for _d in ("f32", "f64", "bf16", "f16", "c64"):
        case(_op, _d, _fn, lambda _d=_d, lo=_lo, hi=_hi: data(_d, lo=lo, hi=hi))
for _d in ("f32", "f64"):
    case("complex", _d, F.complex, lambda _d=_d: data(_d), lambda _d=_d: data(_d, seed=1))
# the special functions (real floats; bf16 computes in float32 as XLA does)
for _op, _fn, _lo, _hi in (("erf", F.erf, -3.0, 3.0), ("erfc", F.erfc, -3.0, 3.0),
                           ("erf_inv", F.erf_inv, -0.9, 0.9), ("lgamma", F.lgamma, 0.1, 9.0),
                           ("digamma", F.digamma, 0.1, 9.0), ("bessel_i0e", F.bessel_i0e, -12.0, 12.0),
                           ("bessel_i1e", F.bessel_i1e, -12.0, 12.0)):  # fmt: skip
    for _d in ("f32", "f64", "bf16"):
        case(_op, _d, _fn, lambda _d=_d, lo=_lo, hi=_hi: data(_d, lo=lo, hi=hi))
for _op, _fn, _lo, _hi in (("igamma", F.igamma, 0.1, 9.0), ("igammac", F.igammac, 0.1, 9.0),
                           ("igamma_grad_a", F.igamma_grad_a, 0.1, 9.0), ("zeta", F.zeta, 1.5, 9.0)):  # fmt: skip
    for _d in ("f32", "f64"):
        case(
            _op,
            _d,
            _fn,
            lambda _d=_d, lo=_lo, hi=_hi: data(_d, lo=lo, hi=hi),
            lambda _d=_d, lo=_lo, hi=_hi: data(_d, lo=lo, hi=hi, seed=1),
        )
for _d in ("f32", "f64"):  # first with m a constant: polygamma has no derivative in m (the VJP case below)
    case("polygamma", f"{_d}-m2", lambda x: F.polygamma(2.0, x), lambda _d=_d: data(_d, (4,), lo=0.5, hi=9.0))
    case("polygamma", _d, F.polygamma, of(_d, [0.0, 1.0, 2.0, 3.0]), lambda _d=_d: data(_d, (4,), lo=0.5, hi=9.0))
for _d in ("i8", "u16", "i32", "u64", "i4"):
    case("not", _d, F.logical_not, lambda _d=_d: data(_d, lo=-9, hi=9))
    if _d != "i4":  # XLA CPU counts an int4's bits in its 8-bit sign extension (-1 -> 8 -> wraps to -8)
        case("population_count", _d, F.population_count, lambda _d=_d: data(_d, lo=-9, hi=9))
    case("clz", _d, F.clz, lambda _d=_d: data(_d, lo=-9, hi=9))
    for _op, _fn in (("shift_left", F.shift_left), ("shift_right_arithmetic", F.shift_right_arithmetic),
                     ("shift_right_logical", F.shift_right_logical)):  # fmt: skip
        case(_op, _d, _fn, lambda _d=_d: data(_d, lo=-9, hi=9), lambda _d=_d: data(_d, lo=-2, hi=9, seed=1))
case("not", "bool", F.logical_not, data("bool"))

# conversions (saturation, NaN -> 0, wrap-around, real part, rounding into narrow floats)
_SATURATE = [np.nan, np.inf, -np.inf, 3.7, -3.7, 1e10, -1e10, 255.5, -0.9]
for _src, _dst, _vals in (
    ("f64", "i32", _SATURATE),
    ("f32", "u8", _SATURATE),
    ("f32", "i4", _SATURATE),
    ("c128", "f32", [1 + 2j, -3.5 - 1j, np.nan]),
    ("c64", "bool", [0j, 1j, 2 + 0j]),
    ("c128", "i16", [7.9 + 3j, -2.2 - 9j]),
    ("i64", "f8e4m3fn", [17, -300, 1000, 3, 2**40]),
    ("f64", "bf16", [1.0 + 2**-9, 1 + 2**-8 + 2**-30, 3.14159, 1e40, -1e-30]),
    ("f64", "f8e5m2", [0.1, 1e6, -3.3, 2**-17]),
    ("bool", "f32", [True, False]),
    ("i32", "i4", [7, 8, -9, 300]),
    ("u64", "f64", [2**64 - 1, 3]),
    ("f64", "c64", [1e300, 0.1]),
    ("f32", "f32r", [0.1, -2.0]),
    ("f32r", "f64", [0.1, -2.0]),
    ("i8", "u64", [-1, 5]),
    ("f16", "bool", [0.0, -0.0, np.nan, 2.0]),
    ("bf16", "f8e4m3fnuz", [1.0, 2.5, -0.0, 1e3]),
):
    case("convert", f"{_src}-to-{_dst}", lambda x, d=_dst: F.convert(x, d), of(_src, _vals))

# reductions (one empty reduction: the identities)
for _op, _fn in (("reduce_sum", F.reduce_sum), ("reduce_prod", F.reduce_prod),
                 ("reduce_max", F.reduce_max), ("reduce_min", F.reduce_min)):  # fmt: skip
    for _d in ("f32", "i32", "c64"):
        case(_op, _d, lambda x, f=_fn: f(x, (1,)), lambda _d=_d: data(_d, (3, 4), lo=-3, hi=3))
    case(_op, "f64-empty", lambda x, f=_fn: f(x, (0,)), data("f64", (0, 3)))
case("reduce_max", "bool", lambda x: F.reduce_max(x, (0, 1)), data("bool", (3, 4)))
case("reduce_min", "bool", lambda x: F.reduce_min(x, (0,)), data("bool", (3, 4)))
case("reduce_sum", "bf16", lambda x: F.reduce_sum(x, (0, 1)), data("bf16", (4, 8)))
case("reduce_max", "f32-nan", lambda x: F.reduce_max(x, (0,)), of("f32", [1.0, np.nan, 2.0]))
# index and bitwise reductions, reduce_precision, cumulative reductions
case("argmax", "f32-ties-nan", lambda x: F.argmax(x, 1, rt.int32), of("f32", [[1, 3, 3, 0], [np.nan, 2, np.nan, 5]]))
case("argmin", "i8-ties", lambda x: F.argmin(x, 0), of("i8", [[1, 3], [1, -2], [0, -2]]))
case("argmax", "bool", lambda x: F.argmax(x, 0, rt.uint8), of("bool", [False, True, True]))
for _op in ("reduce_and", "reduce_or", "reduce_xor"):
    case(_op, "i32", lambda x, o=_op: getattr(F, o)(x, (1,)), of("i32", [[7, 5, -3], [12, 10, 6]]))
    case(_op, "bool", lambda x, o=_op: getattr(F, o)(x, (0,)), data("bool", (3, 4)))
    case(_op, "u8-empty", lambda x, o=_op: getattr(F, o)(x, (0,)), of("u8", np.zeros((0, 2))))
case("reduce_precision", "f32", lambda x: F.reduce_precision(x, 5, 2), of("f32", [0.1, 1e6, -3.3e-6, np.nan, 7.5]))
case("reduce_precision", "bf16", lambda x: F.reduce_precision(x, 4, 3), of("bf16", [0.1, 1e3, -3.3, 255.0]))
for _op in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"):
    for _rev in (False, True):
        case(_op, f"f32-{_rev}", lambda x, o=_op, r=_rev: getattr(F, o)(x, 1, r), data("f32", (3, 40), lo=0.5, hi=1.5))
        case(
            _op, f"bf16-{_rev}", lambda x, o=_op, r=_rev: getattr(F, o)(x, 0, r), data("bf16", (20, 2), lo=0.5, hi=1.5)
        )
for _op in ("cumsum", "cumprod", "cummax", "cummin"):
    case(_op, "i32", lambda x, o=_op: getattr(F, o)(x, 0), data("i32", (5, 2), lo=-3, hi=3))

# structural
for _d in ("f32", "i8", "c64"):
    case("reshape", _d, lambda x: F.reshape(x, (3, 2)), lambda _d=_d: data(_d))
    case("transpose", _d, lambda x: F.transpose(x, (2, 0, 1)), lambda _d=_d: data(_d, (2, 3, 4)))
    case("broadcast_in_dim", _d, lambda x: F.broadcast_in_dim(x, (2, 4, 3), (0, 2)), lambda _d=_d: data(_d))
    case("slice", _d, lambda x: F.slice(x, (0, 1), (4, 5), (2, 2)), lambda _d=_d: data(_d, (4, 5)))
    case("reverse", _d, lambda x: F.reverse(x, (0, 1)), lambda _d=_d: data(_d))
case("broadcast_in_dim", "0-d", lambda x: F.broadcast_in_dim(x, (2, 2), ()), of("bf16", 1.5))
case("slice", "no-strides", lambda x: F.slice(x, (1, 0), (2, 3)), data("bool"))
case("pad", "f32", lambda x: F.pad(x, 0.5, ((1, 2, 1), (-1, 0, 0))), data("f32"))
case("pad", "i8-min", lambda x: F.pad(x, -128, ((0, 1, 0), (2, -1, 2))), data("i8"))  # 300 is refused: it does not fit
case("pad", "c128", lambda x: F.pad(x, 1 - 1j, ((0, 0, 0), (1, 1, 1))), data("c128"))
case("pad", "bool", lambda x: F.pad(x, True, ((1, 1, 0), (0, 0, 1))), data("bool"))
case("pad", "f64-array-value", lambda x, v: F.pad(x, v, ((1, 0, 1), (0, -1, 0))), data("f64"), of("f64", 2.5))
case("integer_pow", "f32-cube", lambda x: F.integer_pow(x, 3), data("f32"))
case("integer_pow", "bf16-negative", lambda x: F.integer_pow(x, -2), data("bf16", lo=0.5, hi=2.0))
case("integer_pow", "i8-wraps", lambda x: F.integer_pow(x, 5), data("i8", lo=-9, hi=9))
case("integer_pow", "c64", lambda x: F.integer_pow(x, 4), data("c64"))
case("stop_gradient", "f32", F.stop_gradient, data("f32"))
case("optimization_barrier", "f32-i8", lambda x, y: tuple(F.optimization_barrier((x, y))), data("f32"), data("i8"))
case("bitcast_convert_type", "f32-as-i32", lambda x: F.bitcast_convert_type(x, "int32"), data("f32"))
case("bitcast_convert_type", "f64-as-u8", lambda x: F.bitcast_convert_type(x, "uint8"), data("f64"))
case("bitcast_convert_type", "u16-pairs-as-f32", lambda x: F.bitcast_convert_type(x, "float32"), data("u16", (3, 2)))
case("bitcast_convert_type", "i4-as-u4", lambda x: F.bitcast_convert_type(x, "uint4"), data("i4", lo=-8, hi=7))
for _d in ("i32", "f32", "c64", "f8e4m3fn", "u8"):
    nullary_case("iota", _d, dtype=rt.dtype(_d), shape=(3, 4), dimension=1)
nullary_case("iota", "f16-large", dtype=rt.float16, shape=(2, 3000), dimension=1)
nullary_case("iota", "bf16-dim0", dtype=rt.bfloat16, shape=(300, 2), dimension=0)
for _label, _fill, _d in (("i8-wrap", 300, "i8"), ("f32", 0.1, "f32"), ("c64", 1 + 2j, "c64"), ("bool", True, "bool"),
                          ("u8-wrap", -1, "u8"), ("bf16", 1 / 3, "bf16"), ("f8-round", 1000, "f8e4m3fn"),
                          ("u64-big", 2**64 - 1, "u64"), ("f32r", 0.1, "f32r")):  # fmt: skip
    nullary_case("full", _label, shape=(2, 3), fill_value=_fill, dtype=rt.dtype(_d))

# windowed reductions and convolution
_W = {"window_dimensions": (2, 3), "window_strides": (1, 2), "padding": ((1, 0), (0, 2)), "base_dilation": (1, 1),
      "window_dilation": (1, 1)}  # fmt: skip
_WD = {**_W, "base_dilation": (2, 1), "window_dilation": (1, 2)}
for _d in ("f32", "f64", "bf16", "i32", "c64"):
    case("reduce_window_sum", _d, lambda x: F.reduce_window_sum(x, **_WD), lambda _d=_d: data(_d, (4, 5)))
for _d in ("f32", "bf16", "i8", "bool"):
    case("reduce_window_max", _d, lambda x: F.reduce_window_max(x, **_WD), lambda _d=_d: data(_d, (4, 5)))
    case("reduce_window_min", _d, lambda x: F.reduce_window_min(x, **_W), lambda _d=_d: data(_d, (4, 5)))
for _label, _p in (("plain", _W), ("dilated", _WD)):
    case("select_and_gather_add", _label, lambda t, x, p=_p: F.select_and_gather_add(t, x, "ge", **p),
         data("f32", (4, 5), seed=1), data("f32", (4, 5)))  # fmt: skip
    _src_shape = rt.lax.reduce_window_max(data("f32", (4, 5)), **_p).shape
    case("select_and_scatter_add", _label, lambda s, x, p=_p: F.select_and_scatter_add(s, x, "le", **p),
         data("f32", _src_shape, seed=1), data("f32", (4, 5)))  # fmt: skip
for _d in ("f32", "f64", "c64", "bf16", "i32"):
    case("conv_general_dilated", _d,
         lambda x, w: F.conv_general_dilated(x, w, (2, 1), ((1, 0), (0, 1)), (1, 2), (2, 1), ("NHWC", "HWIO", "NHWC"),
                                             feature_group_count=2),
         lambda _d=_d: data(_d, (2, 5, 4, 4)), lambda _d=_d: data(_d, (2, 2, 2, 6), seed=3))  # fmt: skip
case("conv_general_dilated", "batch-groups",
     lambda x, w: F.conv_general_dilated(x, w, (1, 1), "SAME", batch_group_count=2),
     data("f64", (4, 3, 5, 5)), data("f64", (4, 3, 3, 2), seed=3))  # fmt: skip

# Fourier transforms: every type, odd and even lengths, 1 to 3 axes; real and integer operands of a
# complex transform lower with the plan's convert
for _d in ("f32", "c64", "c128", "i32"):
    case("fft", f"fft-{_d}", lambda x: F.fft(x, "FFT", (4,)), lambda _d=_d: data(_d, (3, 4)))
    case("fft", f"ifft-2d-{_d}", lambda x: F.fft(x, "IFFT", (3, 5)), lambda _d=_d: data(_d, (2, 3, 5)))
    case("fft", f"irfft-{_d}", lambda x: F.fft(x, "IRFFT", (5,)), lambda _d=_d: data(_d, (2, 3)))
for _d in ("f32", "f64", "i8"):
    case("fft", f"rfft-{_d}", lambda x: F.fft(x, "RFFT", (4,)), lambda _d=_d: data(_d, (3, 4)))
    case("fft", f"rfft-3d-{_d}", lambda x: F.fft(x, "RFFT", (2, 3, 5)), lambda _d=_d: data(_d, (2, 3, 5)))
case("fft", "irfft-2d-c128", lambda x: F.fft(x, "IRFFT", (3, 4)), data("c128", (2, 3, 3)))
case("fft", "fft-empty", lambda x: F.fft(x, "FFT", (3,)), data("c64", (0, 3)))

# linear algebra (well-conditioned matrices)


def spd(dtype: str, n: int = 3, seed: int = 0) -> Tensor:
    a = data(dtype, (n, n), seed=seed).numpy().astype(np.complex128)
    m = a @ a.conj().T + n * np.eye(n)
    return of(dtype, m if rt.dtype(dtype).kind == "complex" else m.real)


def triangular(dtype: str, lower: bool, n: int = 3) -> Tensor:
    a = data(dtype, (n, n)).numpy().astype(np.complex128)
    m = (np.tril(a) if lower else np.triu(a)) + 3 * np.eye(n)
    # garbage in the unread triangle must stay unread
    m = m + (np.triu(np.ones((n, n)), 1) if lower else np.tril(np.ones((n, n)), -1)) * 100
    return of(dtype, m if rt.dtype(dtype).kind == "complex" else m.real)


for _d in ("f32", "f64", "c64", "c128"):
    case("cholesky", _d, F.cholesky, lambda _d=_d: spd(_d))
case("cholesky", "not-positive-definite", F.cholesky, of("f64", [[1.0, 2.0], [2.0, 1.0]]))
for _d, _flags in (("f64", {}), ("f32", {"left_side": True, "lower": True}),
                   ("c64", {"left_side": True, "transpose_a": True, "conjugate_a": True}),
                   ("c128", {"lower": True, "unit_diagonal": True}), ("f64", {"transpose_a": True})):  # fmt: skip
    lower = bool(_flags.get("lower"))
    b_shape = (3, 2) if _flags.get("left_side") else (2, 3)
    case("triangular_solve", f"{_d}-{'-'.join(_flags) or 'default'}",
         lambda a, b, fl=_flags: F.triangular_solve(a, b, **fl),
         lambda _d=_d, lower=lower: triangular(_d, lower), lambda _d=_d, s=b_shape: data(_d, s, seed=2))  # fmt: skip


def eigh_invariants(x: Tensor, lower: bool = True) -> tuple[Tensor, Tensor]:
    """Eigenvalues, and |v|^2 per entry (eigenvectors are unique only up to a phase)."""
    v, w = F.eigh(x, lower)
    mag = F.mul(v, F.conj(v))
    return w, (F.real(mag) if mag.dtype.kind == "complex" else mag)


for _d in ("f32", "f64", "c64", "c128"):
    case("eigh", _d, eigh_invariants, lambda _d=_d: spd(_d, seed=4))
case("eigh", "upper", lambda x: eigh_invariants(x, lower=False), spd("f64", seed=5))


def square(dtype: str, n: int = 3, seed: int = 6) -> Tensor:
    """Well conditioned: a random matrix plus a multiple of the identity."""
    return of(dtype, data(dtype, (n, n), seed=seed).numpy() + 3 * np.eye(n))


def _abs2(x: Tensor) -> Tensor:
    mag = F.mul(x, F.conj(x))
    return F.real(mag) if mag.dtype.kind == "complex" else mag


for _d in ("f32", "f64", "c64", "c128"):
    case("lu", _d, F.lu, lambda _d=_d: square(_d))
    case("qr", _d, lambda x: F.qr(x, full_matrices=False), lambda _d=_d: data(_d, (4, 3), seed=7))
    case("geqrf", _d, F.geqrf, lambda _d=_d: data(_d, (4, 3), seed=14))
    case("svd", _d, lambda x: F.svd(x, full_matrices=False), lambda _d=_d: data(_d, (3, 4), seed=8))
    # eigenvalue order and eigenvector phases are LAPACK's on both sides; the sum of |vr|^2 per row is
    # invariant to both, and the eigenvalues' sum and product to the order
    case("eig", _d, lambda x: F.eigvals(x), lambda _d=_d: square(_d, seed=9))
case("lu", "wide-batched", F.lu, data("f64", (2, 3, 5), seed=10))
case("qr", "full-wide", F.qr, data("c128", (3, 5), seed=11))
case("svd", "values-only", lambda x: F.svd(x, compute_uv=False), data("f64", (2, 4, 3), seed=12))
case("eig", "right-vectors", lambda x: F.reduce_sum(_abs2(F.eig(x, False, True)[1]), (1,)), square("c128", seed=13))

# user calls: a function and its custom rule, lowered to jax.custom_jvp / jax.custom_vjp
# (tests/autodiff/test_custom_rules.py differentiates the lowered programs with JAX)
for _d in ("f32", "c128", "i32"):
    case("custom_jvp_call", _d, lambda x: F.mul(parity.custom_transpose(x), 2), lambda _d=_d: data(_d))
    case("custom_vjp_call", _d, lambda x: F.mul(parity.custom_vjp_transpose(x), 2), lambda _d=_d: data(_d))


CASE_IDS = [c.id for c in CASES]


# -- tests -------------------------------------------------------------------------------------------


def test_every_op_of_the_vocabulary_has_a_lowering() -> None:
    missing = sorted(set(ops.OPS) - set(LOWERINGS))
    assert not missing, f"ops without a JAX lowering: {missing}"
    assert not set(LOWERINGS) - set(ops.OPS), "lowerings for ops that are not declared"
    for name, rule in LOWERINGS.items():
        assert rule.__doc__, f"the lowering of {name} has no docstring"


def test_the_table_covers_the_whole_vocabulary() -> None:
    covered = {c.op for c in CASES}
    assert not set(ops.OPS) - covered, f"no lowering case for {sorted(set(ops.OPS) - covered)}"


def test_importing_passes_does_not_import_jax() -> None:
    import subprocess
    import sys

    code = "import sys, passes, autodiff; assert 'jax' not in sys.modules, 'jax imported eagerly'"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("c", CASES, ids=CASE_IDS)
def test_each_op_lowers_to_lax_and_matches_the_interpreter(c: Case) -> None:
    graph, args = c.graph()
    assert c.op in {e.op.name for e in graph.eqns}, f"{c.op} is not in the traced graph:\n{graph}"
    check_graph(graph, args, c.id)


def _differentiable_case(op: str) -> Case | None:
    for c in CASES:
        if c.op != op or c.build is not None:
            continue
        _, args = c.make()
        if any(a.dtype.is_inexact for a in args):
            return c
    return None


#: differentiable ops whose derivative is refused whatever the input, as JAX refuses it
_NO_DERIVATIVE = {"geqrf"}
DIFF_CASES = [
    c
    for name, op in ops.OPS.items()
    if op.differentiable and name not in _NO_DERIVATIVE and (c := _differentiable_case(name))
]


@pytest.mark.parametrize("c", DIFF_CASES, ids=[c.id for c in DIFF_CASES])
def test_vjp_programs_of_every_differentiable_op_lower(c: Case) -> None:
    fn, args = c.make()
    out = fn(*args)
    outs = list(out) if isinstance(out, tuple) else [out]
    cts = [data(o.dtype, o.shape, seed=7) for o in outs]

    def pullback(*xs: Tensor) -> list[Tensor]:
        primals, cotangents = xs[: len(args)], xs[len(args) :]
        _, vjp_fn = autodiff.vjp(fn, *primals)
        grads = vjp_fn(tuple(cotangents) if isinstance(out, tuple) else cotangents[0])
        return [g for g in grads if g is not None]

    graph = rt.trace(pullback, *args, *cts)
    check_graph(graph, [*args, *cts], f"vjp of {c.id}")


def test_jvp_and_vjp_programs_with_mixed_dtypes_lower() -> None:
    # the derivative programs of tests/autodiff/test_api.py, over promoting inputs
    def f(a: Tensor, b: Tensor) -> Tensor:
        return F.add(F.mul(F.sin(a), F.exp(b)), F.reduce_sum(F.mul(a, F.conj(b)), (0,)))

    a, b, ta, tb = data("f32", (3,)), data("c128", (3,), seed=1), data("f32", (3,), seed=2), data("c128", (3,), seed=3)
    jvp_graph = rt.trace(lambda x, y, tx, ty: autodiff.jvp(f, (x, y), (tx, ty))[1], a, b, ta, tb)
    assert "convert" in str(jvp_graph)
    check_graph(jvp_graph, [a, b, ta, tb], "jvp")
    vjp_graph = rt.trace(lambda x, y, ct: list(autodiff.vjp(f, x, y)[1](ct)), a, b, data("c128", (3,), seed=4))
    check_graph(vjp_graph, [a, b, data("c128", (3,), seed=4)], "vjp")

    # second order: the gradient of a gradient is a graph that lowers too
    def loss(x: Tensor) -> Tensor:
        return F.reduce_sum(F.mul(F.tanh(x), F.tanh(x)), (0,))

    hvp_graph = rt.trace(lambda x, v: autodiff.jvp(autodiff.grad(loss), (x,), (v,))[1], a, ta)
    check_graph(hvp_graph, [a, ta], "hvp")


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs(max_ops=12))
def test_random_programs_and_their_jvps_lower(prog: Any) -> None:
    values = [rt.asarray(v) for v in prog.inputs()]
    graph = rt.trace(lambda *xs: prog.run(list(xs)), *values)
    check_graph(graph, values, "primal", jit=_xla_keeps_semantics(graph))
    active = [v for v in values if v.dtype.is_inexact]
    if not active:
        return
    tangents = [data(v.dtype, v.shape, seed=i) for i, v in enumerate(active)]

    def push(*xs: Tensor) -> list[Tensor]:
        primals, ts = list(xs[: len(values)]), iter(xs[len(values) :])
        tan = [next(ts) if p.dtype.is_inexact else None for p in primals]
        _, out = autodiff.jvp(lambda *p: [o for o in prog.run(list(p)) if o.dtype.is_inexact], primals, tan)
        return list(out)

    if not any(o.dtype.is_inexact for o in prog.run(values)):
        return
    jvp_graph = rt.trace(push, *values, *tangents)
    check_graph(jvp_graph, [*values, *tangents], "jvp", jit=_xla_keeps_semantics(jvp_graph))


def _xla_keeps_semantics(graph: Graph) -> bool:
    """False for graphs where XLA's simplifier may change the value that ``lax`` op by op computes.

    XLA rewrites ``max(lo, clamp(lo, x, hi))`` to the clamp, which is wrong when
    ``lo > hi`` (random programs draw such bounds): ``jax.jit`` then differs
    from ``lax`` eager and from the StableHLO spec, which castwise follows.
    Such graphs are checked op by op; ``test_xla_simplifies_clamp_with_crossed_bounds``
    pins the XLA behaviour so this exemption is revisited when it changes.
    """
    return "clamp" not in {e.op.name for e in graph.eqns}


def test_xla_simplifies_clamp_with_crossed_bounds() -> None:
    c, one = np.array([-1.9, 1.25, 1.65], np.float32), np.ones(3, np.float32)
    b = GraphBuilder()
    lo, bound = b.input("f32", (3,)), b.input("f32", (3,))
    graph = b.build(b.raw("max", lo, b.raw("clamp", lo, bound, bound, out=("f32", (3,))), out=("f32", (3,))))
    want = rt.evaluate(graph, c, one)[0].numpy()
    np.testing.assert_array_equal(want, np.maximum(c, np.minimum(np.maximum(one, c), one)))  # the spec's clamp
    np.testing.assert_array_equal(run_lowered(graph, [c, one], jit=False)[0], want)  # lax op by op agrees
    jitted = run_lowered(graph, [c, one])[0]
    assert not np.array_equal(jitted, want), "XLA no longer rewrites max(lo, clamp(lo, x, hi)): drop the exemption"


# -- lowering checks promotion independently ----------------------------------------------------------

_POINT = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))


def _raw_graphs() -> list[tuple[str, Graph, list[np.ndarray]]]:
    """Raw (unpromoted) graphs of every promoting family, as a recording without converts stores them."""
    x64, c128 = np.array([1.0, 2.0, 3.0]), np.array([1j, 2.0, -1j])
    out = []
    b = GraphBuilder()
    x, y = b.input("f64", (3,)), b.input("c128", (3,))
    out.append(("binary", b.build(b.raw("add", x, y, out=("c128", (3,)))), [x64, c128]))
    b = GraphBuilder()
    x, y = b.input("i32", (3,)), b.input("f32", (3,))
    out.append(("compare", b.build(b.raw("lt", x, y, out=("bool", (3,)))),
                [np.array([1, 2, 3], np.int32), np.array([2.5, 0.5, 3.0], np.float32)]))  # fmt: skip
    b = GraphBuilder()
    p, x, y = b.input("bool", (3,)), b.input("f32", (3,)), b.input("f64", (3,))
    out.append(("select", b.build(b.raw("select", p, x, y, out=("f64", (3,)))),
                [np.array([True, False, True]), np.ones(3, np.float32), x64]))  # fmt: skip
    b = GraphBuilder()
    lo, x, hi = b.input("i32", ()), b.input("f32", (3,)), b.input("f64", ())
    out.append(("clamp", b.build(b.raw("clamp", lo, x, hi, out=("f64", (3,)))),
                [np.array(1, np.int32), np.array([0.0, 2.0, 5.0], np.float32), np.array(3.0)]))  # fmt: skip
    b = GraphBuilder()
    x, y = b.input("f32", (3,)), b.input("c64", (3,))
    out.append(("concatenate", b.build(b.raw("concatenate", x, y, dimension=0, out=("c64", (6,)))),
                [np.ones(3, np.float32), c128.astype(np.complex64)]))  # fmt: skip
    b = GraphBuilder()
    x, y = b.input("f32", (2, 3)), b.input("f64", (3, 2))
    out.append(("dot_general", b.build(b.raw("dot_general", x, y, dimension_numbers=(((1,), (0,)), ((), ())),
                                             out=("f64", (2, 2)))),
                [np.ones((2, 3), np.float32), np.ones((3, 2))]))  # fmt: skip
    b = GraphBuilder()
    x, i, u = b.input("f32", (4,)), b.input("i32", (2, 1)), b.input("f64", (2,))
    out.append(("scatter_add", b.build(b.raw("scatter_add", x, i, u, dimension_numbers=_POINT, out=("f64", (4,)))),
                [np.ones(4, np.float32), np.array([[0], [2]], np.int32), np.array([0.5, 1.5])]))  # fmt: skip
    b = GraphBuilder()
    x, u, s = b.input("i8", (4,)), b.input("i16", (2,)), b.input("i32", ())
    out.append(("dynamic_update_slice", b.build(b.raw("dynamic_update_slice", x, u, s, out=("i16", (4,)))),
                [np.arange(4, dtype=np.int8), np.array([7, 8], np.int16), np.array(1, np.int32)]))  # fmt: skip
    return out


RAW = _raw_graphs()


@pytest.mark.parametrize("name,graph,args", RAW, ids=[r[0] for r in RAW])
def test_unpromoted_graphs_fail_with_lax_dtype_errors_and_promoted_ones_lower(
    name: str, graph: Graph, args: list[np.ndarray]
) -> None:
    with pytest.raises(TypeError, match=r"(same dtypes|must have the same dtype|dtypes must match|same dtype)") as err:
        run_lowered(graph, args)
    assert any("while lowering to jax.lax" in note for note in getattr(err.value, "__notes__", [])), (
        "the failing equation is not attached to lax's error"
    )
    promoted = promote(graph)
    check_graph(promoted, [rt.asarray(a) for a in args], f"promoted {name}")


def test_lowering_rejects_inputs_of_the_wrong_dtype_or_shape() -> None:
    graph = rt.trace(F.sin, data("f32", (3,)))
    fn = lower_to_jax(graph)
    with pytest.raises(GraphError, match="f32"):
        fn(np.ones(3))  # float64: nothing is promoted at the boundary
    with pytest.raises(GraphError, match="takes 1 inputs"):
        fn()
    with pytest.raises(GraphError, match=r"\[4\]"):
        fn(np.ones(4, np.float32))


def test_lowering_reports_a_shape_rule_that_disagrees_with_lax() -> None:
    b = GraphBuilder()
    x = b.input("f32", (3,))
    graph = b.build(b.raw("sin", x, out=("f64", (3,))))  # a wrong record
    with pytest.raises(LoweringError, match="records f64"):
        lower_to_jax(graph)(np.ones(3, np.float32))


def test_dtypes_xla_lacks_are_refused_up_front() -> None:
    graph = rt.trace(lambda x: F.convert(x, "f6e2m3fn"), data("f32", (2,)))
    with pytest.raises(LoweringError, match="float6_e2m3fn"):
        lower_to_jax(graph)


def test_64_bit_graphs_run_eagerly_without_x64_and_refuse_to_trace_without_it() -> None:
    graph = rt.trace(F.exp, data("f64", (3,)))
    with jax.enable_x64(False):
        fn = lower_to_jax(graph)
        (out,) = fn(np.array([0.0, 1.0, 2.0]))  # eager: x64 is turned on for the call
        assert out.dtype == np.float64
        np.testing.assert_allclose(np.asarray(out), np.exp([0.0, 1.0, 2.0]), rtol=1e-15)
        with pytest.raises(LoweringError, match="enable_x64"):
            jax.jit(fn)(np.array([0.0, 1.0, 2.0]))


@pytest.mark.parametrize("fn,args", [
    (lambda x: F.convert(x, "f32"), [of("f64", [1e-39, -1e-41])]),
    (lambda x: F.convert(x, "bf16"), [of("f64", [-1e-40])]),
    (F.mul, [of("f32", [1e-20]), of("f32", [1e-20])]),
    (lambda x: F.add(x, x), [of("f32", [1e-40])]),
    (F.mul, [of("f64", [1e-200]), of("f64", [1e-120])]),
], ids=["f64-to-f32", "f64-to-bf16", "f32-mul", "f32-subnormal-input", "f64-mul"])  # fmt: skip
def test_subnormals_are_kept_where_xla_cpu_flushes_them(fn: Callable[..., Any], args: list[Tensor]) -> None:
    """A documented departure (runtime/core/kernels/, docs/jax.md): castwise's kernels
    follow IEEE gradual underflow like NumPy; XLA on CPU flushes subnormals to zero."""
    if jax.default_backend() != "cpu":
        pytest.skip("flushing subnormals is XLA CPU's behaviour")
    graph = rt.trace(fn, *args)
    (eager,) = rt.evaluate(graph, *args)
    (lowered,) = run_lowered(graph, args)
    tiny = np.finfo(np.float32).tiny if eager.dtype is not rt.float64 else np.finfo(np.float64).tiny
    wide = eager.numpy().astype(np.float64)
    assert np.all(wide != 0) and np.all(np.abs(wide) < tiny), "castwise keeps the subnormal result"
    assert np.all(np.asarray(lowered, dtype=np.float64) == 0), "XLA CPU flushes it to zero"


def test_graph_outputs_that_are_inputs_or_constants_lower() -> None:
    c = rt.asarray(np.array([1.0, 2.0], np.float32))
    graph = rt.trace(lambda x: (x, c, F.add(x, c)), data("f32", (2,)))
    check_graph(graph, [data("f32", (2,))], "passthrough")


def test_uniform_constants_become_broadcast_scalars() -> None:
    assert uniform_value(np.array([0.0, -0.0])) is None  # equal, but not the same bits
    assert uniform_value(np.array([1.0, 2.0])) is None
    assert uniform_value(np.full(3, np.nan)) is not None
    assert uniform_value(np.ones(1)) is None  # a single element stays as it is
    ones = rt.asarray(np.ones((16, 16), np.float32))
    ramp = rt.asarray(np.arange(16, dtype=np.float32))
    graph = rt.trace(lambda x: (F.sub(ones, F.mul(x, x)), F.add(F.reduce_sum(x, (0,)), ramp)), data("f32", (16, 16)))
    check_graph(graph, [data("f32", (16, 16))], "constants")
    text = export_stablehlo(graph)
    assert "dense<1.000000e+00> : tensor<f32>" in text  # the ones: one scalar, broadcast
    assert "dense<1.000000e+00> : tensor<16x16xf32>" not in text  # no 16x16 literal of ones
    assert "dense<[0.000000e+00, 1.0" in text  # a non-uniform constant stays a literal


def test_export_stablehlo_writes_the_lax_program() -> None:
    graph = rt.trace(lambda x, y: F.tanh(F.add(x, y)), data("f32", (2, 3)), data("f64", (2, 3)))
    text = export_stablehlo(graph)
    assert "stablehlo.tanh" in text and "stablehlo.convert" in text
    assert "tensor<2x3xf32>" in text and "tensor<2x3xf64>" in text
    assert "func.func public @main" in text
