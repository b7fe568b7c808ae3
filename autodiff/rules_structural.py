"""JVP and VJP rules of the structural, indexing, contraction and reduction ops.

Covers ``dot_general``, ``concatenate``, ``scatter``, ``scatter_add``, ``gather``,
``dynamic_slice``, ``dynamic_update_slice``, ``reduce_sum``, ``reduce_prod``,
``reduce_max``, ``reduce_min``, ``reshape``, ``transpose``, ``broadcast_in_dim``,
``slice``, ``pad`` and ``reverse`` (``iota`` and ``full`` have no derivatives).

Each rule is a named function followed by its registration line; the trailing
comment states the identity it implements. Rules are written with the runtime's
op functions only, so under a recorder they record a derivative program of
vocabulary ops (differentiable again).

Conventions (see ``autodiff.rules``):

* Every op here except ``dot_general``, ``reduce_prod`` and the choosers is
  linear in its differentiable operands with real coefficients, so its JVP is
  the op itself applied to the tangents and its VJP is the plain linear
  transpose (no conjugation is needed under ``<a, b> = Re(sum(conj(a) * b))``).
  ``dot_general`` and ``reduce_prod`` are holomorphic: their VJPs multiply by the
  conjugate of the other factors.
* Index operands (``scatter_indices``, gather ``start_indices``, the start
  indices of ``dynamic_slice`` / ``dynamic_update_slice``) are integers: they
  always get a ``Zero`` cotangent.
* A symbolic ``Zero`` tangent costs no op where the result is zero; where a
  zero must be combined with a live tangent (``concatenate``, ``scatter``,
  ``dynamic_update_slice``) it is built with ``full`` in the exact dtype.
  A cotangent is only computed for inputs with ``needs[i]`` True.
* Gather/scatter transposes use an explicit mode so that each is the exact
  adjoint of the kernel it reverses: a clamping gather (``clip`` or JAX's
  default ``promise_in_bounds``) transposes to a ``clip`` scatter-add, a
  ``fill_or_drop`` gather to a ``fill_or_drop`` scatter-add, and a scatter
  transposes to a gather with ``fill_value=0`` (``clip`` for ``clip``,
  ``fill_or_drop`` otherwise: out-of-bounds windows are dropped).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from autodiff.rules import JVP_RULES, SAVES_NOTHING, VJP_RULES, VJP_SAVES, saves_other_operand
from autodiff.zeros import TangentLike, Zero, add_any, is_zero
from runtime.core.dtypes import DType
from runtime.core.dtypes import float64 as _float64
from runtime.core.dtypes import int64 as _int64
from runtime.core.lax import (
    add,
    broadcast_in_dim,
    concatenate,
    conj,
    convert,
    div,
    dot_general,
    dynamic_slice,
    dynamic_update_slice,
    eq,
    full,
    gather,
    iota,
    mul,
    ne,
    pad,
    reduce_sum,
    reshape,
    reverse,
    scatter,
    scatter_add,
    scatter_mul,
    select,
    sort,
    split,
    transpose,
)
from runtime.core.lax import max as maximum
from runtime.core.lax import slice as static_slice
from runtime.core.shapes import (
    GATHER_DEFAULT_MODE,
    SCATTER_DEFAULT_MODE,
    GatherDimensionNumbers,
    ScatterDimensionNumbers,
    dot_dimension_numbers,
    gather_dimension_numbers,
    parse_mode,
    scatter_dimension_numbers,
    scatter_window,
)
from runtime.core.tensor import Tensor

Tangents = Sequence[TangentLike]
Primals = Sequence[Tensor]
Shape = tuple[int, ...]

# -- helpers ------------------------------------------------------------------------------


def _zeros(shape: Sequence[int], dtype: DType) -> Tensor:
    """A zero array of exactly ``dtype`` and ``shape`` (only where a live tangent needs it)."""
    return full(tuple(shape), 0, dtype)


def _zeros_like(x: Tensor | Zero) -> Tensor:
    return _zeros(tuple(x.shape), x.dtype)


def _dense(t: TangentLike) -> Tensor:
    """``t`` as an array: a ``Zero`` becomes zeros of its aval."""
    return _zeros_like(t) if isinstance(t, Zero) else t


def _conj(x: Tensor) -> Tensor:
    """conj(x), without an op for real dtypes."""
    return conj(x) if x.dtype.kind == "complex" else x


def _zero_in(primals: Primals) -> list[TangentLike]:
    return [Zero.like(x) for x in primals]


def _single_ct(cotangents: Tangents) -> TangentLike:
    (ct,) = cotangents
    return ct


def _inverse_permutation(perm: Sequence[int]) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def _maybe_transpose(x: Tensor, perm: Sequence[int]) -> Tensor:
    perm = tuple(perm)
    return x if perm == tuple(range(len(perm))) else transpose(x, perm)


def _maybe_reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    return x if tuple(x.shape) == tuple(shape) else reshape(x, tuple(shape))


def _kept_axes(ndim: int, axes: Sequence[int]) -> tuple[int, ...]:
    """The axes a reduction over ``axes`` keeps, in order (its output's broadcast dims)."""
    reduced = set(axes)
    return tuple(d for d in range(ndim) if d not in reduced)


def _expand(ct: Tensor, x: Tensor, axes: Sequence[int]) -> Tensor:
    """A reduction's output-shaped ``ct`` broadcast back over the reduced ``axes`` of ``x``."""
    if tuple(ct.shape) == tuple(x.shape):
        return ct
    return broadcast_in_dim(ct, tuple(x.shape), _kept_axes(x.ndim, axes))


# -- dot_general ---------------------------------------------------------------------------


def _dot_transpose(ct: Tensor, other: Tensor, x_ndim: int, dims: Any, x_is_lhs: bool) -> Tensor:
    """The cotangent of one dot_general operand ``x`` given the other operand ``other``.

    ``ct`` has axes ``batch + lhs_free + rhs_free``. Contract its ``other``-free
    axes with ``conj(other)``'s free axes, batching over the batch axes. For the
    lhs the product is ``ct . conj(other)``, with axes ``batch + x_free +
    (other's contracting axes, ascending)``; for the rhs it is ``conj(other) . ct``,
    with axes ``batch + (other's contracting axes) + x_free``. Those are ``x``'s
    own axis orders for a plain matrix product (no transpose is recorded); other
    contractions end with a transpose back to ``x``'s order.
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
        out = dot_general(ct, _conj(other), out_dims)
    else:
        out = dot_general(_conj(other), ct, out_dims)
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
    primals: Primals, tangents: Tangents, outputs: Primals, dimension_numbers: Any
) -> list[TangentLike]:
    (lhs, rhs), (tl, tr), (out,) = primals, tangents, outputs
    t: TangentLike = Zero.like(out)
    if not is_zero(tl):
        t = add_any(t, dot_general(tl, rhs, dimension_numbers))
    if not is_zero(tr):
        t = add_any(t, dot_general(lhs, tr, dimension_numbers))
    return [t]  # d(l . r) = dl . r + l . dr
JVP_RULES["dot_general"] = dot_general_jvp


def dot_general_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], dimension_numbers: Any
) -> list[TangentLike]:
    ct, (lhs, rhs) = _single_ct(cotangents), primals
    if is_zero(ct):
        return _zero_in(primals)
    assert isinstance(ct, Tensor)
    gl = _dot_transpose(ct, rhs, lhs.ndim, dimension_numbers, True) if needs[0] else Zero.like(lhs)
    gr = _dot_transpose(ct, lhs, rhs.ndim, dimension_numbers, False) if needs[1] else Zero.like(rhs)
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
    ct = _single_ct(cotangents)
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


# -- gather / scatter ------------------------------------------------------------------------


def _gather_of_scatter(dn: ScatterDimensionNumbers) -> GatherDimensionNumbers:
    """The gather that reads back exactly the windows a scatter with ``dn`` writes."""
    return GatherDimensionNumbers(
        offset_dims=dn.update_window_dims,
        collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims,
    )


def _scatter_of_gather(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    """The scatter that writes exactly the windows a gather with ``dn`` reads."""
    return ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims,
        inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims,
    )


def _scatter_windows(ct: Tensor, indices: Tensor, updates_shape: Shape, dimension_numbers: Any, mode: Any) -> Tensor:
    """The windows of ``ct`` a scatter wrote, shaped like its updates (0 for dropped windows)."""
    dn = scatter_dimension_numbers(dimension_numbers)
    gather_mode = "clip" if parse_mode(mode, SCATTER_DEFAULT_MODE) == "clip" else "fill_or_drop"
    sizes = scatter_window(tuple(ct.shape), updates_shape, dn)
    return gather(ct, indices, _gather_of_scatter(dn), sizes, mode=gather_mode, fill_value=0)


def gather_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, dimension_numbers: Any, slice_sizes: Sequence[int],
    mode: Any = None, fill_value: Any = None,
) -> list[TangentLike]:  # fmt: skip
    (_, indices), (t, _), (out,) = primals, tangents, outputs
    if is_zero(t):
        return [Zero.like(out)]
    # Filled (out-of-bounds) windows are constant: their tangent is 0.
    return [gather(t, indices, dimension_numbers, slice_sizes, mode=mode, fill_value=0)]  # d gather(x) = gather(dx)
JVP_RULES["gather"] = gather_jvp


def gather_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], dimension_numbers: Any,
    slice_sizes: Sequence[int], mode: Any = None, fill_value: Any = None,
) -> list[TangentLike]:  # fmt: skip
    ct, (x, indices) = _single_ct(cotangents), primals
    if is_zero(ct) or not needs[0]:
        return _zero_in(primals)
    # A clamping gather reads clamped windows, so its adjoint adds into clamped windows.
    scatter_mode = "fill_or_drop" if parse_mode(mode, GATHER_DEFAULT_MODE) == "fill_or_drop" else "clip"
    dn = _scatter_of_gather(gather_dimension_numbers(dimension_numbers))
    gx = scatter_add(_zeros_like(x), indices, ct, dn, mode=scatter_mode)
    return [gx, Zero.like(indices)]  # x-bar = scatter_add(0, idx, ct)
VJP_RULES["gather"] = gather_vjp


def scatter_add_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, dimension_numbers: Any, indices_are_sorted: bool = False,
    unique_indices: bool = False, mode: Any = None,
) -> list[TangentLike]:  # fmt: skip
    (_, indices, _), (t_op, _, t_up), (out,) = primals, tangents, outputs
    if is_zero(t_up):
        return [t_op if not is_zero(t_op) else Zero.like(out)]
    return [
        scatter_add(
            _dense(t_op), indices, t_up, dimension_numbers, indices_are_sorted=indices_are_sorted,
            unique_indices=unique_indices, mode=mode,
        )
    ]  # fmt: skip  # d scatter_add(x, idx, u) = scatter_add(dx, idx, du)
JVP_RULES["scatter_add"] = scatter_add_jvp


def scatter_add_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], dimension_numbers: Any,
    indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None,
) -> list[TangentLike]:  # fmt: skip
    ct, (x, indices, updates) = _single_ct(cotangents), primals
    if is_zero(ct):
        return _zero_in(primals)
    assert isinstance(ct, Tensor)
    gx = ct if needs[0] else Zero.like(x)
    gu = (
        _scatter_windows(ct, indices, tuple(updates.shape), dimension_numbers, mode) if needs[2] else Zero.like(updates)
    )
    return [gx, Zero.like(indices), gu]  # x-bar = ct, u-bar = gather(ct, idx)
VJP_RULES["scatter_add"] = scatter_add_vjp


def scatter_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, dimension_numbers: Any, indices_are_sorted: bool = False,
    unique_indices: bool = False, mode: Any = None,
) -> list[TangentLike]:  # fmt: skip
    (_, indices, _), (t_op, _, t_up), (out,) = primals, tangents, outputs
    if is_zero(t_op) and is_zero(t_up):
        return [Zero.like(out)]
    # The same kernel with the same indices picks the same winner among
    # overlapping updates, so this is exact for non-unique indices too.
    return [
        scatter(
            _dense(t_op), indices, _dense(t_up), dimension_numbers, indices_are_sorted=indices_are_sorted,
            unique_indices=unique_indices, mode=mode,
        )
    ]  # fmt: skip  # d scatter(x, idx, u) = scatter(dx, idx, du)
JVP_RULES["scatter"] = scatter_jvp


def _winning_updates(indices: Tensor, updates: Tensor, operand_shape: Shape, dimension_numbers: Any,
                     indices_are_sorted: bool, mode: Any) -> Tensor:  # fmt: skip
    """Bool mask over ``updates``: True where that element is the one the scatter kept.

    Each update element gets a distinct id; scattering the ids with the same
    indices and reading them back shows which element won each written position
    (the others were overwritten, or dropped out of bounds).
    """
    n = math.prod(updates.shape)
    ids = reshape(iota(_int64, (n,), 0), tuple(updates.shape))
    written = scatter(
        full(operand_shape, -1, _int64), indices, ids, dimension_numbers, indices_are_sorted=indices_are_sorted,
        mode=mode,
    )  # fmt: skip
    dn = scatter_dimension_numbers(dimension_numbers)
    gather_mode = "clip" if parse_mode(mode, SCATTER_DEFAULT_MODE) == "clip" else "fill_or_drop"
    sizes = scatter_window(operand_shape, tuple(updates.shape), dn)
    read_back = gather(written, indices, _gather_of_scatter(dn), sizes, mode=gather_mode, fill_value=-1)
    return eq(read_back, ids)


def scatter_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], dimension_numbers: Any,
    indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None,
) -> list[TangentLike]:  # fmt: skip
    """Overwritten positions of ``x`` get no cotangent; each update gets ``ct`` at its window.

    With ``unique_indices=True`` (the caller's promise) the updates' cotangent is
    a plain gather. Otherwise overlapping updates are resolved exactly: only the
    update element the scatter kept receives the cotangent of its position (the
    overwritten ones get 0), found by scattering element ids, as JAX's scatter
    JVP does. Which duplicate wins is the kernel's choice; the JVP (the same
    kernel on the tangents) agrees with it, and the VJP is its exact adjoint.
    """
    ct, (x, indices, updates) = _single_ct(cotangents), primals
    if is_zero(ct):
        return _zero_in(primals)
    assert isinstance(ct, Tensor)
    gx: TangentLike = Zero.like(x)
    gu: TangentLike = Zero.like(updates)
    if needs[0]:
        gx = scatter(
            ct, indices, _zeros(updates.shape, ct.dtype), dimension_numbers, indices_are_sorted=indices_are_sorted,
            unique_indices=unique_indices, mode=mode,
        )  # fmt: skip
    if needs[2]:
        gu = _scatter_windows(ct, indices, tuple(updates.shape), dimension_numbers, mode)
        if not unique_indices:
            won = _winning_updates(indices, updates, tuple(x.shape), dimension_numbers, indices_are_sorted, mode)
            gu = select(won, gu, _zeros_like(gu))
    return [gx, Zero.like(indices), gu]  # x-bar = scatter(ct, idx, 0), u-bar = gather(ct, idx) where u won
VJP_RULES["scatter"] = scatter_vjp


# -- dynamic slicing ----------------------------------------------------------------------------


def dynamic_slice_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, slice_sizes: Sequence[int]
) -> list[TangentLike]:
    t, starts, (out,) = tangents[0], primals[1:], outputs
    if is_zero(t):
        return [Zero.like(out)]
    return [dynamic_slice(t, starts, slice_sizes)]  # d ds(x, i) = ds(dx, i)
JVP_RULES["dynamic_slice"] = dynamic_slice_jvp


def dynamic_slice_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], slice_sizes: Sequence[int]
) -> list[TangentLike]:
    ct, x, starts = _single_ct(cotangents), primals[0], primals[1:]
    if is_zero(ct) or not needs[0]:
        return _zero_in(primals)
    # Both ops clamp the start the same way (the window always fits).
    gx = dynamic_update_slice(_zeros_like(x), ct, starts)
    return [gx, *(Zero.like(s) for s in starts)]  # x-bar = dus(0, ct, i)
VJP_RULES["dynamic_slice"] = dynamic_slice_vjp


def dynamic_update_slice_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (t_op, t_up), starts, (out,) = tangents[:2], primals[2:], outputs
    if is_zero(t_op) and is_zero(t_up):
        return [Zero.like(out)]
    return [dynamic_update_slice(_dense(t_op), _dense(t_up), starts)]  # d dus(x, u, i) = dus(dx, du, i)
JVP_RULES["dynamic_update_slice"] = dynamic_update_slice_jvp


def dynamic_update_slice_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]
) -> list[TangentLike]:
    ct, (x, update), starts = _single_ct(cotangents), primals[:2], primals[2:]
    if is_zero(ct):
        return _zero_in(primals)
    assert isinstance(ct, Tensor)
    gx = dynamic_update_slice(ct, _zeros_like(update), starts) if needs[0] else Zero.like(x)
    gu = dynamic_slice(ct, starts, update.shape) if needs[1] else Zero.like(update)
    return [gx, gu, *(Zero.like(s) for s in starts)]  # x-bar = dus(ct, 0, i), u-bar = ds(ct, i)
VJP_RULES["dynamic_update_slice"] = dynamic_update_slice_vjp


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


# -- structural ------------------------------------------------------------------------------------


def reshape_jvp(primals: Primals, tangents: Tangents, outputs: Primals, new_sizes: Sequence[int]) -> list[TangentLike]:
    (t,), (out,) = tangents, outputs
    return [Zero.like(out) if is_zero(t) else reshape(t, new_sizes)]  # d reshape(x) = reshape(dx)
JVP_RULES["reshape"] = reshape_jvp


def reshape_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], new_sizes: Sequence[int]
) -> list[TangentLike]:
    ct, (x,) = _single_ct(cotangents), primals
    return [Zero.like(x) if is_zero(ct) else reshape(ct, x.shape)]  # x-bar = reshape(ct, x.shape)
VJP_RULES["reshape"] = reshape_vjp
VJP_SAVES["reshape"] = SAVES_NOTHING


def transpose_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, permutation: Sequence[int]
) -> list[TangentLike]:
    (t,), (out,) = tangents, outputs
    return [Zero.like(out) if is_zero(t) else transpose(t, permutation)]  # d x^P = dx^P
JVP_RULES["transpose"] = transpose_jvp


def transpose_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], permutation: Sequence[int]
) -> list[TangentLike]:
    ct, (x,) = _single_ct(cotangents), primals
    if is_zero(ct):
        return [Zero.like(x)]
    return [transpose(ct, _inverse_permutation(permutation))]  # x-bar = ct^(P^-1)
VJP_RULES["transpose"] = transpose_vjp
VJP_SAVES["transpose"] = SAVES_NOTHING


def broadcast_in_dim_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, shape: Sequence[int], broadcast_dimensions: Sequence[int]
) -> list[TangentLike]:
    (t,), (out,) = tangents, outputs
    if is_zero(t):
        return [Zero.like(out)]
    return [broadcast_in_dim(t, shape, broadcast_dimensions)]  # d broadcast(x) = broadcast(dx)
JVP_RULES["broadcast_in_dim"] = broadcast_in_dim_jvp


def broadcast_in_dim_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], shape: Sequence[int],
    broadcast_dimensions: Sequence[int],
) -> list[TangentLike]:  # fmt: skip
    ct, (x,) = _single_ct(cotangents), primals
    if is_zero(ct):
        return [Zero.like(x)]
    assert isinstance(ct, Tensor)
    # Sum the new axes and the axes a size-1 operand axis was stretched over.
    stretched = {d for i, d in enumerate(broadcast_dimensions) if x.shape[i] == 1 and shape[d] != 1}
    axes = [d for d in range(len(shape)) if d not in broadcast_dimensions or d in stretched]
    summed = reduce_sum(ct, axes) if axes else ct
    return [_maybe_reshape(summed, x.shape)]  # x-bar = sum of ct over the broadcast axes
VJP_RULES["broadcast_in_dim"] = broadcast_in_dim_vjp
VJP_SAVES["broadcast_in_dim"] = SAVES_NOTHING


def slice_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, start_indices: Sequence[int],
    limit_indices: Sequence[int], strides: Sequence[int] | None = None,
) -> list[TangentLike]:  # fmt: skip
    (t,), (out,) = tangents, outputs
    if is_zero(t):
        return [Zero.like(out)]
    return [static_slice(t, start_indices, limit_indices, strides)]  # d x[s] = dx[s]
JVP_RULES["slice"] = slice_jvp


def slice_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], start_indices: Sequence[int],
    limit_indices: Sequence[int], strides: Sequence[int] | None = None,
) -> list[TangentLike]:  # fmt: skip
    ct, (x,) = _single_ct(cotangents), primals
    if is_zero(ct):
        return [Zero.like(x)]
    assert isinstance(ct, Tensor)
    steps = (1,) * x.ndim if strides is None else tuple(strides)
    config = []
    for start, n_out, step, n_in in zip(start_indices, ct.shape, steps, x.shape, strict=True):
        end = start + (n_out - 1) * step + 1 if n_out else start  # one past the last element read
        config.append((start, n_in - end, step - 1 if n_out else 0))
    return [pad(ct, 0, config)]  # x-bar = ct scattered back into zeros (a pad)
VJP_RULES["slice"] = slice_vjp
VJP_SAVES["slice"] = SAVES_NOTHING


def pad_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, padding_config: Sequence[Sequence[int]],
    padding_value: Any = 0,
) -> list[TangentLike]:  # fmt: skip
    (t,), (out,) = tangents, outputs
    if is_zero(t):
        return [Zero.like(out)]
    return [pad(t, 0, padding_config)]  # d pad(x, v) = pad(dx, 0): the padding value is a constant
JVP_RULES["pad"] = pad_jvp


def pad_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool],
    padding_config: Sequence[Sequence[int]], padding_value: Any = 0,
) -> list[TangentLike]:  # fmt: skip
    ct, (x,) = _single_ct(cotangents), primals
    if is_zero(ct):
        return [Zero.like(x)]
    assert isinstance(ct, Tensor)
    # Undo lo/hi (cropping what was added, zero-filling what a negative pad cut
    # away), then keep every (interior + 1)-th element.
    undo = [(-lo, -hi, 0) for lo, hi, _ in padding_config]
    unpadded = ct if all(u == (0, 0, 0) for u in undo) else pad(ct, 0, undo)
    steps = tuple(interior + 1 for _, _, interior in padding_config)
    if any(s != 1 for s in steps):
        unpadded = static_slice(unpadded, (0,) * x.ndim, unpadded.shape, steps)
    return [unpadded]  # x-bar = ct at the positions x was copied to
VJP_RULES["pad"] = pad_vjp
VJP_SAVES["pad"] = SAVES_NOTHING


def reverse_jvp(primals: Primals, tangents: Tangents, outputs: Primals, dimensions: Sequence[int]) -> list[TangentLike]:
    (t,), (out,) = tangents, outputs
    return [Zero.like(out) if is_zero(t) else reverse(t, dimensions)]  # d rev(x) = rev(dx)
JVP_RULES["reverse"] = reverse_jvp


def reverse_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], dimensions: Sequence[int]
) -> list[TangentLike]:
    ct, (x,) = _single_ct(cotangents), primals
    return [Zero.like(x) if is_zero(ct) else reverse(ct, dimensions)]  # x-bar = rev(ct)
VJP_RULES["reverse"] = reverse_vjp
VJP_SAVES["reverse"] = SAVES_NOTHING


# -- scatter_mul, scatter_min, scatter_max ---------------------------------------------------------


def scatter_mul_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, dimension_numbers: Any, indices_are_sorted: bool = False,
    unique_indices: bool = False, mode: Any = None,
) -> list[TangentLike]:  # fmt: skip
    """JAX's rule: linear in the operand (``scatter_mul(dx, idx, u)``); the updates' term
    ``x * scatter_add(0, idx, du)`` holds only for unique indices, which JAX requires too."""
    (x, indices, updates), (t_op, _, t_up), (out,) = primals, tangents, outputs
    kw = {"indices_are_sorted": indices_are_sorted, "unique_indices": unique_indices, "mode": mode}
    t: TangentLike = Zero.like(out)
    if not is_zero(t_op):
        t = scatter_mul(t_op, indices, updates, dimension_numbers, **kw)
    if not is_zero(t_up):
        _require_unique("scatter_mul", unique_indices)
        t = add_any(t, mul(x, scatter_add(_zeros_like(x), indices, t_up, dimension_numbers, **kw)))
    return [t]  # d scatter_mul(x, idx, u) = scatter_mul(dx, idx, u) + x * scatter_add(0, idx, du)
JVP_RULES["scatter_mul"] = scatter_mul_jvp


def scatter_mul_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], dimension_numbers: Any,
    indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None,
) -> list[TangentLike]:  # fmt: skip
    ct, (x, indices, updates) = _single_ct(cotangents), primals
    if is_zero(ct):
        return _zero_in(primals)
    assert isinstance(ct, Tensor)
    kw = {"indices_are_sorted": indices_are_sorted, "unique_indices": unique_indices, "mode": mode}
    gx: TangentLike = Zero.like(x)
    gu: TangentLike = Zero.like(updates)
    if needs[0]:
        gx = scatter_mul(ct, indices, _conj(updates), dimension_numbers, **kw)
    if needs[2]:
        _require_unique("scatter_mul", unique_indices)
        gu = _scatter_windows(mul(ct, _conj(x)), indices, tuple(updates.shape), dimension_numbers, mode)
    return [gx, Zero.like(indices), gu]  # x-bar = scatter_mul(ct, idx, conj u), u-bar = gather(ct conj x)
VJP_RULES["scatter_mul"] = scatter_mul_vjp


def _require_unique(op: str, unique_indices: bool) -> None:
    if not unique_indices:
        raise NotImplementedError(
            f"{op}: the derivative with respect to the updates needs unique_indices=True (as in JAX): with "
            "repeated indices one update's factor is the product of the others"
        )


def _extremal_coefficients(
    x: Tensor, indices: Tensor, updates: Tensor, out: Tensor, dimension_numbers: Any, mode: Any
) -> tuple[Tensor, Tensor]:
    """JAX's scatter_min/max JVP coefficients, shaped like the updates: ``(operand_coef, updates_coef)``.

    At each written position the tangent is the mean of the tangents of every value that
    attains the result (the operand's own value and the winning updates); an update that
    loses gets 0. ``t_out = scatter_add(dx, idx, gather(dx) * operand_coef + du * updates_coef)``:
    the operand's tangent is replaced by the mean (``-1 + share``, spread over the
    ``num_refs`` updates that write there). Counts come from ``eq`` and constants, so the
    coefficients carry no derivative. Dropped windows read 0 counts and get 0 coefficients.
    """
    dtype = x.dtype if x.dtype.is_inexact else _float64
    real = _real_dtype(dtype)
    shape, ushape = tuple(x.shape), tuple(updates.shape)
    initial = _scatter_windows(x, indices, ushape, dimension_numbers, mode)
    target = _scatter_windows(out, indices, ushape, dimension_numbers, mode)
    won = convert(eq(updates, target), real)
    kept = convert(eq(initial, target), real)
    n_won = _scatter_windows(scatter_add(_zeros(shape, real), indices, won, dimension_numbers, mode=mode),
                             indices, ushape, dimension_numbers, mode)  # fmt: skip
    n_refs = _scatter_windows(scatter_add(_zeros(shape, real), indices, full(ushape, 1, real), dimension_numbers,
                                          mode=mode), indices, ushape, dimension_numbers, mode)  # fmt: skip
    one = full((), 1, real)
    # the operand (when kept) and each winner share equally; with neither, nothing is shared
    share = div(one, maximum(add(n_won, kept), one))
    updates_coef = mul(won, share)
    operand_coef = div(mul(add(full((), -1, real), mul(kept, share)), _nonzero(n_refs)),
                       maximum(n_refs, one))  # fmt: skip
    return convert(operand_coef, dtype), convert(updates_coef, dtype)


def _real_dtype(d: DType) -> DType:
    from runtime.core.shapes import REAL_DTYPE

    return REAL_DTYPE.get(d, d)


def _nonzero(n: Tensor) -> Tensor:
    """1 where ``n != 0``, else 0 (a dropped window has no references)."""
    return convert(ne(n, full((), 0, n.dtype)), n.dtype)


def scatter_extremal_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, dimension_numbers: Any, indices_are_sorted: bool = False,
    unique_indices: bool = False, mode: Any = None,
) -> list[TangentLike]:  # fmt: skip
    (x, indices, updates), (t_op, _, t_up), (out,) = primals, tangents, outputs
    if is_zero(t_op) and is_zero(t_up):
        return [Zero.like(out)]
    op_coef, up_coef = _extremal_coefficients(x, indices, updates, out, dimension_numbers, mode)
    dx, du = _dense(t_op), _dense(t_up)
    moved = add(mul(_scatter_windows(dx, indices, tuple(updates.shape), dimension_numbers, mode), op_coef),
                mul(du, up_coef))  # fmt: skip
    return [scatter_add(dx, indices, moved, dimension_numbers, mode=mode)]


def scatter_extremal_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], dimension_numbers: Any,
    indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None,
) -> list[TangentLike]:  # fmt: skip
    ct, (x, indices, updates), (out,) = _single_ct(cotangents), primals, outputs
    if is_zero(ct):
        return _zero_in(primals)
    assert isinstance(ct, Tensor)
    op_coef, up_coef = _extremal_coefficients(x, indices, updates, out, dimension_numbers, mode)
    windows = _scatter_windows(ct, indices, tuple(updates.shape), dimension_numbers, mode)
    gx: TangentLike = Zero.like(x)
    gu: TangentLike = Zero.like(updates)
    if needs[0]:
        gx = add(ct, scatter_add(_zeros_like(x), indices, mul(windows, op_coef), dimension_numbers, mode=mode))
    if needs[2]:
        gu = mul(windows, up_coef)
    return [gx, Zero.like(indices), gu]  # the transpose of the JVP (real coefficients: no conjugation)


# scatter_min and scatter_max share both rules: which side wins is read from the output
JVP_RULES["scatter_min"] = JVP_RULES["scatter_max"] = scatter_extremal_jvp
VJP_RULES["scatter_min"] = VJP_RULES["scatter_max"] = scatter_extremal_vjp


# -- sort, top_k, split -----------------------------------------------------------------------------


def _along(axis: int, rank: int) -> GatherDimensionNumbers:
    """take_along_axis as a gather: one index per element, every other axis a batching axis."""
    batch = tuple(d for d in range(rank) if d != axis)
    return GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,), start_index_map=(axis,),
                                  operand_batching_dims=batch, start_indices_batching_dims=batch)  # fmt: skip


def _take_along(x: Tensor, index: Tensor, axis: int) -> Tensor:
    """``x`` picked along ``axis`` at ``index`` (same rank; every other axis equal): a gather."""
    return gather(x, reshape(index, (*index.shape, 1)), _along(axis, x.ndim), (1,) * x.ndim, mode="clip")


def _put_along(ct: Tensor, index: Tensor, axis: int, shape: Shape) -> Tensor:
    """The transpose of ``_take_along``: ``ct`` added into zeros of ``shape`` at ``index``."""
    dn = _scatter_of_gather(_along(axis, len(shape)))
    return scatter_add(_zeros(shape, ct.dtype), reshape(index, (*index.shape, 1)), ct, dn, mode="clip")


def _sort_permutation(primals: Primals, dimension: int, num_keys: int) -> Tensor:
    """Where each sorted element came from: the keys sorted together with an iota (JAX's sort JVP).
    castwise's sort is deterministic, so this is the primal sort's own permutation."""
    keys = list(primals[:num_keys])
    index = iota(_int64, tuple(keys[0].shape), dimension)
    return sort((*keys, index), dimension, True, num_keys)[-1]  # type: ignore[no-any-return]


def sort_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, dimension: int, is_stable: bool = True, num_keys: int = 1
) -> list[TangentLike]:
    if all(is_zero(t) for t in tangents):
        return [Zero.like(o) for o in outputs]
    perm = _sort_permutation(primals, dimension, num_keys)
    result: list[TangentLike] = []
    for t, o in zip(tangents, outputs, strict=True):
        result.append(Zero.like(o) if isinstance(t, Zero) else _take_along(t, perm, dimension))
    return result
JVP_RULES["sort"] = sort_jvp  # d sort(x)_i = dx[perm]_i


def sort_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], dimension: int,
    is_stable: bool = True, num_keys: int = 1,
) -> list[TangentLike]:  # fmt: skip
    if not any(n and not is_zero(ct) for n, ct in zip(needs, cotangents, strict=True)):
        return _zero_in(primals)
    perm = _sort_permutation(primals, dimension, num_keys)
    result: list[TangentLike] = []
    for x, ct, need in zip(primals, cotangents, needs, strict=True):
        if need and not is_zero(ct):
            result.append(_put_along(ct, perm, dimension, tuple(x.shape)))  # type: ignore[arg-type]
        else:
            result.append(Zero.like(x))
    return result  # x-bar = ct sent back to where each element came from
VJP_RULES["sort"] = sort_vjp
VJP_SAVES["sort"] = lambda needs: (tuple(range(len(needs))), ())  # the keys (the permutation is recomputed)


def top_k_jvp(primals: Primals, tangents: Tangents, outputs: Primals, k: int) -> list[TangentLike]:
    (t,), (values, indices) = tangents, outputs
    if is_zero(t):
        return [Zero.like(values), Zero.like(indices)]
    return [_take_along(t, indices, values.ndim - 1), Zero.like(indices)]  # type: ignore[arg-type]  # dx[indices]
JVP_RULES["top_k"] = top_k_jvp


def top_k_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], k: int
) -> list[TangentLike]:
    ct, (x,), (_, indices) = cotangents[0], primals, outputs
    if is_zero(ct):
        return [Zero.like(x)]
    return [_put_along(ct, indices, x.ndim - 1, tuple(x.shape))]  # type: ignore[arg-type]  # x-bar = ct at indices
VJP_RULES["top_k"] = top_k_vjp
VJP_SAVES["top_k"] = ((), (1,))


def split_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, sizes: Sequence[int], axis: int
) -> list[TangentLike]:
    (t,) = tangents
    if is_zero(t):
        return [Zero.like(o) for o in outputs]
    return list(split(t, sizes, axis))  # d split(x) = split(dx)
JVP_RULES["split"] = split_jvp


def split_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], sizes: Sequence[int], axis: int
) -> list[TangentLike]:
    (x,) = primals
    if all(is_zero(ct) for ct in cotangents):
        return [Zero.like(x)]
    return [concatenate([_dense(ct) for ct in cotangents], axis)]  # x-bar = concatenate(cts)
VJP_RULES["split"] = split_vjp
VJP_SAVES["split"] = SAVES_NOTHING
