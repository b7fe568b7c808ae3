"""What the NumPy-named layer's functions and Tensor methods share: the library a policy follows
where NumPy, jax.numpy and PyTorch disagree (``library``), the error helper that names the method,
the operand and the policy (``api_error``), and axis normalisation.

``runtime.numpy.tensor_methods`` re-exports each of these under its old name.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from runtime.core import lax
from runtime.core.promotion import get_policy
from runtime.core.shapes import ShapeError
from runtime.core.tensor import Tensor

#: The library whose semantics a policy's Tensor API follows where NumPy, jax.numpy and
#: PyTorch disagree (``var``'s default ddof, ``squeeze`` of a non-1 axis, ``sum``'s integer
#: dtype, ``any`` of uint8, out-of-bounds indices). Policies not named follow jax.numpy.
LIBRARY: dict[str, str] = {"jax": "jax", "jax-strict": "jax", "numpy": "numpy", "torch": "torch", "kael": "torch"}


def library() -> str:
    """The library (``"jax"``, ``"numpy"`` or ``"torch"``) the active policy's Tensor API follows."""
    return LIBRARY.get(get_policy(), "jax")


def describe_operand(x: Any) -> str:
    if isinstance(x, Tensor):
        return f"{x.dtype.short}[{', '.join(map(str, x.shape))}]"
    return type(x).__name__


def api_error(cls: type[Exception], method: str, x: Any, message: str) -> Exception:
    """``cls`` with a message naming the method, the operand's dtype and shape, and the policy."""
    return cls(f"{method}: {message} [operand {describe_operand(x)}; policy {get_policy()!r}]")


# -- axes --------------------------------------------------------------------------------------


def normalize_axes(x: Tensor, axis: Any, method: str) -> tuple[int, ...]:
    """``axis`` (None, an int or a sequence of ints; negative ones count from the end) as
    sorted non-negative axes of ``x``; anything else raises naming ``method``."""
    ndim = x.ndim
    if axis is None:
        return tuple(range(ndim))
    items = (axis,) if is_int(axis) else axis
    try:
        items = tuple(items)
    except TypeError:
        raise api_error(ShapeError, method, x, f"axis must be an int or a sequence of ints, got {axis!r}") from None
    out = []
    for a in items:
        if not is_int(a):
            raise api_error(ShapeError, method, x, f"axis must be an int or a sequence of ints, got {axis!r}")
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise api_error(ShapeError, method, x, f"axis {a} is out of range for rank {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise api_error(ShapeError, method, x, f"axis {axis!r} repeats an axis")
    return tuple(sorted(out))


def is_int(value: Any) -> bool:
    if isinstance(value, (builtins.bool, np.bool_)):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def keep_dims(out: Tensor, x: Tensor, axes: tuple[int, ...], keepdims: bool) -> Tensor:
    """``out`` with the reduced ``axes`` kept as size 1 (a recorded ``reshape``)."""
    if not keepdims:
        return out
    shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
    return out if out.shape == shape else lax.reshape(out, shape)
