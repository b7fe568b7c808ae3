"""How the NumPy-named functions read what is not an array operand: one set of helpers, so every
function (and every new one) reads its parameters the same way under every transform.

A parameter that decides a result is one of three things (docs/autodiff.md, "Traced parameters
and indices"):

* **an operand** (``nn.leaky_relu``'s ``negative_slope``, ``nn.elu``'s ``alpha``, ``nan_to_num``'s
  replacements, ``isclose``'s tolerances, ``nn.standardize``'s ``epsilon``): ``scalar_operand`` /
  ``scalar_constant``. A Python or NumPy scalar is a constant; a 0-d Tensor is used in the
  computation (converted by a recorded ``convert`` where its dtype differs), so under
  ``rt.trace``, ``autodiff.jit`` and ``autodiff.vmap`` it stays traced: a new value (or one value
  per example) gives the eager result, never the one the trace saw.
* **concrete** (a length, a size, an axis, a mode, ``keepdims``, a fill value that is an op
  parameter): ``concrete_scalar`` / ``concrete_flag``. A Python or NumPy scalar is read as it is
  (``autodiff.jit`` keys its cache on Python scalars, so a new value retraces), an untracked 0-d
  Tensor is read eagerly, and a traced one is refused with ``ConcretizationError`` naming the
  function and the parameter, as ``jax.jit`` raises ``ConcretizationTypeError``.
* **an array operand** (``x``, ``y``, indices): ``as_operand`` converts it with an error that names
  the function, not ``asarray``.

``refuse_traced`` is the check itself, for values a function would otherwise read
(``.numpy()``) to decide something: a mask's positions, the bounds check of indices.

Errors name the function the user called, the parameter, the operands and the policy
(``error``); ``named`` restates the errors of the ops a function runs with its name.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.dtypes import DType
from runtime.core.errors import relabel
from runtime.core.executor import asarray
from runtime.core.graph import ConcretizationError, ConcretizationIndexError, is_traced
from runtime.core.promotion import PromotionError, get_policy
from runtime.core.shapes import KernelDTypeError, OpMemoryError, OpTypeError, OpValueError, ShapeError
from runtime.core.tensor import Tensor

__all__ = [
    "CASTWISE_ERRORS",
    "ConcretizationError",
    "ConcretizationIndexError",
    "as_operand",
    "concrete_flag",
    "concrete_scalar",
    "describe",
    "dtype_param",
    "error",
    "named",
    "read_scalar",
    "refuse_traced",
    "relabel",
    "scalar_constant",
    "scalar_operand",
]

_Fn = TypeVar("_Fn", bound=Callable[..., Any])

#: The castwise exceptions an underlying op (or function) raises; ``named`` puts the function's name in front.
CASTWISE_ERRORS: tuple[type[Exception], ...] = (
    ShapeError, OpTypeError, OpValueError, KernelDTypeError, PromotionError, ConcretizationError,
)  # fmt: skip

#: dtype kinds of a real-number parameter (a slope, a tolerance, a replacement value; a bool
#: counts as 0 or 1, as in NumPy)
REAL = ("bool", "int", "uint", "float")
#: dtype kinds of an integer parameter (a length, a size)
INTEGER = ("int", "uint")
#: dtype kinds of a flag
FLAG = ("bool", "int", "uint")
_PYTHON_KIND = {builtins.bool: "bool", int: "int", float: "float", complex: "complex"}
_WHAT = {REAL: "a real number", INTEGER: "an integer", FLAG: "a bool"}


def describe(*operands: Any) -> str:
    """``x:f32[3,4] y:python-float``: the operands as castwise's error messages show them."""
    parts = []
    for name, x in zip("xyzw", operands, strict=False):
        if isinstance(x, Tensor):
            parts.append(f"{name}:{x.dtype.short}[{','.join(map(str, x.shape))}]")
        else:
            parts.append(f"{name}:python-{type(x).__name__}")
    return " ".join(parts)


def error(cls: type[Exception], name: str, message: str, *operands: Any) -> Exception:
    """``cls`` with a message naming the function, its operands' dtypes and shapes, and the policy."""
    return cls(f"{name}: {message} [{name} operands {describe(*operands)}; policy {get_policy()!r}]")


def _restate_memory(name: str, err: Exception, args: Sequence[Any]) -> Exception:
    """An op's ``OpMemoryError`` (``iota: its output needs 7 TiB ...``) as the function's: the
    op is an implementation detail, the size is what the user asked for."""
    message = str(err)
    head, sep, rest = message.partition(": ")
    if sep and " " not in head:  # drop the op's name
        message = rest
    message = message.rsplit(" [", 1)[0]
    return error(type(err), name, message, *args)


def named(name: str) -> Callable[[_Fn], _Fn]:
    """Re-raise the castwise errors of the ops a function runs as the function's own
    (``nn.softmax: ...``, never ``reduce_max: ...``; ``relabel``): the op's message already names
    its operands' dtypes and shapes and the policy. An operand ``asarray`` cannot convert
    (``nn.relu('a')``) is restated as an ``OpTypeError`` of the function, and an output too large
    for memory as its ``OpMemoryError``, with its operands. Nothing is recorded by an op that
    raises."""

    def wrap(fn: _Fn) -> _Fn:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except OpMemoryError as err:
                if str(err).startswith(f"{name}:"):
                    raise
                raise _restate_memory(name, err, args) from None
            except (TypeError, ValueError, OverflowError) as err:
                message = str(err)
                if message.startswith("asarray: "):  # an operand that is no array (a string, an object)
                    why = message.removeprefix("asarray: ").rsplit(" [policy", 1)[0]
                    raise error(OpTypeError, name, f"an operand is no array: {why}", *args) from None
                if not isinstance(err, CASTWISE_ERRORS):
                    raise
                new = relabel(name, message)
                if new == message:
                    raise
                raise type(err)(new) from None

        return inner  # type: ignore[return-value]

    return wrap


def as_operand(fn: str, x: Any, param: str = "x", *others: Any) -> Tensor:
    """``x`` as a Tensor (itself when it is one); data ``asarray`` cannot convert raises an
    ``OpTypeError`` naming ``fn`` and ``param``, not ``asarray``."""
    if isinstance(x, Tensor):
        return x
    try:
        return asarray(x)
    except (TypeError, ValueError, OverflowError) as err:
        why = str(err).removeprefix("asarray: ")
        raise error(OpTypeError, fn, f"{param} must be an array or a scalar, got {x!r}: {why}", *others, x) from None


def dtype_param(fn: str, dtype: Any, operands: Sequence[Any] = ()) -> DType:
    """A ``dtype=`` argument as a castwise DType; anything else raises an ``OpTypeError`` naming
    ``fn`` (a dtype is always concrete: a Tensor is no dtype)."""
    try:
        return dt.dtype(dtype)
    except (TypeError, ValueError) as err:
        raise error(OpTypeError, fn, f"dtype {dtype!r} is not a castwise dtype ({err})", *operands) from None


def read_scalar(fn: str, param: str, value: Any, kinds: tuple[str, ...] = REAL, operands: Sequence[Any] = ()) -> Any:
    """A scalar parameter as a Python scalar (from a Python or NumPy scalar, or a 0-d NumPy
    array) or as the 0-d Tensor it is; anything else (a string, a non-scalar, a complex where a
    real number is wanted) raises naming ``fn`` and ``param``. Nothing is read from a Tensor."""
    what = _WHAT.get(kinds, "a number")
    scalar = f"a scalar ({what}, or a 0-d Tensor)"
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise error(ShapeError, fn, f"{param} must be {scalar}, got shape {list(value.shape)}", *operands)
        if value.dtype.kind not in kinds:
            raise error(OpTypeError, fn, f"{param} must be {what}, got a {value.dtype.name} Tensor", *operands)
        return value
    if isinstance(value, (np.ndarray, np.generic, list, tuple)):
        if np.ndim(value) != 0:
            raise error(ShapeError, fn, f"{param} must be {scalar}, got shape {list(np.shape(value))}", *operands)
        value = np.asarray(value).item()
    kind = _PYTHON_KIND.get(type(value))
    if kind is None or kind not in kinds:
        raise error(
            OpTypeError, fn,
            f"{param} must be {what} (a Python or NumPy scalar, or a 0-d Tensor), got {value!r} "
            f"({type(value).__name__})",
            *operands,
        )  # fmt: skip
    return value


def refuse_traced(
    fn: str, param: str, t: Tensor, why: str, hint: str, operands: Sequence[Any] = (), index: bool = False
) -> None:
    """``ConcretizationError`` (``ConcretizationIndexError`` with ``index``) when ``t`` is traced:
    ``why`` says what its value would decide, ``hint`` what to do instead."""
    if is_traced(t):
        cls = ConcretizationIndexError if index else ConcretizationError
        raise error(
            cls, fn,
            f"{param} is traced (its value is known only when the traced program runs: rt.trace, "
            f"autodiff.jit, autodiff.vmap), and {why}; {hint}",
            *operands,
        )  # fmt: skip


_CONCRETE_HINT = (
    "pass it as a Python scalar (autodiff.jit makes Python scalars part of its cache key, so each value "
    "traces once) or compute it outside the traced function"
)


def concrete_scalar(
    fn: str, param: str, value: Any, kinds: tuple[str, ...] = REAL, why: str = "", operands: Sequence[Any] = ()
) -> Any:
    """A parameter that must be concrete (a length, a bound, a fill value an op takes as a
    param): a Python scalar, read from a NumPy scalar or an untracked 0-d Tensor; a traced
    Tensor raises ``ConcretizationError`` naming ``fn`` and ``param`` (``why``: what it decides)."""
    v = read_scalar(fn, param, value, kinds, operands)
    if not isinstance(v, Tensor):
        return v
    refuse_traced(fn, param, v, why or "it decides the result's shape or a branch", _CONCRETE_HINT, operands)
    return v._array.item()


def concrete_flag(fn: str, param: str, value: Any, operands: Sequence[Any] = ()) -> builtins.bool:
    """A flag (``keepdims``, ``equal_nan``): its truth value, as NumPy reads it; a Tensor must be
    0-d, and a traced one raises ``ConcretizationError`` (the flag picks the computation, and
    ``bool()`` of it would read the value this trace saw)."""
    if not isinstance(value, Tensor):
        return builtins.bool(value)
    return builtins.bool(concrete_scalar(fn, param, value, FLAG, "it picks what the function computes", operands))


def scalar_constant(fn: str, param: str, value: Any, dtype: DType, operands: Sequence[Any] = ()) -> Tensor:
    """A real scalar parameter as a 0-d Tensor of ``dtype``: a Python or NumPy scalar as a constant
    (cast as NumPy casts it), a 0-d Tensor by a recorded ``convert`` where its dtype differs, so a
    traced one stays traced and every replay uses the value it is given."""
    v = read_scalar(fn, param, value, REAL, operands)
    if isinstance(v, Tensor):
        return v if v.dtype is dtype else F.convert(v, dtype)
    return asarray(np.asarray(v).astype(dtype.storage), dtype)


def scalar_operand(fn: str, param: str, value: Any, like: Tensor, operands: Sequence[Any] = ()) -> Any:
    """A real scalar parameter as the operand an op takes next to ``like``: a Python or NumPy scalar
    as a 0-d constant in ``like``'s float dtype (weak when ``like`` is; the Python scalar itself
    for a non-float ``like``: the policy's promotion decides, as in jax.nn's formulas), a 0-d
    Tensor converted to ``like``'s dtype (a recorded ``convert``), so a traced one stays traced."""
    v = read_scalar(fn, param, value, REAL, operands)
    if isinstance(v, Tensor):
        if like.dtype.is_inexact and v.dtype is not like.dtype:
            return F.convert(v, like.dtype)
        return v
    if like.dtype.kind != "float":
        return v
    c = asarray(np.asarray(v, like.dtype.storage), like.dtype)
    c.weak = like.weak
    return c
