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


def written_between(array: np.ndarray, after: int, until: int | None) -> tuple[int, str] | None:
    """Like ``written_since(array, after)``, counting only the writes at clock ticks up to
    ``until`` (``None``: no bound). A history that no longer reaches back past ``after``
    counts as written (the writes it forgot may lie in the range)."""
    counter = _counter(array)
    if counter is None or not counter.ticks or counter.ticks[-1] <= after:
        return None
    inside = sum(1 for tick in counter.ticks if after < tick and (until is None or tick <= until))
    forgot = counter.version > len(counter.ticks) and counter.ticks[0] > after
    if not inside and not forgot:
        return None
    later = sum(1 for tick in counter.ticks if tick > after)
    then = counter.version - later
    return counter.version, (f"at most {then}" if forgot else str(then))


# -- folds: where untracked results come from while a trace runs ---------------------------------
#
# An op none of whose operands is tracked reaches no recorder: a trace (``runtime.trace``,
# ``autodiff.jit``, ``autodiff.vmap``'s recording) stores its result as a new constant, computed
# once from what its operands held then. Such a *folded* constant silently goes stale when the
# memory it was computed from changes, and it is wrong for any other call when it was computed
# from the traced arguments themselves (through ``detach()`` or inside ``no_grad()``). So while
# a trace runs, the executor reports every op it runs without recording (``note_untracked``:
# one check of ``WATCHING`` per op otherwise), and the trace's ``Fold`` keeps, for each result,
# the memory it was computed from (its *roots*: memory no untracked op of the trace computed).

#: how many folds are open in all threads: while none is, the executor's check is one compare
WATCHING = [0]

_Ref = weakref.ref  # (a local name: the fold's bookkeeping runs for every untracked op of a trace)


#: what a fold knows of one root: a weak reference, and whether it held a traced value
Root = tuple["weakref.ref[np.ndarray]", bool]


class Fold:
    """What one trace saw of the ops it did not record.

    ``origin`` maps each array an untracked op computed to the memory it was computed from
    (its roots: ``id(owner) -> (weakref(owner), traced)``); ``traced`` is the memory of values
    the trace recorded (its arguments and the results of the ops its recorder recorded): a
    constant computed from it holds this call's values of the arguments. Whether a root was
    traced is noted when it is read, so it is known after the root is gone.
    """

    __slots__ = ("fixed", "origin", "traced", "views")

    def __init__(self) -> None:
        self.origin: dict[int, tuple[weakref.ref[np.ndarray], dict[int, Root]]] = {}
        self.traced: dict[int, weakref.ref[np.ndarray]] = {}
        #: recorded results that view a constant's memory (a ``dynamic_slice`` of a closed-over
        #: array at a traced index): the view itself is traced (which part it views), not the memory
        self.views: dict[int, weakref.ref[np.ndarray]] = {}
        #: memory whose values are the same for every call or example (``vmap``'s unmapped
        #: arguments): a recorded view of it is not traced either
        self.fixed: dict[int, weakref.ref[np.ndarray]] = {}

    def roots(self, array: np.ndarray) -> dict[int, Root]:
        """The memory ``array``'s values were computed from (its own memory, if no untracked op
        of this trace computed it; a traced view of a constant stands for itself)."""
        entry = self.origin.get(id(array))
        if entry is not None and entry[0]() is array:
            return entry[1]
        view = self.views.get(id(array))
        if view is not None and view() is array:
            return {id(array): (view, True)}
        owner = memory_owner(array)
        if owner is not array:
            entry = self.origin.get(id(owner))
            if entry is not None and entry[0]() is owner:
                return entry[1]
        return {id(owner): (_Ref(owner), self.is_traced(owner))}

    def note_traced(self, array: np.ndarray) -> None:
        """``array`` holds a traced value (an argument, or what a recorded op computed). A view
        of memory that is not traced (a constant's: a ``dynamic_slice`` at a traced index)
        is traced itself: which part of the memory it views depends on the trace."""
        if array.base is None:
            self.traced[id(array)] = _Ref(array)
            return
        owner = memory_owner(array)
        if owner is array:
            self.traced[id(owner)] = _Ref(owner)
        elif not (self.is_traced(owner) or self._is_fixed(owner)):
            self.views[id(array)] = _Ref(array)

    def note_fixed(self, array: np.ndarray) -> None:
        owner = memory_owner(array)
        self.fixed[id(owner)] = _Ref(owner)

    def _is_fixed(self, owner: np.ndarray) -> bool:
        ref = self.fixed.get(id(owner))
        return ref is not None and ref() is owner

    def is_traced(self, owner: np.ndarray) -> bool:
        ref = self.traced.get(id(owner))
        return ref is not None and ref() is owner


class _Folds(threading.local):
    def __init__(self) -> None:
        #: the open folds of this thread, innermost last
        self.stack: list[Fold] = []


_FOLDS = _Folds()


def note_untracked(inputs: Any, outputs: Any) -> None:
    """The executor ran an op on ``inputs`` (Tensors) without recording it, computing
    ``outputs`` (Tensors): every open fold of this thread notes where the outputs come from."""
    stack = _FOLDS.stack
    if not stack:
        return  # a fold is open in another thread
    for fold in stack:
        roots: dict[int, Root] = {}
        for x in inputs:
            array = getattr(x, "_array", None)
            if array is not None:
                roots.update(fold.roots(array))
        for out in outputs:
            array = out._array
            fold.origin[id(array)] = (_Ref(array), roots)


def note_traced(array: np.ndarray) -> None:
    """``array`` holds a value a trace recorded (the trace's recorder calls this): every open
    fold of this thread notes it (an inner trace's values come from the outer one's)."""
    for fold in _FOLDS.stack:
        fold.note_traced(array)


def fold_roots(array: np.ndarray) -> list[np.ndarray]:
    """The live memory ``array``'s values were computed from, as the innermost open fold of
    this thread saw it (``[memory_owner(array)]`` with none open)."""
    stack = _FOLDS.stack
    if not stack:
        return [memory_owner(array)]
    return [owner for ref, _ in stack[-1].roots(array).values() if (owner := ref()) is not None]


class folding:
    """Open a ``Fold`` for the block (``with folding() as fold:``): the executor reports the ops
    it runs without recording in this thread to it."""

    __slots__ = ("fold",)

    def __init__(self) -> None:
        self.fold = Fold()

    def __enter__(self) -> Fold:
        _FOLDS.stack.append(self.fold)
        with _LOCK:
            WATCHING[0] += 1
        return self.fold

    def __exit__(self, *exc: object) -> None:
        with _LOCK:
            WATCHING[0] -= 1
        _FOLDS.stack.remove(self.fold)
