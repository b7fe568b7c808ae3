"""The eager Tensor: construction, operators, promotion, in-place rules, errors, memory."""

from __future__ import annotations

import itertools
import operator
import tracemalloc

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import runtime as rt
from runtime.core import lax as F
from runtime.core import ops
from runtime.core.executor import apply
from runtime.core.inplace import InPlaceError
from runtime.core.shapes import ArityError, OpTypeError, ShapeError
from runtime.core.tensor import Tensor

jax.config.update("jax_enable_x64", True)

DTYPES = [rt.bool_, rt.int8, rt.int32, rt.int64, rt.uint8, rt.uint32, rt.bfloat16, rt.float16, rt.float32,
          rt.float64, rt.complex64, rt.complex128]  # fmt: skip


def sample(dtype: rt.DType, shape: tuple[int, ...] = (5,), seed: int = 0, positive: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype.kind == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in ("int", "uint"):
        return rng.integers(1, 7, shape).astype(dtype.storage)
    data = rng.uniform(0.5, 3.0, shape) if positive else rng.uniform(-3, 3, shape)
    if dtype.kind == "complex":
        data = data + 1j * rng.uniform(-2, 2, shape)
    return data.astype(dtype.storage)


# -- construction and properties ---------------------------------------------------------


def test_asarray_infers_dtypes_from_the_policy() -> None:
    assert rt.asarray([1.0, 2.0]).dtype is rt.float64
    assert rt.asarray([1, 2]).dtype is rt.int64
    assert rt.asarray([True]).dtype is rt.bool_
    assert rt.asarray([1, 2.5j]).dtype is rt.complex128
    with rt.use_policy("torch"):
        assert rt.asarray([1.0, 2.0]).dtype is rt.float32
        assert rt.asarray(1j).dtype is rt.complex64
    assert rt.asarray(np.zeros(3, np.float16)).dtype is rt.float16
    assert rt.asarray([1, 2], dtype="bf16").dtype is rt.bfloat16
    assert rt.asarray(np.zeros(2, np.float32), dtype=rt.float32r).dtype is rt.float32r


def test_asarray_shares_numpy_storage_without_copy() -> None:
    a = np.arange(4.0)
    t = rt.asarray(a)
    assert t._array is a  # the storage is the array itself
    assert np.shares_memory(t.numpy(), a) and np.shares_memory(np.asarray(t), a)  # zero-copy, read-only views


def test_tensor_properties_and_methods_match_numpy() -> None:
    a = sample(rt.float64, (2, 3))
    t = rt.asarray(a)
    assert (t.shape, t.ndim, t.size) == ((2, 3), 2, 6)
    np.testing.assert_array_equal(t.T.numpy(), a.T)
    np.testing.assert_array_equal(t.reshape(3, 2).numpy(), a.reshape(3, 2))
    np.testing.assert_array_equal(t.reshape((6,)).numpy(), a.reshape(6))
    np.testing.assert_allclose(t.sum().numpy(), a.sum())
    np.testing.assert_allclose(t.sum(axis=1).numpy(), a.sum(axis=1))
    np.testing.assert_array_equal(t.max(axis=0).numpy(), a.max(axis=0))
    np.testing.assert_array_equal(t.min().numpy(), a.min())
    np.testing.assert_allclose(t.mean(axis=(0, 1)).numpy(), a.mean())
    assert t.astype("f32").dtype is rt.float32
    np.testing.assert_array_equal(t.astype("f32").numpy(), a.astype(np.float32))
    assert "dtype=float64" in repr(t) and "Tensor(" in repr(t)


def test_mean_of_integers_uses_the_policy_float() -> None:
    t = rt.asarray(np.array([1, 2, 4], np.int32))
    assert t.mean().dtype is rt.dtype(jnp.mean(jnp.asarray(t.numpy())).dtype)  # float32 under jax
    assert rt.asarray(np.array([1, 2], np.int64)).mean().dtype is rt.float64
    with rt.use_policy("numpy"):
        assert t.mean().dtype is rt.float64
    with rt.use_policy("torch"):
        assert t.mean().dtype is rt.float32
    np.testing.assert_allclose(t.mean().numpy(), 7 / 3)


INDEXES = [
    (1,), (-1,), (slice(None),), (slice(1, 3),), (slice(None, None, -1),), (slice(3, 0, -2),),
    (Ellipsis, 1), (None, slice(1, None)), (1, slice(None, None, 2)), (slice(2, 2),), (slice(-1, None, -3), -2),
    (Ellipsis,), (None, Ellipsis, None),
]  # fmt: skip


@pytest.mark.parametrize("index", INDEXES, ids=repr)
def test_basic_indexing_matches_numpy(index: tuple[object, ...]) -> None:
    a = np.arange(20.0).reshape(4, 5)
    np.testing.assert_array_equal(rt.asarray(a)[index].numpy(), a[index])


@given(st.data())
@settings(max_examples=60, deadline=None)
def test_basic_indexing_property(data: st.DataObject) -> None:
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    items = []
    for n in shape:
        if data.draw(st.booleans()):
            items.append(data.draw(st.integers(-n, n - 1)))
        else:
            start = data.draw(st.none() | st.integers(-n - 1, n + 1))
            stop = data.draw(st.none() | st.integers(-n - 1, n + 1))
            step = data.draw(st.none() | st.sampled_from([-3, -2, -1, 1, 2, 3]))
            items.append(slice(start, stop, step))
    index = tuple(items)
    np.testing.assert_array_equal(rt.asarray(a)[index].numpy(), a[index])


def test_advanced_indexing_reads_as_numpy_and_refuses_float_indices() -> None:
    # (integer-array and mask reads are tested in depth in test_tensor_api.py)
    np.testing.assert_array_equal(rt.asarray(np.arange(3.0))[[0, 2]].numpy(), [0.0, 2.0])
    with pytest.raises(IndexError, match="integers or bool"):
        rt.asarray(np.arange(3.0))[np.array([0.5])]
    with pytest.raises(IndexError, match="out of bounds"):
        rt.asarray(np.arange(3.0))[3]


# -- operators against jax.numpy ---------------------------------------------------------

BINARY_OPERATORS = [
    ("+", operator.add, jnp.add), ("-", operator.sub, jnp.subtract), ("*", operator.mul, jnp.multiply),
    ("/", operator.truediv, jnp.true_divide), ("//", operator.floordiv, jnp.floor_divide),
    ("%", operator.mod, jnp.remainder), ("**", operator.pow, jnp.power),
    ("==", operator.eq, jnp.equal), ("!=", operator.ne, jnp.not_equal), ("<", operator.lt, jnp.less),
    ("<=", operator.le, jnp.less_equal), (">", operator.gt, jnp.greater), (">=", operator.ge, jnp.greater_equal),
    ("&", operator.and_, jnp.bitwise_and), ("|", operator.or_, jnp.bitwise_or), ("^", operator.xor, jnp.bitwise_xor),
]  # fmt: skip


def _tolerance(dtype: rt.DType) -> float:
    return {"bfloat16": 2e-2, "float16": 2e-3, "float32": 2e-5, "complex64": 2e-5}.get(dtype.name, 1e-12)


def _jax_result(fn, a, b):  # type: ignore[no-untyped-def]
    try:
        return np.asarray(fn(jnp.asarray(a), jnp.asarray(b)))
    except (TypeError, ValueError, NotImplementedError):
        return None


ARITHMETIC = {"+", "-", "*", "/", "//", "%", "**"}
ORDERING = {"<", "<=", ">", ">="}
LOGICAL = {"&", "|", "^"}
NUMERIC = [rt.int32, rt.uint8, rt.int64, rt.float32, rt.float64, rt.complex128]


def _pairs(symbol: str) -> list[tuple[rt.DType, rt.DType]]:
    if symbol in LOGICAL:
        kinds = [rt.bool_, rt.int32, rt.uint8, rt.int64]
    elif symbol in ORDERING:
        kinds = [rt.bool_, rt.int32, rt.uint8, rt.float32, rt.float64]
    elif symbol in ARITHMETIC:
        kinds = NUMERIC
    else:
        kinds = [rt.bool_, *NUMERIC]
    return list(itertools.product(kinds, repeat=2))


@pytest.mark.parametrize("symbol,py_op,jax_op", BINARY_OPERATORS, ids=[o[0] for o in BINARY_OPERATORS])
def test_binary_operators_match_jax_numpy_in_dtype_and_value(symbol: str, py_op, jax_op) -> None:  # type: ignore[no-untyped-def]
    checked = 0
    for da, db in _pairs(symbol):
        a = sample(da, seed=1, positive=symbol in ("**", "/", "//", "%"))
        b = sample(db, seed=2, positive=symbol in ("**", "/", "//", "%"))
        expected = _jax_result(jax_op, a, b)
        try:
            got = py_op(rt.asarray(a), rt.asarray(b))
        except (TypeError, ValueError):
            got = None
        if expected is None:
            assert got is None, f"{da.name} {symbol} {db.name}: JAX refuses, castwise gives {got.dtype.name}"
            continue
        assert got is not None, f"{da.name} {symbol} {db.name}: JAX gives {expected.dtype}, castwise raised"
        assert got.dtype is rt.dtype(expected.dtype), f"{da.name} {symbol} {db.name}"
        tol = _tolerance(got.dtype)
        np.testing.assert_allclose(got.numpy(), expected, rtol=tol, atol=tol, err_msg=f"{da.name} {symbol} {db.name}")
        checked += 1
    assert checked == len(_pairs(symbol)) or symbol in ("//", "%")


@pytest.mark.parametrize("symbol", ["-"])
def test_bool_arithmetic_follows_lax_and_is_refused(symbol: str) -> None:
    # bool + bool and bool * bool are logical or / and, //, % and ** go to int32, as in
    # jax.numpy (the plan's per-op rules, tests/runtime/test_opfamilies.py); bool - bool
    # is refused, as jax.numpy, NumPy and PyTorch refuse it.
    py_op = next(o[1] for o in BINARY_OPERATORS if o[0] == symbol)
    with pytest.raises(OpTypeError, match="bool"):
        py_op(rt.asarray(np.array([True, False])), rt.asarray(np.array([True, True])))


@pytest.mark.parametrize("symbol", sorted(ORDERING))
def test_complex_ordering_follows_lax_and_is_refused(symbol: str) -> None:
    py_op = next(o[1] for o in BINARY_OPERATORS if o[0] == symbol)
    with pytest.raises(OpTypeError, match="c128"):
        py_op(rt.asarray(np.array([1j])), rt.asarray(np.array([2j])))


@pytest.mark.parametrize("scalar", [True, 2, 2.5, 1.5j])
@pytest.mark.parametrize("dtype", [rt.bool_, rt.int8, rt.uint8, rt.int32, rt.float16, rt.bfloat16, rt.float32,
                                   rt.complex64])  # fmt: skip
def test_python_scalars_are_weak_like_jax(dtype: rt.DType, scalar: object) -> None:
    if dtype is rt.bool_ and scalar is True:
        return  # bool arithmetic is refused (lax semantics), see test_bool_arithmetic_follows_lax
    a = sample(dtype, seed=3)
    for left in (True, False):
        try:
            expected = jnp.add(scalar, jnp.asarray(a)) if left else jnp.add(jnp.asarray(a), scalar)
        except TypeError:
            continue
        got = (scalar + rt.asarray(a)) if left else (rt.asarray(a) + scalar)
        assert got.dtype is rt.dtype(expected.dtype), (dtype, scalar)
        tol = _tolerance(got.dtype)
        np.testing.assert_allclose(got.numpy(), np.asarray(expected), rtol=tol, atol=tol)


def test_numpy_arrays_on_the_left_defer_to_tensor() -> None:
    out = np.ones(3, np.float32) + rt.asarray(np.ones(3, np.float64))
    assert isinstance(out, Tensor) and out.dtype is rt.float64


def test_zero_dim_tensors_follow_the_policy() -> None:
    x = rt.asarray(np.ones(4, np.float32))
    s = rt.asarray(np.array(2.0))  # float64 0-d
    assert (x * s).dtype is rt.float64  # jax: 0-d arrays are strong
    with rt.use_policy("torch"):
        out = x * s
        assert out.dtype is rt.float32  # torch: same category, the dimensioned tensor wins
        np.testing.assert_array_equal(out.numpy(), np.full(4, 2.0, np.float32))
        i = rt.asarray(np.ones(4, np.int64))
        assert (i * s).dtype is rt.float64  # higher category: the 0-d tensor's dtype


def test_unary_operators_and_matmul() -> None:
    a = sample(rt.float64, (3, 4))
    b = sample(rt.float64, (4, 2), seed=5)
    t = rt.asarray(a)
    np.testing.assert_array_equal((-t).numpy(), -a)
    np.testing.assert_array_equal(abs(t).numpy(), np.abs(a))
    np.testing.assert_allclose((t @ rt.asarray(b)).numpy(), a @ b, rtol=1e-12)
    np.testing.assert_allclose((t @ b[:, 0]).numpy(), a @ b[:, 0], rtol=1e-12)
    batched = sample(rt.float32, (2, 3, 4))
    other = sample(rt.float64, (2, 4, 5), seed=9)
    got = rt.asarray(batched) @ rt.asarray(other)
    assert got.dtype is rt.float64
    np.testing.assert_allclose(got.numpy(), np.matmul(batched.astype(np.float64), other), rtol=1e-12)


def test_every_op_has_a_function() -> None:
    aliases = {"and": "logical_and", "or": "logical_or", "xor": "logical_xor", "not": "logical_not"}
    for name in ops.OPS:
        if ops.OPS[name].family == ops.CALL:
            continue  # user calls are made by autodiff.custom_jvp / custom_vjp (tests/autodiff/test_custom_rules.py)
        fn = getattr(F, aliases.get(name, name), None)
        assert callable(fn), f"runtime.core.lax has no function for op {name}"
        assert fn.__doc__, f"runtime.core.lax.{fn.__name__} lacks a docstring"


def test_functions_accept_tensors_arrays_and_scalars() -> None:
    a = np.array([1.0, 2.0, 3.0])
    assert F.add(a, 1).dtype is rt.float64
    np.testing.assert_array_equal(F.add(a, rt.asarray(a)).numpy(), 2 * a)
    pred = np.array([True, False, True])
    np.testing.assert_array_equal(F.select(pred, a, 0.0).numpy(), np.where(pred, a, 0.0))
    out = F.dynamic_update_slice(np.zeros(5, np.float32), np.ones(2, np.float64), [1])
    assert out.dtype is rt.float64
    np.testing.assert_array_equal(out.numpy(), [0, 1, 1, 0, 0])
    np.testing.assert_array_equal(F.clamp(0.0, a, 2.0).numpy(), np.clip(a, 0, 2))
    cat = F.concatenate([np.ones(2, np.float32), np.zeros(1, np.complex64)], 0)
    assert cat.dtype is rt.complex64


def test_stack_lowers_to_reshape_and_concatenate() -> None:
    a, b = np.arange(3.0), np.arange(3.0, 6.0).astype(np.float32)
    for axis in (0, 1, -1):
        got = F.stack([a, b], axis)
        np.testing.assert_array_equal(got.numpy(), np.stack([a, b.astype(np.float64)], axis))


# -- mixed-dtype memory ----------------------------------------------------------------------


@pytest.mark.parametrize("call", ["operator", "function"])
@pytest.mark.parametrize("nth", [1, 2], ids=["first call", "cached call"])
def test_mixed_add_casts_inside_the_loop_without_copying_the_input(call: str, nth: int) -> None:
    n = 1_000_000
    x = rt.asarray(np.ones(n, np.float32))
    y = rt.asarray(np.ones(n, np.float64))
    add = (lambda a, b: a + b) if call == "operator" else F.add
    for _ in range(nth - 1):
        add(x, y)  # a later call takes the signature caches
    tracemalloc.start()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    out = add(x, y)
    peak = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    output_bytes = n * 8
    assert out.dtype is rt.float64
    # one output's worth, plus NumPy's small cast buffers; a converted copy of x would add 0.5x
    assert peak < 1.25 * output_bytes, f"peak {peak} bytes for a {output_bytes}-byte output"


def test_in_loop_cast_equals_convert_then_add_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    for a_dtype, b_dtype in [(np.float32, np.float64), (np.int64, np.float32), (np.float64, np.complex128),
                             (np.int8, np.uint8), (np.int32, np.float64)]:  # fmt: skip
        a = (rng.standard_normal(64) * 100).astype(a_dtype)
        b = (rng.standard_normal(64) * 100).astype(b_dtype)
        for fn in (F.add, F.sub, F.mul):
            fused = fn(a, b)
            target = fused.dtype
            explicit = fn(F.convert(a, target), F.convert(b, target))
            assert fused.numpy().tobytes() == explicit.numpy().tobytes()


# -- in place --------------------------------------------------------------------------------


def test_inplace_writes_into_the_same_storage_and_keeps_the_dtype() -> None:
    storage = np.ones(3, np.float32)
    x = rt.asarray(storage)
    x += rt.asarray(np.full(3, 0.5, np.float64))
    assert x.dtype is rt.float32 and x._array is storage
    np.testing.assert_array_equal(storage, [1.5, 1.5, 1.5])
    x.mul_(2)
    np.testing.assert_array_equal(storage, [3.0, 3.0, 3.0])
    i = rt.asarray(np.ones(2, np.int64))
    i.add_(1)
    np.testing.assert_array_equal(i.numpy(), [2, 2])


@pytest.mark.parametrize(
    "dtype,method,other",
    [
        (rt.int64, "add_", 0.5),
        (rt.int64, "div_", 2),
        (rt.float32, "add_", 1j),
        (rt.int32, "mul_", np.ones(2)),
        (rt.float64, "sub_", np.ones(2, np.complex64)),
    ],
)
def test_inplace_refuses_a_higher_category_and_leaves_the_tensor_untouched(dtype, method, other) -> None:  # type: ignore[no-untyped-def]
    x = rt.asarray(np.array([3, 5]), dtype=dtype)
    before = x.numpy().copy()
    pattern = f"{method} result of dtype .* cannot be stored in a tensor of dtype {dtype.name}"
    with pytest.raises(TypeError, match=pattern):
        getattr(x, method)(other)
    np.testing.assert_array_equal(x.numpy(), before)


def test_inplace_allows_same_category_narrowing() -> None:
    x = rt.asarray(np.array([1.0, 2.0], np.float32))
    x.add_(np.array([0.1, 0.2]))  # f64 result rounds into f32
    np.testing.assert_array_equal(x.numpy(), (np.array([1.0, 2.0]) + np.array([0.1, 0.2])).astype(np.float32))


def test_inplace_on_tracked_tensors_is_refused() -> None:
    x = rt.asarray(np.ones(3), requires_grad=True)
    with pytest.raises(InPlaceError, match="requires grad"):
        x += 1
    np.testing.assert_array_equal(x.numpy(), np.ones(3))


# -- errors ------------------------------------------------------------------------------------


def test_no_promotion_path_names_op_dtypes_shapes_and_policy() -> None:
    a = rt.asarray(np.zeros(3, np.float32)).astype(rt.float8_e4m3fn)
    with pytest.raises(rt.PromotionError) as info:
        a + rt.asarray(np.zeros(3, np.float32))
    text = str(info.value)
    for needle in ("add", "float8_e4m3fn", "float32", "f8e4m3fn[3]", "f32[3]", "'jax'"):
        assert needle in text, (needle, text)


def test_shape_mismatch_names_op_dtypes_shapes_and_policy() -> None:
    with pytest.raises(ShapeError) as info:
        F.add(np.zeros(3), np.zeros(4, np.float32))
    text = str(info.value)
    for needle in ("add", "f64[3]", "f32[4]", "'jax'"):
        assert needle in text, (needle, text)


def test_wrong_arity_is_refused() -> None:
    with pytest.raises(ArityError, match="add"):
        apply(ops.add, (np.zeros(2),), {})


def test_non_bool_predicate_is_refused() -> None:
    with pytest.raises(OpTypeError) as info:
        F.select(np.ones(2, np.int32), np.zeros(2), np.ones(2))
    assert "select" in str(info.value) and "i32[2]" in str(info.value) and "policy" in str(info.value)


def test_non_integer_indices_are_refused() -> None:
    with pytest.raises(OpTypeError, match="dynamic_slice"):
        F.dynamic_slice(np.zeros(4), [np.array(1.0)], [2])


def test_out_of_range_axes_are_refused() -> None:
    with pytest.raises(ShapeError, match="reduce_sum"):
        F.reduce_sum(np.zeros((2, 2)), (2,))
    with pytest.raises(ShapeError):
        rt.asarray(np.zeros((2, 2))).sum(axis=3)


def test_unknown_dtype_is_refused() -> None:
    with pytest.raises(TypeError, match="unexpected dtype"):
        rt.asarray([1.0], dtype="float33")


def test_python_scalar_that_does_not_fit_is_refused_clearly() -> None:
    with pytest.raises(rt.PromotionError, match="300"):
        rt.asarray(np.ones(2, np.uint8)) + 300


def test_inplace_into_a_read_only_tensor_is_refused_clearly() -> None:
    from runtime.core.inplace import InPlaceError, ReadOnlyTensorError

    base = np.arange(3.0)
    base.flags.writeable = False
    t = rt.Tensor(base, rt.float64)
    with pytest.raises(ReadOnlyTensorError, match=r"add_: float64\[3\] is read-only"):
        t += 1.0
    assert issubclass(ReadOnlyTensorError, ValueError) and issubclass(ReadOnlyTensorError, InPlaceError)
    np.testing.assert_array_equal(t.numpy(), [0.0, 1.0, 2.0])
    own = t.copy()
    own += 1.0
    np.testing.assert_array_equal(own.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(t.numpy(), [0.0, 1.0, 2.0])
    assert own.node is None and own.dtype is rt.float64


# -- the signature cache of apply ------------------------------------------------------------


def test_a_cached_signature_still_checks_each_call_like_the_first() -> None:
    from runtime import KernelDTypeError
    from runtime.core.promotion import PromotionError

    x = rt.asarray(np.ones(3, np.int8))
    for _ in range(3):  # the first call validates the signature, later ones take the cache
        np.testing.assert_array_equal(F.add(x, 1).numpy(), [2, 2, 2])
        with pytest.raises(PromotionError, match=r"1000 does not fit the planned dtype int8"):
            F.add(x, 1000)  # same signature (int8[3], Python int): the value is still checked
    np.testing.assert_array_equal((x + x).numpy() - (x * x).numpy(), [1, 1, 1])  # cache int8[3] op int8[3]
    mislabelled = Tensor(np.ones(3, np.int16), rt.int8)  # storage that is not int8's
    for call in (lambda: F.add(mislabelled, 1), lambda: mislabelled + x, lambda: x * mislabelled):
        for _ in range(2):  # whichever path the signature takes, the storage is checked
            with pytest.raises(KernelDTypeError, match="int16 data"):
                call()


def test_registering_a_policy_again_drops_the_plans_cached_under_its_name() -> None:
    from runtime.core.promotion import LatticePolicy, get_policy_object, register_policy, use_policy

    a, b = rt.asarray(np.ones(2, np.float32)), rt.asarray(np.ones(2, np.float64))
    original = get_policy_object("strict")

    def policy_giving(target: rt.DType) -> LatticePolicy:
        class Fixed(LatticePolicy):
            name = "strict"

            def _promote(self, x: rt.DType, y: rt.DType) -> rt.DType | None:
                return target

        return Fixed()

    try:
        register_policy(policy_giving(rt.float64))
        with use_policy("strict"):
            for _ in range(2):  # cached in both the operator and the function paths
                assert F.add(a, b).dtype is rt.float64 and (a + b).dtype is rt.float64
        register_policy(policy_giving(rt.float32))
        with use_policy("strict"):
            assert F.add(a, b).dtype is rt.float32, "a plan cached under the old policy was served"
            assert (a + b).dtype is rt.float32
    finally:
        register_policy(original)
    with use_policy("strict"), pytest.raises(rt.PromotionError):
        F.add(a, b)


# -- x % y as each library computes it, zero divisors included ------------------------------------

_MOD_DTYPES = ["int8", "int32", "int64", "uint8", "uint32", "float32", "float64"]


def _mod_operands(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Every sign pairing, exact multiples and zero divisors (unsigned: no negatives)."""
    x = [7, -7, 7, -7, 6, -6, 5, 0, -5]
    y = [3, 3, -3, -3, 3, -3, 0, 0, 0]
    if name.startswith("uint"):
        x, y = [abs(v) for v in x], [abs(v) for v in y]
    return np.array(x, name), np.array(y, name)


@pytest.mark.parametrize("name", _MOD_DTYPES)
@pytest.mark.parametrize("policy", ["jax", "numpy", "torch"])
def test_python_mod_follows_the_library_with_zero_divisors(policy: str, name: str) -> None:
    """``x % y`` takes the divisor's sign; an integer ``x % 0`` is 0 as in jax.numpy and NumPy
    (XLA's rem alone gives x); a float one is NaN. PyTorch raises ZeroDivisionError for an
    integer ``x % 0``, which castwise cannot do without reading the data: it gives 0 there too."""
    x, y = _mod_operands(name)
    with rt.use_policy(policy):
        got = rt.asarray(x) % rt.asarray(y)
    if policy == "jax":
        with jax.enable_x64(True):
            want = np.asarray(jnp.asarray(x) % jnp.asarray(y))
    elif policy == "numpy":
        with np.errstate(divide="ignore", invalid="ignore"):
            want = x % y
    else:
        torch = pytest.importorskip("torch")
        nonzero = y != 0
        want = x % np.where(nonzero, y, 1).astype(name)  # NumPy's floor mod where torch has one
        tx, ty = torch.from_numpy(x[nonzero]), torch.from_numpy(y[nonzero])
        if name != "uint32":  # (PyTorch has no uint32 remainder kernel: NumPy alone is the oracle)
            np.testing.assert_array_equal((tx % ty).numpy(), want[nonzero])
        want = np.where(nonzero, want, np.nan if name.startswith("float") else 0).astype(name)
    assert got.dtype.name == np.dtype(name).name
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("name", _MOD_DTYPES)
@pytest.mark.parametrize("policy", ["jax", "numpy"])
def test_python_mod_by_a_python_scalar_promotes_as_the_library(policy: str, name: str) -> None:
    """A Python divisor stays a Python scalar (``int8 % 2`` is int8, not int64), zero included."""
    x = _mod_operands(name)[0]
    for y in (2, 0, 2.5):
        with rt.use_policy(policy):
            got = rt.asarray(x) % y
        if policy == "jax":
            with jax.enable_x64(True):
                want = np.asarray(jnp.asarray(x) % y)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                want = x % y
        assert got.dtype.name == want.dtype.name, (y, got.dtype, want.dtype)
        np.testing.assert_array_equal(got.numpy(), want)
