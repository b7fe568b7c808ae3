"""Kernels of the reduction ops (``runtime.core.ops`` families ``reduce``).

Each kernel is a named function followed by its registration in ``KERNELS``; the conventions are
in ``runtime.core.kernels``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any, Final

import ml_dtypes
import numpy as np

from runtime.core import dtypes as dt
from runtime.core.kernels._common import _E8M0, _F32, _F64, _VIA_F16, _WIDEN, KERNELS, Array, _iinfo, _kind, _map1
from runtime.core.kernels.conversion import scalar_array

#: XLA's CPU compiler (its tree-reduction rewrite) splits every reduced dimension longer than
#: this into windows of this size, padded with the identity evenly at both ends (the odd
#: element at the high end); it reduces each window, then reduces the window results the
#: same way until no reduced dimension is longer, and the last reduce runs over what is left.
_TREE_WINDOW: Final = 32
#: XLA CPU hands float32/float64 sums of at least this many elements to YNNPACK, whose blocked,
#: vectorised order castwise does not replicate: NumPy's pairwise sum stands in for it there.
_YNN_MIN_ELEMENTS: Final = 4096
_FLOAT64_LIKE: Final = frozenset({_F32, _F64})
#: Below this many elements per step, ``_fold`` makes one ``accumulate`` call instead of one call per step.
_FOLD_CALL_MIN: Final = 256
#: Formats without an infinity take -+finfo.max as the max/min identity (jax.lax's choice).
_NO_INF: Final[frozenset[np.dtype[Any]]] = frozenset(
    d.storage for d in (dt.float8_e4m3fn, dt.float8_e4m3fnuz, dt.float8_e4m3b11fnuz, dt.float8_e5m2fnuz)
)


def _fold(y: Array, ufunc: np.ufunc, axis: int) -> Array:
    """Left fold of ``ufunc`` along ``axis``, rounded to the dtype at every step.

    Vectorised over the other axes: one in-place ufunc call per step (the
    narrow formats' ufuncs compute in float32 and round back once, as XLA's
    reducers do), or ``accumulate`` (sequential by definition, unlike
    ``reduce``, which sums pairwise) when each step would be too small to pay
    for its call.
    """
    axis %= y.ndim
    n = y.shape[axis]
    head: tuple[Any, ...] = (slice(None),) * axis
    if n > 2 and y.size < _FOLD_CALL_MIN * n:
        return np.array(ufunc.accumulate(y, axis=axis)[(*head, n - 1)])
    acc = np.array(y[(*head, 0)])
    for k in range(1, n):
        ufunc(acc, y[(*head, k)], out=acc)
    return acc


def _windows(y: Array, axis: int, init: Array) -> tuple[Array, int]:
    """``y`` padded with ``init`` along ``axis`` to whole windows, and the number of windows."""
    n = y.shape[axis]
    pad = -n % _TREE_WINDOW
    if pad:
        shape = list(y.shape)
        shape[axis] = n + pad
        padded = np.full(shape, init, dtype=y.dtype)
        inner = [slice(None)] * y.ndim
        inner[axis] = slice(pad // 2, pad // 2 + n)
        padded[tuple(inner)] = y
        y = padded
    return y, (n + pad) // _TREE_WINDOW


def _xla_fold(x: Array, axes: Sequence[int], ufunc: np.ufunc, init: Array) -> Array:
    """``ufunc`` over ``axes`` in XLA CPU's order, one rounding per step.

    Each window (see ``_TREE_WINDOW``) and the final reduce run in row-major
    order over the reduced dimensions, from the identity ``init``. That is
    XLA's order for every reduction over one axis. XLA marks its reducer
    ``reassoc``, and LLVM vectorises some loops over several reduced axes
    across the outer one (a tree over the lanes at the end): float16/32/64 and
    complex reductions over several axes may then differ in the last bits.
    bfloat16 and the 8-bit formats round through a conversion after every
    step, which pins the order: they match XLA bit for bit over any axes.
    """
    if len(axes) == 1:
        axis = int(axes[0])
        y = x
        while (n := y.shape[axis]) > _TREE_WINDOW:
            y, groups = _windows(y, axis, init)
            y = _fold(y.reshape((*y.shape[:axis], groups, _TREE_WINDOW, *y.shape[axis + 1 :])), ufunc, axis + 1)
        if n == 0:
            return np.full(y.shape[:axis] + y.shape[axis + 1 :], init, dtype=x.dtype)
        return _fold(y, ufunc, axis)
    axes = sorted(int(a) for a in axes)
    out_shape = tuple(n for d, n in enumerate(x.shape) if d not in axes)
    if any(x.shape[a] == 0 for a in axes):
        return np.full(out_shape, init, dtype=x.dtype)
    # Several axes: the reduced ones go last, in order; each level folds its windows flattened
    # row-major (window offsets along the first reduced axis outermost).
    k = len(out_shape)
    y = np.transpose(x, [d for d in range(x.ndim) if d not in axes] + axes)
    while any(n > _TREE_WINDOW for n in y.shape[k:]):
        split: list[int] = []
        for i, n in enumerate(y.shape[k:]):
            if n > _TREE_WINDOW:
                y, groups = _windows(y, k + i, init)
                split += [groups, _TREE_WINDOW]
            else:
                split += [1, n]
        m = len(split) // 2
        y = y.reshape(out_shape + tuple(split))
        y = np.transpose(y, [*range(k), *(k + 2 * i for i in range(m)), *(k + 2 * i + 1 for i in range(m))])
        y = _fold(y.reshape((*out_shape, *split[0::2], -1)), ufunc, -1)
    return _fold(y.reshape((*out_shape, -1)), ufunc, -1)


@functools.cache
def _identity(storage: np.dtype[Any], value: int) -> Array:
    """The 0-d identity of a sum (0) or product (1) in ``storage``, converted as XLA converts it."""
    out = scalar_array(value, dt.from_numpy(storage))
    out.setflags(write=False)
    return out


_POSITIVE_ZERO: Final[dict[np.dtype[Any], Array]] = {_F32: np.zeros((), _F32), _F64: np.zeros((), _F64)}


def _reduce_arith(x: Array, axes: Sequence[int], ufunc: np.ufunc, identity: int) -> Array:
    storage = x.dtype
    if math.prod(x.shape[a] for a in axes) == 1:
        # One element per group: XLA simplifies the reduce to a reshape (no identity is combined).
        return np.array(x.reshape(tuple(n for d, n in enumerate(x.shape) if d not in axes)))
    if ufunc is np.add and storage in _FLOAT64_LIKE and (x.size >= _YNN_MIN_ELEMENTS or len(axes) > 1):
        # Big float32/float64 sums (YNNPACK's blocked order) and sums over several axes
        # (vectorised with reassociation) have no fixed order in XLA either: NumPy's sum,
        # within the dtype's tolerance, at NumPy's speed (first, as every backward of a
        # broadcast runs it; float32/float64 reduce in their own dtype).
        with np.errstate(over="ignore", invalid="ignore"):
            total = np.add.reduce(x, axis=axes[0] if len(axes) == 1 else tuple(axes))
            if type(total) is np.ndarray:
                return np.add(total, _POSITIVE_ZERO[storage], out=total)  # XLA starts at +0.0
            return np.asarray(total + _POSITIVE_ZERO[storage])
    kind = _kind(storage)
    with np.errstate(over="ignore", invalid="ignore"):
        if kind in ("bool", "int", "uint"):
            # Integer arithmetic wraps and is associative: any order gives XLA's result.
            wide = _WIDEN.get(storage)
            if wide is None:
                return np.asarray(ufunc.reduce(x, axis=tuple(axes), dtype=storage))
            return np.asarray(ufunc.reduce(x.astype(wide), axis=tuple(axes), dtype=wide)).astype(storage)
        init = _identity(storage, identity)
        if storage == _E8M0 and ufunc is np.add:  # 0 is NaN in float8_e8m0fnu: so is every sum
            return np.full(tuple(n for d, n in enumerate(x.shape) if d not in axes), init, dtype=storage)
        out = np.asarray(_xla_fold(x, axes, ufunc, init))
        if ufunc is np.add:
            out = np.add(out, init, out=out)  # XLA starts at +0.0: no sum ends at -0.0
    return out


def reduce_sum_kernel(x: Array, *, axes: Sequence[int]) -> tuple[Array, ...]:
    """Sum over ``axes`` in the input dtype, in XLA CPU's order (integers wrap)."""
    return (_reduce_arith(x, axes, np.add, 0),)


KERNELS["reduce_sum"] = reduce_sum_kernel


def reduce_prod_kernel(x: Array, *, axes: Sequence[int]) -> tuple[Array, ...]:
    """Product over ``axes`` in the input dtype, in XLA CPU's order (integers wrap)."""
    return (_reduce_arith(x, axes, np.multiply, 1),)


KERNELS["reduce_prod"] = reduce_prod_kernel


def _extreme_identity(storage: np.dtype[Any], largest: bool) -> Array:
    # The identity lax uses for an empty max (min): -inf (+inf), or -+finfo.max in the formats
    # without an infinity; the int range's end; False (True). float8_e8m0fnu's is NaN.
    kind = _kind(storage)
    target = dt.from_numpy(storage)
    if kind == "bool":
        return np.asarray(not largest)
    if kind in ("int", "uint"):
        info = _iinfo(storage)
        return scalar_array(int(info.min if largest else info.max), target)
    big = float(ml_dtypes.finfo(storage).max) if storage in _NO_INF else np.inf
    return scalar_array(-big if largest else big, target)


def _reduce_extreme(x: Array, axes: Sequence[int], largest: bool) -> Array:
    axes = tuple(axes)
    identity = _extreme_identity(x.dtype, largest)
    size = math.prod(x.shape[a] for a in axes)
    if size == 0 or (size > 1 and x.dtype == _E8M0):
        # Empty, or float8_e8m0fnu, whose identity is NaN: max/min propagate it everywhere
        # (a group of one element is a reshape in XLA: no identity is combined).
        out_shape = tuple(n for d, n in enumerate(x.shape) if d not in axes)
        return np.full(out_shape, identity, dtype=x.dtype)
    f = np.max if largest else np.min
    with np.errstate(invalid="ignore"):
        return np.asarray(_map1(lambda v: _order_zeros(v, f(v, axis=axes), axes, largest), x))


def _order_zeros(v: Array, out: Any, axes: tuple[int, ...], largest: bool) -> Any:
    """``out`` (NumPy's max/min of ``v`` over ``axes``) with XLA's -0.0 < +0.0.

    NumPy returns whichever zero it meets; XLA's max of a group whose largest
    value is zero is +0.0 when the group holds a +0.0 (its min is -0.0 when the
    group holds a -0.0). XLA's float32/float64 reductions of 4096 elements or
    more (YNNPACK) do not order zeros; castwise orders them everywhere.
    """
    if v.dtype.kind != "f":
        return out
    out = np.asarray(out)
    zero = out == 0
    if not zero.any():
        return out
    wanted = (v == 0) & (np.signbit(v) != largest)  # +0.0 for the max, -0.0 for the min
    found = np.any(wanted, axis=axes)
    signed = np.where(found, np.zeros((), v.dtype) if largest else -np.zeros((), v.dtype), out)
    return np.where(zero, signed, out).astype(v.dtype)


def reduce_max_kernel(x: Array, *, axes: Sequence[int]) -> tuple[Array, ...]:
    """Max over ``axes`` (NaN-propagating; an empty reduction gives -inf / the int minimum / False)."""
    return (_reduce_extreme(x, axes, largest=True),)


KERNELS["reduce_max"] = reduce_max_kernel


def reduce_min_kernel(x: Array, *, axes: Sequence[int]) -> tuple[Array, ...]:
    """Min over ``axes`` (NaN-propagating; an empty reduction gives +inf / the int maximum / True)."""
    return (_reduce_extreme(x, axes, largest=False),)


KERNELS["reduce_min"] = reduce_min_kernel


# -- index and bitwise reductions --------------------------------------------------------------------


def _arg_extreme(x: Array, axes: Sequence[int], index_dtype: Any, largest: bool) -> Array:
    """The index of the max (min) along the one axis of ``axes``, as lax computes it.

    NumPy's argmax/argmin follow lax's rule: the first index among equal
    values (``-0.0 == +0.0``), and a NaN beats every number (the first NaN).
    Narrow formats compare in their exact float32 / int8 widening.
    """
    (axis,) = axes
    wide = _WIDEN.get(x.dtype)
    v = x if wide is None else x.astype(wide)
    with np.errstate(invalid="ignore"):
        idx = (np.argmax if largest else np.argmin)(v, axis=axis)
    target = dt.dtype(index_dtype).storage
    # lax computes the index in index_dtype: a narrow one wraps, as a NumPy cast does
    if target in _WIDEN:
        return np.asarray(np.asarray(idx).astype(_WIDEN[target]).astype(target))
    return np.asarray(np.asarray(idx).astype(target))


def argmax_kernel(x: Array, *, axes: Sequence[int], index_dtype: Any) -> tuple[Array, ...]:
    """lax.argmax: the first index of the largest value along ``axes[0]``; NaN wins (its first index)."""
    return (_arg_extreme(x, axes, index_dtype, largest=True),)


KERNELS["argmax"] = argmax_kernel


def argmin_kernel(x: Array, *, axes: Sequence[int], index_dtype: Any) -> tuple[Array, ...]:
    """lax.argmin: the first index of the smallest value along ``axes[0]``; NaN wins (its first index)."""
    return (_arg_extreme(x, axes, index_dtype, largest=False),)


KERNELS["argmin"] = argmin_kernel


def _reduce_bits(x: Array, axes: Sequence[int], ufunc: np.ufunc, all_ones: bool) -> Array:
    """A bitwise reduction (logical for bool); an empty one gives the identity (all ones for and)."""
    axes = tuple(axes)
    out_shape = tuple(n for d, n in enumerate(x.shape) if d not in axes)
    if math.prod(x.shape[a] for a in axes) == 0:
        if x.dtype == np.bool_:
            return np.full(out_shape, all_ones, dtype=np.bool_)
        info = _iinfo(x.dtype)
        identity = (-1 if info.min < 0 else int(info.max)) if all_ones else 0
        return np.full(out_shape, scalar_array(identity, dt.from_numpy(x.dtype)), dtype=x.dtype)
    wide = _WIDEN.get(x.dtype)
    # sub-byte ints are sign- (zero-) extended to 8 bits: their bitwise results stay in range
    v = x if wide is None else x.astype(wide)
    out = np.asarray(ufunc.reduce(v, axis=axes))
    return out if wide is None else out.astype(x.dtype)


def reduce_and_kernel(x: Array, *, axes: Sequence[int]) -> tuple[Array, ...]:
    """lax.reduce_and: all (bool) or bitwise and (integers); an empty one is all ones."""
    return (_reduce_bits(x, axes, np.bitwise_and, all_ones=True),)


KERNELS["reduce_and"] = reduce_and_kernel


def reduce_or_kernel(x: Array, *, axes: Sequence[int]) -> tuple[Array, ...]:
    """lax.reduce_or: any (bool) or bitwise or (integers); an empty one is 0."""
    return (_reduce_bits(x, axes, np.bitwise_or, all_ones=False),)


KERNELS["reduce_or"] = reduce_or_kernel


def reduce_xor_kernel(x: Array, *, axes: Sequence[int]) -> tuple[Array, ...]:
    """lax.reduce_xor: parity (bool) or bitwise xor (integers); an empty one is 0."""
    return (_reduce_bits(x, axes, np.bitwise_xor, all_ones=False),)


KERNELS["reduce_xor"] = reduce_xor_kernel


# -- reduce_precision --------------------------------------------------------------------------------

#: storage -> (exponent bits, mantissa bits, the unsigned integer of its width) for the formats
#: whose bits XLA's reduce_precision rewrites directly; the narrower floats go through float32.
_FLOAT_BITS: Final[dict[np.dtype[Any], tuple[int, int, type[np.unsignedinteger[Any]]]]] = {
    np.dtype(np.float16): (5, 10, np.uint16),
    dt.bfloat16.storage: (8, 7, np.uint16),
    _F32: (8, 23, np.uint32),
    _F64: (11, 52, np.uint64),
}


def _reduce_precision_bits(x: Array, exponent_bits: int, mantissa_bits: int) -> Array:
    """XLA's reduce_precision on the bits of an IEEE format (float16/bfloat16/float32/float64).

    The mantissa is rounded to ``mantissa_bits`` (to nearest, ties to even, by
    adding a bias and masking: a carry moves into the exponent); then an
    exponent above the narrow format's range becomes +-inf and one at or below
    its smallest normal exponent becomes +-0 (no subnormals). NaN stays NaN.
    """
    e_src, m_src, uint = _FLOAT_BITS[x.dtype]
    width = 1 + e_src + m_src
    bits = np.array(x, order="C").view(uint)  # a copy (0-d stays 0-d)
    one = uint(1)
    if mantissa_bits < m_src:
        shift = uint(m_src - mantissa_bits)
        last = one << shift
        bias = (last >> one) - one + ((bits & last) >> shift)
        bits = (bits + bias) & ~(last - one)
    if exponent_bits < e_src:
        sign_mask = one << uint(width - 1)
        exponent_mask = ((one << uint(e_src)) - one) << uint(m_src)
        src_bias = (1 << (e_src - 1)) - 1
        dst_bias = (1 << (exponent_bits - 1)) - 1
        exponent = bits & exponent_mask
        overflows = exponent > uint((src_bias + dst_bias) << m_src)
        underflows = exponent <= uint((src_bias - dst_bias) << m_src)
        signed_zero = bits & sign_mask
        bits = np.where(overflows, signed_zero | exponent_mask, np.where(underflows, signed_zero, bits))
    out = np.asarray(bits, dtype=uint).view(x.dtype)
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(x), x, out).astype(x.dtype)


def reduce_precision_kernel(x: Array, *, exponent_bits: int, mantissa_bits: int) -> tuple[Array, ...]:
    """lax.reduce_precision: ``x`` rounded to a float with ``exponent_bits`` and ``mantissa_bits``.

    float16, bfloat16, float32 and float64 are rewritten on their own bits, as
    XLA does; the 8/6/4-bit formats go through float16 (float8_e8m0fnu through float32) and
    back, as XLA CPU normalises them.
    """
    if x.dtype in _FLOAT_BITS:
        return (_reduce_precision_bits(x, exponent_bits, mantissa_bits),)
    via = np.dtype(np.float16) if x.dtype in _VIA_F16 else _F32
    wide = _reduce_precision_bits(x.astype(via), exponent_bits, mantissa_bits)
    return (np.asarray(wide.astype(x.dtype)),)


KERNELS["reduce_precision"] = reduce_precision_kernel


# -- cumulative reductions ---------------------------------------------------------------------------

#: jax.lax lowers a cumulative reduction to a reduce-window over the whole axis, which XLA's CPU
#: compiler rewrites into blocks of this many elements (padded with the identity at the end): within
#: a block each output folds its window from the identity in increasing index order (the block's
#: prefix, or its suffix for ``reverse``), the blocks' totals are scanned the same way
#: (recursively), and each element is then combined with the scan of the blocks before (after)
#: its own. ``_xla_scan`` follows that order, so sums and products round as XLA's do (verified bit
#: for bit against JAX on CPU, forward and reverse).
_SCAN_BLOCK: Final = 16

Combine = Any  # (Array, Array) -> Array, the op's same-dtype binary kernel


def _windows_fold(y: Array, combine: Combine, init: Array, reverse: bool) -> Array:
    """Each output of a block: the fold from ``init`` of its window along the last axis of ``y``,
    in increasing index order; the window is ``y[..., :j+1]`` (``y[..., j:]`` when ``reverse``)."""
    n = y.shape[-1]
    if not reverse:  # a running fold: one combine per element
        out = np.empty_like(y)
        acc: Array = np.broadcast_to(init, y.shape[:-1])
        for k in range(n):
            acc = combine(acc, y[..., k])
            out[..., k] = acc
        return out
    # suffixes, each folded left to right: step s adds y[j + s] to every window j that reaches it
    acc = np.array(np.broadcast_to(init, y.shape))
    for s in range(n):
        acc[..., : n - s] = combine(acc[..., : n - s], y[..., s:])
    return acc


def _xla_scan(y: Array, combine: Combine, init: Array, reverse: bool) -> Array:
    """Inclusive scan of ``combine`` along the last axis of ``y``, in XLA CPU's blocked order."""
    n = y.shape[-1]
    if n <= _SCAN_BLOCK:
        return _windows_fold(y, combine, init, reverse)
    blocks = -(-n // _SCAN_BLOCK)
    head = y.shape[:-1]
    padded = np.full((*head, blocks * _SCAN_BLOCK), init, dtype=y.dtype)
    padded[..., :n] = y
    within = _windows_fold(padded.reshape((*head, blocks, _SCAN_BLOCK)), combine, init, reverse)
    totals = _xla_scan(np.ascontiguousarray(within[..., 0 if reverse else -1]), combine, init, reverse)
    edge = np.broadcast_to(init, (*head, 1))
    others = np.concatenate([totals[..., 1:], edge] if reverse else [edge, totals[..., :-1]], axis=-1)
    out = combine(within, others[..., None])
    return np.asarray(out).reshape((*head, blocks * _SCAN_BLOCK))[..., :n]


def _cumulative(x: Array, axis: int, reverse: bool, combine: Combine, init: Array) -> Array:
    if x.shape[axis] == 0:
        return np.array(x)
    y = np.ascontiguousarray(np.moveaxis(x, axis, -1))
    with np.errstate(all="ignore"):
        out = _xla_scan(y, combine, init, reverse)
    return np.ascontiguousarray(np.moveaxis(out, -1, axis))


def _kernel_of(name: str) -> Combine:
    kernel = KERNELS[name]
    return lambda a, b: kernel(a, b)[0]


def cumsum_kernel(x: Array, *, axis: int, reverse: bool) -> tuple[Array, ...]:
    """lax.cumsum along ``axis`` (from the end when ``reverse``), rounded in XLA CPU's blocked order."""
    return (_cumulative(x, axis, reverse, _kernel_of("add"), _identity(x.dtype, 0)),)


KERNELS["cumsum"] = cumsum_kernel


def cumprod_kernel(x: Array, *, axis: int, reverse: bool) -> tuple[Array, ...]:
    """lax.cumprod, in XLA CPU's blocked order (integers wrap)."""
    return (_cumulative(x, axis, reverse, _kernel_of("mul"), _identity(x.dtype, 1)),)


KERNELS["cumprod"] = cumprod_kernel


def cummax_kernel(x: Array, *, axis: int, reverse: bool) -> tuple[Array, ...]:
    """lax.cummax: lax.max's running value (NaN-propagating, +0.0 above -0.0)."""
    return (_cumulative(x, axis, reverse, _kernel_of("max"), _extreme_identity(x.dtype, largest=True)),)


KERNELS["cummax"] = cummax_kernel


def cummin_kernel(x: Array, *, axis: int, reverse: bool) -> tuple[Array, ...]:
    """lax.cummin: lax.min's running value."""
    return (_cumulative(x, axis, reverse, _kernel_of("min"), _extreme_identity(x.dtype, largest=False)),)


KERNELS["cummin"] = cummin_kernel


def _logaddexp(a: Array, b: Array) -> Array:
    """JAX's logaddexp of two real floats from the vocabulary's kernels, one rounding per op:
    ``max(a, b) + log1p(exp(-|a - b|))``, or ``a + b`` where ``a - b`` is NaN (a NaN, or
    infinities of one sign)."""
    k = KERNELS
    delta = k["sub"](a, b)[0]
    tail = k["log1p"](k["exp"](k["neg"](k["abs"](delta)[0])[0])[0])[0]
    out = k["add"](k["max"](a, b)[0], tail)[0]
    return np.where(np.isnan(delta.astype(np.float32) if delta.dtype in _WIDEN else delta), k["add"](a, b)[0], out)


def cumlogsumexp_kernel(x: Array, *, axis: int, reverse: bool) -> tuple[Array, ...]:
    """lax.cumlogsumexp: the running ``log(sum(exp(x)))``, combined with JAX's logaddexp."""
    init = scalar_array(-np.inf, dt.from_numpy(x.dtype))
    return (_cumulative(x, axis, reverse, _logaddexp, init),)


KERNELS["cumlogsumexp"] = cumlogsumexp_kernel
