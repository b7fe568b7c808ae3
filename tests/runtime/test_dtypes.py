"""The dtype catalog: the 35 DTypes, their attributes, and ``runtime.dtype()`` lookup.

Storage dtypes are checked against NumPy / ml_dtypes themselves, not against
the catalog's own table.
"""

from __future__ import annotations

import pickle

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import runtime
from runtime import DType

# name, short, kind, bits, the NumPy / ml_dtypes type that stores it
CATALOG = [
    ("bool", "bool", "bool", 8, np.bool_),
    ("int1", "i1", "int", 1, ml_dtypes.int1),
    ("int2", "i2", "int", 2, ml_dtypes.int2),
    ("int4", "i4", "int", 4, ml_dtypes.int4),
    ("int8", "i8", "int", 8, np.int8),
    ("int16", "i16", "int", 16, np.int16),
    ("int32", "i32", "int", 32, np.int32),
    ("int64", "i64", "int", 64, np.int64),
    ("uint1", "u1", "uint", 1, ml_dtypes.uint1),
    ("uint2", "u2", "uint", 2, ml_dtypes.uint2),
    ("uint4", "u4", "uint", 4, ml_dtypes.uint4),
    ("uint8", "u8", "uint", 8, np.uint8),
    ("uint16", "u16", "uint", 16, np.uint16),
    ("uint32", "u32", "uint", 32, np.uint32),
    ("uint64", "u64", "uint", 64, np.uint64),
    ("float4_e2m1fn", "f4e2m1fn", "float", 4, ml_dtypes.float4_e2m1fn),
    ("float6_e2m3fn", "f6e2m3fn", "float", 6, ml_dtypes.float6_e2m3fn),
    ("float6_e3m2fn", "f6e3m2fn", "float", 6, ml_dtypes.float6_e3m2fn),
    ("float8_e3m4", "f8e3m4", "float", 8, ml_dtypes.float8_e3m4),
    ("float8_e4m3", "f8e4m3", "float", 8, ml_dtypes.float8_e4m3),
    ("float8_e4m3fn", "f8e4m3fn", "float", 8, ml_dtypes.float8_e4m3fn),
    ("float8_e4m3fnuz", "f8e4m3fnuz", "float", 8, ml_dtypes.float8_e4m3fnuz),
    ("float8_e4m3b11fnuz", "f8e4m3b11fnuz", "float", 8, ml_dtypes.float8_e4m3b11fnuz),
    ("float8_e5m2", "f8e5m2", "float", 8, ml_dtypes.float8_e5m2),
    ("float8_e5m2fnuz", "f8e5m2fnuz", "float", 8, ml_dtypes.float8_e5m2fnuz),
    ("float8_e8m0fnu", "f8e8m0fnu", "float", 8, ml_dtypes.float8_e8m0fnu),
    ("bfloat16", "bf16", "float", 16, ml_dtypes.bfloat16),
    ("float16", "f16", "float", 16, np.float16),
    ("float32", "f32", "float", 32, np.float32),
    ("float32r", "f32r", "float", 32, np.float32),
    ("float64", "f64", "float", 64, np.float64),
    ("complex32", "c32", "complex", 32, ml_dtypes.complex32),
    ("bcomplex32", "bc32", "complex", 32, ml_dtypes.bcomplex32),
    ("complex64", "c64", "complex", 64, np.complex64),
    ("complex128", "c128", "complex", 128, np.complex128),
]
NAMES = [row[0] for row in CATALOG]


def test_catalog_has_exactly_35_dtypes_in_order():
    assert len(CATALOG) == 35
    assert [d.name for d in runtime.ALL_DTYPES] == NAMES
    assert all(isinstance(d, DType) for d in runtime.ALL_DTYPES)
    assert len({id(d) for d in runtime.ALL_DTYPES}) == 35


@pytest.mark.parametrize(("name", "short", "kind", "bits", "storage_type"), CATALOG, ids=NAMES)
def test_catalog_entry(name, short, kind, bits, storage_type):
    d = getattr(runtime, name)
    assert isinstance(d, DType)
    assert d.name == name
    assert d.short == short
    assert d.kind == kind
    assert d.bits == bits
    expected_storage = np.dtype(storage_type)
    assert d.storage == expected_storage
    assert isinstance(d.storage, np.dtype)
    assert d.itemsize == expected_storage.itemsize == d.storage.itemsize
    assert str(d) == name
    assert repr(d) == f"castwise.{name}"
    assert d.is_inexact == (kind in ("float", "complex"))
    assert d.is_integer == (kind in ("int", "uint"))


def test_bits_agree_with_numpy_where_numpy_knows_the_width():
    # For every byte-or-wider format the storage itemsize is exactly bits / 8;
    # ml_dtypes' own finfo/iinfo give the true bit width of the narrow ones.
    for d in runtime.ALL_DTYPES:
        if d.kind in ("int", "uint"):
            assert ml_dtypes.iinfo(d.storage).bits == d.bits
        elif d.kind == "float":
            assert ml_dtypes.finfo(d.storage).bits == d.bits
        elif d.kind == "complex":
            # two parts of the complex's float part (ml_dtypes' complex32: two float16)
            part = runtime.core.dtypes.COMPLEX_PART[d]
            assert 2 * part.bits == d.bits == d.itemsize * 8
        if d.bits >= 8:
            assert d.itemsize * 8 == d.bits


def test_float32r_is_stored_as_float32_but_is_a_distinct_dtype():
    assert runtime.float32r.storage == np.dtype(np.float32)
    assert runtime.float32r is not runtime.float32
    assert runtime.float32r != runtime.float32
    assert {runtime.float32: 1, runtime.float32r: 2}[runtime.float32r] == 2
    # A NumPy float32 always means float32, never float32r.
    assert runtime.dtype(np.float32) is runtime.float32
    assert runtime.dtype(np.dtype("float32")) is runtime.float32
    assert runtime.dtype("float32r") is runtime.float32r
    assert runtime.dtype("f32r") is runtime.float32r


def test_bool_aliases():
    assert runtime.bool is runtime.bool_
    assert runtime.dtype("bool_") is runtime.bool_


@pytest.mark.parametrize("name", NAMES)
def test_dtype_accepts_dtype_name_and_short_name(name):
    d = getattr(runtime, name)
    assert runtime.dtype(d) is d
    assert runtime.dtype(name) is d
    assert runtime.dtype(d.short) is d


@pytest.mark.parametrize(("name", "storage_type"), [(r[0], r[4]) for r in CATALOG if r[0] != "float32r"])
def test_dtype_accepts_numpy_and_ml_dtypes_types(name, storage_type):
    d = getattr(runtime, name)
    assert runtime.dtype(storage_type) is d  # scalar type / ml_dtypes type
    assert runtime.dtype(np.dtype(storage_type)) is d  # NumPy dtype instance
    assert runtime.dtype(np.zeros(2, storage_type).dtype) is d


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (jnp.float32, "float32"),
        (jnp.bfloat16, "bfloat16"),
        (jnp.int8, "int8"),
        (jnp.uint32, "uint32"),
        (jnp.complex64, "complex64"),
        (jnp.float8_e4m3fn, "float8_e4m3fn"),
        (jnp.bool_, "bool"),
        (jnp.int1, "int1"),
        (jnp.uint1, "uint1"),
        (jnp.int2, "int2"),
        (jnp.uint2, "uint2"),
        (jnp.zeros(2, jnp.int2).dtype, "int2"),
        (jnp.dtype("float16"), "float16"),
        (jnp.zeros(2, jnp.bfloat16).dtype, "bfloat16"),
    ],
)
def test_dtype_accepts_jax_dtypes(value, expected):
    assert runtime.dtype(value) is getattr(runtime, expected)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(bool, "bool"), (int, "int64"), (float, "float64"), (complex, "complex128")],
)
def test_dtype_accepts_python_types(value, expected):
    assert runtime.dtype(value) is getattr(runtime, expected)


@pytest.mark.parametrize(
    "junk",
    [None, 3, 2.5, True, "float33", "", object(), np.dtype("O"), np.dtype("U3"), np.dtype("M8[s]"), [1]],
    ids=lambda v: "object" if type(v) is object else repr(v),
)
def test_dtype_rejects_junk_with_a_message_naming_it(junk):
    with pytest.raises(runtime.OpTypeError) as info:
        runtime.dtype(junk)
    message = str(info.value)
    assert message.startswith("dtype: unexpected dtype:")
    assert repr(junk) in message


def test_dtype_error_is_not_a_promotion_error():
    with pytest.raises(TypeError) as info:
        runtime.dtype("float33")
    assert not isinstance(info.value, runtime.PromotionError)


@pytest.mark.parametrize("name", [n for n in NAMES if n != "bool"])
def test_dtypes_pickle_to_the_singleton(name):
    d = getattr(runtime, name)
    assert pickle.loads(pickle.dumps(d)) is d


def test_bool_pickles_to_the_singleton():
    assert pickle.loads(pickle.dumps(runtime.bool_)) is runtime.bool_


def test_sub_byte_ints_and_small_complex_groupings():
    # every integer narrower than a byte, per ml_dtypes' own iinfo
    narrow = [d for d in runtime.ALL_DTYPES if d.is_integer and ml_dtypes.iinfo(d.storage).bits < 8]
    assert tuple(narrow) == runtime.core.dtypes.SUB_BYTE_INTS
    assert {d.name for d in narrow} == {"int1", "uint1", "int2", "uint2", "int4", "uint4"}
    assert (runtime.complex32, runtime.bcomplex32) == runtime.core.dtypes.SMALL_COMPLEX


@pytest.mark.parametrize(("complex_type", "part"), [
    (ml_dtypes.complex32, np.float16),
    (ml_dtypes.bcomplex32, ml_dtypes.bfloat16),
    (np.complex64, np.float32),
    (np.complex128, np.float64),
])  # fmt: skip
def test_complex_part_is_the_storage_of_each_component(complex_type, part):
    d = runtime.dtype(complex_type)
    assert runtime.core.dtypes.COMPLEX_PART[d] is runtime.dtype(part)
    # a value whose parts are exact in the part type survives the round trip through them
    z = np.array([1.5 - 2.25j], dtype=np.complex128).astype(complex_type)
    parts = np.array([1.5, -2.25], dtype=part)
    assert np.asarray(z.astype(np.complex128)).view(np.float64).tolist() == parts.astype(np.float64).tolist()
