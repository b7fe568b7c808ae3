"""Recording of tracked eager ops.

``Tensor.requires_grad_()`` or ``runtime.asarray(..., requires_grad=True)``
makes a tracked leaf. Each op with at least one tracked input is recorded by
``runtime.core.graph.record_op``: untracked inputs become constant leaves that
reference the same array, and every operand whose dtype differs from its plan
target gets an explicit ``convert`` equation, from the same ``plan`` call
eager execution made. Ops with no tracked input record nothing.

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
from runtime.core import hooks, ops, versions
from runtime.core.dtypes import DType
from runtime.core.graph import Eqn, Var, record_op
from runtime.core.ops import OpDef
from runtime.core.tensor import Tensor


class _SaveState(threading.local):
    #: > 0 inside ``saving_all()``: recordings hold every value (forward mode reads them all)
    depth: int = 0


_SAVE = _SaveState()
#: how many ``saving_all`` blocks are open in any thread (the recorder only looks
#: at its thread's own count when one is)
_SAVING_ANYWHERE = [0]
_SAVING_LOCK = threading.Lock()

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
    as soon as eager code drops them. This runs for every tracked op.
    ``target_shapes`` (the shape plan, given only when eager execution broadcast
    an operand) makes the recording write ``broadcast_in_dim`` equations.
    """
    if target_shapes is not None:
        # rare: the operands' values are held (the VJP reads the broadcast ones, which
        # are recomputed from them)
        record_op(op, params, inputs, targets, outputs, None, target_shapes)
        return
    saves = _SAVES_BY_OP.get(op, _UNRESOLVED)
    if saves is _UNRESOLVED:
        saves = _resolve_saves(op)
    if saves is None or (_SAVING_ANYWHERE[0] and _SAVE.depth):
        record_op(op, params, inputs, targets, outputs)
    elif saves is _OTHER:  # mul, dot_general: each operand's cotangent reads the other one
        record_op(
            op, params, inputs, targets, outputs,
            _OTHER_KEEP[inputs[0].node is None][inputs[1].node is None],
        )  # fmt: skip
    elif type(saves) is tuple:
        record_op(op, params, inputs, targets, outputs, saves)
    else:
        # which inputs may want a cotangent: the tracked ones (a superset of what
        # the backward pass asks for, so nothing a rule reads is dropped)
        needs = tuple([x.node is not None for x in inputs])
        keep = _KEEP.get((op, needs))
        if keep is None:
            keep = _KEEP[op, needs] = saves(needs)
        record_op(op, params, inputs, targets, outputs, keep)
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
    try:
        yield
    finally:
        _SAVE.depth -= 1
        with _SAVING_LOCK:
            _SAVING_ANYWHERE[0] -= 1


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
    try:
        yield
    finally:
        _DETECT.depth -= 1
        with _SAVING_LOCK:
            _DETECTING_ANYWHERE[0] -= 1


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
