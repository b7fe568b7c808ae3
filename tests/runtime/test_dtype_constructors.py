"""Issue 22's habits: dtypes are constructors (``rt.float32(3.0)``, as ``jnp.float32(3.0)``) and
``rt.array`` copies (as ``jnp.array`` / ``np.array``), unlike ``asarray``, which shares."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import autodiff
import runtime as rt

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)  # as the other jax.numpy comparisons: float64 stays float64

#: (castwise dtype name, input): each against ``getattr(jnp, name)(input)``
CASES: list[tuple[str, Any]] = [
    ("float32", 3.0),
    ("float32", 3),
    ("float64", 2.5),
    ("int8", [1, 2]),
    ("int32", 2.7),
    ("int64", -7),
    ("uint8", 200),
    ("bool", 1),
    ("float16", True),
    ("bfloat16", 1.5),
    ("bfloat16", np.arange(3.0)),
    ("float32", np.arange(4, dtype=np.int64).reshape(2, 2)),
    ("int16", np.array([1.9, -2.9])),
    ("complex64", 1 + 2j),
    ("complex64", [1.0, 2.0]),
    ("float8_e4m3fn", [0.5, 1.0]),
    ("int4", [1, -2, 7]),
    ("uint32", np.array([True, False])),
]


@pytest.mark.parametrize(("name", "value"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_dtype_call_matches_jnp(name: str, value: Any) -> None:
    want = getattr(jnp, name)(value)
    with rt.policy("jax"):
        got = getattr(rt, name)(value)
    assert isinstance(got, rt.Tensor)
    assert got.dtype.name == str(want.dtype) and got.shape == want.shape
    assert not got.weak and not want.weak_type  # a strong Tensor, as jnp's is
    np.testing.assert_array_equal(got.numpy().astype(np.complex128), np.asarray(want).astype(np.complex128))


def test_dtype_call_converts_a_tensor_and_records() -> None:
    x = rt.asarray([1.25, 2.5], requires_grad=True)
    y = rt.float32(x)
    assert y.dtype is rt.float32 and y.tolist() == [1.25, 2.5]
    assert rt.bfloat16(rt.asarray([1.0, 3.0])).dtype is rt.bfloat16
    got = autodiff.grad(lambda t: (rt.float32(t) * 2.0).sum())(rt.asarray([1.0, 2.0]))
    assert got.tolist() == [2.0, 2.0]


def test_dtype_call_error_names_dtype_value_and_policy() -> None:
    with pytest.raises(OverflowError):
        jnp.uint8(-1)
    with rt.policy("jax"), pytest.raises(rt.CastwiseError, match=r"uint8\(-1\).*policy 'jax'"):
        rt.uint8(-1)
    with pytest.raises(ValueError):
        jnp.int8("abc")
    with pytest.raises(rt.CastwiseError, match=r"int8\('abc'\)"):
        rt.int8("abc")


def test_dtype_attributes_unchanged() -> None:
    assert rt.bfloat16 == ml_dtypes.bfloat16 and np.zeros(2, rt.float32).dtype == np.float32


# -- rt.array: copies by default ---------------------------------------------------------------------


def test_array_copies_numpy_and_tensor_inputs() -> None:
    a = np.arange(3.0)
    assert np.shares_memory(rt.asarray(a).numpy(), a)  # asarray shares, as np.asarray
    got = rt.array(a)
    assert not np.shares_memory(got.numpy(), a)
    assert not np.shares_memory(np.array(a), a) and not np.shares_memory(np.asarray(jnp.array(a)), a)
    t = rt.asarray(a)
    assert not np.shares_memory(rt.array(t).numpy(), t.numpy())
    t += 1  # writing through the original leaves the copy alone
    assert got.tolist() == [0.0, 1.0, 2.0]


def test_array_copy_false_shares_where_possible() -> None:
    a = np.arange(3.0)
    assert np.shares_memory(np.array(a, copy=False), a)
    assert np.shares_memory(rt.array(a, copy=False).numpy(), a)
    assert np.shares_memory(rt.array(a, copy=None).numpy(), a)
    t = rt.asarray([1.0, 2.0])
    assert rt.array(t, copy=False) is t
    assert not np.shares_memory(rt.array(a, dtype=rt.float32, copy=False).numpy(), a)  # a conversion copies


@pytest.mark.parametrize(
    ("value", "kwargs"),
    [
        ([1, 2], {}),
        ([1.5, 2], {}),
        (2.5, {}),
        (np.arange(3.0), {"dtype": np.float32}),
        (np.arange(3), {"ndmin": 3}),
        ([[True, False]], {"dtype": np.int8}),
    ],
)
def test_array_matches_jnp_and_numpy(value: Any, kwargs: dict[str, Any]) -> None:
    for policy, lib in (("jax", jnp), ("numpy", np)):
        want = lib.array(value, **kwargs)
        with rt.policy(policy):
            got = rt.array(value, **kwargs)
        assert got.dtype.name == str(want.dtype) and got.shape == want.shape, policy
        np.testing.assert_array_equal(got.numpy(), np.asarray(want))
        if policy == "jax":
            assert got.weak == want.weak_type


def test_array_is_differentiable() -> None:
    got = autodiff.grad(lambda t: (rt.array(t) * 3.0).sum())(rt.asarray([1.0, 2.0]))
    want = jax.grad(lambda t: (jnp.array(t) * 3.0).sum())(jnp.asarray([1.0, 2.0]))
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))
