"""The ``kael`` policy against kael's ADR 0003 on type promotion, table by table.

Every table of the ADR and every worked example is a row here, transcribed
from the ADR's text (kael names: Bool, I64, F32, F64).
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.core import ops
from runtime.core.plan import plan
from runtime.core.policies.kael_policy import KaelPolicy, dtype_category
from runtime.core.promotion import Operand, PromotionError

KAEL = {"Bool": rt.bool_, "I64": rt.int64, "F32": rt.float32, "F64": rt.float64}
Bool, I64, F32, F64 = KAEL["Bool"], KAEL["I64"], KAEL["F32"], KAEL["F64"]

# The ADR's promote_types table, rows then columns in the order Bool, I64, F32, F64.
PROMOTE_TYPES_TABLE = """
Bool: Bool I64 F32 F64
I64:  I64  I64 F32 F64
F32:  F32  F32 F32 F64
F64:  F64  F64 F64 F64
"""


def _table() -> list[tuple[rt.DType, rt.DType, rt.DType]]:
    rows = []
    for line in PROMOTE_TYPES_TABLE.strip().splitlines():
        row, cells = line.split(":")
        for col, cell in zip(("Bool", "I64", "F32", "F64"), cells.split(), strict=True):
            rows.append((KAEL[row], KAEL[col], KAEL[cell]))
    return rows


@pytest.mark.parametrize(("a", "b", "expected"), _table(), ids=lambda d: d.name)
def test_promote_types_table(a: rt.DType, b: rt.DType, expected: rt.DType) -> None:
    assert rt.promote_types(a, b, policy="kael") is expected


def test_dtype_category() -> None:
    assert [dtype_category(d) for d in (Bool, I64, F32, F64)] == [0, 1, 2, 2]


# The ADR's promote_with_scalar table: tensor, scalar, result. 2.5f is the same F32 Scalar as 2.5.
SCALAR_TABLE = [(F32, 2.5, F32), (F64, 2.5, F64), (I64, 2.5, F32), (Bool, 2, I64), (F32, 2, F32), (Bool, True, Bool)]


@pytest.mark.parametrize(("tensor", "scalar", "expected"), SCALAR_TABLE, ids=str)
def test_promote_with_scalar_table(tensor: rt.DType, scalar: Any, expected: rt.DType) -> None:
    kind = {bool: "bool", int: "int", float: "float"}[type(scalar)]
    assert KaelPolicy().promote_with_scalar(tensor, kind) is expected  # type: ignore[arg-type]
    assert rt.result_type(tensor, scalar, policy="kael") is expected
    x = rt.asarray(np.ones(3, tensor.storage), tensor)
    with rt.use_policy("kael"):
        assert (x * scalar).dtype is expected
        assert (scalar * x).dtype is expected


def test_scalars_take_their_dtype_from_their_type() -> None:
    # true is Bool, 2 is I64, 2.5 is F32 (the default float), the value never matters
    with rt.use_policy("kael"):
        assert rt.asarray(True).dtype is Bool
        assert rt.asarray(2).dtype is I64
        assert rt.asarray(2.5).dtype is F32
        assert (rt.asarray(np.ones(3, np.int64)) + 2**40).dtype is I64
    with pytest.raises(PromotionError, match="kael has no complex dtype"):
        rt.result_type(F32, 1j, policy="kael")


# The ADR's Context table, its category-based column.
def test_context_table_category_based_column() -> None:
    f32_3, i64_3 = np.ones(3, np.float32), np.ones(3, np.int64)
    assert rt.result_type(f32_3, 0.5, policy="kael") is F32
    assert rt.result_type(i64_3, 2.5, policy="kael") is F32
    assert rt.result_type(f32_3, np.float64(0.5).reshape(()), policy="kael") is F32
    assert rt.result_type(f32_3, np.zeros((), np.float64), policy="kael") is F32
    assert rt.result_type(i64_3, f32_3, policy="kael") is F32


# result_dtype's 0-d group rule, with the golden cases the ADR names.
@pytest.mark.parametrize(
    ("dimensioned", "zero_d", "expected"),
    [
        (F32, F64, F32),  # zero_dim_wider: same category, the dimensioned tensor wins
        (I64, F32, F32),  # zero_dim_higher_category: the 0-d tensor wins
        (F32, I64, F32),  # zero_dim_lower_category
        (Bool, I64, I64),
        (I64, F64, F64),  # a higher-category 0-d tensor brings its own dtype
        (Bool, Bool, Bool),
    ],
)
def test_zero_dimensional_group_wins_only_with_a_higher_category(
    dimensioned: rt.DType, zero_d: rt.DType, expected: rt.DType
) -> None:
    a = rt.asarray(np.ones(3, dimensioned.storage), dimensioned)
    z = rt.asarray(np.ones((), zero_d.storage), zero_d)
    with rt.use_policy("kael"):  # mul: add has its own rule for Bool + Bool
        assert (a * z).dtype is expected
        assert (z * a).dtype is expected
    pol = rt.get_policy_object("kael")
    assert pol.result_type([Operand(dimensioned, None, False), Operand(zero_d, None, True)]) is expected


def test_zero_dimensional_tensors_alone_use_the_full_order() -> None:
    z32, z64 = rt.asarray(np.ones((), np.float32)), rt.asarray(np.ones((), np.float64))
    with rt.use_policy("kael"):
        assert (z32 + z64).dtype is F64  # one group: promote_types
        assert (rt.asarray(np.ones((), np.int64)) + 2.5).dtype is F32  # the scalar is a 0-d F32


# -- the worked example ------------------------------------------------------------------------


def test_worked_example_ones_i64_times_half() -> None:
    a = rt.asarray(np.ones(3, np.int64))
    with rt.use_policy("kael"):
        out = a * 0.5
        g = rt.trace(lambda x: x * 0.5, a)
    assert out.dtype is F32
    np.testing.assert_array_equal(out.numpy(), np.array([0.5, 0.5, 0.5], np.float32))
    # step 4: a.to(F32) is the recorded convert; the scalar is already a 0-d float32
    convert, mul = g.eqns
    assert convert.op is ops.convert and convert.inputs[0] is g.inputs[0] and convert.outputs[0].dtype is F32
    assert mul.op is ops.mul and mul.inputs[0] is convert.outputs[0]
    half = mul.inputs[1]
    assert half.const is not None and half.dtype is F32 and half.shape == ()  # no convert for the scalar


def test_worked_example_variants() -> None:
    with rt.use_policy("kael"):
        # a float64 tensor: the scalar's category is not higher, the result is float64
        assert (rt.asarray(np.ones(3, np.float64)) * 0.5).dtype is F64
        # a float32 tensor and scalar(0.5, DType::F64), a 0-d F64: same category, float32 stays
        out = rt.asarray(np.ones(3, np.float32)) * rt.asarray(np.array(0.5, np.float64))
        assert out.dtype is F32
        np.testing.assert_array_equal(out.numpy(), np.full(3, 0.5, np.float32))


def test_check_your_understanding() -> None:
    with rt.use_policy("kael"):
        assert (rt.asarray(np.ones(3, np.int64)) + 2.5).dtype is F32  # and not float64
        big = rt.asarray(np.ones((1024, 1024), np.float32)) * rt.asarray(np.array(0.5, np.float64))
        assert big.dtype is F32 and big.numpy().nbytes == 4 * 2**20
        # int64 + float32 gives float32: 16777217 becomes 16777216
        sum_ = rt.asarray(np.array([16777217], np.int64)) + rt.asarray(np.zeros(1, np.float32))
        assert sum_.dtype is F32 and sum_.item() == 16777216.0


# -- per-operation overrides -------------------------------------------------------------------

BOOLS = np.array([True, True, False])


def test_add_bool_plus_bool_counts_in_i64() -> None:
    b = rt.asarray(BOOLS)
    with rt.use_policy("kael"):
        out = b + b
        assert (b + True).dtype is I64  # a Bool scalar joins as Bool, then add counts
        g = rt.trace(lambda x: x + x, b)
    assert out.dtype is I64 and out.numpy().tolist() == [2, 2, 0]  # true + true is 2
    assert [e.op.name for e in g.eqns] == ["convert", "convert", "add"]


def test_mul_of_bools_stays_bool() -> None:
    b = rt.asarray(BOOLS)
    with rt.use_policy("kael"):
        out = b * b
        g = rt.trace(lambda x: x * x, b)
    assert out.dtype is Bool and out.numpy().tolist() == [True, True, False]
    assert [e.op.name for e in g.eqns] == ["and"]


@pytest.mark.parametrize(
    ("x", "y"),
    [(np.ones(2, np.int64), np.ones(2, np.int64)), (BOOLS, BOOLS), (np.ones(2, np.int64), 2), (BOOLS, 1)],
    ids=["i64/i64", "bool/bool", "i64/2", "bool/1"],
)
def test_div_of_an_integer_or_bool_result_is_f32(x: Any, y: Any) -> None:
    with rt.use_policy("kael"):
        out = rt.asarray(x) / (rt.asarray(y) if isinstance(y, np.ndarray) else y)
    assert out.dtype is F32


def test_div_of_a_float_result_keeps_it() -> None:
    with rt.use_policy("kael"):
        assert (rt.asarray(np.ones(2, np.int64)) / rt.asarray(np.ones(2))).dtype is F64


@pytest.mark.parametrize("op", [ops.sub, ops.pow, ops.floor_div], ids=lambda o: o.name)
@pytest.mark.parametrize(
    "operands",
    [(BOOLS, BOOLS), (BOOLS, np.ones(3, np.int64)), (np.ones(3), BOOLS), (BOOLS, 1)],
    ids=["bool-bool", "bool-i64", "f64-bool", "bool-scalar"],
)
def test_sub_pow_floor_divide_refuse_bool_inputs(op: ops.OpDef, operands: tuple[Any, Any]) -> None:
    args = [rt.asarray(a) if isinstance(a, np.ndarray) else a for a in operands]
    with rt.use_policy("kael"), pytest.raises(TypeError, match=rf"{op.name}: Bool inputs are not supported"):
        rt.core.executor.apply(op, args, {})
    # the same ops without Bool inputs are fine
    with rt.use_policy("kael"):
        assert rt.core.executor.apply(op, [rt.asarray(np.ones(3, np.int64)), 2], {}).dtype is I64  # type: ignore[union-attr]


def test_other_policies_promote_bool_minus_int() -> None:
    assert (rt.asarray(BOOLS) - rt.asarray(np.ones(3, np.int64))).dtype is I64  # jax: bool joins int64


@pytest.mark.parametrize("op", [ops.eq, ops.ne, ops.lt, ops.le, ops.gt, ops.ge], ids=lambda o: o.name)
def test_comparisons_compute_in_result_dtype_and_output_bool(op: ops.OpDef) -> None:
    # 16777217 (I64) against 16777216.0 (F32) compares in F32, where the two are equal
    big = rt.asarray(np.array([16777217], np.int64))
    f = rt.asarray(np.array([16777216.0], np.float32))
    assert plan(op, (I64, F32), policy="kael") == (F32, F32)
    with rt.use_policy("kael"):
        out = rt.core.executor.apply(op, (big, f), {})
    assert isinstance(out, rt.Tensor) and out.dtype is Bool
    expected = {"eq": True, "ne": False, "lt": False, "le": True, "gt": False, "ge": True}[op.name]
    assert out.item() is expected


# The ADR's in-place table: self, operation, other, allowed (None) or the error's dtypes.
INPLACE_TABLE = [
    (np.ones(3, np.float32), "add_", np.ones(3, np.float64), None),  # rounds to float32
    (np.ones(3, np.float32), "add_", np.ones(3, np.int64), None),
    (np.ones(3, np.int64), "add_", 1, None),
    (np.ones(3, np.int64), "add_", 0.5, ("float32", "int64")),
    (np.ones(3, np.int64), "div_", 2, ("float32", "int64")),
    (np.array([True, False, True]), "add_", "self", ("int64", "bool")),
]


@pytest.mark.parametrize(("self_", "name", "other", "error"), INPLACE_TABLE)
def test_inplace_table(self_: np.ndarray, name: str, other: Any, error: tuple[str, str] | None) -> None:
    t = rt.asarray(self_.copy())
    operand = t if isinstance(other, str) else (rt.asarray(other) if isinstance(other, np.ndarray) else other)
    with rt.use_policy("kael"):
        if error is None:
            getattr(t, name)(operand)
            assert t.dtype is rt.dtype(self_.dtype)  # the dtype never changes
            return
        with pytest.raises(
            TypeError, match=rf"{name} result of dtype {error[0]} cannot be stored in a tensor of dtype {error[1]}"
        ):
            getattr(t, name)(operand)
    np.testing.assert_array_equal(t.numpy(), self_)  # nothing was written


def test_inplace_rounds_on_store() -> None:
    t = rt.asarray(np.ones(1, np.float32))
    with rt.use_policy("kael"):
        t.add_(rt.asarray(np.array([1e-10], np.float64)))
    assert t.dtype is F32 and t.item() == 1.0


# -- reductions and float-only ops --------------------------------------------------------------


def test_sum_of_bool_is_i64_and_float_ops_of_integers_are_f32() -> None:
    with rt.use_policy("kael"):
        assert rt.asarray(BOOLS).sum().dtype is I64
        assert rt.exp(rt.asarray(np.arange(3))).dtype is F32
        assert rt.sqrt(rt.asarray(BOOLS)).dtype is F32


# -- dtypes kael does not have ----------------------------------------------------------------


@pytest.mark.parametrize("d", [d for d in rt.ALL_DTYPES if d not in KAEL.values()], ids=lambda d: d.name)
def test_other_dtypes_are_refused_with_kaels_wording(d: rt.DType) -> None:
    with pytest.raises(PromotionError, match=rf"kael has no dtype {d.name}: its dtypes are Bool, I64, F32 and F64"):
        rt.promote_types(d, F32, policy="kael")
    with pytest.raises(PromotionError, match=rf"kael has no dtype {d.name}"):
        rt.promote_types(d, d, policy="kael")
    with pytest.raises(PromotionError, match=rf"kael has no dtype {d.name}"):
        rt.result_type(d, 2.5, policy="kael")


def test_eager_errors_name_op_dtypes_and_policy() -> None:
    with rt.use_policy("kael"), pytest.raises(PromotionError) as info:
        rt.asarray(np.ones(2, np.int32)) + rt.asarray(np.ones(2, np.int64))
    text = str(info.value)
    assert "add" in text and "int32" in text and "'kael'" in text


# -- tooling ---------------------------------------------------------------------------------


def test_castwise_lattice_kael_prints_the_table() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "autodiff.cli", "lattice", "kael"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0].split() == ["kael", "bool", "i64", "f32", "f64"]
    assert [line.split() for line in out[1:]] == [
        ["bool", "bool", "i64", "f32", "f64"],
        ["i64", "i64", "i64", "f32", "f64"],
        ["f32", "f32", "f32", "f32", "f64"],
        ["f64", "f64", "f64", "f64", "f64"],
    ]
    check = subprocess.run(
        [sys.executable, "-m", "autodiff.cli", "lattice", "kael", "--check"], capture_output=True, text=True, check=True
    ).stdout
    assert "fails" not in check and check.count("holds") == 3
