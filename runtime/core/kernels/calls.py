"""Kernels of the user call ops (``runtime.core.ops`` families ``call``).

Each kernel is a named function followed by its registration in ``KERNELS``; the conventions are
in ``runtime.core.kernels``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from runtime.core.kernels._common import KERNELS, Array


def custom_call_kernel(*arrays: Array, fun: Callable[..., Sequence[Any]], in_avals: Any, **_: Any) -> tuple[Array, ...]:
    """Replay a user function recorded as one call: ``fun`` on the operands as Tensors, with
    recording off (its derivative is the call's rule, not the ops inside)."""
    from runtime.core import hooks
    from runtime.core.tensor import Tensor

    with hooks.recorder_override(None):
        outs = fun(*[Tensor(a, d) for a, (d, _) in zip(arrays, in_avals, strict=True)])
    return tuple(o._array for o in outs)  # the storage: numpy() is a read-only view


KERNELS["custom_jvp_call"] = custom_call_kernel
KERNELS["custom_vjp_call"] = custom_call_kernel
