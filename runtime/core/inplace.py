"""In-place operations: ``x += y``, ``x.add_(y)`` and friends.

An in-place op writes into ``x``'s storage, so ``x``'s dtype never changes. The
result's category (bool < integer < floating < complex) must not exceed
``x``'s (``check_result_fits``, as in PyTorch); the result is then converted on
store. Tracked tensors, and tensors a recorded graph still references, refuse
in-place writes: the recording would silently stop matching what ran.

Those refusals look at one Tensor object, but other Tensors can share its
memory (views, ``detach()``, two ``asarray`` of one NumPy array). So every
write also ticks the memory's version counter (``runtime.core.versions``), and a
backward pass that would read a saved value written after it was recorded
raises ``SavedValueModifiedError`` instead of returning a wrong gradient.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from runtime.core.dtypes import DType
from runtime.core.ops import OpDef
from runtime.core.promotion import get_policy
from runtime.core.shapes import ShapeError
from runtime.core.versions import bump

if TYPE_CHECKING:
    from runtime.core.tensor import Tensor


class InPlaceError(RuntimeError):
    """An in-place write would corrupt a recording."""


class SavedValueModifiedError(InPlaceError):
    """A value a recording saved for its derivative (or a constant a jitted function
    closed over) was written in place after it was recorded, through some Tensor
    sharing its memory: differentiating (or running the cached program) would use the
    new values and give a wrong answer, so it raises instead."""


class ReadOnlyTensorError(InPlaceError, ValueError):
    """An in-place write into a Tensor whose array is read-only (an ``autodiff.jit``
    result viewing XLA's buffer, a shared constant); also a ``ValueError``, as
    NumPy's own read-only error is."""


def check_result_fits(name: str, result: DType, target: DType) -> None:
    """Raise ``TypeError`` if a ``result`` cannot be stored in a ``target`` tensor."""
    if result.category > target.category:
        raise TypeError(
            f"{name} result of dtype {result.name} cannot be stored in a tensor of dtype {target.name} "
            f"(policy {get_policy()!r})"
        )


def apply_inplace(x: Tensor, op: OpDef, other: Any, name: str) -> Tensor:
    """Compute ``op(x, other)`` and store it into ``x`` (same dtype, same storage)."""
    from runtime.core.executor import apply, convert_array
    from runtime.core.tensor import Tensor

    if x._requires_grad:
        raise InPlaceError(
            f"{name}: {x.dtype.name}{list(x.shape)} requires grad; an in-place write would change a "
            "value the recording depends on. Use the out-of-place op."
        )
    from runtime.core.graph import is_referenced

    if is_referenced(x):
        raise InPlaceError(
            f"{name}: {x.dtype.name}{list(x.shape)} is referenced by a recorded graph; an in-place write "
            "would change what the graph replays. Use the out-of-place op."
        )
    if not x._array.flags.writeable:
        raise ReadOnlyTensorError(
            f"{name}: {x.dtype.name}{list(x.shape)} is read-only (a view of memory castwise does not own, "
            "such as an autodiff.jit result); write into x.copy() or use the out-of-place op."
        )
    if isinstance(other, Tensor) and other._requires_grad:
        raise InPlaceError(
            f"{name}: the operand {other.dtype.name}{list(other.shape)} requires grad and would be lost in "
            "an in-place write into an untracked tensor. Use the out-of-place op."
        )
    result = apply(op, (x, other), {})
    assert isinstance(result, Tensor)
    check_result_fits(name, result.dtype, x.dtype)
    if result.shape != x.shape:
        raise ShapeError(
            f"{name}: result shape {list(result.shape)} cannot be stored in a tensor of shape {list(x.shape)}"
        )
    stored = result._array if result.dtype is x.dtype else convert_array(result._array, result.dtype, x.dtype)
    bump(x._array)  # every Tensor viewing this memory sees the new version
    np.copyto(x._array, stored, casting="unsafe")
    return x
