"""The promotion plan: every promoting family, the exempt operands, the rest unchanged."""

from __future__ import annotations

import pytest

import runtime as rt
from runtime.core import ops
from runtime.core.plan import OP_RULES, PLAN_RULES, plan, promotes
from runtime.core.promotion import Operand

f32, f64, c64, c128, i32, i64, b = rt.float32, rt.float64, rt.complex64, rt.complex128, rt.int32, rt.int64, rt.bool_

PROMOTING_FAMILIES = {
    ops.BINARY, ops.COMPARE, ops.LOGICAL, ops.DOT, ops.SELECT, ops.CLAMP,
    ops.CONCATENATE, ops.SCATTER, ops.DYNAMIC_UPDATE_SLICE, ops.CONV,
}  # fmt: skip


def test_plan_rules_cover_exactly_the_promoting_families() -> None:
    assert set(PLAN_RULES) == PROMOTING_FAMILIES
    for op in ops.OPS.values():
        # a per-op rule (int inputs to float-only ops, bool reductions ...) makes an op promote too
        assert promotes(op) == (op.family in PROMOTING_FAMILIES or op.name in OP_RULES), op.name


@pytest.mark.parametrize(
    "op", [o for o in ops.OPS.values() if o.family in (ops.BINARY, ops.COMPARE, ops.DOT) and o is not ops.div]
)
def test_binary_families_promote_both_operands(op: ops.OpDef) -> None:
    assert plan(op, (f64, c128)) == (c128, c128)
    assert plan(op, (c128, f64)) == (c128, c128)
    assert plan(op, (f32, c64)) == (c64, c64)
    assert plan(op, (i32, f32), policy="numpy") == (f64, f64)


def test_logical_family_promotes_integers() -> None:
    assert plan(ops.logical_and, (b, i32)) == (i32, i32)
    assert plan(ops.logical_xor, (rt.uint8, rt.int8)) == (rt.int16, rt.int16)


def test_select_leaves_the_predicate_alone() -> None:
    assert plan(ops.select, (b, f64, c128)) == (b, c128, c128)
    # even a non-bool predicate is not converted: the kernel reports it
    assert plan(ops.select, (i32, f32, f64)) == (i32, f64, f64)


def test_clamp_and_concatenate_promote_every_operand() -> None:
    assert plan(ops.clamp, (f32, f64, f32)) == (f64, f64, f64)
    assert plan(ops.concatenate, (f32, c64, f64, f32)) == (c128,) * 4
    assert plan(ops.concatenate, (f32,)) == (f32,)


def test_scatter_leaves_indices_alone() -> None:
    for op in (ops.scatter, ops.scatter_add):
        assert plan(op, (f64, i32, c128)) == (c128, i32, c128)
        assert plan(op, (c64, rt.uint8, f32)) == (c64, rt.uint8, c64)


def test_dynamic_update_slice_leaves_start_indices_alone() -> None:
    assert plan(ops.dynamic_update_slice, (f32, f64, i32, i64)) == (f64, f64, i32, i64)
    assert plan(ops.dynamic_update_slice, (f64, c128, i32)) == (c128, c128, i32)


@pytest.mark.parametrize("op", [o for o in ops.OPS.values() if o.family not in PROMOTING_FAMILIES])
def test_other_ops_change_nothing(op: ops.OpDef) -> None:
    # (a float-only op converts an integer operand: tests/runtime/test_opfamilies.py)
    second = f32 if op in ops.FLOAT_ONLY else i32
    inputs = tuple([f64, second, rt.bfloat16][: op.arity if op.arity is not None else 3])
    assert plan(op, inputs) == inputs


def test_unary_op_is_unchanged_under_every_policy() -> None:
    for policy in rt.policies():
        assert plan(ops.exp, (rt.bfloat16,), policy=policy) == (rt.bfloat16,)


def test_true_division_of_integers_goes_to_the_policy_float() -> None:
    assert plan(ops.div, (i32, i32)) == (f32, f32)  # jnp.true_divide: narrow ints -> f32
    assert plan(ops.div, (i64, i32)) == (f64, f64)
    assert plan(ops.div, (i32, i32), policy="numpy") == (f64, f64)
    assert plan(ops.div, (i32, i32), policy="torch") == (f32, f32)
    assert plan(ops.div, (i64, i64), policy="neuron") == (f32, f32)
    assert plan(ops.div, (f32, i32), policy="torch") == (f32, f32)
    with pytest.raises(rt.PromotionError, match="div.*strict"):
        plan(ops.div, (i32, i32), policy="strict")


def test_weak_scalars_and_zero_dim_operands() -> None:
    py_float = Operand(None, "float", True)
    assert plan(ops.add, (f32, py_float)) == (f32, f32)
    assert plan(ops.add, (i32, py_float)) == (f64, f64)
    assert plan(ops.add, (i32, py_float), policy="torch") == (f32, f32)
    zero_d_f64 = Operand(f64, None, True)
    assert plan(ops.mul, (f32, zero_d_f64), policy="torch") == (f32, f32)
    assert plan(ops.mul, (f32, zero_d_f64), policy="jax") == (f64, f64)
    # scalars in exempt positions take the index/default dtype
    assert plan(ops.dynamic_update_slice, (f32, f32, Operand(None, "int", True))) == (f32, f32, i64)
    assert plan(ops.exp, (py_float,), policy="torch") == (f32,)


def test_plan_errors_name_the_op_operands_and_policy() -> None:
    with pytest.raises(rt.PromotionError) as info:
        plan(ops.add, (rt.float8_e4m3fn, f32))
    text = str(info.value)
    assert "add" in text and "float8_e4m3fn" in text and "float32" in text and "'jax'" in text
    with pytest.raises(rt.PromotionError, match="select.*int32.*uint32.*torch"):
        plan(ops.select, (b, i32, rt.uint32), policy="torch")


def test_plan_accepts_op_names() -> None:
    assert plan("add", (f64, c128)) == (c128, c128)
    with pytest.raises(rt.OpTypeError, match="^plan: unknown op 'frobnicate'"):
        plan("frobnicate", (f64,))
