"""JVP and VJP rules of the contraction, selection and joining ops: ``dot_general``,
``concatenate``, ``select``, ``select_n`` and ``clamp``.

Each rule is a named function followed by its registration line; the trailing comment states the
identity it implements. The conventions (``autodiff.derivatives``) are the structural rules' for
``dot_general`` and ``concatenate``, the elementwise rules' for ``select``, ``select_n`` and ``clamp``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autodiff.derivatives._common import (
    Primals,
    Tangents,
    _broadcast_to,
    _conj,
    _const,
    _dense,
    _single_ct,
    _single_ct_or_zero,
    _vjp_in,
    _zero_in,
)
from autodiff.rules import JVP_RULES, SAVES_INPUT, SAVES_NOTHING, VJP_RULES, VJP_SAVES, saves_other_operand
from autodiff.zeros import TangentLike, Zero, add_any, is_zero
from runtime.core.lax import concatenate, dot_general, gt, logical_and, lt, select, select_n, transpose
from runtime.core.lax import slice as static_slice
from runtime.core.shapes import dot_dimension_numbers
from runtime.core.tensor import Tensor

# -- dot_general ---------------------------------------------------------------------------


def _dot_transpose(
    ct: Tensor, other: Tensor, x_ndim: int, dims: Any, x_is_lhs: bool, precision: Any = None
) -> Tensor:
    """The cotangent of one dot_general operand ``x`` given the other operand ``other``.

    ``ct`` has axes ``batch + lhs_free + rhs_free``. Contract its ``other``-free
    axes with ``conj(other)``'s free axes, batching over the batch axes. For the
    lhs the product is ``ct . conj(other)``, with axes ``batch + x_free +
    (other's contracting axes, ascending)``; for the rhs it is ``conj(other) . ct``,
    with axes ``batch + (other's contracting axes) + x_free``. Those are ``x``'s
    own axis orders for a plain matrix product (no transpose is recorded); other
    contractions end with a transpose back to ``x``'s order. The product asks for the primal's
    ``precision``, as JAX's transpose rule does.
    """
    try:
        key: Any = (dims, x_ndim, other.ndim, x_is_lhs)
        plan = _DOT_TRANSPOSE_PLANS.get(key)
    except TypeError:  # unhashable dimension numbers (lists): plan without the cache
        key, plan = None, None
    if plan is None:
        plan = _dot_transpose_plan(dot_dimension_numbers(dims), x_ndim, other.ndim, x_is_lhs)
        if key is not None:
            if len(_DOT_TRANSPOSE_PLANS) >= 1024:
                _DOT_TRANSPOSE_PLANS.clear()
            _DOT_TRANSPOSE_PLANS[key] = plan
    out_dims, perm = plan
    if x_is_lhs:
        out = dot_general(ct, _conj(other), out_dims, precision)
    else:
        out = dot_general(_conj(other), ct, out_dims, precision)
    return out if perm is None else transpose(out, perm)


#: (dimension numbers, x's rank, the other operand's rank, x is the lhs) -> ``_dot_transpose_plan``:
#: the index arithmetic depends on nothing else, and a backward pass repeats it for every matmul
_DOT_TRANSPOSE_PLANS: dict[Any, tuple[Any, tuple[int, ...] | None]] = {}


def _dot_transpose_plan(
    dims: Any, x_ndim: int, other_ndim: int, x_is_lhs: bool
) -> tuple[Any, tuple[int, ...] | None]:
    """``_dot_transpose``'s dimension numbers for the product, and the transpose back to
    ``x``'s axis order (``None`` when the product is already in it)."""
    (lc, rc), (lb, rb) = dims
    xc, xb, yc, yb = (lc, lb, rc, rb) if x_is_lhs else (rc, rb, lc, lb)
    x_free = [d for d in range(x_ndim) if d not in xc and d not in xb]
    y_free = tuple(d for d in range(other_ndim) if d not in yc and d not in yb)
    nb = len(xb)
    first = nb + (len(x_free) if x_is_lhs else 0)  # where ct's other-free axes start
    ct_y_free = tuple(range(first, first + len(y_free)))
    batch = tuple(range(nb))
    contracted = [xc[yc.index(d)] for d in sorted(yc)]  # the x axis each of other's remaining axes stands for
    if x_is_lhs:
        out_dims: Any = ((ct_y_free, y_free), (batch, tuple(yb)))
        held = [*xb, *x_free, *contracted]  # the x axis each axis of out holds
    else:
        out_dims = ((y_free, ct_y_free), (tuple(yb), batch))
        held = [*xb, *contracted, *x_free]
    perm = tuple(held.index(j) for j in range(x_ndim))
    return out_dims, (None if perm == tuple(range(x_ndim)) else perm)


def dot_general_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, dimension_numbers: Any, precision: Any = None
) -> list[TangentLike]:
    (lhs, rhs), (tl, tr), (out,) = primals, tangents, outputs
    t: TangentLike = Zero.like(out)
    if not is_zero(tl):
        t = add_any(t, dot_general(tl, rhs, dimension_numbers, precision))
    if not is_zero(tr):
        t = add_any(t, dot_general(lhs, tr, dimension_numbers, precision))
    return [t]  # d(l . r) = dl . r + l . dr
JVP_RULES["dot_general"] = dot_general_jvp


def dot_general_vjp(
    cotangents: Tangents,
    primals: Primals,
    outputs: Primals,
    needs: Sequence[bool],
    dimension_numbers: Any,
    precision: Any = None,
) -> list[TangentLike]:
    ct, (lhs, rhs) = _single_ct_or_zero(cotangents), primals
    if is_zero(ct):
        return _zero_in(primals)
    assert isinstance(ct, Tensor)
    gl = _dot_transpose(ct, rhs, lhs.ndim, dimension_numbers, True, precision) if needs[0] else Zero.like(lhs)
    gr = _dot_transpose(ct, lhs, rhs.ndim, dimension_numbers, False, precision) if needs[1] else Zero.like(rhs)
    return [gl, gr]  # l-bar = ct . conj(r)^T, r-bar = conj(l)^T . ct (contracted over the free axes)
VJP_RULES["dot_general"] = dot_general_vjp
VJP_SAVES["dot_general"] = saves_other_operand


# -- concatenate -------------------------------------------------------------------------------


def concatenate_jvp(primals: Primals, tangents: Tangents, outputs: Primals, dimension: int) -> list[TangentLike]:
    (out,) = outputs
    if all(is_zero(t) for t in tangents):
        return [Zero.like(out)]
    return [concatenate([_dense(t) for t in tangents], dimension)]  # d concat(xs) = concat(dxs)
JVP_RULES["concatenate"] = concatenate_jvp


def concatenate_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], dimension: int
) -> list[TangentLike]:
    ct = _single_ct_or_zero(cotangents)
    if is_zero(ct):
        return _zero_in(primals)
    assert isinstance(ct, Tensor)
    result: list[TangentLike] = []
    offset = 0
    for x, need in zip(primals, needs, strict=True):
        size = x.shape[dimension]
        if need:
            start = [0] * ct.ndim
            limit = list(ct.shape)
            start[dimension], limit[dimension] = offset, offset + size
            result.append(static_slice(ct, start, limit))
        else:
            result.append(Zero.like(x))
        offset += size
    return result  # x_i-bar = ct[..., offset_i : offset_i + n_i, ...]
VJP_RULES["concatenate"] = concatenate_vjp
VJP_SAVES["concatenate"] = SAVES_NOTHING


# -- select, clamp ----------------------------------------------------------------------------


def _zeros_like(x: Tensor | Zero) -> Tensor:
    return _const(0, tuple(x.shape), x.dtype)


def select_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (pred, _, _), (_, tt, tf), (out,) = primals, tangents, outputs
    if is_zero(tt) and is_zero(tf):
        return [Zero.like(out)]
    on_true = _zeros_like(out) if is_zero(tt) else _broadcast_to(tt, tuple(out.shape))  # type: ignore[arg-type]
    on_false = _zeros_like(out) if is_zero(tf) else _broadcast_to(tf, tuple(out.shape))  # type: ignore[arg-type]
    return [select(pred, on_true, on_false)]  # d select(p, a, b) = select(p, da, db)
JVP_RULES["select"] = select_jvp


def select_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    ct, (pred, on_true, on_false) = _single_ct(cotangents), primals
    zeros = _zeros_like(ct) if needs[1] or needs[2] else None
    gt_ = _vjp_in(select(pred, ct, zeros), on_true) if needs[1] else Zero.like(on_true)
    gf = _vjp_in(select(pred, zeros, ct), on_false) if needs[2] else Zero.like(on_false)
    return [Zero.like(pred), gt_, gf]  # a-bar = select(p, ct, 0), b-bar = select(p, 0, ct)
VJP_RULES["select"] = select_vjp


def select_n_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    which, (out,) = primals[0], outputs
    if all(is_zero(t) for t in tangents[1:]):
        return [Zero.like(out)]
    shape = tuple(out.shape)
    cases = [_zeros_like(out) if is_zero(t) else _broadcast_to(t, shape) for t in tangents[1:]]  # type: ignore[arg-type]
    return [select_n(which, *cases)]  # d select_n(w, *xs) = select_n(w, *dxs)
JVP_RULES["select_n"] = select_n_jvp


def select_n_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    ct, which, cases = _single_ct(cotangents), primals[0], primals[1:]
    zeros = _zeros_like(ct) if any(needs[1:]) else None
    result: list[TangentLike] = [Zero.like(which)]
    for i, x in enumerate(cases):
        if needs[i + 1]:
            picked = [ct if j == i else zeros for j in range(len(cases))]
            result.append(_vjp_in(select_n(which, *picked), x))
        else:
            result.append(Zero.like(x))
    return result  # x_i-bar = select_n(w, 0, .., ct at i, .., 0)
VJP_RULES["select_n"] = select_n_vjp
VJP_SAVES["select_n"] = SAVES_INPUT


def _clamp_mask(i: int, lo: Tensor, x: Tensor, hi: Tensor) -> Tensor:
    """Where clamp's result follows input ``i`` for derivative purposes (jax.lax.clamp's JVP).

    ``lo`` where ``lo > x`` and ``lo < hi``; ``x`` strictly inside ``(lo, hi)``;
    ``hi`` where ``hi < x``. Ties send the derivative nowhere.
    """
    if i == 0:
        return logical_and(gt(lo, x), lt(lo, hi))
    if i == 1:
        return logical_and(gt(x, lo), lt(x, hi))
    return lt(hi, x)


def clamp_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (out,) = outputs
    result: TangentLike = Zero.like(out)
    for i, t in enumerate(tangents):
        if not is_zero(t):
            mask = _clamp_mask(i, *primals)
            part = select(mask, _broadcast_to(t, tuple(out.shape)), _zeros_like(out))  # type: ignore[arg-type]
            result = add_any(result, part)
    return [result]  # d clamp = [lo > x, lo < hi] d lo + [lo < x < hi] dx + [hi < x] d hi
JVP_RULES["clamp"] = clamp_jvp


def clamp_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    ct = _single_ct(cotangents)
    zeros = _zeros_like(ct)
    return [
        _vjp_in(select(_clamp_mask(i, *primals), ct, zeros), p) if need else Zero.like(p)
        for i, (p, need) in enumerate(zip(primals, needs, strict=True))
    ]  # each input's cotangent is ct where the result followed it, 0 elsewhere
VJP_RULES["clamp"] = clamp_vjp
