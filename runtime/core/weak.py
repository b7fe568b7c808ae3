"""JAX's weak types on castwise values: which results are weak, and how weak values promote.

Under the ``jax`` and ``jax-strict`` policies a value may be *weakly typed*,
as in ``jax.numpy``: its dtype gives way to a strongly typed operand's.
``asarray(2.5)`` is weak, so is ``x * 2.5`` for a weak ``x``, and so is
``int8_array * 2.5`` (the join of ``int8`` and a weak float is the weak float
node), which is why ``(int8 * 2.5) + bfloat16`` is bfloat16. The flag is part
of a value's abstract value (``Tensor.weak``, ``Var.weak``: dtype, shape,
weak) and the graph printer shows it the way JAX prints an aval, ``~f64[]``.

Two questions, two tables:

* **Promotion** (``planned_weak``): a weak tensor enters the plan the way a
  Python scalar does, as the weak node of its kind (``WeakOperand``), so the
  one ``plan`` decides its dtype. The promoted operands of a promoting family
  all leave the plan with one weak flag: weak when every one of them was weak
  (JAX's "all weak" rule) or when their join is a weak node. A converted
  operand carries that flag on its ``convert`` equation
  (``convert[to=f64 weak_type=True]``), as ``jax.numpy`` writes
  ``convert_element_type[... weak_type=True]``.
* **Propagation** (``WEAK_RULES``): per op of the vocabulary, the weak flag of
  each output from the weak flags of the (planned) operands, following the
  ``jax.lax`` primitive's own rule: elementwise unary ops, reductions,
  structural ops, gather and scatter keep the operand's flag; n-ary ops
  (dynamic_update_slice's start indices included, select's predicate not)
  are weak when all their operands are; ``convert`` is weak only when its ``weak_type`` says so;
  ``iota`` and ``full`` (always given a dtype) are strong. The tests check
  every row against ``jax.lax``.

The other policies have no weak values (their scalar and 0-d category rules
do this job), so there every flag is ``False`` and weak operands plan as
strong ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from runtime.core import dtypes as dt
from runtime.core import ops
from runtime.core.dtypes import DType
from runtime.core.ops import OpDef
from runtime.core.promotion import LatticePolicy, Policy
from runtime.core.promotion import WeakOperand as WeakOperand  # (defined with result_type, which honours them too)
from runtime.core.promotion import honours_weak as honours_weak

#: ``rule(operand weak flags, params) -> weak flag per output``
WeakRule = Callable[[Sequence[bool], Mapping[str, Any]], tuple[bool, ...]]


def is_weak_input(x: Any) -> bool:
    """Whether a plan input is weak: a weak tensor, or a Python int/float/complex
    (a Python bool is strongly typed, as in JAX)."""
    if isinstance(x, DType):
        return False
    return x.pykind is not None and (x.dtype is not None or x.pykind != "bool")


def _node(x: Any) -> Any:
    if isinstance(x, DType):
        return x
    if x.pykind is not None and x.pykind != "bool":
        return x.pykind
    return x.dtype if x.dtype is not None else dt.bool_


def join_is_weak(policy: Policy, inputs: Sequence[Any]) -> bool:
    """Whether the lattice join of ``inputs`` is a weak node (``int8`` with a weak float is)."""
    if not isinstance(policy, LatticePolicy):
        return False
    acc: Any = None
    for x in inputs:
        node = _node(x)
        if node not in policy._upper:
            return False
        acc = node if acc is None else policy._lub(acc, node)
        if acc is None:
            return False  # no join: the plan has already refused these operands
    return isinstance(acc, str)


def _every(count: int) -> Sequence[int]:
    return range(count)


#: Per promoting family, the operand positions the plan promotes to one dtype (and one weak flag).
_PROMOTED: Final[dict[str, Callable[[int], Sequence[int]]]] = {
    ops.BINARY: _every,
    ops.COMPARE: _every,
    ops.LOGICAL: _every,
    ops.DOT: _every,
    ops.CONV: _every,
    ops.CLAMP: _every,
    ops.CONCATENATE: _every,
    ops.SELECT: lambda count: range(1, count),
    ops.SCATTER: lambda count: (0, 2),
    ops.DYNAMIC_UPDATE_SLICE: lambda count: (0, 1),
}


#: The families whose plan promotes operands together: there a join of strong operands may be weak.
PROMOTING_FAMILIES: Final[frozenset[str]] = frozenset(_PROMOTED)


def _is_bool(x: Any) -> bool:
    return (x if isinstance(x, DType) else x.dtype) is dt.bool_


def promoted_positions(op: OpDef, count: int) -> Sequence[int]:
    """The operand positions ``op``'s plan promotes to one dtype (and one weak flag)."""
    positions = _PROMOTED.get(op.family)
    return () if positions is None else [i for i in positions(count) if i < count]


def planned_weak(op: OpDef, inputs: Sequence[Any], policy: Policy) -> tuple[bool, ...] | None:
    """The weak flag of each operand after planning, or ``None`` when none is weak.

    ``inputs`` are the plan inputs (``DType``, ``Operand``, ``WeakOperand``).
    The promoted operands share one flag, JAX's (``_lattice_result_type``): weak when
    all of them are weak or when their join is a weak node (``int8`` with ``uint64`` is
    the weak float node), and never when the join is bool (a weak bool with a weak bool
    is a strong bool in jax.numpy).
    """
    if not honours_weak(policy):
        return None
    flags = [is_weak_input(x) for x in inputs]
    chosen = promoted_positions(op, len(inputs))
    if chosen:
        if all(_is_bool(inputs[i]) for i in chosen):
            joined = False
        else:
            joined = all(flags[i] for i in chosen) or join_is_weak(policy, [inputs[i] for i in chosen])
        for i in chosen:
            flags[i] = joined
    return tuple(flags) if any(flags) else None


def dropped_weak_bools(op: OpDef, inputs: Sequence[Any], policy: Policy) -> tuple[int, ...]:
    """The positions of weak bool operands whose flag ``op``'s plan drops: the promoted
    operands are all weak bools, so the join is a strong bool. Eager execution converts
    them (``convert[to=bool]``, as jax.numpy writes ``convert_element_type[weak_type=False]``),
    so a recording's weak flags follow the ops' weak rules."""
    chosen = promoted_positions(op, len(inputs))
    if not chosen or not honours_weak(policy):
        return ()
    if all(_is_bool(inputs[i]) and is_weak_input(inputs[i]) for i in chosen):
        return tuple(chosen)
    return ()


def all_weak_dtype(policy: Policy, inputs: Sequence[Any]) -> DType | None:
    """The dtype promoted operands that are all weak take, JAX's rule (``_lattice_result_type``):
    the join of their dtypes (a Python scalar counting as its kind's default dtype), so weak
    int8 with weak int8 is int8 and weak float16 with ``2.0`` float64; one weak operand keeps
    its dtype. ``None`` where the policy's ``result_type`` decides: an operand is strong, or
    the policy joins the weak nodes (JAX's strict mode; there one operand still keeps its dtype)."""
    if not inputs or not honours_weak(policy) or not all(is_weak_input(x) for x in inputs):
        return None
    if len(inputs) == 1 and inputs[0].dtype is not None:
        return inputs[0].dtype  # type: ignore[no-any-return]
    assert isinstance(policy, LatticePolicy)
    if not policy.all_weak_joins_dtypes:
        return None
    acc: DType | None = None
    for x in inputs:
        d = x.dtype if x.dtype is not None else policy.weak_default[x.pykind]
        acc = d if acc is None else policy.promote_types(acc, d)
    return acc


# -- propagation: one rule per op ---------------------------------------------------------------


def weak_keep_operand(weak: Sequence[bool], params: Mapping[str, Any]) -> tuple[bool, ...]:
    """Unary elementwise, reductions, structural ops: the operand's flag (lax's ``_argnum_weak_type(0)``)."""
    return (weak[0],)


def weak_all_operands(weak: Sequence[bool], params: Mapping[str, Any]) -> tuple[bool, ...]:
    """n-ary ops (binary, compare, logical, clamp, concatenate, dot_general): weak when all operands are."""
    return (all(weak),)


def weak_select(weak: Sequence[bool], params: Mapping[str, Any]) -> tuple[bool, ...]:
    """select(pred, on_true, on_false), select_n(which, *cases): weak when every case is (the
    predicate does not count)."""
    return (all(weak[1:]),)


def weak_scatter(weak: Sequence[bool], params: Mapping[str, Any]) -> tuple[bool, ...]:
    """scatter / scatter_add(operand, indices, updates): the operand's flag (lax's
    ``_argnum_weak_type(0)``; the plan has already given the operand the join's flag)."""
    return (weak[0],)


def weak_update_slice(weak: Sequence[bool], params: Mapping[str, Any]) -> tuple[bool, ...]:
    """dynamic_update_slice(operand, update, *starts): weak when every operand is, the start
    indices included (lax's standard rule)."""
    return (all(weak),)


def weak_convert(weak: Sequence[bool], params: Mapping[str, Any]) -> tuple[bool, ...]:
    """convert drops the flag unless its ``weak_type`` param keeps it (lax.convert_element_type)."""
    return (bool(params.get("weak_type", False)),)


def weak_pad(weak: Sequence[bool], params: Mapping[str, Any]) -> tuple[bool, ...]:
    """pad: weak when the operand is and the padding value is a Python int/float/complex."""
    value = params.get("padding_value", 0)
    return (weak[0] and type(value) in (int, float, complex),)


def weak_never(weak: Sequence[bool], params: Mapping[str, Any]) -> tuple[bool, ...]:
    """iota and full: created with an explicit dtype, so strongly typed."""
    return (False,)


def weak_two_outputs(weak: Sequence[bool], params: Mapping[str, Any]) -> tuple[bool, ...]:
    """eigh: both outputs keep the operand's flag."""
    return (weak[0], weak[0])


def weak_lu(weak: Sequence[bool], params: Mapping[str, Any]) -> tuple[bool, ...]:
    """lu: all three outputs keep the operand's flag (jax.lax.linalg.lu marks even the int32
    pivots and permutation weak when the operand is)."""
    return (weak[0],) * 3


def weak_svd(weak: Sequence[bool], params: Mapping[str, Any]) -> tuple[bool, ...]:
    """svd: every output keeps the operand's flag."""
    return (weak[0],) * (3 if params.get("compute_uv", True) else 1)


def weak_eig(weak: Sequence[bool], params: Mapping[str, Any]) -> tuple[bool, ...]:
    """eig: every output keeps the operand's flag."""
    count = 1 + sum(
        bool(params.get(name, True)) for name in ("compute_left_eigenvectors", "compute_right_eigenvectors")
    )
    return (weak[0],) * count


#: op name -> weak rule, for every op of the vocabulary.
WEAK_RULES: dict[str, WeakRule] = {}
_BY_FAMILY: Final[dict[str, WeakRule]] = {
    ops.BINARY: weak_all_operands,
    ops.COMPARE: weak_all_operands,
    ops.LOGICAL: weak_all_operands,
    ops.DOT: weak_all_operands,
    ops.CONV: weak_all_operands,
    ops.WINDOW: weak_keep_operand,
    ops.CLAMP: weak_all_operands,
    ops.CONCATENATE: weak_all_operands,
    ops.SELECT: weak_select,
    ops.SCATTER: weak_scatter,
    ops.DYNAMIC_UPDATE_SLICE: weak_update_slice,
    ops.GATHER: weak_keep_operand,
    ops.DYNAMIC_SLICE: weak_keep_operand,
    ops.UNARY: weak_keep_operand,
    ops.CONVERT: weak_convert,
    ops.REDUCE: weak_keep_operand,
    ops.STRUCTURAL: weak_keep_operand,
}
for _op in ops.OPS.values():
    if _op.family in _BY_FAMILY:
        WEAK_RULES[_op.name] = _BY_FAMILY[_op.family]
WEAK_RULES["pad"] = weak_pad
WEAK_RULES["iota"] = weak_never
WEAK_RULES["full"] = weak_never
WEAK_RULES["bitcast_convert_type"] = weak_never  # lax: the new dtype, strongly typed
WEAK_RULES["eigh"] = weak_two_outputs
WEAK_RULES["cholesky"] = weak_keep_operand
WEAK_RULES["triangular_solve"] = weak_all_operands
WEAK_RULES["lu"] = weak_lu
WEAK_RULES["qr"] = weak_two_outputs
WEAK_RULES["svd"] = weak_svd
WEAK_RULES["eig"] = weak_eig
WEAK_RULES["geqrf"] = weak_two_outputs  # (a, taus), as qr's


def weak_sort(weak: Sequence[bool], params: Mapping[str, Any]) -> tuple[bool, ...]:
    """sort: each output keeps its operand's flag (lax.sort's outputs have the operands' avals)."""
    return tuple(weak)


def weak_top_k(weak: Sequence[bool], params: Mapping[str, Any]) -> tuple[bool, ...]:
    """top_k: both outputs keep the operand's flag (lax.top_k's abstract eval updates the operand's
    aval for the int32 indices too, weak flag included)."""
    return (weak[0], weak[0])


def weak_split(weak: Sequence[bool], params: Mapping[str, Any]) -> tuple[bool, ...]:
    """split: every piece keeps the operand's flag."""
    return (weak[0],) * len(params["sizes"])


WEAK_RULES["sort"] = weak_sort
WEAK_RULES["top_k"] = weak_top_k
WEAK_RULES["split"] = weak_split
WEAK_RULES["optimization_barrier"] = weak_sort  # each output keeps its operand's flag, as sort's
WEAK_RULES["argmax"] = weak_never  # an index in its explicit index_dtype
WEAK_RULES["argmin"] = weak_never
WEAK_RULES["reduce_and"] = weak_never  # jax.lax gives a strong result here (checked against lax)
WEAK_RULES["reduce_or"] = weak_never
WEAK_RULES["reduce_xor"] = weak_never
WEAK_RULES["cumsum"] = weak_keep_operand
WEAK_RULES["cumprod"] = weak_keep_operand
WEAK_RULES["cummax"] = weak_keep_operand
WEAK_RULES["cummin"] = weak_keep_operand
WEAK_RULES["cumlogsumexp"] = weak_keep_operand
WEAK_RULES["fft"] = weak_never  # lax.fft converts its operand (a strong result), as jax.lax gives
WEAK_RULES["select_and_gather_add"] = weak_all_operands  # lax: weak when both operands are
WEAK_RULES["select_and_scatter_add"] = weak_all_operands


def weak_call(weak: Sequence[bool], params: Mapping[str, Any]) -> tuple[bool, ...]:
    """A user rule call (``custom_jvp_call`` / ``custom_vjp_call``): strong results, one per
    recorded output. JAX's are weak where the user's function makes them so; castwise does
    not trace the function's flags (a documented departure of the weak-type rules)."""
    return (False,) * len(params.get("out_avals", ())) if params.get("out_avals") else (False,)


WEAK_RULES["custom_jvp_call"] = weak_call
WEAK_RULES["custom_vjp_call"] = weak_call


def output_weak(op: OpDef, weak: Sequence[bool], params: Mapping[str, Any]) -> tuple[bool, ...]:
    """The weak flag of each output of ``op`` given its operands' (planned) weak flags."""
    try:
        rule = WEAK_RULES[op.name]
    except KeyError:
        raise NotImplementedError(f"{op.name}: no weak-type rule (runtime.core.weak.WEAK_RULES)") from None
    return rule(weak, params)
