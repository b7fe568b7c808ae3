"""The shape-rule table and what several op families' rules share: the error classes, dimension
numbers, param defaults and the checks of operands, axes and params.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import numpy as np

from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.errors import (  # noqa: F401  (the shape rules' errors, re-exported)
    ArityError,
    CastwiseError,
    KernelDTypeError,
    OpMemoryError,
    OpTypeError,
    OpValueError,
    PrecisionError,
    ShapeError,
)
from runtime.core.ops import OpDef

Shape = tuple[int, ...]
#: An abstract value: (dtype, shape).
Aval = tuple[DType, Shape]

ShapeRule = Callable[[OpDef, Sequence[Aval], Mapping[str, Any]], tuple[Aval, ...]]

#: op name -> rule computing output avals from input avals and params.
SHAPE_RULES: dict[str, ShapeRule] = {}


# The error classes are defined in runtime.core.errors, the lowest module, so the dtype catalog
# and the policies raise them too; they are imported above and re-exported from here.


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
_INEXACT: Final = frozenset({"float", "complex"})
_FLOAT: Final = frozenset({"float"})

_KIND_ORDER: Final = ("bool", "int", "uint", "float", "complex")


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
    "scatter_mul": {"indices_are_sorted": False, "unique_indices": False, "mode": None},
    "scatter_min": {"indices_are_sorted": False, "unique_indices": False, "mode": None},
    "scatter_max": {"indices_are_sorted": False, "unique_indices": False, "mode": None},
    "sort": {"is_stable": True, "num_keys": 1},
    "gather": {"mode": None, "fill_value": None},
    "slice": {"strides": None},
    "pad": {"padding_value": 0},
    "convert": {"weak_type": False},
    "dot_general": {"precision": None},  # None: castwise's full precision (lowered at HIGHEST)
    "conv_general_dilated": {"precision": None},
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
