"""``__array_namespace_info__()``: what the namespace tells a library about itself. castwise
has one device (``rt.cpu``); its default dtypes are the active policy's, asked at each call, so
a library inside ``with rt.use_policy("torch"):`` sees float32."""

from __future__ import annotations

from typing import Any

from runtime.core import dtypes as dt
from runtime.core.interop import CPU, Device
from runtime.core.shapes import OpValueError
from runtime.numpy.array_api.common import check_device, default_complex, default_float, default_int, standard_error

__all__ = ["Info", "__array_namespace_info__"]

#: the standard's dtypes by canonical name (castwise has more: bfloat16, the float8s ...; the
#: standard's ``dtypes()`` lists only the ones its kinds are defined over)
STANDARD_DTYPES: dict[str, dt.DType] = {
    d.name: d
    for d in (
        dt.bool_, dt.int8, dt.int16, dt.int32, dt.int64, dt.uint8, dt.uint16, dt.uint32, dt.uint64,
        dt.float32, dt.float64, dt.complex64, dt.complex128,
    )
}  # fmt: skip

_KIND_TEST = {
    "bool": lambda d: d.kind == "bool",
    "signed integer": lambda d: d.kind == "int",
    "unsigned integer": lambda d: d.kind == "uint",
    "integral": lambda d: d.kind in ("int", "uint"),
    "real floating": lambda d: d.kind == "float",
    "complex floating": lambda d: d.kind == "complex",
    "numeric": lambda d: d.kind != "bool",
}


class Info:
    """The standard's inspection object (``xp.__array_namespace_info__()``)."""

    __module__ = "runtime.numpy.array_api.info"

    def capabilities(self) -> dict[str, Any]:
        """Boolean indexing and data-dependent shapes work eagerly (under a trace they raise
        ``ConcretizationError``, as jax.numpy's do); no limit on the rank."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": None}

    def default_device(self) -> Device:
        """castwise's one device, ``rt.cpu``."""
        return CPU

    def default_dtypes(self, *, device: Any = None) -> dict[str, dt.DType]:
        """The active policy's defaults (float64 and int64 under jax and numpy, float32 under torch)."""
        check_device("default_dtypes", device)
        return {
            "real floating": default_float(),
            "complex floating": default_complex(),
            "integral": default_int(),
            "indexing": dt.int64,
        }

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, dt.DType]:
        """The standard's dtypes (by canonical name) of ``kind`` (a kind name or a tuple of them)."""
        check_device("dtypes", device)
        if kind is None:
            return dict(STANDARD_DTYPES)
        kinds = kind if isinstance(kind, tuple) else (kind,)
        for k in kinds:
            if k not in _KIND_TEST:
                raise standard_error(OpValueError, "dtypes", f"kind {k!r} is not one of {', '.join(_KIND_TEST)}")
        return {n: d for n, d in STANDARD_DTYPES.items() if builtins_any(_KIND_TEST[k](d) for k in kinds)}

    def devices(self) -> list[Device]:
        """Every device castwise computes on: ``[rt.cpu]``."""
        return [CPU]


def builtins_any(values: Any) -> bool:
    return any(values)


def __array_namespace_info__() -> Info:
    """The namespace's inspection object."""
    return Info()
