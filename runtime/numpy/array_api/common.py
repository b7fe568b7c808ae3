"""What the array API namespace's modules share: its error classes, the ``device=`` check, the
operand conversion and the policy's default dtypes.

Every error names the function the user called, the operands' dtypes and shapes and the active
policy (``runtime.numpy.params.error``), and is a ``CastwiseError`` that also subclasses the
builtin the standard names (``ValueError`` for a device or a copy it cannot honour).
"""

from __future__ import annotations

from typing import Any

from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.errors import CastwiseError, ShapeError
from runtime.core.interop import CPU, Device
from runtime.core.promotion import get_policy_object
from runtime.core.tensor import Tensor
from runtime.numpy.params import as_operand, error

__all__ = [
    "ArrayAPIVersionError",
    "AxisError",
    "CopyError",
    "DeviceError",
    "check_device",
    "default_float",
    "default_int",
    "operand",
    "standard_error",
]


class DeviceError(CastwiseError, ValueError):
    """A ``device=`` (or ``to_device``) that is not castwise's one device, ``rt.cpu``."""


class AxisError(ShapeError, IndexError):
    """An axis out of range where the standard asks for an ``IndexError`` (``expand_dims``): a
    ``ShapeError`` as castwise's other axis errors, and an ``IndexError`` (NumPy's ``AxisError``
    is both a ``ValueError`` and an ``IndexError`` too)."""


class CopyError(CastwiseError, ValueError):
    """``copy=False`` where the result cannot share the input's memory (the standard asks for a
    ``ValueError`` rather than a silent copy)."""


class ArrayAPIVersionError(CastwiseError, ValueError):
    """``__array_namespace__(api_version=...)`` naming a version of the standard castwise does
    not implement."""


def standard_error(cls: type[Exception], fn: str, message: str, *operands: Any) -> Exception:
    """``cls`` with the message castwise's errors carry (the function, the operands, the policy)."""
    return error(cls, fn, message, *operands)


def check_device(fn: str, device: Any, *operands: Any) -> None:
    """``device=`` of a standard function: None or castwise's CPU device (its only one; NumPy's
    spelling ``"cpu"`` too). Anything else raises, since computing elsewhere silently would
    break the caller's placement."""
    if device is None or device is CPU or (isinstance(device, str) and device == "cpu"):
        return
    if isinstance(device, Device) and device.platform == "cpu" and device.id == 0:
        return
    raise standard_error(
        DeviceError, fn, f"device {device!r} is not a castwise device (castwise computes on one device, rt.cpu)",
        *operands,
    )  # fmt: skip


def operand(fn: str, x: Any, param: str = "x") -> Tensor:
    """An array operand as a Tensor, with an error naming ``fn`` for data that is no array."""
    return as_operand(fn, x, param)


def default_float() -> DType:
    """The active policy's default real floating dtype (what ``asarray(1.0)`` gives)."""
    return get_policy_object(None).scalar_default("float", None)


def default_int() -> DType:
    """The active policy's default integer dtype (what ``asarray(1)`` gives)."""
    return get_policy_object(None).scalar_default("int", None)


def default_complex() -> DType:
    """The active policy's default complex dtype."""
    return get_policy_object(None).scalar_default("complex", None)


def is_dtype(value: Any) -> bool:
    """Whether ``value`` is a castwise dtype (the namespace's dtype objects are castwise's)."""
    return isinstance(value, DType) or value in dt.ALL_DTYPES
