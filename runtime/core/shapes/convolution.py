"""Shape rule of the convolution (``runtime.core.ops`` family ``conv``): ``conv_general_dilated``.

Params are normalised by ``runtime.core.lax.conv_general_dilated`` (``conv_params``) to lax's
canonical form: ``dimension_numbers = (lhs_spec, rhs_spec, out_spec)``, each a permutation naming
(batch, feature, spatial...) dimensions of lhs and the output, and (out feature, in feature,
spatial...) of rhs, as ``jax.lax.ConvDimensionNumbers`` does; explicit ``(low, high)`` padding per
spatial dimension (strings resolved against the shapes); strides and dilations per spatial
dimension.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from runtime.core.ops import OpDef
from runtime.core.shapes._common import (
    _ALL,
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
from runtime.core.shapes.contraction import check_precision
from runtime.core.shapes.windowed import dilate_dim, stride_dim

ConvDimensionNumbers = tuple[Shape, Shape, Shape]


class Conv(NamedTuple):
    """A conv_general_dilated call's params as int tuples."""

    window_strides: Shape
    padding: tuple[tuple[int, int], ...]
    lhs_dilation: Shape
    rhs_dilation: Shape
    dimension_numbers: ConvDimensionNumbers
    feature_group_count: int
    batch_group_count: int


def conv_dimension_numbers(obj: Any, rank: int) -> ConvDimensionNumbers:
    """``(lhs_spec, rhs_spec, out_spec)`` as permutations of ``range(rank)`` (``ShapeError`` otherwise).

    Accepts ``None`` (lax's default: (0, 1, 2, ...) for all three), a ``jax.lax.ConvDimensionNumbers``
    or any triple of int sequences, and a triple of strings such as ``('NHWC', 'HWIO', 'NHWC')``:
    'N' and 'C' name lhs's and the output's batch and feature dimensions, 'O' and 'I' rhs's output
    and input features, other letters the spatial dimensions, ordered as they appear in rhs's string
    (lax's conv_general_permutations).
    """
    if obj is None:
        canon = tuple(range(rank))
        return canon, canon, canon
    try:
        specs = tuple(obj)
    except TypeError:
        specs = ()
    if len(specs) != 3:
        raise ShapeError(f"dimension_numbers must be (lhs_spec, rhs_spec, out_spec), got {obj!r}")
    if all(isinstance(s, str) for s in specs):
        lhs_s, rhs_s, out_s = specs
        pairs = (("N", "C"), ("O", "I"), ("N", "C"))
        for s, (a, b) in zip(specs, pairs, strict=True):
            if s.count(a) != 1 or s.count(b) != 1 or len(set(s)) != len(s):
                raise ShapeError(f"dimension_numbers {obj!r}: {s!r} must hold {a!r} and {b!r} once and no repeats")
        spatial = [c for c in rhs_s if c not in "OI"]
        if not set(lhs_s) - {"N", "C"} == set(spatial) == set(out_s) - {"N", "C"}:
            raise ShapeError(f"dimension_numbers {obj!r} must name the same spatial dimensions in all three")
        perms = tuple(
            (s.index(a), s.index(b), *(s.index(c) for c in spatial)) for s, (a, b) in zip(specs, pairs, strict=True)
        )
        out: list[Shape] = list(perms)
    else:
        out = [_ints(s, "dimension_numbers") for s in specs]
    for s in out:
        if sorted(s) != list(range(rank)):
            raise ShapeError(f"dimension_numbers {obj!r}: each spec must be a permutation of range({rank})")
    return out[0], out[1], out[2]


def conv_geometry(params: Mapping[str, Any], rank: int) -> Conv:
    """A conv_general_dilated call's params, checked and normalised; ``ShapeError`` if malformed."""
    n = rank - 2
    dnums = conv_dimension_numbers(params["dimension_numbers"], rank)  # first: string padding needs it
    strides = _ints(params["window_strides"], "window_strides")
    lhs_dil = _ints(params["lhs_dilation"], "lhs_dilation")
    rhs_dil = _ints(params["rhs_dilation"], "rhs_dilation")
    try:
        padding = tuple((_int(lo, "padding"), _int(hi, "padding")) for lo, hi in params["padding"])
    except (TypeError, ValueError):
        raise ShapeError(f"padding must be a sequence of (low, high) pairs, got {params['padding']!r}") from None
    for name, value in (("window_strides", strides), ("padding", padding), ("lhs_dilation", lhs_dil),
                        ("rhs_dilation", rhs_dil)):  # fmt: skip
        if len(value) != n:
            raise ShapeError(f"{name} {value} needs one entry per spatial dimension ({n})")
    for name, value in (("window_strides", strides), ("lhs_dilation", lhs_dil), ("rhs_dilation", rhs_dil)):
        if any(v < 1 for v in value):
            raise ShapeError(f"{name} {value} must be positive")
    groups = _int(params["feature_group_count"], "feature_group_count")
    batch_groups = _int(params["batch_group_count"], "batch_group_count")
    if groups < 1 or batch_groups < 1:
        raise ShapeError("feature_group_count and batch_group_count must be positive")
    if groups > 1 and batch_groups > 1:
        raise ShapeError("at most one of feature_group_count and batch_group_count may exceed 1")
    return Conv(strides, padding, lhs_dil, rhs_dil, dnums, groups, batch_groups)


def conv_output_shape(lhs: Shape, rhs: Shape, c: Conv) -> Shape:
    """The output shape (in out_spec's layout) of a convolution of ``lhs`` by ``rhs``."""
    lspec, rspec, ospec = c.dimension_numbers
    batch, feature = lhs[lspec[0]], lhs[lspec[1]]
    out_features, in_features = rhs[rspec[0]], rhs[rspec[1]]
    g, b = c.feature_group_count, c.batch_group_count
    if feature != in_features * g:
        raise ShapeError(
            f"lhs feature dimension ({feature}) must equal rhs input features ({in_features}) "
            f"times feature_group_count ({g})"
        )
    if out_features % g or out_features % b:
        raise ShapeError(
            f"rhs output features ({out_features}) must be a multiple of feature_group_count ({g}) "
            f"and batch_group_count ({b})"
        )
    if batch % b:
        raise ShapeError(f"lhs batch ({batch}) must be a multiple of batch_group_count ({b})")
    spatial = []
    for i in range(len(lhs) - 2):
        size = dilate_dim(lhs[lspec[i + 2]], c.lhs_dilation[i]) + sum(c.padding[i])
        if size < 0:
            raise ShapeError(f"padding {c.padding[i]} crops more than spatial dimension {i} holds")
        spatial.append(stride_dim(size, dilate_dim(rhs[rspec[i + 2]], c.rhs_dilation[i]), c.window_strides[i]))
    canonical = (batch // b, out_features, *spatial)
    out = [0] * len(lhs)
    for j, d in enumerate(ospec):
        out[d] = canonical[j]
    return tuple(out)


def conv_general_dilated_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.conv_general_dilated: operands of one dtype and rank >= 2 (1 + 1 + spatial); lax's output shape."""
    dtype = _same_dtype(op, avals, (0, 1))
    _accept(op, avals, 0, _ALL)
    check_precision(op, avals, params)
    lhs, rhs = avals[0][1], avals[1][1]
    if len(lhs) != len(rhs) or len(lhs) < 2:
        raise _fail(ShapeError, op, avals, "lhs and rhs must have one rank, at least 2 (batch/feature + spatial)")
    try:
        return ((dtype, conv_output_shape(lhs, rhs, conv_geometry(params, len(lhs)))),)
    except ShapeError as err:
        raise _fail(ShapeError, op, avals, str(err)) from None


SHAPE_RULES["conv_general_dilated"] = conv_general_dilated_rule


# -- the transposes' geometry (shared by the derivative rules of conv and reduce_window_sum) ------


def conv_vjp_lhs_padding(
    in_shape: Sequence[int], window: Sequence[int], strides: Sequence[int], out_shape: Sequence[int],
    padding: Sequence[tuple[int, int]], lhs_dilation: Sequence[int], rhs_dilation: Sequence[int],
) -> tuple[tuple[int, int], ...]:  # fmt: skip
    """The padding of the cotangent's convolution that transposes a convolution with respect to lhs.

    The cotangent (``out_shape``, dilated by the strides) is padded so that the flipped, dilated
    window placed at each of its positions reaches every lhs position it touched (lax's
    ``_conv_general_vjp_lhs_padding``).
    """
    pads = []
    for n, k, s, o, (lo, _), ld, rd in zip(in_shape, window, strides, out_shape, padding, lhs_dilation,
                                          rhs_dilation, strict=True):  # fmt: skip
        k_dil, n_dil, o_dil = dilate_dim(k, rd), dilate_dim(n, ld), dilate_dim(o, s)
        before = k_dil - lo - 1
        after = n_dil + k_dil - 1 - o_dil - before
        pads.append((before, after))
    return tuple(pads)


def conv_vjp_rhs_padding(
    in_shape: Sequence[int], window: Sequence[int], strides: Sequence[int], out_shape: Sequence[int],
    padding: Sequence[tuple[int, int]], lhs_dilation: Sequence[int], rhs_dilation: Sequence[int],
) -> tuple[tuple[int, int], ...]:  # fmt: skip
    """The padding of lhs's convolution with the cotangent that transposes a convolution with respect to rhs
    (lax's ``_conv_general_vjp_rhs_padding``)."""
    pads = []
    for n, k, s, o, (lo, _), ld, rd in zip(in_shape, window, strides, out_shape, padding, lhs_dilation,
                                          rhs_dilation, strict=True):  # fmt: skip
        k_dil, n_dil, o_dil = dilate_dim(k, rd), dilate_dim(n, ld), dilate_dim(o, s)
        pads.append((lo, o_dil - n_dil + k_dil - lo - 1))
    return tuple(pads)
