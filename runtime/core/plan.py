"""The promotion plan: the one function that decides operand dtypes.

``plan(op, input_dtypes, policy)`` returns the dtype each operand is converted
to before the op's same-dtype kernel runs. Eager execution, the graph recorder,
the tracer and the ``promote`` pass all call it; there is no second promotion
table. It is O(number of inputs) metadata work.

==========================================  ==========================  ===============
family                                      promoted operands           left alone
==========================================  ==========================  ===============
binary, compare, logical, dot_general       both
select, select_n                            the cases                   predicate / which
conv (conv_general_dilated)                 both
clamp                                       min, operand, max
concatenate                                 all
scatter (set / add / mul / min / max)       operand, updates            indices
dynamic_update_slice                        operand, update             start indices
everything else                                                         all inputs
==========================================  ==========================  ===============

Per-op rules (``OP_RULES``) come after the family rule: an integer or bool
operand of a float-only op goes to the policy's inexact dtype, a bool sum
counts in int64, kael's add of two Bools counts in I64 ... A rule of ``PARAM_RULES`` reads
the op's params as well (a real operand of ``fft``'s complex transforms becomes complex, an
RFFT's stays real). And some ops stand
for other ops under a policy (``rewrite``: ``bool + bool`` is ``or``, ``real``
of a real operand is the operand); eager execution and the ``promote`` pass
write those ops down instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from runtime.core import dtypes as dt
from runtime.core import ops
from runtime.core import weak as weak_rules
from runtime.core.dtypes import DType
from runtime.core.errors import did_you_mean
from runtime.core.ops import OpDef
from runtime.core.promotion import Operand, Policy, PromotionError, get_policy_object, lookup_policy
from runtime.core.shapes import OpTypeError

#: A plan input: a dtype, or a classified operand (Python scalar, 0-d value).
PlanInput = DType | Operand

PlanRule = Callable[[OpDef, Sequence[PlanInput], Policy], tuple[DType, ...]]


def _dtype_of(x: PlanInput, policy: Policy, index: bool = False) -> DType:
    """The dtype of an operand the plan leaves alone.

    A Python scalar has no dtype of its own: an index becomes int64, any other
    takes the policy's default dtype for its kind.
    """
    if isinstance(x, DType):
        return x
    if x.dtype is not None:
        return x.dtype
    assert x.pykind is not None
    if index and x.pykind == "int":  # a Python bool is no index (a bool array is not either; JAX agrees)
        return dt.int64
    return policy.scalar_default(x.pykind, None)


def _common(op: OpDef, xs: Sequence[PlanInput], policy: Policy) -> DType:
    """The common dtype of the promoted operands ``xs``."""
    first = xs[0]
    if isinstance(first, DType) and all(x is first for x in xs):
        return first  # already agree: no policy question to ask
    same = _dtype_if_strong(first)
    if same is not None and all(_dtype_if_strong(x) is same for x in xs):
        return same  # 0-d operands of the one dtype: nothing to promote either
    try:
        weak = weak_rules.all_weak_dtype(policy, xs)
        if weak is not None:  # all weak: their dtypes join, the result stays weak (JAX)
            return weak
        if len(xs) == 2 and isinstance(first, DType) and isinstance(xs[1], DType):
            return policy.promote_types(first, xs[1])
        # three or more operands (or scalars, 0-d values): the policy joins them all at
        # once, which is not a pairwise fold for lattices with weak types (JAX:
        # u64, i64, f32 -> f32, while (u64 + i64) + f32 -> f64)
        return policy.result_type([x if isinstance(x, Operand) else Operand(x, None, False) for x in xs])
    except PromotionError as err:
        names = ", ".join(_describe(x) for x in xs)
        raise PromotionError(f"{op.name}: cannot promote operands ({names}): {err}") from None


def _dtype_if_strong(x: PlanInput) -> DType | None:
    if isinstance(x, DType):
        return x
    return x.dtype if x.pykind is None else None


def _describe(x: PlanInput) -> str:
    return x.name if isinstance(x, DType) else x.describe()


def _true_division(target: DType, op: OpDef, xs: Sequence[PlanInput], policy: Policy) -> DType:
    if target.is_inexact:
        return target
    result = policy.true_divide_dtype(target)
    if result is None:
        names = ", ".join(_describe(x) for x in xs)
        raise PromotionError(
            f"{op.name}: true division of ({names}) needs a floating dtype and policy "
            f"{policy.name!r} has no implicit one; convert explicitly"
        )
    return result


def plan_all(op: OpDef, xs: Sequence[PlanInput], policy: Policy) -> tuple[DType, ...]:
    """Every operand goes to the common dtype (binary, compare, clamp, concatenate ...)."""
    target = _common(op, xs, policy)
    if op is ops.div:
        target = _true_division(target, op, xs, policy)
    return (target,) * len(xs)


def plan_select(op: OpDef, xs: Sequence[PlanInput], policy: Policy) -> tuple[DType, ...]:
    """select(pred, on_true, on_false), select_n(which, *cases): the predicate keeps its dtype."""
    target = _common(op, xs[1:], policy) if len(xs) > 1 else None
    return (_dtype_of(xs[0], policy), *((target,) * (len(xs) - 1)))  # type: ignore[arg-type]


def plan_scatter(op: OpDef, xs: Sequence[PlanInput], policy: Policy) -> tuple[DType, ...]:
    """scatter(operand, indices, updates): indices keep their dtype."""
    target = _common(op, (xs[0], xs[2]), policy)
    return (target, _dtype_of(xs[1], policy, index=True), target)


def plan_update_slice(op: OpDef, xs: Sequence[PlanInput], policy: Policy) -> tuple[DType, ...]:
    """dynamic_update_slice(operand, update, *starts): start indices keep their dtype."""
    target = _common(op, xs[:2], policy)
    return (target, target, *(_dtype_of(x, policy, index=True) for x in xs[2:]))


PLAN_RULES: dict[str, PlanRule] = {
    ops.BINARY: plan_all,
    ops.COMPARE: plan_all,
    ops.LOGICAL: plan_all,
    ops.DOT: plan_all,
    ops.CONV: plan_all,
    ops.CLAMP: plan_all,
    ops.CONCATENATE: plan_all,
    ops.SELECT: plan_select,
    ops.SCATTER: plan_scatter,
    ops.DYNAMIC_UPDATE_SLICE: plan_update_slice,
}


def promotes(op: OpDef | str) -> bool:
    """True when ``op`` belongs to a promoting family or has a per-op rule."""
    opdef = op if isinstance(op, OpDef) else ops.get(op)
    return opdef.family in PLAN_RULES or opdef.name in OP_RULES


def plan(
    op: OpDef | str,
    input_dtypes: Sequence[PlanInput],
    policy: str | Policy | None = None,
    params: Mapping[str, Any] | None = None,
) -> tuple[DType, ...]:
    """The dtype each operand of ``op`` is converted to before its kernel runs.

    ``input_dtypes`` holds one entry per operand: a ``DType``, or a classified
    ``Operand`` for Python scalars and 0-d values (they matter to the weak and
    category rules). Operands of non-promoting families keep their dtype, unless
    a per-op rule (``OP_RULES``) converts them. ``params`` are the op's static params:
    the few ops whose operand dtype depends on one (``fft``'s ``fft_type``: a real operand
    of a complex transform becomes complex) have a rule in ``PARAM_RULES`` that reads them;
    every graph builder passes them (without them, only the rules that need none apply).
    Raises ``PromotionError`` naming the op, the operands and the policy; an ``op`` that names
    no op of the vocabulary raises ``OpTypeError`` (with the near names for a misspelt one).
    """
    opdef = op if isinstance(op, OpDef) else _op_named(op, policy)
    rule = PLAN_RULES.get(opdef.family)
    pol = lookup_policy(policy, "plan")
    if rule is None or not input_dtypes:
        index_from = 1 if opdef.family in (ops.GATHER, ops.DYNAMIC_SLICE) else len(input_dtypes)
        targets = tuple(_dtype_of(x, pol, index=i >= index_from) for i, x in enumerate(input_dtypes))
    else:
        targets = rule(opdef, input_dtypes, pol)
    op_rule = OP_RULES.get(opdef.name)
    if op_rule is not None and input_dtypes:
        targets = op_rule(opdef, input_dtypes, targets, pol)
    param_rule = PARAM_RULES.get(opdef.name)
    if param_rule is not None and params is not None and input_dtypes:
        targets = param_rule(opdef, targets, pol, params)
    return targets


def _op_named(name: Any, policy: str | Policy | None) -> OpDef:
    """The op ``plan`` was given by name; an unknown one is an ``OpTypeError`` naming ``plan``."""
    found = ops.OPS.get(name) if isinstance(name, str) else None
    if found is not None:
        return found
    active = lookup_policy(policy, "plan").name
    if not isinstance(name, str):
        raise OpTypeError(
            f"plan: op must be an OpDef or an op's name, got {type(name).__name__} {name!r} [policy {active!r}]"
        )
    hint = did_you_mean(name, ops.OPS)
    raise OpTypeError(
        f"plan: unknown op {name!r} ({hint or 'runtime.ops.OPS lists the vocabulary'}) [policy {active!r}]"
    )


# -- per-op rules ------------------------------------------------------------------------------
#
# Beside the family rules, a few ops have rules of their own, because eager code
# written for jax.numpy, NumPy or PyTorch expects them: a float-only op on an
# integer, a sum of bools, bool + bool. Each policy answers as its anchor library
# does (the tables below, checked against the real libraries by the tests). A per-op
# rule receives the targets the family rule chose and returns the final ones (or
# raises). What it decides is recorded like any plan: a ``convert`` per operand
# whose dtype changes.

#: A per-op rule: (op, plan inputs, family targets, policy) -> targets.
OpRule = Callable[[OpDef, Sequence[PlanInput], tuple[DType, ...], Policy], tuple[DType, ...]]

#: op name -> its per-op rule (consulted by ``plan`` after the family rule).
OP_RULES: dict[str, OpRule] = {}

_NOT_INEXACT = frozenset({"bool", "int", "uint"})


# The inexact dtype of an integer or bool operand of a float-only op, per policy.
InexactRule = Callable[[DType, Policy], DType | None]

# jax.numpy's ``promote_args_inexact`` (``dtypes.to_inexact_dtype``, x64 on):
# 64-bit integers go to float64, every narrower integer and bool to float32.
_JAX_INEXACT: dict[str, DType] = {
    **dict.fromkeys(("bool", "int4", "uint4", "int8", "uint8", "int16", "uint16", "int32", "uint32"), dt.float32),
    **dict.fromkeys(("int64", "uint64"), dt.float64),
}


def jax_inexact(d: DType, policy: Policy) -> DType | None:
    """jax.numpy: float32 for bool and integers up to 32 bits, float64 for 64-bit ones."""
    return _JAX_INEXACT.get(d.name)


def numpy_inexact(d: DType, policy: Policy) -> DType | None:
    """NumPy's ufunc loop choice: the smallest float that holds ``d`` exactly
    (bool, int8, uint8 -> float16; int16, uint16 -> float32; wider -> float64),
    which is NumPy's ``promote_types(d, float16)``."""
    return policy.promote_types(d, dt.float16) if policy.can_promote(d, dt.float16) else None


_TORCH_COMPUTES = frozenset(
    ("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64")
)  # fmt: skip


def torch_inexact(d: DType, policy: Policy) -> DType | None:
    """PyTorch: its default dtype (float32 unless ``set_default_dtype`` changed it) for bool and
    every integer it computes with (TensorIterator's ``promote_integer_inputs_to_float``)."""
    return policy.scalar_default("float", None) if d.name in _TORCH_COMPUTES else None


def default_inexact(d: DType, policy: Policy) -> DType | None:
    """Other policies: the float their true division of integers gives (neuron,
    kael: float32; tenferro: float64; strict: none, an error)."""
    return policy.true_divide_dtype(d) if d in policy.dtypes else None


INEXACT_RULES: dict[str, InexactRule] = {
    "jax": jax_inexact,
    "jax-strict": jax_inexact,  # JAX's strict mode converts too: this is no promotion between operands
    "numpy": numpy_inexact,
    "torch": torch_inexact,
}

_LINALG = (ops.cholesky.name, ops.eigh.name, ops.triangular_solve.name, ops.lu.name, ops.qr.name, ops.svd.name,
           ops.eig.name, ops.geqrf.name)  # fmt: skip


def float64_inexact(d: DType, policy: Policy) -> DType | None:
    """NumPy's linalg (its `_commonType`): every integer and bool computes in float64."""
    return dt.float64 if d in policy.dtypes else None


def float64_fft_inexact(d: DType, policy: Policy) -> DType | None:
    """NumPy's fft (pocketfft's ``_raw_fft``): every integer and bool computes in float64
    (``np.fft.fft(int8)`` is complex128)."""
    return dt.float64 if d in policy.dtypes else None


#: (policy, op) pairs whose anchor chooses differently for that op than for the others.
INEXACT_BY_OP: dict[tuple[str, str], InexactRule] = {
    **{("numpy", name): float64_inexact for name in _LINALG},
    ("numpy", ops.fft.name): float64_fft_inexact,
}

#: (policy, op) pairs whose anchor refuses an integer operand, or keeps it integral where
#: castwise's kernel cannot follow: refused with the reason instead of taking the float path.
INEXACT_REFUSED: dict[tuple[str, str], str] = {
    ("numpy", "reciprocal"): "NumPy's reciprocal of an integer is an integer (1 // x)",
    **{("torch", name): "PyTorch's linalg functions take floating or complex tensors only" for name in _LINALG},
    ("torch", "nextafter"): "PyTorch's nextafter takes floating tensors only",
}


def inexact_dtype(op: OpDef, d: DType, policy: Policy) -> DType:
    """The inexact dtype an integer or bool operand ``d`` of a float-only op becomes."""
    key = (policy.name, op.name)
    refused = INEXACT_REFUSED.get(key)
    rule = INEXACT_BY_OP.get(key) or INEXACT_RULES.get(policy.name, default_inexact)
    result = None if refused is not None else rule(d, policy)
    if result is None:
        why = refused or f"policy {policy.name!r} converts no {d.name} operand implicitly"
        raise PromotionError(
            f"{op.name}: takes floating or complex operands and got {d.name}; {why}: convert explicitly (x.astype(...))"
        )
    return result


def plan_inexact_operands(
    op: OpDef, xs: Sequence[PlanInput], targets: tuple[DType, ...], policy: Policy
) -> tuple[DType, ...]:
    """Float-only ops (``ops.FLOAT_ONLY``): an integer or bool target becomes the
    policy's inexact dtype (``exp(int32)`` is float32 under jax, float64 under numpy)."""
    if all(t.kind not in _NOT_INEXACT for t in targets):
        return targets
    return tuple(inexact_dtype(op, t, policy) if t.kind in _NOT_INEXACT else t for t in targets)


for _op in sorted(ops.FLOAT_ONLY, key=lambda o: o.name):
    OP_RULES[_op.name] = plan_inexact_operands


#: The integer dtype a sum or product of bools accumulates in: ``jnp.sum``, ``np.sum`` and
#: ``torch.sum`` (and ``prod``) of bool are int64, and kael follows PyTorch. Policies not
#: named keep ``jax.lax``'s meaning, which refuses bool.
BOOL_REDUCTION: dict[str, DType] = dict.fromkeys(("jax", "jax-strict", "numpy", "torch", "kael"), dt.int64)


def plan_bool_reduction(
    op: OpDef, xs: Sequence[PlanInput], targets: tuple[DType, ...], policy: Policy
) -> tuple[DType, ...]:
    """reduce_sum / reduce_prod of bool: convert to the policy's counting integer first."""
    if targets[0] is dt.bool_ and policy.name in BOOL_REDUCTION:
        return (BOOL_REDUCTION[policy.name], *targets[1:])
    return targets


OP_RULES[ops.reduce_sum.name] = plan_bool_reduction
OP_RULES[ops.reduce_prod.name] = plan_bool_reduction


#: Policies whose ``add`` counts Bool + Bool in an integer (kael's ADR 0003 on type
#: promotion: ``add_dtype`` gives I64, so true + true is 2).
BOOL_ADD_COUNTS: dict[str, DType] = {"kael": dt.int64}


def plan_bool_add(op: OpDef, xs: Sequence[PlanInput], targets: tuple[DType, ...], policy: Policy) -> tuple[DType, ...]:
    """add of two bools: int64 under kael (the others rewrite it to ``or``, see ``rewrite``)."""
    if targets[0] is dt.bool_ and policy.name in BOOL_ADD_COUNTS:
        counted = BOOL_ADD_COUNTS[policy.name]
        return (counted,) * len(targets)
    return targets


OP_RULES[ops.add.name] = plan_bool_add

#: Policies whose sub, pow and floor_divide refuse Bool inputs (kael's ``check_no_bool``).
NO_BOOL_POLICIES: frozenset[str] = frozenset({"kael"})


def plan_no_bool(op: OpDef, xs: Sequence[PlanInput], targets: tuple[DType, ...], policy: Policy) -> tuple[DType, ...]:
    """kael's ``check_no_bool``: a Bool input of sub, pow or floor_divide is a TypeError."""
    if policy.name in NO_BOOL_POLICIES:
        bools = [x for x, t in zip(xs, targets, strict=True) if _dtype_if_strong(x) is dt.bool_ or t is dt.bool_]
        if bools:
            names = ", ".join(_describe(x) for x in xs)
            raise PromotionError(
                f"{op.name}: Bool inputs are not supported ({names}; kael's check_no_bool); "
                "convert them first, or use logical_xor for a Bool difference"
            )
    return targets


for _op in (ops.sub, ops.pow, ops.floor_div):
    OP_RULES[_op.name] = plan_no_bool

#: The integer that bool operands of a numeric-only op become: jax.numpy's
#: ``promote_args_numeric`` gives int32 (even with x64), NumPy's ufunc loop int8. Policies
#: not named keep ``jax.lax``'s refusal (PyTorch refuses bool floor_divide, fmod and pow too).
NUMERIC_OF_BOOL: dict[str, DType] = {"jax": dt.int32, "jax-strict": dt.int32, "numpy": dt.int8}
#: (policy, op) pairs that differ: PyTorch's square of bool is its ``pow(x, 2)``, int64.
NUMERIC_OF_BOOL_BY_OP: dict[tuple[str, str], DType] = {("torch", "square"): dt.int64}
_NUMERIC_ONLY = (ops.floor_div, ops.rem, ops.pow, ops.square)


def plan_bool_numeric(
    op: OpDef, xs: Sequence[PlanInput], targets: tuple[DType, ...], policy: Policy
) -> tuple[DType, ...]:
    """floor_div, rem, pow, square of bools: the policy's integer (``jnp.floor_divide(bool, bool)``
    is int32, ``np.floor_divide`` int8)."""
    if any(t is not dt.bool_ for t in targets):
        return targets
    counted = NUMERIC_OF_BOOL_BY_OP.get((policy.name, op.name)) or NUMERIC_OF_BOOL.get(policy.name)
    return targets if counted is None else (counted,) * len(targets)


def chain(*rules: OpRule) -> OpRule:
    """One per-op rule that applies ``rules`` in order (an op with several concerns)."""

    def rule(op: OpDef, xs: Sequence[PlanInput], targets: tuple[DType, ...], policy: Policy) -> tuple[DType, ...]:
        for r in rules:
            targets = r(op, xs, targets, policy)
        return targets

    rule.__name__ = "+".join(r.__name__ for r in rules)
    return rule


for _op in _NUMERIC_ONLY:
    current = OP_RULES.get(_op.name)
    OP_RULES[_op.name] = plan_bool_numeric if current is None else chain(current, plan_bool_numeric)

#: The dtype ``conj`` of a bool gives where it is not bool: NumPy's ``conjugate`` has no bool
#: loop and takes int8.
CONJ_OF_BOOL: dict[str, DType] = {"numpy": dt.int8}


def plan_conj(op: OpDef, xs: Sequence[PlanInput], targets: tuple[DType, ...], policy: Policy) -> tuple[DType, ...]:
    """conj of bool: int8 under numpy (np.conj(bool) is int8), unchanged elsewhere."""
    if targets[0] is dt.bool_ and policy.name in CONJ_OF_BOOL:
        return (CONJ_OF_BOOL[policy.name],)
    return targets


OP_RULES[ops.conj.name] = plan_conj


# -- rewrites: an op that stands for other ops ------------------------------------------------
#
# Some conveniences are not a dtype: ``bool + bool`` is a logical or under
# jax.numpy, NumPy and PyTorch, ``real`` of a real tensor is the tensor itself.
# ``rewrite(op, targets, policy)`` says so once, as an *expansion*: a function
# that builds the result from the converted operands with ``emit(op, operands,
# params)``. Eager execution passes an ``emit`` that runs ops (and records
# them), so the recording holds the ops the expansion stands for; a graph pass
# passes one that writes equations. The graph vocabulary does not change.

#: emit(op, operands, params) -> result; operands and results are Tensors or graph values.
Emit = Callable[[OpDef, Sequence[Any], dict[str, Any]], Any]
#: expansion(emit, converted operands, params) -> the op's result.
Expansion = Callable[[Emit, Sequence[Any], dict[str, Any]], Any]
#: (op, planned targets, policy) -> the expansion, or None to run the op itself.
RewriteRule = Callable[[OpDef, tuple[DType, ...], Policy], Expansion | None]

REWRITE_RULES: dict[str, RewriteRule] = {}


def rewrite(op: OpDef | str, targets: Sequence[DType], policy: str | Policy | None = None) -> Expansion | None:
    """The expansion ``op`` stands for under ``policy`` once its operands have the
    planned ``targets``, or ``None`` when ``op`` runs as itself (almost always)."""
    opdef = op if isinstance(op, OpDef) else ops.get(op)
    rule = REWRITE_RULES.get(opdef.name)
    if rule is None or not targets:
        return None
    return rule(opdef, tuple(targets), get_policy_object(policy))


def substitute(new_op: OpDef) -> Expansion:
    """An expansion that runs ``new_op`` on the same operands and params."""

    def expansion(emit: Emit, xs: Sequence[Any], params: dict[str, Any]) -> Any:
        return emit(new_op, xs, params)

    expansion.__name__ = f"as_{new_op.name}"
    return expansion


def identity(emit: Emit, xs: Sequence[Any], params: dict[str, Any]) -> Any:
    """The operand itself: no equation (``real`` and ``conj`` of a real operand)."""
    return xs[0]


def zeros_like(emit: Emit, xs: Sequence[Any], params: dict[str, Any]) -> Any:
    """A constant of zeros with the operand's dtype and shape (``imag`` of a real operand)."""
    x = xs[0]
    zero: bool | int = False if x.dtype is dt.bool_ else 0
    return emit(ops.full, (), {"shape": tuple(x.shape), "fill_value": zero, "dtype": x.dtype})


#: bool op bool -> the logical op it means, per op, for the policies that give it that meaning
#: (jnp.add/np.add/torch.add of bools is a logical or; multiply is a logical and; kael's
#: add counts instead (``BOOL_ADD_COUNTS``) and its mul stays Bool, an and).
BOOL_LOGICAL: dict[str, tuple[OpDef, frozenset[str]]] = {
    ops.add.name: (ops.logical_or, frozenset({"jax", "jax-strict", "numpy", "torch"})),
    ops.mul.name: (ops.logical_and, frozenset({"jax", "jax-strict", "numpy", "torch", "kael"})),
}
_AS_LOGICAL = {name: substitute(logical) for name, (logical, _) in BOOL_LOGICAL.items()}


def rewrite_bool_arithmetic(op: OpDef, targets: tuple[DType, ...], policy: Policy) -> Expansion | None:
    """add / mul of bools: ``or`` / ``and`` under the policies of ``BOOL_LOGICAL``."""
    if targets[0] is not dt.bool_ or targets[1] is not dt.bool_:
        return None
    return _AS_LOGICAL[op.name] if policy.name in BOOL_LOGICAL[op.name][1] else None


REWRITE_RULES[ops.add.name] = rewrite_bool_arithmetic
REWRITE_RULES[ops.mul.name] = rewrite_bool_arithmetic

#: Policies whose ``imag`` of a real tensor is an error (PyTorch: "imag is not implemented
#: for tensors with non-complex dtypes"; kael follows PyTorch). The others give zeros.
IMAG_OF_REAL_REFUSED: frozenset[str] = frozenset({"torch", "kael"})


def rewrite_complex_part(op: OpDef, targets: tuple[DType, ...], policy: Policy) -> Expansion | None:
    """real / conj of a real operand: the operand itself; imag: zeros of its dtype and shape."""
    if targets[0].kind == "complex":
        return None
    if op is not ops.imag:
        return identity
    if policy.name in IMAG_OF_REAL_REFUSED:
        raise OpTypeError(
            f"imag: imag is not implemented for tensors with non-complex dtypes (got {targets[0].name}; "
            f"policy {policy.name!r} follows PyTorch)"
        )
    return zeros_like


for _op in sorted(ops.COMPLEX_PARTS, key=lambda o: o.name):
    REWRITE_RULES[_op.name] = rewrite_complex_part

#: The operand kinds whose ``abs`` is the operand itself, per policy: ``jnp.abs`` and ``np.abs``
#: of bool and unsigned integers, ``torch.abs`` of unsigned ones (it refuses bool). ``jax.lax.abs``
#: (castwise's kernel) refuses both kinds.
ABS_IDENTITY: dict[str, frozenset[str]] = {
    **dict.fromkeys(("jax", "jax-strict", "numpy"), frozenset({"bool", "uint"})),
    "torch": frozenset({"uint"}),
}


def rewrite_abs(op: OpDef, targets: tuple[DType, ...], policy: Policy) -> Expansion | None:
    """abs of a bool or unsigned operand: the operand itself, where the policy's library says so."""
    return identity if targets[0].kind in ABS_IDENTITY.get(policy.name, frozenset()) else None


REWRITE_RULES[ops.abs.name] = rewrite_abs

#: The operand kinds whose floor / ceil / round is the operand itself, per op and policy: jax.numpy,
#: NumPy and PyTorch keep integers as they are (and jnp/np floor and ceil of bool); ``jax.lax``'s
#: rounding ops (castwise's kernels) take floats only.
ROUNDING_IDENTITY: dict[str, dict[str, frozenset[str]]] = {
    name: {
        **dict.fromkeys(("jax", "jax-strict", "numpy"), frozenset({"bool", "int", "uint"} - extra)),
        "torch": frozenset({"int", "uint"}),
    }
    for name, extra in ((ops.floor.name, frozenset()), (ops.ceil.name, frozenset()), (ops.round.name, {"bool"}))
}


def round_in_float16(emit: Emit, xs: Sequence[Any], params: dict[str, Any]) -> Any:
    """``np.round`` of bool: NumPy's loop for bool is float16's, so 0.0 / 1.0 in float16."""
    return emit(ops.round, (emit(ops.convert, xs, {"new_dtype": dt.float16}),), params)


def rewrite_rounding(op: OpDef, targets: tuple[DType, ...], policy: Policy) -> Expansion | None:
    """floor / ceil / round of an integer (or bool) operand: the operand itself where the
    policy's library keeps it; ``np.round`` of bool computes in float16."""
    kind = targets[0].kind
    if kind in ROUNDING_IDENTITY[op.name].get(policy.name, frozenset()):
        return identity
    if op is ops.round and kind == "bool" and policy.name == "numpy":
        return round_in_float16
    return None


REWRITE_RULES[ops.floor.name] = rewrite_rounding
REWRITE_RULES[ops.ceil.name] = rewrite_rounding
REWRITE_RULES[ops.round.name] = rewrite_rounding

#: Policies whose is_finite of an integer or bool is all True (jnp.isfinite, np.isfinite,
#: torch.isfinite); ``jax.lax.is_finite`` takes floats only.
FINITE_OF_EXACT: frozenset[str] = frozenset({"jax", "jax-strict", "numpy", "torch"})


def all_true(emit: Emit, xs: Sequence[Any], params: dict[str, Any]) -> Any:
    """A bool constant of True with the operand's shape (every integer is finite)."""
    return emit(ops.full, (), {"shape": tuple(xs[0].shape), "fill_value": True, "dtype": dt.bool_})


def rewrite_is_finite(op: OpDef, targets: tuple[DType, ...], policy: Policy) -> Expansion | None:
    """is_finite of an integer or bool operand: all True, where the policy's library says so."""
    return all_true if targets[0].kind in _NOT_INEXACT and policy.name in FINITE_OF_EXACT else None


REWRITE_RULES[ops.is_finite.name] = rewrite_is_finite

#: Policies whose sign of a bool is the operand itself (torch.sign; jnp.sign and np.sign refuse bool).
SIGN_OF_BOOL_IDENTITY: frozenset[str] = frozenset({"torch"})


def rewrite_sign(op: OpDef, targets: tuple[DType, ...], policy: Policy) -> Expansion | None:
    """sign of a bool operand: the operand itself under the policies of ``SIGN_OF_BOOL_IDENTITY``."""
    return identity if targets[0] is dt.bool_ and policy.name in SIGN_OF_BOOL_IDENTITY else None


REWRITE_RULES[ops.sign.name] = rewrite_sign


# -- per-op rules that read the op's params ------------------------------------------------------
#
# ``plan(op, dtypes, policy, params)`` applies these after the per-op rules, when the caller
# passes the params (eager execution and the ``promote`` pass always do). Their conversions are
# recorded like any other plan: a ``convert`` per operand whose dtype changes.

#: A params rule: (op, targets so far, policy, params) -> targets.
ParamRule = Callable[[OpDef, tuple[DType, ...], Policy, Mapping[str, Any]], tuple[DType, ...]]

#: op name -> its params rule.
PARAM_RULES: dict[str, ParamRule] = {}


def fft_complex_dtype(d: DType) -> DType:
    """The complex dtype a real (or narrow complex) operand of a complex transform becomes:
    complex128 for float64, complex64 for every other float (narrow ones included) and for the
    narrow complex dtypes, as ``jax.lax.fft`` converts (``dtypes.to_complex_dtype``)."""
    if d is dt.float64 or d is dt.complex128:
        return dt.complex128
    return dt.complex64


def plan_fft_operand(
    op: OpDef, xs: Sequence[PlanInput], targets: tuple[DType, ...], policy: Policy
) -> tuple[DType, ...]:
    """fft, whatever its type: an integer or bool operand goes to the policy's inexact dtype, as
    for the float-only ops (``np.fft`` computes integers in float64: ``INEXACT_BY_OP``); a policy
    without complex dtypes (kael, neuron) refuses, since every transform reads or makes one."""
    targets = plan_inexact_operands(op, xs, targets, policy)
    made = fft_complex_dtype(targets[0])
    if made not in policy.dtypes:
        raise PromotionError(
            f"{op.name}: a Fourier transform of {targets[0].name} computes in {made.name}, and policy "
            f"{policy.name!r} has no complex dtypes"
        )
    return targets


OP_RULES[ops.fft.name] = plan_fft_operand


def plan_fft(op: OpDef, targets: tuple[DType, ...], policy: Policy, params: Mapping[str, Any]) -> tuple[DType, ...]:
    """fft: a real (or narrow complex) operand becomes complex for FFT, IFFT and IRFFT
    (``jnp.fft.fft(f32)`` is c64, ``jnp.fft.irfft(f64)`` reads a c128); RFFT keeps a real operand
    (its shape rule refuses a complex or narrow one, as lax does)."""
    (d,) = targets
    if params.get("fft_type") not in ("FFT", "IFFT", "IRFFT") or d in (dt.complex64, dt.complex128):
        return targets  # (RFFT; or a bad fft_type, which the shape rule names)
    return (fft_complex_dtype(d),) if d.kind in ("float", "complex") else targets


PARAM_RULES[ops.fft.name] = plan_fft
