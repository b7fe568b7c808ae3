"""JVP and VJP rules of the structural ops: ``reshape``, ``transpose``, ``broadcast_in_dim``,
``slice``, ``pad``, ``reverse``, ``sort``, ``top_k`` and ``split`` (``iota`` and ``full`` have no
derivatives).

Each rule is a named function followed by its registration line; the trailing comment states the
identity it implements. The conventions are those of the structural rules (``autodiff.derivatives``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autodiff.derivatives._common import (
    Primals,
    Shape,
    Tangents,
    _dense,
    _inverse_permutation,
    _scatter_of_gather,
    _zero_in,
    _zeros,
)
from autodiff.derivatives._common import _single_ct_or_zero as _single_ct
from autodiff.rules import JVP_RULES, SAVES_NOTHING, VJP_RULES, VJP_SAVES
from autodiff.zeros import TangentLike, Zero, is_zero
from runtime.core.dtypes import int64 as _int64
from runtime.core.lax import (
    broadcast_in_dim,
    concatenate,
    gather,
    iota,
    optimization_barrier,
    pad,
    reduce_sum,
    reshape,
    reverse,
    scatter_add,
    sort,
    split,
    transpose,
)
from runtime.core.lax import slice as static_slice
from runtime.core.shapes import GatherDimensionNumbers
from runtime.core.tensor import Tensor

# -- helpers ------------------------------------------------------------------------------


def _maybe_reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    return x if tuple(x.shape) == tuple(shape) else reshape(x, tuple(shape))


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


# -- sort, top_k, split -----------------------------------------------------------------------------


def _along(axis: int, rank: int) -> GatherDimensionNumbers:
    """take_along_axis as a gather: one index per element, every other axis a batching axis."""
    batch = tuple(d for d in range(rank) if d != axis)
    return GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,), start_index_map=(axis,),
                                  operand_batching_dims=batch, start_indices_batching_dims=batch)  # fmt: skip


def _take_along(x: Tensor, index: Tensor, axis: int) -> Tensor:
    """``x`` picked along ``axis`` at ``index`` (same rank; every other axis equal): a gather."""
    if 0 in index.shape:  # nothing to pick (a size-1 slice does not fit an empty axis): empty, as in JAX
        return _zeros(tuple(index.shape), x.dtype)
    return gather(x, reshape(index, (*index.shape, 1)), _along(axis, x.ndim), (1,) * x.ndim, mode="clip")


def _put_along(ct: Tensor, index: Tensor, axis: int, shape: Shape) -> Tensor:
    """The transpose of ``_take_along``: ``ct`` added into zeros of ``shape`` at ``index``."""
    dn = _scatter_of_gather(_along(axis, len(shape)))
    if 0 in shape:  # an empty operand receives nothing
        return _zeros(shape, ct.dtype)
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


def _barrier(values: Sequence[TangentLike]) -> list[TangentLike]:
    """The nonzero ``values`` through one optimization_barrier; the symbolic zeros as they are."""
    live = [i for i, v in enumerate(values) if not is_zero(v)]
    out = list(values)
    if live:
        for i, v in zip(live, optimization_barrier([values[i] for i in live]), strict=True):
            out[i] = v
    return out


def optimization_barrier_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    live = [Zero.like(o) if is_zero(t) else t for t, o in zip(tangents, outputs, strict=True)]
    return _barrier(live)  # d barrier(x) = barrier(dx)
JVP_RULES["optimization_barrier"] = optimization_barrier_jvp


def optimization_barrier_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]
) -> list[TangentLike]:
    cts = [Zero.like(x) if ct is None or is_zero(ct) else ct for ct, x in zip(cotangents, primals, strict=True)]
    return _barrier(cts)  # x-bar = barrier(ct), the identity's transpose kept behind a barrier, as JAX's
VJP_RULES["optimization_barrier"] = optimization_barrier_vjp
VJP_SAVES["optimization_barrier"] = SAVES_NOTHING
