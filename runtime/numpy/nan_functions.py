"""NumPy's NaN-ignoring reductions (``np.nansum``, ``np.nanmean``, ``np.nanmax`` ...) and its order
statistics and averages (``np.ptp``, ``np.average``, ``np.median``, ``np.quantile``,
``np.percentile``), under NumPy's names.

Each is a composition of the NumPy-named reductions (``sum``, ``max``, ``sort`` ...) with a
``where`` that puts each reduction's identity in place of a NaN, as jax.numpy writes them, so a
tracked operand records ordinary ops (a NaN's cotangent is 0). Integer and bool operands have no
NaN: the plain reduction runs. A slice that is all NaN gives NaN for ``nanmax``/``nanmin``/
``nanmean``/``nanvar``/``nanstd``/``nanmedian`` (NumPy warns), 0 for ``nansum`` and 1 for ``nanprod``;
``nanargmax``/``nanargmin`` of an all-NaN slice give -1, as jax.numpy's (NumPy raises).

``quantile`` and ``percentile`` take ``method='linear'`` (NumPy's default, the only method here):
the sorted values interpolated at ``q (n - 1)``; a slice holding a NaN gives NaN, as NumPy's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.shapes import OpValueError, ShapeError
from runtime.core.tensor import Tensor
from runtime.numpy import elementwise as E
from runtime.numpy import shared_names as S
from runtime.numpy.common import library, normalize_axes
from runtime.numpy.elementwise import isnan, mean, where
from runtime.numpy.math_functions import float_dtype
from runtime.numpy.params import REAL, as_operand, concrete_flag, concrete_scalar, error, named, refuse_traced

__all__ = [
    "average",
    "median",
    "nanargmax",
    "nanargmin",
    "nancumprod",
    "nancumsum",
    "nanmax",
    "nanmean",
    "nanmedian",
    "nanmin",
    "nanpercentile",
    "nanprod",
    "nanquantile",
    "nanstd",
    "nansum",
    "nanvar",
    "percentile",
    "ptp",
    "quantile",
]


def _has_nan(t: Tensor) -> bool:
    return t.dtype.is_inexact


def _replace_nan(t: Tensor, value: float) -> Tensor:
    """``t`` with ``value`` in place of each NaN (a no-op for dtypes without NaN)."""
    return where(isnan(t), F.full((), value, t.dtype), t) if _has_nan(t) else t


def _all_nan(t: Tensor, axis: Any, keepdims: bool) -> Tensor:
    from runtime.numpy.elementwise import all as all_

    return all_(isnan(t), axis=axis, keepdims=keepdims)


def _nan_fill(result: Tensor, mask: Tensor) -> Tensor:
    return where(mask, F.full((), np.nan, result.dtype), result)


@named("nansum")
def nansum(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    """``sum`` with NaN counted as 0 (``np.nansum``)."""
    t = as_operand("nansum", a, "a")
    return E.sum(_replace_nan(t, 0.0), axis=axis, dtype=dtype, keepdims=keepdims)


@named("nanprod")
def nanprod(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    """``prod`` with NaN counted as 1 (``np.nanprod``)."""
    from runtime.numpy.elementwise import prod

    t = as_operand("nanprod", a, "a")
    return prod(_replace_nan(t, 1.0), axis=axis, dtype=dtype, keepdims=keepdims)


def _nan_extreme(fn: str, a: Any, axis: Any, keepdims: bool, largest: bool) -> Tensor:
    t = as_operand(fn, a, "a")
    reduce = S.max if largest else S.min
    if not _has_nan(t):
        return reduce(t, axis=axis, keepdims=keepdims)
    if t.dtype.kind == "complex":
        raise error(OpValueError, fn, f"{fn} of complex values (no order) is not supported", t)
    filled = _replace_nan(t, -np.inf if largest else np.inf)
    return _nan_fill(reduce(filled, axis=axis, keepdims=keepdims), _all_nan(t, axis, keepdims))


@named("nanmax")
def nanmax(a: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """``max`` ignoring NaN (``np.nanmax``); NaN where a slice is all NaN."""
    return _nan_extreme("nanmax", a, axis, keepdims, True)


@named("nanmin")
def nanmin(a: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """``min`` ignoring NaN (``np.nanmin``); NaN where a slice is all NaN."""
    return _nan_extreme("nanmin", a, axis, keepdims, False)


def _nan_arg(fn: str, a: Any, axis: Any, keepdims: bool, largest: bool) -> Tensor:
    t = as_operand(fn, a, "a")
    pick = S.argmax if largest else S.argmin
    if not _has_nan(t):
        return pick(t, axis=axis, keepdims=keepdims)
    filled = _replace_nan(t, -np.inf if largest else np.inf)
    index = pick(filled, axis=axis, keepdims=keepdims)
    return where(_all_nan(t, axis, keepdims), F.full((), -1, index.dtype), index)


@named("nanargmax")
def nanargmax(a: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """``argmax`` ignoring NaN (``np.nanargmax``); -1 where a slice is all NaN (jax.numpy's)."""
    return _nan_arg("nanargmax", a, axis, keepdims, True)


@named("nanargmin")
def nanargmin(a: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """``argmin`` ignoring NaN (``np.nanargmin``); -1 where a slice is all NaN (jax.numpy's)."""
    return _nan_arg("nanargmin", a, axis, keepdims, False)


@named("nancumsum")
def nancumsum(a: Any, axis: Any = None, dtype: Any = None) -> Tensor:
    """``cumsum`` with NaN counted as 0 (``np.nancumsum``)."""
    return S.cumsum(_replace_nan(as_operand("nancumsum", a, "a"), 0.0), axis=axis, dtype=dtype)


@named("nancumprod")
def nancumprod(a: Any, axis: Any = None, dtype: Any = None) -> Tensor:
    """``cumprod`` with NaN counted as 1 (``np.nancumprod``)."""
    return S.cumprod(_replace_nan(as_operand("nancumprod", a, "a"), 1.0), axis=axis, dtype=dtype)


def _count(t: Tensor, axis: Any, keepdims: bool, dtype: dt.DType) -> Tensor:
    """The number of non-NaN elements per slice, in ``dtype``."""
    present = F.convert(F.logical_not(isnan(t)), dtype)
    return E.sum(present, axis=axis, keepdims=keepdims)


@named("nanmean")
def nanmean(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    """``mean`` over the non-NaN elements (``np.nanmean``); NaN where a slice is all NaN."""
    t = as_operand("nanmean", a, "a")
    if not _has_nan(t):
        return mean(t, axis=axis, dtype=dtype, keepdims=keepdims)
    total = E.sum(_replace_nan(t, 0.0), axis=axis, dtype=dtype, keepdims=keepdims)
    real = dt.COMPLEX_PART.get(total.dtype, total.dtype)
    return F.div(total, F.convert(_count(t, axis, keepdims, real), total.dtype))


@named("nanvar")
def nanvar(a: Any, axis: Any = None, dtype: Any = None, ddof: int = 0, keepdims: bool = False) -> Tensor:
    """``var`` over the non-NaN elements (``np.nanvar``; ``ddof`` subtracted from each slice's count)."""
    t = as_operand("nanvar", a, "a")
    ddof = concrete_scalar("nanvar", "ddof", ddof, REAL, operands=(t,))
    if not _has_nan(t):
        from runtime.numpy.elementwise import var

        return var(t if dtype is None else F.convert(t, as_operand("nanvar", F.full((), 0, dtype)).dtype),
                   axis=axis, ddof=ddof, keepdims=keepdims)  # fmt: skip
    centre = nanmean(t, axis=axis, dtype=dtype, keepdims=True)
    # the NaNs become 0 before squaring: a NaN squared would send NaN * 0 back through the square's VJP
    deviation = _replace_nan(F.sub(t if dtype is None else F.convert(t, centre.dtype), centre), 0.0)
    squared = F.real(F.mul(deviation, F.conj(deviation))) if deviation.dtype.kind == "complex" else F.square(deviation)
    total = E.sum(squared, axis=axis, keepdims=keepdims)
    count = F.sub(_count(t, axis, keepdims, total.dtype), F.full((), float(ddof), total.dtype))
    return F.div(total, F.max(count, F.full((), 0.0, total.dtype)))


@named("nanstd")
def nanstd(a: Any, axis: Any = None, dtype: Any = None, ddof: int = 0, keepdims: bool = False) -> Tensor:
    """The square root of ``nanvar`` (``np.nanstd``)."""
    return F.sqrt(nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims))


@named("ptp")
def ptp(a: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """``max - min`` along ``axis`` (``np.ptp``: peak to peak)."""
    t = as_operand("ptp", a, "a")
    return F.sub(S.max(t, axis=axis, keepdims=keepdims), S.min(t, axis=axis, keepdims=keepdims))


@named("average")
def average(a: Any, axis: Any = None, weights: Any = None, returned: Any = False, keepdims: bool = False) -> Any:
    """The weighted mean ``E.sum(a w) / E.sum(w)`` (``np.average``): without ``weights`` the mean;
    1-D ``weights`` go along a single ``axis``; ``returned=True`` also gives the weights' sum,
    shaped and typed as the average."""
    t = as_operand("average", a, "a")
    give_sum = concrete_flag("average", "returned", returned, (t,))
    if weights is None:
        out = mean(t, axis=axis, keepdims=keepdims)
        count = t.size // out.size if out.size else 0
        return (out, F.full(out.shape, float(count), out.dtype)) if give_sum else out
    w = as_operand("average", weights, "weights", t)
    if w.shape != t.shape:
        axes = normalize_axes(t, axis, "average")
        if axis is None or w.ndim != 1 or len(axes) != 1 or w.shape[0] != t.shape[axes[0]]:
            raise error(ShapeError, "average", "weights must have a's shape, or be 1-D along a single axis", t, w)
        w = F.broadcast_in_dim(w, t.shape, axes)
    weighted = E.sum(F.mul(t, w), axis=axis, keepdims=keepdims)
    scale = E.sum(w, axis=axis, keepdims=keepdims)
    scale = scale if scale.dtype is weighted.dtype else F.convert(scale, weighted.dtype)
    out = F.div(weighted, scale)
    if out.dtype is not scale.dtype:  # (integers: the average is a float, its weights' sum too)
        scale = F.convert(scale, out.dtype)
    return (out, scale) if give_sum else out


def _levels(fn: str, q: Any, t: Tensor, scale: float) -> np.ndarray:
    """The quantile levels, concrete (they pick the sorted positions read: a traced ``q`` is refused)."""
    if isinstance(q, Tensor):
        refuse_traced(fn, "q", q, "it picks the sorted positions read", "pass a concrete q", (t,))
        q = q.numpy()
    try:
        return np.asarray(q, dtype=np.float64) / scale
    except (TypeError, ValueError):
        raise error(OpValueError, fn, f"q must be a number or a 1-D sequence of numbers, got {q!r}", t) from None


def _quantile(fn: str, a: Any, q: Any, axis: Any, keepdims: Any, method: Any, ignore_nan: bool,
              scale: float = 1.0, out: Any = None, overwrite_input: Any = False) -> Tensor:  # fmt: skip
    t = as_operand(fn, a, "a")
    qs = _levels(fn, q, t, scale)
    keepdims = concrete_flag(fn, "keepdims", keepdims, (t,))
    concrete_flag(fn, "overwrite_input", overwrite_input, (t,))  # (castwise never writes its input)
    if out is not None:
        raise error(OpValueError, fn, "out= is not supported (castwise returns a new Tensor)", t)
    if not isinstance(method, str):
        raise error(OpValueError, fn, f"method must be a string, got {type(method).__name__}", t)
    if method != "linear":
        raise error(OpValueError, fn, f"method {method!r} is not supported (only 'linear', NumPy's default)", t)
    if t.dtype.kind == "complex":
        raise error(OpValueError, fn, f"{fn} of complex values (no order) is not supported", t)
    if qs.ndim > 1 or np.any((qs < 0) | (qs > 1)) or np.any(np.isnan(qs)):
        raise error(OpValueError, fn, f"q must be a scalar or 1-D, in [0, 1] (percentiles in [0, 100]), got {q!r}", t)
    axes = normalize_axes(t, axis, fn)
    if not t.dtype.is_inexact:  # NumPy's quantile of integers is float64; jax.numpy's, the promoted float
        t = F.convert(t, float_dtype(t.dtype) if library() == "jax" else dt.float64)
    kept = [d for d in range(t.ndim) if d not in axes]
    moved = F.transpose(t, (*kept, *axes)) if axes else t
    n = int(np.prod([t.shape[d] for d in axes], dtype=np.int64))
    flat = F.reshape(moved, (*[t.shape[d] for d in kept], n))
    ordered = S.sort(flat, axis=-1)  # NaN last: each slice's valid values first
    if ignore_nan:
        valid = _count(flat, -1, True, ordered.dtype)
        mask = _all_nan(flat, -1, False)
    else:
        valid = F.full((*ordered.shape[:-1], 1), float(n), ordered.dtype)
        mask = _any_nan(flat)
    zero = F.full((), 0.0, valid.dtype)
    last = F.sub(valid, F.full((), 1.0, valid.dtype))  # each slice's last valid position
    top = F.max(last, zero)
    outs = []
    for level in np.atleast_1d(qs):  # the sort, the counts and the NaN mask serve every level
        pos = F.max(F.mul(last, F.full((), float(level), valid.dtype)), zero)
        lo = F.floor(pos)
        below, above = _take_last(ordered, lo), _take_last(ordered, F.min(F.ceil(pos), top))
        value = F.add(below, F.mul(F.sub(above, below), F.sub(pos, lo)))
        outs.append(_nan_fill(F.reshape(value, value.shape[:-1]), mask))
    out = outs[0] if qs.ndim == 0 else F.concatenate([F.reshape(o, (1, *o.shape)) for o in outs], 0)
    if keepdims:
        lead = () if qs.ndim == 0 else (len(qs),)
        shape = list(t.shape)
        for d in axes:
            shape[d] = 1
        out = F.reshape(out, (*lead, *shape))
    return out


def _any_nan(t: Tensor) -> Tensor:
    from runtime.numpy.elementwise import any as any_

    return any_(isnan(t), axis=-1)


def _take_last(values: Tensor, index: Tensor) -> Tensor:
    """``values[..., index]`` per slice (index: a float ``[..., 1]`` holding whole numbers)."""
    from runtime.numpy.manipulation import take_along_axis

    return take_along_axis(values, F.convert(index, dt.int64), -1)


@named("quantile")
def quantile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False) -> Tensor:  # fmt: skip
    """The ``q``-th quantiles (``np.quantile``, ``method='linear'``): a scalar or 1-D ``q`` in [0, 1]
    (a 1-D ``q`` puts its axis first); NaN where a slice holds a NaN."""
    return _quantile("quantile", a, q, axis, keepdims, method, False, 1.0, out, overwrite_input)


@named("percentile")
def percentile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False) -> Tensor:  # fmt: skip
    """``quantile`` at ``q / 100`` (``np.percentile``)."""
    return _quantile("percentile", a, q, axis, keepdims, method, False, 100.0, out, overwrite_input)


@named("median")
def median(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False, keepdims: bool = False) -> Tensor:
    """The middle value, or the mean of the two middle ones (``np.median``: ``quantile(a, 0.5)``)."""
    return _quantile("median", a, 0.5, axis, keepdims, "linear", False, 1.0, out, overwrite_input)


@named("nanquantile")
def nanquantile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
                method: str = "linear", keepdims: bool = False) -> Tensor:  # fmt: skip
    """``quantile`` over the non-NaN elements (``np.nanquantile``)."""
    return _quantile("nanquantile", a, q, axis, keepdims, method, True, 1.0, out, overwrite_input)


@named("nanpercentile")
def nanpercentile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
                  method: str = "linear", keepdims: bool = False) -> Tensor:  # fmt: skip
    """``percentile`` over the non-NaN elements (``np.nanpercentile``)."""
    return _quantile("nanpercentile", a, q, axis, keepdims, method, True, 100.0, out, overwrite_input)


@named("nanmedian")
def nanmedian(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Tensor:  # fmt: skip
    """``median`` over the non-NaN elements (``np.nanmedian``)."""
    return _quantile("nanmedian", a, 0.5, axis, keepdims, "linear", True, 1.0, out, overwrite_input)
