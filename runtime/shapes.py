"""Shape and dtype rules for every op of the vocabulary (abstract evaluation).

``abstract_eval(op, in_avals, params)`` takes the ``(dtype, shape)`` of each
operand and the op's static params, checks them, and returns the output avals.
It is the single place where an op's signature is enforced: the kernels
(``runtime.kernels``), the graph verifier and the graph builders all call it,
so a mismatch is caught before any array work and with the same message.

Checks run in a fixed order, each with its own exception class:

1. arity                                   -> ``ArityError`` (a ``TypeError``)
2. promoted operands share one dtype       -> ``KernelDTypeError`` (a ``TypeError``)
3. each operand's dtype kind is accepted   -> ``OpTypeError`` (a ``TypeError``)
4. shapes and params                       -> ``ShapeError`` (a ``ValueError``)

Which operands are "promoted" mirrors ``runtime.plan`` (the plan converts them
to one dtype before the kernel runs, so disagreement here means a caller
skipped the plan). Accepted dtypes follow ``jax.lax``; the few deliberate
departures are noted at the rule.

Every rule is a named function followed by its registration in
``SHAPE_RULES``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np

from runtime import dtypes as dt
from runtime import ops
from runtime.dtypes import DType
from runtime.ops import OpDef

Shape = tuple[int, ...]
#: An abstract value: (dtype, shape).
Aval = tuple[DType, Shape]

ShapeRule = Callable[[OpDef, Sequence[Aval], Mapping[str, Any]], tuple[Aval, ...]]

#: op name -> rule computing output avals from input avals and params.
SHAPE_RULES: dict[str, ShapeRule] = {}


# -- errors ---------------------------------------------------------------------------------


class ShapeError(ValueError):
    """Operand shapes or static params are inconsistent with the op."""


class OpTypeError(TypeError):
    """An operand's dtype is not one the op's signature accepts."""


class KernelDTypeError(TypeError):
    """Operands that the plan promotes to one dtype arrived with different dtypes."""


class ArityError(TypeError):
    """Wrong number of operands for an op."""


class OpMemoryError(MemoryError):
    """An op's output does not fit in memory (raised before allocating when the shape
    rule sizes it, or when NumPy's allocation fails), with the op named."""


# -- dimension numbers and modes -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GatherDimensionNumbers:
    """Same fields and meaning as ``jax.lax.GatherDimensionNumbers`` (index vector dim last)."""

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ScatterDimensionNumbers:
    """Same fields and meaning as ``jax.lax.ScatterDimensionNumbers`` (index vector dim last)."""

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


Mode = Literal["clip", "fill_or_drop", "promise_in_bounds"]

_MODE_NAMES: Final[dict[str, Mode]] = {
    "clip": "clip",
    "fill": "fill_or_drop",
    "drop": "fill_or_drop",
    "fill_or_drop": "fill_or_drop",
    "promise_in_bounds": "promise_in_bounds",
}

#: ``jax.lax.gather`` treats ``mode=None`` as PROMISE_IN_BOUNDS (XLA's native
#: clamping gather); ``jax.lax.scatter*`` treats it as FILL_OR_DROP.
GATHER_DEFAULT_MODE: Final[Mode] = "promise_in_bounds"
SCATTER_DEFAULT_MODE: Final[Mode] = "fill_or_drop"


def parse_mode(mode: Any, default: Mode) -> Mode:
    """Normalise a gather/scatter mode.

    Accepts ``None`` (the default), ``"clip"``, ``"fill"``, ``"drop"``,
    ``"fill_or_drop"``, ``"promise_in_bounds"``, or an enum member with one of
    those names (``jax.lax.GatherScatterMode.CLIP`` works without importing JAX
    here). Anything else, including JAX's ``ONE_HOT``, raises ``ShapeError``.
    """
    if mode is None:
        return default
    key = mode if isinstance(mode, str) else getattr(mode, "name", None)
    found = _MODE_NAMES.get(key.lower()) if isinstance(key, str) else None
    if found is None:
        raise ShapeError(f"unsupported gather/scatter mode {mode!r}; use clip, fill/drop or promise_in_bounds")
    return found


def _dnum_field(obj: Any, field: str, default: tuple[int, ...] | None) -> tuple[int, ...]:
    value = getattr(obj, field, default)
    if value is None:
        raise ShapeError(f"dimension numbers {obj!r} have no field {field!r}")
    return _ints(value, field)


def gather_dimension_numbers(obj: Any) -> GatherDimensionNumbers:
    """Our ``GatherDimensionNumbers`` from ours, JAX's, or any object with those fields."""
    if isinstance(obj, GatherDimensionNumbers):
        return obj
    return GatherDimensionNumbers(
        _dnum_field(obj, "offset_dims", None),
        _dnum_field(obj, "collapsed_slice_dims", None),
        _dnum_field(obj, "start_index_map", None),
        _dnum_field(obj, "operand_batching_dims", ()),
        _dnum_field(obj, "start_indices_batching_dims", ()),
    )


def scatter_dimension_numbers(obj: Any) -> ScatterDimensionNumbers:
    """Our ``ScatterDimensionNumbers`` from ours, JAX's, or any object with those fields."""
    if isinstance(obj, ScatterDimensionNumbers):
        return obj
    return ScatterDimensionNumbers(
        _dnum_field(obj, "update_window_dims", None),
        _dnum_field(obj, "inserted_window_dims", None),
        _dnum_field(obj, "scatter_dims_to_operand_dims", None),
        _dnum_field(obj, "operand_batching_dims", ()),
        _dnum_field(obj, "scatter_indices_batching_dims", ()),
    )


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


# -- small helpers ----------------------------------------------------------------------------


def _int(v: Any, what: str) -> int:
    # bool is an int subclass but never a meaningful size or axis.
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    raise ShapeError(f"{what} must be an integer, got {v!r}")


def _ints(seq: Any, what: str) -> tuple[int, ...]:
    if type(seq) is tuple:
        for v in seq:
            if type(v) is not int:
                break  # bools and NumPy integers take the checks below
        else:
            return seq  # already an int tuple
    if isinstance(seq, (str, bytes)) or not hasattr(seq, "__iter__"):
        raise ShapeError(f"{what} must be a sequence of integers, got {seq!r}")
    return tuple(_int(v, what) for v in seq)


def format_aval(name: str, aval: Aval) -> str:
    """``x:f32[3,4]``: how operands appear in error messages."""
    dtype, shape = aval
    return f"{name}:{dtype.short}[{','.join(map(str, shape))}]"


def operand_names(op: OpDef, n: int) -> tuple[str, ...]:
    """Names of ``n`` operands of ``op``; a ``*name`` slot expands to ``name[0]``, ``name[1]`` ..."""
    names: list[str] = []
    star = next((i for i, s in enumerate(op.operands) if s.startswith("*")), None)
    if star is None:
        return tuple(op.operands[:n]) + tuple(f"operand{i}" for i in range(len(op.operands), n))
    after = op.operands[star + 1 :]
    n_star = n - star - len(after)
    names.extend(op.operands[:star])
    names.extend(f"{op.operands[star][1:]}[{i}]" for i in range(max(n_star, 0)))
    names.extend(after)
    return tuple(names[:n])


def describe(op: OpDef, avals: Sequence[Aval]) -> str:
    """All operands of a call, e.g. ``x:f32[3] y:f32[4]``."""
    return " ".join(format_aval(name, a) for name, a in zip(operand_names(op, len(avals)), avals, strict=True))


def _fail(cls: type[Exception], op: OpDef, avals: Sequence[Aval], msg: str) -> Exception:
    text = f"{op.name}: {msg}"
    if avals:
        text += f": {describe(op, avals)}"
    return cls(text)


_ALL: Final = frozenset({"bool", "int", "uint", "float", "complex"})
_NUM: Final = frozenset({"int", "uint", "float", "complex"})
_INTEGER: Final = frozenset({"int", "uint"})
_BOOL_INT: Final = frozenset({"bool", "int", "uint"})
_ORDERED: Final = frozenset({"bool", "int", "uint", "float"})
_REAL_NUM: Final = frozenset({"int", "uint", "float"})
_INEXACT: Final = frozenset({"float", "complex"})
_FLOAT: Final = frozenset({"float"})
_COMPLEX: Final = frozenset({"complex"})
_SIGNED: Final = frozenset({"int", "float", "complex"})
_BOOL: Final = frozenset({"bool"})

_KIND_ORDER: Final = ("bool", "int", "uint", "float", "complex")

#: dtypes LAPACK (and so jax.lax.linalg.eigh/cholesky on CPU) works in.
_LAPACK: Final = frozenset({dt.float32, dt.float32r, dt.float64, dt.complex64, dt.complex128})

#: complex -> its real part's dtype (abs, real, imag, eigh eigenvalues).
REAL_DTYPE: Final[dict[DType, DType]] = dict(dt.COMPLEX_PART)


def _same_dtype(op: OpDef, avals: Sequence[Aval], positions: Sequence[int]) -> DType:
    """The promoted operands' common dtype; ``KernelDTypeError`` when they disagree."""
    expected = avals[positions[0]][0]
    for i in positions[1:]:
        actual = avals[i][0]
        if actual is not expected:
            raise KernelDTypeError(f"{op.name}: dtype mismatch: expected {expected.short}, actual {actual.short}")
    return expected


def _accept(op: OpDef, avals: Sequence[Aval], i: int, kinds: frozenset[str]) -> DType:
    dtype = avals[i][0]
    if dtype.kind not in kinds:
        name = operand_names(op, len(avals))[i]
        accepted = ", ".join(k for k in _KIND_ORDER if k in kinds)
        raise _fail(OpTypeError, op, avals, f"{name} dtype {dtype.short} not accepted (accepts {accepted})")
    return dtype


def _axis(op: OpDef, avals: Sequence[Aval], value: Any, rank: int, what: str) -> int:
    axis = _int(value, what)
    if not 0 <= axis < rank:
        raise _fail(ShapeError, op, avals, f"{what} {axis} out of range for rank {rank}")
    return axis


def _axes(op: OpDef, avals: Sequence[Aval], value: Any, rank: int, what: str) -> tuple[int, ...]:
    axes = tuple(_axis(op, avals, a, rank, what) for a in _ints(value, what))
    if len(set(axes)) != len(axes):
        raise _fail(ShapeError, op, avals, f"{what} {axes} repeat an axis")
    return axes


def _shape_param(op: OpDef, avals: Sequence[Aval], value: Any, what: str) -> Shape:
    shape = _ints(value, what)
    if any(s < 0 for s in shape):
        raise _fail(ShapeError, op, avals, f"{what} {shape} has a negative size")
    return shape


def _elementwise_shape(op: OpDef, avals: Sequence[Aval], positions: Sequence[int]) -> Shape:
    """Equal shapes, except that 0-d operands broadcast (lax's scalar rule); no other broadcasting."""
    out: Shape | None = None
    for i in positions:
        shape = avals[i][1]
        if shape == ():
            continue
        if out is None:
            out = shape
        elif shape != out:
            raise _fail(ShapeError, op, avals, "shape mismatch")
    return () if out is None else out


def scalar_kind(value: Any) -> str:
    """Kind of a Python/NumPy scalar param (fill and padding values); ``ShapeError`` if not a scalar."""
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, (complex, np.complexfloating)):
        return "complex"
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return dt.from_numpy(value.dtype).kind
    if isinstance(value, np.generic):  # ml_dtypes scalars (bfloat16 ...)
        return dt.from_numpy(value.dtype).kind
    raise ShapeError(f"expected a scalar, got {value!r}")


def _check_scalar_param(
    op: OpDef, avals: Sequence[Aval], value: Any, target: DType, what: str, must_fit: bool = False
) -> None:
    try:
        kind = scalar_kind(value)
    except (ShapeError, TypeError):
        raise _fail(ShapeError, op, avals, f"{what} must be a scalar, got {value!r}") from None
    if kind == "complex" and target.kind != "complex":
        # jax.lax.full refuses a complex fill for a real dtype; taking the real
        # part silently would hide a bug.
        raise _fail(OpTypeError, op, avals, f"{what} {value!r} is complex but the dtype is {target.short}")
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        raise _fail(ShapeError, op, avals, f"{what} {value!r} does not fit in 64 bits")
    if must_fit and target.is_integer and kind in ("bool", "int"):
        # as ``int8 + 300`` is refused (and jax.lax.pad refuses 300 for int8): no silent wrap
        info = _int_range(target)
        number = int(value)
        if not info[0] <= number <= info[1]:
            raise _fail(
                ShapeError, op, avals, f"{what} {value!r} does not fit {target.name} (range {info[0]}..{info[1]})"
            )


def _int_range(d: DType) -> tuple[int, int]:
    """The smallest and largest value of an integer dtype (int4/uint4 included)."""
    if d.kind == "uint":
        return 0, 2**d.bits - 1
    return -(2 ** (d.bits - 1)), 2 ** (d.bits - 1) - 1


def _dtype_param(op: OpDef, avals: Sequence[Aval], value: Any, what: str) -> DType:
    try:
        return dt.dtype(value)
    except TypeError:
        raise _fail(OpTypeError, op, avals, f"{what} {value!r} is not a dtype") from None


# -- params: which are optional, with their defaults -----------------------------------------

#: Optional params and their defaults (the same defaults as the jax.lax functions).
#: Every other declared param is required.
PARAM_DEFAULTS: Final[dict[str, dict[str, Any]]] = {
    "scatter": {"indices_are_sorted": False, "unique_indices": False, "mode": None},
    "scatter_add": {"indices_are_sorted": False, "unique_indices": False, "mode": None},
    "gather": {"mode": None, "fill_value": None},
    "slice": {"strides": None},
    "pad": {"padding_value": 0},
    "convert": {"weak_type": False},
    "eigh": {"lower": True},
    "round": {"rounding_method": 0},  # lax.round's default: half away from zero
    "triangular_solve": {
        "left_side": False,
        "lower": False,
        "transpose_a": False,
        "conjugate_a": False,
        "unit_diagonal": False,
    },
}


def param(op: OpDef, params: Mapping[str, Any], name: str) -> Any:
    """``params[name]`` or its default (abstract_eval has already rejected missing required ones)."""
    if name in params:
        return params[name]
    return PARAM_DEFAULTS[op.name][name]


def _check_params(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> None:
    for name in params:
        if name not in op.params:
            declared = ", ".join(op.params) or "no params"
            raise _fail(ShapeError, op, avals, f"unknown param {name!r} (takes {declared})")
    defaults = PARAM_DEFAULTS.get(op.name, {})
    for name in op.params:
        if name not in params and name not in defaults:
            raise _fail(ShapeError, op, avals, f"missing param {name!r}")


def _check_arity(op: OpDef, avals: Sequence[Aval]) -> None:
    # A ``*name`` slot may sit anywhere (dynamic_slice's start indices come last),
    # so OpDef.arity, which only looks at the first slot, is not used here.
    fixed = sum(1 for s in op.operands if not s.startswith("*"))
    variadic = fixed != len(op.operands)
    n = len(avals)
    if (variadic and n < fixed) or (not variadic and n != fixed):
        expected = f"at least {fixed}" if variadic else str(fixed)
        raise ArityError(
            f"{op.name}: expected {expected} operands ({', '.join(op.operands) or 'none'}), got {n}"
            + (f": {describe(op, avals)}" if avals else "")
        )


# -- elementwise binary, compare, logical ------------------------------------------------------


def _binary(op: OpDef, avals: Sequence[Aval], kinds: frozenset[str]) -> tuple[Aval, ...]:
    dtype = _same_dtype(op, avals, (0, 1))
    _accept(op, avals, 0, kinds)
    return ((dtype, _elementwise_shape(op, avals, (0, 1))),)


def _compare(op: OpDef, avals: Sequence[Aval], kinds: frozenset[str]) -> tuple[Aval, ...]:
    _same_dtype(op, avals, (0, 1))
    _accept(op, avals, 0, kinds)
    return ((dt.bool_, _elementwise_shape(op, avals, (0, 1))),)


def add_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.add: numbers (not bool)."""
    return _binary(op, avals, _NUM)


SHAPE_RULES["add"] = add_rule


def sub_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.sub: numbers (not bool)."""
    return _binary(op, avals, _NUM)


SHAPE_RULES["sub"] = sub_rule


def mul_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.mul: numbers (not bool)."""
    return _binary(op, avals, _NUM)


SHAPE_RULES["mul"] = mul_rule


def div_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.div: numbers; integers divide truncating toward zero (the plan normally avoids that)."""
    return _binary(op, avals, _NUM)


SHAPE_RULES["div"] = div_rule


def rem_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.rem: integers and floats (no complex)."""
    return _binary(op, avals, _REAL_NUM)


SHAPE_RULES["rem"] = rem_rule


def pow_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """pow with equal dtypes: lax.pow for floats and complex, plus integers with jnp.power's algorithm.

    lax.pow rejects integer bases; ``int ** int`` is common enough (and
    jnp.power defines it) that castwise accepts it rather than forcing a float.
    """
    return _binary(op, avals, _NUM)


SHAPE_RULES["pow"] = pow_rule


def max_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.max: every dtype (complex ordered lexicographically, as lax does)."""
    return _binary(op, avals, _ALL)


SHAPE_RULES["max"] = max_rule


def min_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.min: every dtype."""
    return _binary(op, avals, _ALL)


SHAPE_RULES["min"] = min_rule


def atan2_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """atan2: real floats only.

    jax.lax.atan2 also takes complex operands (an analytic continuation with no
    NumPy counterpart); castwise keeps atan2 real.
    """
    return _binary(op, avals, _FLOAT)


SHAPE_RULES["atan2"] = atan2_rule


def floor_div_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """Python ``//`` (jnp.floor_divide): integers and floats."""
    return _binary(op, avals, _REAL_NUM)


SHAPE_RULES["floor_div"] = floor_div_rule


def eq_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.eq: every dtype, bool result."""
    return _compare(op, avals, _ALL)


SHAPE_RULES["eq"] = eq_rule


def ne_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.ne: every dtype, bool result."""
    return _compare(op, avals, _ALL)


SHAPE_RULES["ne"] = ne_rule


def lt_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.lt: ordered dtypes (complex rejected, as in lax)."""
    return _compare(op, avals, _ORDERED)


SHAPE_RULES["lt"] = lt_rule


def le_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.le: ordered dtypes."""
    return _compare(op, avals, _ORDERED)


SHAPE_RULES["le"] = le_rule


def gt_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.gt: ordered dtypes."""
    return _compare(op, avals, _ORDERED)


SHAPE_RULES["gt"] = gt_rule


def ge_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.ge: ordered dtypes."""
    return _compare(op, avals, _ORDERED)


SHAPE_RULES["ge"] = ge_rule


def and_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.bitwise_and: bool and integers."""
    return _binary(op, avals, _BOOL_INT)


SHAPE_RULES["and"] = and_rule


def or_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.bitwise_or: bool and integers."""
    return _binary(op, avals, _BOOL_INT)


SHAPE_RULES["or"] = or_rule


def xor_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.bitwise_xor: bool and integers."""
    return _binary(op, avals, _BOOL_INT)


SHAPE_RULES["xor"] = xor_rule


# -- contraction, selection, joining ------------------------------------------------------------


def dot_general_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.dot_general: output is batch dims + lhs free dims + rhs free dims, operand dtype."""
    dtype = _same_dtype(op, avals, (0, 1))
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


# -- indexing -------------------------------------------------------------------------------


def _check_dims(
    op: OpDef, avals: Sequence[Aval], dims: tuple[int, ...], rank: int, what: str, *, sorted_: bool = False
) -> None:
    for d in dims:
        if not 0 <= d < rank:
            raise _fail(ShapeError, op, avals, f"{what} {dims} out of range for rank {rank}")
    if len(set(dims)) != len(dims):
        raise _fail(ShapeError, op, avals, f"{what} {dims} repeat a dimension")
    if sorted_ and list(dims) != sorted(dims):
        raise _fail(ShapeError, op, avals, f"{what} {dims} must be sorted")


def _check_indices(op: OpDef, avals: Sequence[Aval], i: int) -> Shape:
    _accept(op, avals, i, _INTEGER)
    shape = avals[i][1]
    if not shape:
        raise _fail(ShapeError, op, avals, "indices must have rank >= 1 (the last dimension is the index vector)")
    return shape


def gather_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.gather (index vector dimension last, as in JAX)."""
    dtype, operand = avals[0]
    indices = _check_indices(op, avals, 1)
    try:
        dn = gather_dimension_numbers(params["dimension_numbers"])
        parse_mode(param(op, params, "mode"), GATHER_DEFAULT_MODE)
        sizes = _ints(params["slice_sizes"], "slice_sizes")
    except ShapeError as err:
        raise _fail(ShapeError, op, avals, str(err)) from None
    rank = len(operand)
    if len(sizes) != rank:
        raise _fail(ShapeError, op, avals, f"slice_sizes {sizes} must have one entry per operand dimension")
    for d, (s, n) in enumerate(zip(sizes, operand, strict=True)):
        if not 0 <= s <= n:
            raise _fail(ShapeError, op, avals, f"slice_sizes[{d}] = {s} outside [0, {n}]")
    batch = indices[:-1]
    _check_dims(op, avals, dn.collapsed_slice_dims, rank, "collapsed_slice_dims", sorted_=True)
    _check_dims(op, avals, dn.operand_batching_dims, rank, "operand_batching_dims", sorted_=True)
    _check_dims(op, avals, dn.start_index_map, rank, "start_index_map")
    _check_dims(op, avals, dn.start_indices_batching_dims, len(batch), "start_indices_batching_dims")
    if set(dn.collapsed_slice_dims) & set(dn.operand_batching_dims):
        raise _fail(ShapeError, op, avals, "collapsed_slice_dims and operand_batching_dims overlap")
    if set(dn.start_index_map) & set(dn.operand_batching_dims):
        raise _fail(ShapeError, op, avals, "start_index_map and operand_batching_dims overlap")
    if len(dn.operand_batching_dims) != len(dn.start_indices_batching_dims):
        raise _fail(ShapeError, op, avals, "operand_batching_dims and start_indices_batching_dims differ in length")
    if indices[-1] != len(dn.start_index_map):
        raise _fail(
            ShapeError,
            op,
            avals,
            f"index vector size {indices[-1]} != len(start_index_map) {len(dn.start_index_map)}",
        )
    for d in dn.collapsed_slice_dims + dn.operand_batching_dims:
        if sizes[d] > 1:
            raise _fail(ShapeError, op, avals, f"slice_sizes[{d}] must be 0 or 1 for a collapsed/batching dim")
    for od, bd in zip(dn.operand_batching_dims, dn.start_indices_batching_dims, strict=True):
        if operand[od] != batch[bd]:
            raise _fail(ShapeError, op, avals, f"operand batching dim {od} and indices batching dim {bd} differ")
    kept = tuple(
        sizes[d] for d in range(rank) if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims
    )
    out_rank = len(batch) + len(dn.offset_dims)
    _check_dims(op, avals, dn.offset_dims, out_rank, "offset_dims", sorted_=True)
    if len(dn.offset_dims) != len(kept):
        raise _fail(ShapeError, op, avals, f"offset_dims {dn.offset_dims} must have {len(kept)} entries")
    fill = param(op, params, "fill_value")
    if fill is not None:
        _check_scalar_param(op, avals, fill, dtype, "fill_value")
    out: list[int] = []
    batch_iter, kept_iter = iter(batch), iter(kept)
    for i in range(out_rank):
        out.append(next(kept_iter) if i in dn.offset_dims else next(batch_iter))
    return ((dtype, tuple(out)),)


SHAPE_RULES["gather"] = gather_rule


def scatter_window(operand: Shape, updates: Shape, dn: ScatterDimensionNumbers) -> tuple[int, ...]:
    """Update window size along each operand dimension (1 for inserted and batching dims)."""
    window: list[int] = []
    pos = 0
    for d in range(len(operand)):
        if d in dn.inserted_window_dims or d in dn.operand_batching_dims:
            window.append(1)
        else:
            window.append(updates[dn.update_window_dims[pos]])
            pos += 1
    return tuple(window)


def _scatter(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any], kinds: frozenset[str]) -> tuple[Aval, ...]:
    dtype = _same_dtype(op, avals, (0, 2))
    _accept(op, avals, 0, kinds)
    operand, updates = avals[0][1], avals[2][1]
    indices = _check_indices(op, avals, 1)
    try:
        dn = scatter_dimension_numbers(params["dimension_numbers"])
        parse_mode(param(op, params, "mode"), SCATTER_DEFAULT_MODE)
    except ShapeError as err:
        raise _fail(ShapeError, op, avals, str(err)) from None
    rank = len(operand)
    batch = indices[:-1]
    _check_dims(op, avals, dn.update_window_dims, len(updates), "update_window_dims", sorted_=True)
    _check_dims(op, avals, dn.inserted_window_dims, rank, "inserted_window_dims", sorted_=True)
    _check_dims(op, avals, dn.operand_batching_dims, rank, "operand_batching_dims", sorted_=True)
    _check_dims(op, avals, dn.scatter_dims_to_operand_dims, rank, "scatter_dims_to_operand_dims")
    _check_dims(op, avals, dn.scatter_indices_batching_dims, len(batch), "scatter_indices_batching_dims")
    if set(dn.inserted_window_dims) & set(dn.operand_batching_dims):
        raise _fail(ShapeError, op, avals, "inserted_window_dims and operand_batching_dims overlap")
    if set(dn.scatter_dims_to_operand_dims) & set(dn.operand_batching_dims):
        raise _fail(ShapeError, op, avals, "scatter_dims_to_operand_dims and operand_batching_dims overlap")
    if len(dn.operand_batching_dims) != len(dn.scatter_indices_batching_dims):
        raise _fail(ShapeError, op, avals, "operand_batching_dims and scatter_indices_batching_dims differ in length")
    if indices[-1] != len(dn.scatter_dims_to_operand_dims):
        raise _fail(
            ShapeError,
            op,
            avals,
            f"index vector size {indices[-1]} != len(scatter_dims_to_operand_dims) "
            f"{len(dn.scatter_dims_to_operand_dims)}",
        )
    n_window = rank - len(dn.inserted_window_dims) - len(dn.operand_batching_dims)
    if len(dn.update_window_dims) != n_window:
        raise _fail(ShapeError, op, avals, f"update_window_dims {dn.update_window_dims} must have {n_window} entries")
    if len(updates) != len(batch) + n_window:
        raise _fail(ShapeError, op, avals, f"updates must have rank {len(batch) + n_window}")
    scatter_dims = tuple(updates[i] for i in range(len(updates)) if i not in dn.update_window_dims)
    if scatter_dims != batch:
        raise _fail(ShapeError, op, avals, f"updates scatter dims {scatter_dims} != indices batch dims {batch}")
    window = scatter_window(operand, updates, dn)
    for d, (w, n) in enumerate(zip(window, operand, strict=True)):
        if w > n:
            raise _fail(ShapeError, op, avals, f"update window size {w} exceeds operand dim {d} (size {n})")
    for od, bd in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims, strict=True):
        if operand[od] != batch[bd]:
            raise _fail(ShapeError, op, avals, f"operand batching dim {od} and indices batching dim {bd} differ")
    return ((dtype, operand),)


def scatter_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.scatter (set): every dtype; result shaped like operand."""
    return _scatter(op, avals, params, _ALL)


SHAPE_RULES["scatter"] = scatter_rule


def scatter_add_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.scatter_add: numbers (add rejects bool)."""
    return _scatter(op, avals, params, _NUM)


SHAPE_RULES["scatter_add"] = scatter_add_rule


def _start_indices(op: OpDef, avals: Sequence[Aval], first: int, rank: int) -> None:
    if len(avals) - first != rank:
        raise ArityError(
            f"{op.name}: expected {rank} start indices (one per operand dimension), "
            f"got {len(avals) - first}: {describe(op, avals)}"
        )
    for i in range(first, len(avals)):
        _accept(op, avals, i, _INTEGER)
        if avals[i][1] != ():
            raise _fail(ShapeError, op, avals, "start indices must be 0-d")


def dynamic_slice_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.dynamic_slice(operand, *start_indices, slice_sizes): output shape is slice_sizes."""
    dtype, shape = avals[0]
    _start_indices(op, avals, 1, len(shape))
    sizes = _shape_param(op, avals, params["slice_sizes"], "slice_sizes")
    if len(sizes) != len(shape) or any(s > n for s, n in zip(sizes, shape, strict=True)):
        raise _fail(ShapeError, op, avals, f"slice_sizes {sizes} do not fit the operand")
    return ((dtype, sizes),)


SHAPE_RULES["dynamic_slice"] = dynamic_slice_rule


def dynamic_update_slice_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.dynamic_update_slice(operand, update, *start_indices): result shaped like operand."""
    dtype = _same_dtype(op, avals, (0, 1))
    shape, update = avals[0][1], avals[1][1]
    if len(update) != len(shape) or any(u > n for u, n in zip(update, shape, strict=True)):
        raise _fail(ShapeError, op, avals, "update does not fit in operand")
    _start_indices(op, avals, 2, len(shape))
    return ((dtype, shape),)


SHAPE_RULES["dynamic_update_slice"] = dynamic_update_slice_rule


# -- elementwise unary -------------------------------------------------------------------------


def _unary(op: OpDef, avals: Sequence[Aval], kinds: frozenset[str]) -> tuple[Aval, ...]:
    dtype = _accept(op, avals, 0, kinds)
    return ((dtype, avals[0][1]),)


def neg_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.neg: numbers (unsigned wraps)."""
    return _unary(op, avals, _NUM)


SHAPE_RULES["neg"] = neg_rule


def abs_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.abs: signed ints, floats, complex; complex gives its real dtype."""
    dtype = _accept(op, avals, 0, _SIGNED)
    return ((REAL_DTYPE.get(dtype, dtype), avals[0][1]),)


SHAPE_RULES["abs"] = abs_rule


def sign_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.sign: numbers."""
    return _unary(op, avals, _NUM)


SHAPE_RULES["sign"] = sign_rule


def exp_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.exp: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["exp"] = exp_rule


def log_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.log: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["log"] = log_rule


def expm1_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.expm1: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["expm1"] = expm1_rule


def log1p_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.log1p: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["log1p"] = log1p_rule


def sin_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.sin: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["sin"] = sin_rule


def cos_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.cos: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["cos"] = cos_rule


def tanh_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.tanh: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["tanh"] = tanh_rule


def logistic_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.logistic: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["logistic"] = logistic_rule


def sqrt_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.sqrt: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["sqrt"] = sqrt_rule


def rsqrt_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.rsqrt: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["rsqrt"] = rsqrt_rule


def conj_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """conj: floats and complex, same dtype out.

    jax.lax.conj turns a real float32/float64 into complex; castwise keeps the
    dtype (like jnp.conj), so conj of a real tensor stays real and its value
    is unchanged.
    """
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["conj"] = conj_rule


def real_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.real: complex only, real dtype out."""
    dtype = _accept(op, avals, 0, _COMPLEX)
    return ((REAL_DTYPE[dtype], avals[0][1]),)


SHAPE_RULES["real"] = real_rule


def imag_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.imag: complex only, real dtype out."""
    dtype = _accept(op, avals, 0, _COMPLEX)
    return ((REAL_DTYPE[dtype], avals[0][1]),)


SHAPE_RULES["imag"] = imag_rule


def square_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.square: numbers."""
    return _unary(op, avals, _NUM)


SHAPE_RULES["square"] = square_rule


def reciprocal_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reciprocal: floats and complex (lax rejects integers)."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["reciprocal"] = reciprocal_rule


# -- rounding, tests, exponentials, trigonometric and hyperbolic ---------------------------------


def _float_unary_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.floor / ceil / cbrt: real floats only."""
    return _unary(op, avals, _FLOAT)


def _inexact_unary_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.exp2 / sinh / cosh / tan / asin / acos / atan / asinh / acosh / atanh: floats and complex."""
    return _unary(op, avals, _INEXACT)


def _integer_unary_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.population_count / clz: signed and unsigned integers."""
    return _unary(op, avals, _INTEGER)


for _name in ("floor", "ceil", "cbrt"):
    SHAPE_RULES[_name] = _float_unary_rule
for _name in ("exp2", "sinh", "cosh", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh"):
    SHAPE_RULES[_name] = _inexact_unary_rule
for _name in ("population_count", "clz"):
    SHAPE_RULES[_name] = _integer_unary_rule

#: lax.RoundingMethod's values: 0 rounds half away from zero, 1 half to even.
ROUNDING_METHODS: Final = (0, 1)


def round_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.round: real floats; ``rounding_method`` 0 (half away from zero) or 1 (half to even)."""
    method = param(op, params, "rounding_method")
    if isinstance(method, bool) or not isinstance(method, (int, np.integer)) or int(method) not in ROUNDING_METHODS:
        raise _fail(ShapeError, op, avals, f"rounding_method must be 0 (away from zero) or 1 (to even), got {method!r}")
    return _unary(op, avals, _FLOAT)


SHAPE_RULES["round"] = round_rule


def is_finite_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.is_finite: real floats, bool result."""
    _accept(op, avals, 0, _FLOAT)
    return ((dt.bool_, avals[0][1]),)


SHAPE_RULES["is_finite"] = is_finite_rule


def not_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.bitwise_not: bool and integers."""
    return _unary(op, avals, _BOOL_INT)


SHAPE_RULES["not"] = not_rule


def _shift_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.shift_left / shift_right_arithmetic / shift_right_logical: integers of one dtype."""
    return _binary(op, avals, _INTEGER)


for _name in ("shift_left", "shift_right_arithmetic", "shift_right_logical"):
    SHAPE_RULES[_name] = _shift_rule


def nextafter_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.nextafter: real floats of one dtype."""
    return _binary(op, avals, _FLOAT)


SHAPE_RULES["nextafter"] = nextafter_rule

#: lax.complex's part dtypes and the complex dtype each makes.
COMPLEX_OF: Final[dict[DType, DType]] = {dt.float32: dt.complex64, dt.float64: dt.complex128}


def complex_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.complex(re, im): float32 -> complex64, float64 -> complex128 (as lax, no narrow parts)."""
    dtype = _same_dtype(op, avals, (0, 1))
    if dtype not in COMPLEX_OF:
        raise _fail(OpTypeError, op, avals, f"x dtype {dtype.short} not accepted (accepts float32, float64)")
    return ((COMPLEX_OF[dtype], _elementwise_shape(op, avals, (0, 1))),)


SHAPE_RULES["complex"] = complex_rule


def convert_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.convert_element_type: any dtype to any dtype, same shape."""
    target = _dtype_param(op, avals, params["new_dtype"], "new_dtype")
    return ((target, avals[0][1]),)


SHAPE_RULES["convert"] = convert_rule


# -- reductions -------------------------------------------------------------------------------


def _reduce(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any], kinds: frozenset[str]) -> tuple[Aval, ...]:
    dtype = _accept(op, avals, 0, kinds)
    shape = avals[0][1]
    axes = _axes(op, avals, params["axes"], len(shape), "axis")
    return ((dtype, tuple(s for d, s in enumerate(shape) if d not in axes)),)


def reduce_sum_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_sum: numbers; result keeps the input dtype."""
    return _reduce(op, avals, params, _NUM)


SHAPE_RULES["reduce_sum"] = reduce_sum_rule


def reduce_prod_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_prod: numbers."""
    return _reduce(op, avals, params, _NUM)


SHAPE_RULES["reduce_prod"] = reduce_prod_rule


def reduce_max_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_max: every dtype."""
    return _reduce(op, avals, params, _ALL)


SHAPE_RULES["reduce_max"] = reduce_max_rule


def reduce_min_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_min: every dtype."""
    return _reduce(op, avals, params, _ALL)


SHAPE_RULES["reduce_min"] = reduce_min_rule


# -- structural -------------------------------------------------------------------------------


def reshape_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reshape: same number of elements; no -1 inference."""
    dtype, shape = avals[0]
    new = _shape_param(op, avals, params["new_sizes"], "new_sizes")
    if math.prod(new) != math.prod(shape):
        raise _fail(ShapeError, op, avals, f"cannot reshape to {list(new)}")
    return ((dtype, new),)


SHAPE_RULES["reshape"] = reshape_rule


def transpose_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.transpose: permutation of all dimensions."""
    dtype, shape = avals[0]
    perm = _ints(params["permutation"], "permutation")
    if sorted(perm) != list(range(len(shape))):
        raise _fail(ShapeError, op, avals, f"permutation {perm} is not a permutation of range({len(shape)})")
    return ((dtype, tuple(shape[p] for p in perm)),)


SHAPE_RULES["transpose"] = transpose_rule


def broadcast_in_dim_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.broadcast_in_dim: operand dim i goes to output dim broadcast_dimensions[i] (size 1 or equal)."""
    dtype, shape = avals[0]
    out = _shape_param(op, avals, params["shape"], "shape")
    bdims = _ints(params["broadcast_dimensions"], "broadcast_dimensions")
    if len(bdims) != len(shape):
        raise _fail(ShapeError, op, avals, f"broadcast_dimensions {bdims} must have one entry per operand dim")
    if any(not 0 <= d < len(out) for d in bdims) or any(a >= b for a, b in itertools.pairwise(bdims)):
        raise _fail(ShapeError, op, avals, f"broadcast_dimensions {bdims} must be strictly increasing and < {len(out)}")
    for i, d in enumerate(bdims):
        if shape[i] not in (1, out[d]):
            raise _fail(ShapeError, op, avals, f"operand dim {i} cannot broadcast to size {out[d]}")
    return ((dtype, out),)


SHAPE_RULES["broadcast_in_dim"] = broadcast_in_dim_rule


def slice_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.slice: 0 <= start <= limit <= size, strides >= 1."""
    dtype, shape = avals[0]
    start = _ints(params["start_indices"], "start_indices")
    limit = _ints(params["limit_indices"], "limit_indices")
    raw_strides = param(op, params, "strides")
    strides = (1,) * len(shape) if raw_strides is None else _ints(raw_strides, "strides")
    if not len(start) == len(limit) == len(strides) == len(shape):
        raise _fail(ShapeError, op, avals, "start_indices, limit_indices and strides need one entry per dim")
    out: list[int] = []
    for d, (s, e, st, n) in enumerate(zip(start, limit, strides, shape, strict=True)):
        if not 0 <= s <= e <= n or st < 1:
            raise _fail(ShapeError, op, avals, f"bad slice {s}:{e}:{st} for dimension {d} of size {n}")
        out.append(-(-(e - s) // st))
    return ((dtype, tuple(out)),)


SHAPE_RULES["slice"] = slice_rule


def pad_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.pad: (lo, hi, interior) per dim, lo/hi may be negative, interior >= 0."""
    dtype, shape = avals[0]
    config = params["padding_config"]
    try:
        triples = [_ints(c, "padding_config") for c in config]
    except TypeError:
        raise _fail(ShapeError, op, avals, f"bad padding_config {config!r}") from None
    if len(triples) != len(shape) or any(len(t) != 3 for t in triples):
        raise _fail(ShapeError, op, avals, "padding_config needs one (lo, hi, interior) per dim")
    _check_scalar_param(op, avals, param(op, params, "padding_value"), dtype, "padding_value", must_fit=True)
    out: list[int] = []
    for d, ((lo, hi, interior), n) in enumerate(zip(triples, shape, strict=True)):
        size = lo + hi + n + max(n - 1, 0) * interior
        if interior < 0 or size < 0:
            raise _fail(ShapeError, op, avals, f"padding {(lo, hi, interior)} invalid for dimension {d}")
        out.append(size)
    return ((dtype, tuple(out)),)


SHAPE_RULES["pad"] = pad_rule


def reverse_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.rev: distinct dimensions in range."""
    dtype, shape = avals[0]
    _axes(op, avals, params["dimensions"], len(shape), "dimension")
    return ((dtype, shape),)


SHAPE_RULES["reverse"] = reverse_rule


def iota_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.broadcasted_iota(dtype, shape, dimension): numbers (lax rejects bool)."""
    dtype = _dtype_param(op, avals, params["dtype"], "dtype")
    shape = _shape_param(op, avals, params["shape"], "shape")
    if dtype.kind == "bool":
        raise _fail(OpTypeError, op, avals, "dtype bool not accepted (accepts int, uint, float, complex)")
    _axis(op, avals, params["dimension"], len(shape), "dimension")
    return ((dtype, shape),)


SHAPE_RULES["iota"] = iota_rule


def full_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.full(shape, fill_value, dtype): the fill converts like convert_element_type."""
    dtype = _dtype_param(op, avals, params["dtype"], "dtype")
    shape = _shape_param(op, avals, params["shape"], "shape")
    _check_scalar_param(op, avals, params["fill_value"], dtype, "fill_value")
    return ((dtype, shape),)


SHAPE_RULES["full"] = full_rule


# -- linear algebra -----------------------------------------------------------------------------


def _square(op: OpDef, avals: Sequence[Aval], i: int) -> Shape:
    shape = avals[i][1]
    if len(shape) < 2 or shape[-1] != shape[-2]:
        name = operand_names(op, len(avals))[i]
        raise _fail(ShapeError, op, avals, f"{name} must be a (batch of) square matrices")
    return shape


def _lapack(op: OpDef, avals: Sequence[Aval]) -> DType:
    dtype = avals[0][0]
    if dtype not in _LAPACK:
        raise _fail(OpTypeError, op, avals, f"x dtype {dtype.short} not accepted (accepts f32, f64, c64, c128)")
    return dtype


def eigh_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.linalg.eigh: (eigenvectors like x, eigenvalues of the real dtype, batch + [n])."""
    dtype = _lapack(op, avals)
    shape = _square(op, avals, 0)
    return ((dtype, shape), (REAL_DTYPE.get(dtype, dtype), shape[:-1]))


SHAPE_RULES["eigh"] = eigh_rule


def cholesky_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.linalg.cholesky: lower factor shaped like x."""
    dtype = _lapack(op, avals)
    return ((dtype, _square(op, avals, 0)),)


SHAPE_RULES["cholesky"] = cholesky_rule


def triangular_solve_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.linalg.triangular_solve: a is [..., m, m]; b is [..., m, n] (left) or [..., n, m] (right)."""
    # The plan leaves linalg operands alone, yet a and b must agree, as in lax.
    dtype = _same_dtype(op, avals, (0, 1))
    _accept(op, avals, 0, _INEXACT)
    a = _square(op, avals, 0)
    b = avals[1][1]
    left = bool(param(op, params, "left_side"))
    if len(b) != len(a) or b[:-2] != a[:-2] or (b[-2] if left else b[-1]) != a[-1]:
        side = "left" if left else "right"
        raise _fail(ShapeError, op, avals, f"b does not match a for a {side}-side solve")
    return ((dtype, b),)


SHAPE_RULES["triangular_solve"] = triangular_solve_rule


# -- entry point ------------------------------------------------------------------------------

_CACHE: dict[Any, tuple[Aval, ...]] = {}
_CACHE_LIMIT: Final = 8192


def freeze_params(params: Mapping[str, Any]) -> Any:
    """A hashable key for ``params`` (``None`` when empty); raises ``TypeError`` if unhashable."""
    if not params:
        return None
    key = tuple(sorted((k, _freeze(v)) for k, v in params.items()))
    hash(key)
    return key


def _freeze(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        # Keep the type so a JAX NamedTuple and a plain tuple never share an entry.
        return (type(v), tuple(_freeze(x) for x in v))
    if isinstance(v, dict):
        return (dict, tuple(sorted((k, _freeze(x)) for k, x in v.items())))
    if isinstance(v, (bool, int, float, complex)):
        # 1 == 1.0 == True == (1+0j) but they validate differently (a complex fill).
        return (type(v), v)
    return v


def resolve(op: OpDef | str) -> OpDef:
    """The ``OpDef`` for ``op`` (a name or an ``OpDef``)."""
    return op if isinstance(op, OpDef) else ops.get(op)


def abstract_eval_cached(opdef: OpDef, avals: tuple[Aval, ...], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """``abstract_eval`` for already-normalised avals (tuples of DType and int tuples); memoised."""
    try:
        key: Any = (opdef.name, avals, freeze_params(params))
    except TypeError:
        key = None  # an unhashable param (an ndarray fill value): validate every time
    if key is not None:
        hit = _CACHE.get(key)
        if hit is not None:
            return hit
    out = _abstract_eval(opdef, avals, params)
    if key is not None:
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()  # crude bound: shapes in a long run can be unbounded
        _CACHE[key] = out
    return out


def _abstract_eval(opdef: OpDef, avals: tuple[Aval, ...], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    _check_arity(opdef, avals)
    _check_params(opdef, avals, params)
    rule = SHAPE_RULES.get(opdef.name)
    if rule is None:
        raise NotImplementedError(f"{opdef.name}: no shape rule")
    return rule(opdef, avals, params)


def abstract_eval(op: OpDef | str, in_avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """Check a call of ``op`` and return its output avals ``((dtype, shape), ...)``.

    ``in_avals`` holds one ``(dtype, shape)`` per operand; ``dtype`` may be
    anything ``runtime.dtype()`` accepts. Raises ``ArityError``,
    ``KernelDTypeError``, ``OpTypeError`` or ``ShapeError`` (in that order of
    checking) with a message naming the op and every operand's dtype and
    shape. Results are memoised per (op, avals, params).
    """
    opdef = resolve(op)
    avals = tuple((d if isinstance(d, DType) else dt.dtype(d), tuple(int(n) for n in s)) for d, s in in_avals)
    return abstract_eval_cached(opdef, avals, params)


# -- user calls --------------------------------------------------------------------------------


def custom_call_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """A user function recorded as one call (``custom_jvp_call`` / ``custom_vjp_call``): the
    operands must have the avals it was recorded with, and the outputs are the recorded ones."""
    expected = tuple((d, tuple(s)) for d, s in params["in_avals"])
    got = tuple((d, tuple(s)) for d, s in avals)
    if got != expected:
        want = " ".join(f"{d.short}{list(s)}" for d, s in expected)
        raise _fail(ShapeError, op, avals, f"{params['name']} was recorded for operands {want}")
    return tuple((d, tuple(s)) for d, s in params["out_avals"])


SHAPE_RULES["custom_jvp_call"] = custom_call_rule
SHAPE_RULES["custom_vjp_call"] = custom_call_rule
PARAM_DEFAULTS["custom_vjp_call"] = {"residuals": None}


def _check_complete() -> None:
    # Import-time guard: a newly declared op without a rule fails loudly here,
    # not at its first use.
    missing = [name for name in ops.OPS if name not in SHAPE_RULES]
    if missing:
        raise ImportError(f"runtime.shapes: no shape rule for {', '.join(missing)}")


_check_complete()
