"""Version counters: which in-place writes happened to which memory, and when.

Several Tensors can view one block of memory: ``reshape``, ``transpose``, basic
slicing, ``real``/``imag``, ``conj`` of a real tensor, ``detach()``, and two
``asarray`` calls on one NumPy array all share their operand's storage. An
in-place write through any of them changes what the others hold, so the
counter belongs to the memory, not to a Tensor (as in PyTorch, where views share
their base's version counter).

Memory is identified by its *owner*: the ndarray at the root of a NumPy view
chain (``ndarray.base`` followed while it is an ndarray; a cached result of
``runtime.core.memory`` stops at the array made over the cache's ``bytearray``).
Every view of that owner, however it was made, finds the same counter; it is
dropped when the owner is garbage-collected.

Each in-place write (``runtime.core.inplace``, the one place castwise writes into an
existing Tensor) ticks a process-wide write clock and records the tick on the
owner's counter. A recording notes the clock when it records an equation
(``Eqn.clock``: one integer, no per-value work), so at backward time a saved
value was modified after its equation was recorded exactly when its owner's
last write is later than that clock. ``Tensor._version`` is the owner's count
of writes (0 for memory never written in place).

What cannot be counted: writes that bypass castwise (``t.numpy()[...] = v``,
NumPy ufuncs with ``out=``, writes into the user's own array that a Tensor
wraps). ``autodiff.detect_writes()`` catches those at backward by comparing
checksums of the saved values (see docs/autodiff.md, "In-place writes").
"""

from __future__ import annotations

import collections
import threading
import weakref
from typing import Any

import numpy as np

#: the write clock: how many in-place writes castwise made so far (read by ``record_op``)
CLOCK = [0]
#: the write ticks a counter remembers (to say what version a value had when it was saved)
_HISTORY = 64
_LOCK = threading.Lock()


class _Counter:
    __slots__ = ("owner", "ticks", "version")

    def __init__(self, owner: weakref.ref[np.ndarray]) -> None:
        self.owner = owner
        self.version = 0
        #: the clock values of the most recent writes, oldest first
        self.ticks: collections.deque[int] = collections.deque(maxlen=_HISTORY)


#: id(owner) -> its counter (only memory that was ever written in place has one)
_COUNTERS: dict[int, _Counter] = {}


def memory_owner(array: np.ndarray) -> np.ndarray:
    """The ndarray at the root of ``array``'s view chain (``array`` itself if it owns its memory).

    NumPy points a view's ``base`` at the first array that owns the memory (or
    at the array made over a foreign buffer), so this is usually one step.
    Objects that only wrap an array (``as_strided``'s interface holder, a
    ``memoryview`` of an ndarray) are followed too.
    """
    root = array
    base = root.base
    while base is not None:
        if not isinstance(base, np.ndarray):
            inner = getattr(base, "base", None)  # as_strided's DummyArray
            if inner is None and isinstance(base, memoryview):
                inner = base.obj
            if not isinstance(inner, np.ndarray):
                break
            base = inner
        root = base
        base = root.base
    return root


def _forget(key: int, ref: weakref.ref[np.ndarray]) -> None:
    # the owner is gone: its id may be reused by a new array, which starts at version 0
    counter = _COUNTERS.get(key)
    if counter is not None and counter.owner is ref:
        _COUNTERS.pop(key, None)


def bump(array: np.ndarray) -> int:
    """Record an in-place write into ``array``'s memory; returns the new version."""
    root = memory_owner(array)
    key = id(root)
    with _LOCK:
        CLOCK[0] += 1
        counter = _COUNTERS.get(key)
        if counter is None or counter.owner() is not root:
            counter = _Counter(weakref.ref(root, lambda ref, key=key: _forget(key, ref)))  # type: ignore[misc]
            _COUNTERS[key] = counter
        counter.version += 1
        counter.ticks.append(CLOCK[0])
        return counter.version


def _counter(array: np.ndarray) -> _Counter | None:
    root = memory_owner(array)
    counter = _COUNTERS.get(id(root))
    if counter is None or counter.owner() is not root:
        return None
    return counter


def version(array: np.ndarray) -> int:
    """How many in-place writes castwise made into ``array``'s memory (through any view)."""
    counter = _counter(array)
    return 0 if counter is None else counter.version


def written_since(array: np.ndarray, clock: int) -> tuple[int, str] | None:
    """``None`` if ``array``'s memory was not written in place after the write clock read
    ``clock``; else ``(version now, version at clock)`` (the latter as text: ``"0"``, or
    ``"at most 3"`` once the counter's history no longer reaches back that far)."""
    counter = _counter(array)
    if counter is None or not counter.ticks or counter.ticks[-1] <= clock:
        return None
    later = sum(1 for tick in counter.ticks if tick > clock)
    then = counter.version - later
    if later == len(counter.ticks) and counter.version > later:
        return counter.version, f"at most {then}"  # older writes fell out of the history
    return counter.version, str(then)


# -- checksums (autodiff.detect_writes) ------------------------------------------------------------

#: whether any recording ever took checksums (until then a check can skip equations whose
#: clock is current without looking at them further)
CHECKSUMMED = [False]


class Snapshot(int):
    """A write clock that also carries checksums of the values an equation saved.

    ``autodiff.detect_writes()`` stores one in ``Eqn.clock`` instead of the plain
    integer, so recordings made outside the mode pay nothing for it.
    """

    digests: list[tuple[Any, np.ndarray, bytes]]


def digest(array: np.ndarray) -> bytes:
    """A checksum of ``array``'s contents (its bytes, in C order)."""
    import hashlib

    return hashlib.blake2b(np.ascontiguousarray(array).tobytes(), digest_size=16).digest()
