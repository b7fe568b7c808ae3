"""NumPy's meaning of the names NumPy and lax both use (``round``, ``max``, ``logical_and``,
``reshape``, ``cumsum``, ``argmax``, ``sort``, ``pad``, ``select`` ...), and the op functions
whose meaning already is NumPy's, under NumPy's names.

The top level ``runtime`` and ``runtime.numpy`` speak NumPy (docs/architecture.md, "What the
top level exports"): ``rt.round`` rounds half to even, ``rt.max`` is a reduction and
``rt.logical_and(3, 4)`` is True, as in NumPy, jax.numpy and the array API standard. lax's
operations keep lax's names and meanings under ``rt.lax`` (``rt.lax.round`` rounds halves away
from zero, ``rt.lax.max`` is elementwise), as ``jax.lax`` beside ``jax.numpy``.

Each function is a composition of op functions, so it records, differentiates, vmaps and lowers
like any other code; where the libraries disagree the active policy's library decides. Every
argument is checked before the first op is recorded. ``tests/runtime/test_numpy_names.py`` holds
every exported name NumPy also defines against NumPy's (or jax.numpy's) own call.
"""

from __future__ import annotations

import builtins
import itertools
import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.executor import as_tensor, asarray
from runtime.core.shapes import OpTypeError, OpValueError, ShapeError
from runtime.core.tensor import Tensor, attach_methods
from runtime.numpy import tensor_methods as tensor_api
from runtime.numpy.alpha import add, subtract
from runtime.numpy.common import is_int, keep_dims, library, normalize_axes
from runtime.numpy.manipulation import _check_precision, _contract, _error, _pair, _scale
from runtime.numpy.params import as_operand, concrete_flag, dtype_param, error, named

Operand = Any  # Tensor | np.ndarray | Python scalar

#: The op functions whose meaning is NumPy's already (elementwise with broadcasting and the
#: policy's promotion; integer inputs to a float function compute in the policy's float), under
#: the name NumPy gives them. ``rt.sin is rt.lax.sin``: one function, one meaning.
SAME_MEANING: dict[str, Any] = {
    "abs": F.abs, "acos": F.acos, "acosh": F.acosh, "asin": F.asin, "asinh": F.asinh, "atan": F.atan,
    "atanh": F.atanh, "atan2": F.atan2, "arccos": F.acos, "arccosh": F.acosh, "arcsin": F.asin,
    "arcsinh": F.asinh, "arctan": F.atan, "arctanh": F.atanh, "arctan2": F.atan2,
    "multiply": F.mul, "bitwise_and": F.logical_and, "bitwise_or": F.logical_or,
    "bitwise_xor": F.logical_xor, "bitwise_not": F.bitwise_not, "invert": F.bitwise_not, "cbrt": F.cbrt,
    "ceil": F.ceil, "floor": F.floor, "conj": F.conj, "conjugate": F.conj, "cos": F.cos, "cosh": F.cosh,
    "equal": F.eq, "not_equal": F.ne, "less": F.lt, "less_equal": F.le, "greater": F.gt,
    "greater_equal": F.ge, "exp": F.exp, "exp2": F.exp2, "expm1": F.expm1, "fmax": F.fmax, "fmin": F.fmin,
    "imag": F.imag, "real": F.real, "log": F.log, "log10": F.log10, "log1p": F.log1p, "log2": F.log2,
    "matmul": F.matmul, "mod": F.mod, "nextafter": F.nextafter, "ones": F.ones, "zeros": F.zeros,
    "pow": F.pow, "reciprocal": F.reciprocal, "repeat": F.repeat, "sign": F.sign, "sin": F.sin,
    "sinh": F.sinh, "sqrt": F.sqrt, "square": F.square, "tan": F.tan, "tanh": F.tanh, "tile": F.tile,
}  # fmt: skip


def _under_name(name: str, fn: Any) -> Any:
    """``fn`` itself where NumPy's name is the op function's; else ``fn`` under NumPy's name, whose
    errors say ``arccos:`` (the name the user called), not the op's ``acos:``."""
    if fn.__name__ == name:
        return fn
    alias = named(name)(fn)
    alias.__name__ = alias.__qualname__ = name
    alias.__doc__ = f"``np.{name}``: ``rt.lax.{fn.__name__}``, the same meaning. {fn.__doc__ or ''}".strip()
    return alias


SAME_MEANING = {name: _under_name(name, fn) for name, fn in SAME_MEANING.items()}
globals().update(SAME_MEANING)

__all__ = [
    *SAME_MEANING,
    "add",  # runtime.numpy.alpha: rt.lax.add's meaning, and torch's alpha= under torch
    "subtract",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "argsort",
    "broadcast_shapes",  # NumPy's: ints count as 1-D shapes (rt.lax.broadcast_shapes takes sequences)
    "dot",  # NumPy's dot; rt.lax.dot is lax's (ranks 1 and 2, or dimension_numbers)
    "concatenate",
    "cumprod",
    "cumsum",
    "expand_dims",
    "full",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "max",
    "min",
    "pad",
    "reshape",
    "round",
    "select",
    "sort",
    "split",
    "squeeze",
    "stack",
    "transpose",
]


def _no_out(fn: str, out: Any, *operands: Any) -> None:
    if out is not None:
        raise error(TypeError, fn, "out= is not supported: castwise returns a new tensor", *operands)


def _axis(fn: str, t: Tensor, axis: Any, *others: Any) -> int:
    """One axis of ``t`` (negative from the end) as a non-negative int; anything else raises."""
    if not is_int(axis):
        raise error(ShapeError, fn, f"axis must be an int, got {axis!r}", t, *others)
    a = operator.index(axis)
    if not -t.ndim <= a < builtins.max(t.ndim, 1):
        raise error(ShapeError, fn, f"axis {a} is out of range for rank {t.ndim}", t, *others)
    return a % builtins.max(t.ndim, 1)


def _flat(t: Tensor) -> Tensor:
    return t if t.ndim == 1 else F.reshape(t, (t.size,))


# -- rounding ----------------------------------------------------------------------------------


@named("round")
def round(a: Operand, decimals: int = 0, out: None = None) -> Tensor:  # noqa: A001
    """``np.round`` / ``jnp.round``: halves to even (``round(2.5) == 2.0``), at ``decimals``
    digits: ``rint(x * 10**decimals) / 10**decimals`` in ``x``'s dtype, as NumPy computes it
    (complex: both parts). Integers are unchanged for ``decimals >= 0`` and rounded half to even
    to a multiple of ``10**-decimals`` below (NumPy's; jax.numpy refuses that). bool is refused
    (jax.numpy refuses it; NumPy's float16 result is kept under the numpy policy)."""
    t = as_operand("round", a, "a")
    _no_out("round", out, t)
    if not is_int(decimals):
        raise error(OpTypeError, "round", f"decimals must be an int, got {decimals!r}", t)
    d = operator.index(decimals)
    if t.dtype is dt.bool_:
        if library() != "numpy":
            raise error(OpTypeError, "round", "a bool array has no rounding (NumPy gives float16)", t)
        t = F.convert(t, dt.float16)
    if t.dtype.kind == "complex":
        return F.complex(_round_real(F.real(t), d), _round_real(F.imag(t), d))
    return _round_real(t, d)


def _round_real(t: Tensor, decimals: int) -> Tensor:
    if t.dtype.kind in ("int", "uint"):
        return t if decimals >= 0 else _round_int(t, 10 ** (-decimals))
    if decimals == 0:
        return F.round(t, 1)  # lax's ROUND_TO_NEAREST_EVEN, NumPy's rint
    factor = asarray(np.asarray(10.0 ** builtins.abs(decimals)).astype(t.dtype.storage), t.dtype)
    if decimals > 0:
        return F.div(F.round(F.mul(t, factor), 1), factor)
    return F.mul(F.round(F.div(t, factor), 1), factor)


def _round_int(t: Tensor, factor: int) -> Tensor:
    """``t`` to the nearest multiple of ``factor``, halves to the even multiple (NumPy's integer
    ``round`` with negative ``decimals``), in integer arithmetic so large values stay exact."""
    if factor > np.iinfo(t.dtype.storage).max:
        return F.full(t.shape, 0, t.dtype)
    f = asarray(np.asarray(factor, t.dtype.storage), t.dtype)
    q = F.floor_div(t, f)
    r = F.sub(t, F.mul(q, f))  # 0 <= r < factor
    rest = F.sub(f, r)  # r against factor - r, not 2 * r against factor: 2 * r can overflow
    odd = F.ne(F.rem(q, 2), 0)
    up = F.logical_or(F.gt(r, rest), F.logical_and(F.eq(r, rest), odd))
    return F.mul(F.select(up, F.add(q, 1), q), f)


# -- reductions --------------------------------------------------------------------------------


def _extreme(fn: str, a: Any, axis: Any, out: Any, keepdims: Any, initial: Any, where: Any, largest: bool) -> Tensor:
    t = as_operand(fn, a, "a")
    _no_out(fn, out, t)
    if initial is None and where is None:
        return tensor_api.extreme(t, axis, keepdims, largest)
    keep = concrete_flag(fn, "keepdims", keepdims, (t,))
    axes = normalize_axes(t, axis, fn)
    if initial is None:  # NumPy's and jax.numpy's rule: a masked-out slice would have no value
        raise error(OpValueError, fn, "where= needs initial= (max and min have no identity)", t)
    init = as_operand(fn, initial, "initial", t)
    if init.ndim != 0:
        raise error(ShapeError, fn, f"initial must be a scalar, got shape {list(init.shape)}", t, init)
    init = init if init.dtype is t.dtype else F.convert(init, t.dtype)  # NumPy casts it to a's dtype
    if where is not None:
        mask = as_operand(fn, where, "where", t)
        if mask.dtype is not dt.bool_:
            raise error(OpTypeError, fn, f"where must be a bool array, got {mask.dtype.name}", t, mask)
        t = _masked(fn, t, mask, init)
    reduced = (F.reduce_max if largest else F.reduce_min)(t, axes)
    return keep_dims((F.max if largest else F.min)(reduced, init), t, axes, keep)


def _masked(fn: str, t: Tensor, mask: Tensor, fill: Tensor) -> Tensor:
    """``t`` with the masked-out elements replaced by ``fill`` (0-d, ``t``'s dtype: ``initial``,
    which then cannot lose to them): a recorded ``select``."""
    try:
        shape = np.broadcast_shapes(t.shape, mask.shape)
    except ValueError:
        shape = None
    if shape != t.shape:
        raise error(ShapeError, fn, f"where {list(mask.shape)} does not broadcast to {list(t.shape)}", t, mask)
    m = mask if mask.shape == t.shape else F.broadcast_in_dim(mask, t.shape, _trailing(mask.ndim, t.ndim))
    return F.select(m, t, F.broadcast_in_dim(fill, t.shape, ()))


def _trailing(n: int, ndim: int) -> tuple[int, ...]:
    return tuple(range(ndim - n, ndim))


@named("max")
def max(  # noqa: A001
    a: Operand, axis: Any = None, out: None = None, keepdims: bool = False, initial: Any = None, where: Any = None
) -> Tensor:
    """``np.max`` / ``jnp.max``: the largest value over ``axis`` (all axes by default),
    NaN-propagating; an empty reduced axis raises unless ``initial`` is given; ``where``
    (with ``initial``) leaves masked elements out. The elementwise maximum is ``maximum``."""
    return _extreme("max", a, axis, out, keepdims, initial, where, largest=True)


@named("min")
def min(  # noqa: A001
    a: Operand, axis: Any = None, out: None = None, keepdims: bool = False, initial: Any = None, where: Any = None
) -> Tensor:
    """``np.min`` / ``jnp.min``: the smallest value over ``axis`` (see ``max``); the elementwise
    minimum is ``minimum``."""
    return _extreme("min", a, axis, out, keepdims, initial, where, largest=False)


@named("amax")
def amax(
    a: Operand, axis: Any = None, out: None = None, keepdims: bool = False, initial: Any = None, where: Any = None
) -> Tensor:
    """``np.amax``: ``max``."""
    return _extreme("amax", a, axis, out, keepdims, initial, where, largest=True)


@named("amin")
def amin(
    a: Operand, axis: Any = None, out: None = None, keepdims: bool = False, initial: Any = None, where: Any = None
) -> Tensor:
    """``np.amin``: ``min``."""
    return _extreme("amin", a, axis, out, keepdims, initial, where, largest=False)


@named("argmax")
def argmax(a: Operand, axis: Any = None, out: None = None, *, keepdims: bool = False) -> Tensor:
    """``np.argmax``: the int64 index of the first largest value along ``axis`` (of the
    flattened array when ``None``); ``keepdims`` keeps the reduced axis as size 1."""
    t = as_operand("argmax", a, "a")
    _no_out("argmax", out, t)
    return t.argmax(axis, keepdims=keepdims)


@named("argmin")
def argmin(a: Operand, axis: Any = None, out: None = None, *, keepdims: bool = False) -> Tensor:
    """``np.argmin``: the int64 index of the first smallest value (see ``argmax``)."""
    t = as_operand("argmin", a, "a")
    _no_out("argmin", out, t)
    return t.argmin(axis, keepdims=keepdims)


@named("cumsum")
def cumsum(a: Operand, axis: Any = None, dtype: Any = None, out: None = None) -> Tensor:
    """``np.cumsum`` / ``jnp.cumsum``: running sums along ``axis`` (the flattened array by
    default), accumulated in ``dtype`` (default: bool and, except under jax, small integers in
    ``sum``'s dtype)."""
    t = as_operand("cumsum", a, "a")
    _no_out("cumsum", out, t)
    return tensor_api.cumulative(t, axis, dtype, product=False)


@named("cumprod")
def cumprod(a: Operand, axis: Any = None, dtype: Any = None, out: None = None) -> Tensor:
    """``np.cumprod`` / ``jnp.cumprod``: running products (see ``cumsum``)."""
    t = as_operand("cumprod", a, "a")
    _no_out("cumprod", out, t)
    return tensor_api.cumulative(t, axis, dtype, product=True)


# -- logical functions -------------------------------------------------------------------------


def _truth(fn: str, x: Any, *others: Any) -> Tensor:
    """``x != 0`` as bool (a recorded ``convert``; a complex value is true when either part is)."""
    t = as_operand(fn, x, "x", *others)
    return t if t.dtype is dt.bool_ else F.convert(t, dt.bool_)


@named("logical_and")
def logical_and(x1: Operand, x2: Operand) -> Tensor:
    """``np.logical_and``: the truth values of both operands, and-ed (bool; ``logical_and(3, 4)``
    is True). The bitwise and of integers is ``bitwise_and`` (``rt.lax.logical_and``)."""
    return F.logical_and(_truth("logical_and", x1, x2), _truth("logical_and", x2, x1))


@named("logical_or")
def logical_or(x1: Operand, x2: Operand) -> Tensor:
    """``np.logical_or``: the truth values or-ed (bool)."""
    return F.logical_or(_truth("logical_or", x1, x2), _truth("logical_or", x2, x1))


@named("logical_xor")
def logical_xor(x1: Operand, x2: Operand) -> Tensor:
    """``np.logical_xor``: the truth values xor-ed (bool)."""
    return F.logical_xor(_truth("logical_xor", x1, x2), _truth("logical_xor", x2, x1))


@named("logical_not")
def logical_not(x: Operand) -> Tensor:
    """``np.logical_not``: True where ``x`` is zero (bool; ``logical_not(2)`` is False)."""
    return F.logical_not(_truth("logical_not", x))


# -- shapes ------------------------------------------------------------------------------------


def _sizes(fn: str, t: Tensor, shape: Any) -> tuple[int, ...]:
    items = (shape,) if is_int(shape) else shape
    try:
        sizes = tuple(items)
    except TypeError:
        raise error(ShapeError, fn, f"shape must be an int or a sequence of ints, got {shape!r}", t) from None
    if not builtins.all(is_int(s) for s in sizes):
        raise error(ShapeError, fn, f"shape must be an int or a sequence of ints, got {shape!r}", t)
    return tuple(operator.index(s) for s in sizes)


@named("reshape")
def reshape(a: Operand, shape: Any, order: str = "C", *, copy: Any = None) -> Tensor:
    """``np.reshape`` / ``jnp.reshape``: ``a`` with ``shape`` (an int or a tuple; one ``-1`` is
    inferred), its elements read and placed in C order (``order="F"``: Fortran order, a
    recorded ``transpose`` on each side of the ``reshape``). ``copy=True`` copies first;
    otherwise the result may share ``a``'s memory, as NumPy's view does."""
    t = as_operand("reshape", a, "a")
    sizes = _sizes("reshape", t, shape)
    if order not in ("C", "F"):
        raise error(OpValueError, "reshape", f"order must be 'C' or 'F', got {order!r}", t)
    if copy not in (None, True, False):
        raise error(OpTypeError, "reshape", f"copy must be None, True or False, got {copy!r}", t)
    if copy:
        t = F._fresh_copy(t)  # copy=True: new memory, never a view of a's
    if order == "C":
        return tensor_api.reshape(t, sizes)
    flipped = F.transpose(t, tuple(range(t.ndim))[::-1]) if t.ndim > 1 else t
    out = tensor_api.reshape(flipped, sizes[::-1])
    return F.transpose(out, tuple(range(out.ndim))[::-1]) if out.ndim > 1 else out


@named("transpose")
def transpose(a: Operand, axes: Sequence[int] | None = None) -> Tensor:
    """``np.transpose``: the axes reversed, or permuted by ``axes`` (negative from the end)."""
    t = as_operand("transpose", a, "a")
    if axes is None:
        return F.transpose(t, tuple(range(t.ndim))[::-1])
    perm = [_axis("transpose", t, ax) for ax in _sizes("transpose", t, axes)]
    if sorted(perm) != list(range(t.ndim)):
        raise error(ShapeError, "transpose", f"axes {tuple(axes)} are not a permutation of rank {t.ndim}", t)
    return F.transpose(t, tuple(perm))


@named("squeeze")
def squeeze(a: Operand, axis: Any = None) -> Tensor:
    """``np.squeeze``: ``a`` without its size-1 axes (or only ``axis``; a non-1 one raises,
    except under torch, where it is left as it is)."""
    return tensor_api.squeeze(as_operand("squeeze", a, "a"), axis)


@named("expand_dims")
def expand_dims(a: Operand, axis: Any) -> Tensor:
    """``np.expand_dims``: size-1 axes inserted at ``axis`` (an int or a tuple, each a position
    of the result, negative from the end)."""
    t = as_operand("expand_dims", a, "a")
    positions = _sizes("expand_dims", t, axis)
    n = t.ndim + len(positions)
    if not builtins.all(-n <= p < n for p in positions):
        raise error(ShapeError, "expand_dims", f"axis {axis!r} is out of range for the result's rank {n}", t)
    new = {p % n for p in positions}
    if len(new) != len(positions):
        raise error(ShapeError, "expand_dims", f"axis {axis!r} repeats an axis", t)
    dims = iter(t.shape)
    return F.reshape(t, tuple(1 if i in new else next(dims) for i in range(n)))


def _operands(fn: str, arrays: Any) -> list[Tensor]:
    if isinstance(arrays, (Tensor, np.ndarray)):
        arrays = list(arrays) if np.ndim(arrays) else [arrays]
    try:
        items = list(arrays)
    except TypeError:
        raise error(OpTypeError, fn, f"arrays must be a sequence of arrays, got {type(arrays).__name__}") from None
    if not items:
        raise error(OpValueError, fn, "needs at least one array")
    return [as_operand(fn, x, f"arrays[{i}]") for i, x in enumerate(items)]


@named("concatenate")
def concatenate(arrays: Any, axis: Any = 0, dtype: Any = None) -> Tensor:
    """``np.concatenate``: the arrays joined along ``axis`` (flattened first when ``None``),
    promoted per the policy (or converted to ``dtype``)."""
    ts = _operands("concatenate", arrays)
    if dtype is not None:
        d = dtype_param("concatenate", dtype, ts)
        ts = [t if t.dtype is d else F.convert(t, d) for t in ts]
    if axis is None:
        return F.concatenate([_flat(t) for t in ts], 0)
    if ts[0].ndim == 0:
        raise error(ShapeError, "concatenate", "zero-dimensional arrays cannot be concatenated", *ts)
    return F.concatenate(ts, _axis("concatenate", ts[0], axis, *ts[1:]))


@named("stack")
def stack(arrays: Any, axis: int = 0, out: None = None, *, dtype: Any = None) -> Tensor:
    """``np.stack``: the arrays (all one shape) joined along a new axis ``axis`` of the result."""
    ts = _operands("stack", arrays)
    _no_out("stack", out, *ts)
    if dtype is not None:
        d = dtype_param("stack", dtype, ts)
        ts = [t if t.dtype is d else F.convert(t, d) for t in ts]
    return F.stack(ts, axis)


@named("split")
def split(ary: Operand, indices_or_sections: Any, axis: int = 0) -> list[Tensor]:
    """``np.split``: ``ary`` cut along ``axis`` into ``indices_or_sections`` equal parts (an
    int that must divide the axis), or at the given indices (clipped to the axis, as NumPy
    does; a part may be empty). A list of Tensors, one ``slice`` each."""
    t = as_operand("split", ary, "ary")
    if t.ndim == 0:
        raise error(ShapeError, "split", "a 0-d array cannot be split", t)
    a = _axis("split", t, axis)
    n = t.shape[a]
    if is_int(indices_or_sections):
        k = operator.index(indices_or_sections)
        if k <= 0 or n % k:
            raise error(ShapeError, "split", f"{k} sections do not divide an axis of size {n} equally", t)
        cuts = [n // k * i for i in range(1, k)]
    else:
        raw = np.asarray(indices_or_sections)
        if raw.ndim != 1 or not (raw.size == 0 or np.issubdtype(raw.dtype, np.integer)):
            raise error(
                OpTypeError, "split", f"indices must be an int or a list of ints, got {indices_or_sections!r}", t
            )
        cuts = [builtins.min(builtins.max(int(c) + (n if c < 0 else 0), 0), n) for c in raw]
    bounds = [0, *cuts, n]
    parts = []
    for lo, hi in itertools.pairwise(bounds):
        hi = builtins.max(hi, lo)
        start = [0] * t.ndim
        stop = list(t.shape)
        start[a], stop[a] = lo, hi
        parts.append(F.slice(t, tuple(start), tuple(stop)))
    return parts


# -- sorting -----------------------------------------------------------------------------------


def _sort_args(fn: str, a: Any, axis: Any, kind: Any, order: Any) -> tuple[Tensor, int]:
    t = as_operand(fn, a, "a")
    if order is not None:
        raise error(OpValueError, fn, "order= (structured arrays) is not supported", t)
    if kind is not None and kind not in ("quicksort", "mergesort", "heapsort", "stable"):
        raise error(OpValueError, fn, f"kind must be None or a NumPy sort kind, got {kind!r}", t)
    if axis is None:
        return _flat(t), 0
    if t.ndim == 0:
        raise error(ShapeError, fn, "a 0-d array has no axis to sort (pass axis=None)", t)
    return t, _axis(fn, t, axis)


@named("sort")
def sort(
    a: Operand, axis: Any = -1, *, kind: Any = None, order: Any = None, stable: bool = True, descending: bool = False
) -> Tensor:
    """``np.sort`` / ``jnp.sort``: ``a`` sorted along ``axis`` (the last by default; the
    flattened array when ``None``), NaNs last; ``descending`` as jax.numpy and the standard
    (stable: equal elements keep their order)."""
    t, ax = _sort_args("sort", a, axis, kind, order)
    if not concrete_flag("sort", "descending", descending, (t,)):
        return F.sort(t, ax, builtins.bool(stable))
    return F.reverse(F.sort(F.reverse(t, (ax,)), ax, builtins.bool(stable)), (ax,))


@named("argsort")
def argsort(
    a: Operand, axis: Any = -1, *, kind: Any = None, order: Any = None, stable: bool = True, descending: bool = False
) -> Tensor:
    """``np.argsort`` / ``jnp.argsort``: the int64 indices that sort ``a`` along ``axis`` (the
    flattened array when ``None``); stable by default, as jax.numpy (NumPy's default kind is not)."""
    t, ax = _sort_args("argsort", a, axis, kind, order)
    down = concrete_flag("argsort", "descending", descending, (t,))
    return F.argsort(t, ax, descending=down, stable=builtins.bool(stable))


# -- creation and selection --------------------------------------------------------------------


@named("full")
def full(shape: Any, fill_value: Any, dtype: Any = None) -> Tensor:
    """``np.full`` / ``jnp.full``: an array of ``shape`` filled with ``fill_value``, which may be
    an array that broadcasts to ``shape``; the dtype is ``dtype`` or the fill value's."""
    if isinstance(fill_value, (Tensor, np.ndarray, list, tuple)) and np.ndim(fill_value) != 0:
        v = as_operand("full", fill_value, "fill_value")
        if dtype is not None:
            d = dtype_param("full", dtype, (v,))
            v = v if v.dtype is d else F.convert(v, d)
        sizes = _sizes("full", v, shape)
        try:
            np.broadcast_shapes(v.shape, sizes)
        except ValueError:
            raise error(ShapeError, "full", f"fill_value {list(v.shape)} does not broadcast to {sizes}", v) from None
        if v.shape == sizes:
            return F._fresh_copy(v)  # np.full's result is new memory, never the fill value's
        return F.broadcast_in_dim(v, sizes, _trailing(v.ndim, len(sizes)))
    return F.full(shape, fill_value, dtype)


@named("select")
def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Tensor:
    """``np.select`` / ``jnp.select``: from ``choicelist[i]`` where ``condlist[i]`` is the first
    true condition, else ``default`` (all broadcast together; the conditions must be bool).
    One recorded ``select`` per condition, the last first. The three-operand
    ``select(pred, on_true, on_false)`` is ``rt.lax.select`` (or ``where``)."""
    conds = [as_operand("select", c, f"condlist[{i}]") for i, c in enumerate(condlist)]
    choices = [as_operand("select", c, f"choicelist[{i}]") for i, c in enumerate(choicelist)]
    if len(conds) != len(choices):
        raise error(
            OpValueError, "select", f"condlist has {len(conds)} entries and choicelist {len(choices)}", *conds, *choices
        )
    if not conds:
        raise error(OpValueError, "select", "select with an empty condition list is not possible")
    wrong = [i for i, c in enumerate(conds) if c.dtype is not dt.bool_]
    if wrong:
        raise error(
            OpTypeError,
            "select",
            f"condlist[{wrong[0]}] must be a bool array, got {conds[wrong[0]].dtype.name}",
            *conds,
        )
    out = default
    for cond, choice in zip(reversed(conds), reversed(choices), strict=True):
        out = tensor_api.where(cond, choice, out)
    return as_tensor(out)


# -- pad ---------------------------------------------------------------------------------------


def _pairs(fn: str, t: Tensor, value: Any, param: str) -> list[tuple[Any, Any]]:
    """``np.pad``'s per-axis ``(before, after)`` pairs from a scalar, a pair or one pair per axis."""
    arr = np.asarray(value, dtype=object)
    try:
        pairs = np.broadcast_to(arr, (t.ndim, 2))
    except ValueError:
        raise error(
            ShapeError, fn, f"{param} {value!r} does not fit rank {t.ndim} ((before, after) per axis)", t
        ) from None
    return [(pairs[i, 0], pairs[i, 1]) for i in range(t.ndim)]


@named("pad")
def pad(array: Operand, pad_width: Any, mode: str = "constant", *, constant_values: Any = 0) -> Tensor:
    """``np.pad`` / ``jnp.pad`` in modes ``"constant"`` (``constant_values``: a scalar, a pair or
    a pair per axis; axes padded in order, as NumPy does) and ``"edge"``. ``pad_width``: an int,
    a pair or a pair per axis, non-negative. lax's ``pad(x, value, config)`` is ``rt.lax.pad``."""
    t = as_operand("pad", array, "array")
    widths = _pairs("pad", t, pad_width, "pad_width")
    if not builtins.all(is_int(w) and operator.index(w) >= 0 for pair in widths for w in pair):
        raise error(ShapeError, "pad", f"pad_width must hold non-negative ints, got {pad_width!r}", t)
    if mode not in ("constant", "edge"):
        raise error(OpValueError, "pad", f"mode {mode!r} is not supported (castwise pads 'constant' and 'edge')", t)
    if mode == "edge":
        return _pad_edge(t, [(int(b), int(e)) for b, e in widths])
    values = _pairs("pad", t, constant_values, "constant_values")
    if len({(repr(b), repr(e)) for b, e in values}) <= 1 and values:
        v = values[0][0]
        return F.pad(t, _pad_value(t, v), tuple((int(b), int(e), 0) for b, e in widths))
    out = t
    for i, ((b, e), (vb, ve)) in enumerate(zip(widths, values, strict=True)):
        for width, value, before in ((int(b), vb, True), (int(e), ve, False)):
            if width:
                config = [(0, 0, 0)] * t.ndim
                config[i] = (width, 0, 0) if before else (0, width, 0)
                out = F.pad(out, _pad_value(out, value), tuple(config))
    return out if out is not t else F._fresh_copy(t)  # nothing padded: new memory, as np.pad's


def _pad_value(t: Tensor, value: Any) -> Any:
    """A constant as ``t``'s dtype casts it (``np.pad`` of integers with 2.7 pads 2)."""
    if isinstance(value, Tensor):
        return value if value.dtype is t.dtype else F.convert(value, t.dtype)
    return np.asarray(value).astype(t.dtype.storage).item()


def _pad_edge(t: Tensor, widths: list[tuple[int, int]]) -> Tensor:
    """Each axis extended by copies of its first and last slice (a ``slice``, a
    ``broadcast_in_dim`` and a ``concatenate`` per padded axis)."""
    out = t
    for i, (b, e) in enumerate(widths):
        if not (b or e):
            continue
        if out.shape[i] == 0:
            raise error(OpValueError, "pad", f"can't extend the empty axis {i} in mode 'edge'", t)
        parts = []
        for width, at in ((b, 0), (e, out.shape[i] - 1)):
            start, stop = [0] * out.ndim, list(out.shape)
            start[i], stop[i] = at, at + 1
            edge = F.slice(out, tuple(start), tuple(stop))
            shape = list(out.shape)
            shape[i] = width
            parts.append(F.broadcast_in_dim(edge, tuple(shape), tuple(range(out.ndim))) if width else None)
        out = F.concatenate([p for p in (parts[0], out, parts[1]) if p is not None], i)
    return out if out is not t else F._fresh_copy(t)


# -- the Tensor method of the same meaning -----------------------------------------------------


if TYPE_CHECKING:
    _Base = Tensor
else:
    _Base = object


class _Methods(_Base):
    """The Tensor method this module gives its meaning (``attach_methods`` puts it on Tensor)."""

    def round(self, decimals: int = 0, out: None = None) -> Tensor:
        """``x.round(decimals)``: ``runtime.round``, halves to even (NumPy's ``ndarray.round``,
        PyTorch's ``round``; lax's halves-away rounding is ``rt.lax.round``)."""
        return round(self, decimals, out)


attach_methods(_Methods)


@named("dot")
def dot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Tensor:
    """``jnp.dot`` / ``np.dot`` (``torch.dot`` for vectors): a 0-d operand multiplies; else the
    last axis of ``a`` with the only axis of a vector ``b``, or with ``b``'s second-to-last
    axis; the result's shape is ``a.shape[:-1] + b.shape[:-2] + b.shape[-1:]`` (one
    ``dot_general``; ``precision`` and ``preferred_element_type`` as its). PyTorch's ``dot`` takes
    vectors only."""
    x, y = _pair("dot", a, b)
    _check_precision("dot", (x, y), precision)
    if tensor_api.library() == "torch" and (x.ndim != 1 or y.ndim != 1):
        raise _error(ShapeError, "dot", (x, y), "torch.dot takes 1-D operands (use matmul or tensordot)")
    if x.ndim == 0 or y.ndim == 0:
        return _scale("dot", x, y, preferred_element_type)
    return _contract("dot", x, y, (x.ndim - 1,), (builtins.max(y.ndim - 2, 0),), preferred_element_type, precision)


def broadcast_shapes(*shapes: Any) -> tuple[int, ...]:
    """The shape the given shapes broadcast to (``np.broadcast_shapes``; ints count as 1-D shapes)."""
    return F.broadcast_shapes(*[(s,) if is_int(s) else tuple(s) for s in shapes])
