"""JVP and VJP rules of the reductions: ``reduce_sum``, ``reduce_prod``, ``reduce_max``,
``reduce_min``, ``reduce_precision`` and the cumulative reductions.

``argmax``, ``argmin`` and ``reduce_and`` / ``reduce_or`` / ``reduce_xor`` have no derivatives.
Each rule is a named function followed by its registration line; the trailing comment states
the identity it implements. Rules are written with the runtime's op functions only, so under a
recorder they record a derivative program of vocabulary ops (differentiable again).

* ``reduce_sum`` is linear; ``reduce_prod`` is holomorphic, its VJP multiplies by the conjugate of
  the other factors; ``reduce_max`` / ``reduce_min`` split the cotangent among the elements equal to
  the result (the structural rules' conventions, ``autodiff.derivatives``).
* ``reduce_precision`` is treated as linear, as JAX treats it: its tangent and cotangent are
  rounded the same way.
* ``cumsum`` is linear: its VJP is the cumulative sum in the other direction.
* ``cumprod``, ``cummax``, ``cummin`` and ``cumlogsumexp`` are differentiated as JAX
  differentiates them: through a parallel prefix scan of the binary op (``mul``, ``max``,
  ``min``, ``logaddexp``). Each combine of the scan contributes ``wa * ta + wb * tb``, with
  ``wa``, ``wb`` the partial derivatives of the binary op at its two primal operands; the JVP
  runs the scan on the tangent with those weights and the VJP runs its transpose (conjugated
  weights). Using the scan's own tree, not a closed form, gives JAX's values where a closed
  form is ambiguous: zeros in a product, and ties of a running max/min, whose tangent the
  tree splits as ``lax.max`` does (half to each side of an equal pair).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from autodiff.derivatives._common import _expand, _inverse_permutation, _kept_axes, _zero_in, _zeros_like
from autodiff.rules import JVP_RULES, SAVES_INPUT, SAVES_NOTHING, VJP_RULES, VJP_SAVES
from autodiff.zeros import TangentLike, Zero, is_zero
from runtime.core import lax as F
from runtime.core.lax import add, convert, div, eq, full, mul, pad, reduce_sum, reshape, transpose
from runtime.core.lax import slice as static_slice
from runtime.core.tensor import Tensor

Tangents = Sequence[TangentLike]
Primals = Sequence[Tensor]


def _single_ct(cotangents: Tangents) -> TangentLike:
    (ct,) = cotangents
    return ct


# -- helpers ------------------------------------------------------------------------------


def _maybe_transpose(x: Tensor, perm: Sequence[int]) -> Tensor:
    perm = tuple(perm)
    return x if perm == tuple(range(len(perm))) else transpose(x, perm)


# -- reductions -----------------------------------------------------------------------------------


def reduce_sum_jvp(primals: Primals, tangents: Tangents, outputs: Primals, axes: Sequence[int]) -> list[TangentLike]:
    (t,), (out,) = tangents, outputs
    return [Zero.like(out) if is_zero(t) else reduce_sum(t, axes)]  # d sum(x) = sum(dx)
JVP_RULES["reduce_sum"] = reduce_sum_jvp


def reduce_sum_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], axes: Sequence[int]
) -> list[TangentLike]:
    ct, (x,) = _single_ct(cotangents), primals
    if is_zero(ct):
        return _zero_in(primals)
    assert isinstance(ct, Tensor)
    return [_expand(ct, x, axes)]  # x-bar = broadcast(ct)
VJP_RULES["reduce_sum"] = reduce_sum_vjp
VJP_SAVES["reduce_sum"] = SAVES_NOTHING


def _other_factors(x: Tensor, axes: Sequence[int]) -> Tensor:
    """``g[i] = prod_{j != i} x[j]`` over each reduced group: the derivative of ``reduce_prod``.

    Exact with zeros in ``x`` (no division): the reduced axes are moved to the
    front and flattened to ``(n, m)``; a pairwise product tree is built upwards
    (padding odd levels with 1) and the products of everything else are pushed
    back down it (each half of a pair gets the other half times what arrives
    from above). Made of slice/pad/mul/add/reshape/transpose only, so its own
    derivatives are exact to any order. O(n) multiplies in ceil(log2 n) levels.
    """
    axes = sorted(axes)
    kept = _kept_axes(x.ndim, axes)
    perm = (*axes, *kept)
    n = math.prod(x.shape[a] for a in axes)
    m = math.prod(x.shape[a] for a in kept)
    moved_shape = tuple(x.shape[p] for p in perm)
    if n == 0:
        return _zeros_like(x)
    cur = reshape(_maybe_transpose(x, perm), (n, m))
    levels: list[tuple[Tensor, Tensor, int]] = []  # (evens, odds, rows before padding)
    while cur.shape[0] > 1:
        rows = cur.shape[0]
        if rows % 2:
            cur = pad(cur, 1, ((0, 1, 0), (0, 0, 0)))
        even = static_slice(cur, (0, 0), cur.shape, (2, 1))
        odd = static_slice(cur, (1, 0), cur.shape, (2, 1))
        levels.append((even, odd, rows))
        cur = mul(even, odd)
    g = full((1, m), 1, x.dtype)
    for even, odd, rows in reversed(levels):
        g = add(pad(mul(g, odd), 0, ((0, 1, 1), (0, 0, 0))), pad(mul(g, even), 0, ((1, 0, 1), (0, 0, 0))))
        if g.shape[0] != rows:
            g = static_slice(g, (0, 0), (rows, m))
    return _maybe_transpose(reshape(g, moved_shape), _inverse_permutation(perm))


def reduce_prod_jvp(primals: Primals, tangents: Tangents, outputs: Primals, axes: Sequence[int]) -> list[TangentLike]:
    (x,), (t,), (out,) = primals, tangents, outputs
    if is_zero(t):
        return [Zero.like(out)]
    return [reduce_sum(mul(t, _other_factors(x, axes)), axes)]  # d prod(x) = sum_i dx_i prod_{j!=i} x_j
JVP_RULES["reduce_prod"] = reduce_prod_jvp


def reduce_prod_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], axes: Sequence[int]
) -> list[TangentLike]:
    ct, (x,) = _single_ct(cotangents), primals
    if is_zero(ct):
        return _zero_in(primals)
    assert isinstance(ct, Tensor)
    return [mul(_expand(ct, x, axes), _conj(_other_factors(x, axes)))]  # x_i-bar = ct conj(prod_{j!=i} x_j)
VJP_RULES["reduce_prod"] = reduce_prod_vjp


def _chooser_weights(x: Tensor, out: Tensor, axes: Sequence[int]) -> Tensor:
    """1/count at the positions equal to the reduced max (min), 0 elsewhere (JAX's tie split)."""
    hits = convert(eq(x, _expand(out, x, axes)), x.dtype)
    return div(hits, _expand(reduce_sum(hits, axes), x, axes))


def _chooser_jvp(primals: Primals, tangents: Tangents, outputs: Primals, axes: Sequence[int]) -> list[TangentLike]:
    (x,), (t,), (out,) = primals, tangents, outputs
    if is_zero(t):
        return [Zero.like(out)]
    return [reduce_sum(mul(t, _chooser_weights(x, out, axes)), axes)]  # d max(x) = mean of dx over the argmax set


def _chooser_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], axes: Sequence[int]
) -> list[TangentLike]:
    ct, (x,), (out,) = _single_ct(cotangents), primals, outputs
    if is_zero(ct):
        return _zero_in(primals)
    assert isinstance(ct, Tensor)
    return [mul(_expand(ct, x, axes), _chooser_weights(x, out, axes))]  # x-bar = ct / count at the argmax set


def reduce_max_jvp(primals: Primals, tangents: Tangents, outputs: Primals, axes: Sequence[int]) -> list[TangentLike]:
    return _chooser_jvp(primals, tangents, outputs, axes)  # ties share the tangent equally
JVP_RULES["reduce_max"] = reduce_max_jvp


def reduce_max_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], axes: Sequence[int]
) -> list[TangentLike]:
    return _chooser_vjp(cotangents, primals, outputs, needs, axes)  # ties share the cotangent equally
VJP_RULES["reduce_max"] = reduce_max_vjp


def reduce_min_jvp(primals: Primals, tangents: Tangents, outputs: Primals, axes: Sequence[int]) -> list[TangentLike]:
    return _chooser_jvp(primals, tangents, outputs, axes)  # ties share the tangent equally
JVP_RULES["reduce_min"] = reduce_min_jvp


def reduce_min_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], axes: Sequence[int]
) -> list[TangentLike]:
    return _chooser_vjp(cotangents, primals, outputs, needs, axes)  # ties share the cotangent equally
VJP_RULES["reduce_min"] = reduce_min_vjp


# -- reduce_precision ------------------------------------------------------------------------------


def reduce_precision_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, exponent_bits: int, mantissa_bits: int
) -> list[TangentLike]:
    (t,), (out,) = tangents, outputs
    if is_zero(t):
        return [Zero.like(out)]
    return [F.reduce_precision(t, exponent_bits, mantissa_bits)]  # as JAX: the tangent rounded alike


JVP_RULES["reduce_precision"] = reduce_precision_jvp


def reduce_precision_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], exponent_bits: int,
    mantissa_bits: int,
) -> list[TangentLike]:  # fmt: skip
    ct = _single_ct(cotangents)
    if is_zero(ct):
        return [Zero.like(primals[0])]
    assert isinstance(ct, Tensor)
    return [F.reduce_precision(ct, exponent_bits, mantissa_bits)]  # JAX's transpose: the same rounding


VJP_RULES["reduce_precision"] = reduce_precision_vjp
VJP_SAVES["reduce_precision"] = SAVES_NOTHING


# -- cumsum ----------------------------------------------------------------------------------------------


def cumsum_jvp(primals: Primals, tangents: Tangents, outputs: Primals, axis: int, reverse: bool) -> list[TangentLike]:
    (t,), (out,) = tangents, outputs
    return [Zero.like(out) if is_zero(t) else F.cumsum(t, axis, reverse)]  # d cumsum(x) = cumsum(dx)


JVP_RULES["cumsum"] = cumsum_jvp


def cumsum_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], axis: int, reverse: bool
) -> list[TangentLike]:
    ct = _single_ct(cotangents)
    if is_zero(ct):
        return [Zero.like(primals[0])]
    assert isinstance(ct, Tensor)
    return [F.cumsum(ct, axis, not reverse)]  # x-bar = the cumulative sum of ct from the other end


VJP_RULES["cumsum"] = cumsum_vjp
VJP_SAVES["cumsum"] = SAVES_NOTHING


# -- the prefix scan behind cumprod, cummax, cummin, cumlogsumexp ---------------------------------------


#: (a, b) -> (the op's value, d/da, d/db), all elementwise and built from vocabulary ops
Partials = Callable[[Tensor, Tensor], tuple[Tensor, Tensor, Tensor]]


@dataclass
class _Level:
    """One level of the prefix scan over ``n`` elements: the weights of its two combines.

    ``pair`` combines elements ``2i`` and ``2i + 1``; ``fill`` combines each odd
    result (but the last, when ``n`` is even) with element ``2i + 2``; ``inner`` is the
    level of the half-length scan of the pair results.
    """

    n: int
    pair: tuple[Tensor, Tensor]
    fill: tuple[Tensor, Tensor] | None
    inner: _Level | None


def _take(x: Tensor, axis: int, start: int, stop: int, step: int = 1) -> Tensor:
    """``x[start:stop:step]`` along ``axis``."""
    starts = [0] * x.ndim
    limits = list(x.shape)
    strides = [1] * x.ndim
    starts[axis], limits[axis], strides[axis] = start, stop, step
    return F.slice(x, starts, limits, strides)


def _place(x: Tensor, axis: int, n: int, start: int) -> Tensor:
    """``x`` spread over positions ``start, start + 2, ...`` of a length-``n`` axis, zeros between:
    the transpose of ``_take(., axis, start, n, 2)``."""
    m = x.shape[axis]
    config = [(0, 0, 0)] * x.ndim
    config[axis] = (start, n - start - 2 * (m - 1) - 1, 1)
    return F.pad(x, 0, config)


def _pad_end(x: Tensor, axis: int, count: int) -> Tensor:
    if count == 0:
        return x
    config = [(0, 0, 0)] * x.ndim
    config[axis] = (0, count, 0)
    return F.pad(x, 0, config)


def _interleave(even: Tensor, odd: Tensor, axis: int) -> Tensor:
    """``even[0], odd[0], even[1], odd[1], ...`` along ``axis`` (``even`` may be one longer)."""
    ne, no = even.shape[axis], odd.shape[axis]
    odd = _pad_end(odd, axis, ne - no)
    shape = even.shape
    split = (*shape[: axis + 1], 1, *shape[axis + 1 :])
    both = F.concatenate([F.reshape(even, split), F.reshape(odd, split)], axis + 1)
    merged = F.reshape(both, (*shape[:axis], 2 * ne, *shape[axis + 1 :]))
    return merged if ne == no else _take(merged, axis, 0, ne + no)


def _weighted(w: tuple[Tensor, Tensor], a: Tensor, b: Tensor) -> Tensor:
    return F.add(F.mul(w[0], a), F.mul(w[1], b))


def _conj(x: Tensor) -> Tensor:
    return F.conj(x) if x.dtype.kind == "complex" else x


def _levels(x: Tensor, axis: int, partials: Partials) -> tuple[Tensor, _Level | None]:
    """The primal prefix scan of ``x`` along ``axis`` and the weights of every combine."""
    n = x.shape[axis]
    if n < 2:
        return x, None
    value, wa, wb = partials(_take(x, axis, 0, n - 1, 2), _take(x, axis, 1, n, 2))
    odd, inner = _levels(value, axis, partials)
    first = _take(x, axis, 0, 1)
    fill = None
    even = first
    if n > 2:
        lead = _take(odd, axis, 0, n // 2 - 1) if n % 2 == 0 else odd
        filled, fa, fb = partials(lead, _take(x, axis, 2, n, 2))
        fill = (fa, fb)
        even = F.concatenate([first, filled], axis)
    return _interleave(even, odd, axis), _Level(n, (wa, wb), fill, inner)


def _scan_tangent(t: Tensor, axis: int, level: _Level | None) -> Tensor:
    """The scan's tangent: each combine is ``wa * ta + wb * tb`` (linear in ``t``)."""
    if level is None:
        return t
    n = level.n
    odd = _scan_tangent(_weighted(level.pair, _take(t, axis, 0, n - 1, 2), _take(t, axis, 1, n, 2)), axis, level.inner)
    even = _take(t, axis, 0, 1)
    if level.fill is not None:
        lead = _take(odd, axis, 0, n // 2 - 1) if n % 2 == 0 else odd
        even = F.concatenate([even, _weighted(level.fill, lead, _take(t, axis, 2, n, 2))], axis)
    return _interleave(even, odd, axis)


def _scan_transpose(ct: Tensor, axis: int, level: _Level | None) -> Tensor:
    """The transpose of ``_scan_tangent``: cotangents flow back through each combine, times the
    conjugate of its weight."""
    if level is None:
        return ct
    n = level.n
    ct_even = _take(ct, axis, 0, n, 2)
    ct_odd = _take(ct, axis, 1, n, 2)
    parts = [_place(_take(ct_even, axis, 0, 1), axis, n, 0)]
    if level.fill is not None:
        ct_filled = _take(ct_even, axis, 1, ct_even.shape[axis])
        fa, fb = level.fill
        ct_odd = F.add(ct_odd, _pad_end(F.mul(_conj(fa), ct_filled), axis, n // 2 - ct_filled.shape[axis]))
        parts.append(_place(F.mul(_conj(fb), ct_filled), axis, n, 2))
    ct_pairs = _scan_transpose(ct_odd, axis, level.inner)
    wa, wb = level.pair
    parts.append(_place(F.mul(_conj(wa), ct_pairs), axis, n, 0))
    parts.append(_place(F.mul(_conj(wb), ct_pairs), axis, n, 1))
    total = parts[0]
    for p in parts[1:]:
        total = F.add(total, p)
    return total


def _scan_jvp(partials: Partials, x: Tensor, t: Tensor, axis: int, reverse: bool) -> Tensor:
    if reverse:  # as lax.associative_scan: reverse the operand, scan, reverse back
        x, t = F.reverse(x, (axis,)), F.reverse(t, (axis,))
    _, level = _levels(x, axis, partials)
    out = _scan_tangent(t, axis, level)
    return F.reverse(out, (axis,)) if reverse else out


def _scan_vjp(partials: Partials, x: Tensor, ct: Tensor, axis: int, reverse: bool) -> Tensor:
    if reverse:
        x, ct = F.reverse(x, (axis,)), F.reverse(ct, (axis,))
    _, level = _levels(x, axis, partials)
    out = _scan_transpose(ct, axis, level)
    return F.reverse(out, (axis,)) if reverse else out


def _dense(t: TangentLike) -> Tensor:
    return F.full(tuple(t.shape), 0, t.dtype) if isinstance(t, Zero) else t


def _mul_partials(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    return F.mul(a, b), b, a  # d(ab) = b da + a db


def _balanced(value: Tensor, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """lax.max's (lax.min's) derivative: 1 to the operand equal to the result, 1/2 each on a tie."""
    one = F.full((), 1, value.dtype)
    two = F.full((), 2, value.dtype)
    zero = F.full((), 0, value.dtype)
    a_hit, b_hit = F.eq(a, value), F.eq(b, value)
    shape = tuple(value.shape)

    def spread(s: Tensor) -> Tensor:
        return F.broadcast_in_dim(s, shape, ())

    wa = F.div(F.select(a_hit, spread(one), spread(zero)), F.select(b_hit, spread(two), spread(one)))
    wb = F.div(F.select(b_hit, spread(one), spread(zero)), F.select(a_hit, spread(two), spread(one)))
    return wa, wb


def _max_partials(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    value = F.max(a, b)
    return (value, *_balanced(value, a, b))


def _min_partials(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    value = F.min(a, b)
    return (value, *_balanced(value, a, b))


def _finite_or_zero(x: Tensor) -> Tensor:
    """x with its infinities replaced by 0 (JAX's ``_replace_inf`` in logaddexp's derivative)."""
    inf = F.broadcast_in_dim(F.full((), float("inf"), x.dtype), tuple(x.shape), ())
    zero = F.broadcast_in_dim(F.full((), 0, x.dtype), tuple(x.shape), ())
    return F.select(F.eq(F.abs(x), inf), zero, x)


def _logaddexp_partials(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """JAX's logaddexp, ``max(a, b) + log1p(exp(-|a - b|))`` (``a + b`` where ``a - b`` is NaN),
    and its derivatives ``exp(a - value)``, ``exp(b - value)`` with infinities taken as 0."""
    delta = F.sub(a, b)
    tail = F.log1p(F.exp(F.neg(F.abs(delta))))
    value = F.select(F.ne(delta, delta), F.add(a, b), F.add(F.max(a, b), tail))
    v = _finite_or_zero(value)
    return value, F.exp(F.sub(_finite_or_zero(a), v)), F.exp(F.sub(_finite_or_zero(b), v))


def _cum_jvp(partials: Partials, primals: Primals, tangents: Tangents, outputs: Primals, axis: int,
             reverse: bool) -> list[TangentLike]:  # fmt: skip
    (x,), (t,), (out,) = primals, tangents, outputs
    if is_zero(t) or x.shape[axis] == 0:
        return [Zero.like(out)]
    return [_scan_jvp(partials, x, _dense(t), axis, reverse)]


def _cum_vjp(partials: Partials, cotangents: Tangents, primals: Primals, axis: int, reverse: bool) -> list[TangentLike]:
    ct, (x,) = _single_ct(cotangents), primals
    if is_zero(ct) or x.shape[axis] == 0:
        return [Zero.like(x)]
    assert isinstance(ct, Tensor)
    return [_scan_vjp(partials, x, ct, axis, reverse)]


def cumprod_jvp(primals: Primals, tangents: Tangents, outputs: Primals, axis: int, reverse: bool) -> list[TangentLike]:
    return _cum_jvp(_mul_partials, primals, tangents, outputs, axis, reverse)  # d(ab) = b da + a db per combine


JVP_RULES["cumprod"] = cumprod_jvp


def cumprod_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], axis: int, reverse: bool
) -> list[TangentLike]:
    return _cum_vjp(_mul_partials, cotangents, primals, axis, reverse)  # the scan's transpose, conj(weights)


VJP_RULES["cumprod"] = cumprod_vjp
VJP_SAVES["cumprod"] = SAVES_INPUT  # the weights are recomputed from x


def cummax_jvp(primals: Primals, tangents: Tangents, outputs: Primals, axis: int, reverse: bool) -> list[TangentLike]:
    return _cum_jvp(_max_partials, primals, tangents, outputs, axis, reverse)  # lax.max's derivative per combine


JVP_RULES["cummax"] = cummax_jvp


def cummax_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], axis: int, reverse: bool
) -> list[TangentLike]:
    return _cum_vjp(_max_partials, cotangents, primals, axis, reverse)  # ties split as the scan's tree splits them


VJP_RULES["cummax"] = cummax_vjp
VJP_SAVES["cummax"] = SAVES_INPUT


def cummin_jvp(primals: Primals, tangents: Tangents, outputs: Primals, axis: int, reverse: bool) -> list[TangentLike]:
    return _cum_jvp(_min_partials, primals, tangents, outputs, axis, reverse)  # lax.min's derivative per combine


JVP_RULES["cummin"] = cummin_jvp


def cummin_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], axis: int, reverse: bool
) -> list[TangentLike]:
    return _cum_vjp(_min_partials, cotangents, primals, axis, reverse)


VJP_RULES["cummin"] = cummin_vjp
VJP_SAVES["cummin"] = SAVES_INPUT


def cumlogsumexp_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, axis: int, reverse: bool
) -> list[TangentLike]:
    return _cum_jvp(_logaddexp_partials, primals, tangents, outputs, axis, reverse)  # exp(a - out) da + ...


JVP_RULES["cumlogsumexp"] = cumlogsumexp_jvp


def cumlogsumexp_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], axis: int, reverse: bool
) -> list[TangentLike]:
    return _cum_vjp(_logaddexp_partials, cotangents, primals, axis, reverse)


VJP_RULES["cumlogsumexp"] = cumlogsumexp_vjp
VJP_SAVES["cumlogsumexp"] = SAVES_INPUT
