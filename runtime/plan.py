"""The promotion plan: the one function that decides operand dtypes.

``plan(op, input_dtypes, policy)`` returns the dtype each operand is converted
to before the op's same-dtype kernel runs. Eager execution, the graph recorder,
the tracer and the ``promote`` pass all call it; there is no second promotion
table. It is O(number of inputs) metadata work.

==========================================  ==========================  ===============
family                                      promoted operands           left alone
==========================================  ==========================  ===============
binary, compare, logical, dot_general       both
select                                      on_true, on_false           predicate
clamp                                       min, operand, max
concatenate                                 all
scatter (set / add)                         operand, updates            indices
dynamic_update_slice                        operand, update             start indices
everything else                                                         all inputs
==========================================  ==========================  ===============
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from runtime import dtypes as dt
from runtime import ops
from runtime.dtypes import DType
from runtime.ops import OpDef
from runtime.promotion import Operand, Policy, PromotionError, get_policy_object

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
    """select(pred, on_true, on_false): the predicate keeps its dtype."""
    target = _common(op, xs[1:], policy)
    return (_dtype_of(xs[0], policy), target, target)


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
    ops.CLAMP: plan_all,
    ops.CONCATENATE: plan_all,
    ops.SELECT: plan_select,
    ops.SCATTER: plan_scatter,
    ops.DYNAMIC_UPDATE_SLICE: plan_update_slice,
}


def promotes(op: OpDef | str) -> bool:
    """True when ``op`` belongs to a promoting family."""
    opdef = op if isinstance(op, OpDef) else ops.get(op)
    return opdef.family in PLAN_RULES


def plan(op: OpDef | str, input_dtypes: Sequence[PlanInput], policy: str | Policy | None = None) -> tuple[DType, ...]:
    """The dtype each operand of ``op`` is converted to before its kernel runs.

    ``input_dtypes`` holds one entry per operand: a ``DType``, or a classified
    ``Operand`` for Python scalars and 0-d values (they matter to the weak and
    category rules). Operands of non-promoting families keep their dtype.
    Raises ``PromotionError`` naming the op, the operands and the policy.
    """
    opdef = op if isinstance(op, OpDef) else ops.get(op)
    rule = PLAN_RULES.get(opdef.family)
    pol = get_policy_object(policy)
    if rule is None or not input_dtypes:
        index_from = 1 if opdef.family in (ops.GATHER, ops.DYNAMIC_SLICE) else len(input_dtypes)
        return tuple(_dtype_of(x, pol, index=i >= index_from) for i, x in enumerate(input_dtypes))
    return rule(opdef, input_dtypes, pol)
