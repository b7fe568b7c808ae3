"""Forward and reverse passes over recorded equations (iterative, never recursive).

Both passes walk a topologically ordered list of equations and call the rule
tables. With ``create_graph`` the rules run under the recorder, so the
derivative computation is itself recorded (grad of grad, derivative programs);
otherwise they run with recording off.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import numpy as np

from autodiff.record import enable_grad, no_grad
from autodiff.rules import JVP_RULES, VJP_RULES
from autodiff.zeros import TangentLike, Zero, add_any
from runtime.dtypes import DType
from runtime.graph import Eqn, Var, primal_value
from runtime.tensor import Tensor


def reachable_eqns(roots: Sequence[Var], boundary: Sequence[Var] = ()) -> list[Eqn]:
    """Equations that compute ``roots``, in topological order, stopping at ``boundary``.

    Iterative depth-first post-order, so a 100,000-op chain is fine.
    """
    stop = {id(v) for v in boundary}
    order: list[Eqn] = []
    done: set[int] = set()
    for root in roots:
        stack: list[tuple[Eqn, bool]] = []
        if root.producer is not None and id(root) not in stop:
            stack.append((root.producer, False))
        while stack:
            eqn, expanded = stack.pop()
            if id(eqn) in done:
                continue
            if expanded:
                done.add(id(eqn))
                order.append(eqn)
                continue
            stack.append((eqn, True))
            for v in eqn.inputs:
                p = v.producer
                if p is not None and id(v) not in stop and id(p) not in done:
                    stack.append((p, False))
    return order


def primal_tensor(var: Var, create_graph: bool) -> Tensor:
    """The primal value of ``var`` as a Tensor; tracked (attached to ``var``) when
    the derivative computation must itself be recorded."""
    t = Tensor(primal_value(var), var.dtype)
    if create_graph and var.const is None:
        t.node = var
        t._requires_grad = var.dtype.is_inexact
    return t


class _Poison:
    #: set by ``poison_unsaved``: values a recording did not declare are NaN stand-ins
    active = False


@contextlib.contextmanager
def poison_unsaved() -> Iterator[None]:
    """Test aid: inside the block, every inexact value that an equation's recording
    did not declare as saved reaches the VJP rule as a NaN-filled read-only
    stand-in, even when the value happens to be still available. A rule that
    reads a value its ``VJP_SAVES`` entry does not declare then yields NaN."""
    previous, _Poison.active = _Poison.active, True
    try:
        yield
    finally:
        _Poison.active = previous


_STAND_INS: dict[tuple[DType, tuple[int, ...]], np.ndarray] = {}


def _stand_in(var: Var) -> Tensor:
    # dtype and shape are all a rule may read of an unsaved value; the read-only
    # NaN broadcast is immutable, so one per aval is shared
    key = (var.dtype, var.shape)
    array = _STAND_INS.get(key)
    if array is None:
        if len(_STAND_INS) >= 1024:
            _STAND_INS.clear()
        array = _STAND_INS[key] = np.broadcast_to(np.full((), np.nan, var.dtype.storage), var.shape)
    return Tensor(array, var.dtype)


def _vjp_primals(vars_: Sequence[Var], saved: Sequence[int] | None, create_graph: bool) -> list[Tensor]:
    """The primal values a VJP rule gets: the saved ones (and any still held), with
    a stand-in for an unsaved inexact value (computing it would be wasted work)."""
    if saved is None:
        return [primal_tensor(v, create_graph) for v in vars_]
    poison = _Poison.active
    out = []
    for i, v in enumerate(vars_):
        if i in saved or not v.dtype.is_inexact or (v.value is not None and not poison):
            out.append(primal_tensor(v, create_graph))
        else:
            out.append(_stand_in(v))
    return out


def _recording(create_graph: bool) -> contextlib.AbstractContextManager[None]:
    return enable_grad() if create_graph else no_grad()


def _check(kind: str, eqn: Eqn, var: Var, value: TangentLike) -> None:
    # A rule that returns the wrong dtype or shape is a bug in castwise: say which.
    if isinstance(value, Zero):
        return
    if value.dtype is not var.dtype or tuple(value.shape) != var.shape:
        raise AssertionError(
            f"{eqn.op.name}: {kind} rule returned {value.dtype.short}{list(value.shape)}, expected {var.type_str()}"
        )


def jvp_pass(eqns: Sequence[Eqn], tangents: dict[int, TangentLike], create_graph: bool) -> dict[int, TangentLike]:
    """Push tangents (keyed by ``id(var)``) forward through ``eqns``."""
    with _recording(create_graph):
        for eqn in eqns:
            ins = [tangents.get(id(v)) for v in eqn.inputs]
            if all(t is None or isinstance(t, Zero) for t in ins) or not eqn.op.differentiable:
                continue
            in_tangents = [t if t is not None else Zero(v.dtype, v.shape) for t, v in zip(ins, eqn.inputs, strict=True)]
            rule = JVP_RULES.get(eqn.op.name)
            if rule is None:
                raise NotImplementedError(f"no JVP rule for {eqn.op.name}")
            primals = [primal_tensor(v, create_graph) for v in eqn.inputs]
            outputs = [primal_tensor(v, create_graph) for v in eqn.outputs]
            outs = rule(primals, in_tangents, outputs, **eqn.params)
            for var, t in zip(eqn.outputs, outs, strict=True):
                _check("JVP", eqn, var, t)
                if not isinstance(t, Zero):
                    tangents[id(var)] = t
    return tangents


def vjp_pass(
    eqns: Sequence[Eqn], cotangents: dict[int, TangentLike], create_graph: bool, release: bool = False
) -> dict[int, TangentLike]:
    """Pull cotangents (keyed by ``id(var)``) back through ``eqns``.

    Only inputs that are not constants and have an inexact dtype receive
    cotangents. With ``release`` each equation's saved values are dropped once
    used (``backward`` without ``retain_graph``).
    """
    with _recording(create_graph):
        for eqn in reversed(eqns):
            out_vars = eqn.outputs
            if len(out_vars) == 1:  # the common case, without comprehensions
                ct = cotangents.pop(id(out_vars[0]), None)
                if ct is None or type(ct) is Zero:
                    continue
                out_cts: list[TangentLike] = [ct]
            else:
                cts = [cotangents.pop(id(v), None) for v in out_vars]
                if all(c is None or type(c) is Zero for c in cts):
                    continue
                out_cts = [c if c is not None else Zero(v.dtype, v.shape) for c, v in zip(cts, out_vars, strict=True)]
            op = eqn.op
            if not op.differentiable:
                continue
            needs = [v.const is None and v.dtype.is_inexact for v in eqn.inputs]
            if True not in needs:
                continue
            rule = VJP_RULES.get(op.name)
            if rule is None:
                raise NotImplementedError(f"no VJP rule for {op.name}")
            keep = eqn.keep
            primals = _vjp_primals(eqn.inputs, None if keep is None else keep[0], create_graph)
            outputs = _vjp_primals(out_vars, None if keep is None else keep[1], create_graph)
            in_cts = rule(out_cts, primals, outputs, needs, **eqn.params)
            for var, ct, need in zip(eqn.inputs, in_cts, needs, strict=True):
                if not need or ct is None or type(ct) is Zero:
                    continue
                if ct.dtype is not var.dtype or ct.shape != var.shape:
                    _check("VJP", eqn, var, ct)
                key = id(var)
                previous = cotangents.get(key)
                cotangents[key] = ct if previous is None else add_any(previous, ct)
            if release:
                _release(eqn)
    return cotangents


def _release(eqn: Eqn) -> None:
    eqn.freed = True
    for v in eqn.outputs:
        v.value = None
