"""The checks of one case, run from JAX's answers (``Outcome``s) alone.

``run_case`` prepares a case (castwise's eager side and its requests, ``references.prepare``),
gets the answers from a ``Source`` (JAX, eagerly, by default; the reference store or an
oracle database otherwise) and checks castwise against them: no JAX call happens here, so a
sweep replayed from an oracle runs without JAX installed.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

import autodiff
from autodiff.parity._common import (
    Case,
    CheckResult,
    PyScalar,
    _as_float,
    _call_ours,
    _eps,
    _make_inputs,
    _ours_args,
    _outputs,
    _planned,
    slot_name,
)
from autodiff.parity.departures import departure_for
from autodiff.parity.references import (
    NO_ZERO,
    VMAP_BATCH,
    Outcome,
    Prepared,
    active_sets,
    evaluate_eager,
    joint_jvp_needed,
    key,
    prepare,
    vmap_rows,
)
from autodiff.parity.runner import CASTWISE_REFUSALS, CaseResult, compare, tolerance
from autodiff.record import enable_grad
from autodiff.testing import close_over
from passes import verify
from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.errors import CastwiseError
from runtime.core.graph import collect, const_var, evaluate, trace
from runtime.core.plan import rewrite
from runtime.core.promotion import PromotionError, use_policy
from runtime.core.shapes import OpTypeError
from runtime.core.tensor import Tensor

#: Where a case's answers come from: its prepared requests in, an outcome per request key out.
Source = Callable[[Prepared], Mapping[str, Outcome]]


def eager_source(prep: Prepared) -> dict[str, Outcome]:
    """JAX, called eagerly on each request (``references.evaluate_eager``)."""
    return {r.key: o for r, o in zip(prep.requests, evaluate_eager(prep.requests), strict=True)}


class ReferenceMissing(CastwiseError, LookupError):
    """A source had no answer for a request the checks read (a sweep bug, reported on the case)."""


def _answer(answers: Mapping[str, Outcome], case: Case, what: str) -> Outcome:
    try:
        return answers[key(case, what)]
    except KeyError:
        raise ReferenceMissing(f"no reference for {key(case, what)}") from None


def _is_rewritten(case: Case) -> bool:
    """Whether the plan rewrites the case's op into other ops (``runtime.core.plan.rewrite``)."""
    if case.spec.targets is not None:  # a composed function: its formula is the reference, no rewrite
        return False
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


class _JointRefused(Exception):
    """JAX refused the joint JVP of an active set (its message: the refusal)."""


def _refused(check: str, error: str, active: tuple[int, ...] | None, side: str) -> CheckResult:
    """A failed check where JAX's answer was a refusal (``error``: ``"TypeError: ..."``)."""
    return CheckResult(check, False, math.inf, active, f"{side} raised {error}", "a result", error)


def _check_derivatives(prep: Prepared, answers: Mapping[str, Outcome], tol_dtype: DType | None) -> list[CheckResult]:
    """JVP and VJP against JAX for every active set; the tape's inactive leaves get nothing.

    JAX's derivatives are asked once per case rather than once per active set: ``J_i t_i``
    per operand ``i`` (``jax.jvp`` with only that operand active) and every operand's
    cotangent in castwise's convention from one ``jax.vjp``. Both maps are linear, so the
    expectation for any active set follows: its JVP is the sum of its operands' ``J_i t_i``
    (except in a format without a zero, ``NO_ZERO``, where a joint JVP was asked), and an
    operand's cotangent does not depend on which others are active.
    """
    case, operands, eager = prep.case, prep.operands, prep.eager
    sets = active_sets(case)
    if not sets:
        return []
    full = sets[-1]  # combinations come by size: the last one holds every differentiable operand
    slots = case.operand_slots
    out_dtypes = [o.dtype for o in eager]
    tangents, cts = prep.tangents, prep.cts
    if not any(d.is_inexact for d in out_dtypes):
        return [_jvp_to_zero(case, operands, active, tangents, out_dtypes) for active in sets]
    asked = [_answer(answers, case, f"jvp:{i}") for i in full]
    asked.append(_answer(answers, case, f"vjp:{','.join(map(str, full))}"))
    refusal = next((o.error for o in asked if o.arrays is None), None)
    if refusal is not None:
        if _refuses_derivative(case, operands, full, tangents):
            return []  # neither differentiates it (lax's max window over complex numbers): nothing to compare
        return [_refused("jvp", refusal, full, side="JAX")]
    per_operand = {i: list(o.arrays or ()) for i, o in zip(full, asked, strict=False)}
    want_cts = list(asked[-1].arrays or ())
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
                if joint_jvp_needed(active, slots, out_dtypes):
                    joint = _answer(answers, case, f"jvp:{','.join(map(str, active))}")
                    if joint.arrays is None:
                        raise _JointRefused(joint.error)
                    want_t = [_as_float(t) for t in joint.arrays]
                else:
                    want_t = _sum_jvps([per_operand[i] for i in active])
                results.append(_check_arrays("jvp", list(got_t), want_t, tol_dtype, False, True, active, out_dtypes))
            except _SkipJvp:
                pass
            except _JointRefused as err:  # reported as it always was, on this set's jvp check
                results.append(_refused("jvp", str(err), active, side="castwise"))
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
        if all(np.all(np.isnan(w) if slots[i] in NO_ZERO else w == 0) for i, w in zip(active, want_ct, strict=True)):
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
            if not np.all(np.isnan(want) if slot in NO_ZERO else want == 0):
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


def _stack_outputs(per_example: Sequence[Sequence[np.ndarray]]) -> list[np.ndarray]:
    """Per-example outputs stacked along axis 0, where ``vmap`` (``out_axes=0``) puts the batch
    whatever the operands' batch axis (stacking them along the input batch axis compared
    ``[B, 3, 4]`` with ``[3, B, 4]`` whenever the shapes coincided)."""
    return [np.stack([p[k] for p in per_example], axis=0) for k in range(len(per_example[0]))]


class ReferenceRefused(CastwiseError, RuntimeError):
    """JAX refused a reference that it must give (a vmap row of a case whose primal it gave)."""


def _check_vmap(prep: Prepared, answers: Mapping[str, Outcome], tol_dtype: DType | None, exact: bool,
                primal_ok: bool) -> list[CheckResult]:  # fmt: skip
    """``autodiff.vmap`` of the op against ``jax.vmap`` of the JAX reference, one check per row.

    Example 0 is the case's operands, the others are drawn the same way with
    other seeds. The unbatched operands are example 0's. Where the primal check
    did not pass (a documented departure), the reference is castwise's own op
    on each example instead, so the row still checks the batching.
    """
    case, operands, seed = prep.case, prep.operands, prep.seed
    examples = [list(operands)] + [_make_inputs(case, seed + k) for k in range(1, VMAP_BATCH)]
    kw = {"dtype": case.slots[-1]} if case.spec.dtype_param else {}
    checks: list[CheckResult] = []
    for axis, batched in vmap_rows(case):
        in_axes = tuple(axis if i in batched else None for i in range(len(operands)))
        stacked = prep.vmap_args[(axis, batched)]
        try:
            with use_policy(case.policy):
                args = _ours_args(case, stacked)
                got = _outputs(autodiff.vmap(lambda *xs: case.spec.ours(*xs, **kw), in_axes=in_axes)(*args))
        except Exception as err:
            checks.append(_crash("vmap", err, batched))
            continue
        if primal_ok:
            row = _answer(answers, case, f"vmap:{axis}:{','.join(map(str, batched))}")
            if row.arrays is None:  # neither jax.vmap nor JAX per example: the sweep cannot check the row
                raise ReferenceRefused(row.error)
            want = list(row.arrays)
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


def run_case(case: Case, seed: int = 0, source: Source = eager_source, prep: Prepared | None = None) -> CaseResult:
    """Run every check of ``case``, with JAX's answers from ``source`` (JAX itself by default);
    ``prep`` is the case already prepared (``references.prepare``) where the caller has it."""
    start = time.process_time()
    try:
        result = _run_case(prep if prep is not None else prepare(case, seed), source)
    except Exception as err:  # a bug of the sweep itself: report it on the case, keep sweeping
        result = CaseResult(case.id, case.spec.name, case.spec.family, case.policy,
                            tuple(slot_name(s) for s in case.slots), case.describe())  # fmt: skip
        result.checks.append(_crash("agree", err, side="the parity sweep"))
        result.settle(case)
    result.cpu_s = time.process_time() - start
    return result


def _run_case(prep: Prepared, source: Source) -> CaseResult:
    """``run_case`` without the guard: agree, then primal, replay and derivatives."""
    case, operands, eager = prep.case, prep.operands, prep.eager
    result = CaseResult(case.id, case.spec.name, case.spec.family, case.policy,
                        tuple(slot_name(s) for s in case.slots), case.describe())  # fmt: skip
    ours_err = prep.ours_err
    # (asked even with no request: a store or an oracle keeps the case's record, its refusals)
    answers = source(prep)
    result.reference = getattr(answers, "entry", "")
    if ours_err is not None and not isinstance(ours_err, CASTWISE_REFUSALS):
        result.checks.append(_crash("agree", ours_err))
        result.settle(case)
        return result
    # JAX (under a policy other than jax, through castwise's plan: no plan, no reference)
    jax_err = prep.plan_refusal
    want: list[np.ndarray] = []
    if not jax_err:
        primal_ref = _answer(answers, case, "primal")
        jax_err = primal_ref.error if primal_ref.arrays is None else ""
        want = list(primal_ref.arrays or ())
    result.castwise_error = "" if ours_err is None else f"{type(ours_err).__name__}: {ours_err}"
    result.jax_error = jax_err
    if ours_err is not None or jax_err:
        if ours_err is not None and jax_err:
            result.status = "unsupported"
            return result
        lax = answers.get(key(case, "lax"))
        dep = departure_for(case, operands, ours_err is not None, bool(jax_err),
                            lax_refused=lax is not None and lax.arrays is None)  # fmt: skip
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
        result.checks.extend(_check_vmap(prep, answers, tol_dtype, exact, primal.ok))
    same_avals = all(o.dtype is dt.dtype(w.dtype) and o.shape == w.shape for o, w in zip(eager, want, strict=True))
    if same_avals:  # a wrong dtype or shape makes every cotangent check fail on JAX's side: said once above
        result.checks.extend(_check_derivatives(prep, answers, tol_dtype))
    result.settle(case)
    return result
