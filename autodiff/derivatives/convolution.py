"""JVP and VJP rules of the convolution (``runtime.core.ops`` family ``conv``).

Each rule is a named function followed by its registration line; the trailing comment states the
identity it implements. As in ``autodiff.derivatives.structural`` the rules use the runtime's op functions
only, so derivative programs are vocabulary ops and can be differentiated again:

* ``conv_general_dilated`` is bilinear: the JVP convolves each tangent with the other operand, the
  VJP transposes the convolution with respect to each operand by another convolution (lax's
  ``_conv_general_dilated_transpose_lhs`` / ``_rhs``), the other operand conjugated
  (``<a, b> = Re(sum(conj(a) * b))``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autodiff.derivatives._common import Primals, Tangents
from autodiff.rules import JVP_RULES, VJP_RULES, VJP_SAVES, saves_other_operand
from autodiff.zeros import TangentLike, Zero, add_any, is_zero
from runtime.core import lax as F
from runtime.core.shapes import conv_geometry, conv_vjp_lhs_padding, conv_vjp_rhs_padding
from runtime.core.tensor import Tensor

# -- conv_general_dilated ----------------------------------------------------------------------------


def _conj(x: Tensor) -> Tensor:
    return F.conj(x) if x.dtype.kind == "complex" else x


def _spec_transpose(spec: Sequence[int]) -> tuple[int, ...]:
    """A spec with its first two entries (batch and feature, or out and in feature) swapped."""
    return (spec[1], spec[0], *spec[2:])


def _axis_out_of(src: int, size1: int, x: Tensor) -> Tensor:
    """Split axis ``src`` into (``size1``, rest), major first."""
    shape = list(x.shape)
    shape[src : src + 1] = [size1, shape[src] // size1]
    return F.reshape(x, tuple(shape))


def _axis_into(src: int, dst: int, x: Tensor) -> Tensor:
    """Merge axis ``src`` into axis ``dst`` (numbered without ``src``) as its major part."""
    perm = [i for i in range(x.ndim) if i != src]
    perm.insert(dst, src)
    shape = [n for i, n in enumerate(x.shape) if i != src]
    shape[dst] *= x.shape[src]
    moved = x if perm == list(range(x.ndim)) else F.transpose(x, tuple(perm))
    return F.reshape(moved, tuple(shape))


def _conv_params(params: dict[str, Any]) -> dict[str, Any]:
    """The op function's keywords from an equation's params (``precision`` with them, so every
    derived convolution asks for the primal's precision, as JAX's rules do)."""
    return {k: params.get(k) for k in ("window_strides", "padding", "lhs_dilation", "rhs_dilation",
                                       "dimension_numbers", "feature_group_count", "batch_group_count",
                                       "precision")}  # fmt: skip


def conv_transpose_lhs(ct: Tensor, lhs_shape: Sequence[int], rhs: Tensor, params: dict[str, Any]) -> Tensor:
    """The cotangent of a convolution's lhs: ``ct`` convolved with the flipped kernel, strides and
    lhs dilation exchanged, feature roles swapped (a batch group becomes a feature group)."""
    c = conv_geometry(params, rhs.ndim)
    lhs_spec, rhs_spec, out_spec = c.dimension_numbers
    groups, batch_groups = c.feature_group_count, c.batch_group_count
    kernel = rhs
    if groups > 1 or batch_groups > 1:
        n = groups if groups > 1 else batch_groups
        kernel = _axis_into(rhs_spec[0], rhs_spec[1], _axis_out_of(rhs_spec[0], n, kernel))
        groups = n
    pads = conv_vjp_lhs_padding([lhs_shape[d] for d in lhs_spec[2:]], [rhs.shape[d] for d in rhs_spec[2:]],
                                c.window_strides, [ct.shape[d] for d in out_spec[2:]], c.padding,
                                c.lhs_dilation, c.rhs_dilation)  # fmt: skip
    flipped = F.reverse(kernel, rhs_spec[2:]) if rhs.ndim > 2 else kernel
    out = F.conv_general_dilated(
        ct, flipped, c.lhs_dilation, pads, c.window_strides, c.rhs_dilation,
        (out_spec, _spec_transpose(rhs_spec), lhs_spec), groups, 1, params.get("precision"),
    )  # fmt: skip
    if batch_groups > 1:
        out = _axis_into(lhs_spec[1], lhs_spec[0], _axis_out_of(lhs_spec[1], batch_groups, out))
    return out


def conv_transpose_rhs(ct: Tensor, lhs: Tensor, rhs_shape: Sequence[int], params: dict[str, Any]) -> Tensor:
    """The cotangent of a convolution's rhs: lhs convolved with ``ct``, strides and rhs dilation
    exchanged, batch and feature roles swapped (a feature group becomes a batch group)."""
    c = conv_geometry(params, lhs.ndim)
    lhs_spec, rhs_spec, out_spec = c.dimension_numbers
    groups, batch_groups = c.feature_group_count, c.batch_group_count
    if batch_groups > 1:
        groups, batch_groups = batch_groups, 1
    elif groups > 1:
        groups, batch_groups = 1, groups
    pads = conv_vjp_rhs_padding([lhs.shape[d] for d in lhs_spec[2:]], [rhs_shape[d] for d in rhs_spec[2:]],
                                c.window_strides, [ct.shape[d] for d in out_spec[2:]], c.padding,
                                c.lhs_dilation, c.rhs_dilation)  # fmt: skip
    dnums = (_spec_transpose(lhs_spec), _spec_transpose(out_spec), _spec_transpose(rhs_spec))
    return F.conv_general_dilated(lhs, ct, c.rhs_dilation, pads, c.lhs_dilation, c.window_strides, dnums,
                                  groups, batch_groups, params.get("precision"))  # fmt: skip


def conv_general_dilated_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, **params: Any
) -> list[TangentLike]:
    (lhs, rhs), (tl, tr), (out,) = primals, tangents, outputs
    kw = _conv_params(params)
    t: TangentLike = Zero.like(out)
    if not is_zero(tl):
        t = add_any(t, F.conv_general_dilated(tl, rhs, **kw))
    if not is_zero(tr):
        t = add_any(t, F.conv_general_dilated(lhs, tr, **kw))
    return [t]  # bilinear: d conv(l, r) = conv(dl, r) + conv(l, dr)
JVP_RULES["conv_general_dilated"] = conv_general_dilated_jvp


def conv_general_dilated_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], **params: Any
) -> list[TangentLike]:
    (ct,), (lhs, rhs) = cotangents, primals
    if is_zero(ct):
        return [Zero.like(lhs), Zero.like(rhs)]
    assert isinstance(ct, Tensor)
    kw = _conv_params(params)
    out: list[TangentLike] = [Zero.like(lhs), Zero.like(rhs)]
    if needs[0]:
        out[0] = conv_transpose_lhs(ct, lhs.shape, _conj(rhs), kw)  # l-bar = conv^T_l(ct, conj(r))
    if needs[1]:
        out[1] = Zero.like(rhs) if ct.size == 0 else conv_transpose_rhs(ct, _conj(lhs), rhs.shape, kw)
    return out  # r-bar = conv^T_r(conj(l), ct)
VJP_RULES["conv_general_dilated"] = conv_general_dilated_vjp
VJP_SAVES["conv_general_dilated"] = saves_other_operand
