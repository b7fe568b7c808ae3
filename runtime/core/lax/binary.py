"""The op functions of elementwise binary ops (arithmetic, comparisons, logical and bitwise).

Each function plans, checks and runs one op (or a short
composition of ops) through the executor; the conventions are in ``runtime.core.lax``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from runtime.core import ops
from runtime.core.executor import apply_binary, asarray, op_error
from runtime.core.lax._common import Operand, _named, _one
from runtime.core.lax.contraction import select
from runtime.core.shapes import OpValueError
from runtime.core.tensor import Tensor

__all__ = [
    "add",
    "atan2",
    "complex",
    "div",
    "eq",
    "floor_div",
    "ge",
    "gt",
    "le",
    "logical_and",
    "logical_or",
    "logical_xor",
    "lt",
    "max",
    "min",
    "mod",
    "mul",
    "ne",
    "nextafter",
    "pow",
    "rem",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
    "sub",
]


def add(x: Operand, y: Operand) -> Tensor:
    """x + y."""
    return apply_binary(ops.add, x, y)


def sub(x: Operand, y: Operand) -> Tensor:
    """x - y."""
    return apply_binary(ops.sub, x, y)


def mul(x: Operand, y: Operand) -> Tensor:
    """x * y."""
    return apply_binary(ops.mul, x, y)


def div(x: Operand, y: Operand) -> Tensor:
    """True division x / y (integer operands go to the policy's float)."""
    return apply_binary(ops.div, x, y)


def rem(x: Operand, y: Operand) -> Tensor:
    """Remainder with the sign of the dividend (C fmod, ``lax.rem``)."""
    return apply_binary(ops.rem, x, y)


def _int_kind(value: Any) -> str | None:
    """``"int"``, ``"uint"`` or ``"bool"`` for an integer or bool operand, else ``None``."""
    kind: str
    if isinstance(value, Tensor):
        kind = value.dtype.kind
    elif type(value) in (bool, np.bool_):
        return "bool"
    elif type(value) is int:
        return "int"
    elif isinstance(value, (np.ndarray, np.generic)):
        kind = {"i": "int", "u": "uint", "b": "bool"}.get(value.dtype.kind, "")
    else:
        return None
    return kind if kind in ("int", "uint", "bool") else None


def check_integer_power(x: Operand, y: Operand, name: str = "pow") -> None:
    """Refuse an integer ``x ** y`` whose exponent is negative where the libraries do, before
    anything runs or is recorded: a scalar exponent under every policy (NumPy, PyTorch and
    jax.numpy refuse ``x ** -2`` for integer ``x``), an exponent array holding a negative value
    where the policy says so (``Policy.negative_int_power``: NumPy's ``np.power`` raises;
    PyTorch's ``pow`` of two tensors gives the value truncated toward zero, as the kernel does).
    A traced exponent (``jit``, ``vmap``, ``trace``) under a policy that raises is refused
    (``ConcretizationError``): a replay cannot raise, and would give the truncated value."""
    if _int_kind(y) != "int" or _int_kind(x) is None:
        return  # only a signed exponent can be negative, and only integer results are refused
    from runtime.core.promotion import get_policy_object, result_type

    if isinstance(y, Tensor) and y.node is not None:
        from runtime.core.graph import ConcretizationError, is_traced

        if is_traced(y) and get_policy_object(None).negative_int_power == "raise" and result_type(x, y).is_integer:
            raise op_error(
                ConcretizationError, ops.pow, (x, y),
                f"{name}: a traced integer exponent cannot be checked when the program replays (the active "
                "policy refuses a negative one, as np.power raises): convert the base to a float first, or "
                "pass the exponent in as a Python int",
            )  # fmt: skip
    values = y._array if isinstance(y, Tensor) else np.asarray(y)
    if not (values < 0).any():
        return
    if not result_type(x, y).is_integer:
        return
    scalar = not isinstance(y, Tensor) and values.ndim == 0
    if scalar or get_policy_object(None).negative_int_power == "raise":
        what = f"the exponent {values.item()!r}" if values.ndim == 0 else "the exponent holds a negative value"
        raise op_error(
            OpValueError, ops.pow, (x, y),
            f"{name}: integers to negative integer powers are not allowed ({what}; NumPy, PyTorch and "
            "jax.numpy refuse a scalar one, NumPy any): convert the base to a float first",
        )  # fmt: skip


def pow(x: Operand, y: Operand) -> Tensor:  # noqa: A001
    """x ** y. Integers wrap; a negative integer exponent is refused where the policy's library
    refuses it (``check_integer_power``) and otherwise gives the value truncated toward zero
    (``1``, ``+-1`` for a base of ``-1``, else ``0``: PyTorch's rule)."""
    check_integer_power(x, y)
    return apply_binary(ops.pow, x, y)


def max(x: Operand, y: Operand) -> Tensor:  # noqa: A001
    """Elementwise maximum (NaN-propagating)."""
    return apply_binary(ops.max, x, y)


def min(x: Operand, y: Operand) -> Tensor:  # noqa: A001
    """Elementwise minimum (NaN-propagating)."""
    return apply_binary(ops.min, x, y)


def atan2(x: Operand, y: Operand) -> Tensor:
    """atan2(x, y), the angle of the point (y, x)."""
    return _one(ops.atan2, x, y)


def floor_div(x: Operand, y: Operand) -> Tensor:
    """Python's x // y."""
    return apply_binary(ops.floor_div, x, y)


def eq(x: Operand, y: Operand) -> Tensor:
    """x == y (bool)."""
    return apply_binary(ops.eq, x, y)


def ne(x: Operand, y: Operand) -> Tensor:
    """x != y (bool)."""
    return apply_binary(ops.ne, x, y)


def lt(x: Operand, y: Operand) -> Tensor:
    """x < y (bool)."""
    return apply_binary(ops.lt, x, y)


def le(x: Operand, y: Operand) -> Tensor:
    """x <= y (bool)."""
    return apply_binary(ops.le, x, y)


def gt(x: Operand, y: Operand) -> Tensor:
    """x > y (bool)."""
    return apply_binary(ops.gt, x, y)


def ge(x: Operand, y: Operand) -> Tensor:
    """x >= y (bool)."""
    return apply_binary(ops.ge, x, y)


@_named("logical_and")
def logical_and(x: Operand, y: Operand) -> Tensor:
    """x & y on bool (logical) or integers (bitwise)."""
    return apply_binary(ops.logical_and, x, y)


@_named("logical_or")
def logical_or(x: Operand, y: Operand) -> Tensor:
    """x | y on bool (logical) or integers (bitwise)."""
    return apply_binary(ops.logical_or, x, y)


@_named("logical_xor")
def logical_xor(x: Operand, y: Operand) -> Tensor:
    """x ^ y on bool (logical) or integers (bitwise)."""
    return apply_binary(ops.logical_xor, x, y)


@_named("mod")
def mod(x: Operand, y: Operand) -> Tensor:
    """Python's x % y: the remainder takes the sign of the divisor.

    Composed from ``rem``, comparisons and ``select``, so it records and
    differentiates like its parts.
    """
    r = rem(x, y)
    y_t = asarray(y) if not isinstance(y, Tensor) else y
    if r.dtype.kind in ("int", "uint") and not (type(y) is int and y != 0):
        # an integer x % 0 is 0, as jnp.remainder and np.remainder give (XLA's rem gives x),
        # recorded as a select; a Python divisor stays a Python scalar, so that it promotes as
        # one (int8 % 2 is int8)
        r = select(eq(y_t, 0), 0, r)
    if r.dtype.kind in ("uint", "bool"):
        return r
    wrong_sign = logical_and(ne(r, 0), ne(lt(r, 0), lt(y_t, 0)))
    return select(wrong_sign, add(r, y), r)


def nextafter(x: Operand, y: Operand) -> Tensor:
    """The next value of x's format after x towards y (floats; no derivative)."""
    return apply_binary(ops.nextafter, x, y)


def complex(x: Operand, y: Operand) -> Tensor:  # noqa: A001
    """x + i y from float32 (complex64) or float64 (complex128) parts."""
    return apply_binary(ops.complex, x, y)


def shift_left(x: Operand, y: Operand) -> Tensor:
    """x << y (0 where y is outside [0, bit width))."""
    return apply_binary(ops.shift_left, x, y)


def shift_right_arithmetic(x: Operand, y: Operand) -> Tensor:
    """x >> y, filling with the sign bit (all sign bits where y is outside [0, bit width))."""
    return apply_binary(ops.shift_right_arithmetic, x, y)


def shift_right_logical(x: Operand, y: Operand) -> Tensor:
    """x >> y, filling with zeros (0 where y is outside [0, bit width))."""
    return apply_binary(ops.shift_right_logical, x, y)
