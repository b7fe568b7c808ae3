"""Lazy recordings: a tracked eager op writes one small record, and its ``Eqn``/``Var`` are
built only when something reads the result's ``Tensor.node``.

Recording an op as an equation costs an ``Eqn``, a ``Var``, a weak reference and two
calls; most recorded values are read only by the next op's recording, and the graph
objects are needed only when a derivative, a trace or the printer walks the recording.
So the recorder (``autodiff.record``) stores, in the result's ``Tensor._node`` slot, a
*pending record*: a plain list (the cheapest object CPython builds) holding the op, its
params, the input nodes (a ``Var``, or another pending record), the planned dtypes, the
saved-positions ``keep``, the write clock, the output's aval and weak flag, and the output
array when a derivative rule will read it. ``Tensor.node`` (a property) turns the record
and every pending record it depends on into the equations ``record_op`` would have
written, at the first read, iteratively (a 100,000-op chain is fine), and caches the
``Var`` in the record and in the Tensor.

What the record holds is exactly what the equation would hold: the output array only
when ``keep`` saves it, an input's array only when ``keep`` saves that input (set on the
input's record, or on its ``Var`` once built), the untracked operands' shared constant
leaves (``const_var``, which in-place writes count), and the write clock at record time
(what version counters compare a saved value's memory against). So memory, the in-place
refusals and ``SavedValueModifiedError`` behave as they did with eager equations.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

from runtime.core import tensor as tensor_module
from runtime.core.dtypes import DType
from runtime.core.graph import Eqn, Keep, Var, _convert_eqn, _converted_weak_flag, const_var
from runtime.core.ops import OpDef
from runtime.core.tensor import Tensor
from runtime.core.versions import CLOCK as _CLOCK

#: the fields of a pending record (a list, indexed by these)
OP, PARAMS, INS, TARGETS, KEEP, CLOCK, DTYPE, SHAPE, WEAK, VALUE, VAR = range(11)

#: materialising is serialised: two threads reading ``.node`` of one record (or of two that
#: share an input) must get the same ``Var``
_LOCK = threading.RLock()


def is_pending(node: Any) -> bool:
    """Whether ``node`` (a ``Tensor._node`` slot's content) is a pending record."""
    return type(node) is list


def materialise(record: list[Any]) -> Var:
    """The ``Var`` of a pending record: built (with its ``Eqn``, its plan ``convert``
    equations and every pending input's) on the first call, the same object after."""
    var = record[VAR]
    if var is not None:
        return var  # type: ignore[no-any-return]
    with _LOCK:
        stack = [record]
        while stack:  # iterative post-order: inputs first
            top = stack[-1]
            if top[VAR] is not None:
                stack.pop()
                continue
            ins = top[INS]
            ready = True
            for ref in ins:
                if type(ref) is list and ref[VAR] is None:
                    stack.append(ref)
                    ready = False
            if not ready:
                continue
            stack.pop()
            # the equation record_op would have written (one function, no call per record)
            op, params, _, targets, keep, clock, dtype, shape, weak, _, _ = top
            if len(ins) == 2:  # the bulk: unrolled
                a, b = ins
                if type(a) is list:
                    a = a[VAR]
                if type(b) is list:
                    b = b[VAR]
                if a.dtype is not targets[0]:
                    a = _converted(a, targets[0], weak, clock)
                if b.dtype is not targets[1]:
                    b = _converted(b, targets[1], weak, clock)
                in_vars: tuple[Var, ...] = (a, b)
            else:
                in_list = []
                for i, ref in enumerate(ins):
                    v = ref[VAR] if type(ref) is list else ref
                    if v.dtype is not targets[i]:
                        v = _converted(v, targets[i], _converted_weak_flag(op, v.weak, weak), clock)
                    in_list.append(v)
                in_vars = tuple(in_list)
            eqn = _new_eqn(Eqn)
            eqn.op = op
            eqn.inputs = in_vars
            eqn.params = params
            eqn.freed = False
            eqn.keep = keep
            eqn.clock = clock
            var = Var(dtype, shape, eqn)
            if weak:
                var.weak = True
            eqn._outs = weakref.ref(var)  # the compact single-output form
            eqn._dtype0 = dtype
            eqn._shape0 = shape
            var.value = top[VALUE]
            top[VAR] = var
            # a recorder in another thread that holds this record's value writes it, then
            # looks for the Var: reading the value again after publishing the Var, one of
            # the two sees the other's write
            late = top[VALUE]
            if late is not None and var.value is None:
                var.value = late
            # the equation holds the inputs and the Var the value now
            top[INS] = top[VALUE] = top[PARAMS] = None
    return record[VAR]  # type: ignore[no-any-return]


def _converted(var: Var, target: DType, weak: bool, clock: int) -> Var:
    """``var``'s plan ``convert`` (``record_op``'s: a binary op's take the result's weak flag,
    which the caller passes), dated at record time."""
    out = _convert_eqn(var, target, weak)
    out.producer.clock = clock  # type: ignore[union-attr]
    return out


_new_eqn = Eqn.__new__


def push(
    op: OpDef, params: dict[str, Any], inputs: Sequence[Tensor], targets: Sequence[DType], out: Tensor, keep: Keep
) -> None:
    """Record a single-output eager op lazily: ``out._node`` becomes its pending record.

    ``keep`` is ``record_op``'s (the positions a derivative rule reads). ``inputs`` are the
    operands as they came, ``targets`` their planned dtypes (no broadcast: a shape plan takes
    ``record_op``). The recorder's binary case inlines this body (``autodiff.record``)."""
    keep_in = None if keep is None else keep[0]
    ins = []
    for i, x in enumerate(inputs):
        node = x._node
        if node is None:
            node = x._const
            if node is None or node.const is not x._array:
                node = const_var(x)
        elif type(node) is list:
            built = node[VAR]
            if built is not None:
                node = built
                if built.value is None and (keep_in is None or i in keep_in):
                    built.value = x._array
            elif node[VALUE] is None and (keep_in is None or i in keep_in):
                node[VALUE] = x._array
                built = node[VAR]
                if built is not None and built.value is None:  # built by another thread meanwhile
                    built.value = x._array
        elif node.value is None and (keep_in is None or i in keep_in):
            node.value = x._array
        ins.append(node)
    array = out._array
    dtype = out.dtype
    held = keep is None or bool(keep[1])
    out._node = [op, params, tuple(ins), targets, keep, _CLOCK[0], dtype, array.shape, out.weak,
                 array if held else None, None]  # fmt: skip
    out._requires_grad = dtype.is_inexact


tensor_module.MATERIALISE[0] = materialise
