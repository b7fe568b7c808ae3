"""Recording of tracked eager ops.

``Tensor.requires_grad_()`` or ``runtime.asarray(..., requires_grad=True)``
makes a tracked leaf. Each op with at least one tracked input is recorded:
untracked inputs become constant leaves that reference the same array, and every
operand whose dtype differs from its plan target gets an explicit ``convert``
equation, from the same ``plan`` call eager execution made. Ops with no tracked
input record nothing. A single-result op is recorded lazily (``runtime.core.tape``):
a pending record in its result, turned into those equations when ``Tensor.node``
is read; any other op through ``runtime.core.graph.record_op`` at once.

Recording state is thread-local: ``no_grad()`` turns it off for the current
thread only, and the recorded values hang off the tensors, so two threads
build independent graphs.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from autodiff.rules import VJP_SAVES, saves_other_operand
from runtime.core import hooks, ops, tape, versions
from runtime.core.dtypes import DType
from runtime.core.graph import Eqn, Keep, Var, const_var, record_op
from runtime.core.ops import OpDef
from runtime.core.tensor import Tensor
from runtime.core.versions import CLOCK as _CLOCK

#: a pending record's fields (``runtime.core.tape``) that the inlined binary case writes
_VALUE, _VAR = tape.VALUE, tape.VAR


class _SaveState(threading.local):
    #: > 0 inside ``saving_all()``: recordings hold every value (forward mode reads them all)
    depth: int = 0


_SAVE = _SaveState()
#: how many ``saving_all`` blocks are open in any thread (the recorder only looks
#: at its thread's own count when one is)
_SAVING_ANYWHERE = [0]
_SAVING_LOCK = threading.Lock()
#: open ``saving_all`` and ``detect_writes`` blocks in all threads together (``record_binary``
#: looks at one number)
_SPECIAL_ANYWHERE = [0]

#: ``VJP_SAVES`` resolved per op: a positions tuple, ``None`` (hold everything),
#: ``_OTHER`` (mul, dot_general) or the needs-dependent function
_OTHER: Any = object()
_UNRESOLVED: Any = object()
_SAVES_BY_OP: dict[OpDef, Any] = {}
#: ``saves_other_operand`` precomputed, indexed [x untracked][y untracked]: the hot path
#: builds and hashes no tuple
_OTHER_KEEP = tuple(
    tuple(saves_other_operand((not x_free, not y_free)) for y_free in (False, True)) for x_free in (False, True)
)
#: the positions a needs-dependent ``VJP_SAVES`` entry gives, per (op, needs)
_KEEP: dict[tuple[OpDef, tuple[bool, ...]], Any] = {}
#: the module's caches derived from ``VJP_SAVES`` (a test that changes an entry replaces them all)
SAVES_CACHES = ("_SAVES_BY_OP", "_KEEP", "_UNARY", "_BINARY")


def _resolve_saves(op: OpDef) -> Any:
    saves = VJP_SAVES.get(op.name)
    resolved = _OTHER if saves is saves_other_operand else saves
    if VJP_SAVES:  # (before the rule modules are loaded, decide again next time)
        _SAVES_BY_OP[op] = resolved
    return resolved


def record_eager(
    op: OpDef,
    params: dict[str, Any],
    inputs: Sequence[Tensor],
    targets: tuple[DType, ...],
    outputs: Sequence[Tensor],
    target_shapes: Sequence[tuple[int, ...]] | None = None,
) -> None:
    """The recorder ``autodiff`` installs into ``runtime.core.hooks``.

    The recording holds only the values the op's VJP rule reads
    (``autodiff.rules.VJP_SAVES``), so intermediates nobody needs are freed
    as soon as eager code drops them. This runs for every tracked op: a
    single-output op without a shape plan is recorded lazily, as a pending record
    in the result's ``Tensor._node`` (``runtime.core.tape``), whose equation is built
    when something reads ``.node``. ``target_shapes`` (the shape plan, given only
    when eager execution broadcast an operand) makes the recording write
    ``broadcast_in_dim`` equations, at once.
    """
    if target_shapes is not None or len(outputs) != 1 or _DETECTING_ANYWHERE[0]:
        _record_now(op, params, inputs, targets, outputs, target_shapes)
    elif len(inputs) == 2:
        record_binary(op, params, inputs[0], inputs[1], targets, outputs[0])
    elif len(inputs) == 1 and not _SPECIAL_ANYWHERE[0]:
        _record_unary(op, params, inputs[0], targets, outputs[0])
    else:
        tape.push(op, params, inputs, targets, outputs[0], _keep(op, inputs))


def _record_unary(op: OpDef, params: dict[str, Any], x: Tensor, targets: Any, out: Tensor) -> None:
    """``tape.push`` for a one-operand op (its operand is the tracked input), inlined, with
    what it holds looked up once per op."""
    entry = _UNARY.get(op)
    if entry is None:
        entry = _unary_entry(op)
    keep, hold_x, hold_out = entry
    node = x._node
    if type(node) is list:  # a pending record (its Var, once built)
        built = node[_VAR]
        if built is not None:
            node = built
            if hold_x and built.value is None:
                built.value = x._array
        elif hold_x and node[_VALUE] is None:
            node[_VALUE] = x._array
            _built_meanwhile(node, x._array)
    elif hold_x and node.value is None:
        node.value = x._array
    array = out._array
    dtype = out.dtype
    out._node = [op, params, (node,), targets, keep, _CLOCK[0], dtype, array.shape, out.weak,
                 array if hold_out else None, None]  # fmt: skip
    out._requires_grad = dtype.is_inexact


#: per one-operand op: (keep, hold the operand, hold the result)
_UNARY: dict[OpDef, Any] = {}


def _unary_entry(op: OpDef) -> Any:
    keep = _keep_for(op, (True,))
    entry = (None, True, True) if keep is None else (keep, 0 in keep[0], bool(keep[1]))
    if VJP_SAVES:  # (before the rule modules are loaded, decide again next time)
        _UNARY[op] = entry
    return entry


def record_binary(op: OpDef, params: dict[str, Any], a: Tensor, b: Tensor, targets: Any, out: Tensor) -> None:
    """``record_eager`` for a two-operand, one-result op without a shape plan: what
    ``apply_binary`` calls (``hooks.BINARY``), the bulk of recordings. ``tape.push``, inlined,
    with what it holds looked up once per (op, which operands are tracked)."""
    if _SPECIAL_ANYWHERE[0]:  # a saving_all or detect_writes block is open in some thread
        if _DETECTING_ANYWHERE[0] and _DETECT.depth:
            _record_now(op, params, (a, b), targets, (out,), None)
        else:
            tape.push(op, params, (a, b), targets, out, _keep(op, (a, b)))
        return
    na, nb = a._node, b._node
    table = _BINARY.get(op)
    if table is None:
        table = _binary_table(op)
    keep, hold_a, hold_b, hold_out = table[na is None][nb is None]
    if na is None:
        na = a._const
        if na is None or na.const is not a._array:
            na = const_var(a)
    elif type(na) is list:  # a pending record (its Var, once built)
        built = na[_VAR]
        if built is not None:
            na = built
            if hold_a and built.value is None:
                built.value = a._array
        elif hold_a and na[_VALUE] is None:
            na[_VALUE] = a._array
            _built_meanwhile(na, a._array)
    elif hold_a and na.value is None:
        na.value = a._array
    if nb is None:
        nb = b._const
        if nb is None or nb.const is not b._array:
            nb = const_var(b)
    elif type(nb) is list:
        built = nb[_VAR]
        if built is not None:
            nb = built
            if hold_b and built.value is None:
                built.value = b._array
        elif hold_b and nb[_VALUE] is None:
            nb[_VALUE] = b._array
            _built_meanwhile(nb, b._array)
    elif hold_b and nb.value is None:
        nb.value = b._array
    array = out._array
    dtype = out.dtype
    out._node = [op, params, (na, nb), targets, keep, _CLOCK[0], dtype, array.shape, out.weak,
                 array if hold_out else None, None]  # fmt: skip
    out._requires_grad = dtype.is_inexact


def _built_meanwhile(record: list[Any], array: Any) -> None:
    """After a recorder set a pending record's value: if another thread built the record's
    Var in between (``tape.materialise`` publishes the Var, then reads the value), the Var
    gets the value too."""
    built = record[_VAR]
    if built is not None and built.value is None:
        built.value = array


#: per binary op, indexed [x untracked][y untracked]: (keep, hold x, hold y, hold the result)
_BINARY: dict[OpDef, Any] = {}


def _binary_table(op: OpDef) -> Any:
    """``_BINARY``'s entry for ``op``: what a recording with each pattern of tracked
    operands keeps (``_keep``), and so which values it holds."""
    rows = []
    for x_free in (False, True):
        row: list[tuple[Keep, bool, bool, bool]] = []
        for y_free in (False, True):
            needs = (not x_free, not y_free)
            keep = _keep_for(op, needs)
            if keep is None:
                row.append((None, True, True, True))
            else:
                row.append((keep, 0 in keep[0], 1 in keep[0], bool(keep[1])))
        rows.append(tuple(row))
    table = tuple(rows)
    if VJP_SAVES:  # (before the rule modules are loaded, decide again next time)
        _BINARY[op] = table
    return table


def _keep(op: OpDef, inputs: Sequence[Tensor]) -> Keep:
    """The values a recording of ``op`` on ``inputs`` holds: what its VJP rule reads
    (``autodiff.rules.VJP_SAVES``), or everything inside ``saving_all``."""
    if _SAVING_ANYWHERE[0] and _SAVE.depth:
        return None
    # which inputs may want a cotangent: the tracked ones (a superset of what
    # the backward pass asks for, so nothing a rule reads is dropped)
    return _keep_for(op, tuple([x._node is not None for x in inputs]))


def _keep_for(op: OpDef, needs: tuple[bool, ...]) -> Keep:
    saves = _SAVES_BY_OP.get(op, _UNRESOLVED)
    if saves is _UNRESOLVED:
        saves = _resolve_saves(op)
    if saves is None or type(saves) is tuple:
        return saves  # type: ignore[no-any-return]
    if saves is _OTHER:  # mul, dot_general: each operand's cotangent reads the other one
        return _OTHER_KEEP[not needs[0]][not needs[1]]  # type: ignore[no-any-return]
    keep = _KEEP.get((op, needs))
    if keep is None:
        keep = _KEEP[op, needs] = saves(needs)
    return keep  # type: ignore[no-any-return]


def _record_now(
    op: OpDef,
    params: dict[str, Any],
    inputs: Sequence[Tensor],
    targets: tuple[DType, ...],
    outputs: Sequence[Tensor],
    target_shapes: Sequence[tuple[int, ...]] | None,
) -> None:
    """``record_eager`` writing the equation at once (``record_op``): a broadcasting op, an
    op with several results, or any op inside ``detect_writes`` (its checksums are taken now)."""
    if target_shapes is not None:
        # rare: the operands' values are held (the VJP reads the broadcast ones, which
        # are recomputed from them)
        record_op(op, params, inputs, targets, outputs, None, target_shapes)
        return
    record_op(op, params, inputs, targets, outputs, _keep(op, inputs))
    if _DETECTING_ANYWHERE[0]:
        _detect(outputs)


class _DetectState(threading.local):
    #: > 0 inside ``detect_writes()`` in this thread
    depth: int = 0


_DETECT = _DetectState()
#: how many ``detect_writes`` blocks are open in any thread (one check on the hot path)
_DETECTING_ANYWHERE = [0]


def _detect(outputs: Sequence[Tensor]) -> None:
    if _DETECT.depth:
        take_checksums(outputs[0].node.producer)


@contextmanager
def saving_all() -> Iterator[None]:
    """Recordings in this thread hold every value inside the block (``linearize``:
    JVP rules read all primals, and a value not held would be recomputed)."""
    _SAVE.depth += 1
    with _SAVING_LOCK:
        _SAVING_ANYWHERE[0] += 1
        _SPECIAL_ANYWHERE[0] += 1
    try:
        yield
    finally:
        _SAVE.depth -= 1
        with _SAVING_LOCK:
            _SAVING_ANYWHERE[0] -= 1
        _SPECIAL_ANYWHERE[0] -= 1


def no_grad() -> hooks.recorder_override:
    """Record nothing in this thread inside the block (results are untracked)."""
    return hooks.recorder_override(None)


def enable_grad() -> hooks.recorder_override:
    """Record again inside a ``no_grad`` block."""
    return hooks.recorder_override(record_eager)


def is_recording() -> bool:
    """True when ops with tracked inputs are recorded in this thread."""
    return hooks.current_recorder() is not None


hooks.install_recorder(record_eager)
hooks.register_binary(record_eager, record_binary)


def _reads(eqn: Eqn, everything: bool) -> list[tuple[str, int, Var]]:
    """The values a rule of ``eqn`` reads: all of them for forward mode, else the saved
    ones (``eqn.keep``) and every integer or bool value (rules read those regardless)."""
    keep = None if everything else eqn.keep
    out = []
    for kind, vars_, positions in (
        ("input", eqn.inputs, None if keep is None else keep[0]),
        ("output", eqn.outputs, None if keep is None else keep[1]),
    ):
        for i, v in enumerate(vars_):
            if positions is None or i in positions or not v.dtype.is_inexact:
                out.append((kind, i, v))
    return out


# -- detect_writes: checksums of saved values ---------------------------------------------------


def take_checksums(eqn: Eqn) -> None:
    """Store checksums of the values ``eqn``'s rules will read (the recorder calls this
    inside ``detect_writes``); ``check_recording`` compares them before a pass."""
    everything = eqn.keep is None
    digests = []
    for kind, i, var in _reads(eqn, everything):
        pending = [var]
        while pending:  # an unmaterialised convert: its input is what will be read
            v = pending.pop()
            if v.value is not None:
                digests.append(((kind, i, var), v.value, versions.digest(v.value)))
            elif v.producer is not None:
                pending.extend(v.producer.inputs)
    snapshot = versions.Snapshot(eqn.clock)
    snapshot.digests = digests
    eqn.clock = snapshot
    versions.CHECKSUMMED[0] = True


@contextlib.contextmanager
def detect_writes() -> Iterator[None]:
    """Debug mode: ops recorded in this thread inside the block also store a checksum of
    every value their derivative will read, and ``backward``/``vjp``/``jvp`` compare it
    first, raising ``SavedValueModifiedError`` if the contents changed. This catches what
    version counters cannot: writes that bypass castwise (``t.numpy()[...] = v``, NumPy
    ``out=``, writes into the user's own array a Tensor wraps). It costs a hash of each
    saved value per recorded op.
    """
    _DETECT.depth += 1
    with _SAVING_LOCK:
        _DETECTING_ANYWHERE[0] += 1
        _SPECIAL_ANYWHERE[0] += 1
    try:
        yield
    finally:
        _DETECT.depth -= 1
        with _SAVING_LOCK:
            _DETECTING_ANYWHERE[0] -= 1
        _SPECIAL_ANYWHERE[0] -= 1


def _fresh_input(t: Tensor) -> Tensor:
    """A new variable of one transform holding ``t``'s value: ``convert(constant)``, recorded.

    The transform differentiates with respect to it (it is the walk's boundary), while
    anything recorded around the transform sees a constant behind it: when the derivative is
    itself recorded (``jit(lambda x: grad(lambda y: x * y * y)(1.0))``, a closure over an
    outer value) the result may read this value, and a graph input the outer trace does not
    know would make it untraceable. The constant wraps a private Tensor, so ``t`` itself is
    not held by the recording (in-place writes into it stay allowed, checked by versions).
    """
    source = Tensor(t._array, t.dtype)
    fresh = Tensor(t._array, t.dtype)
    params: dict[str, Any] = {"new_dtype": t.dtype}
    if t.weak:  # a weak primal (a Python float) stays weak, as in jax.jvp
        source.weak = fresh.weak = True
        params["weak_type"] = True
    record_op(ops.convert, params, (source,), (t.dtype,), (fresh,))
    assert fresh.node is not None
    FRESH_INPUTS[fresh.node] = next(_SERIAL)
    return fresh


#: each transform input ``_fresh_input`` made, with a serial number (increasing): a custom
#: function's closure check tells a transform's input made inside the function (an inner
#: transform's) from one made outside it (a value the function closes over)
FRESH_INPUTS: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_SERIAL = itertools.count()


def fresh_serial() -> int:
    """The serial number the next transform input will get."""
    return next(_SERIAL)
