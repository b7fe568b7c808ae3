"""Array creation as jax.numpy, NumPy and PyTorch users know it: ``arange``, ``linspace``,
``array``, ``eye``/``identity``, ``zeros_like``/``ones_like``/``full_like``, ``tril``/``triu``,
``diag``/``diagonal`` and ``meshgrid``.

Every function is a composition of ordinary ops (``iota``, ``full``, ``convert``, the
arithmetic ops, ``select``, ``slice``, ``pad``, ``reshape``, ``transpose``,
``broadcast_in_dim``, ``concatenate``), run through the one eager executor, so on a
tracked operand the recording holds exactly what ran: it replays, differentiates,
vmaps and lowers like any other graph, and no op is added to the vocabulary.

Where the libraries disagree, the active policy's library decides (the table of
``runtime.numpy.tensor_methods.LIBRARY``: jax.numpy for ``jax``/``jax-strict`` and the policies
not modelled on a library, NumPy for ``numpy``, PyTorch for ``torch``/``kael``):
default dtypes come from the policy (``scalar_default``, ``result_type``), and
``arange``/``linspace`` compute their values with the library's own arithmetic, so
they agree to the last bit. docs/tensor.md ("Creating arrays") lists the names.
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.dtypes import DType
from runtime.core.executor import as_tensor, asarray
from runtime.core.graph import ConcretizationError, is_traced
from runtime.core.promotion import get_policy, get_policy_object, result_type
from runtime.core.shapes import OpMemoryError, OpTypeError, OpValueError, ShapeError
from runtime.core.tensor import Tensor
from runtime.numpy.params import named
from runtime.numpy.tensor_methods import library

__all__ = [
    "arange",
    "array",
    "can_cast",
    "diag",
    "diagonal",
    "eye",
    "full_like",
    "identity",
    "linspace",
    "meshgrid",
    "ones_like",
    "tril",
    "triu",
    "zeros_like",
]


# -- errors and argument checks ------------------------------------------------------------------


def _describe(value: Any) -> str:
    if isinstance(value, Tensor):
        return f"{value.dtype.short}[{', '.join(map(str, value.shape))}]"
    if isinstance(value, (np.ndarray, np.generic)):
        return f"{value.dtype}[{', '.join(map(str, np.shape(value)))}]"
    return f"{value!r} ({type(value).__name__})"


def _error(cls: type[Exception], fn: str, message: str, **operands: Any) -> Exception:
    """``cls`` with a message naming the function, each operand's dtype and shape (or Python
    value and type) and the active policy, as every castwise op error does."""
    described = ", ".join(f"{name}={_describe(v)}" for name, v in operands.items())
    return cls(f"{fn}: {message} [operands {described}; policy {get_policy()!r}]")


def _dtype_arg(fn: str, dtype: Any, **operands: Any) -> DType | None:
    """The ``dtype=`` argument as a castwise DType (None stays None), else ``OpTypeError``."""
    if dtype is None:
        return None
    try:
        return dt.dtype(dtype)
    except TypeError as err:
        raise _error(OpTypeError, fn, f"dtype {dtype!r} is not a castwise dtype ({err})", **operands) from None


def _int_arg(fn: str, what: str, value: Any, **operands: Any) -> int:
    """An integer argument (not a bool, not a float), else ``OpTypeError``; a traced 0-d Tensor
    raises ``ConcretizationError`` (a size or an offset is static, as in ``jnp.eye`` under
    ``jax.jit``: ``operator.index`` would read the value this trace saw)."""
    if isinstance(value, Tensor) and is_traced(value):
        raise _traced(fn, what, "it decides the shape of the result", **operands)
    if isinstance(value, (builtins.bool, np.bool_)):
        raise _error(OpTypeError, fn, f"{what} must be an integer, got a bool", **operands)
    try:
        return operator.index(value)
    except TypeError:
        raise _error(OpTypeError, fn, f"{what} must be an integer, got {type(value).__name__}", **operands) from None


def _size_arg(fn: str, what: str, value: Any, **operands: Any) -> int:
    """A non-negative integer argument (a dimension), else ``OpTypeError``/``ShapeError``."""
    n = _int_arg(fn, what, value, **operands)
    if n < 0:
        raise _error(ShapeError, fn, f"{what} must be non-negative, got {n}", **operands)
    return n


def _matrix_arg(fn: str, x: Any, **operands: Any) -> Tensor:
    """``x`` as a Tensor of at least two dimensions, else ``ShapeError``."""
    t = as_tensor(x)
    if t.ndim < 2:
        raise _error(ShapeError, fn, f"needs an array of at least 2 dimensions, got {t.ndim}", x=t, **operands)
    return t


def _default_float() -> DType:
    """The policy's default floating dtype (float64 under jax and numpy, float32 under torch)."""
    return get_policy_object(None).scalar_default("float", None)


def _to_inexact(d: DType) -> DType:
    """``d`` if it is floating or complex, else the float the library computes it in: NumPy's
    ``ensure_inexact`` (float64), jax.numpy's ``to_inexact_dtype`` (float32 for bool and
    integers up to 32 bits, float64 for 64-bit ones). The bounds are converted explicitly, so
    a policy that converts no integer implicitly (``strict``) computes the same."""
    if d.is_inexact:
        return d
    has64 = dt.float64 in get_policy_object(None).dtypes
    if library() == "numpy" or d.bits > 32:
        return dt.float64 if has64 else dt.float32
    return dt.float32


def _filled(shape: tuple[int, ...], value: Any, dtype: DType) -> Tensor:
    return F.full(shape, value, dtype)


def _converted(t: Tensor, dtype: DType) -> Tensor:
    """``convert`` only where the dtype changes (no equation for a no-op)."""
    return t if t.dtype is dtype else F.convert(t, dtype)


def _wide(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """A 0-d ``t`` broadcast to ``shape`` (recorded as ``broadcast_in_dim``)."""
    return t if t.shape == shape else F.broadcast_in_dim(t, shape, ())


def _traced(fn: str, name: str, why: str, **operands: Any) -> Exception:
    """``ConcretizationError`` for a traced ``name`` that must be concrete (``why``: what it decides)."""
    return _error(
        ConcretizationError, fn,
        f"{name} is traced (its value is known only when the traced program runs: rt.trace, autodiff.jit, "
        f"autodiff.vmap), and {why}; pass it as a Python scalar (autodiff.jit makes Python scalars part of "
        "its cache key) or compute it outside the traced function",
        **operands,
    )  # fmt: skip


# -- arange --------------------------------------------------------------------------------------


def _scalar_value(fn: str, name: str, value: Any, **operands: Any) -> Any:
    """A concrete Python scalar from a Python/NumPy scalar or a 0-d array (``arange``'s length
    depends on it, as jax.numpy requires it concrete): a traced 0-d Tensor (inside ``rt.trace``,
    ``autodiff.jit``, ``autodiff.vmap``) raises ``ConcretizationError``, as ``jnp.arange`` under
    ``jax.jit`` raises ``ConcretizationTypeError``."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise _error(ShapeError, fn, f"{name} must be a scalar, got shape {value.shape}", **operands)
        if is_traced(value):
            raise _traced(fn, name, "it decides the length of the result", **operands)
        value = value._array
    if isinstance(value, (np.ndarray, np.generic)):
        if value.ndim != 0:
            raise _error(ShapeError, fn, f"{name} must be a scalar, got shape {value.shape}", **operands)
        value = value.item()
    if isinstance(value, builtins.complex):
        raise _error(OpTypeError, fn, f"{name} must be real (complex ranges are refused)", **operands)
    if not isinstance(value, (builtins.bool, int, float)):
        raise _error(OpTypeError, fn, f"{name} must be a real scalar, got {type(value).__name__}", **operands)
    return value


@named("arange")
def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None) -> Tensor:
    """Evenly spaced values in ``[start, stop)``: ``jnp.arange`` / ``np.arange`` / ``torch.arange``.

    ``arange(n)`` is ``arange(0, n)``. The length is ``ceil((stop - start) / step)`` (at
    least 0), as in NumPy. Without ``dtype`` the policy's ``result_type`` of the arguments
    decides (``arange(5)`` is int64 under jax, numpy and torch; ``arange(0.5, 3)`` is
    float64 under jax and numpy, float32 under torch). The values are computed as the
    policy's library does: jax.numpy ``start + step * i`` (in float32 for floats narrower
    than 32 bits), NumPy ``first + i * (second - first)`` (its ``fill``; in float32 for
    the 16-bit floats), PyTorch ``start + step * i`` in its accumulation type.
    """
    ops_ = {"start": start, "stop": stop, "step": step}
    target = _dtype_arg("arange", dtype, **ops_)
    args = [v for v in (start, stop, step) if v is not None]
    lo = _scalar_value("arange", "start", start, **ops_)
    hi = None if stop is None else _scalar_value("arange", "stop", stop, **ops_)
    inc = None if step is None else _scalar_value("arange", "step", step, **ops_)
    if target is None:
        target = result_type(*args)
        if target is dt.bool_ and library() in ("numpy", "torch"):
            target = dt.int64  # np.arange(False, True) and torch.arange(False, True) count in int64
    if target.kind == "complex":
        raise _error(OpTypeError, "arange", f"cannot make a {target.name} range (complex ranges are refused)", **ops_)
    if hi is None:
        lo, hi = 0, lo
    explicit_step = inc is not None
    if inc is None:
        inc = 1
    if inc == 0:
        raise _error(ShapeError, "arange", "step must not be zero", **ops_)
    try:
        n = builtins.max(0, math.ceil((hi - lo) / inc))
    except (OverflowError, ValueError):
        raise _error(ShapeError, "arange", "the length is not finite", **ops_) from None
    lib = library()
    if lib == "torch" and (hi - lo) * inc < 0:  # NumPy and jax.numpy give an empty range; PyTorch refuses
        raise _error(ShapeError, "arange", "the bounds are inconsistent with the step's sign", **ops_)
    try:
        if lib == "numpy":
            return _arange_numpy(lo, inc, n, target)
        if lib == "torch":
            return _arange_torch(lo, inc, n, target)
        return _arange_jax(lo, inc, n, target, explicit_step)
    except OpMemoryError as err:  # the size the user asked for, not the iota or full that failed
        message = str(err).partition(": ")[2].rsplit(" [", 1)[0]
        raise _error(OpMemoryError, "arange", f"a range of {n} values: {message}", **ops_) from None


_PYTHON_DATA = (builtins.bool, int, float, complex, list, tuple)


def array(object: Any, dtype: Any = None, copy: Any = True, ndmin: Any = 0) -> Tensor:  # noqa: A002 (NumPy's name)
    """``jnp.array`` / ``np.array``: ``object`` as a Tensor (``dtype=`` as ``asarray``'s), a copy by
    default, unlike ``asarray``, which shares a NumPy array's or a Tensor's memory.

    ``copy=True`` always copies (a recorded ``convert``, so a tracked operand stays
    differentiable); ``copy=False`` or ``None`` shares the memory where no conversion is needed
    (as ``asarray``; jax.numpy's ``copy=False`` likewise does not raise when it must copy).
    ``ndmin`` prepends size-1 axes up to that many dimensions, as NumPy's does."""
    if copy is not None and not isinstance(copy, (builtins.bool, np.bool_)):
        raise _error(OpTypeError, "array", f"copy must be True, False or None, got {copy!r}", object=object)
    target = _dtype_arg("array", dtype, object=object)
    n = _size_arg("array", "ndmin", ndmin, object=object)
    try:
        t = asarray(object, dtype=target)
    except (OpTypeError, OpValueError) as err:
        raise type(err)(f"array: {str(err).removeprefix('asarray: ')}") from None
    if copy and not isinstance(object, _PYTHON_DATA):  # Python data is always fresh memory
        weak = t.weak
        t = F.convert(t, t.dtype)
        t.weak = weak
    if t.ndim < n:
        t = F.reshape(t, (1,) * (n - t.ndim) + t.shape)
    return t


def _narrow_float(d: DType) -> bool:
    return d.kind == "float" and d.bits < 32


def _arange_jax(lo: Any, inc: Any, n: int, target: DType, explicit_step: bool) -> Tensor:
    """jax.numpy: ``iota`` (plus ``start``); with a step ``start + step * iota`` in the working
    dtype (float32 for floats under 32 bits), converted to ``target``."""
    if not explicit_step:
        i = F.iota(target, (n,))
        return i if lo == 0 else F.add(_filled((n,), lo, target), i)
    work = dt.float32 if _narrow_float(target) else target
    out = F.add(_filled((n,), lo, work), F.mul(_filled((n,), inc, work), F.iota(work, (n,))))
    return _converted(out, target)


def _arange_numpy(lo: Any, inc: Any, n: int, target: DType) -> Tensor:
    """NumPy: the first two values are stored from Python (``start``, ``start + step``), the
    rest is ``first + i * (second - first)`` (``fill``; float32 arithmetic for the narrow
    floats, whose ``fill`` goes through float)."""
    work = dt.float32 if _narrow_float(target) else target
    first = _converted(_filled((n,), lo, target), work)
    # a one-value range never stores its second value (``start + step`` may not fit the dtype)
    second = _converted(_filled((n,), lo + inc, target), work) if n > 1 else first
    i = F.iota(work, (n,))
    out = F.add(first, F.mul(i, F.sub(second, first)))
    index = F.iota(dt.int32, (n,))
    out = F.select(F.eq(index, _filled((n,), 1, dt.int32)), second, out)
    out = F.select(F.eq(index, _filled((n,), 0, dt.int32)), first, out)
    return _converted(out, target)


def _arange_torch(lo: Any, inc: Any, n: int, target: DType) -> Tensor:
    """PyTorch (its CPU kernel): ``start + step * i`` in the accumulation type (double for
    float32/float64, float for the 16-bit floats, int64 for integers)."""
    if target.kind == "float":
        work = dt.float32 if _narrow_float(target) else dt.float64
    else:
        work = dt.int64 if target.is_integer else target
    out = F.add(_filled((n,), lo, work), F.mul(_filled((n,), inc, work), F.iota(work, (n,))))
    return _converted(out, target)


# -- linspace ------------------------------------------------------------------------------------


def _bound(fn: str, name: str, value: Any, **operands: Any) -> Tensor:
    """``start``/``stop`` as a 0-d Tensor (a tracked one stays tracked: linspace is
    differentiable in its bounds)."""
    if isinstance(value, (np.ndarray, np.generic, Tensor)) and np.ndim(value) != 0:
        raise _error(ShapeError, fn, f"{name} must be a scalar, got shape {np.shape(value)}", **operands)
    if not isinstance(value, (Tensor, np.ndarray, np.generic, builtins.bool, int, float, builtins.complex)):
        raise _error(OpTypeError, fn, f"{name} must be a number, got {type(value).__name__}", **operands)
    t = as_tensor(value)
    return t.astype(t.dtype) if t.weak else t  # jax.numpy's linspace converts its bounds: strong


@named("linspace")
def linspace(start: Any, stop: Any, num: Any = 50, endpoint: bool = True, dtype: Any = None) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` (included unless ``endpoint`` is
    False): ``jnp.linspace`` / ``np.linspace`` / ``torch.linspace``.

    ``start``/``stop`` are scalars (Python, NumPy or 0-d Tensors; a tracked one gets its
    gradient). Without ``dtype``: the inexact ``result_type`` of the bounds under jax and
    numpy (float64 for Python numbers), the policy's default float under torch (float32).
    Values: jax.numpy's ``start * (1 - t) + stop * t`` with ``t = i / div`` in the result's
    inexact dtype; NumPy's ``start + i * step`` computed in the bounds' inexact dtype, the
    last value set to ``stop``; PyTorch's two-sided ``start + step * i`` /
    ``stop - step * (num - 1 - i)`` in the result dtype.
    """
    ops_ = {"start": start, "stop": stop, "num": num}
    n = _size_arg("linspace", "num", num, **ops_)
    target = _dtype_arg("linspace", dtype, **ops_)
    s, e = _bound("linspace", "start", start, **ops_), _bound("linspace", "stop", stop, **ops_)
    lib = library()
    if target is None:
        if lib == "torch":
            kinds = (s.dtype.kind, e.dtype.kind)
            target = get_policy_object(None).scalar_default("complex" if "complex" in kinds else "float", None)
        else:
            target = _to_inexact(result_type(start, stop))
    endpoint = builtins.bool(endpoint)
    div = n - 1 if endpoint else n
    if lib == "numpy":
        out = _linspace_numpy(s, e, n, div, endpoint, _to_inexact(result_type(start, stop)))
    elif lib == "torch":
        out = _linspace_torch(s, e, n, div, target)
    else:
        out = _linspace_jax(s, e, n, div, endpoint, _to_inexact(target))
    if not target.is_inexact and out.dtype.is_inexact and lib != "torch":
        out = F.floor(out)  # jax.numpy and NumPy floor before converting (PyTorch truncates)
    return _converted(out, target)


def _linspace_jax(s: Tensor, e: Tensor, n: int, div: int, endpoint: bool, work: DType) -> Tensor:
    s, e = _converted(s, work), _converted(e, work)
    if n > 1:
        real = dt.COMPLEX_PART.get(work, work)
        t = _converted(F.div(F.iota(real, (div,)), _filled((div,), div, real)), work)
        head = F.add(F.mul(_wide(s, (div,)), F.sub(_filled((div,), 1, work), t)), F.mul(_wide(e, (div,)), t))
        return F.concatenate([head, F.reshape(e, (1,))], 0) if endpoint else head
    if n == 1:
        return F.reshape(s, (1,))
    return _filled((0,), 0, work)


def _linspace_numpy(s: Tensor, e: Tensor, n: int, div: int, endpoint: bool, work: DType) -> Tensor:
    s, e = _converted(s, work), _converted(e, work)
    delta = F.sub(e, s)
    y = F.iota(work, (n,))
    if div > 0:
        step = F.div(delta, _filled((), div, work))
        scaled = F.mul(y, _wide(step, (n,)))
        # NumPy divides first where the step underflows to 0 (denormal bounds): chosen per
        # value with select, so a recording (or a vmapped batch) keeps both branches
        small = F.mul(F.div(y, _filled((n,), div, work)), _wide(delta, (n,)))
        zero = F.eq(step, _filled((), 0, work))
        if s.node is None and e.node is None:
            y = small if builtins.bool(zero.numpy()) else scaled
        else:
            y = F.select(_wide(zero, (n,)), small, scaled)
    else:
        y = F.mul(y, _wide(delta, (n,)))
    y = F.add(y, _wide(s, (n,)))
    if endpoint and n > 1:
        y = F.concatenate([F.slice(y, (0,), (n - 1,)), F.reshape(e, (1,))], 0)
    return y


def _linspace_torch(s: Tensor, e: Tensor, n: int, div: int, target: DType) -> Tensor:
    work = target if target.is_inexact else dt.float64
    s, e = _converted(s, work), _converted(e, work)
    if n == 0:
        return _filled((0,), 0, work)
    if n == 1:
        return F.reshape(s, (1,))
    step = F.div(F.sub(e, s), _filled((), div, work))
    i = F.iota(work, (n,))
    low = F.add(_wide(s, (n,)), F.mul(_wide(step, (n,)), i))
    high = F.sub(_wide(e, (n,)), F.mul(_wide(step, (n,)), F.sub(_filled((n,), n - 1, work), i)))
    if div != n - 1:  # endpoint=False: one-sided, PyTorch has no such call
        return low
    index = F.iota(dt.int32, (n,))
    return F.select(F.lt(index, _filled((n,), n // 2, dt.int32)), low, high)


# -- eye, identity, *_like -------------------------------------------------------------------------


def _offset_mask(shape: tuple[int, ...], k: int, compare: Any) -> Tensor:
    """``compare(col - row, k)`` over the last two axes of ``shape`` (bool). ``k`` is clipped to
    the matrix (a farther diagonal selects the same nothing or everything), so int32 holds it."""
    rows, cols = shape[-2], shape[-1]
    k = builtins.max(-rows - 1, builtins.min(k, cols + 1))
    nd = len(shape)
    diff = F.sub(F.iota(dt.int32, shape, nd - 1), F.iota(dt.int32, shape, nd - 2))
    return compare(diff, _filled(shape, k, dt.int32))


@named("eye")
def eye(n: Any, m: Any = None, k: Any = 0, dtype: Any = None) -> Tensor:
    """An ``n x m`` matrix with ones on the ``k``-th diagonal: ``jnp.eye`` / ``np.eye`` /
    ``torch.eye``. Default dtype: the policy's default float (float64 under jax and numpy,
    float32 under torch)."""
    ops_ = {"n": n, "m": m, "k": k}
    rows = _size_arg("eye", "n", n, **ops_)
    cols = rows if m is None else _size_arg("eye", "m", m, **ops_)
    offset = _int_arg("eye", "k", k, **ops_)
    target = _dtype_arg("eye", dtype, **ops_) or _default_float()
    mask = _offset_mask((rows, cols), offset, F.eq)
    return _converted(mask, target)


@named("identity")
def identity(n: Any, dtype: Any = None) -> Tensor:
    """The ``n x n`` identity matrix: ``eye(n, dtype=dtype)``."""
    _size_arg("identity", "n", n, n=n)
    return eye(n, dtype=dtype)


@named("full_like")
def full_like(x: Any, fill_value: Any, dtype: Any = None) -> Tensor:
    """An array of ``x``'s shape (and dtype, unless ``dtype`` is given) filled with
    ``fill_value``. A 0-d Tensor fill is broadcast (a tracked one gets its gradient)."""
    return _full_like("full_like", x, fill_value, dtype)


def _full_like(fn: str, x: Any, fill_value: Any, dtype: Any) -> Tensor:
    t = as_tensor(x)
    target = _dtype_arg(fn, dtype, x=t, fill_value=fill_value) or t.dtype
    if isinstance(fill_value, (Tensor, np.ndarray, np.generic)):
        if np.ndim(fill_value) != 0:
            raise _error(ShapeError, fn, "fill_value must be a scalar", x=t, fill_value=fill_value)
        out = F.broadcast_in_dim(_converted(as_tensor(fill_value), target), t.shape, ())
    else:
        out = _filled(t.shape, fill_value, target)
    if dtype is None and t.weak:
        out.weak = True  # jax.numpy keeps a weakly typed operand's weak type (lax.full_like)
    return out


@named("zeros_like")
def zeros_like(x: Any, dtype: Any = None) -> Tensor:
    """Zeros of ``x``'s shape and dtype (or ``dtype``)."""
    return _full_like("zeros_like", x, 0, dtype)


@named("ones_like")
def ones_like(x: Any, dtype: Any = None) -> Tensor:
    """Ones of ``x``'s shape and dtype (or ``dtype``)."""
    return _full_like("ones_like", x, 1, dtype)


# -- triangles and diagonals -----------------------------------------------------------------------


def _triangle(fn: str, x: Any, k: Any, compare: Any) -> Tensor:
    t = _matrix_arg(fn, x, k=k)
    offset = _int_arg(fn, "k", k, x=t, k=k)
    keep = _offset_mask(t.shape, offset, compare)
    return F.select(keep, t, _filled(t.shape, 0, t.dtype))


@named("tril")
def tril(x: Any, k: int = 0) -> Tensor:
    """``x`` with the entries above the ``k``-th diagonal zeroed (the last two axes; the
    leading ones are a batch). A ``select``: its gradient is the same mask."""
    return _triangle("tril", x, k, F.le)


@named("triu")
def triu(x: Any, k: int = 0) -> Tensor:
    """``x`` with the entries below the ``k``-th diagonal zeroed (the last two axes)."""
    return _triangle("triu", x, k, F.ge)


@named("diagonal")
def diagonal(x: Any, offset: Any = 0, axis1: Any = 0, axis2: Any = 1) -> Tensor:
    """The ``offset``-th diagonal of ``x`` over ``axis1``/``axis2``, appended as the last axis
    (``jnp.diagonal`` / ``np.diagonal`` / ``torch.diagonal``).

    Built from ``transpose``, ``slice`` and ``reshape`` only (the diagonal of an ``L x w``
    block is every ``(w + 1)``-th element of its rows laid end to end), so no value is
    touched by arithmetic: ``-0.0`` and NaN come through, and the gradient is a ``pad``.

    The result is always new memory (a last recorded ``broadcast_in_dim`` to its own shape,
    ``_fresh_copy``), whatever ``x``'s layout: a later write into ``x`` never shows in it, nor a
    write into it in ``x``. (NumPy returns a read-only view and ``torch.diagonal`` a writable
    one; jax.numpy's values, which cannot alias, are what castwise's are.)
    """
    ops_ = {"offset": offset, "axis1": axis1, "axis2": axis2}
    t = _matrix_arg("diagonal", x, **ops_)
    k = _int_arg("diagonal", "offset", offset, x=t, **ops_)
    axes = []
    for name, a in (("axis1", axis1), ("axis2", axis2)):
        a = _int_arg("diagonal", name, a, x=t, **ops_)
        if not -t.ndim <= a < t.ndim:
            raise _error(ShapeError, "diagonal", f"{name}={a} is out of range for {t.ndim} dimensions", x=t, **ops_)
        axes.append(a % t.ndim)
    a1, a2 = axes
    if a1 == a2:
        raise _error(ShapeError, "diagonal", "axis1 and axis2 must be different axes", x=t, **ops_)
    batch = [d for d in range(t.ndim) if d not in (a1, a2)]
    perm = (*batch, a1, a2)
    if perm != tuple(range(t.ndim)):
        t = F.transpose(t, perm)
    *lead, rows, cols = t.shape
    r0, c0 = (0, k) if k >= 0 else (-k, 0)
    length = builtins.max(0, builtins.min(rows - r0, cols - c0))
    nb = len(lead)
    if length == 0:
        block = F.slice(t, (0,) * (nb + 2), (*lead, 0, cols))
        return F._fresh_copy(F.reshape(block, (*lead, 0)))
    block = F.slice(t, (*[0] * nb, r0, 0), (*lead, r0 + length, cols))
    flat = F.reshape(block, (*lead, length * cols))
    stop = c0 + (length - 1) * (cols + 1) + 1
    # the slices (and the reshape, for a contiguous x) are views of x: copy, so the result never
    # shares x's memory, whatever x's layout (one rule, where a view would depend on strides)
    return F._fresh_copy(F.slice(flat, (*[0] * nb, c0), (*lead, stop), (*[1] * nb, cols + 1)))


@named("diag")
def diag(v: Any, k: Any = 0) -> Tensor:
    """``jnp.diag`` / ``np.diag`` / ``torch.diag``: a 1-D ``v`` becomes the square matrix with
    ``v`` on its ``k``-th diagonal; a 2-D ``v`` gives its ``k``-th diagonal, in new memory
    (``diagonal``'s rule; ``torch.diag`` copies too, NumPy's is a read-only view).

    The matrix is one ``pad`` of ``v`` (interior padding ``N`` puts consecutive entries
    ``N + 1`` apart in the flattened ``N x N`` result) and a ``reshape``: exact, and its
    gradient is the diagonal again."""
    t = as_tensor(v)
    offset = _int_arg("diag", "k", k, v=t, k=k)
    if t.ndim == 2:
        return diagonal(t, offset, 0, 1)
    if t.ndim != 1:
        raise _error(ShapeError, "diag", f"takes a 1-D or 2-D array, got {t.ndim} dimensions", v=t, k=k)
    n = t.shape[0]
    size = n + builtins.abs(offset)
    first = offset if offset >= 0 else -offset * size
    if n == 0:
        config = [(size * size, 0, 0)]
    else:
        config = [(first, size * size - first - (n - 1) * (size + 1) - 1, size)]
    return F.reshape(F.pad(t, 0, config), (size, size))


# -- meshgrid ------------------------------------------------------------------------------------


@named("meshgrid")
def meshgrid(*xs: Any, indexing: str = "xy") -> Sequence[Tensor]:
    """Coordinate arrays from 1-D coordinate vectors (``jnp.meshgrid`` / ``np.meshgrid`` /
    ``torch.meshgrid``): output ``i`` is ``xs[i]`` broadcast along its own axis
    (``broadcast_in_dim``; each keeps its dtype). ``indexing="xy"`` swaps the first two axes
    (Cartesian), ``"ij"`` does not (matrix). jax.numpy takes only 1-D vectors; NumPy and
    PyTorch flatten. A list under jax, a tuple under numpy and torch, as each library returns.
    """
    ts = [as_tensor(x) for x in xs]
    operands = {f"xs[{i}]": t for i, t in enumerate(ts)}
    if indexing not in ("xy", "ij"):
        raise _error(ShapeError, "meshgrid", f"indexing must be 'xy' or 'ij', got {indexing!r}", **operands)
    lib = library()
    if lib == "jax":
        for t in ts:
            if t.ndim != 1:
                raise _error(ShapeError, "meshgrid", "takes 1-D arrays", **operands)
    else:
        if lib == "torch" and len({t.dtype for t in ts}) > 1:  # torch.meshgrid refuses a mix
            raise _error(OpTypeError, "meshgrid", "takes operands of one dtype under PyTorch's rules", **operands)
        ts = [t if t.ndim == 1 else F.reshape(t, (t.size,)) for t in ts]
    lengths = [t.shape[0] for t in ts]
    axes = list(range(len(ts)))
    if indexing == "xy" and len(ts) >= 2:
        axes[0], axes[1] = 1, 0
    shape = [0] * len(ts)
    for axis, length in zip(axes, lengths, strict=True):
        shape[axis] = length
    out = [F.broadcast_in_dim(t, tuple(shape), (axis,)) for t, axis in zip(ts, axes, strict=True)]
    return out if lib == "jax" else tuple(out)


def can_cast(from_: Any, to: Any) -> bool:
    """Whether ``from_`` (a dtype, or an array's dtype) casts to ``to`` under the active policy's
    library: PyTorch's rule under torch (``torch.can_cast``: no complex to non-complex, no float
    to integer, nothing but bool to bool), NumPy's safe-casting rule elsewhere (``np.can_cast``,
    which ``jnp.can_cast`` follows)."""
    pair: list[DType] = []
    for what, value in (("from_", from_), ("to", to)):
        try:
            pair.append(value.dtype if isinstance(value, Tensor) else dt.dtype(value))
        except TypeError as err:
            raise OpTypeError(f"can_cast: {what} {value!r} is no dtype ({err}) [policy {get_policy()!r}]") from None
    source, target = pair
    if library() == "torch":
        if source.kind == "complex" and target.kind != "complex":
            return False
        if source.kind == "float" and target.kind in ("int", "uint"):
            return False
        return not (source.kind != "bool" and target.kind == "bool")
    return bool(np.can_cast(np.dtype(source.storage), np.dtype(target.storage)))
