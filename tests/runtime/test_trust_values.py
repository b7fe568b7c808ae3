"""Values the libraries agree on, which castwise returned wrong (or refused with an internal error).

Each section is one mechanism: the ``convert`` kernel from complex to bool, integer ``pow`` with a
negative exponent, ``det``'s derivative at singular matrices, ``slogdet``'s sign at an infinite
pivot, the memory ``diag`` / ``diagonal`` return, and linear algebra on empty, NaN and inf input
or out-of-range pivots. The oracles are NumPy, jax.numpy (x64), PyTorch's documented rules (the
ATen source: ``Pow.h``'s ``powi``, ``Pow.cpp``'s scalar check) and exact arithmetic: finite
differences of ``det`` are exact, since a determinant is affine in each entry.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autodiff
import runtime as rt
from runtime.core import lax as F
from runtime.core.shapes import OpValueError

jax.config.update("jax_enable_x64", True)

L = rt.linalg
POLICIES = ("jax", "numpy", "torch")


# -- complex -> bool: either part non-zero -----------------------------------------------------------

#: (values, x != 0 under NumPy, jax.numpy's astype and PyTorch's .bool())
_COMPLEX = np.array([1j, 0, 1, 2j, complex(np.nan, 0), complex(0, -0.0), complex(-0.0, np.inf)])
_TRUTH = np.array([True, False, True, True, True, False, True])


def _complex_policies(d: str) -> list[str]:
    # complex32 / bcomplex32 are not NumPy dtypes (the numpy policy refuses them); PyTorch has
    # no bcomplex32
    return {"complex32": ["jax", "torch"], "bcomplex32": ["jax"]}.get(d, list(POLICIES))


_COMPLEX_ROWS = [(d, p) for d in ("complex32", "bcomplex32", "complex64", "complex128") for p in _complex_policies(d)]


@pytest.mark.parametrize(("dtype", "policy"), _COMPLEX_ROWS)
def test_complex_to_bool_reads_both_parts(dtype: str, policy: str) -> None:
    z = rt.asarray(_COMPLEX).astype(dtype)
    with rt.policy(policy):
        np.testing.assert_array_equal(z.astype(bool).numpy(), _TRUTH)
        np.testing.assert_array_equal(F.convert(z, rt.bool_).numpy(), _TRUTH)
        np.testing.assert_array_equal(_COMPLEX.astype(bool), _TRUTH)  # the oracle itself
        assert int(rt.count_nonzero(z).item()) == int(_TRUTH.sum()) == np.count_nonzero(_COMPLEX)
        assert bool(rt.any(z[:1])) and bool(np.any(_COMPLEX[:1]))  # [1j]: any is True
        assert bool(rt.all(z[3:5])) and bool(np.all(_COMPLEX[3:5]))  # [2j, nan]: all is True
        assert not bool(rt.all(z[:2]))  # [1j, 0]
        np.testing.assert_array_equal(rt.where(z, 1, 2).numpy(), np.where(_TRUTH, 1, 2))


def test_the_oracles_agree_on_complex_truth() -> None:
    np.testing.assert_array_equal(np.asarray(jnp.asarray(_COMPLEX).astype(bool)), _TRUTH)
    assert int(jnp.count_nonzero(jnp.asarray([1j, 0, 1, 2j]))) == 3


def test_complex_to_bool_lowers_to_the_same_values() -> None:
    z = rt.asarray(_COMPLEX)
    compiled = autodiff.jit(lambda t: t.astype(bool))
    np.testing.assert_array_equal(compiled(z).numpy(), _TRUTH)


def test_a_complex_python_scalar_converts_by_both_parts() -> None:
    assert bool(rt.asarray(1j, dtype=rt.bool_).item())


# -- integer pow with a negative exponent ---------------------------------------------------------------

_SIGNED = ["int8", "int16", "int32", "int64"]
_UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]


def _powi(x: int, y: int, dtype: str) -> int:
    """PyTorch's integral pow (ATen Pow.h ``powi``): wrapping for y >= 0; for y < 0 the value
    truncated toward zero, 1 ** y == 1, (-1) ** y == +-1, and 0 for every other base."""
    if y >= 0:
        return int(np.array(pow(x, y, 2 ** (8 * np.dtype(dtype).itemsize))).astype(np.uint64).astype(dtype))
    if x == 1:
        return 1
    if x == -1:
        return -1 if y % 2 else 1
    return 0


def _pairs(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    if dtype.startswith("u"):
        xs = [0, 1, 2, 3, 5, 2, 3, 7]
        ys = [0, 3, 7, 2, 1, 64, 65, 70]
    else:
        xs = [0, 1, 2, 3, -1, -1, -2, 5, 1, 0, 2, 3, -3, 2]
        ys = [-1, -7, -2, -2, -3, -2, -3, -1, 0, 0, 64, 65, 9, 70]
    return np.array(xs, dtype), np.array(ys, dtype)


@pytest.mark.parametrize("dtype", _SIGNED + _UNSIGNED)
@pytest.mark.parametrize("policy", ["jax", "torch"])
def test_integer_pow_truncates_a_negative_exponent_array(dtype: str, policy: str) -> None:
    xs, ys = _pairs(dtype)
    want = np.array([_powi(int(a), int(b), dtype) for a, b in zip(xs, ys, strict=True)], dtype)
    with rt.policy(policy):
        x, y = rt.asarray(xs), rt.asarray(ys)
        for got in (F.pow(x, y), rt.power(x, y), x**y):
            assert got.dtype is rt.dtype(dtype)
            np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("dtype", _SIGNED + _UNSIGNED)
def test_integer_pow_wraps_like_numpy_for_any_non_negative_exponent(dtype: str) -> None:
    xs, ys = _pairs(dtype)
    keep = ys >= 0
    with np.errstate(all="ignore"):
        want = np.power(xs[keep], ys[keep])  # NumPy's exponentiation runs every bit (2 ** 64 == 0)
    for policy in POLICIES:
        with rt.policy(policy):
            np.testing.assert_array_equal(F.pow(rt.asarray(xs[keep]), rt.asarray(ys[keep])).numpy(), want)


@pytest.mark.parametrize("dtype", _SIGNED)
def test_integer_pow_with_a_negative_exponent_array_raises_under_numpy(dtype: str) -> None:
    xs, ys = _pairs(dtype)
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        np.power(xs, ys)  # the oracle
    x, y = rt.asarray(xs), rt.asarray(ys)
    short = rt.dtype(dtype).short
    pattern = rf"(?:pow|power): .*negative integer powers.*x:{short}\[14\] y:{short}\[14\]; policy 'numpy'"
    with rt.policy("numpy"):
        for call in (lambda: F.pow(x, y), lambda: x**y, lambda: rt.power(x, y)):
            with pytest.raises(OpValueError, match=pattern):
                call()
        with pytest.raises(OpValueError, match=rf"x:python-int y:{short}\[14\]; policy 'numpy'"):
            _ = 2**y


@pytest.mark.parametrize("dtype", _SIGNED + _UNSIGNED)
@pytest.mark.parametrize("policy", POLICIES)
def test_integer_pow_with_a_negative_scalar_exponent_raises_under_every_policy(dtype: str, policy: str) -> None:
    # np.power(x, -2) raises ValueError, torch.pow(x, -2) RuntimeError ("Integers to negative
    # integer powers are not allowed."), jnp.power(x, -2) TypeError (lax.integer_pow)
    x = rt.asarray(np.array([1, 2, 3], dtype))
    with pytest.raises(TypeError, match="negative"):
        jnp.power(jnp.asarray(np.array([1, 2, 3], dtype)), -2)
    with rt.policy(policy):
        calls = [lambda: x**-2, lambda: F.pow(x, -1)]
        if not dtype.startswith("u"):  # (uint64 with an int64 scalar is float64 under jax: no integer pow)
            calls.append(lambda: F.pow(x, np.array(-3, dtype)[()]))
        for call in calls:
            with pytest.raises(OpValueError, match=rf"pow: integers to negative integer powers.*policy '{policy}'"):
                call()


def test_in_place_pow_follows_the_same_rules() -> None:
    with rt.policy("numpy"):
        x = rt.asarray(np.array([2, 3], np.int32))
        with pytest.raises(OpValueError, match=r"pow_: .*negative"):
            x **= rt.asarray(np.array([-1, 2], np.int32))
        np.testing.assert_array_equal(x.numpy(), [2, 3])  # nothing was written
    with rt.policy("torch"):
        x = rt.asarray(np.array([2, -1, 1], np.int32))
        x.pow_(rt.asarray(np.array([-1, -3, -2], np.int32)))
        np.testing.assert_array_equal(x.numpy(), [0, -1, 1])


def test_float_pow_is_untouched_by_the_integer_rules() -> None:
    with rt.policy("numpy"):
        np.testing.assert_allclose(F.pow(rt.asarray(np.array([2.0, 4.0])), -2).numpy(), [0.25, 0.0625])
        np.testing.assert_allclose(F.pow(rt.asarray(np.array([2, 4])), -0.5).numpy(), [2**-0.5, 0.5])


def test_integer_pow_lowers_to_the_same_values() -> None:
    xs, ys = _pairs("int64")
    x, y = rt.asarray(xs), rt.asarray(ys)
    np.testing.assert_array_equal(autodiff.jit(F.pow)(x, y).numpy(), F.pow(x, y).numpy())
    xs8, ys8 = _pairs("int8")
    np.testing.assert_array_equal(
        autodiff.jit(F.pow)(rt.asarray(xs8), rt.asarray(ys8)).numpy(), F.pow(rt.asarray(xs8), rt.asarray(ys8)).numpy()
    )


# -- det's derivative at singular matrices ---------------------------------------------------------------


def _cofactors(a: np.ndarray) -> np.ndarray:
    """The cofactor matrix from its definition (signed minors), in float64 / complex128."""
    a = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)
    n = a.shape[0]
    out = np.zeros_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, 0), j, 1)
            out[i, j] = (-1) ** (i + j) * (np.linalg.det(minor) if minor.size else 1.0)
    return out


def _finite_differences(a: np.ndarray, h: float = 0.5) -> np.ndarray:
    """Central differences of ``np.linalg.det`` per entry: exact up to rounding, because the
    determinant is affine in each single entry (any step ``h`` gives the cofactor)."""
    a = a.astype(np.float64)
    out = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[idx] = h
        out[idx] = (np.linalg.det(a + e) - np.linalg.det(a - e)) / (2 * h)
    return out


def _singular(name: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    a = np.round(rng.standard_normal((4, 4)) * 4) / 4  # exact in float32 too
    if name == "rank3":
        a[:, 3] = a[:, 0] + a[:, 1]
    elif name == "rank3-zero-column":  # lu's zero pivot comes first, not last
        a[:, 0] = 0
    elif name == "rank2":
        a[:, 2] = a[:, 0] - a[:, 1]
        a[:, 3] = 2 * a[:, 0]
    elif name == "rank1-3x3":
        a = np.outer([1.0, 2.0, -1.0], [0.5, 1.0, 3.0])
    elif name == "zeros":
        a = np.zeros((3, 3))
    elif name == "2x2":
        a = np.array([[1.0, 2.0], [2.0, 4.0]])
    return a


_SINGULAR = ["rank3", "rank3-zero-column", "rank2", "rank1-3x3", "zeros", "2x2"]


@pytest.mark.parametrize("name", _SINGULAR)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_det_gradient_at_a_singular_matrix_is_the_cofactor_matrix(name: str, dtype: str) -> None:
    a = _singular(name)
    want = _cofactors(a)
    np.testing.assert_allclose(_finite_differences(a), want, atol=1e-12)
    tol = 1e-5 if dtype == "float32" else 1e-12
    got = autodiff.grad(F.det)(rt.asarray(a.astype(dtype))).numpy()
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, want, atol=tol * max(1.0, np.abs(a).max() ** (a.shape[0] - 1)))
    got_ns = autodiff.grad(L.det)(rt.asarray(a.astype(dtype))).numpy()
    np.testing.assert_allclose(got_ns, want, atol=tol * max(1.0, np.abs(a).max() ** (a.shape[0] - 1)))
    if name != "rank3-zero-column":  # jax.grad gives 0 there (its cofactor solve assumes the last pivot is 0)
        np.testing.assert_allclose(np.asarray(jax.grad(jnp.linalg.det)(a)), want, atol=1e-12)


def test_jax_grad_misses_the_cofactors_when_the_zero_pivot_comes_first() -> None:
    a = _singular("rank3-zero-column")
    assert np.abs(_cofactors(a)).max() > 0.1
    assert np.abs(np.asarray(jax.grad(jnp.linalg.det)(a))).max() < 1e-12  # JAX's answer, for the record


@pytest.mark.parametrize("name", ["rank3", "rank2", "generic"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_det_jvp_and_vjp_of_complex_matrices(name: str, dtype: str) -> None:
    rng = np.random.default_rng(3)
    a = (_singular(name) if name != "generic" else rng.standard_normal((4, 4))) * (1 + 0.5j)
    a[0] += 0.25j
    if name == "rank3":
        a[:, 3] = a[:, 0] + (1 - 1j) * a[:, 1]
    t = rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))
    want = _cofactors(a)
    tol = 1e-4 if dtype == "complex64" else 1e-10
    _, tangent = autodiff.jvp(F.det, (rt.asarray(a.astype(dtype)),), (rt.asarray(t.astype(dtype)),))
    np.testing.assert_allclose(complex(tangent.item()), np.sum(want * t), rtol=tol, atol=tol)
    ct = 0.5 - 0.25j
    _, pull = autodiff.vjp(F.det, rt.asarray(a.astype(dtype)))
    (got,) = pull(rt.asarray(np.array(ct, dtype)))
    # castwise's convention (PyTorch's): ct * conj(f'(a)) for a holomorphic f
    np.testing.assert_allclose(got.numpy(), ct * np.conj(want), rtol=tol, atol=tol)


def test_det_derivative_batches_jits_and_differentiates_twice() -> None:
    rng = np.random.default_rng(5)
    batch = np.stack([_singular("rank3"), _singular("rank2"), rng.standard_normal((4, 4))])
    want = np.stack([_cofactors(m) for m in batch])
    got = autodiff.grad(lambda t: F.reduce_sum(F.det(t), (0,)))(rt.asarray(batch)).numpy()
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(autodiff.vmap(autodiff.grad(F.det))(rt.asarray(batch)).numpy(), want, atol=1e-12)
    np.testing.assert_allclose(autodiff.jit(autodiff.grad(F.det))(rt.asarray(batch[0])).numpy(), want[0], atol=1e-12)
    np.testing.assert_allclose(autodiff.jit(F.det)(rt.asarray(batch)).numpy(), np.linalg.det(batch), atol=1e-12)
    generic = batch[2]
    hessian = autodiff.jacfwd(autodiff.grad(F.det))(rt.asarray(generic)).numpy()
    np.testing.assert_allclose(hessian, np.asarray(jax.hessian(jnp.linalg.det)(generic)), atol=1e-10)


# -- slogdet with an infinite pivot -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("policy", POLICIES)
def test_slogdet_of_an_infinite_pivot(dtype: str, policy: str) -> None:
    for top, sign in ((np.inf, 1.0), (-np.inf, -1.0)):
        a = np.array([[top, 1.0], [0.0, 1.0]], dtype)
        assert tuple(np.linalg.slogdet(a)) == (sign, np.inf)
        assert tuple(map(float, jnp.linalg.slogdet(a))) == (sign, np.inf)
        with rt.policy(policy):
            got = L.slogdet(rt.asarray(a))
            assert (float(got.sign.item()), float(got.logabsdet.item())) == (sign, np.inf)
            assert float(L.det(rt.asarray(a)).item()) == sign * np.inf


def test_slogdet_keeps_its_other_signs() -> None:
    for a in (np.diag([-2.0, 3.0]), np.diag([-2.0, -3.0]), np.zeros((2, 2)), np.array([[0.0, 1], [1, 0]])):
        got = L.slogdet(rt.asarray(a))
        want = np.linalg.slogdet(a)
        assert (float(got.sign.item()), float(got.logabsdet.item())) == (want.sign, want.logabsdet)


# -- memory: diag and diagonal never alias their operand -------------------------------------------------


def _diagonals(x: rt.Tensor) -> dict[str, Any]:
    return {
        "diag": lambda: rt.diag(x),
        "diag-k1": lambda: rt.diag(x, 1),
        "diagonal": lambda: rt.diagonal(x),
        "diagonal-offset": lambda: rt.diagonal(x, -1),
        "diagonal-of-transpose": lambda: rt.diagonal(x.T),
        "diagonal-empty": lambda: rt.diagonal(x, 7),
    }


@pytest.mark.parametrize("name", list(_diagonals(rt.asarray(np.eye(2)))))
def test_diag_and_diagonal_return_new_memory(name: str) -> None:
    x = rt.asarray(np.arange(12.0).reshape(3, 4))
    d = _diagonals(x)[name]()
    before = d.numpy().copy()
    assert not np.shares_memory(d.numpy(), x.numpy())
    x += 1  # a write into x never shows in d ...
    np.testing.assert_array_equal(d.numpy(), before)
    if d.size:
        d += 100  # ... nor a write into d in x
        np.testing.assert_array_equal(x.numpy(), np.arange(12.0).reshape(3, 4) + 1)


def test_a_batched_diagonal_returns_new_memory() -> None:
    x = rt.asarray(np.arange(24.0).reshape(2, 3, 4))
    for axes in ((1, 2), (0, 2), (2, 0)):
        d = rt.diagonal(x, 0, *axes)
        np.testing.assert_array_equal(d.numpy(), np.diagonal(x.numpy(), 0, *axes))
        assert not np.shares_memory(d.numpy(), x.numpy())


# -- linear algebra on empty, NaN and inf input; pivots ------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_empty_matrices(dtype: str, batch: tuple[int, ...]) -> None:
    e = np.zeros((*batch, 0, 0), dtype)
    a = rt.asarray(e)
    np.testing.assert_array_equal(L.det(a).numpy(), np.linalg.det(e))  # 1.0
    sign, logabsdet = L.slogdet(a)
    want = np.linalg.slogdet(e)
    np.testing.assert_array_equal(sign.numpy(), want.sign)
    np.testing.assert_array_equal(logabsdet.numpy(), want.logabsdet)
    assert L.inv(a).shape == np.linalg.inv(e).shape == (*batch, 0, 0)
    assert L.solve(a, rt.asarray(np.zeros((*batch, 0, 1), dtype))).shape == (*batch, 0, 1)


_NAN = np.array([[np.nan, 1.0], [0.0, 1.0]])
_INF = np.array([[np.inf, 1.0], [0.0, 1.0]])


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_svd_norms_and_eigvals_of_nan_and_inf_are_nan(dtype: str) -> None:
    for bad in (_NAN, _INF):
        a = bad.astype(dtype)
        j = jnp.asarray(a)
        for ord_ in (2, -2, "nuc"):
            assert np.isnan(float(np.asarray(jnp.linalg.norm(j, ord_))))  # the oracle
            assert np.isnan(float(L.norm(rt.asarray(a), ord_).item()))
        assert np.isnan(np.asarray(jnp.linalg.eigvals(j))).all()
        w = L.eigvals(rt.asarray(a)).numpy()
        assert np.isnan(w.real).all() and np.isnan(w.imag).all()
        assert np.isnan(L.svdvals(rt.asarray(a)).numpy()).all()
    u, s, vh = L.svd(rt.asarray(_NAN.astype(dtype)))
    assert np.isnan(s.numpy()).all() and np.isnan(u.numpy()).all() and np.isnan(vh.numpy()).all()


def test_one_bad_matrix_leaves_the_rest_of_the_batch_right() -> None:
    batch = np.stack([np.diag([3.0, 2.0]), _NAN, np.array([[1.0, 2.0], [3.0, 4.0]])])
    s = L.svdvals(rt.asarray(batch)).numpy()
    np.testing.assert_allclose(s[0], [3.0, 2.0])
    np.testing.assert_allclose(s[2], np.linalg.svd(batch[2], compute_uv=False))
    assert np.isnan(s[1]).all()
    w = L.eigvals(rt.asarray(batch)).numpy()
    np.testing.assert_allclose(np.sort_complex(w[2]), np.sort_complex(np.linalg.eigvals(batch[2])))
    assert np.isnan(w[1].real).all()


@pytest.mark.parametrize("bad", [2, 5, -1])
def test_lu_solve_refuses_out_of_range_pivots(bad: int) -> None:
    a = rt.asarray(np.array([[4.0, 3.0], [6.0, 3.0]]))
    lu, piv = L.lu_factor(a)
    b = rt.asarray(np.array([1.0, 2.0]))
    np.testing.assert_allclose(L.lu_solve((lu, piv), b).numpy(), np.linalg.solve(a.numpy(), b.numpy()))
    pivots = rt.asarray(np.array([0, bad], np.int32))
    with pytest.raises(OpValueError, match=rf"linalg\.lu_solve: piv\[1\] = {bad} .*f64\[2,2\], i32\[2\]; policy 'jax'"):
        L.lu_solve((lu, pivots), b)


def test_lax_lu_solve_refuses_a_permutation_that_is_not_one() -> None:
    packed, _, permutation = F.lu(rt.asarray(np.array([[4.0, 3.0], [6.0, 3.0]])))
    b = rt.asarray(np.ones((2, 1)))
    F.lu_solve(packed, permutation, b)
    for perm in ([0, 0], [0, 2]):
        with pytest.raises(OpValueError, match=r"lu_solve: permutation .*permutation:i32\[2\].*policy 'jax'"):
            F.lu_solve(packed, rt.asarray(np.array(perm, np.int32)), b)
