"""The standard's data type functions: ``finfo``, ``iinfo``, ``isdtype``, ``can_cast``,
``astype`` and ``result_type``, for every castwise dtype (the ml_dtypes ones included).

``finfo``/``iinfo`` read the formats themselves (ml_dtypes' and NumPy's ``finfo`` for the
floats; the bit width for the integers, so int1, int2 and int4 have theirs). ``can_cast`` and
``result_type`` answer with the active policy's promotion: the standard fixes the lattice only
among its own dtypes, and castwise's policies each extend it their library's way.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

import ml_dtypes

from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.dtypes import DType
from runtime.core.promotion import PromotionError, get_policy_object
from runtime.core.promotion import result_type as _policy_result_type
from runtime.core.shapes import OpTypeError
from runtime.core.tensor import Tensor
from runtime.numpy.array_api.common import check_device, operand, standard_error

__all__ = ["astype", "can_cast", "finfo", "finfo_object", "iinfo", "iinfo_object", "isdtype", "result_type"]


@dataclass(frozen=True)
class finfo_object:
    """What ``finfo`` returns: the standard's five fields as Python scalars, and ``dtype`` (the
    real dtype: a complex dtype's part)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


@dataclass(frozen=True)
class iinfo_object:
    """What ``iinfo`` returns: the width and the range as Python ints, and ``dtype``."""

    bits: int
    max: int
    min: int
    dtype: DType


def _dtype_of(fn: str, value: Any) -> DType:
    """A dtype argument, or an array's dtype (the standard takes either)."""
    if isinstance(value, Tensor):
        return value.dtype
    try:
        return dt.dtype(value)
    except (TypeError, ValueError) as err:
        raise standard_error(OpTypeError, fn, f"{value!r} is neither a castwise dtype nor an array ({err})") from None


def finfo(type: Any, /) -> finfo_object:  # noqa: A002  (the standard's parameter name)
    """Machine limits of a floating or complex dtype (of a complex one: its parts'), for every
    castwise float, the ml_dtypes formats included."""
    d = _dtype_of("finfo", type)
    if d.kind not in ("float", "complex"):
        raise standard_error(
            OpTypeError, "finfo", f"{d.name} is not a floating-point or complex dtype (iinfo reads integers)"
        )
    real = dt.COMPLEX_PART.get(d, d)
    info = ml_dtypes.finfo(real.storage)
    return finfo_object(
        bits=builtins.int(real.bits),
        eps=builtins.float(info.eps),
        max=builtins.float(info.max),
        min=builtins.float(info.min),
        smallest_normal=builtins.float(info.smallest_normal),
        dtype=real,
    )


def iinfo(type: Any, /) -> iinfo_object:  # noqa: A002  (the standard's parameter name)
    """The range of an integer dtype, from its width (int1's is -1..0, uint4's 0..15)."""
    d = _dtype_of("iinfo", type)
    if not d.is_integer:
        raise standard_error(OpTypeError, "iinfo", f"{d.name} is not an integer dtype (finfo reads floats)")
    if d.kind == "int":
        return iinfo_object(bits=d.bits, max=(1 << (d.bits - 1)) - 1, min=-(1 << (d.bits - 1)), dtype=d)
    return iinfo_object(bits=d.bits, max=(1 << d.bits) - 1, min=0, dtype=d)


#: the standard's dtype kinds, each the castwise kinds it holds
_KINDS: dict[str, tuple[str, ...]] = {
    "bool": ("bool",),
    "signed integer": ("int",),
    "unsigned integer": ("uint",),
    "integral": ("int", "uint"),
    "real floating": ("float",),
    "complex floating": ("complex",),
    "numeric": ("int", "uint", "float", "complex"),
}


def isdtype(dtype: Any, kind: Any) -> bool:
    """Whether ``dtype`` is of ``kind``: a dtype, one of the standard's kind names
    (``"real floating"`` holds every castwise float, bfloat16 and the float8s included), or a
    tuple of them."""
    d = _dtype_of("isdtype", dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            if k not in _KINDS:
                raise standard_error(
                    OpTypeError, "isdtype", f"kind {k!r} is not one of the standard's kinds ({', '.join(_KINDS)})"
                )
            if d.kind in _KINDS[k]:
                return True
        elif _dtype_of("isdtype", k) is d:
            return True
    return False


def result_type(*arrays_and_dtypes: Any) -> DType:
    """The dtype the active policy promotes the arrays, dtypes and Python scalars to."""
    try:
        return _policy_result_type(*arrays_and_dtypes)
    except (TypeError, ValueError) as err:
        if isinstance(err, PromotionError) or str(err).startswith("result_type:"):
            raise
        raise standard_error(OpTypeError, "result_type", str(err), *arrays_and_dtypes) from None


def can_cast(from_: Any, to: Any, /) -> bool:
    """Whether the active policy promotes ``from_`` (a dtype or an array's) with ``to`` to ``to``:
    the standard's definition, "according to the type promotion rules"."""
    a, b = _dtype_of("can_cast", from_), _dtype_of("can_cast", to)
    if a is b:
        return True
    policy = get_policy_object(None)
    if not policy.can_promote(a, b):
        return False
    return policy.promote_types(a, b) is b


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Tensor:
    """``x`` converted to ``dtype`` (a recorded ``convert``). ``copy=False`` returns ``x`` itself
    when it already has ``dtype``; ``copy=True`` always gives a new array."""
    t = operand("astype", x)
    check_device("astype", device, t)
    target = _dtype_of("astype", dtype)
    if target is not t.dtype:
        return F.convert(t, target)
    if not copy:
        return t
    return copy_of(t)


def copy_of(t: Tensor) -> Tensor:
    """A new Tensor with ``t``'s values: an untracked one gets fresh storage (a later in-place
    write to either cannot reach the other); a recorded one (tracked, or traced) a recorded
    same-dtype ``convert``, a new value of the graph, so gradients and traces flow through it."""
    if t.node is None and not t.requires_grad:
        return t.copy()
    return F.convert(t, t.dtype)
