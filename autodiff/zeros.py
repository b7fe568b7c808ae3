"""Symbolic zeros: the tangent or cotangent of an inactive value.

A ``Zero`` is a marker with an aval, never a materialised array. Rules test
for it with ``is_zero`` and skip work; ``add_any`` treats it as the identity.
Only the user-facing API instantiates zeros, where a user asked for an array.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from runtime.core.dtypes import DType
from runtime.core.tensor import Tensor


class Zero:
    """The symbolic zero tangent / cotangent of a value with ``dtype`` and ``shape``."""

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype: DType, shape: tuple[int, ...]) -> None:
        self.dtype = dtype
        self.shape = tuple(shape)

    @classmethod
    def like(cls, x: Any) -> Zero:
        return cls(x.dtype, tuple(x.shape))

    def __repr__(self) -> str:
        return f"Zero({self.dtype.short}[{','.join(map(str, self.shape))}])"


TangentLike = Tensor | Zero


def is_zero(x: Any) -> bool:
    return isinstance(x, Zero)


def add_any(a: TangentLike, b: TangentLike) -> TangentLike:
    """a + b where either may be a symbolic zero (no array work for zeros)."""
    if isinstance(a, Zero):
        return b
    if isinstance(b, Zero):
        return a
    from runtime.core import lax as functions

    return functions.add(a, b)


#: each dtype's zero, converted as lax.full converts it: float8_e8m0fnu has no zero (NaN there, as in JAX)
_ZERO_OF: dict[DType, np.ndarray] = {}


def instantiate(x: TangentLike) -> Tensor:
    """A real array for ``x`` (only at the API boundary, where users get arrays)."""
    if isinstance(x, Zero):
        zero = _ZERO_OF.get(x.dtype)
        if zero is None:
            from runtime.core.kernels import scalar_array

            zero = _ZERO_OF[x.dtype] = scalar_array(0, x.dtype)
        return Tensor(np.full(x.shape, zero), x.dtype)
    return x
