"""A cached backward plan: the reverse pass over a recording, replayed as flat kernel calls.

A training loop records the same computation on every step and walks it backwards with the
rule tables every time. The first reverse pass over a recording with a given *signature*
(each equation's op, params, input wiring, avals with weak flags and saved positions, the
seeds' avals, the policy and default dtype) runs the general walk while a capture recorder
watches every op the VJP rules execute: which kernel ran on which saved value, seed or
intermediate cotangent, with which planned dtypes and broadcasts. That becomes a flat list
of kernel calls over array slots. A later pass with the same signature replays it: no rule
dispatch, no Tensor wrappers, no symbolic-zero checks.

What stays as it was: ``check_recording`` runs before a replay as before a walk (the version
counters guard every saved value), and a replay reads the saved values of the recording it
differentiates, never the first one's. ``create_graph``, ``poison_unsaved`` and tracked seeds
take the general path; so does any signature whose capture saw something it cannot replay
(an op of a rule family not listed in ``_PLANNABLE``, a constant sharing memory with a
saved value, a result the capture did not see computed).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from autodiff.rules import VJP_RULES
from runtime.core import hooks, kernels, shapes
from runtime.core.dtypes import DType
from runtime.core.executor import _broadcast_arrays, convert_array
from runtime.core.graph import Eqn, Var, primal_value
from runtime.core.kernels import FPE_IGNORE, FPE_STATE
from runtime.core.ops import OpDef
from runtime.core.promotion import _STATE as _policy_state
from runtime.core.tensor import Tensor
from runtime.core.versions import memory_owner

_fpe_set, _fpe_reset = FPE_STATE.set, FPE_STATE.reset

#: ops whose VJP rules are written purely in runtime ops on their arguments (no NumPy work on a
#: value's contents, no inner recording): what a capture sees is all they compute
_PLANNABLE = frozenset(
    (
        *("add", "sub", "mul", "div", "max", "min", "pow", "atan2"),
        *("neg", "abs", "exp", "log", "expm1", "log1p", "sin", "cos", "tan", "tanh", "logistic", "sqrt", "rsqrt"),
        *("square", "reciprocal", "sinh", "cosh", "integer_pow", "erf", "conj", "real", "imag", "convert"),
        *("dot_general", "reduce_sum", "reshape", "transpose", "broadcast_in_dim", "slice", "pad", "reverse"),
        *("concatenate", "select_n"),
    )
)


class _State:
    #: the switch ``use_backward_plan`` sets (process-wide: a test fixture runs both ways)
    enabled = True
    #: test aid (``replaying_first``): a pass that captures a plan returns the plan's replay,
    #: not the general walk's result, so every first pass of a test exercises the replay
    replay_first = False


#: how many passes captured a plan and how many replayed one (tests read them)
STATS = {"captured": 0, "replayed": 0}

_MISSING: Any = object()
#: signature -> ``Plan`` or ``None`` (this signature always takes the general path)
#: Larger recordings take the general walk, without a signature: the plan's gain is dispatch per
#: equation, and a long chain of small ops pays more for its signature and capture than it gains
#: (a 100,000-op chain of muls, CPU s: general 0.83, first pass with capture 5.4, replay 1.27).
MAX_EQNS = 2000

_CACHE: dict[Any, Plan | None] = {}
_CACHE_LIMIT = 256


def set_backward_plan(enabled: bool) -> bool:
    """Turn the cached backward plan on or off; returns the previous setting."""
    previous, _State.enabled = _State.enabled, bool(enabled)
    return previous


@contextlib.contextmanager
def use_backward_plan(enabled: bool) -> Iterator[None]:
    """Inside the block, reverse passes replay cached plans (``True``) or always walk the rules."""
    previous = set_backward_plan(enabled)
    try:
        yield
    finally:
        set_backward_plan(previous)


@contextlib.contextmanager
def replaying_first() -> Iterator[None]:
    """Test aid: inside the block, plans are used from the first pass of each signature on (its
    capture walk runs, then the plan replays on the same seeds and its result is returned)."""
    previous, _State.replay_first = _State.replay_first, True
    try:
        yield
    finally:
        _State.replay_first = previous


def clear_cache() -> None:
    """Forget every cached plan (tests; a plan holds only constants the rules made)."""
    _CACHE.clear()


def enabled() -> bool:
    return _State.enabled


# -- the signature ------------------------------------------------------------------------------


class Signature:
    """A recording's signature, and its values that a plan maps slots to."""

    __slots__ = ("index", "key", "leaves")

    def __init__(self, key: Any, index: dict[int, Any], leaves: list[Var]) -> None:
        self.key = key
        #: id(var) -> its reference: ``(eqn position, output position)`` or a leaf number (an int)
        self.index = index
        self.leaves = leaves


def signature(eqns: Sequence[Eqn], cotangents: dict[int, Any]) -> Signature | None:
    """The signature of a reverse pass over ``eqns`` from ``cotangents``, or ``None`` when the
    pass must take the general path (an op outside ``_PLANNABLE``, unhashable params, a tracked
    or symbolic seed, a seed on a value the equations do not define or read)."""
    index: dict[int, Any] = {}
    leaves: list[Var] = []
    items: list[Any] = [_policy_state.plan_key]
    try:
        for ei, eqn in enumerate(eqns):
            op = eqn.op
            if op.differentiable and op.name not in _PLANNABLE:
                return None
            ins: list[Any] = []
            for v in eqn.inputs:
                ref = index.get(id(v))
                if ref is None:
                    ref = index[id(v)] = len(leaves)
                    leaves.append(v)
                    ins.append((ref, v.dtype, v.shape, v.weak, v.const is None))
                else:
                    ins.append(ref)
            outs = []
            for k, v in enumerate(eqn.outputs):
                index[id(v)] = (ei, k)
                outs.append((v.dtype, v.shape, v.weak))
            keep = eqn.keep
            if keep is not None:
                keep = (tuple(keep[0]), tuple(keep[1]))
            params = shapes.freeze_params(eqn.params) if eqn.params else None
            # the rule itself: a rule replaced (a test's monkeypatch, a user's registration) captures anew
            items.append((op, params, tuple(ins), tuple(outs), keep, VJP_RULES.get(op.name)))
        seeds = []
        for seed_key, ct in cotangents.items():
            ref = index.get(seed_key)
            if ref is None or type(ct) is not Tensor or ct.node is not None:
                return None
            seeds.append((ref, ct.dtype, ct._array.shape, ct.weak))
        items.append(tuple(seeds))
        sig_key = tuple(items)
        hash(sig_key)
    except TypeError:  # an unhashable param
        return None
    return Signature(sig_key, index, leaves)


def lookup(sig: Signature) -> Any:
    """The cached ``Plan``, ``None`` (general path), or ``_MISSING`` (capture one)."""
    return _CACHE.get(sig.key, _MISSING)


# -- capturing the rules' kernel calls ----------------------------------------------------------

#: how a slot gets its array at replay: ``("seed", position)``, ``("primal", eqn, kind, pos)``
Source = tuple[Any, ...]


class Capture:
    """What the rules of one general reverse pass executed, as slots and kernel calls."""

    def __init__(self, sig: Signature, eqns: Sequence[Eqn]) -> None:
        self.sig = sig
        self.eqn_pos = {id(e): i for i, e in enumerate(eqns)}
        self.slot_of: dict[int, int] = {}  # id(tensor) -> slot
        self.tensors: list[Tensor] = []  # every tagged tensor, alive until ``finish`` (ids stay unique)
        self.sources: list[tuple[int, Source]] = []
        self.consts: list[tuple[int, np.ndarray]] = []
        self.steps: list[tuple[OpDef, dict[str, Any], tuple[int, ...], tuple[DType, ...], tuple[DType, ...],
                               Any, tuple[int, ...]]] = []  # fmt: skip
        self.n = 0
        self.failed = False
        self.primal_owners: set[int] = set()
        #: the equations whose rule ran, in walk order: what the walk releases without retain_graph
        self.ran: list[int] = []

    def _tag(self, t: Tensor) -> int:
        slot = self.n
        self.n += 1
        self.slot_of[id(t)] = slot
        self.tensors.append(t)
        t.node = Var(t.dtype, t._array.shape)  # tracked: the executor tells ``record`` what ran on it
        return slot

    def start(self, cotangents: dict[int, Any]) -> None:
        """Replace each seed by a tagged Tensor on the same array (the user's own is never tagged)."""
        for i, (key, ct) in enumerate(list(cotangents.items())):
            t = Tensor(ct._array, ct.dtype)
            t.weak = ct.weak
            self.sources.append((self._tag(t), ("seed", i)))
            cotangents[key] = t

    def tag(self, eqn: Eqn, primals: Sequence[Tensor], outputs: Sequence[Tensor]) -> None:
        """The primal Tensors the walk built for ``eqn``'s rule (fresh ones: tagging them is private)."""
        ei = self.eqn_pos[id(eqn)]
        self.ran.append(ei)
        for kind, ts in ((0, primals), (1, outputs)):
            for pos, t in enumerate(ts):
                self.sources.append((self._tag(t), ("primal", ei, kind, pos)))
                if isinstance(t._array, np.ndarray):
                    self.primal_owners.add(id(memory_owner(t._array)))

    def recording(self) -> contextlib.AbstractContextManager[None]:
        return hooks.recorder_override(self.record)

    def record(
        self,
        op: OpDef,
        params: dict[str, Any],
        inputs: Sequence[Tensor],
        targets: tuple[DType, ...],
        outputs: Sequence[Tensor],
        target_shapes: Sequence[tuple[int, ...]] | None = None,
    ) -> None:
        """The recorder while capturing: one kernel call per op the rules ran."""
        if self.failed:
            return
        if op.name not in kernels.KERNELS:
            self.failed = True
            return
        in_slots = []
        for x in inputs:
            slot = self.slot_of.get(id(x))
            if slot is None:
                if x.node is not None or not isinstance(x._array, np.ndarray):
                    self.failed = True
                    return
                if id(memory_owner(x._array)) in self.primal_owners:
                    self.failed = True  # a constant on a saved value's memory: it would go stale
                    return
                slot = self.n
                self.n += 1
                self.consts.append((slot, x._array))
                self.slot_of[id(x)] = slot
                self.tensors.append(x)
            in_slots.append(slot)
        out_slots = tuple(self._tag(t) for t in outputs)
        self.steps.append(
            (op, params, tuple(in_slots), tuple(x.dtype for x in inputs), tuple(targets),
             None if target_shapes is None else tuple(map(tuple, target_shapes)), out_slots)
        )  # fmt: skip

    def abandon(self) -> None:
        """The walk failed: untag, cache nothing (a later pass captures again)."""
        for t in self.tensors:
            t.node = None
        self.tensors.clear()

    def finish(self, cotangents: dict[int, Any]) -> Plan | None:
        """Untag every tensor, and cache the plan (or ``None`` when the capture failed)."""
        results: list[tuple[int, int, DType, bool]] = []
        for key, ct in cotangents.items():
            slot = self.slot_of.get(id(ct)) if type(ct) is Tensor else None
            ref = self.sig.index.get(key)
            if slot is None or type(ref) is not int:
                self.failed = True
                break
            results.append((ref, slot, ct.dtype, ct.weak))
        for t in self.tensors:
            t.node = None  # (every one is a private Tensor: seeds' stand-ins, rule primals, results)
        self.tensors.clear()
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()
        if self.failed:
            _CACHE[self.sig.key] = None
            return None
        plan = _CACHE[self.sig.key] = Plan(self, results, self.ran)
        STATS["captured"] += 1
        return plan


# -- replaying ----------------------------------------------------------------------------------


def _step(
    op: OpDef,
    params: dict[str, Any],
    in_slots: tuple[int, ...],
    in_dtypes: tuple[DType, ...],
    targets: tuple[DType, ...],
    bshapes: Any,
    out_slots: tuple[int, ...],
) -> Callable[[list[Any]], None]:
    """One kernel call as a closure over slots: each operand converted to its planned dtype and
    broadcast to its planned shape, as the executor's general path does (its in-loop casts are
    bit for bit this convert + kernel)."""
    table, name = kernels.KERNELS, op.name  # (looked up per call: a replaced kernel is the one that runs)
    converts = tuple(
        (i, src, dst) for i, (src, dst) in enumerate(zip(in_dtypes, targets, strict=True)) if src is not dst
    )
    single = out_slots[0] if len(out_slots) == 1 else None

    if not converts and bshapes is None and single is not None and len(in_slots) == 2:
        a_slot, b_slot = in_slots

        def binary(values: list[Any]) -> None:
            token = _fpe_set(FPE_IGNORE)
            try:
                out = table[name](values[a_slot], values[b_slot], **params)[0]
            finally:
                _fpe_reset(token)
            values[single] = out if type(out) is np.ndarray else np.asarray(out)

        return binary

    def general(values: list[Any]) -> None:
        arrays = [values[s] for s in in_slots]
        for i, src, dst in converts:
            arrays[i] = convert_array(arrays[i], src, dst)
        if bshapes is not None:
            arrays = _broadcast_arrays(arrays, bshapes)
        token = _fpe_set(FPE_IGNORE)
        try:
            outs = table[name](*arrays, **params)
        finally:
            _fpe_reset(token)
        for slot, out in zip(out_slots, outs, strict=True):
            values[slot] = out if type(out) is np.ndarray else np.asarray(out)

    return general


class Plan:
    """A captured reverse pass: slot sources, kernel-call closures, and where the results go."""

    __slots__ = ("primals", "released", "results", "seeds", "steps", "template")

    def __init__(self, capture: Capture, results: list[tuple[int, int, DType, bool]], released: list[int]) -> None:
        template: list[Any] = [None] * capture.n
        for slot, array in capture.consts:
            # a private read-only copy: every replay shares it, and a result that is (a view of)
            # it must not be handed out writable (``api._unshared`` copies a read-only one)
            frozen = np.array(array, copy=True)
            frozen.flags.writeable = False
            template[slot] = frozen
        self.template = template
        # only the sources something reads are filled at replay (a rule's unread primals are not)
        read = {slot for step in capture.steps for slot in step[2]} | {slot for _, slot, _, _ in results}
        self.seeds = [(slot, src[1]) for slot, src in capture.sources if src[0] == "seed" and slot in read]
        self.primals = [
            (slot, src[1], src[2], src[3]) for slot, src in capture.sources if src[0] == "primal" and slot in read
        ]
        # each slot is dropped after its last read, as the general walk drops a cotangent once used:
        # the buffer cache then hands its memory to the next large result (no fresh pages)
        last: dict[int, int] = {}  # (computed before ``read`` below, from the same steps)
        for i, step in enumerate(capture.steps):
            for slot in step[2]:
                last[slot] = i
        kept = {slot for _, slot, _, _ in results}
        dead: list[list[int]] = [[] for _ in capture.steps]
        for slot, i in last.items():
            if slot not in kept:
                dead[i].append(slot)
        self.steps = [(_step(*s), tuple(d)) for s, d in zip(capture.steps, dead, strict=True)]
        self.results = results
        self.released = released

    def replay(
        self,
        eqns: Sequence[Eqn],
        cotangents: dict[int, Any],
        sig: Signature,
        poison: bool,
        stand_in: Callable[[Var], Tensor],
    ) -> list[Eqn]:
        """Run the plan on this recording's saved values and seeds; ``cotangents`` becomes the
        leaves' cotangents, as the general walk leaves it. Returns the equations to release.
        ``poison`` and ``stand_in``: the engine's ``poison_unsaved`` state and stand-in maker."""
        STATS["replayed"] += 1
        values = self.template.copy()
        seeds = list(cotangents.values()) if self.seeds else ()
        for slot, i in self.seeds:
            values[slot] = seeds[i]._array
        for slot, ei, kind, pos in self.primals:
            eqn = eqns[ei]
            var = (eqn.inputs if kind == 0 else eqn.outputs)[pos]
            values[slot] = _primal_array(eqn, var, kind, pos, poison, stand_in)
        for step, dead in self.steps:
            step(values)
            for slot in dead:
                values[slot] = None
        cotangents.clear()
        leaves = sig.leaves
        for ref, slot, dtype, weak in self.results:
            t = Tensor(values[slot], dtype)
            if weak:
                t.weak = True
            cotangents[id(leaves[ref])] = t
        return [eqns[i] for i in self.released]


def _primal_array(
    eqn: Eqn, var: Var, kind: int, pos: int, poison: bool, stand_in: Callable[[Var], Tensor]
) -> np.ndarray:
    """The array ``engine._vjp_primals`` gives a rule for ``var``, poisoned as it poisons
    (``poison_unsaved``: the suite's rules run through plans with unsaved values NaN)."""
    value = var.value
    keep = eqn.keep
    saved = None if keep is None else keep[kind]
    if saved is None:
        return primal_value(var)
    declared = pos in saved or not var.dtype.is_inexact
    if value is not None and (declared or not poison):
        return value
    if declared or (value is not None and not poison):
        return primal_value(var)
    return stand_in(var)._array
