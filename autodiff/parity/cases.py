"""The sweep's op table (``build_specs``, assembled from the ``cases_*`` modules) and its case
list.
"""

from __future__ import annotations

import fnmatch
import functools
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

import numpy as np

from autodiff.parity import (
    cases_binary,
    cases_calls,
    cases_composed,
    cases_contraction,
    cases_conversion,
    cases_convolution,
    cases_fft,
    cases_indexing,
    cases_linalg,
    cases_reductions,
    cases_special,
    cases_structural,
    cases_unary,
    cases_windowed,
)
from autodiff.parity._common import (
    _ALL_EXACT,
    _INT_EXACT,
    CORE_DTYPES,
    DEFAULT_DTYPES,
    DEFAULT_POLICIES,
    FLOAT8_DTYPES,
    NARROW_INT_DTYPES,
    PY_SCALARS,
    QUICK_CASES,
    Case,
    PyScalar,
    Slot,
    Spec,
    _call_ours,
    _case_rng,
    _jax_modules,
    _jnp,
    _lax,
    _make_inputs,
    _ours_args,
)
from autodiff.parity.runner import CASTWISE_REFUSALS
from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core import ops
from runtime.core.dtypes import DType
from runtime.core.promotion import get_policy_object, use_policy
from runtime.core.tensor import Tensor

# -- broadcasting and weak operands ---------------------------------------------------------------


def _broadcast_lax(name: str) -> Callable[..., Any]:
    """``lax.<name>`` on operands broadcast to one shape first (lax takes no NumPy broadcasting)."""

    def ref(*xs: Any) -> Any:
        return getattr(_lax(), name)(*_jnp().broadcast_arrays(*xs))

    return ref


def _jnp_ref(name: str) -> Callable[..., Any]:
    def ref(*xs: Any) -> Any:
        return getattr(_jnp(), name)(*xs)

    return ref


def _weak(value: float | int) -> Tensor:
    """A weakly typed 0-d tensor, as ``jax.numpy.asarray(value)`` (the weak specs run under jax)."""
    from runtime.core.executor import asarray

    out = asarray(value)
    assert out.weak, "weak specs run under a policy with weak types"
    return out


_INT8_ROW: Final = np.array([1, -2, 3], dtype=np.int8)


def broadcast_and_weak_specs() -> list[Spec]:
    """Rows for NumPy broadcasting (every elementwise family, rank-different and rank-equal
    size-1 shapes) and for weakly typed operands (``asarray(2.5)``, ``int8 * 2.5``, under jax).

    Broadcast rows compare with ``jax.numpy`` under jax and with ``lax`` on explicitly
    broadcast operands elsewhere; their replay check holds the recorded
    ``broadcast_in_dim`` equations to eager execution bit for bit, and their VJP checks
    that cotangents are summed back to each operand's shape.
    """
    specs = [
        Spec("div-broadcast", "div", F.div, _broadcast_lax("div"), ("x", "y"), ((3, 1), (4,)), ("any", "nonzero"),
             _jnp_ref("true_divide"), promoted=(0, 1), plan_layout=(0, 1), exact=_INT_EXACT),  # XLA divides by
        # a broadcast operand as a multiplication by its reciprocal (an ulp off): compared within tolerance
        Spec("min-broadcast-rank-equal", "min", F.min, _broadcast_lax("min"), ("x", "y"), ((3, 4), (3, 1)),
             ("any", "any"), _jnp_ref("minimum"), promoted=(0, 1), plan_layout=(0, 1), exact=_ALL_EXACT),
        Spec("atan2-broadcast", "atan2", F.atan2, _broadcast_lax("atan2"), ("x", "y"), ((2, 1, 3), (4, 1)),
             ("any", "any"), _jnp_ref("arctan2"), promoted=(0, 1), plan_layout=(0, 1), exact=_INT_EXACT),
        Spec("lt-broadcast", "lt", F.lt, _broadcast_lax("lt"), ("x", "y"), ((3,), (2, 1)), ("any", "any"),
             _jnp_ref("less"), promoted=(0, 1), plan_layout=(0, 1), exact=_ALL_EXACT),
        Spec("and-broadcast", "and", F.logical_and, _broadcast_lax("bitwise_and"), ("x", "y"), ((1, 3), (2, 1)),
             ("any", "any"), _jnp_ref("bitwise_and"), promoted=(0, 1), plan_layout=(0, 1), exact=_ALL_EXACT),
        Spec("select-broadcast", "select", F.select, _broadcast_lax("select"), ("pred", "on_true", "on_false"),
             ((3,), (2, 1), (2, 3)), ("any", "any", "any"), lambda p, a, b: _jnp().where(p, a, b),
             promoted=(1, 2), fixed={0: dt.bool_}, plan_layout=(0, 1, 2), exact=_ALL_EXACT),
        Spec("clamp-broadcast", "clamp", F.clamp, _broadcast_lax("clamp"), ("min", "operand", "max"),
             ((1,), (2, 3), (3,)), ("any", "any", "any"), promoted=(0, 1, 2), plan_layout=(0, 1, 2),
             exact=_ALL_EXACT),
        # weak operands (jax only: the other policies have no weak values)
        Spec("min-weak-float", "min", lambda x: F.min(x, _weak(2.5)), lambda x: _lax().min(x, x),
             ("x",), ((3,),), ("any",), lambda x: _jnp().minimum(x, _jnp().asarray(2.5)),
             plan_layout=(0, PyScalar("float")), exact=_ALL_EXACT, policies=("jax",)),
        Spec("sub-weak-int", "sub", lambda x: F.sub(_weak(3), x), lambda x: _lax().sub(x, x),
             ("x",), ((3,),), ("any",), lambda x: _jnp().subtract(_jnp().asarray(3), x),
             plan_layout=(PyScalar("int"), 0), exact=_ALL_EXACT, policies=("jax",)),
        Spec("max-weak-result", "max", lambda x: F.max(F.mul(_INT8_ROW, 2.5), x), lambda x: _lax().max(x, x),
             ("x",), ((3,),), ("any",),
             lambda x: _jnp().maximum(_jnp().multiply(_jnp().asarray(_INT8_ROW), 2.5), x),
             plan_layout=(PyScalar("float"), 0), exact=_ALL_EXACT, policies=("jax",)),
        Spec("add-weak-tanh", "tanh", lambda x: F.add(F.tanh(_weak(0.5)), x), lambda x: _lax().add(x, x),
             ("x",), ((3,),), ("any",), lambda x: _jnp().add(_jnp().tanh(_jnp().asarray(0.5)), x),
             plan_layout=(0,), exact=frozenset(), policies=("jax",)),
    ]  # fmt: skip
    return specs


@functools.cache
def build_specs() -> tuple[Spec, ...]:
    """The sweep's op table: every op of the vocabulary, some in several configurations."""
    specs: list[Spec] = [
        *cases_binary.specs(),
        *cases_contraction.specs(),
        *cases_indexing.specs(),
        *cases_unary.specs(),
        *cases_conversion.specs(),
        *cases_reductions.specs(),
        *cases_structural.specs(),
        *cases_calls.specs(),
        *cases_linalg.specs(),
        *cases_special.specs(),
        *cases_windowed.specs(),
        *cases_convolution.specs(),
        *cases_fft.specs(),
        *cases_composed.specs(),
    ]
    specs = [_with_family_jnp(s) for s in specs]
    specs.extend(broadcast_and_weak_specs())
    covered = {s.op for s in specs}
    missing = [name for name in ops.OPS if name not in covered]
    if missing:  # a new op must join the sweep, not be skipped silently
        raise RuntimeError(f"parity: ops without a sweep spec: {', '.join(missing)}")
    return tuple(specs)


# -- the plan's per-op families and rewrites, and the kael policy ------------------------------------


#
# Float-only ops convert integer and bool operands (``runtime.core.ops.FLOAT_ONLY``), bool add/mul are
# logical or/and and real/imag/conj of a real operand are identities or zeros (``runtime.core.plan.rewrite``).
# Under ``jax`` the reference for those ops is jax.numpy itself (it converts the same way); under
# the other policies the JAX side applies castwise's plan and then the ops its rewrite stands for,
# as jax.lax calls. The ``kael`` policy has four dtypes: its cases use those only, where JAX (x64)
# computes every value it can produce.

#: jax.numpy functions with the meaning of castwise's per-op families: the reference under ``jax``.
#: (rsqrt has no jax.numpy function: its reference is the plan's convert and ``lax.rsqrt``.)
_FAMILY_JNP: Final[dict[str, Callable[..., Any]]] = {
    **{name: (lambda x, _n=name: getattr(_jnp(), _n)(x))
       for name in ("exp", "log", "expm1", "log1p", "sin", "cos", "tanh", "sqrt", "reciprocal", "real", "imag",
                    "conj")},
    "logistic": lambda x: _jax_modules()[0].scipy.special.expit(x),  # jax.nn.sigmoid refuses integers
    "nextafter": lambda x, y: _jnp().nextafter(x, y),  # (lax.nextafter refuses integers; jnp converts them)
}  # fmt: skip


def _with_family_jnp(spec: Spec) -> Spec:
    """``spec`` with its jax.numpy reference where the op has a per-op family and had none."""
    ref = _FAMILY_JNP.get(spec.name)
    return replace(spec, jnp=ref) if ref is not None and spec.jnp is None else spec


def policy_dtypes(policy: str, dtypes: Sequence[DType]) -> tuple[DType, ...]:
    """The swept dtypes a policy knows, for a policy with a small dtype set of its own (kael's
    four): the others would be refused on both sides, cases that check nothing."""
    known = get_policy_object(policy).dtypes
    if len(known) > 8:
        return tuple(dtypes)
    return tuple(d for d in dtypes if d in known)


# -- building the case list ---------------------------------------------------------------------------


def _slot_tuples(spec: Spec, policy: str, dtypes: Sequence[DType], seed: int) -> list[tuple[Slot, ...]]:
    """Operand slot assignments of ``spec``: every dtype alone, plus sampled mixed and scalar ones."""
    n = spec.arity
    rng = _case_rng(seed, "slots", spec.name, policy)
    if n == 0:
        return [(d,) for d in dtypes] if spec.dtype_param else [()]
    free = [i for i in range(n) if i not in spec.fixed]

    def fill(assign: Mapping[int, Slot]) -> tuple[Slot, ...]:
        """A full slot tuple: ``assign`` for the free operands, the fixed dtype elsewhere."""
        return tuple(assign[i] if i in assign else spec.fixed[i] for i in range(n))

    out: list[tuple[Slot, ...]] = []
    seen: set[tuple[Slot, ...]] = set()

    def add(t: tuple[Slot, ...]) -> None:
        if t not in seen:
            seen.add(t)
            out.append(t)

    for d in dtypes:  # every dtype on its own
        add(fill(dict.fromkeys(free, d)))
    if spec.dtype_param:  # convert: every (source, destination) pair
        return [(s, d) for s in dtypes for d in dtypes]
    mixed_positions = [i for i in free if i in spec.promoted] if spec.promoted else free
    if len(dtypes) > 1 and len(mixed_positions) >= 2:
        # Each dtype against a random partner (the float8 formats among themselves and the
        # 16/32-bit floats), in every order of the promoted positions.
        for d in dtypes:
            pool = [e for e in dtypes if (e in FLOAT8_DTYPES) == (d in FLOAT8_DTYPES)
                    or (d in FLOAT8_DTYPES and e in (dt.bfloat16, dt.float16, dt.float32))]  # fmt: skip
            partners = [e for e in pool if e is not d] or [e for e in dtypes if e is not d]
            partner = partners[int(rng.integers(len(partners)))]
            for position in mixed_positions:  # the same pair in every order: (d, p) and (p, d)
                add(fill({i: (d if i == position else partner) for i in free}))
            if len(mixed_positions) >= 3 and len(partners) >= 2:
                # three different dtypes: promotion of a triple is not always a fold of pairs
                others = [partners[int(k)] for k in rng.choice(len(partners), size=len(mixed_positions) - 1,
                                                                replace=False)]  # fmt: skip
                others.insert(int(rng.integers(len(mixed_positions))), d)
                add(fill(dict(zip(mixed_positions, others, strict=True))))
        # Real/complex and int/float pairs of equal width: the promotion story of the project.
        for a, b in ((dt.float64, dt.complex128), (dt.float32, dt.complex64), (dt.int32, dt.float32),
                     (dt.float16, dt.bfloat16)):  # fmt: skip
            if a in dtypes and b in dtypes:
                for first, second in ((a, b), (b, a)):
                    assign = {i: (first if k == 0 else second) for k, i in enumerate(mixed_positions)}
                    add(fill({**dict.fromkeys(free, second), **assign}))
        if len(mixed_positions) >= 3:
            # u64 + i64 is JAX's weak float, so jax promotes (u64, i64, f32) to f32, not to a pairwise f64
            for triple in ((dt.uint64, dt.int64, dt.float32), (dt.float32, dt.uint64, dt.int64)):
                if all(d in dtypes for d in triple):
                    add(fill(dict(zip(mixed_positions, triple, strict=False))))
    if spec.scalar_ok and len(free) >= 2 and dtypes:  # (none: kael with --dtypes narrow-int)
        tensors = list(dtypes)
        for py in PY_SCALARS:
            for position in spec.scalar_ok:
                d = tensors[int(rng.integers(len(tensors)))]
                add(fill({i: (py if i == position else d) for i in free}))
    return out


def _quick_score(case: Case) -> tuple[int, int]:
    """Quick mode prefers cases with an inexact operand (derivative checks) and mixed dtypes."""
    inexact = any(isinstance(s, DType) and s.is_inexact for s in case.operand_slots)
    mixed = len(set(case.operand_slots)) > 1
    return (0 if inexact else 1, 0 if mixed else 1)


def castwise_accepts(case: Case, seed: int = 0) -> bool:
    """Whether castwise runs ``case`` eagerly (no JAX involved): a refused case checks nothing.

    Anything but one of castwise's refusals counts as accepted: a crash is worth running.
    """
    try:
        with use_policy(case.policy), warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            _call_ours(case, _ours_args(case, _make_inputs(case, seed)))
    except CASTWISE_REFUSALS:
        return False
    except Exception:
        return True
    return True


def _quick_sample(cases: list[Case], seed: int, budget: int) -> list[Case]:
    """Stratified sample: every spec, random policies, preferring derivative and mixed cases.

    Cases castwise accepts come first (tried in a random order, a cheap eager call
    each), so a spec whose dtypes are mostly refused (the logical ops take only
    bool and integers) is still checked; refused cases fill a spec's share only
    where castwise accepts none of its cases.
    """
    rng = _case_rng(seed, "quick")
    by_spec: dict[str, list[Case]] = {}
    for c in cases:
        by_spec.setdefault(c.spec.name, []).append(c)
    per_spec = max(2, budget // max(1, len(by_spec)))
    chosen: list[Case] = []
    for group in by_spec.values():
        order = [group[int(i)] for i in rng.permutation(len(group))]
        accepted: list[Case] = []
        refused: list[Case] = []
        for c in order:
            if len(accepted) >= per_spec * 3:
                break
            (accepted if castwise_accepts(c, seed) else refused).append(c)
        picked = sorted(accepted, key=_quick_score)[:per_spec]
        picked += refused[: per_spec - len(picked)]
        keep = {id(c) for c in picked}
        chosen.extend(c for c in group if id(c) in keep)
    return chosen


def _matches(spec: Spec, patterns: Sequence[str]) -> bool:
    """``--ops``: a glob over the spec name, the op name or the family (a composed function's row,
    ``Spec.targets``, is not that op: ``--ops add`` leaves ``lerp`` out, ``--ops lerp,binary`` takes it)."""
    names = (spec.name, spec.family) if spec.targets is not None else (spec.name, spec.op, spec.family)
    return any(fnmatch.fnmatchcase(name, p) for p in patterns for name in names)


def parse_dtypes(text: str | None) -> tuple[DType, ...]:
    """``--dtypes`` value: comma-separated names or short names (``f32,c64,bfloat16``), or a group:
    ``core`` / ``float8`` / ``narrow-int``."""
    if not text:
        return DEFAULT_DTYPES
    out: list[DType] = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        group = {"core": CORE_DTYPES, "float8": FLOAT8_DTYPES, "narrow-int": NARROW_INT_DTYPES,
                 "all": DEFAULT_DTYPES}.get(item)  # fmt: skip
        for d in group if group is not None else (dt.dtype(item),):
            if d not in out:
                out.append(d)
    return tuple(out)


def build_cases(
    policies: Sequence[str] = DEFAULT_POLICIES,
    ops_patterns: Sequence[str] = ("*",),
    dtypes: Sequence[DType] = DEFAULT_DTYPES,
    seed: int = 0,
    quick: bool = False,
) -> list[Case]:
    """The sweep's cases, in a deterministic order (grouped by spec, then policy)."""
    cases: list[Case] = []
    for spec in build_specs():
        if not _matches(spec, ops_patterns):
            continue
        for policy in policies:
            if spec.policies and policy not in spec.policies:
                continue
            for slots in _slot_tuples(spec, policy, policy_dtypes(policy, dtypes), seed):
                cases.append(Case(spec, policy, slots))
    if quick:
        cases = _quick_sample(cases, seed, QUICK_CASES)
    return cases
