"""JVP and VJP rules of the windowed reductions (``runtime.core.ops`` family ``window``).

Each rule is a named function followed by its registration line; the trailing comment states the
identity it implements. As in ``autodiff.derivatives.structural`` the rules use the runtime's op functions
only, so derivative programs are vocabulary ops and can be differentiated again:

* ``reduce_window_sum`` is linear: its JVP is itself, its VJP pads the cotangent (the strides become
  interior padding) and sums it over the same windows, the base dilation becoming the strides (lax's
  ``_reduce_window_sum_transpose_rule``);
* ``reduce_window_max`` / ``min`` read the tangent at each window's first max (min):
  ``select_and_gather_add``, whose transpose ``select_and_scatter_add`` is the VJP; the two are each
  other's transposes and give the operand that selects no derivative (it is piecewise constant).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autodiff.derivatives._common import Primals, Tangents
from autodiff.rules import JVP_RULES, SAVES_INPUT, SAVES_NOTHING, VJP_RULES, VJP_SAVES
from autodiff.zeros import TangentLike, Zero, is_zero
from runtime.core import lax as F
from runtime.core.shapes import conv_vjp_lhs_padding, window_geometry
from runtime.core.tensor import Tensor

# -- reduce_window_sum ------------------------------------------------------------------------------


def reduce_window_sum_jvp(primals: Primals, tangents: Tangents, outputs: Primals, **params: Any) -> list[TangentLike]:
    (t,), (out,) = tangents, outputs
    return [Zero.like(out) if is_zero(t) else F.reduce_window_sum(t, **params)]  # linear: d sum_w(x) = sum_w(dx)
JVP_RULES["reduce_window_sum"] = reduce_window_sum_jvp


def reduce_window_sum_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], **params: Any
) -> list[TangentLike]:
    (ct,), (x,) = cotangents, primals
    if is_zero(ct):
        return [Zero.like(x)]
    assert isinstance(ct, Tensor)
    w = window_geometry(params, x.ndim)
    pads = conv_vjp_lhs_padding(x.shape, w.dimensions, w.strides, ct.shape, w.padding, w.base_dilation,
                                w.window_dilation)  # fmt: skip
    config = [(lo, hi, s - 1) for (lo, hi), s in zip(pads, w.strides, strict=True)]
    padded = F.pad(ct, 0, config)
    ones = (1,) * x.ndim
    out = F.reduce_window_sum(padded, w.dimensions, w.base_dilation, [(0, 0)] * x.ndim, ones, w.window_dilation)
    return [out]  # x-bar[i] = sum of ct over the windows that hold i
VJP_RULES["reduce_window_sum"] = reduce_window_sum_vjp
VJP_SAVES["reduce_window_sum"] = SAVES_NOTHING


# -- reduce_window_max / reduce_window_min and their select_and_* companions -------------------------


def _window_kw(params: dict[str, Any]) -> dict[str, Any]:
    return {k: params[k] for k in ("window_dimensions", "window_strides", "padding", "base_dilation",
                                   "window_dilation")}  # fmt: skip


def _chooser_jvp(
    prim: str, primals: Primals, tangents: Tangents, outputs: Primals, params: dict[str, Any]
) -> list[TangentLike]:
    (x,), (t,), (out,) = primals, tangents, outputs
    if is_zero(t):
        return [Zero.like(out)]
    return [F.select_and_gather_add(t, x, prim, **_window_kw(params))]


def _chooser_vjp(prim: str, cotangents: Tangents, primals: Primals, params: dict[str, Any]) -> list[TangentLike]:
    (ct,), (x,) = cotangents, primals
    if is_zero(ct):
        return [Zero.like(x)]
    return [F.select_and_scatter_add(ct, x, prim, **_window_kw(params))]


def reduce_window_max_jvp(primals: Primals, tangents: Tangents, outputs: Primals, **params: Any) -> list[TangentLike]:
    return _chooser_jvp("ge", primals, tangents, outputs, params)  # d max_w(x) = dx at the window's first max
JVP_RULES["reduce_window_max"] = reduce_window_max_jvp


def reduce_window_max_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], **params: Any
) -> list[TangentLike]:
    return _chooser_vjp("ge", cotangents, primals, params)  # x-bar = each window's ct added at its first max
VJP_RULES["reduce_window_max"] = reduce_window_max_vjp
VJP_SAVES["reduce_window_max"] = SAVES_INPUT


def reduce_window_min_jvp(primals: Primals, tangents: Tangents, outputs: Primals, **params: Any) -> list[TangentLike]:
    return _chooser_jvp("le", primals, tangents, outputs, params)  # d min_w(x) = dx at the window's first min
JVP_RULES["reduce_window_min"] = reduce_window_min_jvp


def reduce_window_min_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], **params: Any
) -> list[TangentLike]:
    return _chooser_vjp("le", cotangents, primals, params)  # x-bar = each window's ct added at its first min
VJP_RULES["reduce_window_min"] = reduce_window_min_vjp
VJP_SAVES["reduce_window_min"] = SAVES_INPUT


#: The selecting operand (position 1) is all a select_and_* VJP reads.
_SAVES_OPERAND = ((1,), ())


def select_and_gather_add_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, select_prim: str, **params: Any
) -> list[TangentLike]:
    (_, x), (t, _), (out,) = primals, tangents, outputs
    if is_zero(t):
        return [Zero.like(out)]
    return [F.select_and_gather_add(t, x, select_prim, **params)]  # linear in tangents; operand: no derivative
JVP_RULES["select_and_gather_add"] = select_and_gather_add_jvp


def select_and_gather_add_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], select_prim: str, **params: Any
) -> list[TangentLike]:
    (ct,), (t, x) = cotangents, primals
    if is_zero(ct) or not needs[0]:
        return [Zero.like(t), Zero.like(x)]
    return [F.select_and_scatter_add(ct, x, select_prim, **params), Zero.like(x)]  # its transpose: scatter
VJP_RULES["select_and_gather_add"] = select_and_gather_add_vjp
VJP_SAVES["select_and_gather_add"] = _SAVES_OPERAND


def select_and_scatter_add_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, select_prim: str, **params: Any
) -> list[TangentLike]:
    (_, x), (t, _), (out,) = primals, tangents, outputs
    if is_zero(t):
        return [Zero.like(out)]
    return [F.select_and_scatter_add(t, x, select_prim, **params)]  # linear in source; operand: no derivative
JVP_RULES["select_and_scatter_add"] = select_and_scatter_add_jvp


def select_and_scatter_add_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], select_prim: str, **params: Any
) -> list[TangentLike]:
    (ct,), (s, x) = cotangents, primals
    if is_zero(ct) or not needs[0]:
        return [Zero.like(s), Zero.like(x)]
    return [F.select_and_gather_add(ct, x, select_prim, **params), Zero.like(x)]  # its transpose: gather
VJP_RULES["select_and_scatter_add"] = select_and_scatter_add_vjp
VJP_SAVES["select_and_scatter_add"] = _SAVES_OPERAND
