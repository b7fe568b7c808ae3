"""Shape rules of the windowed reductions (``runtime.core.ops`` family ``window``): ``reduce_window_sum``,
``reduce_window_max``, ``reduce_window_min`` and their derivatives' ``select_and_gather_add`` /
``select_and_scatter_add``.

The window geometry is lax's: the operand is dilated (``base_dilation - 1`` holes between
elements) and padded (``padding``: ``(low, high)`` per dimension, negative crops), then a window of
``window_dimensions`` (with ``window_dilation - 1`` holes between its taps) slides with
``window_strides``. Holes and padding hold the reduction's identity. Each rule is a named function
followed by its registration in ``SHAPE_RULES``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple

from runtime.core.ops import OpDef
from runtime.core.shapes._common import (
    _ALL,
    _NUM,
    SHAPE_RULES,
    Aval,
    Shape,
    ShapeError,
    _accept,
    _fail,
    _int,
    _ints,
    _same_dtype,
)


class Window(NamedTuple):
    """A normalised window geometry (every field one entry per operand dimension)."""

    dimensions: Shape
    strides: Shape
    padding: tuple[tuple[int, int], ...]
    base_dilation: Shape
    window_dilation: Shape


def dilate_dim(n: int, dilation: int) -> int:
    """The size of ``n`` elements with ``dilation - 1`` holes between neighbours (lax's dilate_dim)."""
    return 0 if n == 0 else 1 + dilation * (n - 1)


def stride_dim(n: int, window: int, stride: int) -> int:
    """How many windows of ``window`` fit ``n`` positions at ``stride`` (lax's stride_dim)."""
    return 0 if n < window else (n - window) // stride + 1


def window_geometry(params: Mapping[str, Any], rank: int) -> Window:
    """The window params of a windowed op as int tuples; ``ShapeError`` (without the op) if malformed."""
    dims = _ints(params["window_dimensions"], "window_dimensions")
    strides = _ints(params["window_strides"], "window_strides")
    base = _ints(params["base_dilation"], "base_dilation")
    wdil = _ints(params["window_dilation"], "window_dilation")
    try:
        padding = tuple((_int(lo, "padding"), _int(hi, "padding")) for lo, hi in params["padding"])
    except (TypeError, ValueError):
        raise ShapeError(f"padding must be a sequence of (low, high) pairs, got {params['padding']!r}") from None
    for name, value in (("window_dimensions", dims), ("window_strides", strides), ("padding", padding),
                        ("base_dilation", base), ("window_dilation", wdil)):  # fmt: skip
        if len(value) != rank:
            raise ShapeError(f"{name} {value} needs one entry per operand dimension ({rank})")
    for name, value in (("window_dimensions", dims),):
        if any(v < 0 for v in value):
            raise ShapeError(f"{name} {value} must be non-negative")
    for name, value in (("window_strides", strides), ("base_dilation", base), ("window_dilation", wdil)):
        if any(v < 1 for v in value):
            raise ShapeError(f"{name} {value} must be positive")
    return Window(dims, strides, padding, base, wdil)


def window_output_shape(shape: Shape, w: Window) -> Shape:
    """The output shape of a window reduction of an operand of ``shape`` (lax's reduce_window_shape_tuple)."""
    out = []
    for n, k, s, (lo, hi), b, d in zip(shape, w.dimensions, w.strides, w.padding, w.base_dilation,
                                       w.window_dilation, strict=True):  # fmt: skip
        padded = dilate_dim(n, b) + lo + hi
        if padded < 0:
            raise ShapeError(f"padding {w.padding} crops more than the dilated operand of shape {shape} holds")
        out.append(stride_dim(padded, dilate_dim(k, d), s))
    return tuple(out)


def _geometry(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any], i: int) -> tuple[Window, Shape]:
    shape = avals[i][1]
    try:
        w = window_geometry(params, len(shape))
        return w, window_output_shape(shape, w)
    except ShapeError as err:
        raise _fail(ShapeError, op, avals, str(err)) from None


def reduce_window_sum_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_window_sum: numbers (not bool, as in lax); output shape from the window geometry."""
    dtype = _accept(op, avals, 0, _NUM)
    return ((dtype, _geometry(op, avals, params, 0)[1]),)


SHAPE_RULES["reduce_window_sum"] = reduce_window_sum_rule


def reduce_window_max_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_window_max: every dtype (max's own order, complex included)."""
    dtype = _accept(op, avals, 0, _ALL)
    return ((dtype, _geometry(op, avals, params, 0)[1]),)


SHAPE_RULES["reduce_window_max"] = reduce_window_max_rule


def reduce_window_min_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_window_min: every dtype."""
    dtype = _accept(op, avals, 0, _ALL)
    return ((dtype, _geometry(op, avals, params, 0)[1]),)


SHAPE_RULES["reduce_window_min"] = reduce_window_min_rule


#: The selections of select_and_gather_add / select_and_scatter_add: the first element of a
#: window that is >= (max) or <= (min) every later one.
SELECT_PRIMS: Final = ("ge", "le")
#: What lax accepts (XLA's SelectAndScatter compares with ge/le, so no complex); lax's
#: select_and_gather_add starts from an infinite identity, which no integer has, and its bool
#: results are not selections (a documented departure: castwise refuses bool there).
_GATHERABLE: Final = frozenset({"float"})
_SCATTERABLE: Final = frozenset({"bool", "int", "uint", "float"})


def _select_prim(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> str:
    prim = params["select_prim"]
    if prim not in SELECT_PRIMS:
        raise _fail(ShapeError, op, avals, f"select_prim must be one of {SELECT_PRIMS}, got {prim!r}")
    return str(prim)


def select_and_gather_add_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """select_and_gather_add(tangents, operand): one float dtype and shape; window output shape."""
    dtype = _same_dtype(op, avals, (0, 1))
    _accept(op, avals, 1, _GATHERABLE)
    _select_prim(op, avals, params)
    if avals[0][1] != avals[1][1]:
        raise _fail(ShapeError, op, avals, "tangents and operand must have one shape")
    return ((dtype, _geometry(op, avals, params, 1)[1]),)


SHAPE_RULES["select_and_gather_add"] = select_and_gather_add_rule


def select_and_scatter_add_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """select_and_scatter_add(source, operand): source shaped like the window output; operand's shape."""
    dtype = _same_dtype(op, avals, (0, 1))
    _accept(op, avals, 1, _SCATTERABLE)
    _select_prim(op, avals, params)
    out = _geometry(op, avals, params, 1)[1]
    if avals[0][1] != out:
        raise _fail(ShapeError, op, avals, f"source must have the window output shape {out}")
    return ((dtype, avals[1][1]),)


SHAPE_RULES["select_and_scatter_add"] = select_and_scatter_add_rule
