"""The op functions of conversion (convert).

Each function plans, checks and runs one op (or a short
composition of ops) through the executor; the conventions are in ``runtime.core.lax``.
"""

from __future__ import annotations

from typing import Any

from runtime.core import ops
from runtime.core.lax._common import Operand, _dtype_param, _one
from runtime.core.tensor import Tensor

__all__ = ["convert"]


def convert(x: Operand, dtype: Any) -> Tensor:
    """``x`` converted to ``dtype`` (``jax.lax.convert_element_type`` values)."""
    return _one(ops.convert, x, new_dtype=_dtype_param(dtype))
