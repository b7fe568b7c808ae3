"""Traced parameters, traced indices and NumPy views: every transform agrees with eager execution
of the same program, or raises a castwise error that names the function and the parameter.

docs/autodiff.md ("Traced parameters and indices"), docs/jax.md and docs/tensor.md ("NumPy
views") state the rules; these tests hold them, table-driven:

- every parameter of every NumPy-named function (``rt.nn``, ``elementwise``, ``manipulation``,
  ``arange``) has a row: an **operand** row (a 0-d Tensor is traced: ``autodiff.jit`` called with
  a new value, ``autodiff.vmap`` over a batch of values, ``rt.trace`` + ``evaluate`` and ``grad``
  agree with eager calls and with ``jax.jit`` / ``jax.vmap``), a **concrete** row (a traced one
  is refused, naming the function and the parameter, as ``jax.jit`` raises
  ``ConcretizationTypeError``), or it is an array operand. A new function's parameter without a
  row fails ``test_every_parameter_has_a_row``;
- traced integer indices: where the policy's rule is traceable (jax.numpy's clamp, fill and
  drop; ``mode='clip' | 'fill' | 'wrap'``) replays agree with eager and JAX on later,
  out-of-bounds indices; where the rule checks bounds eagerly (NumPy's and PyTorch's
  ``IndexError``, ``mode='raise'``) tracing is refused;
- NumPy views of a Tensor are read-only; the fixed bugs (``gelu(approximate='none')``,
  ``nan_to_num`` of integers, errors that named another function) have their rows.
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
from runtime.core import executor
from runtime.numpy import arrays as npa
from runtime.numpy import creation, linalg, nn
from runtime.numpy import elementwise as npe
from runtime.numpy import manipulation as mp
from runtime.numpy import math_functions as npm
from runtime.numpy import nan_functions as npn
from runtime.numpy import numerics as npx
from runtime.numpy import shared_names as sn

jax.config.update("jax_enable_x64", True)

X = np.array([-2.0, -0.5, 0.0, 0.7, 3.0])
SPECIAL = np.array([np.nan, np.inf, -np.inf, 1.5, -2.0])
A = np.array([1.0, 2.0, 3.0, np.inf, 5.0])
B = A + np.array([1e-3, 0.5, -2e-5, 0.0, 0.02])
M = np.arange(6.0).reshape(2, 3) - 2.0

CASTWISE_ERRORS = (TypeError, ValueError, IndexError)  # ShapeError, OpTypeError, ConcretizationError ...


def _t(value: Any, dtype: Any) -> rt.Tensor:
    """A strong 0-d (or batched) Tensor of ``dtype``."""
    return rt.asarray(np.asarray(value, dtype))


# -- A: scalar parameters that are operands ---------------------------------------------------


@dataclass(frozen=True)
class Operand:
    """A scalar parameter used as an operand: ``ours(v)`` calls the function with it, ``theirs(v)``
    is JAX's same call (traceable in ``v`` unless ``jax_traces`` is False: JAX refuses it under
    ``jit``, and its oracle runs with the Python value)."""

    fn: str
    param: str
    ours: Callable[[Any], rt.Tensor]
    theirs: Callable[[Any], Any]
    values: tuple[Any, Any]
    dtype: Any = np.float64
    grad: bool = True
    jax_traces: bool = True

    def __str__(self) -> str:
        return f"{self.fn}-{self.param}"


def _gelu_jax(a: Any) -> Any:
    return jax.nn.gelu(X, approximate=bool(a))


OPERANDS = [
    Operand("nn.leaky_relu", "negative_slope", lambda a: nn.leaky_relu(rt.asarray(X), negative_slope=a),
            lambda a: jax.nn.leaky_relu(X, a), (0.1, 0.5)),
    Operand("nn.elu", "alpha", lambda a: nn.elu(rt.asarray(X), alpha=a), lambda a: jax.nn.elu(X, a), (0.5, 2.0)),
    Operand("nn.gelu", "approximate", lambda a: nn.gelu(rt.asarray(X), approximate=a), _gelu_jax, (True, False),
            np.bool_, grad=False, jax_traces=False),
    Operand("nn.standardize", "epsilon", lambda e: nn.standardize(rt.asarray(X), epsilon=e),
            lambda e: jax.nn.standardize(X, epsilon=e), (1e-5, 4.0)),
    Operand("nan_to_num", "nan", lambda v: npe.nan_to_num(rt.asarray(SPECIAL), nan=v),
            lambda v: jnp.nan_to_num(SPECIAL, nan=v), (0.0, 7.0)),
    Operand("nan_to_num", "posinf", lambda v: npe.nan_to_num(rt.asarray(SPECIAL), posinf=v),
            lambda v: jnp.nan_to_num(SPECIAL, posinf=v), (1e3, -4.0)),
    Operand("nan_to_num", "neginf", lambda v: npe.nan_to_num(rt.asarray(SPECIAL), neginf=v),
            lambda v: jnp.nan_to_num(SPECIAL, neginf=v), (-1e3, 4.0)),
    Operand("lerp", "weight", lambda w: npe.lerp(rt.asarray(X), rt.asarray(X[::-1].copy()), w),
            lambda w: X + w * (X[::-1] - X), (0.25, 0.75)),
    Operand("addcdiv", "value", lambda v: npe.addcdiv(rt.asarray(X), rt.asarray(X), rt.asarray(SPECIAL), value=v),
            lambda v: X + v * (X / SPECIAL), (2.0, -0.5)),
    Operand("isclose", "rtol", lambda r: npe.isclose(A, B, rtol=r), lambda r: jnp.isclose(A, B, rtol=r),
            (1e-5, 0.3), grad=False),
    Operand("isclose", "atol", lambda r: npe.isclose(A, B, atol=r), lambda r: jnp.isclose(A, B, atol=r),
            (1e-8, 0.1), grad=False),
    Operand("clip", "min", lambda m: npe.clip(rt.asarray(X), min=m), lambda m: jnp.clip(X, min=m), (-1.0, 0.5)),
    Operand("clip", "max", lambda m: npe.clip(rt.asarray(X), max=m), lambda m: jnp.clip(X, max=m), (1.0, -0.25)),
    Operand("trapezoid", "dx", lambda d: npa.trapezoid(rt.asarray(X), dx=d), lambda d: jnp.trapezoid(X, dx=d),
            (0.5, 2.0)),
    Operand("interp", "left", lambda v: npx.interp(rt.asarray(X), rt.asarray(A[:3]), rt.asarray(B[:3]), left=v),
            lambda v: jnp.interp(X, A[:3], B[:3], left=v), (-1.0, 5.0)),
    Operand("interp", "right", lambda v: npx.interp(rt.asarray(X + 2), rt.asarray(A[:3]), rt.asarray(B[:3]), right=v),
            lambda v: jnp.interp(X + 2, A[:3], B[:3], right=v), (-1.0, 5.0)),
    Operand("logspace", "start", lambda v: npx.logspace(v, 2.0, 3), lambda v: jnp.logspace(v, 2.0, 3), (0.5, 1.0)),
    Operand("logspace", "stop", lambda v: npx.logspace(0.0, v, 3), lambda v: jnp.logspace(0.0, v, 3), (1.0, 1.5)),
    Operand("logspace", "base", lambda b: npx.logspace(0.0, 2.0, 3, base=b),
            lambda b: jnp.logspace(0.0, 2.0, 3, base=b), (2.0, 10.0)),
]  # fmt: skip


def _eager(row: Operand, v: Any) -> np.ndarray:
    return row.ours(v).numpy()


def _close(got: Any, want: Any) -> None:
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype == np.bool_:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_the_rows_tell_the_values_apart() -> None:
    for row in OPERANDS:  # a row whose two values give one result could not catch a frozen parameter
        first, second = (_eager(row, v) for v in row.values)
        assert not np.array_equal(first, second, equal_nan=True), row


@pytest.mark.parametrize("row", OPERANDS, ids=str)
def test_jit_uses_each_calls_parameter(row: Operand) -> None:
    f = autodiff.jit(row.ours)
    for v in row.values:
        got = f(_t(v, row.dtype)).numpy()
        _close(got, _eager(row, v))  # eager castwise with the Python value
        _close(got, row.ours(_t(v, row.dtype)).numpy())  # and with the 0-d Tensor
        want = jax.jit(row.theirs)(v) if row.jax_traces else row.theirs(v)
        _close(got, want)
    assert f.traces == 1  # one trace serves both values: the parameter is traced, not baked in


@pytest.mark.parametrize("row", OPERANDS, ids=str)
def test_vmap_gives_each_example_its_parameter(row: Operand) -> None:
    batch = np.asarray(row.values, row.dtype)
    got = autodiff.vmap(row.ours)(rt.asarray(batch)).numpy()
    _close(got, np.stack([_eager(row, v) for v in row.values]))
    if row.jax_traces:
        _close(got, jax.vmap(row.theirs)(batch))
    _close(autodiff.jit(autodiff.vmap(row.ours))(rt.asarray(batch)).numpy(), got)


@pytest.mark.parametrize("row", OPERANDS, ids=str)
def test_trace_and_evaluate_replay_with_a_new_parameter(row: Operand) -> None:
    first, second = row.values
    graph = rt.trace(row.ours, _t(first, row.dtype))
    (out,) = rt.evaluate(graph, _t(second, row.dtype))
    np.testing.assert_array_equal(out.numpy(), _eager(row, second))  # the same kernels: bit for bit


@pytest.mark.parametrize("row", [r for r in OPERANDS if r.grad], ids=str)
def test_grad_in_the_parameter_matches_jax(row: Operand) -> None:
    def loss(a: rt.Tensor) -> rt.Tensor:
        return row.ours(a).sum()

    for v in row.values:
        want = jax.grad(lambda a: jnp.sum(row.theirs(a)))(v)
        _close(autodiff.grad(loss)(_t(v, row.dtype)).numpy(), want)
        _close(autodiff.jit(autodiff.grad(loss))(_t(v, row.dtype)).numpy(), want)


# -- A: parameters that must be concrete --------------------------------------------------------


@dataclass(frozen=True)
class Concrete:
    """A parameter a traced value cannot give: ``call(v)`` passes ``v`` as it; under tracing a
    0-d Tensor of ``dtype`` is refused with an error naming ``fn`` and ``param`` (a
    ``ConcretizationError`` where a number would do eagerly: ``eager`` is then the Python
    value that works, and an untracked Tensor of it gives the same result)."""

    fn: str
    param: str
    call: Callable[[Any], Any]
    dtype: Any = np.int64
    eager: Any = None
    concretization: bool = False
    #: JAX's same call (``eager`` as its parameter), where JAX refuses a traced one too
    theirs: Callable[[Any], Any] | None = None
    mentions: tuple[str, ...] = field(default=())

    def __str__(self) -> str:
        return f"{self.fn}-{self.param}"


L = np.array([0, 2, 1])
IDX = np.array([[0, 2, 1], [1, 1, 0]])


def _kw(f: Callable[..., Any], *args: Any, **base: Any) -> Callable[[str], Callable[[Any], Any]]:
    """``f(*args, **base)`` with one more keyword: the row's parameter."""
    return lambda param: lambda v: f(*args, **{**base, param: v})


_REDUCTIONS: dict[str, tuple[Callable[..., Any], tuple[str, ...]]] = {
    "all": (npe.all, ("axis", "keepdims")),
    "any": (npe.any, ("axis", "keepdims")),
    "count_nonzero": (npe.count_nonzero, ("axis", "keepdims")),
    "mean": (npe.mean, ("axis", "keepdims", "dtype")),
    "prod": (npe.prod, ("axis", "keepdims", "dtype")),
    "std": (npe.std, ("axis", "ddof", "keepdims", "correction")),
    "sum": (npe.sum, ("axis", "keepdims", "dtype")),
    "var": (npe.var, ("axis", "ddof", "keepdims", "correction")),
}


def _reduction_rows(table: dict[str, tuple[Callable[..., Any], tuple[str, ...]]] | None = None,
                    axis_mentions: bool = False) -> list[Concrete]:  # fmt: skip
    """A row per (function, parameter) of ``table`` (default: the reductions): ``keepdims`` a
    concretization, the others refused naming the function (and, unless ``axis_mentions``, the
    parameter: an axis error names the function only)."""
    rows = []
    for name, (f, params) in (table or _REDUCTIONS).items():
        for p in params:
            base = {"axis": 0} if p != "axis" else {}
            call = _kw(f, rt.asarray(M), **base)(p)
            if p == "keepdims":
                rows.append(Concrete(name, p, call, np.bool_, True, concretization=True))
            else:
                rows.append(Concrete(name, p, call, mentions=(name,) if axis_mentions and p == "axis" else ()))
    return rows


T3 = np.arange(24.0).reshape(2, 3, 4)

#: the new NumPy-named functions' concrete parameters other than the ones with rows of their own
_AXIS_FUNCTIONS: dict[str, tuple[Callable[..., Any], tuple[str, ...]]] = {
    **{n: (getattr(npn, n), ("axis", "keepdims")) for n in ("nanmax", "nanmin", "nanargmax", "nanargmin", "ptp")},
    **{n: (getattr(npn, n), ("axis", "keepdims", "dtype")) for n in ("nansum", "nanprod", "nanmean")},
    **{n: (getattr(npn, n), ("axis", "keepdims", "dtype")) for n in ("nanvar", "nanstd")},
    **{n: (getattr(npn, n), ("axis", "dtype")) for n in ("nancumsum", "nancumprod")},
    **{n: (getattr(npn, n), ("axis",)) for n in ("median", "nanmedian")},
    "average": (npn.average, ("axis", "keepdims")),
    "diff": (npa.diff, ("axis",)),
    "trapezoid": (npa.trapezoid, ("axis",)),
    "append": (lambda a, **kw: npa.append(a, a, **kw), ("axis",)),
    "array_split": (lambda a, **kw: npa.array_split(a, 2, **kw)[0], ("axis",)),
}
_QUANTILES = ("quantile", "nanquantile", "percentile", "nanpercentile")


def _axis_rows() -> list[Concrete]:
    quantiles = {n: (lambda a, n=n, **kw: getattr(npn, n)(a, 0.5, **kw), ("axis",)) for n in _QUANTILES}
    rows = _reduction_rows({**_AXIS_FUNCTIONS, **quantiles}, axis_mentions=True)
    rows.append(Concrete("size", "axis", lambda a: rt.asarray(npa.size(rt.asarray(M), a)), mentions=("size", "axis")))
    return rows


CONCRETE = [
    *_reduction_rows(),
    Concrete("arange", "start", lambda n: creation.arange(n), eager=4, concretization=True,
             theirs=lambda n: jnp.arange(n)),
    Concrete("arange", "stop", lambda n: creation.arange(1, n), eager=4, concretization=True,
             theirs=lambda n: jnp.arange(1, n)),
    Concrete("arange", "step", lambda s: creation.arange(0, 7, s), eager=2, concretization=True,
             theirs=lambda s: jnp.arange(0, 7, s)),
    Concrete("arange", "dtype", lambda d: creation.arange(3, dtype=d)),
    Concrete("nn.one_hot", "num_classes", lambda n: nn.one_hot(rt.asarray(L), n), eager=3, concretization=True,
             theirs=lambda n: jax.nn.one_hot(L, n)),
    Concrete("nn.one_hot", "axis", lambda a: nn.one_hot(rt.asarray(L), 3, axis=a)),
    Concrete("nn.one_hot", "dtype", lambda d: nn.one_hot(rt.asarray(L), 3, dtype=d)),
    Concrete("nn.softmax", "axis", lambda a: nn.softmax(rt.asarray(M), axis=a)),
    Concrete("nn.log_softmax", "axis", lambda a: nn.log_softmax(rt.asarray(M), axis=a)),
    Concrete("nn.standardize", "axis", lambda a: nn.standardize(rt.asarray(M), axis=a)),
    Concrete("nn.standardize", "algorithm", lambda a: nn.standardize(rt.asarray(M), algorithm=a)),
    Concrete("isclose", "equal_nan", lambda e: npe.isclose(A, B, equal_nan=e), np.bool_, True, concretization=True),
    Concrete("allclose", "rtol", lambda r: rt.asarray(npe.allclose(A, B, rtol=r)), np.float64, 0.3,
             concretization=True, mentions=("allclose", "Python bool")),
    Concrete("allclose", "atol", lambda r: rt.asarray(npe.allclose(A, B, atol=r)), np.float64, 0.1,
             concretization=True, mentions=("allclose", "Python bool")),
    Concrete("allclose", "equal_nan", lambda e: rt.asarray(npe.allclose(A, B, equal_nan=e)), np.bool_, True,
             concretization=True),
    Concrete("take", "axis", lambda a: mp.take(rt.asarray(M), [0], axis=a)),
    Concrete("take", "mode", lambda m: mp.take(rt.asarray(M), [0], mode=m)),
    Concrete("take", "fill_value", lambda f: mp.take(rt.asarray(X), [0, 9], fill_value=f), np.float64, -1.0,
             concretization=True),
    Concrete("take_along_axis", "axis", lambda a: mp.take_along_axis(rt.asarray(M), IDX, a)),
    Concrete("take_along_axis", "mode", lambda m: mp.take_along_axis(rt.asarray(M), IDX, 1, mode=m)),
    Concrete("take_along_axis", "fill_value", lambda f: mp.take_along_axis(rt.asarray(M), IDX + 2, 1, fill_value=f),
             np.float64, -1.0, concretization=True),
    Concrete("broadcast_to", "shape", lambda s: mp.broadcast_to(rt.asarray(X), s)),
    Concrete("flip", "axis", lambda a: mp.flip(rt.asarray(M), a)),
    Concrete("moveaxis", "source", lambda a: mp.moveaxis(rt.asarray(M), a, 0)),
    Concrete("moveaxis", "destination", lambda a: mp.moveaxis(rt.asarray(M), 0, a)),
    Concrete("swapaxes", "axis1", lambda a: mp.swapaxes(rt.asarray(M), a, 0)),
    Concrete("swapaxes", "axis2", lambda a: mp.swapaxes(rt.asarray(M), 0, a)),
    Concrete("roll", "shift", lambda s: mp.roll(rt.asarray(X), s)),
    Concrete("roll", "axis", lambda a: mp.roll(rt.asarray(M), 1, a)),
    Concrete("tensordot", "axes", lambda a: mp.tensordot(rt.asarray(M), rt.asarray(M), a)),
    Concrete("einsum", "subscripts", lambda s: mp.einsum(s, rt.asarray(X))),
    *[Concrete(name, "preferred_element_type", _kw(getattr(sn if name == "dot" else mp, name), rt.asarray(X),
                                                   rt.asarray(X))("preferred_element_type"))
      for name in ("dot", "inner")],
    Concrete("tensordot", "preferred_element_type",
             lambda p: mp.tensordot(rt.asarray(X), rt.asarray(X), 1, preferred_element_type=p)),
    Concrete("einsum", "preferred_element_type",
             lambda p: mp.einsum("i,i", rt.asarray(X), rt.asarray(X), preferred_element_type=p)),
    *[Concrete(name, "precision", _kw(getattr(sn if name == "dot" else mp, name), rt.asarray(X), rt.asarray(X))(
        "precision")) for name in ("dot", "inner")],
    Concrete("tensordot", "precision", lambda p: mp.tensordot(rt.asarray(X), rt.asarray(X), 1, precision=p)),
    Concrete("einsum", "precision", lambda p: mp.einsum("i,i", rt.asarray(X), rt.asarray(X), precision=p)),
    # NumPy's math functions, NaN-ignoring reductions and array helpers
    Concrete("angle", "deg", lambda d: npm.angle(rt.asarray(X), deg=d), np.bool_, True, concretization=True),
    Concrete("around", "decimals", lambda d: npm.around(rt.asarray(X), d)),  # (round refuses any Tensor)
    *_axis_rows(),
    Concrete("nanvar", "ddof", lambda d: npn.nanvar(rt.asarray(M), ddof=d), eager=1, concretization=True),
    Concrete("nanstd", "ddof", lambda d: npn.nanstd(rt.asarray(M), ddof=d), eager=1, concretization=True),
    *[Concrete(name, "q", lambda q, name=name: getattr(npn, name)(rt.asarray(M), q), np.float64, 0.5)
      for name in ("quantile", "nanquantile")],
    *[Concrete(name, "q", lambda q, name=name: getattr(npn, name)(rt.asarray(M), q), np.float64, 50.0)
      for name in ("percentile", "nanpercentile")],
    *[Concrete(name, p, _kw(getattr(npn, name), rt.asarray(M), *([0.5] if "q" in name or "perc" in name else []))(p),
               np.bool_, True, concretization=p != "method")
      for name in ("quantile", "nanquantile", "percentile", "nanpercentile", "median", "nanmedian")
      for p in ("overwrite_input", "keepdims")],
    *[Concrete(name, "out", _kw(getattr(npn, name), rt.asarray(M), *([0.5] if name != "median" else []))("out"),
               mentions=(name, "out")) for name in ("quantile", "nanquantile", "percentile", "nanpercentile",
                                                    "median", "nanmedian")],
    *[Concrete(name, "method", _kw(getattr(npn, name), rt.asarray(M), 0.5)("method"), mentions=(name, "method"))
      for name in ("quantile", "nanquantile", "percentile", "nanpercentile")],
    Concrete("average", "returned", lambda r: npn.average(rt.asarray(M), returned=r)[0], np.bool_, True,
             concretization=True),
    Concrete("diff", "n", lambda n: npa.diff(rt.asarray(X), n), eager=1, concretization=True),
    Concrete("rot90", "k", lambda k: npa.rot90(rt.asarray(M), k), eager=1, concretization=True),
    Concrete("rot90", "axes", lambda a: npa.rot90(rt.asarray(M), 1, (a, 0)), mentions=("rot90",)),
    Concrete("array_split", "indices_or_sections", lambda n: npa.array_split(rt.asarray(X), n)[0], eager=2,
             concretization=True),
    *[Concrete(name, "indices_or_sections", lambda n, name=name: getattr(npa, name)(rt.asarray(T3), n)[0],
               eager=sections, concretization=True)
      for name, sections in (("hsplit", 3), ("vsplit", 2), ("dsplit", 2))],
    Concrete("tri", "N", lambda n: npa.tri(n), eager=3, concretization=True),
    Concrete("tri", "M", lambda m: npa.tri(2, m), eager=3, concretization=True),
    Concrete("tri", "k", lambda k: npa.tri(3, 3, k), eager=1, concretization=True),
    Concrete("tri", "dtype", lambda d: npa.tri(3, dtype=d)),
    Concrete("diagflat", "k", lambda k: npa.diagflat(rt.asarray(X), k), eager=1, concretization=True),
    Concrete("searchsorted", "side", lambda v: npx.searchsorted(rt.asarray(A), rt.asarray(B), side=v)),
    Concrete("digitize", "right", lambda r: npx.digitize(rt.asarray(X), rt.asarray(A), right=r), np.bool_, True,
             concretization=True),
    Concrete("interp", "period", lambda p: npx.interp(rt.asarray(X), rt.asarray(A), rt.asarray(B), period=p),
             np.float64, mentions=("interp", "period")),
    *[Concrete("isin", p, lambda v, p=p: npx.isin(rt.asarray(X), rt.asarray(A), **{p: v}), np.bool_, True,
               concretization=True) for p in ("assume_unique", "invert")],
    Concrete("vander", "N", lambda n: npx.vander(rt.asarray(X), n), eager=3, concretization=True),
    Concrete("vander", "increasing", lambda v: npx.vander(rt.asarray(X), increasing=v), np.bool_, True,
             concretization=True),
    *[Concrete(fn, "mode", lambda m, fn=fn: getattr(npx, fn)(rt.asarray(X), rt.asarray(A), m), mentions=(fn, "mode"))
      for fn in ("convolve", "correlate")],
    *[Concrete(fn, "rowvar", lambda r, fn=fn: getattr(npx, fn)(rt.asarray(M), rowvar=r), np.bool_, True,
               concretization=True) for fn in ("cov", "corrcoef")],
    Concrete("cov", "bias", lambda b: npx.cov(rt.asarray(M), bias=b), np.bool_, True, concretization=True),
    Concrete("cov", "ddof", lambda d: npx.cov(rt.asarray(M), ddof=d), eager=1, concretization=True),
    *[Concrete(w, "M", lambda n, w=w: getattr(npx, w)(n), eager=4, concretization=True)
      for w in ("hanning", "hamming", "blackman", "bartlett")],
    Concrete("logspace", "num", lambda n: npx.logspace(0.0, 1.0, n), eager=3, concretization=True),
    Concrete("logspace", "endpoint", lambda e: npx.logspace(0.0, 1.0, 3, endpoint=e), np.bool_, True,
             concretization=True),
    Concrete("logspace", "dtype", lambda d: npx.logspace(0.0, 1.0, 3, dtype=d)),
    Concrete("logspace", "axis", lambda a: npx.logspace(0.0, 1.0, 3, axis=a), mentions=("logspace", "axis")),
    *[Concrete("geomspace", p, lambda v, p=p: npx.geomspace(**{"start": 1.0, "stop": 8.0, "num": 4, p: v}),
               np.float64 if p in ("start", "stop") else np.int64, 2.0 if p in ("start", "stop") else 3,
               concretization=True) for p in ("start", "stop", "num")],
    Concrete("geomspace", "endpoint", lambda e: npx.geomspace(1.0, 8.0, 4, endpoint=e), np.bool_, True,
             concretization=True),
    Concrete("geomspace", "dtype", lambda d: npx.geomspace(1.0, 8.0, 4, dtype=d)),
    Concrete("geomspace", "axis", lambda a: npx.geomspace(1.0, 8.0, 4, axis=a), mentions=("geomspace", "axis")),
]  # fmt: skip


def _refused(row: Concrete, run: Callable[[], Any]) -> None:
    with pytest.raises(CASTWISE_ERRORS) as info:
        run()
    message = str(info.value)
    for word in row.mentions or (row.fn, row.param):
        assert word in message, (row, message)
    assert "policy 'jax'" in message, message
    if row.concretization:
        assert isinstance(info.value, rt.ConcretizationError), (row, type(info.value))


@pytest.mark.parametrize("row", CONCRETE, ids=str)
def test_a_traced_concrete_parameter_is_refused_naming_it(row: Concrete) -> None:
    value = row.eager if row.eager is not None else 1
    _refused(row, lambda: autodiff.jit(row.call)(_t(value, row.dtype)))
    _refused(row, lambda: autodiff.vmap(row.call)(_t([value, value], row.dtype)))
    _refused(row, lambda: rt.trace(row.call, _t(value, row.dtype)))
    # inside a grad inside jit (the grad's recorder is the current one): still refused
    _refused(row, lambda: autodiff.jit(lambda v: autodiff.grad(lambda w: (w * row.call(v)).sum())(1.0))(
        _t(value, row.dtype)))  # fmt: skip


@pytest.mark.parametrize("row", [r for r in CONCRETE if r.concretization], ids=str)
def test_a_concrete_parameter_works_eagerly_and_as_a_python_scalar_under_jit(row: Concrete) -> None:
    want = row.call(row.eager)
    got = row.call(_t(row.eager, row.dtype))  # an untracked Tensor is read eagerly
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    jf = autodiff.jit(row.call)  # a Python scalar is part of jit's cache key: a new value retraces
    np.testing.assert_array_equal(np.asarray(jf(row.eager)), np.asarray(want))
    if row.theirs is not None:
        np.testing.assert_array_equal(np.asarray(want), np.asarray(row.theirs(row.eager)))
        with pytest.raises(jax.errors.ConcretizationTypeError):  # JAX refuses the same call under jit
            jax.jit(row.theirs)(np.asarray(row.eager, row.dtype))


#: parameters that are array operands (traced like any operand)
ARRAY_PARAMS = frozenset({"x", "y", "a", "b", "labels", "indices", "xs", "condition", "arys", "operands", "mean",
                          "variance", "input", "end", "tensor1", "tensor2", "x1", "x2", "z", "m", "v", "ary", "arr",
                          "values", "tup", "args", "prepend", "append", "to_end", "to_begin", "weights",
                          "sorter", "bins", "xp", "fp", "element", "test_elements", "p"})  # fmt: skip


def _public() -> list[tuple[str, Callable[..., Any]]]:
    out = [(f"nn.{n}", getattr(nn, n)) for n in nn.__all__]
    out += [(n, getattr(npe, n)) for n in npe.__all__ if n not in ("where",)]  # where: three arrays
    out += [(n, getattr(mp, n)) for n in mp.__all__]
    out += [(n, getattr(module, n)) for module in (npm, npn, npa, npx) for n in module.__all__]
    return [*out, ("arange", creation.arange)]


def test_every_parameter_has_a_row() -> None:
    rows = {(r.fn, r.param) for r in OPERANDS} | {(r.fn, r.param) for r in CONCRETE}
    missing = [
        f"{name}({p})"
        for name, f in _public()
        for p in inspect.signature(f).parameters
        if p not in ARRAY_PARAMS and (name, p) not in rows
    ]
    assert not missing, f"parameters without a traced-parameter row: {missing}"


# -- B: traced integer indices ------------------------------------------------------------------

XI = np.array([10.0, 20.0, 30.0])
TRACED, LATER = np.array([0, 1]), np.array([5, -1])  # the trace's indices, then out-of-bounds ones


@dataclass(frozen=True)
class Indexer:
    """``ours(x, i)`` with traced integer indices ``i``; ``theirs`` the jax.numpy call (for the
    jax policy's rule) and ``numpy`` NumPy's (for the raising rule's eager oracle)."""

    name: str
    ours: Callable[[rt.Tensor, Any], rt.Tensor]
    theirs: Callable[[Any, Any], Any]
    numpy: Callable[[np.ndarray, np.ndarray], Any]

    def __str__(self) -> str:
        return self.name


def _np_update(ufunc: Any, value: float) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """NumPy's ``x[i] op= value`` on a copy, out-of-bounds indices raising ``IndexError``."""

    def update(x: np.ndarray, i: np.ndarray) -> np.ndarray:
        out = x.copy()
        if ufunc is None:
            out[i] = value
        else:
            ufunc.at(out, i, value)
        return out

    return update


INDEXERS = [
    Indexer("take", lambda x, i: mp.take(x, i), lambda x, i: jnp.take(x, i), np.take),
    Indexer("take_along_axis", lambda x, i: mp.take_along_axis(x, i, 0), lambda x, i: jnp.take_along_axis(x, i, 0),
            lambda x, i: np.take_along_axis(x, i, 0)),
    Indexer("getitem", lambda x, i: x[i], lambda x, i: x[i], lambda x, i: x[i]),
    Indexer("getitem-2d", lambda x, i: x.reshape(1, 3)[0, i], lambda x, i: x.reshape(1, 3)[0, i],
            lambda x, i: x.reshape(1, 3)[0, i]),
    Indexer("at-set", lambda x, i: x.at[i].set(0.0), lambda x, i: x.at[i].set(0.0), _np_update(None, 0.0)),
    Indexer("at-add", lambda x, i: x.at[i].add(1.0), lambda x, i: x.at[i].add(1.0), _np_update(np.add, 1.0)),
    Indexer("at-mul", lambda x, i: x.at[i].mul(2.0), lambda x, i: x.at[i].multiply(2.0),
            _np_update(np.multiply, 2.0)),
    Indexer("at-min", lambda x, i: x.at[i].min(15.0), lambda x, i: x.at[i].min(15.0), _np_update(np.minimum, 15.0)),
    Indexer("at-max", lambda x, i: x.at[i].max(25.0), lambda x, i: x.at[i].max(25.0), _np_update(np.maximum, 25.0)),
]  # fmt: skip


@pytest.mark.parametrize("row", INDEXERS, ids=str)
def test_traced_indices_replay_the_jax_rule_on_later_out_of_bounds_indices(row: Indexer) -> None:
    x = rt.asarray(XI)
    f = autodiff.jit(lambda i: row.ours(x, i))
    for i in (TRACED, LATER):
        got = f(rt.asarray(i)).numpy()
        np.testing.assert_array_equal(got, row.ours(x, rt.asarray(i)).numpy())  # eager castwise
        np.testing.assert_array_equal(got, np.asarray(jax.jit(lambda j: row.theirs(jnp.asarray(XI), j))(i)))
    batch = np.stack([TRACED, LATER])
    got = autodiff.vmap(lambda i: row.ours(x, i))(rt.asarray(batch)).numpy()
    np.testing.assert_array_equal(got, np.stack([row.ours(x, rt.asarray(i)).numpy() for i in batch]))
    np.testing.assert_array_equal(got, np.asarray(jax.vmap(lambda j: row.theirs(jnp.asarray(XI), j))(batch)))
    graph = rt.trace(lambda i: row.ours(x, i), rt.asarray(TRACED))
    np.testing.assert_array_equal(rt.evaluate(graph, rt.asarray(LATER))[0].numpy(), f(rt.asarray(LATER)).numpy())


@pytest.mark.parametrize("policy", ["numpy", "torch"])
@pytest.mark.parametrize("row", INDEXERS, ids=str)
def test_traced_indices_are_refused_where_the_policy_checks_bounds(row: Indexer, policy: str) -> None:
    x = rt.asarray(XI)
    with rt.policy(policy):
        with pytest.raises(IndexError, match="out of bounds"):  # eager: the policy's IndexError, as NumPy's
            row.ours(x, rt.asarray(LATER))
        with pytest.raises(IndexError):
            row.numpy(XI, LATER)
        np.testing.assert_array_equal(row.ours(x, rt.asarray(TRACED)).numpy(), row.numpy(XI, TRACED))
        for run in (
            lambda: autodiff.jit(lambda i: row.ours(x, i))(rt.asarray(TRACED)),
            lambda: autodiff.vmap(lambda i: row.ours(x, i))(rt.asarray(np.stack([TRACED, LATER]))),
            lambda: rt.trace(lambda i: row.ours(x, i), rt.asarray(TRACED)),
            # a grad inside jit records under its own recorder: the indices are still the trace's
            lambda: autodiff.jit(lambda i: autodiff.grad(lambda w: row.ours(w, i).sum())(x))(rt.asarray(TRACED)),
        ):
            with pytest.raises(rt.ConcretizationIndexError, match=f"policy {policy!r}") as info:
                run()
            assert "traced" in str(info.value) and "bounds" in str(info.value)
        # eager recording (grad) reads concrete indices: the check runs, the gradient is right
        g = autodiff.grad(lambda w: row.ours(w, rt.asarray(TRACED)).sum())(x)
        assert g.shape == x.shape
        with pytest.raises(IndexError, match="out of bounds"):
            autodiff.grad(lambda w: row.ours(w, rt.asarray(LATER)).sum())(x)


@pytest.mark.parametrize("policy", ["jax", "numpy"])
@pytest.mark.parametrize("fn", ["take", "take_along_axis"])
def test_mode_raise_is_refused_under_tracing_and_the_other_modes_are_traced(fn: str, policy: str) -> None:
    x = rt.asarray(XI)
    f = getattr(mp, fn)
    args = () if fn == "take" else (0,)
    with rt.policy(policy):
        with pytest.raises(rt.ConcretizationIndexError, match="mode='raise'"):
            autodiff.jit(lambda i: f(x, i, *args, mode="raise"))(rt.asarray(TRACED))
        with pytest.raises(rt.ConcretizationIndexError, match="mode='raise'"):
            autodiff.vmap(lambda i: f(x, i, *args, mode="raise"))(rt.asarray(np.stack([TRACED, LATER])))
        for mode in ("clip", "wrap", "fill"):
            jf = autodiff.jit(lambda i, mode=mode: f(x, i, *args, mode=mode))
            for i in (TRACED, LATER):
                want = f(x, rt.asarray(i), *args, mode=mode).numpy()
                np.testing.assert_array_equal(jf(rt.asarray(i)).numpy(), want)
                if fn == "take" and mode != "fill":  # np.take's clip sends -1 to 0, as castwise's take
                    np.testing.assert_array_equal(want, np.take(XI, i, mode=mode))
                if mode == "fill":
                    np.testing.assert_array_equal(want, np.asarray(jnp.take(jnp.asarray(XI), i, mode="fill")))


def test_traced_masks_are_refused_inside_a_grad_inside_jit() -> None:
    x = rt.asarray(X)

    def f(m: rt.Tensor) -> rt.Tensor:
        return autodiff.grad(lambda w: (w[m] ** 2).sum())(x)

    with pytest.raises(rt.ConcretizationIndexError, match="data-dependent shape"):
        autodiff.jit(f)(rt.asarray(X > 0))
    np.testing.assert_array_equal(f(rt.asarray(X > 0)).numpy(), np.where(X > 0, 2 * X, 0.0))  # eager


# -- C: NumPy views are read-only -------------------------------------------------------------


def test_numpy_views_cannot_bypass_the_version_counters() -> None:
    c = rt.asarray(np.array([1.0, 2.0, 3.0]))
    w = rt.asarray(np.array([1.0, 1.0, 1.0]), requires_grad=True)
    loss = (w * c).sum()
    for view in (np.asarray(c), c.numpy()):
        assert np.shares_memory(view, c._array) and not view.flags.writeable  # zero-copy, read-only
        with pytest.raises(ValueError, match="read-only"):
            view[:] += 10
    with pytest.raises(ValueError, match="read-only"):
        np.add(c.numpy(), 1.0, out=c.numpy())
    loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0, 3.0])  # the values mul saved


def test_copies_stay_writable_and_castwise_writes_still_go_through() -> None:
    c = rt.asarray(np.array([1.0, 2.0, 3.0]))
    for copy in (np.asarray(c, copy=True), c.numpy().copy(), np.array(c), np.asarray(c, dtype=np.float32)):
        assert copy.flags.writeable and not np.shares_memory(copy, c._array)
        copy[0] = 99.0
    c += 1.0  # castwise's in-place write ticks the counter, through the (writable) storage
    assert c._version == 1
    np.testing.assert_array_equal(c.numpy(), [2.0, 3.0, 4.0])
    r = rt.asarray(c.numpy())  # a Tensor over a read-only view shares the memory, and cannot write it
    assert np.shares_memory(r.numpy(), c.numpy())
    with pytest.raises(ValueError, match="read-only"):
        r += 1.0


def test_results_of_custom_functions_keep_writable_storage() -> None:
    @autodiff.custom_jvp
    def double(v: rt.Tensor) -> rt.Tensor:
        return v * 2.0

    double.defjvp(lambda p, t: (double(p[0]), t[0] * 2.0))
    x = rt.asarray(np.array([1.0, 2.0]))
    (out,) = rt.evaluate(rt.trace(double, x), x)  # the custom_jvp_call kernel's result
    out += 1.0
    np.testing.assert_array_equal(out.numpy(), [3.0, 5.0])


# -- D, E: gelu's approximate, nan_to_num of integers ------------------------------------------


@pytest.mark.parametrize(("approximate", "exact"), [("none", True), ("tanh", False), (False, True), (True, False)])
def test_gelu_takes_torch_strings_and_jax_bools(approximate: Any, exact: bool) -> None:
    x = np.linspace(-3.0, 3.0, 13)
    got = nn.gelu(rt.asarray(x), approximate=approximate).numpy()
    np.testing.assert_allclose(got, np.asarray(jax.nn.gelu(x, approximate=not exact)), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("bad", ["exact", "True", 1, 0.5, [True]])
def test_gelu_refuses_other_approximate_values(bad: Any) -> None:
    with pytest.raises((TypeError, ValueError), match=r"nn.gelu: approximate must be .* policy 'jax'"):
        nn.gelu(rt.asarray(X), approximate=bad)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_])
def test_nan_to_num_of_integers_is_a_fresh_copy(dtype: Any) -> None:
    a = np.array([1, 0, 1], dtype)
    x = rt.asarray(a)
    out = npe.nan_to_num(x)
    assert out is not x and not np.shares_memory(out.numpy(), x.numpy())
    assert not np.shares_memory(np.nan_to_num(a), a)  # NumPy's: a copy too
    np.testing.assert_array_equal(out.numpy(), np.nan_to_num(a))
    assert out.dtype is x.dtype
    out += out  # its own memory: the write leaves x alone
    np.testing.assert_array_equal(x.numpy(), a)


# -- F: bad inputs name the function the user called --------------------------------------------

V = rt.asarray(np.array([1.0, 2.0]))


def _bad(call: Callable[[], Any], fn: str, *words: str, cls: type[Exception] = Exception, owner: str = "") -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=owner)] if owner else []
    return pytest.param(call, fn, words, cls, marks=marks, id=f"{fn}-{'-'.join(words) or cls.__name__}")


BAD_INPUTS = [
    _bad(lambda: mp.outer(V, "a"), "outer", "b", cls=rt.OpTypeError),
    _bad(lambda: mp.einsum("i", "abc"), "einsum", "operand 0", cls=rt.OpTypeError),
    _bad(lambda: mp.take("abc", [0]), "take", cls=rt.OpTypeError),
    _bad(lambda: mp.vstack([V, "a"]), "vstack", cls=rt.OpTypeError),
    _bad(lambda: nn.relu("a"), "nn.relu", cls=rt.OpTypeError),
    _bad(lambda: nn.softmax(object()), "nn.softmax", cls=rt.OpTypeError),
    _bad(lambda: npe.maximum(V, "a"), "maximum", cls=rt.OpTypeError),
    _bad(lambda: nn.elu(V, alpha="a"), "nn.elu", "alpha", cls=rt.OpTypeError),
    _bad(lambda: nn.leaky_relu(V, negative_slope=[0.1, 0.2]), "nn.leaky_relu", "negative_slope", cls=rt.ShapeError),
    _bad(lambda: nn.standardize(V, epsilon="a"), "nn.standardize", "epsilon", cls=rt.OpTypeError),
    _bad(lambda: npe.nan_to_num(V, nan="a"), "nan_to_num", "nan", cls=rt.OpTypeError),
    _bad(lambda: npe.nan_to_num(rt.asarray(np.array([1, 2])), posinf="a"), "nan_to_num", "posinf",
         cls=rt.OpTypeError),
    _bad(lambda: npe.isclose(V, V, rtol="a"), "isclose", "rtol", cls=rt.OpTypeError),
    _bad(lambda: npe.isclose(V, V, atol=1j), "isclose", "atol", cls=rt.OpTypeError),
    _bad(lambda: npe.sum(V, dtype="nope"), "sum", "dtype", cls=rt.OpTypeError),
    _bad(lambda: nn.one_hot(rt.asarray(L), 3, dtype="nope"), "nn.one_hot", "dtype", cls=rt.OpTypeError),
    _bad(lambda: mp.take(V, [0], mode=3), "take", "mode", cls=rt.ShapeError),
    _bad(lambda: mp.moveaxis(rt.asarray(M), 5, 0), "moveaxis", "source", cls=rt.ShapeError),
    _bad(lambda: creation.arange(10**13), "arange", "values", cls=rt.OpMemoryError),
    _bad(lambda: creation.linspace(0.0, 1.0, 10**13), "linspace", cls=rt.OpMemoryError),
    _bad(lambda: creation.eye(10**7), "eye", cls=rt.OpMemoryError),
    _bad(lambda: creation.zeros_like("abc"), "zeros_like", cls=rt.OpTypeError),
    _bad(lambda: creation.full_like(V, "a"), "full_like", cls=rt.ShapeError),
    _bad(lambda: linalg.solve(rt.asarray(np.eye(2)), "a"), "linalg.solve", cls=rt.OpTypeError),
    _bad(lambda: linalg.eigvalsh(V), "linalg.eigvalsh", cls=rt.ShapeError),
    _bad(lambda: linalg.svdvals(V), "linalg.svdvals", cls=rt.ShapeError),
    _bad(lambda: npe.power(V, "a"), "power", cls=rt.OpTypeError),
    _bad(lambda: npe.power(rt.asarray(L), -1), "power", "negative", cls=rt.OpValueError),
    _bad(lambda: linalg.lu_solve((rt.asarray(np.eye(2)), rt.asarray(np.array([0, 7], np.int32))), V),
         "linalg.lu_solve", "piv", cls=rt.OpValueError),
    _bad(lambda: rt.lax.lu_solve(rt.asarray(np.eye(2)), rt.asarray(np.array([0, 7], np.int32)), rt.asarray(np.eye(2))),
         "lu_solve", "permutation", cls=rt.OpValueError),
]  # fmt: skip


@pytest.mark.parametrize(("call", "fn", "words", "cls"), BAD_INPUTS)
def test_a_bad_input_names_the_function_called(
    call: Callable[[], Any], fn: str, words: tuple[str, ...], cls: type[Exception]
) -> None:
    if cls is rt.OpMemoryError and executor.MAX_OUTPUT_BYTES is None:
        pytest.skip("this machine does not report its memory: nothing refuses a huge array before allocating")
    with pytest.raises(cls) as info:
        call()
    message = str(info.value)
    assert message.startswith(f"{fn}:"), message
    assert "policy 'jax'" in message and "asarray" not in message and "iota" not in message, message
    for word in words:
        assert word in message, message


@pytest.mark.parametrize("fn", ["vstack", "hstack"])
def test_stacking_zero_d_operands_matches_numpy(fn: str) -> None:
    parts = [1.0, 2.5, -3.0]
    got = getattr(mp, fn)([rt.asarray(np.float64(p)) for p in parts])
    want = getattr(np, fn)([np.float64(p) for p in parts])
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)
    mixed = getattr(mp, fn)([rt.asarray(np.float32(1.0)), rt.asarray(np.array([2.0], np.float32))])
    assert mixed.shape == getattr(np, fn)([np.float32(1.0), np.array([2.0], np.float32)]).shape


@autodiff.custom_vjp
def _csin(u: Any) -> Any:
    return rt.sin(u)


_csin.defvjp(lambda u: (rt.sin(u), u), lambda u, g: (g * rt.cos(u),))


@jax.custom_vjp
def _jsin(u: Any) -> Any:
    return jnp.sin(u)


_jsin.defvjp(lambda u: (jnp.sin(u), u), lambda u, g: (g * jnp.cos(u),))

_EMPTY_BATCHES = [
    (lambda i: mp.take(rt.asarray(XI), i), lambda i: jnp.take(XI, i), (np.zeros((0, 2), np.int64),)),
    (lambda i: rt.asarray(XI)[i], lambda i: jnp.asarray(XI)[i], (np.zeros((0, 2), np.int64),)),
    (lambda r: mp.take(r, np.array([0, 1])), lambda r: jnp.take(r, np.array([0, 1])), (np.zeros((0, 3)),)),
    (lambda r: r[np.array([0, 1])], lambda r: r[np.array([0, 1])], (np.zeros((0, 3)),)),
    (lambda r, i: r[i], lambda r, i: r[i], (np.zeros((0, 3)), np.zeros((0,), np.int64))),
    (lambda i: rt.asarray(XI).at[i].set(1.0), lambda i: jnp.asarray(XI).at[i].set(1.0), (np.zeros((0,), np.int64),)),
    (lambda r, i: r.at[i].add(1.0), lambda r, i: r.at[i].add(1.0), (np.zeros((0, 3)), np.zeros((0, 2), np.int64))),
    (lambda r: r.at[np.array([0, 2])].set(2.0), lambda r: r.at[np.array([0, 2])].set(2.0), (np.zeros((0, 3)),)),
    (lambda r, i: mp.take_along_axis(r, i, axis=0), lambda r, i: jnp.take_along_axis(r, i, axis=0),
     (np.zeros((0, 3)), np.zeros((0, 2), np.int64))),
    (_csin, _jsin, (np.zeros((0, 3)),)),
]  # fmt: skip


@pytest.mark.parametrize(("ours", "theirs", "args"), _EMPTY_BATCHES)
def test_vmap_over_an_empty_batch_of_indexing_is_empty_as_in_jax(
    ours: Callable[..., Any], theirs: Callable[..., Any], args: tuple[np.ndarray, ...]
) -> None:
    got = autodiff.vmap(ours)(*[rt.asarray(a) for a in args])
    want = jax.vmap(theirs)(*args)
    assert got.shape == want.shape and got.shape[0] == 0
    assert got.dtype.name == want.dtype.name


@pytest.mark.parametrize(("ours", "theirs", "args"), [row for row in _EMPTY_BATCHES if row[2][0].dtype.kind == "f"])
def test_grad_of_a_vmap_over_an_empty_batch_is_empty_as_in_jax(
    ours: Callable[..., Any], theirs: Callable[..., Any], args: tuple[np.ndarray, ...]
) -> None:
    """The derivative of a batched gather is a batched scatter-add into an empty dimension."""
    x, *rest = args
    got = autodiff.grad(lambda r: autodiff.vmap(ours)(r, *[rt.asarray(a) for a in rest]).sum())(rt.asarray(x))
    want = jax.grad(lambda r: jax.vmap(theirs)(r, *rest).sum())(x)
    assert got.shape == want.shape == x.shape
