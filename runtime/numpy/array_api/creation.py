"""The standard's creation functions under its signatures: ``asarray`` with its ``copy=``
semantics, ``device=`` on each (castwise has one device, ``rt.cpu``), and the positional-only
and keyword-only parameters the standard names.

They are the NumPy-named layer's functions (``runtime.numpy.creation``) and the op functions
(``lax.full``, ``lax.zeros`` ...); where the standard leaves the dtype to the library (a
``full`` of a Python float, ``zeros`` without ``dtype``), the active policy's default decides.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.dtypes import DType
from runtime.core.executor import asarray as _asarray
from runtime.core.interop import from_dlpack
from runtime.core.promotion import get_policy_object
from runtime.core.shapes import OpTypeError, ShapeError
from runtime.core.tensor import Tensor
from runtime.numpy import creation as C
from runtime.numpy.array_api.common import CopyError, check_device, default_float, standard_error
from runtime.numpy.array_api.data_types import copy_of
from runtime.numpy.params import dtype_param, named

__all__ = [
    "arange",
    "asarray",
    "empty",
    "empty_like",
    "eye",
    "from_dlpack",
    "full",
    "full_like",
    "linspace",
    "meshgrid",
    "ones",
    "ones_like",
    "tril",
    "triu",
    "zeros",
    "zeros_like",
]


def _target(fn: str, dtype: Any) -> DType | None:
    return None if dtype is None else dtype_param(fn, dtype)


def _shape(fn: str, shape: Any) -> tuple[int, ...]:
    """A shape argument (an int or a tuple of non-negative ints)."""
    items = (shape,) if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool) else shape
    try:
        out = tuple(operator.index(n) for n in items)
    except TypeError:
        raise standard_error(ShapeError, fn, f"shape must be an int or a tuple of ints, got {shape!r}") from None
    if builtins.any(n < 0 for n in out):
        raise standard_error(ShapeError, fn, f"shape {out} has a negative size")
    return out


def _shares(data: Any) -> bool:
    """Whether ``asarray`` can hold ``data``'s memory without a copy (an array or a buffer)."""
    return isinstance(data, np.ndarray) or hasattr(data, "__array_interface__") or isinstance(data, memoryview)


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None) -> Tensor:
    """``obj`` as a Tensor, with the standard's ``copy``: ``True`` always copies, ``False`` never
    does (``CopyError``, a ``ValueError``, where it would have to: a conversion, a Python list),
    ``None`` copies only when it must. A Tensor of the asked dtype is returned itself; a NumPy
    array or buffer shares its memory (``np.shares_memory`` holds) unless a copy is asked for."""
    check_device("asarray", device)
    target = _target("asarray", dtype)
    if isinstance(obj, Tensor):
        if target is None or target is obj.dtype:
            if copy:
                return copy_of(obj)
            return obj
        if copy is False:
            raise standard_error(CopyError, "asarray", f"copy=False, but converting to {target.name} copies", obj)
        return F.convert(obj, target)
    if isinstance(obj, (bytes, bytearray, memoryview)) or (
        hasattr(obj, "__buffer__") and not isinstance(obj, (list, tuple, np.ndarray, np.generic))
    ):
        obj = np.frombuffer(obj, dtype=np.uint8) if target is None else np.frombuffer(obj, dtype=target.storage)
    if _shares(obj):
        array = np.asarray(obj)
        if copy:
            array = array.copy()
        out = _asarray(array, target)
        if copy is False and not np.shares_memory(out._array, array):
            raise standard_error(CopyError, "asarray", "copy=False, but holding this array needs a copy")
        return out
    if copy is False:
        raise standard_error(
            CopyError, "asarray", f"copy=False, but a {type(obj).__name__} is no array: holding it copies it"
        )
    return _asarray(obj, target)


@named("arange")
def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None) -> Tensor:
    """``runtime.numpy.arange`` under the standard's signature."""
    check_device("arange", device)
    return C.arange(start, stop, step, dtype=dtype)


def _filled(fn: str, shape: Any, value: Any, dtype: Any) -> Tensor:
    sizes = _shape(fn, shape)
    target = _target(fn, dtype)
    if target is None:
        target = _fill_dtype(value)
    return F.full(sizes, value, target)


def _fill_dtype(value: Any) -> DType:
    """The dtype a fill value gives without ``dtype=``: the policy's default for its Python kind
    (the standard leaves it to the library); a NumPy scalar or a Tensor keeps its own."""
    if isinstance(value, (Tensor, np.generic, np.ndarray)):
        return dt.dtype(value.dtype)
    kind = {builtins.bool: "bool", int: "int", float: "float", complex: "complex"}.get(type(value))
    if kind is None:
        raise standard_error(OpTypeError, "full", f"fill_value must be a bool, int, float or complex, got {value!r}")
    return get_policy_object(None).scalar_default(kind, None)  # type: ignore[arg-type]


@named("empty")
def empty(shape: Any, *, dtype: Any = None, device: Any = None) -> Tensor:
    """An array of ``shape``: castwise fills it with zeros (an uninitialised array would expose
    stale memory, and a recorded program must be deterministic)."""
    check_device("empty", device)
    return _filled("empty", shape, 0, dtype if dtype is not None else default_float())


@named("zeros")
def zeros(shape: Any, *, dtype: Any = None, device: Any = None) -> Tensor:
    """Zeros of ``shape``; without ``dtype``, the policy's default float."""
    check_device("zeros", device)
    return _filled("zeros", shape, 0, dtype if dtype is not None else default_float())


@named("ones")
def ones(shape: Any, *, dtype: Any = None, device: Any = None) -> Tensor:
    """Ones of ``shape``; without ``dtype``, the policy's default float."""
    check_device("ones", device)
    return _filled("ones", shape, 1, dtype if dtype is not None else default_float())


@named("full")
def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Tensor:
    """``fill_value`` repeated to ``shape``; without ``dtype``, the policy's default dtype of the
    fill value's kind."""
    check_device("full", device)
    return _filled("full", shape, fill_value, dtype)


@named("empty_like")
def empty_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Tensor:
    """Zeros of ``x``'s shape and dtype (``empty``: castwise never hands out stale memory)."""
    check_device("empty_like", device, x)
    return C.zeros_like(x, dtype=dtype)


@named("zeros_like")
def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Tensor:
    """Zeros of ``x``'s shape and dtype (or ``dtype``)."""
    check_device("zeros_like", device, x)
    return C.zeros_like(x, dtype=dtype)


@named("ones_like")
def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Tensor:
    """Ones of ``x``'s shape and dtype (or ``dtype``)."""
    check_device("ones_like", device, x)
    return C.ones_like(x, dtype=dtype)


@named("full_like")
def full_like(x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Tensor:
    """``fill_value`` in ``x``'s shape and dtype (or ``dtype``)."""
    check_device("full_like", device, x)
    return C.full_like(x, fill_value, dtype=dtype)


@named("eye")
def eye(n_rows: Any, n_cols: Any = None, /, *, k: Any = 0, dtype: Any = None, device: Any = None) -> Tensor:
    """Ones on the ``k``-th diagonal of an ``n_rows x n_cols`` matrix."""
    check_device("eye", device)
    return C.eye(n_rows, n_cols, k=k, dtype=dtype)


@named("linspace")
def linspace(
    start: Any, stop: Any, /, num: Any, *, dtype: Any = None, device: Any = None, endpoint: bool = True
) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop``."""
    check_device("linspace", device)
    return C.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)


@named("meshgrid")
def meshgrid(*arrays: Any, indexing: str = "xy") -> list[Tensor]:
    """Coordinate arrays of 1-D vectors, as a list (the standard's return type)."""
    return list(C.meshgrid(*arrays, indexing=indexing))


@named("tril")
def tril(x: Any, /, *, k: int = 0) -> Tensor:
    """``x`` with the entries above the ``k``-th diagonal zeroed."""
    return C.tril(x, k)


@named("triu")
def triu(x: Any, /, *, k: int = 0) -> Tensor:
    """``x`` with the entries below the ``k``-th diagonal zeroed."""
    return C.triu(x, k)
