"""What several op families' derivative rules share.

The ``Tangents`` / ``Primals`` aliases; the elementwise rules' constants, broadcasting and complex
helpers (binary, unary, conversion, contraction's select / clamp, special); the structural rules'
zeros, axis and gather/scatter helpers (contraction's dot_general / concatenate, indexing,
reductions, structural). Each helper sits under a header naming whose it was. ``_single_ct`` is the
elementwise rules' single cotangent (asserted not to be a ``Zero``), ``_single_ct_or_zero`` the
structural rules' (a ``Zero`` passes through to the rule, which tests for it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autodiff.zeros import TangentLike, Zero, is_zero
from runtime.core import ops
from runtime.core.dtypes import DType
from runtime.core.executor import apply
from runtime.core.lax import broadcast_in_dim, conj, convert, eq, full, reduce_sum, reshape, select
from runtime.core.shapes import GatherDimensionNumbers, ScatterDimensionNumbers
from runtime.core.tensor import Tensor

Tangents = Sequence[TangentLike]
Primals = Sequence[Tensor]

Shape = tuple[int, ...]


# -- helpers of the elementwise rules (binary, unary, conversion, contraction, special) ---


def _const(value: bool | int | float | complex, shape: tuple[int, ...], dtype: DType) -> Tensor:
    """A constant array of exactly ``dtype`` and ``shape``."""
    return full(shape, value, dtype)


_SCALARS: dict[tuple[bool | int | float | complex, type, DType], Tensor] = {}


def _scalar(value: bool | int | float | complex, x: Tensor) -> Tensor:
    """A 0-d constant of ``x``'s dtype: binary ops broadcast it (lax's scalar rule), so
    no array of ``x``'s shape is filled. Made once per (value, dtype) and read-only."""
    key = (value, type(value), x.dtype)
    constant = _SCALARS.get(key)
    if constant is None:
        constant = _const(value, (), x.dtype)
        constant._array.flags.writeable = False
        _SCALARS[key] = constant
    return constant


def _like(value: bool | int | float | complex, x: Tensor) -> Tensor:
    return _const(value, tuple(x.shape), x.dtype)


def _is_complex(x: Tensor | DType) -> bool:
    d = x if isinstance(x, DType) else x.dtype
    return d.kind == "complex"


def _conj(x: Tensor) -> Tensor:
    """conj(x), without an op for real dtypes."""
    return conj(x) if _is_complex(x) else x


def _cast(x: Tensor, dtype: DType, weak: bool | None = None) -> Tensor:
    """convert(x, dtype), without an op when the dtype already matches; with ``weak``, the
    result has that weak flag too (``convert_element_type(..., weak_type=weak)``, as JAX's
    convert rules give a tangent the output's flag and a cotangent the operand's)."""
    if weak is None or x.weak == weak:
        return x if x.dtype is dtype else convert(x, dtype)
    params: dict[str, Any] = {"new_dtype": dtype, "weak_type": True} if weak else {"new_dtype": dtype}
    return apply(ops.convert, (x,), params)  # type: ignore[return-value]


def _broadcast_to(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``t`` broadcast (NumPy rules: leading axes, size-1 axes) to ``shape``."""
    if tuple(t.shape) == tuple(shape):
        return t
    lead = len(shape) - t.ndim
    return broadcast_in_dim(t, shape, tuple(range(lead, len(shape))))


def _unbroadcast(ct: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum ``ct`` back to ``shape``: the transpose of ``_broadcast_to``."""
    shape = tuple(shape)
    if tuple(ct.shape) == shape:
        return ct
    lead = ct.ndim - len(shape)
    axes = list(range(lead))
    axes += [lead + i for i, n in enumerate(shape) if n == 1 and ct.shape[lead + i] != 1]
    out = reduce_sum(ct, axes) if axes else ct
    return out if tuple(out.shape) == shape else reshape(out, shape)


def _replace_zero(x: Tensor) -> Tensor:
    """x with its zeros replaced by ones (a safe divisor / log argument)."""
    return select(eq(x, _like(0, x)), _like(1, x), x)


def _jvp_out(t: TangentLike, out: Tensor) -> TangentLike:
    """A tangent contribution broadcast to the output's shape (Zero stays Zero)."""
    return t if is_zero(t) else _broadcast_to(t, tuple(out.shape))  # type: ignore[arg-type]


def _vjp_in(ct: Tensor, x: Tensor) -> Tensor:
    """A cotangent contribution summed back to the input's shape."""
    return _unbroadcast(ct, tuple(x.shape))


def _single_ct(cotangents: Tangents) -> Tensor:
    (ct,) = cotangents
    assert not is_zero(ct), "the engine never calls a VJP rule with only zero cotangents"
    return ct  # type: ignore[return-value]


# -- helpers of the structural rules (contraction, indexing, reductions, structural) ------


def _zeros(shape: Sequence[int], dtype: DType) -> Tensor:
    """A zero array of exactly ``dtype`` and ``shape`` (only where a live tangent needs it)."""
    return full(tuple(shape), 0, dtype)


def _zeros_like(x: Tensor | Zero) -> Tensor:
    return _zeros(tuple(x.shape), x.dtype)


def _dense(t: TangentLike) -> Tensor:
    """``t`` as an array: a ``Zero`` becomes zeros of its aval."""
    return _zeros_like(t) if isinstance(t, Zero) else t


def _zero_in(primals: Primals) -> list[TangentLike]:
    return [Zero.like(x) for x in primals]


# The structural rules' single cotangent, which may be a Zero (their rules test for one); the
# elementwise rules' ``_single_ct`` asserts it is not. ``indexing`` and ``structural`` import
# this one as ``_single_ct``; ``contraction``, which has rules of both kinds, calls it by this
# name in dot_general's and concatenate's VJPs.
def _single_ct_or_zero(cotangents: Tangents) -> TangentLike:
    (ct,) = cotangents
    return ct


def _inverse_permutation(perm: Sequence[int]) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def _kept_axes(ndim: int, axes: Sequence[int]) -> tuple[int, ...]:
    """The axes a reduction over ``axes`` keeps, in order (its output's broadcast dims)."""
    reduced = set(axes)
    return tuple(d for d in range(ndim) if d not in reduced)


def _expand(ct: Tensor, x: Tensor, axes: Sequence[int]) -> Tensor:
    """A reduction's output-shaped ``ct`` broadcast back over the reduced ``axes`` of ``x``."""
    if tuple(ct.shape) == tuple(x.shape):
        return ct
    return broadcast_in_dim(ct, tuple(x.shape), _kept_axes(x.ndim, axes))


# -- gather / scatter ------------------------------------------------------------------------


def _scatter_of_gather(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    """The scatter that writes exactly the windows a gather with ``dn`` reads."""
    return ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims,
        inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims,
    )
