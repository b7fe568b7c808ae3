"""rt.array_api, castwise's array API namespace (standard 2024.12): the hooks that find it, the
data type functions for every castwise dtype, asarray/astype copy semantics, the one device, the
inspection object, and the functions the namespace composes, against NumPy and jax.numpy (which
implement the same standard), with gradients against ``jax.grad`` and batches against ``jax.vmap``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import autodiff
import runtime as rt

jax.config.update("jax_enable_x64", True)

xp: Any = rt.array_api
NAN, INF = math.nan, math.inf


def f64(values: Any) -> Any:
    return rt.asarray(np.asarray(values, np.float64))


# -- finding the namespace --------------------------------------------------------------------------


def test_tensors_name_the_namespace_and_its_version() -> None:
    x = rt.asarray([1.0, 2.0])
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2023.12") is xp
    assert xp.__array_api_version__ == "2024.12"
    with pytest.raises(xp.ArrayAPIVersionError, match=r"^__array_namespace__: api_version '2030.12'"):
        x.__array_namespace__(api_version="2030.12")


def test_array_api_compat_recognises_castwise_tensors() -> None:
    compat = pytest.importorskip("array_api_compat")
    x = rt.asarray([1.0, 2.0])
    assert compat.is_array_api_obj(x)
    assert compat.array_namespace(x) is xp
    assert compat.array_namespace(x, rt.asarray([1])) is xp
    assert compat.device(x) is rt.cpu


# -- data types ---------------------------------------------------------------------------------------

FLOATS = [d for d in rt.ALL_DTYPES if d.kind == "float"]
COMPLEX = [d for d in rt.ALL_DTYPES if d.kind == "complex"]
INTEGERS = [d for d in rt.ALL_DTYPES if d.kind in ("int", "uint")]


@pytest.mark.parametrize("d", FLOATS + COMPLEX, ids=str)
def test_finfo_of_every_float_matches_jax_numpy(d: rt.DType) -> None:
    part = {rt.complex32: rt.float16, rt.bcomplex32: rt.bfloat16}.get(d, d)
    if d in (rt.complex64, rt.complex128):
        part = rt.float32 if d is rt.complex64 else rt.float64
    want = jnp.finfo(part.storage) if part is not rt.float32r else jnp.finfo(np.float32)
    got = xp.finfo(d)
    assert got.dtype is part
    assert (got.bits, got.eps, got.max, got.min) == (int(want.bits), float(want.eps), float(want.max), float(want.min))
    assert got.smallest_normal == float(want.smallest_normal)
    assert all(type(v) is float for v in (got.eps, got.max, got.min, got.smallest_normal))
    assert xp.finfo(xp.zeros((2,), dtype=d)) == got  # an array's dtype


@pytest.mark.parametrize("d", INTEGERS, ids=str)
def test_iinfo_of_every_integer_matches_its_range(d: rt.DType) -> None:
    if d.bits == 1:  # no library has int1/uint1's iinfo: their two values, by the format
        want = (-1, 0) if d.kind == "int" else (0, 1)
    else:
        info = ml_dtypes.iinfo(d.storage) if d.bits < 8 else np.iinfo(d.storage)
        want = (int(info.min), int(info.max))
    got = xp.iinfo(d)
    assert (got.min, got.max, got.bits, got.dtype) == (*want, d.bits, d)
    with pytest.raises(rt.OpTypeError, match=r"^iinfo: float32 is not an integer dtype"):
        xp.iinfo(rt.float32)
    with pytest.raises(rt.OpTypeError, match=r"^finfo: int8 is not a floating-point"):
        xp.finfo(rt.int8)


def test_isdtype_matches_numpy_for_the_standard_kinds() -> None:
    kinds = ["bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating", "numeric"]
    for name in ["bool", "int8", "int64", "uint16", "float32", "float64", "complex64", "complex128"]:
        for kind in kinds:
            assert xp.isdtype(rt.dtype(name), kind) == np.isdtype(np.dtype(name), kind), (name, kind)
    assert xp.isdtype(rt.bfloat16, "real floating") and xp.isdtype(rt.int4, ("bool", "signed integer"))
    assert xp.isdtype(rt.float32, rt.float32) and not xp.isdtype(rt.float32, rt.float64)
    with pytest.raises(rt.OpTypeError, match=r"^isdtype: kind 'floats'"):
        xp.isdtype(rt.float32, "floats")


@pytest.mark.parametrize("policy", ["jax", "numpy"])
def test_can_cast_and_result_type_follow_the_policy(policy: str) -> None:
    with rt.use_policy(policy):
        for a, b in [("int8", "int16"), ("uint8", "int16"), ("float32", "float64"), ("int16", "float32"),
                     ("float64", "complex128"), ("int32", "int8"), ("float64", "float32")]:  # fmt: skip
            want = np.can_cast(np.dtype(a), np.dtype(b)) if policy == "numpy" else jnp.can_cast(a, b)
            assert xp.can_cast(rt.dtype(a), rt.dtype(b)) == bool(want), (a, b)
            assert xp.result_type(rt.dtype(a), rt.dtype(b)) == np.result_type(a, b), (a, b)


# -- copies and the device ------------------------------------------------------------------------------


def test_asarray_copy_semantics_follow_the_standard() -> None:
    a = np.arange(4.0)
    shared = xp.asarray(a)
    assert np.shares_memory(shared.numpy(), a)
    assert not np.shares_memory(xp.asarray(a, copy=True).numpy(), a)
    assert np.shares_memory(xp.asarray(a, copy=False).numpy(), a)
    t = rt.asarray([1.0, 2.0])
    assert xp.asarray(t) is t and xp.asarray(t, copy=False) is t
    fresh = xp.asarray(t, copy=True)
    assert fresh is not t and not np.shares_memory(fresh.numpy(), t.numpy())
    with pytest.raises(xp.CopyError, match=r"^asarray: copy=False, but converting to float32 copies"):
        xp.asarray(t, dtype=rt.float32, copy=False)
    with pytest.raises(xp.CopyError, match=r"^asarray: copy=False, but a list"):
        xp.asarray([1, 2], copy=False)
    assert isinstance(xp.CopyError("x"), ValueError) and issubclass(xp.CopyError, rt.CastwiseError)


def test_astype_copies_unless_told_not_to() -> None:
    t = rt.asarray([1.5, -2.5])
    assert xp.astype(t, rt.float64, copy=False) is t
    c = xp.astype(t, rt.float64)
    assert c is not t and not np.shares_memory(c.numpy(), t.numpy())
    np.testing.assert_array_equal(xp.astype(t, rt.int32).numpy(), np.array([1.5, -2.5]).astype(np.int32))
    tracked = rt.asarray([1.0, 2.0], requires_grad=True)
    (g,) = (autodiff.grad(lambda v: xp.sum(xp.astype(v, rt.float64) * 3.0))(tracked),)
    np.testing.assert_array_equal(np.asarray(g[0] if isinstance(g, tuple) else g), [3.0, 3.0])


def test_one_cpu_device() -> None:
    t = rt.asarray([1.0])
    assert t.device is rt.cpu and t.to_device(rt.cpu) is t
    assert xp.zeros((2,), device=rt.cpu).device is rt.cpu
    a = np.arange(3.0)
    assert a.to_device("cpu") is a and rt.asarray(a).to_device("cpu").shape == (3,)  # NumPy's spelling
    with pytest.raises(xp.DeviceError, match=r"^to_device: device 'cuda' is not a castwise device"):
        t.to_device("cuda")
    with pytest.raises(xp.DeviceError, match=r"^ones: device 'gpu'"):
        xp.ones((2,), device="gpu")


def test_inspection_reports_the_policy_defaults() -> None:
    info = xp.__array_namespace_info__()
    assert info.devices() == [rt.cpu] and info.default_device() is rt.cpu
    assert info.capabilities()["data-dependent shapes"] is True
    assert info.default_dtypes()["real floating"] is rt.float64
    with rt.use_policy("torch"):
        assert info.default_dtypes()["real floating"] is rt.float32
        assert xp.zeros((1,)).dtype is rt.float32
    assert set(info.dtypes(kind="unsigned integer")) == {"uint8", "uint16", "uint32", "uint64"}
    assert len(info.dtypes()) == 13


def test_constants() -> None:
    assert (xp.e, xp.pi, xp.inf) == (math.e, math.pi, math.inf) and math.isnan(xp.nan) and xp.newaxis is None
    assert rt.asarray([1.0, 2.0])[xp.newaxis].shape == (1, 2)


# -- functions against NumPy (the standard's semantics) ---------------------------------------------

SPECIAL = [-3.5, -2.5, -1.0, -0.0, 0.0, 0.5, 2.5, 3.0, NAN, INF, -INF, 1e-310, 1e300]
PAIR = (SPECIAL, SPECIAL[::-1])

#: name -> (the namespace's call, NumPy's, operands)
CASES: dict[str, tuple[Callable[..., Any], Callable[..., Any], tuple[Any, ...]]] = {
    "round": (xp.round, np.round, (SPECIAL,)),
    "trunc": (xp.trunc, np.trunc, (SPECIAL,)),
    "signbit": (xp.signbit, np.signbit, ([v for v in SPECIAL if not math.isnan(v)],)),
    "copysign": (xp.copysign, np.copysign, PAIR),
    "hypot": (xp.hypot, np.hypot, PAIR),
    "logaddexp": (xp.logaddexp, np.logaddexp, PAIR),
    "nextafter": (xp.nextafter, np.nextafter, PAIR),
    "logical_and": (xp.logical_and, np.logical_and, ([3, 0, 2, 0], [4, 4, 0, 0])),
    "bitwise_right_shift_unsigned": (
        xp.bitwise_right_shift,
        np.right_shift,
        (np.array([200, 7], np.uint8), np.array([1, 2], np.uint8)),
    ),
    "bitwise_right_shift_signed": (
        xp.bitwise_right_shift,
        np.right_shift,
        (np.array([-100, 7], np.int8), np.array([1, 2], np.int8)),
    ),
    "diff": (
        lambda x: xp.diff(x, n=2, prepend=f64([0.0])),
        lambda x: np.diff(x, n=2, prepend=[0.0]),
        ([1.0, 4.0, 9.0, 16.0, 25.0],),
    ),
    "cumulative_sum": (
        lambda x: xp.cumulative_sum(x, axis=1, include_initial=True),
        lambda x: np.cumulative_sum(x, axis=1, include_initial=True),
        (np.arange(6.0).reshape(2, 3),),
    ),
    "cumulative_prod": (
        lambda x: xp.cumulative_prod(x, axis=0),
        lambda x: np.cumulative_prod(x, axis=0),
        (np.arange(1.0, 7.0).reshape(2, 3),),
    ),
    "vecdot": (xp.vecdot, np.vecdot, (np.arange(6.0).reshape(2, 3), np.arange(3.0))),
    "matrix_transpose": (xp.matrix_transpose, np.matrix_transpose, (np.arange(24.0).reshape(2, 3, 4),)),
    "searchsorted_left": (xp.searchsorted, np.searchsorted, ([1.0, 2.0, 2.0, 5.0, NAN], [2.0, 0.0, 9.0, NAN])),
    "searchsorted_right": (
        lambda a, v: xp.searchsorted(a, v, side="right"),
        lambda a, v: np.searchsorted(a, v, "right"),
        ([1.0, 2.0, 2.0, 5.0, NAN], [2.0, 0.0, 9.0, NAN]),
    ),
    "searchsorted_sorter": (
        lambda a, s, v: xp.searchsorted(a, v, sorter=s),
        lambda a, s, v: np.searchsorted(a, v, sorter=s),
        ([5.0, 1.0, 3.0], np.array([1, 2, 0]), [2.0, 4.0]),
    ),
    "isin": (xp.isin, np.isin, (np.arange(6.0).reshape(2, 3), [4.0, 1.0, NAN])),
    "isin_invert": (lambda a, b: xp.isin(a, b, invert=True), lambda a, b: np.isin(a, b, invert=True), ([1, 2, 3], [2])),
    "count_nonzero": (
        lambda x: xp.count_nonzero(x, axis=0),
        lambda x: np.count_nonzero(x, axis=0),
        ([[0, 1], [2, 0]],),
    ),
    "take_along_axis": (
        lambda x, i: xp.take_along_axis(x, i, axis=1),
        lambda x, i: np.take_along_axis(x, i, axis=1),
        (np.arange(6.0).reshape(2, 3), np.array([[2, 0], [1, 1]])),
    ),
    "tile": (lambda x: xp.tile(x, (2, 1, 2)), lambda x: np.tile(x, (2, 1, 2)), (np.arange(6.0).reshape(2, 3),)),
    "repeat_counts": (
        lambda x: xp.repeat(x, rt.asarray([1, 0, 3]), axis=1),
        lambda x: np.repeat(x, [1, 0, 3], axis=1),
        (np.arange(6.0).reshape(2, 3),),
    ),
    "moveaxis": (lambda x: xp.moveaxis(x, 0, -1), lambda x: np.moveaxis(x, 0, -1), (np.arange(24.0).reshape(2, 3, 4),)),
    "clip": (lambda x: xp.clip(x, -1.0, 2.0), lambda x: np.clip(x, -1.0, 2.0), (SPECIAL,)),
    "tril": (lambda x: xp.tril(x, k=-1), lambda x: np.tril(x, k=-1), (np.arange(9.0).reshape(3, 3),)),
    "triu": (lambda x: xp.triu(x, k=1), lambda x: np.triu(x, k=1), (np.arange(9.0).reshape(3, 3),)),
    "max": (lambda x: xp.max(x, axis=1), lambda x: np.max(x, axis=1), (np.arange(6.0).reshape(2, 3),)),
    "var": (lambda x: xp.var(x, axis=0), lambda x: np.var(x, axis=0), (np.arange(6.0).reshape(2, 3) ** 2,)),
    "sort_descending": (lambda x: xp.sort(x, descending=True), lambda x: -np.sort(-np.asarray(x)), ([3.0, -1.0, 2.0],)),
    "argsort_descending": (
        lambda x: xp.argsort(x, descending=True),
        lambda x: np.argsort(-np.asarray(x), stable=True),
        ([3.0, 1.0, 3.0, 2.0],),
    ),
}


#: cases that round (a formula of several ops, not one correctly rounded op): their relative error
ROUNDED = {"hypot": 4e-16, "logaddexp": 4e-16}


def _operand(a: Any) -> Any:
    return rt.asarray(a) if isinstance(a, np.ndarray) else rt.asarray(np.asarray(a))


@pytest.mark.parametrize("name", list(CASES))
def test_function_matches_numpy(name: str) -> None:
    fn, oracle, operands = CASES[name]
    got = fn(*(_operand(a) for a in operands))
    with np.errstate(all="ignore"):  # the oracle's own warnings (inf - inf inside logaddexp)
        want = np.asarray(oracle(*(np.asarray(a) for a in operands)))
    assert got.shape == want.shape, (got.shape, want.shape)
    if name in ROUNDED:
        np.testing.assert_allclose(got.numpy(), want, rtol=ROUNDED[name])
    else:
        np.testing.assert_array_equal(got.numpy(), want)
    if want.dtype.kind == "f":  # the sign of each zero too (a NaN's sign is no result)
        number = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got.numpy())[number], np.signbit(want)[number])


def test_broadcast_arrays_meshgrid_unstack_and_concat_match_numpy() -> None:
    a, b = np.arange(3.0).reshape(3, 1), np.arange(4.0)
    for g, w in zip(xp.broadcast_arrays(rt.asarray(a), rt.asarray(b)), np.broadcast_arrays(a, b), strict=True):
        np.testing.assert_array_equal(g.numpy(), w)
    for g, w in zip(
        xp.meshgrid(rt.asarray(b), rt.asarray(a[:, 0]), indexing="ij"),
        np.meshgrid(b, a[:, 0], indexing="ij"),
        strict=True,
    ):
        np.testing.assert_array_equal(g.numpy(), w)
    x = np.arange(24.0).reshape(2, 3, 4)
    for g, w in zip(xp.unstack(rt.asarray(x), axis=1), np.unstack(x, axis=1), strict=True):
        np.testing.assert_array_equal(g.numpy(), w)
    np.testing.assert_array_equal(
        xp.concat([rt.asarray(x), rt.asarray(x)], axis=None).numpy(), np.concat([x, x], axis=None)
    )
    with pytest.raises(xp.AxisError, match=r"^expand_dims: axis 4"):
        xp.expand_dims(rt.asarray(x), axis=4)
    assert issubclass(xp.AxisError, IndexError)


# -- set functions and nonzero: data-dependent shapes ---------------------------------------------


@pytest.mark.parametrize(
    "values",
    [[3.0, 1.0, 3.0, NAN, -0.0, 0.0, NAN, 1.0], [[2, 2], [1, 5]], [], [7]],
    ids=["nan", "int-2d", "empty", "one"],
)
def test_unique_functions_match_numpy(values: Any) -> None:
    a = np.asarray(
        values, np.float64 if isinstance(values, list) and values and isinstance(values[0], float) else np.int64
    )
    t = rt.asarray(a)
    got, want = xp.unique_all(t), np.unique_all(a)
    for field in ("values", "indices", "inverse_indices", "counts"):
        np.testing.assert_array_equal(getattr(got, field).numpy(), getattr(want, field), err_msg=field)
    assert got.inverse_indices.shape == a.shape
    # the standard leaves the order of unique_values open (NumPy 2.3+ hashes); castwise sorts
    np.testing.assert_array_equal(xp.unique_values(t).numpy(), np.sort(np.unique_values(a)))
    np.testing.assert_array_equal(xp.unique_counts(t).counts.numpy(), np.unique_counts(a).counts)
    np.testing.assert_array_equal(xp.unique_inverse(t).inverse_indices.numpy(), np.unique_inverse(a).inverse_indices)


def test_nonzero_matches_numpy() -> None:
    a = np.array([[0, 3, 0], [1, 0, 2]])
    for g, w in zip(xp.nonzero(rt.asarray(a)), np.nonzero(a), strict=True):
        assert g.dtype is rt.int64
        np.testing.assert_array_equal(g.numpy(), w)


@pytest.mark.parametrize("name", ["unique_values", "unique_counts", "unique_inverse", "unique_all", "nonzero"])
def test_data_dependent_shapes_refuse_traced_operands(name: str) -> None:
    fn = getattr(xp, name)
    x = f64([1.0, 2.0, 1.0])
    with pytest.raises(rt.ConcretizationError, match=rf"^{name}: x is traced"):
        rt.trace(fn, x)
    with pytest.raises(rt.ConcretizationError, match=rf"^{name}: x is traced"):
        autodiff.jit(fn)(x)
    with pytest.raises(rt.ConcretizationError, match=rf"^{name}: x is traced"):
        autodiff.vmap(fn)(f64([[1.0, 2.0], [2.0, 2.0]]))
    with pytest.raises(rt.ConcretizationError, match=r"^repeat: repeats is traced"):
        autodiff.jit(lambda r: xp.repeat(x, r))(rt.asarray([1, 2, 0]))


#: indices with a 0-d boolean mask, NumPy's and jax.numpy's new axis of length 1 (True) or 0 (False)
ZERO_D_MASKS = [
    True, False, (True,), (Ellipsis, True), (True, 0), (0, True), (True, [0, 1]),
    (slice(None), True, None), (True, True), (None, False, 1), (True, np.array([True, False])),
]  # fmt: skip


@pytest.mark.parametrize("index", ZERO_D_MASKS, ids=repr)
def test_a_0d_boolean_mask_adds_an_axis_as_numpy_and_jax(index: Any) -> None:
    a = np.arange(6.0).reshape(2, 3)
    want = a[index]
    got = rt.asarray(a)[index]
    assert got.shape == want.shape == np.asarray(jnp.asarray(a)[index]).shape
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("mask_shape", [(0,), (0, 3), (2, 0), (0, 0)])
def test_an_empty_boolean_mask_selects_nothing_as_numpy_and_jax(mask_shape: tuple[int, ...]) -> None:
    a, mask = np.arange(6.0).reshape(2, 3), np.zeros(mask_shape, bool)  # a 0-length mask axis matches any
    got = rt.asarray(a)[rt.asarray(mask)]
    assert got.shape == a[mask].shape == jnp.asarray(a)[jnp.asarray(mask)].shape
    with pytest.raises(IndexError, match="does not match"):
        rt.asarray(a)[rt.asarray(np.zeros((0, 4), bool))]


def test_a_0d_boolean_mask_tensor_selects_and_scatters_and_refuses_tracing() -> None:
    a = np.arange(6.0).reshape(2, 3)
    x = rt.asarray(a)
    assert x[xp.asarray(True)].shape == (1, 2, 3) and x[xp.asarray(False)].shape == (0, 2, 3)
    assert rt.asarray(5.0)[True].shape == (1,) and x[np.True_].shape == a[np.True_].shape == (1, 2, 3)
    np.testing.assert_array_equal(x.at[True].set(9.0).numpy(), np.full((2, 3), 9.0))
    np.testing.assert_array_equal(x.at[False].set(9.0).numpy(), a)
    grad = autodiff.grad(lambda t: xp.sum(t[True] * 2.0))(x)
    np.testing.assert_array_equal(grad.numpy(), np.asarray(jax.grad(lambda t: jnp.sum(t[True] * 2.0))(a)))
    with pytest.raises(rt.ConcretizationError, match="the boolean mask is traced"):
        autodiff.jit(lambda t, m: t[m])(x, xp.asarray(True))
    with pytest.raises(rt.ConcretizationError, match="the boolean mask is traced"):
        autodiff.vmap(lambda t, m: t[m])(x, xp.asarray([True, False]))


@pytest.mark.parametrize("d", [d for d in rt.ALL_DTYPES if d.kind == "float"], ids=lambda d: d.name)
def test_signbit_reads_the_sign_bit_of_every_float_as_numpy(d: rt.DType) -> None:
    with np.errstate(all="ignore"):
        a = np.array([NAN, -NAN, -0.0, 0.0, -1.0, 1.0, INF, -INF]).astype(d.storage)
    np.testing.assert_array_equal(xp.signbit(rt.asarray(a)).numpy(), np.signbit(a))  # ml_dtypes' signbit
    np.testing.assert_array_equal(autodiff.vmap(xp.signbit)(rt.asarray(a[None])).numpy(), np.signbit(a)[None])


def test_signbit_of_a_negative_nan_is_true_recorded_and_differentiable_as_zero() -> None:
    x = f64([-NAN, NAN, -2.0, 3.0])
    np.testing.assert_array_equal(xp.signbit(x).numpy(), np.asarray(jnp.signbit(jnp.asarray(x.numpy()))))
    assert rt.trace(xp.signbit, x) is not None
    batched = autodiff.vmap(xp.signbit)(f64([[-NAN, 1.0], [NAN, -0.0]]))
    np.testing.assert_array_equal(batched.numpy(), [[True, False], [False, True]])
    grad = autodiff.grad(lambda t: xp.sum(xp.where(xp.signbit(t), t, 2.0 * t)))(f64([-1.0, 2.0]))
    np.testing.assert_array_equal(grad.numpy(), [1.0, 2.0])


#: complex expm1's special values (C99's cexp(z) - 1, the standard's table): z -> (real, imag)
EXPM1_SPECIAL = {
    complex(INF, 0.0): (INF, 0.0),
    complex(-INF, INF): (-1.0, 0.0),
    complex(INF, INF): (INF, NAN),
    complex(-INF, NAN): (-1.0, 0.0),
    complex(INF, NAN): (INF, NAN),
    complex(NAN, 0.0): (NAN, 0.0),
    complex(0.0, 0.0): (0.0, 0.0),
    complex(-0.0, 0.0): (0.0, 0.0),
    complex(-INF, 2.5): (-1.0, 0.0),
    complex(-INF, -2.5): (-1.0, -0.0),
    complex(1.5, INF): (NAN, NAN),
    complex(NAN, 1.0): (NAN, NAN),
}


@pytest.mark.parametrize("policy", ["numpy", "jax"])
@pytest.mark.parametrize("dtype", [rt.complex32, rt.bcomplex32, rt.complex64, rt.complex128], ids=lambda d: d.name)
def test_complex_expm1_gives_the_standards_special_values(dtype: rt.DType, policy: str) -> None:
    z = np.array(list(EXPM1_SPECIAL), dtype.storage)
    with rt.use_policy(policy):
        got = xp.expm1(rt.asarray(z)).numpy()
    want = np.array([complex(*v) for v in EXPM1_SPECIAL.values()], dtype.storage)
    for g, w, v in zip(got, want, EXPM1_SPECIAL.values(), strict=True):
        for part, wpart, value in ((g.real, w.real, v[0]), (g.imag, w.imag, v[1])):
            assert (math.isnan(part) and math.isnan(value)) or (part == wpart and np.signbit(part) == np.signbit(wpart))
    if dtype in (rt.complex32, rt.bcomplex32):  # (no JAX dtype)
        return
    # JAX (XLA) gets these right too; away from them the formula is XLA's, to rounding
    agree = np.array([not (math.isinf(k.real) and not math.isfinite(k.imag)) for k in EXPM1_SPECIAL])
    jz = np.asarray(jnp.expm1(jnp.asarray(z)))
    np.testing.assert_array_equal(got[agree], jz[agree])
    grid = np.array([complex(a, b) for a in (-2.0, -1e-9, 0.0, 1.5) for b in (-2.5, -1e-8, 1e-300, 1.0)], z.dtype)
    rtol = 1e-15 if dtype is rt.complex128 else 1e-6
    np.testing.assert_allclose(xp.expm1(rt.asarray(grid)).numpy(), np.asarray(jnp.expm1(jnp.asarray(grid))), rtol=rtol)


# -- gradients and batches -----------------------------------------------------------------------------

X = np.array([[0.5, -1.25, 2.0], [1.5, 0.75, -0.5]])
Y = np.array([[1.0, 2.5, -0.25], [-2.0, 0.5, 1.25]])

#: name -> (the namespace's function, jax.numpy's)
DIFFERENTIABLE: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "hypot": (xp.hypot, jnp.hypot),
    "logaddexp": (xp.logaddexp, jnp.logaddexp),
    "copysign": (xp.copysign, jnp.copysign),
    "vecdot": (xp.vecdot, jnp.vecdot),
    "cumulative_sum": (
        lambda a, b: xp.cumulative_sum(a * b, axis=1, include_initial=True),
        lambda a, b: jnp.cumulative_sum(a * b, axis=1, include_initial=True),
    ),
    "cumulative_prod": (
        lambda a, b: xp.cumulative_prod(a * b, axis=0),
        lambda a, b: jnp.cumulative_prod(a * b, axis=0),
    ),
    "diff": (lambda a, b: xp.diff(a, axis=0, append=b), lambda a, b: jnp.diff(a, axis=0, append=b)),
    "trunc_times": (lambda a, b: xp.trunc(a * 3.0) * b, lambda a, b: jnp.trunc(a * 3.0) * b),
    "max_min": (
        lambda a, b: xp.max(a, axis=0) * xp.min(b, axis=1)[0],
        lambda a, b: jnp.max(a, axis=0) * jnp.min(b, axis=1)[0],
    ),
    "std": (lambda a, b: xp.std(a * b, axis=1, correction=1), lambda a, b: jnp.std(a * b, axis=1, ddof=1)),
    "searchsorted_weights": (
        lambda a, b: xp.searchsorted(xp.sort(xp.reshape(a, (6,))), b) * b,
        lambda a, b: jnp.searchsorted(jnp.sort(jnp.reshape(a, (6,))), b) * b,
    ),
}


@pytest.mark.parametrize("name", list(DIFFERENTIABLE))
def test_gradient_matches_jax_grad(name: str) -> None:
    fn, oracle = DIFFERENTIABLE[name]
    got = autodiff.grad(lambda a, b: xp.sum(fn(a, b)), argnums=(0, 1))(rt.asarray(X), rt.asarray(Y))
    # the oracle compiled once: JAX's eager dispatch of each small op costs more than the test
    want = jax.jit(jax.grad(lambda a, b: jnp.sum(oracle(a, b)), argnums=(0, 1)))(jnp.asarray(X), jnp.asarray(Y))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), np.asarray(w), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", list(DIFFERENTIABLE))
def test_vmap_matches_jax_vmap(name: str) -> None:
    fn, oracle = DIFFERENTIABLE[name]
    stacked = np.stack([X, X[::-1] * 2.0])
    got = autodiff.vmap(fn, in_axes=(0, None))(rt.asarray(stacked), rt.asarray(Y))
    want = jax.jit(jax.vmap(oracle, in_axes=(0, None)))(jnp.asarray(stacked), jnp.asarray(Y))
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-12, atol=1e-14)


def test_jit_of_a_standard_function_matches_eager() -> None:
    def f(a: Any, b: Any) -> Any:
        return xp.logaddexp(a, b) + xp.hypot(a, b) * xp.signbit(b)

    eager = f(rt.asarray(X), rt.asarray(Y))
    jitted = autodiff.jit(f)(rt.asarray(X), rt.asarray(Y))
    np.testing.assert_allclose(jitted.numpy(), eager.numpy(), rtol=1e-15)


# -- the status table ------------------------------------------------------------------------------


def test_the_status_table_in_docs_tensor_md_is_fresh() -> None:
    from pathlib import Path

    from runtime.numpy.array_api import standard

    text = (Path(__file__).resolve().parents[2] / "docs" / "tensor.md").read_text()
    assert standard.DOC_BEGIN in text, "docs/tensor.md lost its generated array API table"
    assert standard.generated_section(text) == standard.table(rt.array_api), (
        "docs/tensor.md is stale: run `python -m runtime.numpy.array_api docs/tensor.md`"
    )


def test_the_status_table_finds_what_the_namespace_has() -> None:
    from runtime.numpy.array_api import standard

    rows = standard.status(rt.array_api)
    assert len(rows) == sum(len(v) for v in standard.STANDARD.values())
    missing = {name for name, (state, _) in rows.items() if not state.startswith("yes")}
    assert missing <= set(standard.PENDING), (
        f"names neither present nor pending: {sorted(missing - set(standard.PENDING))}"
    )
    assert rows["unique_all"][0].startswith("yes (eager only")
    assert rows["hypot"] == ("yes", "runtime.numpy.array_api.elementwise")
    assert rows["linalg.cholesky"][0] == "yes" and rows["pi"] == ("yes", "constant")
    # a name the namespace lacks is reported, not hidden
    import types

    bare = types.SimpleNamespace(__array_namespace_info__=rt.array_api.__array_namespace_info__)
    assert standard.status(bare)["hypot"] == ("missing", "")


@pytest.mark.parametrize("policy", ["jax", "numpy"])
@pytest.mark.parametrize("name", ["hypot", "copysign", "logaddexp"])
def test_a_python_scalar_takes_the_arrays_float_dtype(name: str, policy: str) -> None:
    """NEP 50 under numpy, weak scalars under jax: ``f32 array op 2.0`` stays float32."""
    x = np.ones(3, np.float32)
    with rt.use_policy(policy):
        got = getattr(xp, name)(rt.asarray(x), 2.0)
    oracle = getattr(np, name)(x, 2.0) if policy == "numpy" else getattr(jnp, name)(x, 2.0)
    assert got.dtype == oracle.dtype == np.float32
    np.testing.assert_allclose(got.numpy(), np.asarray(oracle), rtol=1e-6)
