"""Running the sweep (in worker processes with ``--jobs``) and ``castwise parity``."""

from __future__ import annotations

import fnmatch
import functools
import io
import itertools
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, TextIO

import numpy as np

import autodiff
from autodiff.parity import shards
from autodiff.parity._common import (
    DEFAULT_DTYPES,
    DEFAULT_POLICIES,
    QUICK_CASES,
    Case,
    CheckResult,
    PyScalar,
    _as_float,
    _call_ours,
    _case_rng,
    _eps,
    _jax_function,
    _jax_modules,
    _jax_x64,
    _jnp,
    _make_inputs,
    _ours_args,
    _outputs,
    _planned,
    _run_jax,
    _to_jax,
    default_compile_cache,
    random_like,
    slot_name,
    use_compile_cache,
)
from autodiff.parity.cases import build_cases, parse_dtypes
from autodiff.parity.departures import departure_for
from autodiff.parity.report import Report, markdown, splice_markdown, terminal_width, write_json
from autodiff.parity.runner import CASTWISE_REFUSALS, CaseResult, compare, tolerance
from autodiff.record import enable_grad
from autodiff.testing import close_over
from passes import verify
from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.graph import collect, const_var, evaluate, trace
from runtime.core.plan import rewrite
from runtime.core.promotion import PromotionError, use_policy
from runtime.core.shapes import OpTypeError
from runtime.core.tensor import Tensor

# -- the plan's per-op families and rewrites, and the kael policy ------------------------------------


def _is_rewritten(case: Case) -> bool:
    """Whether the plan rewrites the case's op into other ops (``runtime.core.plan.rewrite``)."""
    try:
        return case.spec.arity > 0 and rewrite(case.spec.op, _planned(case), case.policy) is not None
    except (PromotionError, OpTypeError):
        return False


# -- comparing ---------------------------------------------------------------------------------------------


def _narrowest(dtypes: Sequence[DType]) -> DType | None:
    """The inexact dtype with the largest epsilon: the precision a result can be trusted to."""
    inexact = [d for d in dtypes if d.is_inexact]
    return max(inexact, key=_eps) if inexact else None


def _fmt(a: np.ndarray, limit: int = 12) -> str:
    """The first ``limit`` values of an array, flat, for a failure report."""
    flat = np.asarray(a).reshape(-1)
    body = np.array2string(flat[:limit], separator=", ", max_line_width=200, threshold=limit)
    more = f" ... ({flat.size} values)" if flat.size > limit else ""
    return f"{body}{more}"


def _check_arrays(check: str, got: Sequence[Any], want: Sequence[np.ndarray], tol_dtype: DType | None,
                  exact: bool, derivative: bool, active: tuple[int, ...] | None = None,
                  want_dtypes: Sequence[DType] | None = None) -> CheckResult:  # fmt: skip
    """Compare castwise outputs (Tensors / arrays) with JAX's, dtype first."""
    worst = 0.0
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        g_dtype = g.dtype if isinstance(g, Tensor) else dt.dtype(np.asarray(g).dtype)
        w_dtype = want_dtypes[k] if want_dtypes is not None else dt.dtype(np.asarray(w).dtype)
        g_arr = g.numpy() if isinstance(g, Tensor) else np.asarray(g)
        if g_dtype is not w_dtype:
            return CheckResult(check, False, math.inf, active, f"output {k}: dtype {g_dtype.name}, expected "
                               f"{w_dtype.name}", w_dtype.name, g_dtype.name)  # fmt: skip
        tol = tolerance(tol_dtype, derivative) if tol_dtype is not None else 0.0
        ok, ratio, msg = compare(g_arr, w, tol, exact or tol_dtype is None)
        worst = max(worst, ratio)
        if not ok:
            return CheckResult(check, False, ratio, active, f"output {k} ({w_dtype.name}): {msg}", _fmt(w), _fmt(g_arr))
    return CheckResult(check, True, worst, active)


def _crash(
    check: str, err: BaseException, active: tuple[int, ...] | None = None, side: str = "castwise"
) -> CheckResult:
    """A failed check for an exception where a result was due (castwise's, JAX's, or the sweep's)."""
    return CheckResult(check, False, math.inf, active, f"{side} raised {type(err).__name__}: {err}",
                       "a result", f"{type(err).__name__}: {err}")  # fmt: skip


# -- the checks ------------------------------------------------------------------------------------------


def _check_replay(case: Case, operands: Sequence[Any], eager: Sequence[Tensor]) -> CheckResult:
    """Record the op eagerly (inexact operands tracked; traced when there are none),
    verify the graph, replay it, and compare bit for bit with eager execution."""
    slots = case.operand_slots
    inexact = tuple(i for i, s in enumerate(slots) if isinstance(s, DType) and s.is_inexact)
    try:
        with use_policy(case.policy):
            if inexact:
                args = _ours_args(case, operands, tracked=inexact)
                with enable_grad():
                    recorded = _call_ours(case, args)
                leaves = [args[i] for i in inexact]
                # an op the plan rewrites into a constant (imag of a real operand) records none
                out_vars = [o.node if o.node is not None or not _is_rewritten(case) else const_var(o) for o in recorded]
                if any(v is None for v in out_vars):
                    return CheckResult("replay", False, math.inf, None, "an output of a tracked op was not recorded")
                graph = collect(out_vars, [leaf.node for leaf in leaves])
                inputs = [Tensor(leaf.numpy(), leaf.dtype) for leaf in leaves]
            else:
                tensors = [i for i, s in enumerate(slots) if isinstance(s, DType)]
                args = _ours_args(case, operands)

                def f(*ts: Tensor) -> Any:
                    call = list(args)
                    for i, t in zip(tensors, ts, strict=True):
                        call[i] = t
                    return tuple(_call_ours(case, call))

                graph = trace(f, *[args[i] for i in tensors])
                recorded = _call_ours(case, args)
                inputs = [args[i] for i in tensors]
            verify(graph)
            replayed = evaluate(graph, *inputs)
    except Exception as err:
        return _crash("replay", err)
    for k, (e, r, rec) in enumerate(zip(eager, replayed, recorded, strict=True)):
        for what, other in (("replay", r), ("recorded eager run", rec)):
            same = (
                other.dtype is e.dtype
                and other.shape == e.shape
                and np.ascontiguousarray(other.numpy()).tobytes() == np.ascontiguousarray(e.numpy()).tobytes()
            )
            if not same:
                return CheckResult("replay", False, math.inf, None,
                                   f"output {k}: {what} differs from eager execution (bit for bit)",
                                   f"{e.dtype.name} {_fmt(e.numpy())}",
                                   f"{other.dtype.name} {_fmt(other.numpy())}")  # fmt: skip
    return CheckResult("replay", True)


def _active_sets(case: Case) -> list[tuple[int, ...]]:
    """Non-empty subsets of the operands that can be tracked (inexact tensors)."""
    if not case.spec.differentiable:
        return []
    pos = [i for i, s in enumerate(case.operand_slots) if isinstance(s, DType) and s.is_inexact
           and i not in case.spec.fixed]  # fmt: skip
    return [s for r in range(1, len(pos) + 1) for s in itertools.combinations(pos, r)]


def _jax_derivatives(case: Case, operands: Sequence[Any], full: tuple[int, ...], tangents: dict[int, np.ndarray],
                     cts: Sequence[np.ndarray]) -> tuple[dict[int, list[np.ndarray]], list[np.ndarray]]:  # fmt: skip
    """JAX's derivatives, computed once per case rather than once per active set.

    Returns ``J_i t_i`` per operand ``i`` of ``full`` (per output), from
    ``jax.jvp`` with only that operand active (the others closed over, so no zero
    tangent is ever materialised: float8_e8m0fnu has no zero), and the cotangent
    of every operand in castwise's convention, ``conj(jax_vjp(conj(ct)))``, from
    one ``jax.vjp``. Both maps are linear, so the expectation for any active set
    follows: its JVP is the sum of its operands' ``J_i t_i`` (except in a format
    without a zero, see ``_NO_ZERO``), and an operand's cotangent does not
    depend on which others are active.
    """
    jax, jnp = _jax_modules()[0], _jnp()
    with _jax_x64():
        jx = [_to_jax(x) for x in operands]
        fj = _jax_function(case, jx)

        def as_tuple(f: Callable[..., Any]) -> Callable[..., tuple[Any, ...]]:
            return lambda *a: tuple(_outputs(f(*a)))

        # an integer or bool output of a multi-output op (sort's, top_k's indices) has JAX's float0
        # tangent: it is compared as zeros, and its cotangent is a float0 zero
        float0 = jax.dtypes.float0
        per_operand: dict[int, list[np.ndarray]] = {}
        for i in full:
            _, out_t = jax.jvp(as_tuple(close_over(fj, jx, (i,))), (jx[i],), (jnp.asarray(tangents[i]),))
            per_operand[i] = [np.zeros(np.shape(t)) if np.asarray(t).dtype == float0 else np.asarray(t) for t in out_t]
        outs, vjp_fn = jax.vjp(as_tuple(close_over(fj, jx, full)), *(jx[i] for i in full))
        ct_in = tuple(jnp.asarray(np.conj(c)) if jnp.issubdtype(o.dtype, jnp.inexact) else np.zeros(o.shape, float0)
                      for c, o in zip(cts, outs, strict=True))  # fmt: skip
        cotangents = [np.conj(np.asarray(g)) for g in vjp_fn(ct_in)]
    return per_operand, cotangents


#: Formats without a zero. A JAX JVP with one operand active pads with instantiated zeros
#: (NaN there) where the others' tangents would go, so summing them is not JAX's JVP of the
#: active set: ``_jax_joint_jvp`` asks JAX for it directly.
_NO_ZERO: Final = frozenset({dt.float8_e8m0fnu})


def _jax_joint_jvp(case: Case, operands: Sequence[Any], active: tuple[int, ...],
                   tangents: dict[int, np.ndarray]) -> list[np.ndarray]:  # fmt: skip
    """``jax.jvp`` with every operand of ``active`` active at once (the others closed over)."""
    jax, jnp = _jax_modules()[0], _jnp()
    with _jax_x64():
        jx = [_to_jax(x) for x in operands]
        f = close_over(_jax_function(case, jx), jx, active)
        _, out_t = jax.jvp(lambda *a: tuple(_outputs(f(*a))), tuple(jx[i] for i in active),
                           tuple(jnp.asarray(tangents[i]) for i in active))  # fmt: skip
    return [_as_float(np.asarray(t)) for t in out_t]


def _sum_jvps(parts: Sequence[Sequence[np.ndarray]]) -> list[np.ndarray]:
    """The JVP of an active set: the sum of its operands' ``J_i t_i``, accumulated in float64/complex128."""
    return [functools.reduce(np.add, (_as_float(p[k]) for p in parts)) for k in range(len(parts[0]))]


def _refuses_derivative(case: Case, operands: Sequence[Any], full: tuple[int, ...], tangents: dict[int, Any]) -> bool:
    """Whether castwise refuses (with a refusal error, as for an op it has no rule for at these
    dtypes) the JVP that JAX could not compute either."""
    slots = case.operand_slots
    with use_policy(case.policy):
        consts = _ours_args(case, operands)
        f = close_over(lambda *a: tuple(_call_ours(case, a)), consts, full)
        try:
            autodiff.jvp(f, [consts[i] for i in full], [Tensor(tangents[i], slots[i]) for i in full])  # type: ignore[arg-type]
        except CASTWISE_REFUSALS:
            return True
        except Exception:
            return False
    return False


class _SkipJvp(Exception):
    """The spec has no forward mode to compare (``Spec.reverse_only``)."""


def _check_derivatives(case: Case, operands: Sequence[Any], eager: Sequence[Tensor], seed: int,
                       tol_dtype: DType | None) -> list[CheckResult]:  # fmt: skip
    """JVP and VJP against JAX for every active set; the tape's inactive leaves get nothing."""
    sets = _active_sets(case)
    if not sets:
        return []
    full = sets[-1]  # combinations come by size: the last one holds every differentiable operand
    slots = case.operand_slots
    out_dtypes = [o.dtype for o in eager]
    rng = _case_rng(seed, "derivatives", case.id)
    tangents = {i: random_like(slots[i], np.shape(operands[i]), rng) for i in full}  # type: ignore[arg-type]
    cts = [random_like(o.dtype, o.shape, rng) for o in eager]
    if not any(d.is_inexact for d in out_dtypes):
        return [_jvp_to_zero(case, operands, active, tangents, out_dtypes) for active in sets]
    try:
        per_operand, want_cts = _jax_derivatives(case, operands, full, tangents, cts)
    except Exception as err:
        if _refuses_derivative(case, operands, full, tangents):
            return []  # neither differentiates it (lax's max window over complex numbers): nothing to compare
        return [_crash("jvp", err, full, side="JAX")]
    results: list[CheckResult] = []
    with use_policy(case.policy):
        consts = _ours_args(case, operands)
        for active in sets:
            f = close_over(lambda *a: tuple(_call_ours(case, a)), consts, active)
            primals = [consts[i] for i in active]
            try:
                if case.spec.reverse_only:
                    raise _SkipJvp
                _, got_t = autodiff.jvp(f, primals, [Tensor(tangents[i], slots[i]) for i in active])  # type: ignore[arg-type]
                if len(active) > 1 and any(d in _NO_ZERO for d in [*out_dtypes, *(slots[i] for i in active)]):
                    want_t = _jax_joint_jvp(case, operands, active, tangents)
                else:
                    want_t = _sum_jvps([per_operand[i] for i in active])
                results.append(_check_arrays("jvp", list(got_t), want_t, tol_dtype, False, True, active, out_dtypes))
            except _SkipJvp:
                pass
            except Exception as err:
                results.append(_crash("jvp", err, active))
            want_ct = [want_cts[full.index(i)] for i in active]
            try:
                _, vjp_ours = autodiff.vjp(f, *primals)
                got_ct = vjp_ours(tuple(Tensor(c, d) for c, d in zip(cts, out_dtypes, strict=True)))
                if any(g is None for g in got_ct):
                    results.append(CheckResult("vjp", False, math.inf, active, "an active operand got no cotangent"))
                    continue
                in_slots = [slots[i] for i in active]
                result = _check_arrays("vjp", list(got_ct), want_ct, tol_dtype, False, True, active, in_slots)  # type: ignore[arg-type]
                if result.ok and len(out_dtypes) == 1:
                    result = _check_tape(case, operands, active, cts[0], want_ct, tol_dtype, result)
                results.append(result)
            except Exception as err:
                results.append(_crash("vjp", err, active))
    return results


def _check_tape(
    case: Case,
    operands: Sequence[Any],
    active: tuple[int, ...],
    ct: np.ndarray,
    want_ct: Sequence[np.ndarray],
    tol_dtype: DType | None,
    vjp_result: CheckResult,
) -> CheckResult:
    """``backward`` on the eager tape: active leaves get JAX's cotangent, inactive ones nothing."""
    slots = case.operand_slots
    args = _ours_args(case, operands, tracked=active)
    (out,) = _call_ours(case, args)
    if out.node is None and _is_rewritten(case):  # a constant (imag of a real operand): no tape to run
        # (a format without a zero, float8_e8m0fnu, has JAX's zero cotangent all NaN)
        if all(np.all(np.isnan(w) if slots[i] in _NO_ZERO else w == 0) for i, w in zip(active, want_ct, strict=True)):
            return vjp_result
        return CheckResult(
            "vjp", False, math.inf, active, "castwise's output is a constant, JAX's cotangent is not zero"
        )
    out.backward(cotangent=Tensor(ct, out.dtype))
    for i, (slot, arg) in enumerate(zip(slots, args, strict=True)):
        if not isinstance(arg, Tensor):
            continue
        if i not in active:
            if arg.grad is not None:
                return CheckResult("vjp", False, math.inf, active, f"inactive operand {i} received a cotangent "
                                   "on the eager tape", "None", _fmt(arg.grad.numpy()))  # fmt: skip
            continue
        want = want_ct[active.index(i)]
        if arg.grad is None:  # a symbolic-zero cotangent is never stored
            # (JAX's zero is NaN in a format without one: its zero cotangent is all NaN there)
            if not np.all(np.isnan(want) if slot in _NO_ZERO else want == 0):
                return CheckResult("vjp", False, math.inf, active, f"active operand {i} got no cotangent on the "
                                   "eager tape", _fmt(want), "None")  # fmt: skip
            continue
        tape = _check_arrays("vjp", [arg.grad], [want], tol_dtype, False, True, active, [slot])  # type: ignore[list-item]
        if not tape.ok:
            tape.message = "eager tape (backward): " + tape.message
            return tape
    return vjp_result


def _jvp_to_zero(case: Case, operands: Sequence[Any], active: tuple[int, ...], tangents: dict[int, np.ndarray],
                 out_dtypes: Sequence[DType]) -> CheckResult:  # fmt: skip
    """An integer or bool output has no tangent (JAX's float0): ours must be zero."""
    try:
        with use_policy(case.policy):
            consts = _ours_args(case, operands)
            f = close_over(lambda *a: tuple(_call_ours(case, a)), consts, active)
            slots = case.operand_slots
            _, got = autodiff.jvp(f, [consts[i] for i in active], [Tensor(tangents[i], slots[i]) for i in active])  # type: ignore[arg-type]
    except Exception as err:
        return _crash("jvp", err, active)
    want = [np.zeros(g.shape, d.storage) for g, d in zip(got, out_dtypes, strict=True)]
    return _check_arrays("jvp", list(got), want, None, True, True, active, out_dtypes)


# -- the vmap rows --------------------------------------------------------------------------------------------


#: examples per vmap row
VMAP_BATCH: Final = 3


def _vmap_rows(case: Case) -> list[tuple[int, tuple[int, ...]]]:
    """``(batch axis, batched operands)`` per vmap row: axes 0 and 1, each array operand
    batched alone and all of them together (Python scalars are never batched)."""
    arrays = tuple(i for i, s in enumerate(case.operand_slots) if isinstance(s, DType))
    sets = [(i,) for i in arrays] + ([arrays] if len(arrays) > 1 else [])
    return [(axis, batched) for axis in (0, 1) for batched in sets]


def _stack_outputs(per_example: Sequence[Sequence[np.ndarray]]) -> list[np.ndarray]:
    """Per-example outputs stacked along axis 0, where ``vmap`` (``out_axes=0``) puts the batch
    whatever the operands' batch axis (stacking them along the input batch axis compared
    ``[B, 3, 4]`` with ``[3, B, 4]`` whenever the shapes coincided)."""
    return [np.stack([p[k] for p in per_example], axis=0) for k in range(len(per_example[0]))]


def _check_vmap(case: Case, operands: Sequence[Any], seed: int, tol_dtype: DType | None, exact: bool,
                primal_ok: bool) -> list[CheckResult]:  # fmt: skip
    """``autodiff.vmap`` of the op against ``jax.vmap`` of the JAX reference, one check per row.

    Example 0 is the case's operands, the others are drawn the same way with
    other seeds. The unbatched operands are example 0's. Where the primal check
    did not pass (a documented departure), the reference is castwise's own op
    on each example instead, so the row still checks the batching.
    """
    jax = _jax_modules()[0]
    examples = [list(operands)] + [_make_inputs(case, seed + k) for k in range(1, VMAP_BATCH)]
    kw = {"dtype": case.slots[-1]} if case.spec.dtype_param else {}
    checks: list[CheckResult] = []
    for axis, batched in _vmap_rows(case):
        in_axes = tuple(axis if i in batched else None for i in range(len(operands)))
        stacked = [np.stack([np.asarray(e[i]) for e in examples], axis=axis) if i in batched else operands[i]
                   for i in range(len(operands))]  # fmt: skip
        try:
            with use_policy(case.policy):
                args = _ours_args(case, stacked)
                got = _outputs(autodiff.vmap(lambda *xs: case.spec.ours(*xs, **kw), in_axes=in_axes)(*args))
        except Exception as err:
            checks.append(_crash("vmap", err, batched))
            continue
        if primal_ok:
            try:
                with _jax_x64():
                    xs = [_to_jax(x) for x in stacked]
                    ref = _jax_function(case, [_to_jax(x) for x in operands])
                    want = [np.asarray(o) for o in _outputs(jax.vmap(ref, in_axes=in_axes)(*xs))]
            except Exception:  # jax.vmap refuses what jax.lax accepts: JAX's results per example instead
                per_jax = [_run_jax(case, [e[i] if i in batched else operands[i] for i in range(len(operands))])
                           for e in examples]  # fmt: skip
                want = _stack_outputs(per_jax)
        else:
            with use_policy(case.policy):
                per = [_call_ours(case, _ours_args(case, [e[i] if i in batched else operands[i]
                                                          for i in range(len(operands))]))
                       for e in examples]  # fmt: skip
            want = _stack_outputs([[o.numpy() for o in p] for p in per])
        # XLA divides by an unbatched (broadcast) operand through its reciprocal: an ulp off
        row_exact = exact and not (case.spec.op == "div" and len(batched) < len(operands))
        check = _check_arrays("vmap", got, want, tol_dtype, row_exact, False, batched,
                              [o.dtype for o in got] if not primal_ok else None)  # fmt: skip
        if not check.ok:
            check.message = f"batch axis {axis}, operands {batched} batched: {check.message}"
        checks.append(check)
    return checks


def run_case(case: Case, seed: int = 0) -> CaseResult:
    """Run every check of ``case``."""
    start = time.process_time()
    try:
        result = _run_case(case, seed)
    except Exception as err:  # a bug of the sweep itself: report it on the case, keep sweeping
        result = CaseResult(case.id, case.spec.name, case.spec.family, case.policy,
                            tuple(slot_name(s) for s in case.slots), case.describe())  # fmt: skip
        result.checks.append(_crash("agree", err, side="the parity sweep"))
        result.settle(case)
    result.cpu_s = time.process_time() - start
    return result


def _run_case(case: Case, seed: int) -> CaseResult:
    """``run_case`` without the guard: agree, then primal, replay and derivatives."""
    result = CaseResult(case.id, case.spec.name, case.spec.family, case.policy,
                        tuple(slot_name(s) for s in case.slots), case.describe())  # fmt: skip
    operands = _make_inputs(case, seed)
    # castwise, eagerly, untracked
    eager: list[Tensor] = []
    ours_err: BaseException | None = None
    try:
        with use_policy(case.policy):
            eager = _call_ours(case, _ours_args(case, operands))
    except CASTWISE_REFUSALS as err:
        ours_err = err
    except Exception as err:
        result.checks.append(_crash("agree", err))
        result.settle(case)
        return result
    # JAX (under a policy other than jax, through castwise's plan: no plan, no reference)
    want: list[np.ndarray] = []
    jax_err: str = ""
    try:
        if case.spec.arity and case.policy != "jax":
            _planned(case)
    except PromotionError as err:
        jax_err = f"no reference: the {case.policy} plan refuses ({err})"
    if not jax_err:
        try:
            want = _run_jax(case, operands)
        except Exception as err:
            jax_err = f"{type(err).__name__}: {err}".splitlines()[0]
    result.castwise_error = "" if ours_err is None else f"{type(ours_err).__name__}: {ours_err}"
    result.jax_error = jax_err
    if ours_err is not None or jax_err:
        if ours_err is not None and jax_err:
            result.status = "unsupported"
            return result
        dep = departure_for(case, operands, ours_err is not None, bool(jax_err))
        if dep is not None:
            result.status = "departure"
            result.departure = dep.name
            result.checks.append(CheckResult("agree", True))
            return result
        who = "castwise refuses what JAX accepts" if ours_err is not None else "castwise accepts what JAX refuses"
        result.checks.append(CheckResult("agree", False, math.inf, None, who,
                                         jax_err or "accepted", result.castwise_error or "accepted"))  # fmt: skip
        result.settle(case)
        return result
    result.checks.append(CheckResult("agree", True))
    # primal: JAX's dtype exactly; values exactly or within the narrowest dtype's tolerance
    slots = [s for s in case.slots if isinstance(s, DType)]
    out_dtypes = [o.dtype for o in eager]
    try:
        targets = _planned(case) if case.spec.arity else []
    except PromotionError:  # jax policy with a jnp reference: castwise accepted, so its plan did too
        targets = []
    tol_dtype = _narrowest([*slots, *out_dtypes, *targets])
    widest_kind = max((s.kind for s in [*slots, *out_dtypes]), key=lambda k: dt.KIND_CATEGORY[k], default="int")
    exact = widest_kind in case.spec.exact or tol_dtype is None
    if case.spec.scalar_not_exact and any(isinstance(s, PyScalar) for s in case.slots):
        exact = tol_dtype is None
    primal = _check_arrays("primal", eager, want, tol_dtype, exact, False)
    result.checks.append(primal)
    if case.spec.arity:
        result.checks.append(_check_replay(case, operands, eager))
        result.checks.extend(_check_vmap(case, operands, seed, tol_dtype, exact, primal.ok))
    same_avals = all(o.dtype is dt.dtype(w.dtype) and o.shape == w.shape for o, w in zip(eager, want, strict=True))
    if same_avals:  # a wrong dtype or shape makes every cotangent check fail on JAX's side: said once above
        result.checks.extend(_check_derivatives(case, operands, eager, seed, tol_dtype))
    result.settle(case)
    return result


# -- running the sweep -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    """What ``castwise parity`` was asked to run."""

    policies: tuple[str, ...] = DEFAULT_POLICIES
    ops: tuple[str, ...] = ("*",)
    dtypes: tuple[DType, ...] = DEFAULT_DTYPES
    seed: int = 0
    quick: bool = False
    jobs: int = 1
    #: known failures fail the run too
    strict: bool = False
    #: JAX's persistent compilation cache directory, shared by the workers ("": none)
    compile_cache: str = ""
    #: ``(K, N)``: run shard K of N of the selection only (``autodiff.parity.shards``)
    shard: tuple[int, int] | None = None


def _duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``: a duration for the progress bar."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def stream_width(stream: TextIO | None) -> int:
    """The columns of the terminal ``stream`` writes to: ``$COLUMNS`` first, as
    ``shutil.get_terminal_size`` does, then the terminal's own size, else 80."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(stream.fileno()).columns if stream is not None else 80  # type: ignore[union-attr]
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return 80


class Progress:
    """A progress bar on a stream (a line per 10% when it is not a terminal): cases done,
    failures, the time so far, cases per second and the time left at that rate."""

    def __init__(self, total: int, stream: TextIO | None = sys.stderr, width: int = 30) -> None:
        self.total = max(total, 1)
        self.stream = stream
        self.width = width
        self.start = time.monotonic()
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self.columns = stream_width(stream) if self.tty else 0
        self._last_tenth = -1
        self._last_draw = 0.0

    def status(self, done: int, failed: int, now: float | None = None) -> str:
        """``43/86 cases, 0 failed, 12s, 3.6 cases/s, 12s left`` (no rate before the first case)."""
        elapsed = (time.monotonic() if now is None else now) - self.start
        text = f"{done}/{self.total} cases, {failed} failed, {_duration(elapsed)}"
        if done and elapsed > 0:
            rate = done / elapsed
            text += f", {rate:.1f} cases/s" if rate < 100 else f", {rate:.0f} cases/s"
            if done < self.total:
                text += f", {_duration((self.total - done) / rate)} left"
        return text

    def update(self, done: int, failed: int) -> None:
        """Show ``done`` of ``total`` cases (redrawn at most every 0.1 s on a terminal)."""
        if self.stream is None:
            return
        frac = done / self.total
        now = time.monotonic()
        if self.tty:
            if now - self._last_draw < 0.1 and done < self.total:
                return
            self._last_draw = now
            text = self.status(done, failed, now)
            # the bar takes what the text leaves of the terminal's width (none on a narrow one)
            width = min(self.width, self.columns - len(text) - 4)
            if width >= 5:
                fill = int(frac * width)
                line = f"[{'#' * fill}{'.' * (width - fill)}] {text}"
            else:
                line = text[: max(self.columns - 1, 1)]
            self.stream.write(f"\r{line}\x1b[K")  # (erase what a longer line left)
            if done >= self.total:
                self.stream.write("\n")
        else:
            tenth = int(frac * 10)
            if tenth == self._last_tenth:
                return
            self._last_tenth = tenth
            self.stream.write(f"parity: {self.status(done, failed, now)}\n")
        self.stream.flush()


@functools.lru_cache(maxsize=2)
def _cases_for(options: Options) -> list[Case]:
    """The case list of a run (each worker builds it once; it is deterministic)."""
    if options.shard is not None:
        selection = _cases_for(replace(options, shard=None))
        return [selection[i] for i in shards.shard_indices(selection, options.shard)]
    return build_cases(options.policies, options.ops, options.dtypes, options.seed, options.quick)


def _run_shard(options: Options, indices: Sequence[int]) -> list[CaseResult]:
    """Worker entry point: rebuild the (deterministic) case list and run a shard of it."""
    if options.compile_cache:
        use_compile_cache(options.compile_cache)
    cases = _cases_for(options)
    return [run_case(cases[i], options.seed) for i in indices]


def run_parity(options: Options, progress: TextIO | None = sys.stderr) -> Report:
    """Run the sweep and return its report."""
    start = time.monotonic()
    cases = build_cases(options.policies, options.ops, options.dtypes, options.seed, options.quick)
    if options.shard is not None:  # (as _cases_for, which the workers index into)
        cases = [cases[i] for i in shards.shard_indices(cases, options.shard)]
    if options.compile_cache:
        use_compile_cache(options.compile_cache)
    bar = Progress(len(cases), progress)
    results: list[CaseResult] = []
    failed = 0
    bar.update(0, 0)
    if options.jobs > 1 and len(cases) > 1:
        try:
            results = _run_parallel(options, cases, bar)
        except (OSError, RuntimeError) as err:  # no worker processes here (a sandbox, a broken pool)
            print(f"parity: worker processes failed ({err}); running in this process", file=sys.stderr)
            results = []
    if not results:
        for i, case in enumerate(cases):
            r = run_case(case, options.seed)
            failed += r.status == "failed"
            results.append(r)
            bar.update(i + 1, failed)
    return Report(results, options.seed, options.quick, options.policies, time.monotonic() - start, options.strict)


def _run_parallel(options: Options, cases: Sequence[Case], bar: Progress) -> list[CaseResult]:
    """Each spec's cases (every policy) go to one worker, largest groups first: JAX compiles
    once per primitive signature and process, and a spec's cases share their signatures."""
    import concurrent.futures
    import multiprocessing

    groups: dict[str, list[int]] = {}
    for i, case in enumerate(cases):
        groups.setdefault(case.spec.name, []).append(i)
    shards = sorted(groups.values(), key=len, reverse=True)
    results: dict[int, CaseResult] = {}
    done = failed = 0
    # spawn, not fork: JAX's runtime threads do not survive a fork.
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(options.jobs, mp_context=ctx) as pool:
        futures = {pool.submit(_run_shard, options, shard): shard for shard in shards}
        for fut in concurrent.futures.as_completed(futures):
            for i, r in zip(futures[fut], fut.result(), strict=True):
                results[i] = r
                failed += r.status == "failed"
            done += len(futures[fut])
            bar.update(done, failed)
    return [results[i] for i in range(len(cases))]


def add_parser(sub: Any) -> None:
    """Register ``castwise parity`` on the CLI's subparsers."""
    p = sub.add_parser(
        "parity",
        help="sweep ops x dtypes x operand orders x active sets against JAX (primal, replay, JVP, VJP)",
        description="Compare castwise with JAX on every op of the vocabulary; exit 1 on any failure.",
    )
    p.add_argument("--policy", dest="policies", nargs="+", action="extend", metavar="P",
                   help=f"promotion policies to sweep (default: {' '.join(DEFAULT_POLICIES)})")  # fmt: skip
    p.add_argument("--ops", default="*", metavar="PATTERN",
                   help="comma-separated glob patterns over op names, sweep ids and families "
                   "(e.g. 'add,dot_*,unary')")  # fmt: skip
    p.add_argument("--dtypes", default=None, metavar="LIST",
                   help="comma-separated dtypes (names or short names; 'core', 'float8', 'narrow-int'); a case runs "
                   "when all its dtypes are listed (default: core + float8 + narrow-int)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0, metavar="N",
                   help="seed of the inputs and sampled dtype pairs, 0 or more (default 0)")  # fmt: skip
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"a stratified sample: {QUICK_CASES} // (number of op specs) cases per spec, a few hundred",
    )
    p.add_argument("--json", dest="json_file", metavar="FILE", help="write the full report as JSON")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="worker processes; 0 (the default, or $CASTWISE_PARITY_JOBS): one per CPU, at most 4, "
                   "for runs of 200 cases or more, none for smaller runs")  # fmt: skip
    p.add_argument(
        "--markdown",
        dest="markdown_file",
        metavar="FILE",
        help="write the summary, unsupported combinations, departures and known failures as Markdown",
    )
    p.add_argument("--strict", action="store_true", help="count known failures (KNOWN_FAILURES) as failures")
    p.add_argument("--compile-cache", metavar="DIR", default=None,
                   help="JAX's persistent compilation cache, kept between runs and shared by the workers "
                   "(default: $CASTWISE_PARITY_CACHE, else castwise/parity-xla in the user's cache "
                   "directory)")  # fmt: skip
    p.add_argument("--no-compile-cache", action="store_true", help="compile every JAX executable afresh")
    p.add_argument("--max-failures", type=int, default=10, metavar="N", help="failures printed in full (default 10)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--shard", metavar="K/N", default=None,
                   help="run shard K of N (1 to N) of the selected cases, balanced by expected cost, for a CI "
                   "matrix; --merge combines the shards' --json reports")  # fmt: skip
    p.add_argument("--merge", nargs="+", metavar="JSON", default=None,
                   help="print (and --json/--markdown write) the report of the whole run from its shards' "
                   "--json reports, with its exit status; runs nothing")  # fmt: skip
    p.set_defaults(func=cmd_parity)


def _cpus() -> int:
    """CPUs this process may run on (the affinity mask where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


class _UsageError(Exception):
    """A bad ``castwise parity`` argument: one line, exit status 2."""


def _hint(word: str, names: Sequence[str]) -> str:
    from autodiff.suggest import did_you_mean

    hint = did_you_mean(word, names)
    return f"; {hint}" if hint else ""


def _policies(args: Any) -> tuple[str, ...]:
    import runtime

    policies = tuple(args.policies) if args.policies else DEFAULT_POLICIES
    known = runtime.policies()
    for p in policies:
        if p not in known:
            raise _UsageError(f"unknown policy {p!r}{_hint(p, known)} (the policies: {', '.join(known)})")
    return policies


def _dtypes(text: str | None) -> tuple[DType, ...]:
    try:
        return parse_dtypes(text)
    except TypeError:
        groups = ("core", "float8", "narrow-int", "all")
        names = [*groups, *(n for d in dt.ALL_DTYPES for n in (d.short, d.name))]
        for item in (t.strip() for t in (text or "").split(",")):
            if item and item not in groups:
                try:
                    dt.dtype(item)
                except TypeError:
                    hint = _hint(item, names) or f" (dtype names such as f32 or float32, or {', '.join(groups)})"
                    raise _UsageError(f"--dtypes: unknown dtype {item!r}{hint}") from None
        raise


def _patterns(text: str) -> tuple[str, ...]:
    """``--ops``: every pattern must name something (an op, a sweep spec or a family)."""
    from autodiff.parity.cases import build_specs

    patterns = tuple(p.strip() for p in text.split(",") if p.strip())
    if not patterns:
        raise _UsageError(f"no cases match --ops {text!r}: give op names, sweep specs or families ('add,unary')")
    specs = build_specs()
    names = sorted({n for s in specs for n in (s.name, s.op, s.family)})
    families = sorted({s.family for s in specs})
    for p in patterns:
        if not any(fnmatch.fnmatchcase(n, p) for n in names):
            hint = _hint(p, names) or f"; the families: {', '.join(families)}"
            raise _UsageError(f"no cases match --ops {p!r}: no op, sweep spec or family is named so{hint}")
    return patterns


def _jobs(value: int | None) -> int:
    """``--jobs``: 0 (choose: one per CPU, at most 4, for runs of 200 cases or more) or a count."""
    if value is None:
        env = os.environ.get("CASTWISE_PARITY_JOBS", "").strip()
        if not env:
            return 0
        try:
            value = int(env)
        except ValueError:
            raise _UsageError(f"$CASTWISE_PARITY_JOBS must be a whole number (0: choose), got {env!r}") from None
        flag = "$CASTWISE_PARITY_JOBS"
    else:
        flag = "--jobs"
    if value < 0:
        raise _UsageError(f"{flag} takes 0 (one worker per CPU, at most 4, for runs of 200 cases or more) "
                          f"or a number of workers, got {value}")  # fmt: skip
    return value


def _writable(flag: str, path: str) -> None:
    """Refuse an output path that could not be written, before the sweep rather than after it."""
    where = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise _UsageError(f"{flag} {path}: is a directory; give a file name")
    if not os.path.isdir(where):
        raise _UsageError(f"{flag} {path}: no such directory {where}")
    if not os.access(where, os.W_OK | os.X_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise _UsageError(f"{flag} {path}: not writable")


def _options(args: Any) -> Options:
    """The run ``args`` ask for, every argument checked (nothing heavy imported yet: not JAX)."""
    policies = _policies(args)
    dtypes = _dtypes(args.dtypes)
    patterns = _patterns(args.ops)
    jobs = _jobs(args.jobs)
    if args.seed < 0:
        raise _UsageError(f"--seed takes 0 or more, got {args.seed}")
    if args.max_failures < 0:
        raise _UsageError(f"--max-failures takes 0 or more, got {args.max_failures}")
    for flag, path in (("--json", args.json_file), ("--markdown", args.markdown_file)):
        if path:
            _writable(flag, path)
    try:
        shard = shards.parse_shard(args.shard) if args.shard is not None else None
    except ValueError as err:
        raise _UsageError(str(err)) from None
    cache = "" if args.no_compile_cache else (args.compile_cache or default_compile_cache())
    return Options(policies, patterns, dtypes, args.seed, args.quick, jobs, args.strict, cache, shard)


def cmd_parity(args: Any) -> int:
    """``castwise parity``: check the arguments, run, print the report, write JSON; 1 on any failure."""
    if args.merge:
        return _cmd_merge(args)
    try:
        options = _options(args)
    except _UsageError as err:
        print(f"castwise parity: {err}", file=sys.stderr)
        return 2
    # XLA's C++ log lines (argmax of int2: "RET_CHECK failure ... reduce_decomposer.cc:95") duplicate
    # the errors JAX raises, which the report gives on their cases (unsupported: JAX's message in
    # --json): raw logs are not a report. Set before JAX loads (workers inherit it); a user's own wins.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        _jax_modules()
    except ImportError:
        print("castwise parity: JAX is needed: pip install 'castwise[jax]'", file=sys.stderr)
        return 2
    n_cases = len(_cases_for(options))
    selected = len(_cases_for(replace(options, shard=None))) if options.shard else n_cases
    if not selected:
        print(f"castwise parity: no cases match --ops {args.ops!r} and --dtypes {args.dtypes!r}", file=sys.stderr)
        return 2
    if options.jobs == 0:
        # Each worker imports JAX and compiles its own primitives (seconds): small runs stay in process.
        options = replace(options, jobs=1 if n_cases < 200 else min(_cpus(), 4))
    report = run_parity(options, None if args.no_progress else sys.stderr)
    report.shard = {"k": 1, "n": 1, "selected": selected, "ops": list(options.ops),
                    "dtypes": [d.name for d in options.dtypes]}  # fmt: skip
    if options.shard:
        k, n = options.shard
        report.shard.update(k=k, n=n)
        report.indices = shards.shard_indices(_cases_for(replace(options, shard=None)), options.shard)
        print(f"shard {k}/{n}: {n_cases} of the {selected} selected cases "
              "(castwise parity --merge combines the shards' --json reports)")  # fmt: skip
    return _write_report(args, report)


def _cmd_merge(args: Any) -> int:
    """``castwise parity --merge A.json B.json ...``: the whole run's report from its shards' (no JAX)."""
    try:
        given = shards.merge_conflicts(args)
        if given:
            raise _UsageError(f"--merge combines the shards' reports and runs nothing: {', '.join(given)} "
                              "belong to the shards' own runs")  # fmt: skip
        if args.max_failures < 0:
            raise _UsageError(f"--max-failures takes 0 or more, got {args.max_failures}")
        for flag, path in (("--json", args.json_file), ("--markdown", args.markdown_file)):
            if path:
                _writable(flag, path)
        report = shards.merge_reports([(p, shards.load_report(p)) for p in args.merge], args.strict)
    except (_UsageError, shards.MergeError) as err:
        print(f"castwise parity: {err}", file=sys.stderr)
        return 2
    return _write_report(args, report)


def _write_report(args: Any, report: Report) -> int:
    """Print the report, write its JSON and Markdown; 1 on any failure."""
    print(report.render(args.max_failures, width=terminal_width()))
    if args.json_file:
        with open(args.json_file, "w") as fh:
            write_json(report.to_json(), fh)
    if args.markdown_file:
        text = markdown(report)
        if os.path.exists(args.markdown_file):  # a page with a generated block (docs/parity.md): that block
            with open(args.markdown_file) as fh:
                text = splice_markdown(fh.read(), text) or text
        with open(args.markdown_file, "w") as fh:
            fh.write(text)
    return 0 if report.ok else 1
