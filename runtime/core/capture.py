"""What a traced program captured, checked against the in-place writes made since.

A trace (``runtime.trace``, ``autodiff.jit``, ``autodiff.vmap``'s recording of one
example) runs the function once, eagerly, and keeps the equations it recorded. Its
replay (``evaluate``, the compiled program, the batched replay) reads what the trace
captured *by reference*: each constant's memory as it is when the replay runs, and
the equations in place of the values they computed. Eager execution read each value
at the moment its op ran. The two agree unless memory changed in between, through
an in-place write (``x += 1``, ``x.detach().add_(1)``, a write through a view), so
``check_capture`` compares every captured value with the write clock
(``runtime.core.versions``) at the end of the trace:

* an argument written while the function was traced: the program cannot replay a
  write into its argument (``InPlaceError``);
* a constant written after an op of the trace read it (the replay would run that op
  on the new values), and a recorded value written after it was computed (the replay
  computes it again, without the write): ``SavedValueModifiedError``. A write into a
  temporary *before* its first use is what eager code sees too, and passes;
* a constant that holds this call's values of the arguments (an op on ``detach()`` of
  a traced value, or one inside ``no_grad()``: the result is not recorded, so it is
  folded into the program as it is): ``TracedConstantError``.

What passes is summed up in a ``Captured``: the memory of each constant, and the
memory each folded constant was computed from (``runtime.core.versions.Fold``). A
later write into any of it makes ``Captured.stale()`` say so: ``autodiff.jit``'s
guard raises before it runs the compiled program, ``evaluate`` before it runs a
traced graph.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from runtime.core.errors import CastwiseError
from runtime.core.inplace import InPlaceError, SavedValueModifiedError
from runtime.core.versions import CLOCK, Fold, memory_owner, written_between, written_since

if TYPE_CHECKING:
    from runtime.core.graph import Eqn, Var


class TracedConstantError(CastwiseError, ValueError):
    """A traced program (``runtime.trace``, ``autodiff.jit``, ``autodiff.vmap``) would hold
    values of its arguments as a constant: the function read them outside the recording
    (an op on ``detach()`` of a traced value, or inside ``no_grad()``), so every later call
    (every example, under ``vmap``) would get the values of the call that was traced."""


def _aval(array: np.ndarray) -> str:
    return f"{array.dtype}{list(array.shape)}"


_WRITE_HOW = "through a Tensor sharing its memory (a view, detach(), another asarray of the same NumPy array)"


class Captured:
    """The memory a traced program reads as it was when the trace ended (``clock``): its
    constants, and what its folded constants were computed from. Weak references: memory
    nobody holds any more cannot be written."""

    __slots__ = ("checked", "clock", "watched", "where")

    def __init__(self, where: str, clock: int, watched: list[tuple[str, weakref.ref[np.ndarray]]]) -> None:
        #: (kind, weak reference to the memory): ``_CLOSED_OVER`` or ``_FOLDED``
        self.where = where
        self.clock = clock
        self.watched = watched
        #: the write clock when ``stale`` last found nothing (one compare while it is unchanged)
        self.checked = clock

    def stale(self) -> tuple[str, tuple[int, str]] | None:
        """``None``, or what was written since the trace (a description, and the versions
        ``written_since`` gives)."""
        now = CLOCK[0]
        if now == self.checked:
            return None
        for kind, ref in self.watched:
            owner = ref()
            if owner is not None and (hit := written_since(owner, self.clock)) is not None:
                return _describe(kind, owner), hit
        self.checked = now
        return None

    def check(self, where: str) -> None:
        """Raise ``SavedValueModifiedError`` if ``stale()`` finds a write."""
        found = self.stale()
        if found is None:
            return
        what, (now, then) = found
        raise SavedValueModifiedError(
            f"{where}: {what} was written in place after {self.where} traced it (its memory is at version "
            f"{now} now, {then} when traced), {_WRITE_HOW}. The program keeps what the trace computed "
            "from it, so it would disagree with the function. Pass the array as an argument instead, or "
            "write into a copy of it; to use the new values, trace the function again."
        )


def check_capture(
    where: str,
    eqns: Sequence[Eqn],
    arguments: Sequence[tuple[str, Var]],
    outputs: Sequence[Var],
    start: int,
    fold: Fold,
    varying: Sequence[Var] | None = None,
    held: Iterable[np.ndarray] = (),
    per: str = "call",
    given: Sequence[Any] = (),
) -> Captured:
    """Check what a trace captured (see the module docstring); return it as a ``Captured``.

    ``eqns`` are the program's equations in topological order, ``arguments`` its inputs
    (a description and the leaf), ``outputs`` its results, ``start`` the write clock when
    the function started, ``fold`` what the trace saw of the ops it did not record.
    ``varying``: the arguments whose values change from one ``per`` (call, example) to the
    next (``None``: all of them; then the result also lists what a later write would make
    stale: ``vmap``, which replays at once, passes its mapped arguments); ``held``: arrays
    the program holds as results besides its constants; ``given``: the Tensors the caller
    passed (a constant made from one of them is an array the function closes over that the
    caller also passed, not the traced argument's values: it stays what it is).
    """
    moved = CLOCK[0] != start
    inside = {id(e) for e in eqns}
    if not moved and varying is not None and _nothing_suspect(eqns, inside, arguments, held, fold):
        return Captured(where, CLOCK[0], [])  # (vmap's every call, in the common case)
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    read: dict[int, Var] = {}
    for eqn in eqns:
        clock = int(eqn.clock)
        for v in eqn.inputs:
            key = id(v)
            if key not in read:
                read[key] = v
                first[key] = last[key] = clock
            elif moved:
                first[key] = min(first[key], clock)
                last[key] = max(last[key], clock)
    argument_ids = {id(v) for _, v in arguments}
    # what the program reads as it is (a constant, a value of an enclosing recording; an
    # unmaterialised convert of a constant stands for its input), with the first read
    captured: list[tuple[Var, np.ndarray, int]] = []
    computed: list[Var] = []
    for key, v in read.items():
        if key in argument_ids:
            continue
        if v.producer is not None and id(v.producer) in inside:
            computed.append(v)
            continue
        if v.const is not None:  # (the common case, without the walk)
            captured.append((v, v.const, first[key]))
            continue
        pending, seen = [v], set()
        while pending:
            u = pending.pop()
            if id(u) in seen:
                continue
            seen.add(id(u))
            array = u.const if u.const is not None else u.value
            if array is not None:
                captured.append((u, array, first[key]))
            elif u.producer is not None:
                pending.extend(u.producer.inputs)
    for v in outputs:
        if id(v) in read or id(v) in argument_ids:
            continue
        if v.producer is not None and id(v.producer) in inside:
            computed.append(v)
        elif v.const is not None:
            captured.append((v, v.const, CLOCK[0]))
    if moved:
        _check_writes(where, arguments, captured, computed, {id(v) for v in outputs}, last, start)
    own = {id(c) for t in given if (c := getattr(t, "_const", None)) is not None}
    consts = [(array, u.const is not None and id(u) in own) for u, array, _ in captured if u.const is not None]
    consts += [(array, False) for array in held]
    return _check_constants(where, eqns, arguments, consts, fold, varying, per)


def _nothing_suspect(
    eqns: Sequence[Eqn], inside: set[int], arguments: Sequence[tuple[str, Var]], held: Iterable[np.ndarray], fold: Fold
) -> bool:
    """Whether no constant could hold a traced value (``_check_constants``' test, without
    building anything): every constant owns memory that is neither an argument's, nor
    traced, nor computed by an untracked op, and nothing is read from outside the program."""
    traced, origin, views = fold.traced, fold.origin, fold.views
    args = {id(_owner(v.value)) for _, v in arguments if v.value is not None}
    for eqn in eqns:
        for v in eqn.inputs:
            array = v.const
            if array is None:
                if v.producer is not None and id(v.producer) not in inside:
                    return False  # a value from outside the program (vmap's CONST and OUTER kinds)
                continue
            root = array if array.base is None else memory_owner(array)
            key = id(root)
            if key in args or key in origin or id(array) in origin:
                return False
            ref = traced.get(key)
            if ref is not None and ref() is root:
                return False
            ref = views.get(id(array))
            if ref is not None and ref() is array:
                return False
    for array in held:
        root = _owner(array)
        if id(root) in args or id(root) in origin or id(array) in origin or fold.is_traced(root):
            return False
        if id(array) in views:
            return False
    return True


def _owner(array: np.ndarray) -> np.ndarray:
    return array if array.base is None else memory_owner(array)


def _check_writes(
    where: str,
    arguments: Sequence[tuple[str, Var]],
    captured: Sequence[tuple[Var, np.ndarray, int]],
    computed: Sequence[Var],
    output_ids: set[int],
    last: dict[int, int],
    start: int,
) -> None:
    for name, v in arguments:
        if v.value is not None and (hit := written_since(v.value, start)) is not None:
            raise InPlaceError(
                f"{where}: {name} ({v.type_str()}) was written in place while the function was traced (its "
                f"memory is at version {hit[0]} now, {hit[1]} before), {_WRITE_HOW}. The traced program "
                "cannot replay a write into its argument: it would compute from the values the argument "
                "came with and leave it unchanged, where the function writes it on every call. Return the "
                "new value instead (x = x + 1), or write into a copy (x.copy())."
            )
    for u, array, clock in captured:
        hit = written_since(array, clock)
        if hit is not None:
            kind = "constant of the trace (an array the function closes over or made)"
            if u.const is None:
                kind = "value of an enclosing recording that the function read"
            raise SavedValueModifiedError(
                f"{where}: a {_aval(array)} {kind} was written in place after an op of the trace read it "
                f"(its memory is at version {hit[0]} now, {hit[1]} then), {_WRITE_HOW}. The traced program "
                "reads it when it runs, so it would run that op on the new values, where the function ran "
                "it on the old ones. Make the write before the array's first use, or write into a copy."
            )
    for v in computed:
        if v.value is None or v.producer is None:
            continue
        until = None if id(v) in output_ids else last.get(id(v))
        hit = written_between(v.value, int(v.producer.clock), until)
        if hit is not None:
            raise SavedValueModifiedError(
                f"{where}: the {v.type_str()} result of {v.producer.op.name} was written in place after it was "
                f"computed (its memory is at version {hit[0]} now, {hit[1]} then), {_WRITE_HOW}. The traced "
                "program computes it again, without the write, so it would disagree with the function. "
                "Compute the new value out of place (y = y + 1)."
            )


def _check_constants(
    where: str,
    eqns: Sequence[Eqn],
    arguments: Sequence[tuple[str, Var]],
    consts: Sequence[tuple[np.ndarray, bool]],
    fold: Fold,
    varying: Sequence[Var] | None,
    per: str,
) -> Captured:
    """No constant may hold (or be computed from) memory whose values change per ``per``
    (``TracedConstantError``); what the constants are and were computed from is what the
    program goes stale with (the ``Captured``, when ``varying`` is ``None``).

    Each constant (``consts``: an array, and whether it is one the caller passed as well
    as closing over it) is a suspect when its memory held a traced value (``fold.traced``,
    which the trace's recorder and arguments filled) or an argument's, or when an untracked
    op computed it. Only then (or for a ``trace`` / ``jit``, once per signature) the program
    is walked for the memory of every value that depends on a changing argument."""
    watch = varying is None
    changing = [v for _, v in arguments] if varying is None else list(varying)
    names = {}
    for name, v in arguments:
        if v.value is not None:
            names[id(_owner(v.value))] = f"{name} ({v.type_str()})"
    if not watch:  # (vmap, on every call: the common case, nothing suspect, costs a lookup or two per constant)
        origin = fold.origin
        for array, closed_over in consts:
            root = _owner(array)
            if not closed_over and (
                id(root) in names
                or fold.is_traced(root)
                or id(array) in origin
                or id(root) in origin
                or id(array) in fold.views
            ):
                break
        else:
            return Captured(where, CLOCK[0], [])
    found: list[tuple[np.ndarray, np.ndarray, bool, dict[int, Any]]] = []
    for array, closed_over in consts:
        root = _owner(array)
        found.append((array, root, closed_over, {} if closed_over else fold.roots(array)))
    owners: dict[int, str] = {}
    fixed: set[int] = set()
    owners, fixed = _dependent_memory(eqns, arguments, changing, varying, names, fold)
    watched: dict[int, tuple[str, weakref.ref[np.ndarray]]] = {}
    for array, root, closed_over, roots in found:
        hit = None if closed_over else owners.get(id(root))
        live: dict[int, weakref.ref[np.ndarray]] = {}
        for key, (ref, traced) in roots.items():
            if ref() is None:  # gone: it cannot be written again, and its id may be another array's now
                if traced:
                    hit = hit or "a traced value"
                continue
            if traced and key not in fixed:
                hit = hit or owners.get(key, "a traced value")
            elif key in owners:
                hit = hit or owners[key]
            live[key] = ref
        if hit is not None:
            raise TracedConstantError(
                f"{where}: a {_aval(array)} constant of the trace holds values of {hit} (or was computed "
                "from them): the function read them outside the recording (an op on detach() of a traced "
                f"value, or inside no_grad()), so the program would use the values of this {per} for every "
                f"{per}. Compute it from the traced value itself (rt.lax.stop_gradient(x) cuts its derivative "
                "and keeps it traced), or pass it as an argument of its own."
            )
        if watch:
            if id(root) in live or closed_over or not roots:
                watched.setdefault(id(root), (_CLOSED_OVER, weakref.ref(root)))
            for key, ref in live.items():
                if key != id(root):
                    watched.setdefault(key, (_FOLDED, ref))
    return Captured(where, CLOCK[0], list(watched.values()))


def _dependent_memory(
    eqns: Sequence[Eqn],
    arguments: Sequence[tuple[str, Var]],
    changing: Sequence[Var],
    varying: Sequence[Var] | None,
    names: dict[int, str],
    fold: Fold,
) -> tuple[dict[int, str], set[int]]:
    """The memory whose values change per call or example (``id(owner) -> what it holds``),
    and the memory that does not: constants (a recorded view of one, a ``dynamic_slice`` of a
    closed-over array at a traced index, still views the constant's memory), ``vmap``'s
    unmapped arguments and what only they compute. A changing argument's memory changes
    whatever else views it."""
    dependent = {id(v) for v in changing}
    owners: dict[int, str] = {}
    for v in changing:
        if v.value is not None:
            key = id(_owner(v.value))
            owners[key] = names.get(key, "an argument")
    fixed: set[int] = set()
    computed: dict[int, str] = {}
    for eqn in eqns:
        depends = False
        for v in eqn.inputs:
            if id(v) in dependent:
                depends = True
            elif (a := v.const if v.const is not None else v.value) is not None:
                fixed.add(id(_owner(a)))
        for out in eqn.outputs:
            if depends:
                dependent.add(id(out))
            if out.value is not None:
                key = id(_owner(out.value))
                if depends:
                    computed.setdefault(key, f"the {eqn.op.name} result")
                else:
                    fixed.add(key)
    for _, v in arguments:
        if varying is not None and v not in changing and v.value is not None:
            fixed.add(id(_owner(v.value)))
    for key, what in computed.items():
        if key not in fixed:
            owners.setdefault(key, what)
    for key, ref in fold.traced.items():
        if key not in fixed and key not in owners and ref() is not None:
            owners[key] = "a traced value"
    return owners, fixed


_CLOSED_OVER = "closed"
_FOLDED = "folded"


def _describe(kind: str, owner: np.ndarray) -> str:
    if kind == _CLOSED_OVER:
        return f"a {_aval(owner)} array the function closes over"
    return (
        f"a {_aval(owner)} array that a constant of the program was computed from (ops without a traced "
        "operand: rt.cos(c), or a derivative that only depends on c)"
    )
