"""In-place operations: ``x += y``, ``x.add_(y)`` and friends.

An in-place op writes into ``x``'s storage, so ``x``'s dtype never changes. The
result's category (bool < integer < floating < complex) must not exceed
``x``'s (``check_result_fits``, as in PyTorch); the result is then converted on
store. Tracked tensors, and tensors a recorded graph still references, refuse
in-place writes: the recording would silently stop matching what ran. Inside
``autodiff.no_grad()`` a tracked tensor may be written, as in PyTorch (the SGD step
``w -= lr * w.grad``): the write ticks its version counter, so a recording that saved
the old value raises ``SavedValueModifiedError`` at backward.

Those refusals look at one Tensor object, but other Tensors can share its
memory (views, ``detach()``, two ``asarray`` of one NumPy array). So every
write also ticks the memory's version counter (``runtime.core.versions``), and a
backward pass that would read a saved value written after it was recorded
raises ``SavedValueModifiedError`` instead of returning a wrong gradient.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from runtime.core import hooks
from runtime.core.dtypes import DType
from runtime.core.errors import CastwiseError, OpTypeError
from runtime.core.ops import OpDef
from runtime.core.promotion import get_policy
from runtime.core.shapes import ShapeError
from runtime.core.versions import bump

if TYPE_CHECKING:
    from runtime.core.tensor import Tensor


class InPlaceError(CastwiseError, RuntimeError):
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


def _const_refs(holder: Any) -> int:
    return sys.getrefcount(holder._const)


class _Holder:
    __slots__ = ("_const",)
    _const: object


def _baseline_refs() -> int:
    # What ``_const_refs`` counts for a value that only its holder's slot references
    # (measured through the same code path, so interpreter details cancel out).
    holder = _Holder()
    holder._const = object()
    return _const_refs(holder)


_ONLY_THE_SLOT = _baseline_refs()


def is_referenced(tensor: Tensor) -> bool:
    """Whether a live recording (or graph) still holds ``tensor``'s array as a constant
    (``runtime.core.graph.const_var``: the constant leaf it keeps in ``Tensor._const``).

    The tensor's slot holds one reference to its shared constant leaf; every
    further reference comes from an equation or a graph that would replay the
    array (CPython reference counts, compared with a calibrated baseline).
    """
    var = tensor._const
    if var is None or var.const is not tensor._array:
        return False
    del var
    return _const_refs(tensor) > _ONLY_THE_SLOT


def check_result_fits(name: str, result: DType, target: DType) -> None:
    """Raise ``OpTypeError`` (a ``TypeError``) if a ``result`` cannot be stored in a ``target`` tensor."""
    if result.category > target.category:
        raise OpTypeError(
            f"{name} result of dtype {result.name} cannot be stored in a tensor of dtype {target.name} "
            f"(policy {get_policy()!r})"
        )


def check_writable(x: Tensor, name: str) -> None:
    """Raise unless castwise may write into ``x``'s storage in place: ``x`` is untracked, no
    recording holds its array as a constant, and the array is writable."""
    if x._requires_grad and not hooks.recording_disabled():
        raise InPlaceError(
            f"{name}: {x.dtype.name}{list(x.shape)} requires grad; an in-place write would change a "
            "value the recording depends on. Use the out-of-place op, or write inside "
            "`with autodiff.no_grad():` (an optimizer step such as `w -= lr * w.grad`), as in PyTorch "
            f"[policy {get_policy()!r}]"
        )
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


def fill_inplace(x: Tensor, value: Any, name: str) -> Tensor:
    """Store the scalar ``value`` into every element of ``x`` (``zero_``, ``fill_``), with the
    refusals and version counting of every in-place write."""
    from runtime.core.executor import asarray

    check_writable(x, name)
    stored = asarray(value, dtype=x.dtype)._array  # castwise's conversion, as a stored result takes
    bump(x._array)
    np.copyto(x._array, stored, casting="unsafe")
    return x


def apply_inplace(x: Tensor, op: OpDef | Callable[[Tensor, Any], Tensor], other: Any, name: str) -> Tensor:
    """Compute ``op(x, other)`` and store it into ``x`` (same dtype, same storage).

    ``op`` is one op, or an op function composed of several (``lax.mod`` for ``%=``,
    ``lax.matmul`` for ``@=``): the result is computed out of place either way, then
    checked and stored by the one path below, so every in-place operator follows the
    same refusals, category rule and version counting."""
    from runtime.core.executor import apply, convert_array
    from runtime.core.tensor import Tensor

    check_writable(x, name)
    if isinstance(other, Tensor) and other._requires_grad and not hooks.recording_disabled():
        raise InPlaceError(
            f"{name}: the operand {other.dtype.name}{list(other.shape)} requires grad and would be lost in "
            "an in-place write into an untracked tensor. Use the out-of-place op, or write inside "
            f"`with autodiff.no_grad():` [policy {get_policy()!r}]"
        )
    result = apply(op, (x, other), {}) if isinstance(op, OpDef) else op(x, other)
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
