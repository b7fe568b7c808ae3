"""The seven promotion policies, each checked against its reference.

* ``jax`` / ``jax-strict``: the installed ``jax.numpy`` (x64) is the oracle.
* ``numpy``: the installed ``numpy.result_type`` (NEP 50) is the oracle.
* ``torch``: PyTorch is not a dependency; the expectation tables below were
  produced by ``torch.promote_types`` / ``torch.result_type`` of PyTorch
  2.13.0 (CPU) and are checked live when torch is importable
  (``test_torch_table_matches_installed_torch``).
* ``neuron``: the Neuron promotion lattice (docs/promotion.md, Sources).
* ``tenferro`` / ``strict``: the castwise design's rules (docs/promotion.md, Sources).
"""

from __future__ import annotations

import threading

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import runtime
from runtime import PromotionError
from runtime.core.policies import torch_policy
from tests.runtime.policy_helpers import ERR, promote, result

ALL = runtime.ALL_DTYPES
POLICY_NAMES = ("jax", "jax-strict", "numpy", "torch", "neuron", "tenferro", "strict", "kael")
SCALARS = (True, 1, 1.0, 1j)


def D(name: str) -> runtime.DType:
    return runtime.dtype(name)


def zero_d(d: runtime.DType) -> np.ndarray:
    return np.zeros((), d.storage)


# =============================================================================
# jax and jax-strict: the installed JAX is the oracle
# =============================================================================


def _jax_knows(d: runtime.DType) -> bool:
    """Whether the installed JAX has ``d`` as a dtype (float32r is castwise's own storage alias)."""
    if d is runtime.float32r:
        return False
    try:
        jnp.promote_types(d.storage, d.storage)
    except (TypeError, ValueError):
        return False
    return True


JAX_DTYPES = tuple(d for d in ALL if _jax_knows(d))
JAX_MODES = [("jax", "standard"), ("jax-strict", "strict")]
_JAX_ERRORS = (TypeError, jax.dtypes.TypePromotionError)


def jax_oracle(fn, *args, mode):
    with jax.enable_x64(True), jax.numpy_dtype_promotion(mode):
        try:
            return runtime.dtype(fn(*args))
        except _JAX_ERRORS:
            return ERR


def _jax_operand(x):
    return x.storage if isinstance(x, runtime.DType) else x


def test_jax_is_the_default_policy():
    assert runtime.DEFAULT_POLICY == "jax"
    assert runtime.get_policy() == "jax"
    assert runtime.promote_types(runtime.int64, runtime.uint64) is runtime.float64  # jax, not numpy


@pytest.mark.parametrize(("policy", "mode"), JAX_MODES)
def test_jax_promote_types_matches_jax_for_every_pair(policy, mode):
    mismatches = []
    for a in JAX_DTYPES:
        for b in JAX_DTYPES:
            expected = jax_oracle(jnp.promote_types, a.storage, b.storage, mode=mode)
            got = promote(a, b, policy)
            if got is not expected:
                mismatches.append((a.name, b.name, str(expected), str(got)))
    assert mismatches == []


@pytest.mark.parametrize(("policy", "mode"), JAX_MODES)
def test_jax_result_type_with_weak_scalars_matches_jax(policy, mode):
    mismatches = []
    operands = [*JAX_DTYPES, *SCALARS]
    for x in operands:
        for y in operands:
            if isinstance(x, runtime.DType) and isinstance(y, runtime.DType):
                continue  # covered by the pair test
            expected = jax_oracle(jnp.result_type, _jax_operand(x), _jax_operand(y), mode=mode)
            got = result(x, y, policy=policy)
            if got is not expected:
                mismatches.append((x, y, str(expected), str(got)))
    for s in SCALARS:  # a lone scalar takes its default dtype
        if result(s, policy=policy) is not jax_oracle(jnp.result_type, s, mode=mode):
            mismatches.append((s, None))
    assert mismatches == []


@pytest.mark.parametrize(("policy", "mode"), JAX_MODES)
def test_jax_zero_d_arrays_are_strong(policy, mode):
    mismatches = []
    for d in JAX_DTYPES:
        arr = zero_d(d)
        for other in (*SCALARS, runtime.float32, runtime.int8, runtime.bfloat16):
            o = _jax_operand(other)
            expected = jax_oracle(jnp.result_type, arr, o, mode=mode)
            got = result(arr, other, policy=policy)
            if got is not expected:
                mismatches.append((d.name, other, str(expected), str(got)))
    assert mismatches == []
    # spot checks that would catch treating a 0-d array as weak
    assert runtime.result_type(zero_d(runtime.int8), runtime.int16, policy="jax") is runtime.int16
    assert runtime.result_type(zero_d(runtime.float64), runtime.float16, policy="jax") is runtime.float64


def test_jax_knows_the_one_two_and_four_bit_ints_but_no_half_complex():
    # the new ml_dtypes ints are JAX dtypes (checked cell by cell by the pair test);
    # complex32 and bcomplex32 are not
    for d in (runtime.int1, runtime.uint1, runtime.int2, runtime.uint2, runtime.int4, runtime.uint4):
        assert d in JAX_DTYPES
    assert runtime.complex32 not in JAX_DTYPES
    assert runtime.bcomplex32 not in JAX_DTYPES


@pytest.mark.parametrize("policy", ["jax", "jax-strict"])
@pytest.mark.parametrize("d", [d for d in ALL if not _jax_knows(d) and d is not runtime.float32r], ids=str)
def test_jax_refuses_dtypes_jax_does_not_have(policy, d):
    for other in (d, runtime.complex64, runtime.float16, runtime.int8):
        with pytest.raises(PromotionError, match=f"{d.name} is not a dtype of this policy"):
            runtime.promote_types(d, other, policy=policy)
        with pytest.raises(PromotionError):
            runtime.promote_types(other, d, policy=policy)
    for s in SCALARS:
        with pytest.raises(PromotionError):
            runtime.result_type(d, s, policy=policy)


@pytest.mark.parametrize("policy", ["jax", "jax-strict"])
def test_jax_refuses_float32r(policy):
    for other in (runtime.float32r, runtime.float32, runtime.float64):
        with pytest.raises(PromotionError):
            runtime.promote_types(runtime.float32r, other, policy=policy)
    with pytest.raises(PromotionError):
        runtime.result_type(runtime.float32r, policy=policy)


def test_jax_known_cells():
    # A few readable cells (the pair test checks them all against JAX).
    assert promote(runtime.int64, runtime.uint64, "jax") is runtime.float64
    assert promote(runtime.uint8, runtime.int8, "jax") is runtime.int16
    assert promote(runtime.bfloat16, runtime.float16, "jax") is runtime.float32
    assert promote(runtime.float8_e4m3fn, runtime.float32, "jax") is ERR
    assert promote(runtime.int4, runtime.int8, "jax") is ERR
    assert promote(runtime.int2, runtime.int4, "jax") is ERR
    assert promote(runtime.bool_, runtime.uint1, "jax") is runtime.uint1
    assert result(runtime.int2, 1, policy="jax") is runtime.int2
    assert result(runtime.uint1, 1.0, policy="jax") is ERR
    assert result(runtime.float8_e5m2, 1.0, policy="jax") is runtime.float8_e5m2
    assert result(runtime.int4, 3, policy="jax") is runtime.int4
    assert result(runtime.int8, 1.0, policy="jax") is runtime.float64
    assert result(runtime.float32, 1.0, policy="jax-strict") is runtime.float32
    assert result(runtime.float32, runtime.float64, policy="jax-strict") is ERR
    assert result(runtime.int32, 1.0, policy="jax-strict") is ERR
    assert result(runtime.float32, 1, policy="jax-strict") is runtime.float32


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_promotion_error_is_a_type_error_naming_both_dtypes_and_the_policy(policy):
    # float8_e8m0fnu x complex128 has no path in any policy (neuron: no complex;
    # strict/tenferro/numpy: different or unknown dtypes; jax/torch: float8).
    a, b = runtime.float8_e8m0fnu, runtime.complex128
    with pytest.raises(PromotionError) as info:
        runtime.promote_types(a, b, policy=policy)
    assert isinstance(info.value, TypeError)
    message = str(info.value)
    assert a.name in message
    assert b.name in message
    assert f"policy '{policy}'" in message


# =============================================================================
# numpy: numpy.result_type (NEP 50) is the oracle
# =============================================================================

NUMPY_NATIVE = tuple(
    D(n)
    for n in (
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64", "complex64", "complex128",
    )
)  # fmt: skip


def numpy_oracle(*args):
    return runtime.dtype(np.result_type(*args))


def test_numpy_promote_types_matches_numpy_for_every_native_pair():
    mismatches = []
    for a in NUMPY_NATIVE:
        for b in NUMPY_NATIVE:
            expected = runtime.dtype(np.promote_types(a.storage, b.storage))
            if promote(a, b, "numpy") is not expected:
                mismatches.append((a.name, b.name, expected.name))
    assert mismatches == []


def test_numpy_result_type_with_python_scalars_matches_nep50():
    mismatches = []
    operands = [*NUMPY_NATIVE, *SCALARS]
    for x in operands:
        for y in operands:
            args = [_jax_operand(v) for v in (x, y)]
            expected = numpy_oracle(*args)
            if result(x, y, policy="numpy") is not expected:
                mismatches.append((x, y, expected.name))
    for s in SCALARS:
        if result(s, policy="numpy") is not numpy_oracle(s):
            mismatches.append((s,))
    assert mismatches == []
    # NEP 50 spot checks (these differ from NumPy 1's value-based rules)
    assert result(runtime.uint8, 300, policy="numpy") is runtime.uint8
    assert result(runtime.float16, 1.0, policy="numpy") is runtime.float16
    assert result(runtime.float32, 1j, policy="numpy") is runtime.complex64
    assert result(runtime.int8, 1.0, policy="numpy") is runtime.float64


def test_numpy_zero_d_arrays_are_strong():
    mismatches = []
    for a in NUMPY_NATIVE:
        for other in (*SCALARS, *NUMPY_NATIVE):
            arr = zero_d(a)
            other_np = zero_d(other) if isinstance(other, runtime.DType) else other
            expected = numpy_oracle(arr, other_np)
            if result(arr, other_np, policy="numpy") is not expected:
                mismatches.append((a.name, other, expected.name))
    assert mismatches == []
    assert result(zero_d(runtime.float64), runtime.float32, policy="numpy") is runtime.float64


def test_numpy_three_strong_operands_do_not_fold_pairwise():
    # np.promote_types is not associative; np.result_type is order-independent.
    for args in [
        (runtime.int8, runtime.uint8, runtime.float16),
        (runtime.uint8, runtime.int8, runtime.float16),
        (runtime.int8, runtime.uint16, runtime.float16),
        (runtime.uint16, runtime.int8, runtime.float32),
        (runtime.uint64, runtime.int8, runtime.float16),
    ]:
        expected = numpy_oracle(*(d.storage for d in args))
        assert result(*args, policy="numpy") is expected, args
    assert result(runtime.int8, runtime.uint8, runtime.float16, policy="numpy") is runtime.float16


def test_numpy_result_type_on_ml_dtypes_types_depends_on_the_ml_dtypes_release():
    # Why the numpy policy refuses the ml_dtypes formats: NumPy's answers for them are
    # ml_dtypes' own, and they changed between its releases (0.6 had no lattice, 0.7 has one),
    # so a program's dtypes would depend on which ml_dtypes is installed.
    c32, i2 = np.dtype(runtime.complex32.storage), np.dtype(runtime.int2.storage)
    assert np.result_type(np.int8, c32) == c32
    assert np.result_type(np.zeros(2, np.int8), 1.5) == np.float64
    if _release(ml_dtypes.__version__) < (0, 7):
        with pytest.raises(TypeError):
            np.result_type(np.int64, c32)  # a wider int has no path, a narrower one does
        with pytest.raises(TypeError):
            np.result_type(np.zeros(2, c32), 1.5)  # a Python float cannot join complex32
        assert np.result_type(np.zeros(2, i2), 1.5) == np.float16  # int2 + 1.5, but int8 + 1.5 is float64
    else:
        assert np.result_type(np.int64, c32) == np.complex128
        assert np.result_type(np.zeros(2, c32), 1.5) == c32
        assert np.result_type(np.zeros(2, i2), 1.5) == np.float64


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:2])


@pytest.mark.parametrize("d", [d for d in ALL if d not in NUMPY_NATIVE], ids=str)
def test_numpy_refuses_non_native_dtypes(d):
    with pytest.raises(PromotionError):
        runtime.promote_types(d, d, policy="numpy")
    with pytest.raises(PromotionError):
        runtime.promote_types(d, runtime.float32, policy="numpy")
    with pytest.raises(PromotionError):
        runtime.promote_types(runtime.float64, d, policy="numpy")
    with pytest.raises(PromotionError):
        runtime.result_type(d, policy="numpy")
    with pytest.raises(PromotionError):
        runtime.result_type(d, 1.0, policy="numpy")


# =============================================================================
# torch: c10 promoteTypes + TypeProperties.cpp result_type
# =============================================================================

# Produced by torch.promote_types in PyTorch 2.13.0 ("-": torch raises).
TORCH_PROMOTE_TYPES = """
      bool u8   i8   i16  i32  i64  f16  bf16 f32  f64  c64  c128 u16  u32  u64  u4   i4
bool  bool u8   i8   i16  i32  i64  f16  bf16 f32  f64  c64  c128 -    -    -    -    -
u8    u8   u8   i16  i16  i32  i64  f16  bf16 f32  f64  c64  c128 -    -    -    -    -
i8    i8   i16  i8   i16  i32  i64  f16  bf16 f32  f64  c64  c128 -    -    -    -    -
i16   i16  i16  i16  i16  i32  i64  f16  bf16 f32  f64  c64  c128 -    -    -    -    -
i32   i32  i32  i32  i32  i32  i64  f16  bf16 f32  f64  c64  c128 -    -    -    -    -
i64   i64  i64  i64  i64  i64  i64  f16  bf16 f32  f64  c64  c128 -    -    -    -    -
f16   f16  f16  f16  f16  f16  f16  f16  f32  f32  f64  c64  c128 f16  f16  f16  f16  -
bf16  bf16 bf16 bf16 bf16 bf16 bf16 f32  bf16 f32  f64  c64  c128 bf16 bf16 bf16 bf16 -
f32   f32  f32  f32  f32  f32  f32  f32  f32  f32  f64  c64  c128 f32  f32  f32  f32  -
f64   f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  c128 c128 f64  f64  f64  f64  -
c64   c64  c64  c64  c64  c64  c64  c64  c64  c64  c128 c64  c128 -    -    -    -    -
c128  c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 -    -    -    -    -
u16   -    -    -    -    -    -    f16  bf16 f32  f64  -    -    u16  -    -    -    -
u32   -    -    -    -    -    -    f16  bf16 f32  f64  -    -    -    u32  -    -    -
u64   -    -    -    -    -    -    f16  bf16 f32  f64  -    -    -    -    u64  -    -
u4    -    -    -    -    -    -    f16  bf16 f32  f64  -    -    -    -    -    u4   -
i4    -    -    -    -    -    -    -    -    -    -    -    -    -    -    -    -    i4
"""

# torch.result_type(dimensioned tensor of the row dtype, 0-d tensor of the column dtype).
TORCH_DIM_WITH_ZERO_D = """
      bool u8   i8   i16  i32  i64  f16  bf16 f32  f64  c64  c128 u16  u32  u64  u4   i4
bool  bool u8   i8   i16  i32  i64  f16  bf16 f32  f64  c64  c128 -    -    -    -    -
u8    u8   u8   u8   u8   u8   u8   f16  bf16 f32  f64  c64  c128 u8   u8   u8   u8   u8
i8    i8   i8   i8   i8   i8   i8   f16  bf16 f32  f64  c64  c128 i8   i8   i8   i8   i8
i16   i16  i16  i16  i16  i16  i16  f16  bf16 f32  f64  c64  c128 i16  i16  i16  i16  i16
i32   i32  i32  i32  i32  i32  i32  f16  bf16 f32  f64  c64  c128 i32  i32  i32  i32  i32
i64   i64  i64  i64  i64  i64  i64  f16  bf16 f32  f64  c64  c128 i64  i64  i64  i64  i64
f16   f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  c32  c32  f16  f16  f16  f16  f16
bf16  bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 c64  c64  bf16 bf16 bf16 bf16 bf16
f32   f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  c64  c64  f32  f32  f32  f32  f32
f64   f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  c128 c128 f64  f64  f64  f64  f64
c64   c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64
c128  c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128
u16   u16  u16  u16  u16  u16  u16  f16  bf16 f32  f64  c64  c128 u16  u16  u16  u16  u16
u32   u32  u32  u32  u32  u32  u32  f16  bf16 f32  f64  c64  c128 u32  u32  u32  u32  u32
u64   u64  u64  u64  u64  u64  u64  f16  bf16 f32  f64  c64  c128 u64  u64  u64  u64  u64
u4    u4   u4   u4   u4   u4   u4   f16  bf16 f32  f64  c64  c128 u4   u4   u4   u4   u4
i4    i4   i4   i4   i4   i4   i4   -    -    -    -    c64  c128 i4   i4   i4   i4   i4
"""

# torch.result_type(tensor of the row dtype, Python scalar); identical for a
# dimensioned and a 0-d tensor.
TORCH_WITH_SCALAR = """
           True       1          1.0        1j
bool       bool       i64        f32        c64
u8         u8         u8         f32        c64
i8         i8         i8         f32        c64
i16        i16        i16        f32        c64
i32        i32        i32        f32        c64
i64        i64        i64        f32        c64
f16        f16        f16        f16        c32
bf16       bf16       bf16       bf16       c64
f32        f32        f32        f32        c64
f64        f64        f64        f64        c128
c64        c64        c64        c64        c64
c128       c128       c128       c128       c128
u16        u16        u16        f32        c64
u32        u32        u32        f32        c64
u64        u64        u64        f32        c64
u4         u4         u4         f32        c64
i4         i4         i4         -          c64
f8e4m3fn   f8e4m3fn   f8e4m3fn   f8e4m3fn   -
f8e4m3fnuz f8e4m3fnuz f8e4m3fnuz f8e4m3fnuz -
f8e5m2     f8e5m2     f8e5m2     f8e5m2     -
f8e5m2fnuz f8e5m2fnuz f8e5m2fnuz f8e5m2fnuz -
f8e8m0fnu  f8e8m0fnu  f8e8m0fnu  f8e8m0fnu  -
"""

# (dimensioned, 0-d, Python scalar) -> result, from PyTorch 2.13.0's
# torch._prims_common.elementwise_dtypes (which agrees with torch.result_type on
# every pair of these dtypes).
TORCH_TRIPLES = [
    ("i32", "f64", 1.0, "f64"),
    ("i64", "f32", 1j, "c64"),
    ("bool", "i32", 1.0, "f32"),
    ("bool", "bool", 1, "i64"),
    ("u8", "i8", 1, "u8"),
    ("f16", "f64", 1.0, "f16"),
    ("bf16", "f32", 1.0, "bf16"),
    ("i8", "c128", 1.0, "c128"),
    ("f32", "c128", 1, "c64"),
    ("f64", "c64", True, "c128"),
    ("bool", "f64", 1j, "c128"),
    ("i64", "bool", 1.0, "f32"),
    ("u8", "bool", True, "u8"),
    ("i16", "i64", 1j, "c64"),
    ("f32", "i64", 1j, "c64"),
    ("i64", "f64", 1j, "c128"),
    ("bf16", "i64", 1j, "c64"),
    ("u8", "f16", 1.0, "f16"),
    ("i32", "bool", True, "i32"),
    ("bool", "u8", 1j, "c64"),
]

_SCALAR_BY_TEXT = {"True": True, "1": 1, "1.0": 1.0, "1j": 1j}


def _torch_expected(cell: str):
    if cell == "-":
        return ERR
    return D(cell)


def _parse_grid(text: str):
    lines = text.strip().splitlines()
    columns = lines[0].split()
    grid = {}
    for line in lines[1:]:
        row, *cells = line.split()
        assert len(cells) == len(columns)
        for col, cell in zip(columns, cells, strict=True):
            grid[row, col] = cell
    return grid


def test_torch_promote_types_matches_recorded_torch_table():
    mismatches = []
    for (row, col), cell in _parse_grid(TORCH_PROMOTE_TYPES).items():
        expected = _torch_expected(cell)
        got = promote(D(row), D(col), "torch")
        if got is not expected:
            mismatches.append((row, col, cell, str(got)))
    assert mismatches == []


def test_torch_result_type_dim_with_zero_d_matches_recorded_torch():
    mismatches = []
    for (row, col), cell in _parse_grid(TORCH_DIM_WITH_ZERO_D).items():
        expected = _torch_expected(cell)
        got = result(D(row), zero_d(D(col)), policy="torch")
        got_reversed = result(zero_d(D(col)), D(row), policy="torch")
        if got is not expected or got_reversed is not expected:
            mismatches.append((row, col, cell, str(got), str(got_reversed)))
    assert mismatches == []


def test_torch_result_type_with_python_scalar_matches_recorded_torch():
    mismatches = []
    for (row, col), cell in _parse_grid(TORCH_WITH_SCALAR).items():
        expected = _torch_expected(cell)
        d, s = D(row), _SCALAR_BY_TEXT[col]
        for operands in [(d, s), (s, d), (zero_d(d), s), (s, zero_d(d))]:
            got = result(*operands, policy="torch")
            if got is not expected:
                mismatches.append((operands, cell, str(got)))
    assert mismatches == []


@pytest.mark.parametrize(("dim", "zero", "scalar", "expected"), TORCH_TRIPLES)
def test_torch_result_type_three_groups(dim, zero, scalar, expected):
    d, z = D(dim), zero_d(D(zero))
    for operands in [(d, z, scalar), (scalar, z, d), (z, d, scalar)]:
        assert runtime.result_type(*operands, policy="torch") is D(expected)


def test_torch_adr_examples():
    # ADR 0003 tables and worked examples, and PyTorch's combine_categories.
    i64, f32, f64 = runtime.int64, runtime.float32, runtime.float64
    assert runtime.result_type(i64, 2.5, policy="torch") is f32  # not f64
    assert runtime.result_type(f32, 0.5, policy="torch") is f32
    assert runtime.result_type(f64, 2.5, policy="torch") is f64
    assert runtime.result_type(f32, 2, policy="torch") is f32
    assert runtime.result_type(runtime.bool_, 2, policy="torch") is i64
    assert runtime.result_type(runtime.bool_, True, policy="torch") is runtime.bool_
    assert runtime.result_type(f32, zero_d(f64), policy="torch") is f32  # no silent upcast
    assert runtime.result_type(i64, zero_d(f32), policy="torch") is f32
    assert runtime.result_type(i64, f32, policy="torch") is f32  # int64 + float32 -> float32
    assert runtime.result_type(f64, 1j, policy="torch") is runtime.complex128
    assert runtime.result_type(f32, 1j, policy="torch") is runtime.complex64
    assert runtime.result_type(runtime.int32, 1j, policy="torch") is runtime.complex64
    # 0-d only: they fold by promote_types, like dimensioned tensors
    assert runtime.result_type(zero_d(f32), zero_d(f64), policy="torch") is f64
    assert runtime.result_type(zero_d(i64), zero_d(f32), zero_d(runtime.int8), policy="torch") is f32
    # scalars only: default dtypes
    assert runtime.result_type(2.5, policy="torch") is f32
    assert runtime.result_type(1j, policy="torch") is runtime.complex64
    assert runtime.result_type(3, policy="torch") is i64
    assert runtime.result_type(True, policy="torch") is runtime.bool_
    assert runtime.result_type(1, 2.5, policy="torch") is f32
    assert runtime.result_type(2.5, 1j, policy="torch") is runtime.complex64


def test_torch_float16_with_complex_is_complex32():
    # c10 combine_categories: a float tensor meeting a complex scalar or 0-d tensor
    # becomes toComplexType(float), and toComplexType(Half) is ComplexHalf.
    f16, c32 = runtime.float16, runtime.complex32
    assert runtime.result_type(f16, 1j, policy="torch") is c32
    assert runtime.result_type(zero_d(f16), 1j, policy="torch") is c32
    assert runtime.result_type(1j, f16, policy="torch") is c32
    for c in (runtime.complex64, runtime.complex128, c32):
        assert runtime.result_type(f16, zero_d(c), policy="torch") is c32
        assert runtime.result_type(zero_d(c), f16, policy="torch") is c32
    # promote_types is the table: float16 with complex64 is complex64
    assert runtime.promote_types(f16, runtime.complex64, policy="torch") is runtime.complex64
    assert runtime.promote_types(f16, c32, policy="torch") is c32


# The c2 (ComplexHalf) row of c10's promoteTypes, as castwise dtypes, and what
# follows from it and combine_categories for scalars and 0-d tensors.
TORCH_COMPLEX32_PAIRS = [
    ("c32", "c32", "c32"), ("c32", "bool", "c32"), ("c32", "u8", "c32"), ("c32", "i8", "c32"),
    ("c32", "i16", "c32"), ("c32", "i32", "c32"), ("c32", "i64", "c32"), ("c32", "f16", "c32"),
    ("c32", "f32", "c64"), ("c32", "f64", "c128"), ("c32", "bf16", "c64"), ("c32", "c64", "c64"),
    ("c32", "c128", "c128"),
    # barebones unsigned types promote only with floats; float8 and shell ints only with themselves
    ("c32", "u16", "-"), ("c32", "u4", "-"), ("c32", "u1", "-"), ("c32", "i4", "-"), ("c32", "i2", "-"),
    ("c32", "f8e4m3fn", "-"),
]  # fmt: skip


@pytest.mark.parametrize(("a", "b", "expected"), TORCH_COMPLEX32_PAIRS)
def test_torch_complex32_promote_types_follows_c10(a, b, expected):
    assert promote(D(a), D(b), "torch") is _torch_expected(expected)
    assert promote(D(b), D(a), "torch") is _torch_expected(expected)


def test_torch_complex32_with_scalars_and_zero_d():
    c32 = runtime.complex32
    for s in SCALARS:  # a complex tensor is the highest category: it wins
        assert runtime.result_type(c32, s, policy="torch") is c32
    for d in (runtime.float64, runtime.complex128, runtime.int64):  # 0-d of any dtype does not win
        assert runtime.result_type(c32, zero_d(d), policy="torch") is c32
    # an integer or bool tensor with a complex32 0-d tensor: the lower complex wins
    for d in (runtime.bool_, runtime.int8, runtime.int64, runtime.uint16):
        assert runtime.result_type(d, zero_d(c32), policy="torch") is c32
    assert runtime.result_type(runtime.float32, zero_d(c32), policy="torch") is runtime.complex64
    assert runtime.result_type(runtime.float64, zero_d(c32), policy="torch") is runtime.complex128


def test_torch_refuses_bcomplex32():
    # PyTorch has no complex type with bfloat16 parts
    with pytest.raises(PromotionError, match="bcomplex32 is not a dtype of this policy"):
        runtime.promote_types(runtime.bcomplex32, runtime.bcomplex32, policy="torch")
    assert result(runtime.bfloat16, 1j, policy="torch") is runtime.complex64


TORCH_FLOAT8 = tuple(
    D(n) for n in ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu")
)


def _parse_c10_table():
    lines = torch_policy.PROMOTE_TYPES_TABLE.strip().splitlines()
    order = [line.split(":")[0] for line in lines]
    table = {}
    for line in lines:
        row, cells = line.split(":")
        for col, cell in zip(order, cells.split(), strict=True):
            table[row, col] = cell
    return order, table


def test_torch_embedded_c10_table_is_square_and_symmetric():
    order, table = _parse_c10_table()
    assert len(order) == 13
    assert len(table) == 169
    asymmetric = [(a, b) for a in order for b in order if table[a, b] != table[b, a]]
    assert asymmetric == []
    for a in order:
        assert table[a, a] == a  # idempotent diagonal
        assert table["b1", a] == a  # bool is the bottom


def test_torch_policy_follows_the_embedded_table():
    order, table = _parse_c10_table()
    c10 = torch_policy._C10
    for a in order:
        for b in order:
            assert runtime.promote_types(c10[a], c10[b], policy="torch") is c10[table[a, b]]


def test_torch_float8_promotes_only_with_itself():
    pol = runtime.get_policy_object("torch")
    for f8 in TORCH_FLOAT8:
        assert runtime.promote_types(f8, f8, policy="torch") is f8
        for other in pol.dtypes:
            if other is not f8:
                assert promote(f8, other, "torch") is ERR, other
                assert promote(other, f8, "torch") is ERR, other


@pytest.mark.parametrize("i", [runtime.int1, runtime.int2, runtime.int4], ids=str)
def test_torch_shell_signed_ints_promote_only_with_themselves(i):
    # c10's Int1..Int7 are not in the promoteTypes table: promotion with any other dtype raises
    pol = runtime.get_policy_object("torch")
    assert runtime.promote_types(i, i, policy="torch") is i
    for other in pol.dtypes:
        if other is not i:
            assert promote(i, other, "torch") is ERR, other
            assert promote(other, i, "torch") is ERR, other
    # scalars of the same category stay; a complex one is the lower complex
    assert result(i, 3, policy="torch") is i
    assert result(i, True, policy="torch") is i
    assert result(i, 1.0, policy="torch") is ERR
    assert result(i, 1j, policy="torch") is runtime.complex64


def test_torch_float8_with_complex_scalar_raises_like_torch():
    for f8 in TORCH_FLOAT8:
        assert result(f8, 1j, policy="torch") is ERR
        assert result(f8, zero_d(runtime.complex64), policy="torch") is ERR
        assert result(f8, 2.5, policy="torch") is f8  # same category: the tensor wins


BAREBONES_UNSIGNED = (runtime.uint16, runtime.uint32, runtime.uint64, runtime.uint4, runtime.uint2, runtime.uint1)


@pytest.mark.parametrize("u", BAREBONES_UNSIGNED, ids=str)
def test_torch_barebones_unsigned_promote_only_with_floats(u):
    for f in (runtime.float16, runtime.bfloat16, runtime.float32, runtime.float64):
        assert runtime.promote_types(u, f, policy="torch") is f
        assert runtime.promote_types(f, u, policy="torch") is f
    for other in (
        runtime.bool_,
        runtime.int8,
        runtime.int64,
        runtime.uint8,
        runtime.complex64,
        runtime.complex128,
        runtime.complex32,
        *(x for x in BAREBONES_UNSIGNED if x is not u),
    ):
        assert promote(u, other, "torch") is ERR, other
        assert promote(other, u, "torch") is ERR, other
    assert runtime.promote_types(u, u, policy="torch") is u
    # a Python int stays in the tensor's category, so it never calls promote_types
    assert runtime.result_type(u, 7, policy="torch") is u
    assert runtime.result_type(u, 2.5, policy="torch") is runtime.float32


def test_torch_table_matches_installed_torch():
    torch = pytest.importorskip("torch")
    names = [
        "bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
        "uint4", "int4", "uint2", "int2", "uint1", "int1", "complex32",
        "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
        "float8_e8m0fnu", "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    ]  # fmt: skip

    def from_torch(fn, *args):
        try:
            out = fn(*args)
        except RuntimeError:
            return ERR
        return D(str(out).removeprefix("torch."))

    def tensor(dtype, shape):
        return torch.empty(shape, dtype=dtype)

    mismatches = []
    for a in names:
        ta = getattr(torch, a)
        for b in names:
            tb = getattr(torch, b)
            cases = [
                ("promote", from_torch(torch.promote_types, ta, tb), promote(a, b, "torch")),
                (
                    "dim,0-d",
                    from_torch(torch.result_type, tensor(ta, 3), tensor(tb, ())),
                    result(D(a), zero_d(D(b)), policy="torch"),
                ),
                (
                    "0-d,0-d",
                    from_torch(torch.result_type, tensor(ta, ()), tensor(tb, ())),
                    result(zero_d(D(a)), zero_d(D(b)), policy="torch"),
                ),
            ]
            for what, expected, got in cases:
                if expected is not got:
                    mismatches.append((what, a, b, str(expected), str(got)))
        for s in SCALARS:
            for shape in (3, ()):
                expected = from_torch(torch.result_type, tensor(ta, shape), s)
                operand = D(a) if shape == 3 else zero_d(D(a))
                got = result(operand, s, policy="torch")
                if expected is not got:
                    mismatches.append(("scalar", a, s, shape, str(expected), str(got)))
    assert mismatches == []


# =============================================================================
# neuron: the Neuron promotion lattice (docs/promotion.md, Sources)
# =============================================================================

NEURON_LADDER = (
    "float64", "float32r", "float32", "bfloat16", "float16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2",
)  # fmt: skip


def neuron(a, b):
    return promote(D(a), D(b), "neuron")


def neuron_both_orders(a, b):
    first, second = neuron(a, b), neuron(b, a)
    assert first is second, (a, b)
    return first


def test_neuron_float_side_wins_without_widening():
    assert neuron_both_orders("float16", "int64") is runtime.float16
    assert neuron_both_orders("bfloat16", "uint64") is runtime.bfloat16
    assert neuron_both_orders("float8_e5m2", "int32") is runtime.float8_e5m2
    assert neuron_both_orders("float32r", "int64") is runtime.float32r
    assert neuron_both_orders("float16", "bool") is runtime.float16
    # the sub-byte ints are not floats: the float side wins there too
    assert neuron_both_orders("float32", "int4") is runtime.float32
    # the e8m0 guard is in the float rule only; float x int returns the float side
    assert neuron_both_orders("float8_e8m0fnu", "int32") is runtime.float8_e8m0fnu


def test_neuron_bool_with_int_is_unexpected_dtype():
    for other in ("int8", "int32", "int64", "uint8", "uint64"):
        for a, b in (("bool", other), (other, "bool")):
            with pytest.raises(PromotionError) as info:
                runtime.promote_types(a, b, policy="neuron")
            assert "unexpected dtype: bool" in str(info.value)
            assert "No available implicit dtype promotion path" in str(info.value)


@pytest.mark.parametrize("small", ["int1", "uint1", "int2", "uint2", "int4", "uint4"])
def test_neuron_every_sub_byte_int_is_refused_by_the_int_rule(small):
    assert not np.issubdtype(D(small).storage, np.integer)
    for other in ("int8", "uint8", "int64", "bool", "int4" if small != "int4" else "int2"):
        for a, b in ((small, other), (other, small)):
            with pytest.raises(PromotionError, match="unexpected dtype"):
                runtime.promote_types(a, b, policy="neuron")
    assert neuron_both_orders(small, "float16") is runtime.float16  # the float side wins
    assert neuron(small, small) is D(small)


def test_neuron_sub_byte_ints_are_not_numpy_integers():
    # np.issubdtype(ml_dtypes.int4, np.integer) is False, so the int rule refuses them.
    assert not np.issubdtype(runtime.int4.storage, np.integer)
    with pytest.raises(PromotionError, match="unexpected dtype: int4"):
        runtime.promote_types("int4", "int8", policy="neuron")
    with pytest.raises(PromotionError, match="unexpected dtype: uint4"):
        runtime.promote_types("uint8", "uint4", policy="neuron")


def test_neuron_e8m0_guard():
    others = [d.name for d in ALL if d.kind == "float" and d is not runtime.float8_e8m0fnu]
    for other in others:
        assert neuron("float8_e8m0fnu", other) is ERR, other
        assert neuron(other, "float8_e8m0fnu") is ERR, other
    assert neuron("float8_e8m0fnu", "float8_e8m0fnu") is runtime.float8_e8m0fnu


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("float16", "float32", "float32"),
        ("bfloat16", "float64", "float64"),
        ("float8_e4m3fn", "bfloat16", "bfloat16"),
        ("float8_e5m2", "float16", "float16"),
        ("float32r", "float64", "float64"),
        ("float4_e2m1fn", "float16", "float16"),
        ("float6_e3m2fn", "float32r", "float32r"),
        ("float8_e3m4", "float32", "float32"),
    ],
)
def test_neuron_wider_itemsize_wins(a, b, expected):
    assert neuron_both_orders(a, b) is D(expected)


def test_neuron_full_precedence_ladder_on_equal_itemsize():
    for i, high in enumerate(NEURON_LADDER):
        for low in NEURON_LADDER[i + 1 :]:
            if D(high).itemsize == D(low).itemsize:
                assert neuron_both_orders(high, low) is D(high), (high, low)
    # the named rungs
    assert neuron_both_orders("float32r", "float32") is runtime.float32r
    assert neuron_both_orders("bfloat16", "float16") is runtime.bfloat16
    assert neuron_both_orders("float8_e4m3", "float8_e4m3fn") is runtime.float8_e4m3
    assert neuron_both_orders("float8_e4m3fn", "float8_e5m2") is runtime.float8_e4m3fn
    assert neuron_both_orders("float8_e4m3", "float8_e5m2") is runtime.float8_e4m3


def test_neuron_off_ladder_float_with_a_ladder_float_of_equal_itemsize():
    # "return the first member that equals either operand"
    assert neuron_both_orders("float8_e3m4", "float8_e5m2") is runtime.float8_e5m2
    assert neuron_both_orders("float8_e5m2fnuz", "float8_e4m3fn") is runtime.float8_e4m3fn
    assert neuron_both_orders("float4_e2m1fn", "float8_e4m3") is runtime.float8_e4m3  # itemsize 1


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("float8_e3m4", "float8_e5m2fnuz"),
        ("float8_e4m3fnuz", "float8_e4m3b11fnuz"),
        ("float4_e2m1fn", "float6_e2m3fn"),
        ("float6_e2m3fn", "float6_e3m2fn"),
    ],
)
def test_neuron_equal_itemsize_both_off_ladder_has_no_path(a, b):
    for x, y in ((a, b), (b, a)):
        with pytest.raises(PromotionError, match="No available implicit dtype promotion path"):
            runtime.promote_types(x, y, policy="neuron")


def test_neuron_same_signedness_wider_wins():
    unsigned = ["uint8", "uint16", "uint32", "uint64"]
    signed = ["int8", "int16", "int32", "int64"]
    for family in (unsigned, signed):
        for i, a in enumerate(family):
            for b in family[i:]:
                assert neuron_both_orders(a, b) is D(b)


@pytest.mark.parametrize(
    ("u", "i", "expected"),
    [
        ("uint8", "int8", "int16"),
        ("uint8", "int16", "int16"),
        ("uint8", "int32", "int32"),
        ("uint8", "int64", "int64"),
        ("uint16", "int8", "int32"),
        ("uint16", "int16", "int32"),
        ("uint16", "int32", "int32"),
        ("uint16", "int64", "int64"),
        # no int16/int32 holds both: the float32 escape (open cells: castwise's choice)
        ("uint32", "int8", "float32"),
        ("uint32", "int16", "float32"),
        ("uint32", "int32", "float32"),
        ("uint32", "int64", "int64"),
        ("uint64", "int8", "float32"),
        ("uint64", "int16", "float32"),
        ("uint64", "int32", "float32"),
        ("uint64", "int64", "float32"),
    ],
)
def test_neuron_mixed_sign_ladder(u, i, expected):
    assert neuron_both_orders(u, i) is D(expected)


def test_neuron_refuses_complex():
    for c in ("complex32", "bcomplex32", "complex64", "complex128"):
        for other in ("float32", "float64", "int32", "bool", c):
            assert neuron(c, other) is ERR
            assert neuron(other, c) is ERR
    with pytest.raises(PromotionError):
        runtime.result_type(runtime.float32, 1j, policy="neuron")


def test_neuron_python_scalars():
    # castwise's choice: a Python scalar that decides the result is int32 / float32
    assert runtime.result_type(runtime.int8, 1, policy="neuron") is runtime.int8
    assert runtime.result_type(runtime.uint8, 1, policy="neuron") is runtime.uint8
    assert runtime.result_type(runtime.float16, 1.0, policy="neuron") is runtime.float16
    assert runtime.result_type(runtime.int64, 1.0, policy="neuron") is runtime.float32
    assert runtime.result_type(1, policy="neuron") is runtime.int32
    assert runtime.result_type(2.0, policy="neuron") is runtime.float32
    assert runtime.result_type(1, 2.0, policy="neuron") is runtime.float32


# =============================================================================
# tenferro and strict
# =============================================================================

TENFERRO = ("bool", "int32", "int64", "float32", "float64", "complex64", "complex128")
# The tenferro table, written from the castwise design's rules (docs/promotion.md, Sources); rows and columns
# in TENFERRO order.
TENFERRO_TABLE = """
bool  i32  i64  f32  f64  c64  c128
i32   i32  i64  f64  f64  c128 c128
i64   i64  i64  f64  f64  c128 c128
f32   f64  f64  f32  f64  c64  c128
f64   f64  f64  f64  f64  c128 c128
c64   c128 c128 c64  c128 c64  c128
c128  c128 c128 c128 c128 c128 c128
"""


def test_tenferro_table():
    rows = [line.split() for line in TENFERRO_TABLE.strip().splitlines()]
    for a, row in zip(TENFERRO, rows, strict=True):
        for b, cell in zip(TENFERRO, row, strict=True):
            assert runtime.promote_types(a, b, policy="tenferro") is D(cell), (a, b)


def test_tenferro_named_rules():
    t = "tenferro"
    assert promote(runtime.bool_, runtime.int32, t) is runtime.int32
    assert promote(runtime.int32, runtime.int64, t) is runtime.int64
    for i in (runtime.int32, runtime.int64):
        for f in (runtime.float32, runtime.float64):
            assert promote(i, f, t) is runtime.float64
        for c in (runtime.complex64, runtime.complex128):
            assert promote(i, c, t) is runtime.complex128
    assert promote(runtime.float32, runtime.complex64, t) is runtime.complex64
    assert promote(runtime.float64, runtime.complex64, t) is runtime.complex128
    assert promote(runtime.complex64, runtime.complex128, t) is runtime.complex128
    assert promote(runtime.float32, runtime.float64, t) is runtime.float64


@pytest.mark.parametrize("d", [d for d in ALL if d.name not in TENFERRO], ids=str)
def test_tenferro_refuses_other_dtypes_even_with_themselves(d):
    assert promote(d, d, "tenferro") is ERR
    assert promote(d, runtime.float64, "tenferro") is ERR
    assert promote(runtime.int32, d, "tenferro") is ERR


def test_tenferro_python_scalars():
    t = "tenferro"
    assert runtime.result_type(runtime.int32, 2, policy=t) is runtime.int32
    assert runtime.result_type(runtime.float32, 2.0, policy=t) is runtime.float32
    assert runtime.result_type(runtime.int32, 2.0, policy=t) is runtime.float64
    assert runtime.result_type(runtime.complex64, 2.0, policy=t) is runtime.complex64


@pytest.mark.parametrize("d", ALL, ids=str)
def test_strict_same_dtype_is_itself_and_any_other_raises(d):
    assert runtime.promote_types(d, d, policy="strict") is d
    for other in ALL:
        if other is not d:
            assert promote(d, other, "strict") is ERR


def test_strict_python_scalars_only_within_the_category():
    assert runtime.result_type(runtime.float32, 2, policy="strict") is runtime.float32
    assert runtime.result_type(runtime.float32, 2.0, policy="strict") is runtime.float32
    assert runtime.result_type(runtime.int32, 2, policy="strict") is runtime.int32
    assert result(runtime.int32, 2.5, policy="strict") is ERR
    assert result(runtime.float32, runtime.float64, policy="strict") is ERR


# =============================================================================
# API: policy selection
# =============================================================================


def test_policies_are_registered():
    assert set(runtime.policies()) == set(POLICY_NAMES)
    for name in POLICY_NAMES:
        assert runtime.get_policy_object(name).name == name


def test_policy_keyword_selects_the_policy():
    i64, u64 = runtime.int64, runtime.uint64
    assert runtime.promote_types(i64, u64, policy="jax") is runtime.float64
    assert runtime.promote_types(i64, u64, policy="numpy") is runtime.float64
    assert promote(i64, u64, "torch") is ERR
    assert runtime.promote_types(i64, u64, policy="neuron") is runtime.float32
    assert runtime.result_type(runtime.int64, 2.5, policy="torch") is runtime.float32
    assert runtime.result_type(runtime.int64, 2.5, policy="numpy") is runtime.float64
    # names, short names and NumPy types are accepted
    assert runtime.promote_types("f16", np.float32, policy="jax") is runtime.float32


def test_use_policy_sets_and_restores_and_nests():
    assert runtime.get_policy() == "jax"
    with runtime.use_policy("torch") as pol:
        assert pol.name == "torch"
        assert runtime.get_policy() == "torch"
        assert runtime.result_type(runtime.int64, 2.5) is runtime.float32
        with runtime.policy("neuron"):
            assert runtime.get_policy() == "neuron"
            assert runtime.promote_types(runtime.float16, runtime.int64) is runtime.float16
            # an explicit policy= overrides the context
            assert runtime.promote_types(runtime.float16, runtime.int64, policy="jax") is runtime.float16
            assert runtime.promote_types(runtime.int64, runtime.float16, policy="numpy") is runtime.float64
        assert runtime.get_policy() == "torch"
    assert runtime.get_policy() == "jax"
    assert runtime.result_type(runtime.int64, 2.5) is runtime.float64


def test_use_policy_restores_after_an_exception():
    with pytest.raises(RuntimeError), runtime.use_policy("strict"):
        raise RuntimeError("boom")
    assert runtime.get_policy() == "jax"


def test_use_policy_is_thread_local():
    barrier = threading.Barrier(2, timeout=10)
    seen: dict[str, list[str]] = {}
    errors: list[BaseException] = []

    def worker(name: str) -> None:
        try:
            with runtime.use_policy(name):
                barrier.wait()  # both threads are inside their own context now
                seen[name] = [runtime.get_policy()]
                seen[name].append(runtime.promote_types(runtime.int64, runtime.uint64).name)
                barrier.wait()
                seen[name].append(runtime.get_policy())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in ("numpy", "neuron")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert seen["numpy"] == ["numpy", "float64", "numpy"]
    assert seen["neuron"] == ["neuron", "float32", "neuron"]
    assert runtime.get_policy() == "jax"  # the main thread never changed


def test_new_thread_starts_with_the_default_policy():
    out = []
    with runtime.use_policy("torch"):
        t = threading.Thread(target=lambda: out.append(runtime.get_policy()))
        t.start()
        t.join()
    assert out == ["jax"]


def test_unknown_policy_name_is_a_value_error_listing_known_policies():
    with pytest.raises(ValueError) as info:
        runtime.promote_types(runtime.int8, runtime.int8, policy="tensorflow")
    message = str(info.value)
    assert "tensorflow" in message
    for name in POLICY_NAMES:
        assert name in message
    with pytest.raises(ValueError), runtime.use_policy("nope"):
        pass
    with pytest.raises(ValueError):
        runtime.result_type(1.0, policy="nope")
    assert runtime.get_policy() == "jax"


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_result_type_requires_an_operand(policy):
    with pytest.raises(TypeError):
        runtime.result_type(policy=policy)


def test_result_type_accepts_dtype_like_operands():
    # types and names are dtypes (strong, not 0-d), arrays bring their dtype
    assert runtime.result_type(np.float32, np.int8, policy="jax") is runtime.float32
    assert runtime.result_type(jnp.bfloat16, "float16", policy="jax") is runtime.float32
    assert runtime.result_type(np.zeros(3, np.int16), np.uint8, policy="numpy") is runtime.int16
    assert runtime.result_type(np.int64, zero_d(runtime.float64), policy="torch") is runtime.float64
