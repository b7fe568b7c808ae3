"""The op functions of conversion (convert).

Each function plans, checks and runs one op (or a short
composition of ops) through the executor; the conventions are in ``runtime.core.lax``.
"""

from __future__ import annotations

from typing import Any

from runtime.core import ops
from runtime.core.lax._common import Operand, _dtype_param, _one
from runtime.core.tensor import Tensor

__all__ = ["bitcast_convert_type", "convert"]


def convert(x: Operand, dtype: Any) -> Tensor:
    """``x`` converted to ``dtype`` (``jax.lax.convert_element_type`` values)."""
    return _one(ops.convert, x, new_dtype=_dtype_param(dtype))


def bitcast_convert_type(x: Operand, new_dtype: Any) -> Tensor:
    """``lax.bitcast_convert_type``: ``x``'s bits read as ``new_dtype``. The same width keeps the
    shape; a narrower ``new_dtype`` adds a trailing axis (``f32[3]`` as ``uint8`` is ``u8[3, 4]``),
    a wider one removes a trailing axis of the width ratio. No derivative (as in JAX)."""
    return _one(ops.bitcast_convert_type, x, new_dtype=_dtype_param(new_dtype))
