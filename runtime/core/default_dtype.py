"""``set_default_dtype`` / ``get_default_dtype``: PyTorch's default floating dtype, scoped.

``torch.set_default_dtype(d)`` changes the dtype Python floats, float creation functions
(``zeros``, ``ones``, ``arange`` with float bounds, ``linspace`` ...) and integer true division
get; the default complex dtype follows it (complex32 for float16, complex128 for float64,
complex64 otherwise). castwise keeps the setting per thread next to the active policy, and
the torch policy's ``default_float`` is the one place that reads it. The call takes effect
at once, as PyTorch's does, and also returns a context manager that restores the previous
setting on exit::

    with rt.policy("torch"), rt.set_default_dtype(rt.float64):
        assert rt.asarray(1.0).dtype == rt.float64
    # float32 again

Only the torch policy has the setting: jax's default float is fixed by ``jax_enable_x64``
and NumPy's is float64, so ``set_default_dtype`` under any other policy raises
``DefaultDtypeError`` rather than make that policy disagree with its library
(docs/promotion.md, "The default floating dtype").
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.errors import CastwiseError
from runtime.core.policies.torch_policy import TorchPolicy
from runtime.core.promotion import _STATE, get_policy, get_policy_object, plan_key

__all__ = ["DefaultDtypeError", "get_default_dtype", "set_default_dtype"]

#: The dtypes ``torch.set_default_dtype`` accepts (its floating types castwise has; float8
#: types are no default in PyTorch).
ACCEPTED = (dt.float32, dt.float64, dt.float16, dt.bfloat16)


class DefaultDtypeError(CastwiseError, TypeError):
    """``set_default_dtype`` with a dtype PyTorch refuses, or under a policy without the setting."""


class _Restore:
    """What ``set_default_dtype`` returns: the setting is already made; ``with`` restores the
    previous one on exit."""

    def __init__(self, previous: DType | None, new: DType) -> None:
        self._previous = previous
        self.dtype = new

    def __enter__(self) -> DType:
        return self.dtype

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        _set(self._previous)

    def __repr__(self) -> str:
        return f"set_default_dtype({self.dtype.name})"


def _set(value: DType | None) -> None:
    _STATE.default_float = value
    _STATE.plan_key = plan_key(_STATE.name, value)


def set_default_dtype(d: Any) -> _Restore:
    """Make ``d`` the default floating dtype in this thread (``torch.set_default_dtype``), under
    the torch policy; usable as a context manager that restores the previous default."""
    try:
        target: DType | None = dt.dtype(d)
    except TypeError:
        target = None
    if target not in ACCEPTED:
        got = target.name if isinstance(target, DType) else repr(d)
        raise DefaultDtypeError(
            f"set_default_dtype: only floating-point dtypes float32, float64, float16 and bfloat16 can be the "
            f"default, got {got} [policy {get_policy()!r}]"
        )
    assert isinstance(target, DType)
    policy = get_policy_object(None)
    if not isinstance(policy, TorchPolicy):
        raise DefaultDtypeError(
            f"set_default_dtype: policy {get_policy()!r} has no default-dtype setting (its default float is "
            f"{policy.scalar_default('float', None).name}, as its library fixes it); it is PyTorch's setting: "
            f"use it under rt.policy('torch')"
        )
    previous = _STATE.default_float
    _set(None if target is policy.initial_default_float else target)
    return _Restore(previous, target)


def get_default_dtype() -> DType:
    """The active policy's default floating dtype (``torch.get_default_dtype()`` under torch:
    float32 unless ``set_default_dtype`` changed it; float64 under jax with x64 and numpy)."""
    return get_policy_object(None).scalar_default("float", None)
