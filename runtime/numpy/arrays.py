"""NumPy's array helpers built on the manipulation functions (``np.diff``, ``np.append``,
``np.rot90``, ``np.array_split``, ``np.column_stack``, ``np.kron``, ``np.trapezoid`` ...), under
NumPy's names and signatures.

Each is a composition of NumPy-named functions and op functions (slices, concatenations,
reshapes, products), so a tracked operand records ordinary ops and the recording replays,
differentiates, batches and lowers like any program. Shapes, axes and counts are concrete (a
traced one is refused, as ``jax.jit`` refuses it); ``ndim``, ``shape`` and ``size`` read the
static shape and never record anything.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.shapes import OpTypeError, ShapeError
from runtime.core.tensor import Tensor
from runtime.numpy import creation as C
from runtime.numpy import elementwise as E
from runtime.numpy import manipulation as manip
from runtime.numpy import shared_names as S
from runtime.numpy.common import is_int, library, normalize_axes
from runtime.numpy.params import INTEGER, as_operand, concrete_scalar, dtype_param, error, named, refuse_traced

__all__ = [
    "append",
    "array_split",
    "broadcast_arrays",
    "column_stack",
    "diagflat",
    "diff",
    "dsplit",
    "dstack",
    "ediff1d",
    "fliplr",
    "flipud",
    "hsplit",
    "kron",
    "ndim",
    "rot90",
    "shape",
    "size",
    "trapezoid",
    "tri",
    "vdot",
    "vsplit",
]


def _axis(fn: str, t: Tensor, axis: Any) -> int:
    (ax,) = normalize_axes(t, operator.index(axis) if is_int(axis) else axis, fn)
    return ax


def _slice_along(t: Tensor, axis: int, start: int, stop: int) -> Tensor:
    starts, limits = [0] * t.ndim, list(t.shape)
    starts[axis], limits[axis] = start, stop
    return F.slice(t, starts, limits)


@named("diff")
def diff(a: Any, n: Any = 1, axis: Any = -1, prepend: Any = None, append: Any = None) -> Tensor:
    """The ``n``-th discrete difference along ``axis`` (``np.diff``): ``a[1:] - a[:-1]``, ``n``
    times; ``prepend`` / ``append`` join values first (a scalar is broadcast along the axis).
    Bool operands give ``a[1:] != a[:-1]``, as NumPy's."""
    t = as_operand("diff", a, "a")
    times = concrete_scalar("diff", "n", n, INTEGER, operands=(t,))
    if not is_int(times) or times < 0:
        raise error(ShapeError, "diff", f"n must be a non-negative integer, got {n!r}", t)
    if t.ndim == 0:
        raise error(ShapeError, "diff", "diff needs an operand of at least one dimension", t)
    ax = _axis("diff", t, axis)
    joined = t if prepend is None and append is None else S.concatenate(_ordered(prepend, t, append, ax), axis=ax)
    for _ in range(int(times)):
        length = joined.shape[ax]
        if length == 0:  # (n beyond the length: an empty result, as NumPy's)
            break
        later, earlier = _slice_along(joined, ax, 1, length), _slice_along(joined, ax, 0, max(length - 1, 0))
        joined = F.ne(later, earlier) if joined.dtype.kind == "bool" else F.sub(later, earlier)
    return joined


def _ordered(prepend: Any, t: Tensor, append: Any, ax: int) -> list[Tensor]:
    out = []
    for extra, what in ((prepend, "prepend"), (None, ""), (append, "append")):
        if what == "":
            out.append(t)
            continue
        if extra is None:
            continue
        e = as_operand("diff", extra, what, t)
        if e.ndim == 0:
            shape = list(t.shape)
            shape[ax] = 1
            e = manip.broadcast_to(e, tuple(shape))
        out.append(e)
    return out


@named("ediff1d")
def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Tensor:
    """The differences of the flattened array, ``to_begin`` and ``to_end`` joined at its ends
    (``np.ediff1d``)."""
    flat = manip.ravel(as_operand("ediff1d", ary, "ary"))
    d = diff(flat) if flat.shape[0] else flat
    parts = [manip.ravel(as_operand("ediff1d", v, "to_begin", flat)) for v in (to_begin,) if v is not None]
    parts.append(d)
    parts += [manip.ravel(as_operand("ediff1d", v, "to_end", flat)) for v in (to_end,) if v is not None]
    return S.concatenate(parts) if len(parts) > 1 else d


@named("append")
def append(arr: Any, values: Any, axis: Any = None) -> Tensor:
    """``values`` joined after ``arr`` (``np.append``): both flattened without ``axis``."""
    a, v = as_operand("append", arr, "arr"), as_operand("append", values, "values")
    if axis is None:
        return S.concatenate([manip.ravel(a), manip.ravel(v)])
    return S.concatenate([a, v], axis=axis)


def _flip_axis(fn: str, m: Any, axis: int) -> Tensor:
    t = as_operand(fn, m, "m")
    if t.ndim <= axis:
        raise error(ShapeError, fn, f"{fn} needs an operand of at least {axis + 1} dimension(s)", t)
    return manip.flip(t, axis)


@named("fliplr")
def fliplr(m: Any) -> Tensor:
    """``m`` reversed along axis 1 (``np.fliplr``; at least 2-D)."""
    return _flip_axis("fliplr", m, 1)


@named("flipud")
def flipud(m: Any) -> Tensor:
    """``m`` reversed along axis 0 (``np.flipud``; at least 1-D)."""
    return _flip_axis("flipud", m, 0)


@named("rot90")
def rot90(m: Any, k: Any = 1, axes: Sequence[int] = (0, 1)) -> Tensor:
    """``m`` rotated by ``k`` quarter turns in the plane of ``axes``, from the first toward the
    second (``np.rot90``)."""
    t = as_operand("rot90", m, "m")
    turns = concrete_scalar("rot90", "k", k, INTEGER, operands=(t,))
    if not is_int(turns):
        raise error(OpTypeError, "rot90", f"k must be an integer, got {k!r}", t)
    plane = normalize_axes(t, tuple(axes), "rot90")  # (a repeated axis is refused here)
    if len(plane) != 2:
        raise error(ShapeError, "rot90", f"axes must be two different axes, got {axes!r}", t)
    a0, a1 = plane
    turns = int(turns) % 4
    if turns == 0:
        return manip.flip(manip.flip(t, a0), a0)  # (a copy of the same values)
    if turns == 2:
        return manip.flip(manip.flip(t, a0), a1)
    swapped = manip.swapaxes(t, a0, a1)
    return manip.flip(swapped, a0) if turns == 1 else manip.flip(swapped, a1)


@named("column_stack")
def column_stack(tup: Sequence[Any]) -> Tensor:
    """1-D arrays as columns, 2-D ones as they are, joined along axis 1 (``np.column_stack``)."""
    ts = [as_operand("column_stack", x, "tup") for x in tup]
    cols = [F.reshape(t, (t.shape[0], 1)) if t.ndim == 1 else (F.reshape(t, (1, 1)) if t.ndim == 0 else t) for t in ts]
    return S.concatenate(cols, axis=1)


@named("dstack")
def dstack(tup: Sequence[Any]) -> Tensor:
    """Arrays joined along a third axis (``np.dstack``: each made at least 3-D first)."""
    ts = [as_operand("dstack", x, "tup") for x in tup]
    three = []
    for t in ts:
        if t.ndim == 0:
            t = F.reshape(t, (1, 1, 1))
        elif t.ndim == 1:
            t = F.reshape(t, (1, t.shape[0], 1))
        elif t.ndim == 2:
            t = F.reshape(t, (*t.shape, 1))
        three.append(t)
    return S.concatenate(three, axis=2)


@named("array_split")
def array_split(ary: Any, indices_or_sections: Any, axis: Any = 0) -> list[Tensor]:
    """``split`` that allows unequal parts (``np.array_split``): ``N`` sections of an axis of
    length ``l`` are ``l % N`` parts of ``l // N + 1`` elements, then parts of ``l // N``."""
    t = as_operand("array_split", ary, "ary")
    ax = _axis("array_split", t, axis)
    indices_or_sections = _sections("array_split", indices_or_sections, t)
    if is_int(indices_or_sections):
        sections = int(operator.index(indices_or_sections))
        if sections <= 0:
            raise error(ShapeError, "array_split", f"the number of sections must be positive, got {sections}", t)
        length = t.shape[ax]
        each, extra = divmod(length, sections)
        bounds = np.cumsum([0] + [each + 1] * extra + [each] * (sections - extra))
    else:
        bounds = np.concatenate([[0], np.asarray(indices_or_sections, dtype=np.int64), [t.shape[ax]]])
    out = []
    length = t.shape[ax]
    for start, stop in itertools.pairwise(bounds):
        lo = int(np.clip(start if start >= 0 else start + length, 0, length))
        hi = int(np.clip(stop if stop >= 0 else stop + length, 0, length))
        out.append(_slice_along(t, ax, lo, max(lo, hi)))
    return out


def _sections(fn: str, indices_or_sections: Any, t: Tensor) -> Any:
    """A count or split indices, concrete: they decide the parts' shapes (a traced one is refused)."""
    if isinstance(indices_or_sections, Tensor) and indices_or_sections.ndim == 0:
        return concrete_scalar(fn, "indices_or_sections", indices_or_sections, INTEGER, operands=(t,))
    if isinstance(indices_or_sections, Tensor):
        refuse_traced(fn, "indices_or_sections", indices_or_sections, "they decide the parts' shapes",
                      "pass concrete indices", (t,))  # fmt: skip
        return indices_or_sections.numpy().tolist()
    return indices_or_sections


def _split_at_least(fn: str, ary: Any, indices_or_sections: Any, axis: int, ndim: int) -> list[Tensor]:
    t = as_operand(fn, ary, "ary")
    if t.ndim < ndim:
        raise error(ShapeError, fn, f"{fn} needs an operand of at least {ndim} dimensions", t)
    return S.split(t, _sections(fn, indices_or_sections, t), axis=axis)


@named("hsplit")
def hsplit(ary: Any, indices_or_sections: Any) -> list[Tensor]:
    """``split`` along axis 1 (axis 0 for 1-D arrays), as ``np.hsplit``."""
    t = as_operand("hsplit", ary, "ary")
    return _split_at_least("hsplit", t, indices_or_sections, 1 if t.ndim > 1 else 0, 1)


@named("vsplit")
def vsplit(ary: Any, indices_or_sections: Any) -> list[Tensor]:
    """``split`` along axis 0 of an array of at least two dimensions (``np.vsplit``)."""
    return _split_at_least("vsplit", ary, indices_or_sections, 0, 2)


@named("dsplit")
def dsplit(ary: Any, indices_or_sections: Any) -> list[Tensor]:
    """``split`` along axis 2 of an array of at least three dimensions (``np.dsplit``)."""
    return _split_at_least("dsplit", ary, indices_or_sections, 2, 3)


@named("broadcast_arrays")
def broadcast_arrays(*args: Any) -> list[Tensor]:
    """Each array broadcast to the common shape (``np.broadcast_arrays``)."""
    ts = [as_operand("broadcast_arrays", x, f"args[{i}]") for i, x in enumerate(args)]
    target = S.broadcast_shapes(*[t.shape for t in ts])
    return [t if t.shape == target else manip.broadcast_to(t, target) for t in ts]


@named("kron")
def kron(a: Any, b: Any) -> Tensor:
    """The Kronecker product (``np.kron``): blocks ``a[i, j] * b``, the lower-rank operand padded
    with leading axes of length 1."""
    x, y = as_operand("kron", a, "a"), as_operand("kron", b, "b", a)
    nd = max(x.ndim, y.ndim)
    x = F.reshape(x, (1,) * (nd - x.ndim) + x.shape)
    y = F.reshape(y, (1,) * (nd - y.ndim) + y.shape)
    # interleave: x to [x0, 1, x1, 1, ...], y to [1, y0, 1, y1, ...]; the product is [x0, y0, x1, y1, ...]
    xs = F.reshape(x, tuple(v for d in x.shape for v in (d, 1)))
    ys = F.reshape(y, tuple(v for d in y.shape for v in (1, d)))
    both = S.broadcast_shapes(xs.shape, ys.shape)
    product = F.mul(manip.broadcast_to(xs, both), manip.broadcast_to(ys, both))
    return F.reshape(product, tuple(p * q for p, q in zip(x.shape, y.shape, strict=True)))


@named("vdot")
def vdot(a: Any, b: Any) -> Tensor:
    """``sum(conj(a) * b)`` over the flattened operands (``np.vdot``)."""
    x, y = manip.ravel(as_operand("vdot", a, "a")), manip.ravel(as_operand("vdot", b, "b", a))
    if x.shape != y.shape:
        raise error(ShapeError, "vdot", "vdot needs operands of the same number of elements", x, y)
    return S.dot(F.conj(x) if x.dtype.kind == "complex" else x, y)


@named("tri")
def tri(N: Any, M: Any = None, k: Any = 0, dtype: Any = None) -> Tensor:
    """Ones at and below the ``k``-th diagonal of an ``N x M`` array, zeros above (``np.tri``;
    float64 by default, float32 under ``jax`` as ``jnp.tri``)."""
    rows = concrete_scalar("tri", "N", N, INTEGER)
    cols = rows if M is None else concrete_scalar("tri", "M", M, INTEGER)
    diag = concrete_scalar("tri", "k", k, INTEGER)
    if dtype is None:  # np.tri's default is float64, jnp.tri's float32
        d = dt.float32 if library() == "jax" else dt.float64
    else:
        d = dtype_param("tri", dtype)
    ones = S.full((int(rows), int(cols)), 1, d)
    return C.tril(ones, int(diag))


@named("diagflat")
def diagflat(v: Any, k: Any = 0) -> Tensor:
    """A 2-D array with the flattened ``v`` on its ``k``-th diagonal (``np.diagflat``)."""
    return C.diag(manip.ravel(as_operand("diagflat", v, "v")), k)


@named("trapezoid")
def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: Any = -1) -> Tensor:
    """The trapezoidal rule along ``axis`` (``np.trapezoid``): ``sum((y[1:] + y[:-1]) / 2 * d)``
    with ``d`` the differences of ``x`` (1-D along the axis, or ``y``'s shape), else ``dx``."""
    t = as_operand("trapezoid", y, "y")
    ax = _axis("trapezoid", t, axis)
    n = t.shape[ax]
    later, earlier = _slice_along(t, ax, 1, max(n, 1)), _slice_along(t, ax, 0, max(n - 1, 0))
    halves = E.true_divide(F.add(later, earlier), 2)
    if x is None:
        return E.sum(F.mul(halves, as_operand("trapezoid", dx, "dx", t)), axis=ax)
    xs = as_operand("trapezoid", x, "x", t)
    if xs.ndim == 1:
        if xs.shape[0] != n:
            raise error(ShapeError, "trapezoid", f"a 1-D x must have {n} elements (y's axis {ax})", t, xs)
        d = diff(xs)
        shape = [1] * t.ndim
        shape[ax] = max(n - 1, 0)
        d = F.reshape(d, tuple(shape))
    else:
        d = diff(xs, axis=ax)
    return E.sum(F.mul(halves, d), axis=ax)


def _static_shape(fn: str, a: Any) -> tuple[int, ...]:
    """``a``'s shape, read statically: nothing is recorded (a string or an object is no array,
    and is refused as every function refuses it)."""
    return tuple(a.shape) if isinstance(a, Tensor) else tuple(as_operand(fn, a, "a").shape)


def ndim(a: Any) -> int:
    """The number of dimensions (``np.ndim``), read from the static shape."""
    return len(_static_shape("ndim", a))


def shape(a: Any) -> tuple[int, ...]:
    """The shape (``np.shape``), read statically."""
    return _static_shape("shape", a)


def size(a: Any, axis: Any = None) -> int:
    """The number of elements, or the length of ``axis`` (``np.size``)."""
    dims = _static_shape("size", a)
    if axis is None:
        return int(np.prod(dims, dtype=np.int64))
    if not is_int(axis) or not -len(dims) <= operator.index(axis) < len(dims):
        raise error(ShapeError, "size", f"axis {axis!r} is not an axis of a rank-{len(dims)} array", a)
    return dims[operator.index(axis)]
