"""``alpha=`` on ``rt.add`` / ``rt.subtract`` under the torch policy (issue 23), held to PyTorch.

Oracle: ``torch.add(input, other, alpha=a)`` is documented as ``input + a * other`` (``torch.sub``:
``input - a * other``), computed in the operands' common dtype with ``alpha`` converted to it,
and ATen's ``alpha_check`` refuses a bool alpha unless the result is bool, a float alpha for an
integral result and a complex alpha for a non-complex one. The reference here is that formula
in NumPy in the common dtype (operands chosen so the two roundings of ``a * other`` and the sum
are exact or compared with a tolerance of a few ulps where they are not: PyTorch's own CPU
kernel fuses them in its vectorized loop and not in its tail); ``torch`` itself where installed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import autodiff
import runtime as rt

RNG = np.random.default_rng(23)


def _t(values: Any, dtype: str) -> Any:
    return rt.asarray(np.asarray(values).astype(dtype))


#: (x dtype, y dtype or a Python scalar's kind, alpha, the common dtype under torch)
ROWS = [
    ("int32", "int32", 3, "int32"),
    ("int64", "int8", -2, "int64"),
    ("uint8", "uint8", 2, "uint8"),  # wraps, as torch's uint8
    ("int32", "float32", 0.5, "float32"),
    ("float32", "float32", 2.5, "float32"),
    ("float64", "float32", -0.25, "float64"),
    ("float16", "float16", 3, "float16"),
    ("bfloat16", "bfloat16", 0.5, "bfloat16"),
    ("float32", "int64", 2, "float32"),
    ("complex64", "float32", 1 - 2j, "complex64"),
    ("complex128", "complex128", 0.5j, "complex128"),
    ("bool", "bool", True, "bool"),
    ("bool", "bool", False, "bool"),
    ("int32", "bool", 4, "int32"),
    ("float32", "py-float", 2, "float32"),  # a Python float other: the tensor's category wins
    ("int32", "py-float", 2.0, "float32"),  # int tensor + Python float: the default float
    ("int64", "py-int", 5, "int64"),
    ("float32", "float32", 1, "float32"),  # alpha 1: plain add
]


def _operand(kind: str) -> Any:
    if kind == "py-float":
        return 1.5
    if kind == "py-int":
        return 3
    if kind == "bool":
        return np.array([True, False, True, False])
    return np.array([1, 2, 3, 5]).astype(kind)


def _reference(x: Any, y: Any, alpha: Any, common: str, op: str) -> np.ndarray:
    import ml_dtypes  # noqa: F401  (bfloat16 by name)

    d = np.dtype(common)
    xs, ys = np.asarray(x).astype(d), np.asarray(y).astype(d)
    a = np.asarray(alpha).astype(d)
    if d == np.bool_:
        prod = ys & a
        return xs | prod if op == "add" else None  # type: ignore[return-value]
    with np.errstate(over="ignore"):
        prod = (ys * a).astype(d)
        return (xs + prod if op == "add" else xs - prod).astype(d)


@pytest.mark.parametrize("op", ["add", "subtract"])
@pytest.mark.parametrize(("xk", "yk", "alpha", "common"), ROWS)
def test_alpha_is_input_plus_alpha_times_other(xk: str, yk: str, alpha: Any, common: str, op: str) -> None:
    if op == "subtract" and common == "bool":
        pytest.skip("torch.sub refuses bool tensors (alpha aside): tests/runtime/test_alpha.py's error table")
    x, y = _operand(xk), _operand(yk)
    with rt.use_policy("torch"):
        yt = y if yk.startswith("py-") else rt.asarray(y)
        got = getattr(rt, op)(rt.asarray(x), yt, alpha=alpha)
    assert got.dtype.name == common
    want = _reference(x, y, alpha, common, op)
    np.testing.assert_array_equal(got.numpy(), want)


def test_random_floats_agree_within_a_rounding() -> None:
    x, y = RNG.standard_normal(64).astype(np.float32), RNG.standard_normal(64).astype(np.float32)
    with rt.use_policy("torch"):
        got = rt.add(rt.asarray(x), rt.asarray(y), alpha=0.3).numpy()
    np.testing.assert_allclose(got, x + np.float32(0.3) * y, rtol=2e-7, atol=1e-7)


def test_without_alpha_it_is_numpys_add_under_every_policy() -> None:
    """Only the keyword is added: no alpha is ``rt.lax.add`` / ``rt.lax.sub`` (the NumPy-name table
    holds them against NumPy and jax.numpy); rt.add is one Python call away from lax.add."""
    x, y = np.array([1, 2], np.int32), np.array([0.5, 1.5], np.float32)
    for name in rt.policies():
        with rt.use_policy(name):
            try:
                want_add, want_sub = rt.lax.add(rt.asarray(x), rt.asarray(y)), rt.lax.sub(rt.asarray(x), rt.asarray(y))
            except rt.CastwiseError:
                continue  # a policy without these dtypes (kael, strict): the same error below
            got_add, got_sub = rt.add(rt.asarray(x), rt.asarray(y)), rt.subtract(rt.asarray(x), rt.asarray(y))
            assert got_add.dtype is want_add.dtype and got_sub.dtype is want_sub.dtype
            np.testing.assert_array_equal(got_add.numpy(), want_add.numpy())
            np.testing.assert_array_equal(got_sub.numpy(), want_sub.numpy())


@pytest.mark.parametrize("name", ["jax", "numpy", "jax-strict", "tenferro", "neuron", "strict"])
def test_other_policies_refuse_alpha(name: str) -> None:
    if name not in rt.policies():
        pytest.skip(f"policy {name!r} is not registered")
    with rt.use_policy(name), pytest.raises(rt.AlphaError, match=r"^add: alpha= is PyTorch's keyword"):
        rt.add(rt.asarray([1.0]), rt.asarray([2.0]), alpha=2)
    with rt.use_policy(name), pytest.raises(rt.AlphaError, match=r"^subtract: alpha= is PyTorch's keyword"):
        rt.subtract(rt.asarray([1.0]), rt.asarray([2.0]), alpha=1)


#: (x, y, alpha, the message's start after ``add: ``): ATen alpha_check's three refusals, and
#: castwise's for an alpha that is no number
ERRORS = [
    ("int32", "int32", 2.0, "alpha 2.0 is a float: for integral input tensors (int32 result)"),
    ("int64", "bool", 0.5, "alpha 0.5 is a float: for integral input tensors (int64 result)"),
    ("bool", "bool", 1.0, "alpha 1.0 is a float: for integral input tensors (bool result)"),
    ("int32", "int32", True, "a bool alpha only for a bool result; the result is int32"),
    ("float32", "float32", False, "a bool alpha only for a bool result; the result is float32"),
    ("float32", "float32", 1j, "alpha 1j is complex and the result float32 is not"),
    ("int32", "int32", 1 + 0j, "alpha (1+0j) is complex and the result int32 is not"),
    ("float32", "float32", "2", "alpha must be a Python number (torch's Scalar), got str"),
    ("float32", "float32", [2], "alpha must be a Python number (torch's Scalar), got list"),
]


@pytest.mark.parametrize("op", ["add", "subtract"])
@pytest.mark.parametrize(("xk", "yk", "alpha", "message"), ERRORS)
def test_torchs_alpha_check(xk: str, yk: str, alpha: Any, message: str, op: str) -> None:
    with rt.use_policy("torch"), pytest.raises(rt.AlphaError) as info:
        getattr(rt, op)(rt.asarray(_operand(xk)), rt.asarray(_operand(yk)), alpha=alpha)
    text = str(info.value)
    assert text.startswith(f"{op}: {message}"), text
    assert f"x:{rt.dtype(xk).short}[4]" in text and "policy 'torch'" in text, text


def test_a_tensor_alpha_is_refused_with_its_dtype_and_shape() -> None:
    with rt.use_policy("torch"), pytest.raises(rt.AlphaError, match=r"got a Tensor float32\[2\]"):
        rt.add(_t([1, 2], "float32"), _t([1, 2], "float32"), alpha=_t([1, 2], "float32"))


def test_gradient_and_vmap_and_jit() -> None:
    """``d/dx = 1``, ``d/dy = alpha`` (sub: ``-alpha``), as ``jax.grad`` of the formula; vmap and jit
    run the recorded composition."""
    x, y = RNG.standard_normal(4), RNG.standard_normal(4)
    with rt.use_policy("torch"):
        for op, sign in (("add", 1.0), ("subtract", -1.0)):

            def f(a: Any, b: Any, op: str = op) -> Any:
                return getattr(rt, op)(a, b, alpha=2.5).sum()

            gx, gy = autodiff.grad(f, argnums=(0, 1))(rt.asarray(x), rt.asarray(y))
            np.testing.assert_array_equal(gx.numpy(), np.ones(4))
            np.testing.assert_array_equal(gy.numpy(), np.full(4, sign * 2.5))
            batched = autodiff.vmap(lambda a, b, op=op: getattr(rt, op)(a, b, alpha=-3))(
                rt.asarray(np.stack([x, y])), rt.asarray(np.stack([y, x]))
            )
            np.testing.assert_array_equal(batched.numpy()[0], x + sign * -3 * y)
            jitted = autodiff.jit(lambda a, b, op=op: getattr(rt, op)(a, b, alpha=0.5))(rt.asarray(x), rt.asarray(y))
            np.testing.assert_allclose(jitted.numpy(), x + sign * 0.5 * y, rtol=1e-15)


def test_matches_torch_where_installed() -> None:
    torch = pytest.importorskip("torch")
    for xk, yk, alpha, _common in ROWS:
        if xk == "bool" or yk.startswith("py-"):
            continue
        x, y = _operand(xk), _operand(yk)
        if "bfloat16" in (xk, yk):
            continue  # NumPy has no bfloat16 for torch.from_numpy
        for op, tfn in (("add", torch.add), ("subtract", torch.sub)):
            want = tfn(torch.from_numpy(x), torch.from_numpy(y), alpha=alpha)
            with rt.use_policy("torch"):
                got = getattr(rt, op)(rt.asarray(x), rt.asarray(y), alpha=alpha)
            assert got.dtype.name == str(want.dtype).removeprefix("torch.")
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    for xk, yk, alpha, _message in ERRORS:
        if isinstance(alpha, (str, list)):
            continue
        with pytest.raises(RuntimeError):
            torch.add(torch.from_numpy(_operand(xk)), torch.from_numpy(_operand(yk)), alpha=alpha)
