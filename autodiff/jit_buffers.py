"""The XLA buffers ``autodiff.jit`` keeps for Tensor arguments between calls.

A training loop calls a jitted step with the same parameter and data Tensors
again and again. Handing XLA their NumPy storage each time makes every call pay
the NumPy-to-XLA transfer (a copy into device memory on an accelerator; on CPU
at least the per-argument NumPy handling of ``jax.jit``'s dispatch). So the
first call puts a Tensor's array on the device (``jax.device_put``) and later
calls reuse that ``jax.Array`` while the Tensor has not changed.

"Not changed" is what the version counters say (``runtime.core.versions``):
the Tensor still holds the same storage array, and its memory was not written
in place through castwise since the buffer was made (through it, a view, or any
Tensor sharing the memory: every such write bumps the memory owner's counter).
One integer compare per argument while no in-place write happened anywhere
(the process-wide write clock is unchanged); one version lookup otherwise.

Writes castwise cannot count are not seen, as for the recordings' saved values:
writing into a NumPy array the user wrapped with ``rt.asarray`` and still holds
(``Tensor.numpy()`` is read-only, so the Tensor's own views cannot bypass
castwise). Such code should write through castwise (``t[...] = v``, ``t += d``)
or call ``forget()``.

The cache is keyed weakly: by ``id`` of the Tensor, with a weak reference
whose callback drops the entry, so a freed Tensor releases its device buffer
and a recycled ``id`` never finds a stale one. The results of a jitted call are
entered with the ``jax.Array`` XLA computed them into (``remember``), so a
result passed to the next jitted call is not transferred back.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime.core import versions
from runtime.core.tensor import Tensor

#: how many times a Tensor's storage was put on the device (cache misses); tests read it
PUTS = [0]


class _Slot:
    """One cached buffer: what it was made from and when."""

    __slots__ = ("array", "buffer", "clock", "ref", "version", "x64")

    def __init__(
        self, ref: weakref.ref[Tensor], array: np.ndarray, version: int, clock: int, x64: bool | None, buffer: Any
    ) -> None:
        self.ref = ref
        #: the storage array the buffer holds the values of (a rebound ``_array`` misses)
        self.array = array
        #: the memory's version counter then, and the write clock (a fast "nothing written" check)
        self.version = version
        self.clock = clock
        #: whether it was put with ``jax_enable_x64`` (64-bit storage is narrowed without it);
        #: None for a result's buffer, which XLA made in its own dtype
        self.x64 = x64
        self.buffer = buffer


#: id(tensor) -> its slot
_SLOTS: dict[int, _Slot] = {}


def _drop(key: int, ref: weakref.ref[Tensor]) -> None:
    # the Tensor is gone: release its buffer (unless the id already holds a newer Tensor's slot)
    slot = _SLOTS.get(key)
    if slot is not None and slot.ref is ref:
        del _SLOTS[key]


def device_put(array: np.ndarray, x64: bool) -> Any:
    """Put ``array`` on JAX's default device (the one hook for a transfer; counted in ``PUTS``)."""
    import jax

    PUTS[0] += 1
    if x64:
        with jax.enable_x64(True):
            return jax.device_put(array)
    return jax.device_put(array)


def _enter(t: Tensor, array: np.ndarray, x64: bool | None, buffer: Any) -> None:
    key = id(t)
    ref = weakref.ref(t, lambda r, key=key: _drop(key, r))  # type: ignore[misc]
    _SLOTS[key] = _Slot(ref, array, versions.version(array), versions.CLOCK[0], x64, buffer)


def buffers(tensors: Sequence[Tensor], x64: bool) -> list[Any]:
    """The device buffers of ``tensors`` for a compiled call: cached ones while each Tensor is
    unchanged, fresh ``device_put``s (then cached) otherwise."""
    clock = versions.CLOCK[0]
    out = []
    slots = _SLOTS
    for t in tensors:
        array = t._array
        slot = slots.get(id(t))
        if slot is not None and slot.array is array and (slot.x64 is x64 or slot.x64 is None):
            if slot.clock == clock:
                out.append(slot.buffer)
                continue
            if versions.version(array) == slot.version:
                slot.clock = clock
                out.append(slot.buffer)
                continue
        buffer = device_put(array, x64)
        _enter(t, array, x64, buffer)
        out.append(buffer)
    return out


def remember(t: Tensor, buffer: Any) -> None:
    """Enter a jitted call's result ``t`` with the ``jax.Array`` its storage views (no transfer
    when it is passed to the next jitted call)."""
    _enter(t, t._array, None, buffer)


def forget(t: Tensor | None = None) -> None:
    """Drop ``t``'s cached device buffer (all of them with no argument): after writing into its
    memory in a way castwise cannot count (the wrapped NumPy array directly)."""
    if t is None:
        _SLOTS.clear()
    else:
        _SLOTS.pop(id(t), None)


def cached() -> int:
    """How many Tensors have a device buffer cached now."""
    return len(_SLOTS)
