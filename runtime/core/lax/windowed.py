"""The op functions of windowed reductions (reduce_window_*, pooling, select_and_*).

Each function plans, checks and runs one op (or a short
composition of ops) through the executor; the conventions are in ``runtime.core.lax``.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime.core import ops
from runtime.core.executor import asarray, op_error
from runtime.core.lax._common import Operand, _ints, _Invalid, _named, _one
from runtime.core.lax.binary import div
from runtime.core.promotion import get_policy
from runtime.core.shapes import ShapeError
from runtime.core.shapes.windowed import dilate_dim
from runtime.core.tensor import Tensor

__all__ = [
    "avg_pool",
    "max_pool",
    "padtype_to_pads",
    "reduce_window_max",
    "reduce_window_min",
    "reduce_window_sum",
    "select_and_gather_add",
    "select_and_scatter_add",
]


def _shape_of(x: Operand) -> tuple[int, ...]:
    return tuple(x.shape) if isinstance(x, (Tensor, np.ndarray)) else tuple(np.shape(x))


def padtype_to_pads(
    in_shape: Sequence[int], window_shape: Sequence[int], window_strides: Sequence[int], padding: str
) -> tuple[tuple[int, int], ...]:
    """``(low, high)`` per dimension for a padding name, as ``jax.lax.padtype_to_pads``.

    ``'VALID'``: none. ``'SAME'``: ``ceil(n / stride)`` outputs, the odd element of padding at the
    high end; ``'SAME_LOWER'``: the same amount, the odd element at the low end.
    """
    kind = padding.upper()
    if kind == "VALID":
        return tuple((0, 0) for _ in in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise ShapeError(
            f"padtype_to_pads: padding must be 'SAME', 'SAME_LOWER', 'VALID' or (low, high) pairs, got {padding!r} "
            f"[policy {get_policy()!r}]"
        )
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides, strict=True):
        out = -(-n // s)
        total = builtins.max((out - 1) * s + k - n, 0)
        lo = total // 2 if kind == "SAME" else total - total // 2
        pads.append((lo, total - lo))
    return tuple(pads)


def _pairs(padding: Any) -> Any:
    """Explicit padding as a tuple of int pairs; anything else unchanged, for the shape rule to refuse."""
    try:
        return tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        return _Invalid(padding)


def _window_params(
    x: Operand,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int] | None,
    padding: str | Sequence[tuple[int, int]],
    base_dilation: Sequence[int] | None,
    window_dilation: Sequence[int] | None,
) -> dict[str, Any]:
    dims = _ints(window_dimensions, "window_dimensions")
    ones = (1,) * len(dims) if isinstance(dims, tuple) else ()
    strides = ones if window_strides is None else _ints(window_strides, "window_strides")
    wdil = ones if window_dilation is None else _ints(window_dilation, "window_dilation")
    if isinstance(padding, str):
        # lax.reduce_window pads for the dilated window (a (1, 2) window with dilation (1, 2)
        # spans 3 elements), over the operand as given (before any base dilation)
        spans = dims
        if isinstance(dims, tuple) and isinstance(wdil, tuple) and len(wdil) == len(dims):
            spans = tuple(dilate_dim(k, d) for k, d in zip(dims, wdil, strict=True))
        pads: Any = padtype_to_pads(_shape_of(x), spans, strides, padding)
    else:
        pads = _pairs(padding)
    return {
        "window_dimensions": dims,
        "window_strides": strides,
        "padding": pads,
        "base_dilation": ones if base_dilation is None else _ints(base_dilation, "base_dilation"),
        "window_dilation": wdil,
    }


def reduce_window_sum(
    x: Operand,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int] | None = None,
    padding: str | Sequence[tuple[int, int]] = "VALID",
    base_dilation: Sequence[int] | None = None,
    window_dilation: Sequence[int] | None = None,
) -> Tensor:
    """The sum of every window of ``x`` (``jax.lax.reduce_window`` with ``lax.add``).

    One entry per dimension of ``x`` in ``window_dimensions``, ``window_strides`` (default 1),
    ``base_dilation`` / ``window_dilation`` (default 1); ``padding`` is ``(low, high)`` pairs or
    ``'VALID'`` / ``'SAME'`` / ``'SAME_LOWER'``, filled with 0.
    """
    return _one(ops.reduce_window_sum, x, **_window_params(x, window_dimensions, window_strides, padding,
                                                          base_dilation, window_dilation))  # fmt: skip


def reduce_window_max(
    x: Operand,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int] | None = None,
    padding: str | Sequence[tuple[int, int]] = "VALID",
    base_dilation: Sequence[int] | None = None,
    window_dilation: Sequence[int] | None = None,
) -> Tensor:
    """The maximum of every window of ``x`` (``jax.lax.reduce_window`` with ``lax.max``); padding is -inf."""
    return _one(ops.reduce_window_max, x, **_window_params(x, window_dimensions, window_strides, padding,
                                                          base_dilation, window_dilation))  # fmt: skip


def reduce_window_min(
    x: Operand,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int] | None = None,
    padding: str | Sequence[tuple[int, int]] = "VALID",
    base_dilation: Sequence[int] | None = None,
    window_dilation: Sequence[int] | None = None,
) -> Tensor:
    """The minimum of every window of ``x`` (``jax.lax.reduce_window`` with ``lax.min``); padding is +inf."""
    return _one(ops.reduce_window_min, x, **_window_params(x, window_dimensions, window_strides, padding,
                                                          base_dilation, window_dilation))  # fmt: skip


@_named("max_pool")
def max_pool(
    x: Operand, window_shape: Sequence[int], strides: Sequence[int] | None = None, padding: str = "VALID"
) -> Tensor:
    """Max pooling over the spatial dimensions of a channels-last ``x`` (batch, *spatial, features), as flax's."""
    shape = _shape_of(x)
    window = (1, *window_shape, 1)
    step = (1, *(strides if strides is not None else (1,) * len(window_shape)), 1)
    if len(window) != len(shape):
        raise op_error(ShapeError, ops.reduce_window_max, (asarray(x),), f"window_shape {window_shape} needs "
                       "one entry per spatial dimension of (batch, *spatial, features)")  # fmt: skip
    return reduce_window_max(x, window, step, padding)


@_named("avg_pool")
def avg_pool(
    x: Operand, window_shape: Sequence[int], strides: Sequence[int] | None = None, padding: str = "VALID"
) -> Tensor:
    """Average pooling over the spatial dimensions of a channels-last ``x``; padding counts as 0 (flax's default)."""
    shape = _shape_of(x)
    window = (1, *window_shape, 1)
    step = (1, *(strides if strides is not None else (1,) * len(window_shape)), 1)
    if len(window) != len(shape):
        raise op_error(ShapeError, ops.reduce_window_sum, (asarray(x),), f"window_shape {window_shape} needs "
                       "one entry per spatial dimension of (batch, *spatial, features)")  # fmt: skip
    total = reduce_window_sum(x, window, step, padding)
    count = 1
    for k in window_shape:
        count *= int(k)
    return div(total, count)


def select_and_gather_add(
    tangents: Operand,
    operand: Operand,
    select_prim: str,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int],
    padding: Sequence[tuple[int, int]],
    base_dilation: Sequence[int],
    window_dilation: Sequence[int],
) -> Tensor:
    """Per window, ``tangents`` where ``operand`` has its first max (``select_prim='ge'``) or min (``'le'``).

    The JVP of ``reduce_window_max`` / ``reduce_window_min`` (lax's internal op of that name).
    """
    params = _window_params(operand, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    return _one(ops.select_and_gather_add, tangents, operand, select_prim=select_prim, **params)


def select_and_scatter_add(
    source: Operand,
    operand: Operand,
    select_prim: str,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int],
    padding: Sequence[tuple[int, int]],
    base_dilation: Sequence[int],
    window_dilation: Sequence[int],
) -> Tensor:
    """Each window's ``source`` value added where ``operand`` has the window's first max (``'ge'``) / min (``'le'``).

    The transpose of ``select_and_gather_add``: the VJP of ``reduce_window_max`` / ``reduce_window_min``.
    """
    params = _window_params(operand, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    return _one(ops.select_and_scatter_add, source, operand, select_prim=select_prim, **params)
