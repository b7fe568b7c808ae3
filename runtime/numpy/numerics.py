"""NumPy's lookups, polynomials, windows, correlations and vector products (``np.searchsorted``,
``np.digitize``, ``np.interp``, ``np.isin``, ``np.polyval``, ``np.vander``, ``np.convolve``,
``np.cov``, ``np.hanning``, ``np.logspace``, ``np.matvec`` ...), under NumPy's names.

Each is a composition of NumPy-named functions and op functions, so a tracked operand records
ordinary ops and the recording replays, differentiates, batches and lowers like any program.
Lookups compare every value with every sorted entry (``n * m`` comparisons, as jax.numpy's
``method='compare_all'``), so their results are traceable; NaN sorts last, as in NumPy.
Lengths, modes and window sizes are concrete parameters.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.promotion import result_type
from runtime.core.shapes import OpValueError, ShapeError
from runtime.core.tensor import Tensor
from runtime.numpy import creation as C
from runtime.numpy import elementwise as E
from runtime.numpy import manipulation as manip
from runtime.numpy import shared_names as S
from runtime.numpy.common import library
from runtime.numpy.math_functions import float_dtype, inexact_operands
from runtime.numpy.params import INTEGER, REAL, as_operand, concrete_flag, concrete_scalar, error, named

__all__ = [
    "bartlett",
    "blackman",
    "convolve",
    "corrcoef",
    "correlate",
    "cov",
    "digitize",
    "geomspace",
    "hamming",
    "hanning",
    "interp",
    "isin",
    "logspace",
    "matvec",
    "polyval",
    "searchsorted",
    "vander",
    "vecmat",
]


def _before(a: Tensor, v: Tensor, right: bool) -> Tensor:
    """Whether sorted element ``a`` goes before ``v`` in the order ``sort`` uses (NaN last):
    ``a < v`` for the left side, ``a <= v`` for the right."""
    if not a.dtype.is_inexact:
        return F.le(a, v) if right else F.lt(a, v)
    v_nan = F.ne(v, v)
    if right:
        return F.logical_or(F.le(a, v), v_nan)
    return F.logical_or(F.lt(a, v), F.logical_and(v_nan, F.eq(a, a)))


def _to_common(*ts: Tensor) -> list[Tensor]:
    """``ts`` converted (recorded) to their common dtype under the active policy."""
    common = ts[0].dtype if all(t.dtype is ts[0].dtype for t in ts) else result_type(*ts)
    return [t if t.dtype is common else F.convert(t, common) for t in ts]


def count_before(sorted_a: Tensor, v: Tensor, right: bool, index: dt.DType) -> Tensor:
    """For each element of ``v``, how many of the 1-D ``sorted_a``'s go before it (``right``: or
    equal it), as ``index`` integers: every pair compared and a sum, so it traces and batches.
    ``searchsorted``'s, and the array API namespace's, computation."""
    a, vs = _to_common(sorted_a, v)
    n = a.shape[0]
    grid_a = F.broadcast_in_dim(a, (*vs.shape, n), (vs.ndim,))
    grid_v = F.broadcast_in_dim(vs, (*vs.shape, n), tuple(range(vs.ndim)))
    return F.reduce_sum(F.convert(_before(grid_a, grid_v, right), index), (vs.ndim,))


def contains(a: Tensor, b: Tensor) -> Tensor:
    """Whether each element of ``a`` equals some element of ``b`` (NaN equals nothing), with
    ``a``'s shape: every pair compared and an or. ``isin``'s, and the array API namespace's,
    computation."""
    flat = F.reshape(b, (b.size,))
    a, flat = _to_common(a, flat)
    grid_a = F.broadcast_in_dim(a, (*a.shape, b.size), tuple(range(a.ndim)))
    grid_b = F.broadcast_in_dim(flat, (*a.shape, b.size), (a.ndim,))
    return F.reduce_or(F.eq(grid_a, grid_b), (a.ndim,))


@named("searchsorted")
def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Tensor:
    """Where each ``v`` would go in the sorted 1-D ``a`` to keep it sorted (``np.searchsorted``):
    the number of entries below it (``side='left'``) or not above it (``'right'``); ``sorter``
    sorts ``a`` first. int64 indices under ``numpy``, int32 under ``jax``, as those libraries."""
    sorted_a = as_operand("searchsorted", a, "a")
    values = as_operand("searchsorted", v, "v", sorted_a)
    if sorted_a.ndim != 1:
        raise error(ShapeError, "searchsorted", "a must be 1-D", sorted_a)
    if not isinstance(side, str) or side not in ("left", "right"):
        raise error(OpValueError, "searchsorted", f"side must be 'left' or 'right', got {side!r}", sorted_a)
    if sorter is not None:
        sorted_a = manip.take(sorted_a, as_operand("searchsorted", sorter, "sorter", sorted_a))
    return count_before(sorted_a, values, side == "right", dt.int32 if library() == "jax" else dt.int64)


@named("digitize")
def digitize(x: Any, bins: Any, right: Any = False) -> Tensor:
    """The index of the bin each ``x`` falls in (``np.digitize``): ``bins`` increasing or
    decreasing (picked by comparing its ends, so a traced ``bins`` works), ``right`` whether a
    bin includes its right edge."""
    xs, edges = as_operand("digitize", x, "x"), as_operand("digitize", bins, "bins", x)
    closed_right = concrete_flag("digitize", "right", right, (xs, edges))
    if edges.ndim != 1:
        raise error(ShapeError, "digitize", "bins must be 1-D", xs, edges)
    n = edges.shape[0]
    if n == 0:  # every value in bin 0
        return F.full(xs.shape, 0, dt.int32 if library() == "jax" else dt.int64)
    side = "left" if closed_right else "right"
    up = searchsorted(edges, xs, side=side)
    down = F.sub(F.full((), n, up.dtype), searchsorted(manip.flip(edges, 0), xs, side=side))  # (NumPy's reversal)
    increasing = F.ge(F.slice(edges, (n - 1,), (n,)), F.slice(edges, (0,), (1,)))
    return E.where(F.reshape(increasing, ()), up, down)


@named("interp")
def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> Tensor:
    """Piecewise-linear interpolation of the points ``(xp, fp)`` at ``x`` (``np.interp``; ``xp``
    increasing): ``fp[0]`` (``left``) below the first point and ``fp[-1]`` (``right``) above the
    last. ``period`` is not supported."""
    xs = as_operand("interp", x, "x")
    px, py = as_operand("interp", xp, "xp", xs), as_operand("interp", fp, "fp", xs)
    if period is not None:
        raise error(OpValueError, "interp", "period is not supported", xs)
    if px.ndim != 1 or py.shape != px.shape or px.shape[0] == 0:
        raise error(ShapeError, "interp", "xp and fp must be non-empty 1-D arrays of one length", px, py)
    xs, px = inexact_operands("interp", xs, px, real=True)
    (py,) = inexact_operands("interp", py)
    if py.dtype.kind != "complex" and py.dtype is not xs.dtype:
        common = result_type(py, xs)
        py = py if py.dtype is common else F.convert(py, common)
    n = px.shape[0]
    i = F.convert(F.clamp(F.full((), 1, dt.int64), F.convert(searchsorted(px, xs, side="right"), dt.int64),
                          F.full((), max(n - 1, 1), dt.int64)), dt.int64)  # fmt: skip
    if n == 1:
        value = F.broadcast_in_dim(F.reshape(py, ()), xs.shape, ())
    else:
        x0, x1 = manip.take(px, F.sub(i, F.full((), 1, dt.int64))), manip.take(px, i)
        y0, y1 = manip.take(py, F.sub(i, F.full((), 1, dt.int64))), manip.take(py, i)
        span = F.sub(x1, x0)
        weight = F.div(F.sub(xs, x0), span)
        weight = weight if weight.dtype is y0.dtype else F.convert(weight, y0.dtype)
        value = F.add(y0, F.mul(weight, F.sub(y1, y0)))
    first, last = F.reshape(F.slice(px, (0,), (1,)), ()), F.reshape(F.slice(px, (n - 1,), (n,)), ())
    below = py[0] if left is None else as_operand("interp", left, "left", py)
    above = py[n - 1] if right is None else as_operand("interp", right, "right", py)
    value = E.where(F.lt(xs, first), below, value)
    value = E.where(F.gt(xs, last), above, value)
    return value if value.dtype is py.dtype else F.convert(value, py.dtype)


@named("isin")
def isin(element: Any, test_elements: Any, assume_unique: Any = False, invert: Any = False) -> Tensor:
    """Whether each element is among ``test_elements`` (``np.isin``; ``invert`` negates)."""
    e = as_operand("isin", element, "element")
    t = as_operand("isin", test_elements, "test_elements", e)
    concrete_flag("isin", "assume_unique", assume_unique, (e, t))
    negate = concrete_flag("isin", "invert", invert, (e, t))
    found = contains(e, t)
    return F.logical_not(found) if negate else found


@named("polyval")
def polyval(p: Any, x: Any) -> Tensor:
    """``p[0] x**(n-1) + ... + p[n-1]`` by Horner's rule (``np.polyval``)."""
    coefficients = as_operand("polyval", p, "p")
    xs = as_operand("polyval", x, "x", p)
    if coefficients.ndim != 1:
        raise error(ShapeError, "polyval", "p must be 1-D", coefficients)
    value = F.mul(xs, F.full((), 0, xs.dtype)) if xs.dtype.kind != "bool" else F.convert(xs, coefficients.dtype)
    for k in range(coefficients.shape[0]):
        value = F.add(F.mul(value, xs), coefficients[k])
    return value


@named("vander")
def vander(x: Any, N: Any = None, increasing: Any = False) -> Tensor:
    """The Vandermonde matrix of the 1-D ``x`` (``np.vander``): columns ``x**(N-1) ... x**0``, or
    increasing powers."""
    xs = as_operand("vander", x, "x")
    if xs.ndim != 1:
        raise error(ShapeError, "vander", "x must be 1-D", xs)
    n = xs.shape[0] if N is None else concrete_scalar("vander", "N", N, INTEGER, operands=(xs,))
    up = concrete_flag("vander", "increasing", increasing, (xs,))
    if not n:
        return S.full((xs.shape[0], 0), 0, xs.dtype)
    columns = [S.full(xs.shape, 1, xs.dtype)]
    for _ in range(1, int(n)):
        columns.append(F.mul(columns[-1], xs))
    return S.stack(columns if up else columns[::-1], axis=1)


def _mode(fn: str, mode: Any, default: str) -> str:
    m = default if mode is None else mode
    if not isinstance(m, str) or m not in ("full", "same", "valid"):
        raise error(OpValueError, fn, f"mode must be 'full', 'same' or 'valid', got {mode!r}")
    return str(m)


def _correlate_full(a: Tensor, v: Tensor) -> Tensor:
    """``c[k] = sum_n a[n + k - (m - 1)] * v[n]``: every shift of ``v`` along ``a``, padded."""
    n, m = a.shape[0], v.shape[0]
    padded = F.pad(a, F.full((), 0, a.dtype), ((m - 1, m - 1, 0),))
    rows = [F.slice(padded, (k,), (k + m,)) for k in range(n + m - 1)]
    windows = S.stack(rows, axis=0)  # (n + m - 1, m)
    return E.sum(F.mul(windows, F.reshape(v, (1, m))), axis=1, dtype=a.dtype)  # (integers stay in their dtype)


def _trim(full: Tensor, n: int, m: int, mode: str, reversed_: bool = False) -> Tensor:
    """``mode``'s part of a full result; ``reversed_``: the full result was computed with the
    operands swapped and read backwards (NumPy's correlate of a shorter ``a``), so 'same' centres
    from the other end."""
    if mode == "full":
        return full
    short = min(n, m)
    if mode == "valid":
        length = max(n, m) - short + 1
        start = short - 1
    else:  # same: the longer operand's length, centred
        length = max(n, m)
        start = short // 2 if reversed_ else (short - 1) // 2
    return F.slice(full, (start,), (start + length,))


def _two_vectors(fn: str, a: Any, v: Any) -> tuple[Tensor, Tensor]:
    x, y = as_operand(fn, a, "a"), as_operand(fn, v, "v", a)
    if x.ndim != 1 or y.ndim != 1 or not x.shape[0] or not y.shape[0]:
        raise error(ShapeError, fn, f"{fn} takes two non-empty 1-D arrays", x, y)
    if library() == "jax":  # jnp.convolve computes integers in floats
        x, y = inexact_operands(fn, x, y)
    else:
        x, y = _to_common(x, y)
    return x, y


@named("convolve")
def convolve(a: Any, v: Any, mode: Any = "full") -> Tensor:
    """The discrete linear convolution of two 1-D arrays (``np.convolve``; ``mode`` ``'full'``,
    ``'same'`` or ``'valid'``)."""
    x, y = _two_vectors("convolve", a, v)
    m = _mode("convolve", mode, "full")
    return _trim(_correlate_full(x, manip.flip(y, 0)), x.shape[0], y.shape[0], m)


@named("correlate")
def correlate(a: Any, v: Any, mode: Any = "valid") -> Tensor:
    """The cross-correlation of two 1-D arrays (``np.correlate``: ``c[k] = sum_n a[n + k] conj(v[n])``;
    ``mode`` ``'valid'`` by default)."""
    x, y = _two_vectors("correlate", a, v)
    m = _mode("correlate", mode, "valid")
    y = F.conj(y) if y.dtype.kind == "complex" else y
    n, k = x.shape[0], y.shape[0]
    full = _correlate_full(x, y)
    if n < k:  # NumPy swaps the operands and reverses the result: the same shifts, read backwards
        full = manip.flip(_correlate_full(y, x), 0)
        full = F.conj(full) if full.dtype.kind == "complex" else full
    return _trim(full, n, k, m, reversed_=n < k)


def _observations(fn: str, m: Any, y: Any, rowvar: Any) -> Tensor:
    x = as_operand(fn, m, "m")
    if x.ndim > 2:
        raise error(ShapeError, fn, f"{fn} takes a 1-D or 2-D array", x)
    x = F.reshape(x, (1, x.shape[0])) if x.ndim == 1 else x
    if not concrete_flag(fn, "rowvar", rowvar, (x,)):
        x = manip.swapaxes(x, 0, 1)
    if y is not None:
        other = as_operand(fn, y, "y", x)
        other = F.reshape(other, (1, other.shape[0])) if other.ndim == 1 else other
        if not concrete_flag(fn, "rowvar", rowvar, (x,)):
            other = manip.swapaxes(other, 0, 1)
        x = S.concatenate([x, other], axis=0)
    if not x.dtype.is_inexact:
        x = F.convert(x, dt.float64 if library() != "jax" else float_dtype(x.dtype))
    return x


@named("cov")
def cov(m: Any, y: Any = None, rowvar: Any = True, bias: Any = False, ddof: Any = None) -> Tensor:
    """The covariance matrix of the variables in ``m``'s rows (``np.cov``; ``rowvar=False``: its
    columns), normalised by ``N - 1`` (``N`` with ``bias=True``, ``N - ddof`` given ``ddof``); a
    single variable gives a 0-d result."""
    x = _observations("cov", m, y, rowvar)
    count = x.shape[1]
    if ddof is None:
        dof = 0 if concrete_flag("cov", "bias", bias, (x,)) else 1
    else:
        dof = concrete_scalar("cov", "ddof", ddof, REAL, operands=(x,))
    centred = F.sub(x, E.mean(x, axis=1, keepdims=True))
    conj = F.conj(centred) if centred.dtype.kind == "complex" else centred
    product = F.matmul(centred, manip.swapaxes(conj, 0, 1))
    real = dt.COMPLEX_PART.get(product.dtype, product.dtype)
    scale = F.full((), 1.0 / max(count - dof, 0) if count - dof > 0 else math.inf, real)
    out = F.mul(product, scale if product.dtype is real else F.convert(scale, product.dtype))
    return F.reshape(out, ()) if out.shape == (1, 1) else out


@named("corrcoef")
def corrcoef(x: Any, y: Any = None, rowvar: Any = True) -> Tensor:
    """The correlation coefficients ``cov[i, j] / sqrt(cov[i, i] cov[j, j])`` (``np.corrcoef``),
    clipped to [-1, 1] for real inputs, as NumPy."""
    c = cov(x, y, rowvar)
    if c.ndim == 0:
        return F.div(c, c)
    d = C.diag(c)
    std = F.sqrt(F.real(d) if d.dtype.kind == "complex" else d)
    std = std if std.dtype is c.dtype else F.convert(std, c.dtype)
    out = F.div(F.div(c, F.broadcast_in_dim(std, c.shape, (0,))), F.broadcast_in_dim(std, c.shape, (1,)))
    if out.dtype.kind != "complex":
        out = E.clip(out, -1.0, 1.0)
    return out


def _window(fn: str, M: Any) -> int:
    n = concrete_scalar(fn, "M", M, INTEGER)
    return int(n)


def _cosine_window(fn: str, M: Any, coefficients: tuple[float, ...]) -> Tensor:
    n = _window(fn, M)
    if n < 1:
        return F.zeros((0,), dt.float64)
    if n == 1:
        return F.ones((1,), dt.float64)
    k = np.arange(n, dtype=np.float64)
    values = sum(c * np.cos(2 * math.pi * i * k / (n - 1)) * (-1) ** i for i, c in enumerate(coefficients))
    return as_operand(fn, np.asarray(values, np.float64))


@named("hanning")
def hanning(M: Any) -> Tensor:
    """The Hann window of ``M`` points (``np.hanning``: ``0.5 - 0.5 cos(2 pi n / (M - 1))``)."""
    return _cosine_window("hanning", M, (0.5, 0.5))


@named("hamming")
def hamming(M: Any) -> Tensor:
    """The Hamming window (``np.hamming``: ``0.54 - 0.46 cos(2 pi n / (M - 1))``)."""
    return _cosine_window("hamming", M, (0.54, 0.46))


@named("blackman")
def blackman(M: Any) -> Tensor:
    """The Blackman window (``np.blackman``: ``0.42 - 0.5 cos(2 pi n / (M-1)) + 0.08 cos(4 pi n / (M-1))``)."""
    return _cosine_window("blackman", M, (0.42, 0.5, 0.08))


@named("bartlett")
def bartlett(M: Any) -> Tensor:
    """The triangular Bartlett window (``np.bartlett``)."""
    n = _window("bartlett", M)
    if n < 1:
        return F.zeros((0,), dt.float64)
    if n == 1:
        return F.ones((1,), dt.float64)
    k = np.arange(n, dtype=np.float64)
    half = (n - 1) / 2.0
    return as_operand("bartlett", 1.0 - np.abs(k - half) / half)


@named("logspace")
def logspace(start: Any, stop: Any, num: Any = 50, endpoint: Any = True, base: Any = 10.0, dtype: Any = None,
             axis: Any = 0) -> Tensor:  # fmt: skip
    """``base ** linspace(start, stop, num)`` (``np.logspace``)."""
    if concrete_scalar("logspace", "axis", axis, INTEGER) != 0:
        raise error(OpValueError, "logspace", "only axis=0 is supported")
    exponents = C.linspace(start, stop, num, endpoint=concrete_flag("logspace", "endpoint", endpoint))
    out = E.power(as_operand("logspace", base, "base", exponents), exponents)
    return out if dtype is None else F.convert(out, as_operand("logspace", S.full((), 0, dtype)).dtype)


@named("geomspace")
def geomspace(start: Any, stop: Any, num: Any = 50, endpoint: Any = True, dtype: Any = None,
              axis: Any = 0) -> Tensor:  # fmt: skip
    """Numbers spaced evenly on a log scale from ``start`` to ``stop`` (``np.geomspace``; both
    non-zero and of one sign), the ends exact."""
    if concrete_scalar("geomspace", "axis", axis, INTEGER) != 0:
        raise error(OpValueError, "geomspace", "only axis=0 is supported")
    a = concrete_scalar("geomspace", "start", start, REAL)
    b = concrete_scalar("geomspace", "stop", stop, REAL)
    count = concrete_scalar("geomspace", "num", num, INTEGER)
    if a == 0 or b == 0 or (a < 0) != (b < 0):
        raise error(OpValueError, "geomspace", f"start and stop must be non-zero and of one sign, got {a!r}, {b!r}")
    sign = -1.0 if a < 0 else 1.0
    closed = concrete_flag("geomspace", "endpoint", endpoint)
    logs = C.linspace(math.log10(abs(a)), math.log10(abs(b)), count, endpoint=closed)
    out = E.power(10.0, logs)
    if count:  # the ends exactly (np.geomspace sets them)
        values = out.numpy().copy()
        values[0] = abs(a)
        if closed and count > 1:
            values[-1] = abs(b)
        out = as_operand("geomspace", values * sign)
    return out if dtype is None else F.convert(out, as_operand("geomspace", S.full((), 0, dtype)).dtype)


@named("matvec")
def matvec(x1: Any, x2: Any) -> Tensor:
    """The matrix-vector product over the last axes, batch axes broadcast (``np.matvec``:
    ``(..., m, n) x (..., n) -> (..., m)``, no conjugation)."""
    a, v = as_operand("matvec", x1, "x1"), as_operand("matvec", x2, "x2", x1)
    if a.ndim < 2 or v.ndim < 1:
        raise error(ShapeError, "matvec", "x1 must be at least 2-D and x2 at least 1-D", a, v)
    out = F.matmul(a, F.reshape(v, (*v.shape, 1)))
    return F.reshape(out, out.shape[:-1])


@named("vecmat")
def vecmat(x1: Any, x2: Any) -> Tensor:
    """The vector-matrix product over the last axes (``np.vecmat``: ``conj(v) (..., n) x (..., n, m)
    -> (..., m)``)."""
    v, a = as_operand("vecmat", x1, "x1"), as_operand("vecmat", x2, "x2", x1)
    if a.ndim < 2 or v.ndim < 1:
        raise error(ShapeError, "vecmat", "x1 must be at least 1-D and x2 at least 2-D", v, a)
    v = F.conj(v) if v.dtype.kind == "complex" else v
    out = F.matmul(F.reshape(v, (*v.shape[:-1], 1, v.shape[-1])), a)
    return F.reshape(out, (*out.shape[:-2], out.shape[-1]))
