"""JVP and VJP rules of the indexing ops: ``gather``, ``scatter``, ``scatter_add``,
``scatter_mul``, ``scatter_min``, ``scatter_max``, ``dynamic_slice`` and ``dynamic_update_slice``.

Each rule is a named function followed by its registration line; the trailing comment states the
identity it implements. The conventions are those of the structural rules (``autodiff.derivatives``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from autodiff.derivatives._common import (
    Primals,
    Shape,
    Tangents,
    _conj,
    _dense,
    _scatter_of_gather,
    _zero_in,
    _zeros,
    _zeros_like,
)
from autodiff.derivatives._common import _single_ct_or_zero as _single_ct
from autodiff.rules import JVP_RULES, VJP_RULES
from autodiff.zeros import TangentLike, Zero, add_any, is_zero
from runtime.core.dtypes import DType
from runtime.core.dtypes import float64 as _float64
from runtime.core.dtypes import int64 as _int64
from runtime.core.lax import (
    add,
    convert,
    div,
    dynamic_slice,
    dynamic_update_slice,
    eq,
    full,
    gather,
    iota,
    mul,
    ne,
    reshape,
    scatter,
    scatter_add,
    scatter_mul,
    select,
)
from runtime.core.lax import max as maximum
from runtime.core.shapes import (
    GATHER_DEFAULT_MODE,
    SCATTER_DEFAULT_MODE,
    GatherDimensionNumbers,
    ScatterDimensionNumbers,
    gather_dimension_numbers,
    parse_mode,
    scatter_dimension_numbers,
    scatter_window,
)
from runtime.core.tensor import Tensor

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
