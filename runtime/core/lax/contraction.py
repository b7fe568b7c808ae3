"""The op functions of contraction, selection and joining (dot_general, select, clamp, concatenate).

Each function plans, checks and runs one op (or a short
composition of ops) through the executor; the conventions are in ``runtime.core.lax``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from runtime.core import dtypes as dt
from runtime.core import ops, shapes
from runtime.core.executor import apply, as_tensor, op_error
from runtime.core.lax._common import Operand, _index, _Invalid, _named, _one, _wrap_axes
from runtime.core.lax.conversion import convert
from runtime.core.ops import OpDef
from runtime.core.shapes import ArityError, OpTypeError, ShapeError
from runtime.core.tensor import Tensor

__all__ = ["clamp", "concatenate", "dot", "dot_general", "matmul", "select", "select_n"]


def dot_general(
    lhs: Operand, rhs: Operand, dimension_numbers: Any, precision: Any = None, *, preferred_element_type: Any = None
) -> Tensor:
    """Generalised contraction, as ``jax.lax.dot_general``.

    ``dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``;
    the output is batch dims, then lhs free dims, then rhs free dims.
    ``preferred_element_type``: the result's dtype, the products accumulated in it (int8
    operands summed in int32 do not wrap, bfloat16 ones accumulate in float32). Recorded as a
    ``convert`` of each promoted operand to it and the ordinary op; a type XLA would not
    accumulate in (one ranked below the operands', or one lax refuses) is refused.
    ``precision``: as lax's (``None``, ``'default'`` / ``'high'`` / ``'highest'``, a
    ``lax.Precision``, or a pair for lhs and rhs), recorded as the pair of member names and
    kept by the derivatives, batching and the lowering; eager kernels compute at full precision
    whatever it asks. Anything else raises ``PrecisionError``.
    """
    try:
        dims: Any = shapes.dot_dimension_numbers(dimension_numbers)
    except shapes.ShapeError:
        dims = _Invalid(dimension_numbers)  # malformed: the shape rule refuses it, naming the op and operands
    params: dict[str, Any] = {"dimension_numbers": dims, **_precision_param(precision)}
    if preferred_element_type is not None:
        return _with_preferred(ops.dot_general, lhs, rhs, preferred_element_type, params)
    return _one(ops.dot_general, lhs, rhs, **params)


def _precision_param(precision: Any) -> dict[str, Any]:
    """``{"precision": pair}``, or nothing for ``None`` (the op's default, so a product without
    one records and prints as before). A value lax would refuse goes on as ``_Invalid`` to the
    shape rule, which raises ``PrecisionError`` naming the op, its operands and the policy."""
    if precision is None:
        return {}
    try:
        canon = shapes.canonical_precision(precision)
    except shapes.PrecisionError:
        return {"precision": _Invalid(precision)}
    return {} if canon is None else {"precision": canon}


@_named("dot")
def dot(
    lhs: Operand,
    rhs: Operand,
    *,
    dimension_numbers: Any = None,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Tensor:
    """``jax.lax.dot``: with ``dimension_numbers``, ``dot_general``; without, the vector/vector,
    matrix/vector and matrix/matrix products of operands of rank 1 or 2 (lhs's last axis with
    rhs's first). Other ranks need ``dimension_numbers``, as in lax."""
    lt, rt_ = as_tensor(lhs), as_tensor(rhs)
    if dimension_numbers is None:
        if not (1 <= lt.ndim <= 2 and 1 <= rt_.ndim <= 2):
            raise op_error(
                ShapeError, ops.dot_general, (lt, rt_),
                "dimension_numbers must be given unless both operands have rank 1 or 2 (lax.dot's "
                "vector and matrix products)",
            )  # fmt: skip
        dimension_numbers = (((lt.ndim - 1,), (0,)), ((), ()))
    return dot_general(lt, rt_, dimension_numbers, precision, preferred_element_type=preferred_element_type)


@_named("matmul")
def matmul(x: Operand, y: Operand, *, precision: Any = None, preferred_element_type: Any = None) -> Tensor:
    """``x @ y`` as NumPy's and jax.numpy's ``matmul`` (``precision`` and ``preferred_element_type``
    as in ``dot_general``).

    1-D and 2-D operands are one ``dot_general``. Batched operands broadcast their batch
    dimensions (``(2, 3, 4) @ (4, 5)``, ``(4,) @ (2, 4, 5)``, ``(2, 1, 3, 4) @ (5, 4, 6)``): an
    operand without batch dimensions is contracted as it is (the free dims come out in
    matmul's order), otherwise each operand is broadcast to the common batch shape
    (``broadcast_in_dim``, recorded) and contracted with batch dimensions, so the result
    records, differentiates and batches as its ops do.
    """
    xt = as_tensor(x)
    yt = as_tensor(y)
    if xt.ndim == 0 or yt.ndim == 0:
        raise op_error(ShapeError, ops.dot_general, (xt, yt), "matmul's operands must have at least one dimension")
    pet, prec = preferred_element_type, precision
    if prec is not None:  # refused before a broadcast is recorded
        try:
            prec = shapes.canonical_precision(prec)
        except shapes.PrecisionError as err:
            raise op_error(shapes.PrecisionError, ops.dot_general, (xt, yt), f"matmul: {err}") from None
    if yt.ndim <= 2:  # x's leading dims (and rows) are dot_general's lhs free dims, in order
        return dot_general(xt, yt, (((xt.ndim - 1,), (0,)), ((), ())), prec, preferred_element_type=pet)
    if xt.ndim == 1:  # (k,) @ (..., k, m) -> (..., m)
        return dot_general(xt, yt, (((0,), (yt.ndim - 2,)), ((), ())), prec, preferred_element_type=pet)
    try:
        batch_shape = tuple(np.broadcast_shapes(xt.shape[:-2], yt.shape[:-2]))
    except ValueError:
        raise op_error(
            ShapeError, ops.dot_general, (xt, yt),
            f"matmul's batch dimensions {list(xt.shape[:-2])} and {list(yt.shape[:-2])} do not broadcast",
        ) from None  # fmt: skip
    xb, yb = _broadcast_batch(xt, batch_shape), _broadcast_batch(yt, batch_shape)
    batch = tuple(range(len(batch_shape)))
    dims = (((xb.ndim - 1,), (yb.ndim - 2,)), (batch, batch))
    return dot_general(xb, yb, dims, prec, preferred_element_type=pet)


def _broadcast_batch(t: Tensor, batch_shape: tuple[int, ...]) -> Tensor:
    """``t`` (a stack of matrices) broadcast to ``batch_shape`` + its last two dims."""
    shape = (*batch_shape, *t.shape[-2:])
    if t.shape == shape:
        return t
    lead = len(shape) - t.ndim
    # the op itself (lax.structural imports this module's select through lax.binary)
    return _one(ops.broadcast_in_dim, t, shape=shape, broadcast_dimensions=tuple(range(lead, len(shape))))


def _xla_rank(d: dt.DType) -> tuple[bool, int, int, int, bool]:
    """Where ``d`` stands in XLA's order of element types (primitive_util's HigherPrecisionType,
    which lax's dot_general dtype rule mirrors): complex above real, then exponent range, mantissa
    bits, bit width, and signed above unsigned. XLA converts a dot's or convolution's operands to a
    preferred type ranked above theirs; for one ranked below, it computes in theirs and rounds."""
    part = dt.COMPLEX_PART.get(d, d)
    if part.kind == "float":
        info = ml_dtypes.finfo(part.storage) if part is not dt.float32r else ml_dtypes.finfo(np.float32)
        return (d.kind == "complex", int(info.maxexp), int(info.nmant), part.bits, True)
    return (False, -1, -1, 1 if d.kind == "bool" else d.bits, d.kind != "uint")


def _lax_bit_width(d: dt.DType) -> int:
    """lax's ``_bit_width``: 1 for bool, a complex type's part's width."""
    return 1 if d.kind == "bool" else dt.COMPLEX_PART.get(d, d).bits


def _dot_preferred_refusal(common: dt.DType, preferred: dt.DType) -> str | None:
    """lax.dot_general's rule (``_maybe_upcast``): a non-float result may not be narrowed."""
    if common.kind != "float" and _lax_bit_width(preferred) < _lax_bit_width(common):
        return f"it must not be narrower than the operands' {common} (as in lax)"
    return None


def _conv_preferred_refusal(common: dt.DType, preferred: dt.DType) -> str | None:
    """lax.conv_general_dilated's rule (``_validate_preferred_element_type``): integers may go to
    integers or floats, floats to floats, complex to complex; signed stays signed; no narrowing."""
    if not (common.is_integer and preferred.kind == "float"):
        for kinds in (("int", "uint"), ("float",), ("complex",)):
            if common.kind in kinds and preferred.kind not in kinds:
                return (
                    "the compatible (operands, preferred) kinds are (integer, integer), (integer, float), "
                    "(float, float) and (complex, complex) (as in lax)"
                )
        if common.kind == "int" and preferred.kind != "int":
            return "it must keep the operands' signedness (as in lax)"
    if preferred.itemsize < common.itemsize:
        return f"it must not be narrower than the operands' {common} (as in lax)"
    return None


_PREFERRED_RULES = {"dot_general": _dot_preferred_refusal, "conv_general_dilated": _conv_preferred_refusal}


def _with_preferred(op: OpDef, lhs: Operand, rhs: Operand, preferred: Any, params: dict[str, Any]) -> Tensor:
    """``op(lhs, rhs)`` with lax's ``preferred_element_type``: each operand promoted (the plan's
    common dtype), converted to ``preferred`` (recorded), then the ordinary op. Refusals come
    before anything is recorded."""
    from runtime.core.promotion import PromotionError, result_type

    lt, rt_ = as_tensor(lhs), as_tensor(rhs)
    try:
        pref = dt.dtype(preferred)
    except TypeError:
        raise op_error(
            OpTypeError, op, (lt, rt_), f"{op.name}: preferred_element_type {preferred!r} is not a dtype"
        ) from None
    try:  # the plan's common dtype (operands that agree ask the policy nothing, as in the plan)
        common = lt.dtype if lt.dtype is rt_.dtype else result_type(lt, rt_)
    except PromotionError as err:
        raise op_error(PromotionError, op, (lt, rt_), f"{op.name}: {err}") from None
    if pref is not common:
        why = _PREFERRED_RULES[op.name](common, pref)
        if why is None and common.is_integer and common.bits < 8:
            why = f"XLA's CPU backend does not compile a {op.name} of {common} operands to another result type"
        if why is None and not (common.is_integer and pref.is_integer) and _xla_rank(pref) <= _xla_rank(common):
            why = (
                f"XLA computes it in {common} and rounds the result to {pref}, which is no accumulation in {pref}; "
                f"call {op.name} without it and convert the result"
            )
        if why is not None:
            raise op_error(OpTypeError, op, (lt, rt_), f"{op.name}: preferred_element_type {pref} refused: {why}")
    try:  # the op's own checks (shapes, params, the kernel's dtypes) before a convert is recorded
        shapes.abstract_eval(op, [(pref, lt.shape), (pref, rt_.shape)], params)
    except (ShapeError, TypeError) as err:
        raise op_error(type(err), op, (lt, rt_), f"{err} (with preferred_element_type {pref})") from None
    operands = []
    for t in (lt, rt_):
        if t.dtype is not common:
            t = convert(t, common)  # the plan's promotion, written down
        operands.append(t if t.dtype is pref else convert(t, pref))
    return _one(op, *operands, **params)


def select(pred: Operand, on_true: Operand, on_false: Operand) -> Tensor:
    """``on_true`` where ``pred`` (bool) holds, else ``on_false``."""
    return _one(ops.select, pred, on_true, on_false)


def clamp(min: Operand, x: Operand, max: Operand) -> Tensor:  # noqa: A002
    """``min(max(x, min), max)``, as ``jax.lax.clamp(min, x, max)``."""
    return _one(ops.clamp, min, x, max)


def concatenate(operands: Sequence[Operand], dimension: int) -> Tensor:
    """Join ``operands`` along ``dimension`` (a negative one counts from the end)."""
    if not operands:
        raise op_error(ArityError, ops.concatenate, (), "at least one operand is required")
    dim = _index(dimension)
    if type(dim) is int and dim < 0:
        dim = _wrap_axes((dim,), operands[0])[0]
    return apply(ops.concatenate, operands, {"dimension": dim})  # type: ignore[return-value]


def select_n(which: Operand, *cases: Operand) -> Tensor:
    """``cases[which]`` elementwise (``jax.lax.select_n`` meaning): ``which`` is bool (at most
    two cases, False picks the first) or an integer; the cases are promoted to one dtype."""
    if not cases:
        raise op_error(ArityError, ops.select_n, (), "at least one case is required")
    return _one(ops.select_n, which, *cases)
