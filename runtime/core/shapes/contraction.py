"""Shape rules of the contraction, selection and joining ops (``runtime.core.ops`` families
``dot_general``, ``select``, ``clamp``, ``concatenate``).

Each rule is a named function followed by its registration in ``SHAPE_RULES``; the checks and
their order are described in ``runtime.core.shapes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from runtime.core.ops import OpDef
from runtime.core.shapes._common import (
    _ORDERED,
    SHAPE_RULES,
    ArityError,
    Aval,
    PrecisionError,
    ShapeError,
    _accept,
    _axis,
    _elementwise_shape,
    _fail,
    _ints,
    _same_dtype,
)

# -- dimension numbers and modes -------------------------------------------------------------

DotDimensionNumbers = tuple[tuple[tuple[int, ...], tuple[int, ...]], tuple[tuple[int, ...], tuple[int, ...]]]


def dot_dimension_numbers(obj: Any) -> DotDimensionNumbers:
    """Normalise ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`` to int tuples."""
    try:
        (lc, rc), (lb, rb) = obj
    except (TypeError, ValueError):
        raise ShapeError(
            f"dimension_numbers must be ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)), got {obj!r}"
        ) from None
    return (_ints(lc, "lhs_contracting"), _ints(rc, "rhs_contracting")), (
        _ints(lb, "lhs_batch"),
        _ints(rb, "rhs_batch"),
    )


# -- precision ---------------------------------------------------------------------------------

#: lax.Precision's members (their names in lower case, as lax's strings spell them), and the
#: aliases lax.Precision accepts for them (``Precision._missing_``)
PRECISION_NAMES: Final = ("default", "high", "highest")
_PRECISION_ALIASES: Final = {
    "default": "default", "fastest": "default", "bfloat16": "default",
    "high": "high", "tensorfloat32": "high", "bfloat16_3x": "high",
    "highest": "highest", "float32": "highest",
}  # fmt: skip

#: A canonical precision: ``None`` or a pair (lhs's, rhs's) of ``PRECISION_NAMES``.
Precision = tuple[str, str] | None


def _precision_name(value: Any) -> str:
    if isinstance(value, str):  # lower case only: jax reads 'DEFAULT', 'F32_F32_F32' ... as a DotAlgorithmPreset
        name = _PRECISION_ALIASES.get(value)
    else:  # lax.Precision, or any enum-like value whose .name is a member's (castwise does not import jax)
        name = getattr(value, "name", None)
        name = name.lower() if isinstance(name, str) and name.lower() in PRECISION_NAMES else None
    if name is None:
        raise PrecisionError(
            f"precision {value!r} is not one of lax's: None, 'default', 'high', 'highest' (or lax.Precision's "
            f"aliases 'fastest', 'bfloat16', 'bfloat16_3x', 'tensorfloat32', 'float32'), a lax.Precision, "
            f"or a pair of them "
            f"(jax reads an upper-case name as a lax.DotAlgorithmPreset, which castwise does not take)"
        )
    return name


def canonical_precision(value: Any) -> Precision:
    """lax's ``canonicalize_precision``: ``None`` stays ``None``; one precision becomes the pair
    (it, it); a pair is each side's. Names are lax.Precision's member names in lower case
    (``'highest'``), so the param hashes, prints and compares without JAX and is itself a valid
    ``precision=``. ``PrecisionError`` for anything else."""
    if value is None:
        return None
    if isinstance(value, tuple | list):
        if len(value) != 2 or len({isinstance(v, str) for v in value}) != 1:
            raise PrecisionError(
                f"precision {value!r} must be a pair (lhs, rhs) of two strings or two lax.Precision values "
                "when it is a sequence (as in lax)"
            )
        return (_precision_name(value[0]), _precision_name(value[1]))
    name = _precision_name(value)
    return (name, name)


def check_precision(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> None:
    """The shape rules' check: a recorded ``precision`` is ``None`` or already canonical."""
    value = params.get("precision")
    if value is None:
        return
    try:
        ok = canonical_precision(value) == value and type(value) is tuple
    except PrecisionError as err:
        raise _fail(PrecisionError, op, avals, str(err)) from None
    if not ok:
        raise _fail(PrecisionError, op, avals, f"precision param {value!r} is not canonical (call {op.name})")


# -- small helpers ----------------------------------------------------------------------------

_BOOL: Final = frozenset({"bool"})
_WHICH: Final = frozenset({"bool", "int", "uint"})


# -- contraction, selection, joining ------------------------------------------------------------


def dot_general_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.dot_general: output is batch dims + lhs free dims + rhs free dims, operand dtype."""
    dtype = _same_dtype(op, avals, (0, 1))
    check_precision(op, avals, params)
    (lhs_shape, rhs_shape) = (avals[0][1], avals[1][1])
    try:
        (lc, rc), (lb, rb) = dot_dimension_numbers(params["dimension_numbers"])
    except ShapeError as err:
        raise _fail(ShapeError, op, avals, str(err)) from None
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise _fail(ShapeError, op, avals, "contracting/batch dimension lists differ in length")
    for dims, shape, side in ((lc + lb, lhs_shape, "lhs"), (rc + rb, rhs_shape, "rhs")):
        for d in dims:
            if not 0 <= d < len(shape):
                raise _fail(ShapeError, op, avals, f"{side} dimension {d} out of range for rank {len(shape)}")
        if len(set(dims)) != len(dims):
            raise _fail(ShapeError, op, avals, f"{side} contracting and batch dimensions repeat a dimension")
    for l_dim, r_dim in zip(lc + lb, rc + rb, strict=True):
        if lhs_shape[l_dim] != rhs_shape[r_dim]:
            raise _fail(
                ShapeError,
                op,
                avals,
                f"lhs dimension {l_dim} (size {lhs_shape[l_dim]}) does not match "
                f"rhs dimension {r_dim} (size {rhs_shape[r_dim]})",
            )
    lhs_free = tuple(s for d, s in enumerate(lhs_shape) if d not in lc and d not in lb)
    rhs_free = tuple(s for d, s in enumerate(rhs_shape) if d not in rc and d not in rb)
    batch = tuple(lhs_shape[d] for d in lb)
    return ((dtype, batch + lhs_free + rhs_free),)


SHAPE_RULES["dot_general"] = dot_general_rule


def select_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.select(pred, on_true, on_false): bool predicate; 0-d operands broadcast."""
    dtype = _same_dtype(op, avals, (1, 2))
    _accept(op, avals, 0, _BOOL)
    return ((dtype, _elementwise_shape(op, avals, (0, 1, 2))),)


SHAPE_RULES["select"] = select_rule


def select_n_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.select_n(which, *cases): ``cases[which]`` elementwise; a bool ``which`` picks among at most
    two cases (False: the first), an integer one among any number; 0-d operands broadcast."""
    if len(avals) < 2:
        raise ArityError(f"{op.name}: expected at least one case besides which, got {len(avals) - 1}")
    dtype = _same_dtype(op, avals, range(1, len(avals)))
    which = _accept(op, avals, 0, _WHICH)
    if which.kind == "bool" and len(avals) > 3:
        raise _fail(ShapeError, op, avals, f"a bool which chooses between at most 2 cases, got {len(avals) - 1}")
    return ((dtype, _elementwise_shape(op, avals, range(len(avals)))),)


SHAPE_RULES["select_n"] = select_n_rule


def clamp_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.clamp(min, operand, max): min/max are 0-d or shaped like operand.

    Complex is rejected: XLA's complex clamp is neither lexicographic nor
    documented (it disagrees with its own complex max/min), so there is no
    semantics to match.
    """
    dtype = _same_dtype(op, avals, (0, 1, 2))
    _accept(op, avals, 1, _ORDERED)
    shape = avals[1][1]
    for i in (0, 2):
        if avals[i][1] not in ((), shape):
            raise _fail(ShapeError, op, avals, "shape mismatch (min and max must be 0-d or shaped like operand)")
    return ((dtype, shape),)


SHAPE_RULES["clamp"] = clamp_rule


def concatenate_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.concatenate: one or more operands of equal rank, equal except along ``dimension``."""
    if not avals:
        raise ArityError(f"{op.name}: expected at least 1 operand, got 0")
    dtype = _same_dtype(op, avals, tuple(range(len(avals))))
    first = avals[0][1]
    if first == ():
        raise _fail(ShapeError, op, avals, "cannot concatenate 0-d operands")
    dim = _axis(op, avals, params["dimension"], len(first), "dimension")
    total = 0
    for _, shape in avals:
        if len(shape) != len(first) or any(
            a != b for i, (a, b) in enumerate(zip(shape, first, strict=True)) if i != dim
        ):
            raise _fail(ShapeError, op, avals, f"shape mismatch outside dimension {dim}")
        total += shape[dim]
    return ((dtype, (*first[:dim], total, *first[dim + 1 :])),)


SHAPE_RULES["concatenate"] = concatenate_rule
