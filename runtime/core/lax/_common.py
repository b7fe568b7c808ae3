"""The op functions of the op layer: helpers shared by the family modules."""

from __future__ import annotations

import builtins
import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from runtime.core import dtypes as dt
from runtime.core.errors import relabel
from runtime.core.executor import apply
from runtime.core.ops import OpDef
from runtime.core.promotion import PromotionError, get_policy
from runtime.core.shapes import ArityError, KernelDTypeError, OpMemoryError, OpTypeError, OpValueError, ShapeError
from runtime.core.tensor import Tensor

Operand = Any  # Tensor | np.ndarray | Python scalar
_Fn = TypeVar("_Fn", bound=Callable[..., Any])


def _one(op: OpDef, *operands: Operand, **params: Any) -> Tensor:
    return apply(op, operands, params)  # type: ignore[return-value]


def _ints(values: Sequence[int] | int, what: str) -> tuple[int, ...]:
    """``values`` (an int or a sequence of ints, NumPy's included) as an int tuple.

    Anything else (a float, a bool, a non-sequence) is passed on as ``_Invalid``: the
    op's shape rule, the one validator, refuses it with the op, operands and policy named.
    """
    if type(values) is tuple:
        for v in values:
            if type(v) is not int:
                break
        else:
            return values  # already normalised (what derivative rules pass)
    if _is_index(values):
        return (operator.index(values),)  # type: ignore[arg-type]
    try:
        items = tuple(values)  # type: ignore[arg-type]
    except TypeError:
        return _Invalid(values)  # type: ignore[return-value]
    if not builtins.all(_is_index(v) for v in items):
        return _Invalid(values)  # type: ignore[return-value]
    return tuple(operator.index(v) for v in items)


class _Invalid:
    """A param value that failed normalisation, on its way to the shape rule that reports it.

    Unhashable on purpose: ``(1.0, 0)`` hashes and compares like ``(1, 0)``, so the
    executor's signature cache would otherwise serve it a plan validated for ints.
    """

    __slots__ = ("value",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


def _wrap_axes(axes: Any, x: Operand) -> Any:
    """Axes with the negative ones in range counted from the end (``-1`` is the last), as
    NumPy and jax.numpy take them; the recorded param is always non-negative. Anything out
    of range is left for the op's shape rule to refuse."""
    if type(axes) is not tuple:
        return axes  # an _Invalid value, for the shape rule
    for a in axes:
        if a < 0:
            break
    else:
        return axes
    ndim = x.ndim if isinstance(x, Tensor) else np.ndim(x)
    return tuple(a + ndim if -ndim <= a < 0 else a for a in axes)


def _index(value: Any) -> Any:
    """An int param (a dimension) as an int; anything else unchanged, for the shape rule to refuse."""
    return operator.index(value) if _is_index(value) else value


def _is_index(value: Any) -> bool:
    """An integer that is not a bool (``True`` is never a meaningful size or axis)."""
    if isinstance(value, (builtins.bool, np.bool_)):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def _dtype_param(value: Any) -> Any:
    """A dtype param as a DType; anything else unchanged, for the shape rule to refuse."""
    try:
        return dt.dtype(value)
    except TypeError:
        return value


# -- errors under the name the user called ---------------------------------------------------------

#: the castwise errors an inner op raises (each a TypeError, ValueError or MemoryError)
_CASTWISE = (ShapeError, OpTypeError, OpValueError, KernelDTypeError, ArityError, PromotionError, OpMemoryError)


def _named(name: str) -> Callable[[_Fn], _Fn]:
    """An op function composed of other ops (``matmul`` of ``dot_general``, ``ones`` of ``full``,
    ``logical_not`` of ``not``) raising their errors under its own name, the one the user called;
    an operand ``asarray`` cannot convert (a string, an object) is its ``OpTypeError``."""

    def wrap(fn: _Fn) -> _Fn:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except (TypeError, ValueError, MemoryError) as err:
                message = str(err)
                if message.startswith("asarray: "):
                    why = message.removeprefix("asarray: ").rsplit(" [policy", 1)[0]
                    raise OpTypeError(f"{name}: an operand is no array: {why} [policy {get_policy()!r}]") from None
                if not isinstance(err, _CASTWISE):
                    raise
                new = relabel(name, message)
                if new == message:
                    raise
                raise type(err)(new) from None

        return inner  # type: ignore[return-value]

    return wrap
