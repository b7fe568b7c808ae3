"""JAX's side of the sweep as data: the requests a case needs answered, and their evaluation.

A case's checks need JAX's primal outputs, its JVPs and VJPs, its ``vmap`` rows and, for
some departures, its ``jax.lax`` result. ``requests_for`` lists them as ``Request``s (a
pure JAX function and its NumPy arguments), ``evaluate_eager`` answers them one by one as
the sweep always has (x64, eager), and the checks (``autodiff.parity.checks``) run from the
``Outcome``s alone. So the answers can also come from the reference store or an oracle
database (``autodiff.parity.store``), where JAX need not even be installed, or from an
evaluator that packs many requests into a few compiled programs.

Building the requests runs castwise's own side of the case eagerly (milliseconds): the
cotangents are drawn in the shapes and dtypes of castwise's outputs, as they always were,
and requests nothing will read (the derivatives of a case castwise refuses) are left out.
Nothing here imports JAX until a request is evaluated.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from autodiff.parity._common import (
    NARROW_INT_DTYPES,
    Case,
    _call_ours,
    _case_rng,
    _has,
    _jax_function,
    _jax_modules,
    _make_inputs,
    _ours_args,
    _outputs,
    _planned,
    random_like,
)
from autodiff.parity.runner import CASTWISE_REFUSALS
from autodiff.testing import close_over
from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.promotion import PromotionError, use_policy
from runtime.core.tensor import Tensor


@dataclass(frozen=True)
class Request:
    """One reference the checks need from JAX."""

    #: unique within a sweep: ``"<case id>/<what>"``, e.g. ``"add[f32,f32]@jax/primal"``
    key: str
    #: a pure JAX function (jit-traceable) of ``args``; returns an array or a tuple/list of arrays
    fn: Callable[..., Any]
    #: NumPy arrays (any ml_dtypes dtype) or Python scalars (weakly typed in JAX)
    args: tuple[Any, ...]
    #: the op family, for per-family batching decisions
    group: str = ""


@dataclass(frozen=True)
class Outcome:
    """JAX's answer to one request."""

    #: the outputs (NumPy arrays), or None when JAX refused
    arrays: tuple[np.ndarray, ...] | None
    #: the first line of ``"TypeError: ..."`` when JAX refused
    error: str = ""


def error_line(err: BaseException) -> str:
    """``"TypeError: ..."``, its first line: how a refusal is reported and stored."""
    return f"{type(err).__name__}: {err}".splitlines()[0]


def evaluate_eager(requests: Sequence[Request]) -> list[Outcome]:
    """Answer each request by calling its function eagerly, as the sweep always has: x64 on,
    ``jax.disable_jit()``, warnings ignored (JAX warns when a convert drops an imaginary part,
    which castwise does silently)."""
    jax, jnp, _ = _jax_modules()
    outcomes: list[Outcome] = []
    with jax.enable_x64(True), jax.disable_jit(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for req in requests:
            try:
                args = [jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in req.args]
                outs = tuple(np.asarray(o) for o in _outputs(req.fn(*args)))
            except Exception as err:
                outcomes.append(Outcome(None, error_line(err)))
                continue
            outcomes.append(Outcome(outs))
    return outcomes


# -- what a case asks of JAX -------------------------------------------------------------------------


#: examples per vmap row
VMAP_BATCH: Final = 3

#: Formats without a zero. A JAX JVP with one operand active pads with instantiated zeros
#: (NaN there) where the others' tangents would go, so summing them is not JAX's JVP of the
#: active set: a joint JVP request asks JAX for it directly.
NO_ZERO: Final = frozenset({dt.float8_e8m0fnu})


def active_sets(case: Case) -> list[tuple[int, ...]]:
    """Non-empty subsets of the operands that can be tracked (inexact tensors)."""
    if not case.spec.differentiable:
        return []
    pos = [i for i, s in enumerate(case.operand_slots) if isinstance(s, DType) and s.is_inexact
           and i not in case.spec.fixed]  # fmt: skip
    return [s for r in range(1, len(pos) + 1) for s in itertools.combinations(pos, r)]


def vmap_rows(case: Case) -> list[tuple[int, tuple[int, ...]]]:
    """``(batch axis, batched operands)`` per vmap row: axes 0 and 1, each array operand
    batched alone and all of them together (Python scalars are never batched)."""
    arrays = tuple(i for i, s in enumerate(case.operand_slots) if isinstance(s, DType))
    sets = [(i,) for i in arrays] + ([arrays] if len(arrays) > 1 else [])
    return [(axis, batched) for axis in (0, 1) for batched in sets]


def joint_jvp_needed(active: tuple[int, ...], slots: Sequence[Any], out_dtypes: Sequence[DType]) -> bool:
    """Whether the JVP of ``active`` must come from one joint ``jax.jvp`` (see ``NO_ZERO``)."""
    return len(active) > 1 and any(d in NO_ZERO for d in [*out_dtypes, *(slots[i] for i in active)])


@dataclass
class Prepared:
    """castwise's eager side of a case and everything the checks will ask JAX."""

    case: Case
    seed: int
    operands: list[Any]
    #: castwise's eager outputs (empty when castwise refused)
    eager: list[Tensor] = field(default_factory=list)
    ours_err: BaseException | None = None
    #: the sweep's own refusal to ask JAX: the policy's plan refuses the operands
    plan_refusal: str = ""
    #: tangents per differentiable operand and cotangents per output (castwise's convention)
    tangents: dict[int, np.ndarray] = field(default_factory=dict)
    cts: list[np.ndarray] = field(default_factory=list)
    #: the stacked operands of each vmap row
    vmap_args: dict[tuple[int, tuple[int, ...]], list[Any]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)


def key(case: Case, what: str) -> str:
    """A request's key: the case id and what is asked (``primal``, ``jvp:0``, ``vmap:1:0,1``)."""
    return f"{case.id}/{what}"


def _ids(ix: Sequence[int]) -> str:
    return ",".join(map(str, ix))


def _as_tuple(f: Callable[..., Any]) -> Callable[..., tuple[Any, ...]]:
    return lambda *a: tuple(_outputs(f(*a)))


def _primal_fn(case: Case, lax_only: bool = False) -> Callable[..., Any]:
    """JAX's primal outputs for the case (raises where JAX refuses)."""

    def fn(*xs: Any) -> tuple[Any, ...]:
        if case.spec.op == "concatenate" and _has(case, *NARROW_INT_DTYPES):
            # XLA's CPU compiler aborts the process on this (a failed check in its concatenate emitter)
            raise RuntimeError("XLA CPU cannot compile a concatenate of 2-bit integers (it aborts)")
        return tuple(_outputs(_jax_function(case, xs, lax_only)(*xs)))

    return fn


def _jvp_fn(case: Case, active: tuple[int, ...]) -> Callable[..., Any]:
    """``jax.jvp`` with the operands of ``active`` active (the others closed over, so no zero
    tangent is materialised: float8_e8m0fnu has no zero); args: the operands, then a tangent
    per active operand. An integer or bool output's float0 tangent comes back as float64 zeros."""
    n = len(case.operand_slots)

    def fn(*a: Any) -> tuple[Any, ...]:
        jax, jnp, _ = _jax_modules()
        xs, ts = a[:n], a[n:]
        f = close_over(_jax_function(case, xs), xs, active)
        _, out_t = jax.jvp(_as_tuple(f), tuple(xs[i] for i in active), tuple(ts))
        float0 = jax.dtypes.float0
        return tuple(jnp.zeros(np.shape(t), np.float64) if t.dtype == float0 else t for t in out_t)

    return fn


def _vjp_fn(case: Case, full: tuple[int, ...]) -> Callable[..., Any]:
    """Every differentiable operand's cotangent in castwise's convention,
    ``conj(jax_vjp(conj(ct)))``, from one ``jax.vjp``; args: the operands, then a cotangent
    per output (an integer or bool output's is ignored: JAX's is a float0 zero)."""
    n = len(case.operand_slots)

    def fn(*a: Any) -> tuple[Any, ...]:
        jax, jnp, _ = _jax_modules()
        xs, cts = a[:n], a[n:]
        f = close_over(_jax_function(case, xs), xs, full)
        outs, vjp = jax.vjp(_as_tuple(f), *(xs[i] for i in full))
        ct_in = tuple(jnp.conj(c) if jnp.issubdtype(o.dtype, jnp.inexact) else np.zeros(o.shape, jax.dtypes.float0)
                      for c, o in zip(cts, outs, strict=True))  # fmt: skip
        return tuple(jnp.conj(g) for g in vjp(ct_in))

    return fn


def _vmap_fn(case: Case, axis: int, batched: tuple[int, ...]) -> Callable[..., Any]:
    """``jax.vmap`` of the reference over the stacked operands; where jax.vmap refuses what
    jax.lax accepts, JAX's results per example, stacked along axis 0 (where ``vmap`` puts the
    batch whatever the operands' batch axis)."""
    n = len(case.operand_slots)
    in_axes = tuple(axis if i in batched else None for i in range(n))
    primal = _primal_fn(case)

    def fn(*xs: Any) -> tuple[Any, ...]:
        jax, jnp, lax = _jax_modules()
        try:
            return tuple(_outputs(jax.vmap(_jax_function(case, xs), in_axes=in_axes)(*xs)))
        except Exception:
            per = [primal(*(lax.index_in_dim(x, k, axis, keepdims=False) if i in batched else x
                            for i, x in enumerate(xs)))
                   for k in range(VMAP_BATCH)]  # fmt: skip
            return tuple(jnp.stack([p[k] for p in per], axis=0) for k in range(len(per[0])))

    return fn


def prepare(case: Case, seed: int) -> Prepared:
    """Run castwise's side of ``case`` eagerly and list what its checks need from JAX."""
    prep = Prepared(case, seed, _make_inputs(case, seed))
    operands = prep.operands
    group = case.spec.family
    try:
        with use_policy(case.policy):
            prep.eager = _call_ours(case, _ours_args(case, operands))
    except CASTWISE_REFUSALS as err:
        prep.ours_err = err
    except Exception as err:  # a castwise crash: the checks report it, nothing is asked of JAX
        prep.ours_err = err
        return prep
    try:
        if case.spec.arity and case.policy != "jax":
            _planned(case)
    except PromotionError as err:
        prep.plan_refusal = f"no reference: the {case.policy} plan refuses ({err})"
        return prep
    reqs = prep.requests
    reqs.append(Request(key(case, "primal"), _primal_fn(case), tuple(operands), group))
    if prep.ours_err is not None:
        if case.policy == "jax" and case.spec.jnp is not None:  # departures: does jax.lax refuse too?
            reqs.append(Request(key(case, "lax"), _primal_fn(case, lax_only=True), tuple(operands), group))
        return prep
    if case.spec.arity:
        examples = [list(operands)] + [_make_inputs(case, seed + k) for k in range(1, VMAP_BATCH)]
        for axis, batched in vmap_rows(case):
            stacked = [np.stack([np.asarray(e[i]) for e in examples], axis=axis) if i in batched else operands[i]
                       for i in range(len(operands))]  # fmt: skip
            prep.vmap_args[(axis, batched)] = stacked
            reqs.append(Request(key(case, f"vmap:{axis}:{_ids(batched)}"), _vmap_fn(case, axis, batched),
                                tuple(stacked), group))  # fmt: skip
    sets = active_sets(case)
    if not sets:
        return prep
    full = sets[-1]  # combinations come by size: the last one holds every differentiable operand
    slots = case.operand_slots
    out_dtypes = [o.dtype for o in prep.eager]
    rng = _case_rng(seed, "derivatives", case.id)
    prep.tangents = {i: random_like(slots[i], np.shape(operands[i]), rng) for i in full}  # type: ignore[arg-type]
    prep.cts = [random_like(o.dtype, o.shape, rng) for o in prep.eager]
    if not any(d.is_inexact for d in out_dtypes):
        return prep  # an integer or bool output has no tangent: nothing to ask JAX
    for i in full:
        reqs.append(Request(key(case, f"jvp:{i}"), _jvp_fn(case, (i,)), (*operands, prep.tangents[i]), group))
    reqs.append(Request(key(case, f"vjp:{_ids(full)}"), _vjp_fn(case, full), (*operands, *prep.cts), group))
    for active in sets:
        if joint_jvp_needed(active, slots, out_dtypes) and not case.spec.reverse_only:
            reqs.append(Request(key(case, f"jvp:{_ids(active)}"), _jvp_fn(case, active),
                                (*operands, *(prep.tangents[i] for i in active)), group))  # fmt: skip
    return prep


def requests_for(case: Case, seed: int) -> list[Request]:
    """Everything the checks of ``case`` need from JAX (inputs, tangents and cotangents drawn
    as the sweep draws them, so the answers are the ones the checks always compared with)."""
    return prepare(case, seed).requests
