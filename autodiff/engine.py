"""Forward and reverse passes over recorded equations (iterative, never recursive).

Both passes walk a topologically ordered list of equations and call the rule
tables. With ``create_graph`` the rules run under the recorder, so the
derivative computation is itself recorded (grad of grad, derivative programs);
otherwise they run with recording off.

Before a pass runs, ``check_recording`` makes sure it can run correctly: no
value a rule will read was written in place after it was recorded (the version
counters of ``runtime.core.versions``, and the checksums of ``detect_writes``), and
no equation's saved values were released by an earlier ``backward()``. Either
raises before anything is computed, released or accumulated.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from autodiff import backward_plan
from autodiff.backward_plan import use_backward_plan as use_backward_plan
from autodiff.record import _reads, enable_grad, no_grad
from autodiff.rules import JVP_RULES, VJP_RULES
from autodiff.zeros import TangentLike, Zero, add_any
from runtime.core import versions
from runtime.core.dtypes import DType
from runtime.core.graph import Eqn, Var, primal_value
from runtime.core.inplace import SavedValueModifiedError
from runtime.core.tensor import Tensor


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


def dependent_eqns(eqns: Sequence[Eqn], inputs: Sequence[Var]) -> tuple[list[Eqn], bool]:
    """The equations of ``eqns`` (topologically ordered) that depend on ``inputs``, and whether
    any of them also reads a tracked value that does not (an outer transform's variable that the
    function closes over).

    A transform differentiates with respect to its own inputs only: equations that do not
    depend on them carry no derivative (the walk from the outputs reaches them when the
    function closes over an outer recording, possibly one an earlier ``backward()`` released).
    When the dependent ones read an outer tracked value, the derivative is a function of it,
    so the transform must record its derivative work for the outer one (``create_graph``):
    ``grad(lambda x: x * grad(lambda y: x * y)(1.0))(3.0)`` is ``6``, not ``3``.
    """
    depends = {id(v) for v in inputs}
    kept: list[Eqn] = []
    outer = False
    for eqn in eqns:
        ins = eqn.inputs
        if not any(id(v) in depends for v in ins):
            continue
        kept.append(eqn)
        for v in eqn.outputs:
            depends.add(id(v))
        if not outer:
            outer = any(v.const is None and id(v) not in depends and v.dtype.is_inexact for v in ins)
    return kept, outer


def primal_tensor(var: Var, create_graph: bool) -> Tensor:
    """The primal value of ``var`` as a Tensor; tracked (attached to ``var``) when
    the derivative computation must itself be recorded."""
    t = Tensor(primal_value(var), var.dtype)
    t.weak = var.weak  # a rule's ops propagate JAX's weak types as the primal ops did
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
    t = Tensor(array, var.dtype)
    t.weak = var.weak
    return t


def _vjp_primals(vars_: Sequence[Var], saved: Sequence[int] | None, create_graph: bool) -> list[Tensor]:
    """The primal values a VJP rule gets: the saved ones (and any still held), with
    a stand-in for an unsaved inexact value (computing it would be wasted work)."""
    if saved is None:
        return [primal_tensor(v, create_graph) for v in vars_]
    poison = _Poison.active
    out = []
    for i, v in enumerate(vars_):
        value = v.value
        if value is not None and not create_graph and (not poison or i in saved or not v.dtype.is_inexact):
            t = Tensor(value, v.dtype)  # primal_tensor's common case, without its calls
            t.weak = v.weak
            out.append(t)
        elif i in saved or not v.dtype.is_inexact or (value is not None and not poison):
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
    check_recording(eqns, "jvp (forward mode)", forward=True)
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
    used (``backward`` without ``retain_graph``). A rule that fails partway leaves
    the equations it had passed released and says so (``_stopped``).
    """
    check_recording(eqns, "backward/vjp", forward=False)
    released: list[Eqn] = []
    capture = None
    if not create_graph and backward_plan._State.enabled and 0 < len(eqns) <= backward_plan.MAX_EQNS:
        # a training loop's every step: replay the plan the first pass of this signature captured
        sig = backward_plan.signature(eqns, cotangents)
        if sig is not None:
            plan = backward_plan.lookup(sig)
            if plan is backward_plan._MISSING:
                capture = backward_plan.Capture(sig, eqns)
                seeds = dict(cotangents)
                capture.start(cotangents)
            elif plan is not None:
                _replay(plan, eqns, cotangents, sig, release)
                return cotangents
    replay_first = capture is not None and backward_plan._State.replay_first
    try:
        _vjp_walk(eqns, cotangents, create_graph, released if release and not replay_first else None, capture)
    except BaseException as err:
        if capture is not None:
            if replay_first and release:  # what the walk would have released: the equations before this one
                released = [eqns[i] for i in capture.ran[:-1]]
                for eqn in released:
                    _release(eqn)
            capture.abandon()
        _stopped(err, eqns, released, release)
        raise
    if capture is not None:
        plan = capture.finish(cotangents)
        if replay_first:
            if plan is not None:
                cotangents.clear()
                cotangents.update(seeds)
                _replay(plan, eqns, cotangents, sig, release)
            elif release:  # (the walk released nothing in this mode: what it would have)
                for i in capture.ran:
                    _release(eqns[i])
    return cotangents


def _replay(
    plan: backward_plan.Plan, eqns: Sequence[Eqn], cotangents: dict[int, TangentLike], sig: Any, release: bool
) -> None:
    """Run a cached plan; release what the general walk would have released."""
    try:
        done = plan.replay(eqns, cotangents, sig, _Poison.active, _stand_in)
    except BaseException as err:
        _stopped(err, eqns, [], release)
        raise
    if release:
        for eqn in done:
            _release(eqn)


def _vjp_walk(
    eqns: Sequence[Eqn],
    cotangents: dict[int, TangentLike],
    create_graph: bool,
    released: list[Eqn] | None,
    capture: backward_plan.Capture | None = None,
) -> None:
    with _recording(create_graph) if capture is None else capture.recording():
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
            if capture is not None:
                capture.tag(eqn, primals, outputs)
            in_cts = rule(out_cts, primals, outputs, needs, **eqn.params)
            for var, ct, need in zip(eqn.inputs, in_cts, needs, strict=True):
                if not need or ct is None or type(ct) is Zero:
                    continue
                if ct.dtype is not var.dtype or ct.shape != var.shape:
                    _check("VJP", eqn, var, ct)
                key = id(var)
                previous = cotangents.get(key)
                cotangents[key] = ct if previous is None else add_any(previous, ct)
            if released is not None:
                _release(eqn)
                released.append(eqn)


def _release(eqn: Eqn) -> None:
    eqn.freed = True
    for v in eqn.outputs:
        v.value = None


# -- can this recording be differentiated? ------------------------------------------------------


def _what(var: Var) -> str:
    if var.const is not None:
        return "an untracked operand"
    if var.producer is None:
        return "a tracked leaf"
    return f"a result of {var.producer.op.name}"


def _modified(where: str, eqn: Eqn, kind: str, i: int, var: Var, how: str) -> SavedValueModifiedError:
    return SavedValueModifiedError(
        f"{where}: {kind} {i} of {eqn.op.name} ({var.dtype.name}{list(var.shape)}, {_what(var)}), a value the "
        f"recording saved for the derivative, was modified in place after {eqn.op.name} was recorded: {how}. "
        "Differentiating would use the new values and give a wrong result, so nothing was computed, released "
        "or accumulated. Write into a copy instead (t.copy(), or np.array(...) for a NumPy array), or make the "
        "write before the op is recorded."
    )


def _check_versions(where: str, eqn: Eqn, kind: str, i: int, var: Var) -> None:
    # a value that is not materialised (a convert eager execution fused into its consumer)
    # is recomputed from its producer's inputs: those are what must be unchanged then
    stack: list[tuple[Var, Eqn]] = [(var, eqn)]
    while stack:
        v, reader = stack.pop()
        if v.value is not None:
            hit = versions.written_since(v.value, reader.clock)
            if hit is not None:
                now, then = hit
                how = (
                    f"its memory is at version {now} now and was at version {then} when {eqn.op.name} was "
                    "recorded (an in-place write through this tensor or a Tensor sharing its memory: a view, "
                    "detach(), or another asarray of the same NumPy array)"
                )
                raise _modified(where, eqn, kind, i, var, how)
        elif v.producer is not None and not v.producer.freed:
            stack.extend((u, v.producer) for u in v.producer.inputs)


def _check_digests(where: str, eqn: Eqn, snapshot: versions.Snapshot) -> None:
    for (kind, i, var), array, before in snapshot.digests:
        if versions.digest(array) != before:
            how = (
                "its contents differ from the checksum detect_writes() took when it was recorded (a write that "
                "bypassed castwise's version counters, such as t.numpy()[...] = v or a write into the NumPy "
                "array the tensor wraps)"
            )
            raise _modified(where, eqn, kind, i, var, how)


def _released_message(where: str, eqn: Eqn) -> str:
    if isinstance(eqn.freed, str):
        return f"{where}: {eqn.freed}"
    return (
        f"{where}: trying to differentiate through a recording a second time, but an earlier backward() "
        f"released the values {eqn.op.name} saved for it; pass retain_graph=True to the first backward() to "
        "differentiate it again. Nothing was computed or accumulated."
    )


#: op name -> what an equation's rules read that is neither an input nor an output: values its
#: params carry (a ``custom_vjp_call``'s residuals), as ``(description, Tensor)`` pairs, checked
#: against the equation's clock as its saved inputs and outputs are
PARAM_READS: dict[str, Callable[[dict[str, Any]], Sequence[tuple[str, Tensor]]]] = {}


def _check_param_reads(where: str, eqn: Eqn) -> None:
    reads = PARAM_READS.get(eqn.op.name)
    for what, t in reads(eqn.params) if reads is not None else ():
        hit = versions.written_since(t._array, eqn.clock)
        if hit is not None:
            raise SavedValueModifiedError(
                f"{where}: {what} ({t.dtype.name}{list(t.shape)}), a value the recording saved for the derivative, "
                f"was modified in place after {eqn.op.name} was recorded: its memory is at version {hit[0]} now and "
                f"was at version {hit[1]} when it was recorded (an in-place write through this tensor or a Tensor "
                "sharing its memory: a view, detach(), or another asarray of the same NumPy array). Differentiating "
                "would use the new values and give a wrong result, so nothing was computed, released or accumulated. "
                "Write into a copy instead, or make the write before the op is recorded."
            )


def check_recording(eqns: Sequence[Eqn], where: str, forward: bool) -> None:
    """Raise before a pass if it cannot give the right answer: a value a rule reads was
    written in place after its equation was recorded (``SavedValueModifiedError``), or
    was released by an earlier ``backward()`` (``RuntimeError``, also when all the saved
    values are leaves, which are never actually freed)."""
    now = versions.CLOCK[0]
    suspects = eqns
    if not versions.CHECKSUMMED[0]:
        # the common case: no in-place write since any of them was recorded, none released
        suspects = [e for e in eqns if e.clock != now or e.freed]
    for eqn in suspects:
        clock = eqn.clock
        if not eqn.op.differentiable:
            continue
        if eqn.freed:
            if isinstance(eqn.freed, str) or _reads(eqn, forward):
                raise RuntimeError(_released_message(where, eqn))
            continue  # it saved nothing (add, a convert): nothing was lost
        if type(clock) is versions.Snapshot:
            _check_digests(where, eqn, clock)
        if clock != now:  # (also an int subclass: a Snapshot)
            for kind, i, var in _reads(eqn, forward):
                _check_versions(where, eqn, kind, i, var)
            _check_param_reads(where, eqn)


def _stopped(err: BaseException, eqns: Sequence[Eqn], released: list[Eqn], release: bool) -> None:
    """A backward pass failed partway: say what state the recording is in, and make a
    retry through the released part say why it cannot run."""
    # the equation whose rule failed: the walk's loop variable, read from the traceback
    # (cheaper than noting each equation as the walk passes it)
    failed: Eqn | None = None
    tb = err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is _vjp_walk.__code__:
            failed = tb.tb_frame.f_locals.get("eqn")
            break  # the first is this pass's own walk (a nested pass may follow)
        tb = tb.tb_next
    if not release or not released:
        err.add_note(
            "castwise: no saved value was released and no .grad was changed: the recording is as it was "
            "before this call"
        )
        return
    at = failed.op.name if failed is not None else "the end"
    reason = (
        f"an earlier backward() through this recording failed at {at} ({type(err).__name__}: {err}) after "
        f"{len(released)} of {len(eqns)} equations had released their saved values, so it cannot run again "
        "through them; record the computation again (pass retain_graph=True to keep a recording you may "
        "retry after a failure)"
    )
    for e in released:
        e.freed = reason
    err.add_note(
        f"castwise: backward() stopped at {at}: the {len(released)} equations between the output and {at} "
        f"released their saved values, the other {len(eqns) - len(released)} still hold theirs; no .grad was "
        "changed. A retry through the released part raises; record the computation again."
    )


# -- accumulating into .grad --------------------------------------------------------------------

#: striped locks for ``.grad`` accumulation (a leaf hashes to one): concurrent backward
#: passes into a shared leaf add up exactly, as in PyTorch, without a lock per tensor
_GRAD_LOCKS = tuple(threading.Lock() for _ in range(64))


def accumulate_grad(owner: Tensor, g: Any) -> None:
    """``owner.grad += g`` (or ``= g`` for the first), atomically for ``owner``."""
    with _GRAD_LOCKS[hash(owner) % len(_GRAD_LOCKS)]:
        owner.grad = g if owner.grad is None else owner.grad + g
