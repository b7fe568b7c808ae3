"""The pseudo-inverse, least squares, rank, condition number, products and matrix views of
``rt.linalg`` (``runtime.numpy.linalg``, the namespace, re-exports them).

Each function takes jax.numpy.linalg's signature (the array API standard's where it has the
function: ``matrix_transpose``, ``diagonal(x, /, *, offset)``, ``trace(x, /, *, offset, dtype)``,
``vecdot(x1, x2, /, *, axis)``, ``cross(x1, x2, /, *, axis)``, ``pinv(x, /, *, rtol)``,
``matrix_rank(x, /, *, rtol)``) and is composed of castwise's op functions, so it records,
differentiates, batches and lowers to JAX like any program. ``pinv`` has JAX's own derivative
(a recorded ``custom_jvp_call``); the others differentiate through their ops, as JAX's do.
"""

from __future__ import annotations

import builtins
import itertools
import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.executor import as_tensor
from runtime.core.promotion import PromotionError, result_type
from runtime.core.shapes import OpTypeError, OpValueError, ShapeError
from runtime.core.tensor import Tensor
from runtime.numpy import creation, elementwise
from runtime.numpy import tensor_methods as tensor_api
from runtime.numpy.linalg_factor import (
    _H,
    _error,
    _factor_input,
    _inexact,
    _matrices,
    _mm,
    _mT,
    _real_dtype,
    _symmetrize,
    inv,
    norm,
    solve,
    svdvals,
)
from runtime.numpy.params import named, refuse_traced

__all__ = [
    "cond",
    "cross",
    "diagonal",
    "lstsq",
    "matrix_rank",
    "matrix_transpose",
    "multi_dot",
    "pinv",
    "tensorinv",
    "tensorsolve",
    "trace",
    "vecdot",
]


# -- helpers -----------------------------------------------------------------------------------------


def _eps(d: Any) -> float:
    """The machine epsilon of ``d``'s real dtype (``jnp.finfo(d).eps``)."""
    return float(np.finfo(_real_dtype(d).storage).eps)


def _constant(name: str, param: str, value: Any, dtype: Any, operands: Sequence[Tensor]) -> np.ndarray:
    """A tolerance (``rtol``, ``rcond``, ``tol``) read as a concrete array of ``dtype``'s storage:
    a number, a NumPy array or an untracked Tensor; a traced Tensor is refused (it decides which
    singular values count, a mask castwise reads eagerly only)."""
    if isinstance(value, Tensor):
        refuse_traced(
            f"linalg.{name}", param, value, "it decides which singular values are kept",
            f"pass {param} as a number or a concrete array", operands,
        )  # fmt: skip
        value = value.numpy()
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        array = np.asarray(None)
    if array.dtype.kind not in "biuf":
        raise _error(OpTypeError, name, operands, f"{param} must be a real number or array, got {value!r}")
    return np.asarray(array, dtype=_real_dtype(dt.dtype(dtype)).storage)


def _select_nonzero(mask: Tensor, x: Tensor) -> Tensor:
    """``1 / x`` where ``mask`` holds, else 0, with no division by a masked-out value."""
    one, zero = F.full(x.shape, 1, x.dtype), F.zeros(x.shape, x.dtype)
    return F.select(mask, F.reciprocal(F.select(mask, x, one)), zero)


def _column(x: Tensor, like: Tensor) -> Tensor:
    """``x`` ``[..., k]`` spread along the last axis of ``like`` ``[..., k, j]`` (``x[..., None]``),
    in ``like``'s dtype."""
    spread = F.broadcast_in_dim(x, like.shape, tuple(range(like.ndim - 1)))
    return spread if spread.dtype is like.dtype else F.convert(spread, like.dtype)


def _first(s: Tensor) -> Tensor:
    """``s[..., 0:1]`` broadcast back to ``s``'s shape (the largest singular value, per matrix)."""
    head = F.slice(s, (0,) * s.ndim, (*s.shape[:-1], 1))
    return F.broadcast_in_dim(F.reshape(head, s.shape[:-1]), s.shape, tuple(range(s.ndim - 1)))


# -- pinv ------------------------------------------------------------------------------------------------


def _pinv_value(a: Tensor, rtol: np.ndarray, hermitian: builtins.bool) -> Tensor:
    """The pseudo-inverse from the SVD, as jax.numpy's: singular values at or below
    ``rtol * s_max`` count as zero; ``hermitian`` decomposes ``(a + a^H) / 2`` with ``eigh``
    (``pinv = v diag(1 / w) v^H``)."""
    if hermitian:
        v, w = F.eigh(_symmetrize(a))
        size = F.abs(w)
        biggest = F.broadcast_in_dim(F.reduce_max(size, (size.ndim - 1,)), size.shape, tuple(range(size.ndim - 1)))
        keep = F.gt(size, F.mul(as_tensor(np.array(np.broadcast_to(rtol[..., None], size.shape))), biggest))
        inv_w = _select_nonzero(keep, w)
        return _mm(F.mul(v, _row(inv_w, v)), _H(v))  # v diag(1/w) v^H
    u, s, vh = F.svd(a, full_matrices=False)
    keep = F.gt(s, F.mul(as_tensor(np.array(np.broadcast_to(rtol[..., None], s.shape))), _first(s)))
    inv_s = _select_nonzero(keep, s)
    return _mm(_H(vh), F.mul(_column(inv_s, _H(u)), _H(u)))  # V diag(1/s) U^H


def _row(x: Tensor, like: Tensor) -> Tensor:
    """``x`` ``[..., k]`` spread along the rows of ``like`` ``[..., j, k]`` (``x[..., None, :]``)."""
    nd = like.ndim
    spread = F.broadcast_in_dim(x, like.shape, (*range(nd - 2), nd - 1))
    return spread if spread.dtype is like.dtype else F.convert(spread, like.dtype)


def _pinv_rule(rtol: np.ndarray, hermitian: builtins.bool) -> tuple[Any, Any]:
    """``pinv`` with JAX's derivative (Golub and Pereyra's, which stays finite at repeated
    singular values, where one through ``svd`` would not)."""

    def fun(a: Tensor) -> list[Tensor]:
        return [_pinv_value(a, rtol, hermitian)]

    def jvp(primals: Sequence[Tensor], tangents: Sequence[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        (a,), (da,) = primals, tangents
        # p as ops (svd ...), not another recorded call: the pull-back of this tangent map then
        # ends at the primal, and a second derivative goes through svd
        (p,) = fun(a)
        if hermitian:
            a, da = _symmetrize(a), _symmetrize(da)
        m, n = a.shape[-2:]
        if m >= n:
            s = _mm(_mm(p, _H(p)), _H(da))
            t = _mm(_mm(_H(da), _H(p)), p)
            dp = F.add(F.sub(F.add(F.sub(s, _mm(_mm(s, a), p)), t), _mm(_mm(p, a), t)), F.neg(_mm(_mm(p, da), p)))
        else:
            s = _mm(p, _mm(_H(p), _H(da)))
            t = _mm(_H(da), _mm(_H(p), p))
            dp = F.add(F.sub(F.add(F.sub(s, _mm(s, _mm(a, p))), t), _mm(p, _mm(a, t))), F.neg(_mm(p, _mm(da, p))))
        # dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P
        return [p], [dp]

    return fun, jvp


@named("linalg.pinv")
def pinv(a: Any, rtol: Any = None, hermitian: builtins.bool = False, *, rcond: Any = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse ``[..., n, m]`` of ``a`` ``[..., m, n]``, as
    ``jnp.linalg.pinv``: from the SVD, the singular values at or below ``rtol * s_max`` taken
    as zero (``rtol`` a number or an array of the batch shape; by default
    ``10 * max(m, n) * eps``; ``rcond`` is its older name). ``hermitian`` computes it from
    ``eigh`` of ``(a + a^H) / 2``. The derivative is JAX's custom JVP (a recorded
    ``custom_jvp_call``)."""
    t = _factor_input("pinv", a)
    if rcond is not None:
        if rtol is not None:
            raise _error(OpValueError, "pinv", (t,), "takes one of rtol and rcond (rcond is rtol's older name)")
        rtol = rcond
    *batch, m, n = t.shape
    if hermitian and m != n:
        raise _error(ShapeError, "pinv", (t,), "hermitian=True takes (a batch of) square matrices")
    if m == 0 or n == 0:
        return F.zeros((*batch, n, m), t.dtype)
    if rtol is None:
        rtol = 10.0 * builtins.max(m, n) * _eps(t.dtype)
    tol = _constant("pinv", "rtol", rtol, t.dtype, (t,))
    try:
        tol = np.broadcast_to(tol, tuple(batch))
    except ValueError:
        raise _error(ShapeError, "pinv", (t,), f"rtol of shape {tol.shape} does not broadcast to {batch}") from None
    fun, jvp = _pinv_rule(np.array(tol), builtins.bool(hermitian))
    (p,) = F._custom_rule("pinv", fun, jvp, (t,))
    return p


# -- lstsq, matrix_rank, cond ------------------------------------------------------------------------


@named("linalg.lstsq")
def lstsq(
    a: Any, b: Any, rcond: Any = None, *, numpy_resid: builtins.bool = False
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The least-squares solution of ``a @ x == b``, as ``jnp.linalg.lstsq``: ``(x, residuals,
    rank, s)`` for ``a`` ``[m, n]`` and ``b`` ``[m]`` or ``[m, k]``, from the thin SVD; singular
    values below ``rcond * s_max`` (default ``eps * max(m, n)``; a negative one means eps) are
    dropped. ``residuals`` are the squared norms of ``b - a @ x`` per column, always (JAX's
    default), or NumPy's empty array where NumPy gives none with ``numpy_resid`` (then ``rank``
    is read eagerly). Differentiable through ``svd``, as JAX's."""
    at, bt = _inexact("lstsq", a, b)
    if at.ndim != 2:
        raise _error(ShapeError, "lstsq", (at, bt), f"a must be a matrix [m, n], got rank {at.ndim}")
    if bt.ndim not in (1, 2) or bt.shape[0] != at.shape[0]:
        raise _error(ShapeError, "lstsq", (at, bt), f"b must be [{at.shape[0]}] or [{at.shape[0]}, k]")
    _factor_input("lstsq", at)
    vector = bt.ndim == 1
    matrix = F.reshape(bt, (bt.shape[0], 1)) if vector else bt
    m, n = at.shape
    real = _real_dtype(at.dtype)
    if at.size == 0:
        s = F.zeros((0,), real)
        rank = elementwise.sum(F.zeros((0,), dt.bool_))
        x = F.zeros((n, matrix.shape[1]), at.dtype)
    else:
        cut = _eps(at.dtype) * builtins.max(n, m) if rcond is None else _constant("lstsq", "rcond", rcond, real, (at,))
        cut = np.where(np.asarray(cut) < 0, _eps(at.dtype), cut).astype(real.storage)
        if cut.ndim:
            raise _error(OpValueError, "lstsq", (at, bt), f"rcond must be a number, got shape {cut.shape}")
        u, s, vh = F.svd(at, full_matrices=False)
        zero = F.zeros(s.shape, real)
        keep = F.logical_and(F.gt(s, zero), F.ge(s, F.mul(F.full(s.shape, cut.item(), real), _first(s))))
        rank = elementwise.sum(keep)
        u_b = _mm(_H(u), matrix)
        x = _mm(_H(vh), F.mul(_column(_select_nonzero(keep, s), u_b), u_b))
    if numpy_resid:
        refuse_traced(
            "linalg.lstsq", "rank", rank, "numpy_resid=True makes the residuals' shape depend on the rank",
            "leave numpy_resid=False (the residuals are then always computed)", (at, bt),
        )  # fmt: skip
    if numpy_resid and (int(rank.numpy()) < n or m <= n):
        resid = F.zeros((0,), real)
    else:
        r = F.sub(matrix, _mm(at, x))
        resid = F.reduce_sum(F.real(F.mul(r, F.conj(r))) if r.dtype.kind == "complex" else F.mul(r, r), (0,))
    return (F.reshape(x, (n,)) if vector else x, resid, rank, s)  # a plain tuple, as jax.numpy's


@named("linalg.matrix_rank")
def matrix_rank(M: Any, rtol: Any = None, *, hermitian: builtins.bool = False, tol: Any = None) -> Tensor:
    """The rank of (a batch of) matrices, as ``jnp.linalg.matrix_rank``: the number of singular
    values above the threshold, by default ``s_max * max(m, n) * eps``. A given ``rtol`` (or
    ``tol``, its older name) is that threshold itself under jax.numpy's rules (its 0.10
    behaviour), relative to ``s_max`` under NumPy's (``rtol``; ``tol`` is absolute there). A
    vector's rank is 1 unless it is all zeros."""
    (t,) = _inexact("matrix_rank", M)
    if tol is not None and rtol is not None:
        raise _error(OpValueError, "matrix_rank", (t,), "takes one of tol and rtol")
    if t.ndim < 2:
        return F.convert(F.reduce_or(F.ne(t, F.zeros(t.shape, t.dtype)), tuple(range(t.ndim))), dt.int32)
    s = svdvals(t) if not hermitian else F.abs(F.eigh(_symmetrize(t))[1])
    if s.shape[-1] == 0:
        return elementwise.sum(F.zeros(s.shape, dt.bool_), axis=-1)
    last = (s.ndim - 1,)
    biggest = F.broadcast_in_dim(F.reduce_max(s, last), s.shape, tuple(range(s.ndim - 1)))
    given = rtol if tol is None else tol
    if given is None:
        threshold = F.mul(biggest, F.full(s.shape, builtins.max(t.shape[-2:]) * _eps(t.dtype), s.dtype))
    else:
        value = _constant("matrix_rank", "rtol" if tol is None else "tol", given, s.dtype, (t,))
        try:
            spread = as_tensor(np.array(np.broadcast_to(value[..., None], s.shape)))
        except ValueError:
            raise _error(ShapeError, "matrix_rank", (t,), f"the tolerance's shape {value.shape} does not fit") from None
        relative = tol is None and tensor_api.library() == "numpy"
        threshold = F.mul(spread, biggest) if relative else spread
    return elementwise.sum(F.gt(s, threshold), axis=-1)


@named("linalg.cond")
def cond(x: Any, p: Any = None) -> Tensor:
    """The condition number, as ``jnp.linalg.cond``: ``s_max / s_min`` for ``p`` None or 2,
    ``s_min / s_max`` for -2, else ``norm(x, p) * norm(inv(x), p)`` (square ``x``; ``p`` one of
    1, -1, inf, -inf, 'fro', 'nuc'), NaN turned to inf where ``x`` has no NaN (a singular
    matrix), as JAX does."""
    (t,) = _inexact("cond", x)
    _matrices("cond", t)
    if t.shape[-1] == 0 or t.shape[-2] == 0:
        raise _error(ShapeError, "cond", (t,), "takes non-empty matrices, as jax.numpy's does")
    if p is None or (not isinstance(p, str) and p == 2) or (not isinstance(p, str) and p == -2):
        s = svdvals(t)
        last = s.ndim - 1
        head = F.reshape(F.slice(s, (0,) * s.ndim, (*s.shape[:-1], 1)), s.shape[:-1])
        tail = F.reshape(F.slice(s, (*(0,) * last, s.shape[-1] - 1), s.shape), s.shape[:-1])
        if p is None or p == 2:
            return F.div(head, tail)
        r = F.div(tail, head)
    else:
        if t.shape[-1] != t.shape[-2]:
            raise _error(ShapeError, "cond", (t,), f"p={p!r} takes (a batch of) square matrices")
        r = F.mul(norm(t, p, axis=(-2, -1)), norm(inv(t), p, axis=(-2, -1)))
    nan_in_x = F.reduce_or(F.ne(t, t), (t.ndim - 2, t.ndim - 1))
    fix = F.logical_and(F.ne(r, r), F.logical_not(nan_in_x))
    return F.select(fix, F.full(r.shape, math.inf, r.dtype), r)


# -- products ---------------------------------------------------------------------------------------------


def _chain_order(dims: Sequence[int]) -> list[list[int]]:
    """The cheapest parenthesisation of a matrix chain with shapes ``dims[i] x dims[i + 1]``
    (the textbook dynamic programme): ``split[i][j]`` is where ``i..j`` splits."""
    count = len(dims) - 1
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j] = -1
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] < 0 or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


@named("linalg.multi_dot")
def multi_dot(arrays: Sequence[Any], *, precision: Any = None) -> Tensor:
    """The product of a chain of matrices in the cheapest order, as ``jnp.linalg.multi_dot``:
    every array 2-D except the first and last, which may be vectors (a row, a column). Each
    product is one ``matmul`` (``dot_general``), promoted per the policy. ``precision`` is
    accepted for jax.numpy's signature; castwise's products are exact in their dtype."""
    try:
        ts = [as_tensor(x) for x in arrays]
    except TypeError:
        raise _error(OpTypeError, "multi_dot", (), f"takes a sequence of arrays, got {arrays!r}") from None
    if len(ts) < 2:
        raise _error(ShapeError, "multi_dot", ts, f"takes at least two arrays, got {len(ts)}")
    if ts[0].ndim not in (1, 2) or ts[-1].ndim not in (1, 2) or builtins.any(t.ndim != 2 for t in ts[1:-1]):
        raise _error(ShapeError, "multi_dot", ts, "takes 2-D arrays (the first and the last may be 1-D)")
    first_vector, last_vector = ts[0].ndim == 1, ts[-1].ndim == 1
    if first_vector:
        ts[0] = F.reshape(ts[0], (1, ts[0].shape[0]))
    if last_vector:
        ts[-1] = F.reshape(ts[-1], (ts[-1].shape[0], 1))
    if builtins.any(x.shape[1] != y.shape[0] for x, y in itertools.pairwise(ts)):
        raise _error(ShapeError, "multi_dot", ts, "each array's last dim must match the next one's first")
    split = _chain_order([ts[0].shape[0], *(t.shape[1] for t in ts)])

    def product(i: int, j: int) -> Tensor:
        if i == j:
            return ts[i]
        k = split[i][j]
        return F.matmul(product(i, k), product(k + 1, j))

    out = product(0, len(ts) - 1)
    if first_vector and last_vector:
        return F.reshape(out, ())
    if first_vector:
        return F.reshape(out, (out.shape[1],))
    return F.reshape(out, (out.shape[0],)) if last_vector else out


def _axis(name: str, x: Tensor, axis: Any, operands: Sequence[Tensor]) -> int:
    if not F._is_index(axis) or not -x.ndim <= operator.index(axis) < x.ndim:
        raise _error(ShapeError, name, operands, f"axis {axis!r} is out of range for rank {x.ndim}")
    return operator.index(axis) % x.ndim


def _pair(name: str, x1: Any, x2: Any) -> tuple[Tensor, Tensor, tuple[int, ...]]:
    """The operands as Tensors of their common dtype under the policy, and their broadcast shape."""
    a, b = as_tensor(x1), as_tensor(x2)
    if a.dtype is not b.dtype:
        try:
            common = result_type(a, b)
        except PromotionError as err:
            raise _error(PromotionError, name, (a, b), str(err)) from None
        a = a if a.dtype is common else F.convert(a, common)
        b = b if b.dtype is common else F.convert(b, common)
    try:
        shape = tuple(np.broadcast_shapes(a.shape, b.shape))
    except ValueError:
        raise _error(ShapeError, name, (a, b), "the operands' shapes do not broadcast") from None
    return a, b, shape


def _spread(x: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``x`` broadcast to ``shape`` (trailing dims aligned), recorded as ``broadcast_in_dim``."""
    if x.shape == shape:
        return x
    return F.broadcast_in_dim(x, shape, tuple(range(len(shape) - x.ndim, len(shape))))


@named("linalg.cross")
def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``axis``, as ``jnp.linalg.cross`` (the array API's):
    both operands have size 3 there; the other dims broadcast. ``mul`` and ``sub`` of the
    components, promoted per the policy."""
    a, b, shape = _pair("cross", x1, x2)
    if a.ndim == 0 or b.ndim == 0:
        raise _error(ShapeError, "cross", (a, b), "takes (arrays of) 3-vectors, got a 0-d operand")
    ax_a, ax_b = _axis("cross", a, axis, (a, b)), _axis("cross", b, axis, (a, b))
    if a.shape[ax_a] != 3 or b.shape[ax_b] != 3:
        raise _error(ShapeError, "cross", (a, b), f"takes 3-vectors along axis {axis}: sizes must be 3")
    if a.dtype is dt.bool_:
        raise _error(OpTypeError, "cross", (a, b), "takes numeric operands, not bool (as jax.numpy's)")
    a, b = _spread(a, shape), _spread(b, shape)
    ax = operator.index(axis) % len(shape)

    def part(x: Tensor, i: int) -> Tensor:
        start = [0] * x.ndim
        stop = list(x.shape)
        start[ax], stop[ax] = i, i + 1
        return F.slice(x, tuple(start), tuple(stop))

    a0, a1, a2 = (part(a, i) for i in range(3))
    b0, b1, b2 = (part(b, i) for i in range(3))
    parts = [
        F.sub(F.mul(a1, b2), F.mul(a2, b1)),
        F.sub(F.mul(a2, b0), F.mul(a0, b2)),
        F.sub(F.mul(a0, b1), F.mul(a1, b0)),
    ]
    return F.concatenate(parts, ax)  # x1 x x2 = (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0)


@named("linalg.vecdot")
def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None, preferred_element_type: Any = None) -> Tensor:
    """The conjugate dot product ``sum(conj(x1) * x2)`` along ``axis``, as ``jnp.linalg.vecdot``
    (the array API's): the other dims broadcast; one ``dot_general`` (``preferred_element_type``
    as its). ``precision`` is accepted for jax.numpy's signature."""
    a, b = as_tensor(x1), as_tensor(x2)
    if a.ndim == 0 or b.ndim == 0:
        raise _error(ShapeError, "vecdot", (a, b), "takes arrays of rank >= 1")
    ax_a, ax_b = _axis("vecdot", a, axis, (a, b)), _axis("vecdot", b, axis, (a, b))
    if a.shape[ax_a] != b.shape[ax_b]:
        raise _error(ShapeError, "vecdot", (a, b), f"the sizes along axis {axis} differ")
    a = F.transpose(a, (*[d for d in range(a.ndim) if d != ax_a], ax_a))
    b = F.transpose(b, (*[d for d in range(b.ndim) if d != ax_b], ax_b))
    try:
        batch = tuple(np.broadcast_shapes(a.shape[:-1], b.shape[:-1]))
    except ValueError:
        raise _error(ShapeError, "vecdot", (a, b), "the operands' other dims do not broadcast") from None
    a, b = _spread(a, (*batch, a.shape[-1])), _spread(b, (*batch, b.shape[-1]))
    if a.dtype.kind == "complex":
        a = F.conj(a)
    nd = a.ndim
    dims = tuple(range(nd - 1))
    return F.dot_general(a, b, (((nd - 1,), (nd - 1,)), (dims, dims)), preferred_element_type=preferred_element_type)


# -- views of matrices ----------------------------------------------------------------------------------


@named("linalg.matrix_transpose")
def matrix_transpose(x: Any, /) -> Tensor:
    """The last two axes swapped, as ``jnp.linalg.matrix_transpose`` (the array API's): one ``transpose``."""
    t = as_tensor(x)
    _matrices("matrix_transpose", t)
    return _mT(t)


@named("linalg.diagonal")
def diagonal(x: Any, /, *, offset: int = 0) -> Tensor:
    """The ``offset``-th diagonal of the last two axes, as ``jnp.linalg.diagonal`` (the array
    API's): ``rt.diagonal(x, offset, -2, -1)``."""
    t = as_tensor(x)
    _matrices("diagonal", t)
    return creation.diagonal(t, offset, -2, -1)


@named("linalg.trace")
def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Tensor:
    """The sum of the ``offset``-th diagonal of the last two axes, as ``jnp.linalg.trace`` (the
    array API's): ``sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)``, the dtype as
    ``rt.sum`` decides it under the policy."""
    t = as_tensor(x)
    _matrices("trace", t)
    return elementwise.sum(creation.diagonal(t, offset, -2, -1), axis=-1, dtype=dtype)


# -- tensor inverses and solves ------------------------------------------------------------------------


@named("linalg.tensorinv")
def tensorinv(a: Any, ind: int = 2) -> Tensor:
    """The inverse of ``tensordot(a, ., ind)``, as ``jnp.linalg.tensorinv``: ``inv`` of ``a``
    reshaped to ``[prod(a.shape[:ind]), prod(a.shape[ind:])]``, reshaped to
    ``a.shape[ind:] + a.shape[:ind]``."""
    t = as_tensor(a)
    if not F._is_index(ind) or operator.index(ind) <= 0:
        raise _error(ShapeError, "tensorinv", (t,), f"ind must be a positive integer, got {ind!r}")
    k = operator.index(ind)
    rows, cols = math.prod(t.shape[:k]), math.prod(t.shape[k:])
    if rows != cols:
        raise _error(ShapeError, "tensorinv", (t,), f"prod(a.shape[:{k}]) must equal prod(a.shape[{k}:])")
    return F.reshape(inv(F.reshape(t, (rows, cols))), (*t.shape[k:], *t.shape[:k]))


@named("linalg.tensorsolve")
def tensorsolve(a: Any, b: Any, axes: Sequence[int] | None = None) -> Tensor:
    """``x`` with ``tensordot(a, x, x.ndim) == b``, as ``jnp.linalg.tensorsolve``: ``axes`` of
    ``a`` are first moved to the end; then ``a.shape == b.shape + x.shape`` and ``solve`` of
    the flattened system gives ``x``."""
    at, bt = as_tensor(a), as_tensor(b)
    if axes is not None:
        from runtime.numpy.manipulation import moveaxis

        items = list(axes)
        at = moveaxis(at, items, list(range(at.ndim - len(items), at.ndim)))
    out_shape = at.shape[bt.ndim :]
    if at.shape[: bt.ndim] != bt.shape:
        raise _error(ShapeError, "tensorsolve", (at, bt), "a's leading dims (after axes are moved) must be b's shape")
    if bt.size != math.prod(out_shape):
        raise _error(ShapeError, "tensorsolve", (at, bt), "prod(a.shape[:b.ndim]) must equal prod(a.shape[b.ndim:])")
    flat = solve(F.reshape(at, (bt.size, math.prod(out_shape))), F.reshape(bt, (bt.size,)))
    return F.reshape(flat, out_shape)
