"""runtime.numpy.manipulation (docs/tensor.md, "Reshaping, indexing and products") against its oracles.

- every function x policies jax (oracle jax.numpy, x64), numpy (oracle NumPy) and torch
  (oracle PyTorch, when installed) x dtypes: result dtype, shape and values;
- mixed-dtype products promote as the policy's library does, recorded as ``convert``s;
  ``preferred_element_type`` as jax.numpy's; a refused promotion (jax-strict) records nothing;
- ``take`` / ``take_along_axis`` out-of-bounds rules (filled under jax, ``IndexError`` under
  numpy, every ``mode``), with constant and traced index tensors;
- gradients of every differentiable function against ``jax.grad`` of the jax.numpy
  equivalent (float64), JVPs against ``jax.jvp``, ``autodiff.vmap`` against ``jax.vmap``,
  recorded graphs lowered to JAX;
- the errors: each names the function, the operands and the policy, and records nothing;
- Hypothesis: random ``tensordot`` axes and ``einsum`` specs (diagonals, ``...``, broadcasting).
"""

from __future__ import annotations

import types
import zlib
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autodiff
import runtime as rt
from passes import lower_to_jax
from runtime.core import hooks
from runtime.core.graph import new_leaf, record_holding_all
from runtime.core.promotion import PromotionError
from runtime.core.shapes import ArityError, OpTypeError, ShapeError
from runtime.numpy import manipulation as _manipulation
from runtime.numpy import shared_names

#: the functions under test: runtime.numpy.manipulation's, and NumPy's dot (in shared_names, since
#: rt.lax has a dot of its own)
manipulation = types.SimpleNamespace(**vars(_manipulation), dot=shared_names.dot)

jax.config.update("jax_enable_x64", True)

POLICIES = ["jax", "numpy"]
DTYPES = ["float32", "float64", "bfloat16", "int8", "complex64", "bool"]
PRODUCT_DTYPES = ["float32", "float64", "bfloat16", "int32", "complex64"]


def _data(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    d = rt.dtype(dtype)
    if d.kind == "bool":
        return rng.random(shape) > 0.5
    if d.kind in ("int", "uint"):
        return rng.integers(0 if d.kind == "uint" else -3, 4, size=shape).astype(d.storage)
    values = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if d.kind == "complex" else 0)
    return np.asarray(values).astype(d.storage)


def _want(policy: str, call: Callable[..., Any], arrays: list[np.ndarray]) -> Any:
    """The oracle's result: NumPy's call, or jax.numpy's compiled as one program (a jitted
    call compiles once; op-by-op jax.numpy compiles every primitive, and the file would be slow)."""
    if policy != "jax":
        return call(np, *arrays)
    return jax.jit(lambda *xs: call(jnp, *xs))(*arrays)


IDX = np.array([[0, -1], [2, 1]])
ALONG = np.array([[[0, -1, 2, 1, 3]], [[3, 3, 0, -4, 1]]])  # broadcasts over axis 1 of (2, 3, 4)
ALONG_0 = np.array([[[0, 2]], [[-1, 1]], [[2, -3]], [[1, 1]]])  # (4, 1, 2) along axis 0 of (3, 3, 2)

#: name -> (the call, written once for castwise's module and the oracle's, operand shapes)
MANIPULATIONS: dict[str, tuple[Callable[..., Any], list[tuple[int, ...]]]] = {
    "moveaxis": (lambda xp, a: xp.moveaxis(a, 0, -1), [(2, 3, 4)]),
    "moveaxis_many": (lambda xp, a: xp.moveaxis(a, [0, -1], [-1, 0]), [(2, 3, 4)]),
    "swapaxes": (lambda xp, a: xp.swapaxes(a, -1, 0), [(2, 3, 4)]),
    "flip_all": (lambda xp, a: xp.flip(a), [(2, 3, 4)]),
    "flip_axes": (lambda xp, a: xp.flip(a, (0, -1)), [(2, 3, 4)]),
    "roll_flat": (lambda xp, a: xp.roll(a, 5), [(2, 3, 4)]),
    "roll_flat_shifts": (lambda xp, a: xp.roll(a, (1, 2)), [(2, 3, 4)]),
    "roll_axes": (lambda xp, a: xp.roll(a, (1, -7, 2), (0, 2, 0)), [(2, 3, 4)]),
    "roll_broadcast": (lambda xp, a: xp.roll(a, 2, (1, 2)), [(2, 3, 4)]),
    "broadcast_to": (lambda xp, a: xp.broadcast_to(a, (5, 2, 3, 4)), [(2, 1, 4)]),
    "atleast_1d": (lambda xp, a: xp.atleast_1d(a), [()]),
    "atleast_2d": (lambda xp, a: xp.atleast_2d(a), [(3,)]),
    "atleast_3d_0d": (lambda xp, a: xp.atleast_3d(a), [()]),
    "atleast_3d_1d": (lambda xp, a: xp.atleast_3d(a), [(3,)]),
    "atleast_3d_2d": (lambda xp, a: xp.atleast_3d(a), [(2, 3)]),
    "atleast_3d_3d": (lambda xp, a: xp.atleast_3d(a), [(2, 3, 4)]),
    "ravel": (lambda xp, a: xp.ravel(a), [(2, 3, 4)]),
    "vstack": (lambda xp, a, b: xp.vstack([a, b]), [(2, 3), (4, 3)]),
    "vstack_1d": (lambda xp, a, b: xp.vstack([a, b]), [(3,), (3,)]),
    "hstack": (lambda xp, a, b: xp.hstack([a, b]), [(2, 3), (2, 1)]),
    "hstack_1d": (lambda xp, a, b: xp.hstack([a, b]), [(3,), (2,)]),
    "take_axis": (lambda xp, a: xp.take(a, IDX, axis=1), [(2, 3, 4)]),
    "take_flat": (lambda xp, a: xp.take(a, IDX), [(2, 3, 4)]),
    "take_scalar": (lambda xp, a: xp.take(a, -2, axis=-1), [(2, 3, 4)]),
    "take_along_axis": (lambda xp, a: xp.take_along_axis(a, ALONG, axis=2), [(2, 3, 4)]),
    "take_along_axis_0": (lambda xp, a: xp.take_along_axis(a, ALONG_0, axis=0), [(3, 3, 2)]),
    "take_along_none": (lambda xp, a: xp.take_along_axis(a, np.array([5, -1, 0]), axis=None), [(2, 3)]),
}

#: two-operand products (and einsum); summation order may differ from the oracle's
PRODUCTS: dict[str, tuple[Callable[..., Any], list[tuple[int, ...]]]] = {
    "outer": (lambda xp, a, b: xp.outer(a, b), [(2, 3), (4,)]),
    "inner": (lambda xp, a, b: xp.inner(a, b), [(2, 3, 4), (5, 4)]),
    "inner_0d": (lambda xp, a, b: xp.inner(a, b), [(), (5, 4)]),
    "dot_vv": (lambda xp, a, b: xp.dot(a, b), [(4,), (4,)]),
    "dot_mv": (lambda xp, a, b: xp.dot(a, b), [(3, 4), (4,)]),
    "dot_vm": (lambda xp, a, b: xp.dot(a, b), [(4,), (4, 2)]),
    "dot_mm": (lambda xp, a, b: xp.dot(a, b), [(3, 4), (4, 2)]),
    "dot_nd": (lambda xp, a, b: xp.dot(a, b), [(2, 3, 4), (5, 4, 2)]),
    "dot_scalar": (lambda xp, a, b: xp.dot(a, b), [(3, 4), ()]),
    "tensordot_2": (lambda xp, a, b: xp.tensordot(a, b), [(2, 3, 4), (3, 4, 5)]),
    "tensordot_0": (lambda xp, a, b: xp.tensordot(a, b, 0), [(2, 3), (4,)]),
    "tensordot_pairs": (lambda xp, a, b: xp.tensordot(a, b, ([0, -1], [2, 0])), [(2, 3, 4), (4, 5, 2)]),
    "tensordot_ints": (lambda xp, a, b: xp.tensordot(a, b, (1, 0)), [(2, 3), (3, 4)]),
    "einsum_matmul": (lambda xp, a, b: xp.einsum("ij,jk->ik", a, b), [(2, 3), (3, 4)]),
    "einsum_implicit": (lambda xp, a, b: xp.einsum("kj,ji", a, b), [(2, 3), (3, 4)]),
    "einsum_batch": (lambda xp, a, b: xp.einsum("bij,bjk->bki", a, b), [(2, 3, 4), (2, 4, 5)]),
    "einsum_ellipsis": (lambda xp, a, b: xp.einsum("...ij,jk->...ki", a, b), [(2, 3, 4), (4, 5)]),
    "einsum_ellipsis_broadcast": (lambda xp, a, b: xp.einsum("...i,...i->...", a, b), [(2, 1, 4), (3, 4)]),
    "einsum_three": (lambda xp, a, b: xp.einsum("ij,jk,ij->ik", a, b, a), [(2, 3), (3, 4)]),
    "einsum_outer": (lambda xp, a, b: xp.einsum("i,j->ji", a, b), [(2,), (3,)]),
    "einsum_sum_one": (lambda xp, a, b: xp.einsum("ij,k->ik", a, b), [(2, 3), (4,)]),
    "einsum_trace": (lambda xp, a, b: xp.einsum("ii", a), [(3, 3), ()]),
    "einsum_diagonal": (lambda xp, a, b: xp.einsum("ii->i", a), [(3, 3), ()]),
    "einsum_diag_product": (lambda xp, a, b: xp.einsum("iij,jk->ik", a, b), [(3, 3, 2), (2, 4)]),
    "einsum_transpose": (lambda xp, a, b: xp.einsum("ijk->kij", a), [(2, 3, 4), ()]),
    "einsum_reduce": (lambda xp, a, b: xp.einsum("ijk->j", a), [(2, 3, 4), ()]),
}


def _compare(got: rt.Tensor, want: Any, dtype: str, exact: bool) -> None:
    want = np.asarray(want)
    assert got.dtype.name == np.dtype(want.dtype).name, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    g = got.numpy()
    if exact:
        np.testing.assert_array_equal(g, want)
        return
    wide = np.complex128 if want.dtype.kind == "c" else np.float64
    tol = {"bfloat16": 3e-2, "float32": 1e-5, "complex64": 1e-5}.get(got.dtype.name, 1e-12)
    if got.dtype.kind in ("int", "uint", "bool"):
        np.testing.assert_array_equal(g, want)
    else:
        np.testing.assert_allclose(g.astype(wide), want.astype(wide), rtol=tol, atol=tol)


def _rng(name: str, dtype: str) -> np.random.Generator:
    """A generator seeded by the row (crc32, not hash(): str hashes change with each process, so the
    data would differ between runs and between xdist workers)."""
    return np.random.default_rng(zlib.crc32(f"{name}/{dtype}".encode()))


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(MANIPULATIONS))
def test_manipulation_matches_the_policy_library(name: str, dtype: str, policy: str) -> None:
    call, shapes = MANIPULATIONS[name]
    rng = _rng(name, dtype)
    arrays = [_data(rng, s, dtype) for s in shapes]
    if name.startswith("take") and policy == "numpy" and "none" in name:
        pytest.skip("index 5 is out of bounds: see test_take_out_of_bounds")
    with rt.policy(policy):
        got = call(manipulation, *map(rt.asarray, arrays))
    want = _want(policy, call, arrays)
    _compare(got, want, dtype, exact=True)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("dtype", PRODUCT_DTYPES)
@pytest.mark.parametrize("name", list(PRODUCTS))
def test_product_matches_the_policy_library(name: str, dtype: str, policy: str) -> None:
    call, shapes = PRODUCTS[name]
    rng = _rng(name, dtype)
    arrays = [_data(rng, s, dtype) for s in shapes]
    with rt.policy(policy):
        got = call(manipulation, *map(rt.asarray, arrays))
    if policy == "numpy" and dtype == "bfloat16" and name.startswith("einsum"):
        # np.einsum refuses ml_dtypes' bfloat16; NumPy's float32 einsum, rounded, is the value
        want = np.asarray(call(np, *(a.astype(np.float32) for a in arrays))).astype(ml_dtypes.bfloat16)
    else:
        want = _want(policy, call, arrays)
    _compare(got, want, dtype, exact=False)


MIXED = [
    ("int8", "float32"),
    ("float32", "float64"),
    ("int32", "complex64"),
    ("uint8", "int8"),
    ("int64", "float32"),
    ("bool", "bool"),
    ("bfloat16", "float16"),
]
MIXED_CALLS = ["outer", "inner", "dot_mm", "tensordot_2", "einsum_matmul", "einsum_three"]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("pair", MIXED, ids=lambda p: f"{p[0]}-{p[1]}")
@pytest.mark.parametrize("name", MIXED_CALLS)
def test_mixed_dtypes_promote_as_the_library_does(name: str, pair: tuple[str, str], policy: str) -> None:
    call, shapes = PRODUCTS[name]
    rng = np.random.default_rng(7)
    arrays = [_data(rng, s, d) for s, d in zip(shapes, pair, strict=True)]
    if policy == "numpy" and "bfloat16" in pair:
        pytest.skip("NumPy has no bfloat16 promotion (the numpy policy refuses it)")
    if policy == "jax" and name == "einsum_three" and pair == ("int64", "float32"):
        pytest.skip("jax.numpy's own einsum refuses it (preferred_element_type float32 'narrower' than int64)")
    with rt.policy(policy):
        got = call(manipulation, *map(rt.asarray, arrays))
    want = _want(policy, call, arrays)
    _compare(got, want, pair[1], exact=False)
    if pair[0] != pair[1]:  # the promotion is recorded as a convert before the op
        with rt.policy(policy):
            graph = rt.trace(lambda a, b: call(manipulation, a, b), *map(rt.asarray, arrays))
        assert "convert" in [e.op.name for e in graph.eqns]


PREFERRED: dict[str, Callable[..., Any]] = {
    "dot": lambda xp, a, b, p: xp.dot(a, b, preferred_element_type=p),
    "dot_0d": lambda xp, a, b, p: xp.dot(a[0, 0], b, preferred_element_type=p),
    "inner": lambda xp, a, b, p: xp.inner(a, b.T, preferred_element_type=p),
    "tensordot": lambda xp, a, b, p: xp.tensordot(a, b, 1, preferred_element_type=p),
    "einsum": lambda xp, a, b, p: xp.einsum("ij,jk->ki", a, b, preferred_element_type=p),
    "einsum_sum": lambda xp, a, b, p: xp.einsum("ij->j", a, preferred_element_type=p),
    "einsum_transpose": lambda xp, a, b, p: xp.einsum("ij->ji", a, preferred_element_type=p),
}


@pytest.mark.parametrize("types", [("int8", "int32"), ("bfloat16", "float32")], ids=lambda t: f"{t[0]}-{t[1]}")
@pytest.mark.parametrize("name", list(PREFERRED))
def test_preferred_element_type_matches_jax_numpy(name: str, types: tuple[str, str]) -> None:
    """jnp's preferred_element_type: the result's dtype, accumulated in it (int8 does not wrap)."""
    rng = np.random.default_rng(9)
    operand, preferred = types
    a, b = (rng.integers(-100, 100, s).astype(rt.dtype(operand).storage) for s in ((3, 4), (4, 5)))
    got = PREFERRED[name](manipulation, rt.asarray(a), rt.asarray(b), rt.dtype(preferred))
    want = jax.jit(lambda x, y: PREFERRED[name](jnp, x, y, np.dtype(preferred)))(a, b)
    _compare(got, want, preferred, exact=preferred == "int32")


def test_take_out_of_bounds_fills_under_jax_and_raises_under_numpy() -> None:
    a = np.arange(6.0).reshape(2, 3)
    idx = np.array([[0, 3], [-4, -1]])
    got = manipulation.take(rt.asarray(a), idx, axis=1)
    np.testing.assert_array_equal(got.numpy(), np.asarray(jnp.take(a, idx, axis=1)))
    ints = manipulation.take_along_axis(rt.asarray(a.astype(np.int32)), np.array([[5], [0]]), axis=1)
    np.testing.assert_array_equal(
        ints.numpy(), np.asarray(jnp.take_along_axis(a.astype(np.int32), np.array([[5], [0]]), 1))
    )
    for policy in ("numpy", "torch"):
        with rt.policy(policy):
            with pytest.raises(IndexError, match=r"take: index 3 is out of bounds .*policy"):
                manipulation.take(rt.asarray(a), idx, axis=1)
            with pytest.raises(IndexError, match=r"take_along_axis: index 5 is out of bounds"):
                manipulation.take_along_axis(rt.asarray(a), np.array([[5], [0]]), axis=1)
        with pytest.raises(IndexError):
            np.take(a, idx, axis=1)


MODE_INDICES = np.array([-7, -1, 2, 5, 9])


@pytest.mark.parametrize("traced", [False, True], ids=["constant", "traced"])
@pytest.mark.parametrize("dtype", ["float64", "int32", "uint8"])
@pytest.mark.parametrize("mode", ["clip", "wrap", "fill"])
def test_take_modes_match_jax_numpy(mode: str, dtype: str, traced: bool) -> None:
    a = _data(np.random.default_rng(2), (3, 5), dtype)
    want = jnp.take(a, MODE_INDICES, axis=1, mode=mode)
    if traced:  # the positions are computed by recorded ops, and replay with new indices
        f = autodiff.jit(lambda t, i: manipulation.take(t, i, axis=1, mode=mode))
        f(rt.asarray(a), rt.asarray(np.zeros(5, np.int64)))
        got = f(rt.asarray(a), rt.asarray(MODE_INDICES))
    else:
        got = manipulation.take(rt.asarray(a), MODE_INDICES, axis=1, mode=mode)
    _compare(got, want, dtype, exact=True)
    if mode != "fill":
        with rt.policy("numpy"):
            got = manipulation.take(rt.asarray(a), MODE_INDICES, axis=1, mode=mode)
        want = np.take(a, MODE_INDICES, axis=1, mode=mode)  # type: ignore[call-overload]
        _compare(got, want, dtype, exact=True)


def test_take_fill_value_and_take_along_axis_clip_match_jax_numpy() -> None:
    a = np.arange(10.0).reshape(2, 5)
    got = manipulation.take(rt.asarray(a), MODE_INDICES, axis=1, mode="fill", fill_value=-1.0)
    np.testing.assert_array_equal(got.numpy(), np.asarray(jnp.take(a, MODE_INDICES, 1, mode="fill", fill_value=-1.0)))
    idx = np.broadcast_to(MODE_INDICES, (2, 5))
    for mode in ("clip", "fill"):
        got = manipulation.take_along_axis(rt.asarray(a), idx, 1, mode=mode)
        np.testing.assert_array_equal(got.numpy(), np.asarray(jnp.take_along_axis(a, idx, 1, mode=mode)))
    with rt.policy("numpy"):  # a mode asked for applies under any policy
        got = manipulation.take(rt.asarray(a), MODE_INDICES, axis=1, mode="fill")
    assert np.isnan(got.numpy()[:, [0, 3, 4]]).all()
    with pytest.raises(IndexError, match="index -7 is out of bounds.*policy 'jax'"):
        manipulation.take(rt.asarray(a), MODE_INDICES, axis=1, mode="raise")


def test_take_with_a_traced_index_tensor_replays_with_new_indices() -> None:
    a = rt.asarray(np.arange(12.0).reshape(3, 4))
    f = autodiff.jit(lambda t, i: manipulation.take(t, i, axis=1))
    for idx in (np.array([0, -1]), np.array([[3, 2], [1, -4]])):
        np.testing.assert_array_equal(f(a, rt.asarray(idx)).numpy(), np.take(a.numpy(), idx, axis=1))
    g = autodiff.jit(lambda t, i: manipulation.take_along_axis(t, i, axis=0))
    idx = np.array([[2, 0, 1, -1]])
    np.testing.assert_array_equal(g(a, rt.asarray(idx)).numpy(), np.take_along_axis(a.numpy(), idx, 0))


def test_recorded_as_ordinary_ops() -> None:
    x = rt.asarray(np.ones((2, 3, 4)))
    cases = {
        "moveaxis": (lambda t: manipulation.moveaxis(t, 0, -1), ["transpose"]),
        "flip": (lambda t: manipulation.flip(t), ["reverse"]),
        "roll": (lambda t: manipulation.roll(t, 1, 2), ["slice", "slice", "concatenate"]),
        "take": (lambda t: manipulation.take(t, [0, 1], 1), ["gather"]),
        "broadcast_to": (lambda t: manipulation.broadcast_to(t, (3, 2, 3, 4)), ["broadcast_in_dim"]),
        "tensordot": (lambda t: manipulation.tensordot(t, t, ([0, 1, 2], [0, 1, 2])), ["dot_general"]),
        "einsum": (lambda t: manipulation.einsum("ijk,ijl->kl", t, t), ["dot_general"]),
        "trace": (lambda t: manipulation.einsum("ii", t[0, :, :3]), None),
    }
    vocabulary = set(rt.ops.OPS)
    for name, (fn, expected) in cases.items():
        names = [e.op.name for e in rt.trace(fn, x).eqns]
        if expected is not None:
            assert names == expected, (name, names)
        assert set(names) <= vocabulary


# -- gradients and vmap ---------------------------------------------------------------------------

#: differentiable calls on float64: castwise's and jax.numpy's spelled once
GRADS: dict[str, tuple[Callable[..., Any], list[tuple[int, ...]]]] = {
    **{k: v for k, v in MANIPULATIONS.items()},
    **{k: v for k, v in PRODUCTS.items() if not k.endswith("_0d") and k != "dot_scalar"},
}


#: einsum rows whose second operand is unused
ONE_OPERAND = {"einsum_trace", "einsum_diagonal", "einsum_transpose", "einsum_reduce"}


def _loss(xp: Any, call: Callable[..., Any], weights: np.ndarray) -> Callable[..., Any]:
    def f(*args: Any) -> Any:
        out = call(xp, *args)
        if xp is manipulation:
            return rt.sum(rt.lax.mul(out, rt.asarray(weights)))
        return jnp.sum(out * weights)

    return f


@pytest.mark.parametrize("name", list(GRADS))
def test_gradient_matches_jax(name: str) -> None:
    call, shapes = GRADS[name]
    rng = np.random.default_rng(3)
    arrays = [_data(rng, s, "float64") for s in shapes]
    used = [0] if name in ONE_OPERAND else list(range(len(arrays)))
    out_shape = jax.eval_shape(lambda *xs: call(jnp, *xs), *arrays).shape
    weights = rng.standard_normal(out_shape)
    argnums = tuple(used) if len(used) > 1 else used[0]
    got = autodiff.grad(_loss(manipulation, call, weights), argnums=argnums)(*map(rt.asarray, arrays))
    want = jax.jit(jax.grad(_loss(jnp, call, weights), argnums=argnums))(*map(jnp.asarray, arrays))
    for g, w in zip(got if len(used) > 1 else [got], want if len(used) > 1 else [want], strict=True):
        np.testing.assert_allclose(g.numpy(), np.asarray(w), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["roll_axes", "take_along_axis", "flip_axes", "dot_nd", "einsum_diag_product"])
def test_jvp_matches_jax(name: str) -> None:
    call, shapes = GRADS[name]
    rng = np.random.default_rng(6)
    arrays = [_data(rng, s, "float64") for s in shapes]
    tangents = [_data(rng, s, "float64") for s in shapes]
    out, tan = autodiff.jvp(
        lambda *ts: call(manipulation, *ts), [*map(rt.asarray, arrays)], [*map(rt.asarray, tangents)]
    )
    want_out, want_tan = jax.jvp(lambda *ts: call(jnp, *ts), tuple(arrays), tuple(tangents))
    np.testing.assert_allclose(out.numpy(), np.asarray(want_out), rtol=1e-12)
    np.testing.assert_allclose(tan.numpy(), np.asarray(want_tan), rtol=1e-10, atol=1e-12)


def test_vmap_over_the_indices_matches_jax_vmap() -> None:
    a = np.arange(12.0).reshape(3, 4)
    idx = np.array([[0, -1], [5, 2], [-5, 3]])  # 5 and -5 are out of bounds: jax.numpy fills
    got = autodiff.vmap(lambda i: manipulation.take(rt.asarray(a), i, axis=1))(rt.asarray(idx))
    want = jax.vmap(lambda i: jnp.take(a, i, axis=1))(idx)
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))
    along = np.array([[[0], [1], [-1]], [[3], [2], [1]]])
    got = autodiff.vmap(lambda i: manipulation.take_along_axis(rt.asarray(a), i, axis=1))(rt.asarray(along))
    want = jax.vmap(lambda i: jnp.take_along_axis(a, i, axis=1))(along)
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))


@pytest.mark.parametrize("name", ["roll_axes", "take_axis", "take_along_axis", "einsum_diag_product", "dot_nd"])
def test_recorded_graph_lowers_to_jax(name: str) -> None:
    call, shapes = GRADS[name]
    arrays = [_data(np.random.default_rng(8), s, "float32") for s in shapes]
    graph = rt.trace(lambda *ts: call(manipulation, *ts), *map(rt.asarray, arrays))
    (lowered,) = jax.jit(lower_to_jax(graph))(*arrays)
    eager = call(manipulation, *map(rt.asarray, arrays))
    np.testing.assert_allclose(np.asarray(lowered), eager.numpy(), rtol=1e-5, atol=1e-6)


def test_vjp_of_complex_einsum_matches_jax() -> None:
    rng = np.random.default_rng(5)
    a, b = _data(rng, (2, 3), "complex64").astype(np.complex128), _data(rng, (3, 4), "complex64").astype(np.complex128)
    ct = _data(rng, (4, 2), "complex64").astype(np.complex128)
    _, ours = autodiff.vjp(lambda x, y: manipulation.einsum("ij,jk->ki", x, y), rt.asarray(a), rt.asarray(b))
    _, theirs = jax.vjp(lambda x, y: jnp.einsum("ij,jk->ki", x, y), a, b)
    # castwise's cotangents follow the real inner product (PyTorch's); JAX's are their conjugate
    for g, w in zip(ours(rt.asarray(ct)), theirs(np.conj(ct)), strict=True):
        np.testing.assert_allclose(np.conj(g.numpy()), np.asarray(w), rtol=1e-10)


@pytest.mark.parametrize("name", list(GRADS))
def test_vmap_matches_jax_vmap(name: str) -> None:
    call, shapes = GRADS[name]
    rng = np.random.default_rng(4)
    arrays = [_data(rng, (3, *s), "float64") for s in shapes]
    got = autodiff.vmap(lambda *ts: call(manipulation, *ts))(*map(rt.asarray, arrays))
    want = jax.jit(jax.vmap(lambda *ts: call(jnp, *ts)))(*arrays)
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-10, atol=1e-12)


# -- errors ---------------------------------------------------------------------------------------

A = np.ones((2, 3), np.float32)
B = np.ones((4, 5), np.float64)
BT = rt.asarray(B)
EMPTY = rt.asarray(np.ones((2, 0), np.float32))
NOT_INT: Any = 1.5

ERRORS: list[tuple[str, Callable[[rt.Tensor], Any], type[Exception], str]] = [
    ("moveaxis", lambda a: manipulation.moveaxis(a, 2, 0), ShapeError, "source 2 is out of bounds"),
    ("moveaxis", lambda a: manipulation.moveaxis(a, [0, 0], [0, 1]), ShapeError, "repeats an axis"),
    ("moveaxis", lambda a: manipulation.moveaxis(a, [0, 1], [0]), ShapeError, "differ in length"),
    ("swapaxes", lambda a: manipulation.swapaxes(a, 0, NOT_INT), ShapeError, "axis2 must be an int"),
    ("flip", lambda a: manipulation.flip(a, (0, -2)), ShapeError, "repeats an axis"),
    ("roll", lambda a: manipulation.roll(a, (1, 2, 3), (0, 1)), ShapeError, "do not broadcast"),
    ("roll", lambda a: manipulation.roll(a, NOT_INT, 0), ShapeError, "shift must be"),
    ("roll", lambda a: manipulation.roll(a, [], 0), ShapeError, "do not broadcast"),
    ("roll", lambda a: manipulation.roll(a, [NOT_INT]), ShapeError, "shift must be"),
    ("broadcast_to", lambda a: manipulation.broadcast_to(a, (3, 3)), ShapeError, "cannot broadcast"),
    ("broadcast_to", lambda a: manipulation.broadcast_to(a, (3,)), ShapeError, "cannot broadcast"),
    ("vstack", lambda a: manipulation.vstack([]), ArityError, "non-empty"),
    ("vstack", lambda a: manipulation.vstack([a, B]), ShapeError, "must agree"),
    ("hstack", lambda a: manipulation.hstack([a, B]), ShapeError, "must agree"),
    ("take", lambda a: manipulation.take(a, np.array([0.5]), 0), IndexError, "must be integers"),
    ("take", lambda a: manipulation.take(a, rt.asarray(np.ones(2)), 0), IndexError, "must be integers"),
    ("take", lambda a: manipulation.take(a, [0], 2), ShapeError, "out of bounds for rank 2"),
    ("take", lambda a: manipulation.take(a, [0], 0, mode="nearest"), ShapeError, "mode must be one of"),
    ("take", lambda a: manipulation.take(EMPTY, [0], 1, mode="clip"), IndexError, "the empty axis"),
    ("take", lambda a: manipulation.take(a, [0, 6], mode="raise"), IndexError, "index 6 is out of bounds"),
    ("take_along_axis", lambda a: manipulation.take_along_axis(a, [0], 1), ShapeError, "rank"),
    (
        "take_along_axis",
        lambda a: manipulation.take_along_axis(a, np.zeros((3, 1), np.int64), 1),
        ShapeError,
        "do not broadcast",
    ),
    ("inner", lambda a: manipulation.inner(a, BT), ShapeError, "must have equal sizes"),
    ("dot", lambda a: manipulation.dot(a, BT), ShapeError, "must have equal sizes"),
    ("tensordot", lambda a: manipulation.tensordot(a, BT, 3), ShapeError, "axes=3"),
    ("tensordot", lambda a: manipulation.tensordot(a, BT, 1), ShapeError, "equal sizes"),
    (
        "tensordot",
        lambda a: manipulation.tensordot(a, BT, ([0], [0, 1])),
        ShapeError,
        "different numbers",
    ),
    ("tensordot", lambda a: manipulation.tensordot(a, BT, "x"), ShapeError, "pair of axis"),
    ("einsum", lambda a: manipulation.einsum("ij,jk->ik", a), ArityError, "name 2 operands"),
    ("einsum", lambda a: manipulation.einsum("ij,jk->ik", a, BT), ShapeError, "index 'j'"),
    ("einsum", lambda a: manipulation.einsum("i1->i", a), ShapeError, "is not a letter"),
    ("einsum", lambda a: manipulation.einsum("ijk->i", a), ShapeError, "does not fit"),
    ("einsum", lambda a: manipulation.einsum("ij->k", a), ShapeError, "appears in no operand"),
    ("einsum", lambda a: manipulation.einsum("ij->ii", a), ShapeError, "repeats index"),
    ("einsum", lambda a: manipulation.einsum("i...->i", a), ShapeError, "needs '...'"),
    ("einsum", lambda a: manipulation.einsum("i->j->k", a), ShapeError, "more than one"),
    ("einsum", lambda a: manipulation.einsum("ii", a), ShapeError, "index 'i'"),
    ("einsum", lambda a: manipulation.einsum("ii,ij", np.ones((1, 2)), a), ShapeError, "repeated in one operand"),
    ("vstack", lambda a: manipulation.vstack([a, np.ones(4)]), ShapeError, "must agree"),
    ("einsum", lambda a: manipulation.einsum("ij"), ArityError, "at least one operand"),
    (
        "einsum",
        lambda a: manipulation.einsum("ij,kj", a, a, preferred_element_type=rt.float16),
        OpTypeError,
        "preferred_element_type float16 refused",
    ),
    ("dot", lambda a: manipulation.dot(a, A.T, preferred_element_type=rt.int8), OpTypeError, "refused"),
    ("inner", lambda a: manipulation.inner(a, 2.0, preferred_element_type=rt.float16), OpTypeError, "refused"),
]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", range(len(ERRORS)), ids=lambda i: f"{ERRORS[i][0]}-{i}")
def test_errors_name_the_function_operands_and_policy(case: int, policy: str) -> None:
    fn, call, cls, fragment = ERRORS[case]
    with rt.policy(policy), pytest.raises(cls) as info:
        call(rt.asarray(A))
    text = str(info.value)
    assert text.startswith(f"{fn}: ") and fragment in text and f"policy {policy!r}" in text, text
    if fragment not in ("non-empty", "at least one operand"):
        assert "f32[2, 3]" in text or "f32[2, 0]" in text, text


@pytest.mark.parametrize("case", range(len(ERRORS)), ids=lambda i: f"{ERRORS[i][0]}-{i}")
def test_errors_record_nothing(case: int) -> None:
    """Every check runs before the first op: a refused call on a tracked operand records no
    equation (counted as the recorder receives them, not only those an output reaches)."""
    _, call, cls, _ = ERRORS[case]
    recorded: list[str] = []

    def counting(op: Any, *rest: Any) -> None:
        recorded.append(op.name)
        record_holding_all(op, *rest)

    t = rt.asarray(A)
    new_leaf(t)
    with hooks.recorder_override(counting):
        rt.lax.mul(t, 2.0)  # the counter sees ops on the tracked operand
        with pytest.raises(cls):
            call(t)
    assert recorded == ["mul"]


STRICT_REFUSALS: dict[str, Callable[[rt.Tensor, rt.Tensor], Any]] = {
    "outer": lambda a, b: manipulation.outer(a, b),
    "inner": lambda a, b: manipulation.inner(a, b.T),
    "dot": lambda a, b: manipulation.dot(a, b),
    "tensordot": lambda a, b: manipulation.tensordot(a, b, 1),
    "einsum": lambda a, b: manipulation.einsum("ij,jk->ki", a, b),
    "einsum_three": lambda a, b: manipulation.einsum("ij,jk,ij->k", a, b, a),
    "vstack": lambda a, b: manipulation.vstack([a, b.T]),
    "hstack": lambda a, b: manipulation.hstack([a, b.T]),
}


@pytest.mark.parametrize("name", list(STRICT_REFUSALS))
def test_a_refused_promotion_names_the_function_and_records_nothing(name: str) -> None:
    """jax-strict promotes nothing implicitly: int8 with float32 is refused by the plan of the op
    that would promote, before any op of the function is recorded."""
    recorded: list[str] = []

    def counting(op: Any, *rest: Any) -> None:
        recorded.append(op.name)
        record_holding_all(op, *rest)

    a, b = rt.asarray(np.ones((2, 3), np.int8)), rt.asarray(np.ones((3, 2), np.float32))
    new_leaf(a)
    with rt.policy("jax-strict"), hooks.recorder_override(counting), pytest.raises(PromotionError) as info:
        STRICT_REFUSALS[name](a, b)
    fn = name.split("_")[0]
    assert str(info.value).startswith(f"{fn}: ") and "i8[2, 3]" in str(info.value), str(info.value)
    assert "policy 'jax-strict'" in str(info.value)
    assert recorded == []


def test_einsum_promotes_all_operands_at_once() -> None:
    """jax.numpy's einsum result type is result_type of all the operands, which under JAX's
    lattice is not a fold of the pairwise contractions: (u64, i64) -> f64, but (u64, i64, f32) -> f32."""
    u, i, f = np.ones((2, 2), np.uint64), np.ones((2, 2), np.int64), np.ones((2, 2), np.float32)
    got = manipulation.einsum("ij,jk,kl->il", u, i, f)
    assert got.dtype.name == np.dtype(jnp.result_type(u, i, f)).name == "float32"
    with rt.policy("numpy"):
        got = manipulation.einsum("ij,jk,kl->il", u, i, f)
    want = np.einsum("ij,jk,kl->il", u, i, f)
    assert got.dtype.name == want.dtype.name
    np.testing.assert_array_equal(got.numpy(), want)


def test_torch_policy_follows_pytorch_where_it_differs() -> None:
    x = rt.asarray(np.ones((2, 3)))
    with rt.policy("torch"):
        with pytest.raises(ShapeError, match=r"flip: torch.flip needs .*policy 'torch'"):
            manipulation.flip(x)
        with pytest.raises(ShapeError, match="torch.dot takes 1-D"):
            manipulation.dot(x, x.T)
        with pytest.raises(ShapeError, match="torch.outer takes 1-D"):
            manipulation.outer(x, x)
        assert manipulation.flip(x, 0).shape == (2, 3)
    assert manipulation.dot(x, x.T).shape == (2, 2)  # NumPy's dot under jax


TORCH_CALLS: dict[str, tuple[Callable[..., Any], Callable[..., Any], list[tuple[int, ...]]]] = {
    "moveaxis": (lambda a: manipulation.moveaxis(a, 0, -1), lambda torch, a: torch.movedim(a, 0, -1), [(2, 3, 4)]),
    "flip": (lambda a: manipulation.flip(a, (0, 2)), lambda torch, a: torch.flip(a, (0, 2)), [(2, 3, 4)]),
    "roll": (lambda a: manipulation.roll(a, 5), lambda torch, a: torch.roll(a, 5), [(2, 3, 4)]),
    "take_along": (
        lambda a: manipulation.take_along_axis(a, ALONG, 2),
        lambda torch, a: torch.take_along_dim(a, torch.as_tensor(ALONG % 4), 2),
        [(2, 3, 4)],
    ),
    "dot": (lambda a, b: manipulation.dot(a, b), lambda torch, a, b: torch.dot(a, b), [(4,), (4,)]),
    "outer": (lambda a, b: manipulation.outer(a, b), lambda torch, a, b: torch.outer(a, b), [(3,), (4,)]),
    "tensordot": (
        lambda a, b: manipulation.tensordot(a, b),
        lambda torch, a, b: torch.tensordot(a, b),
        [(2, 3, 4), (3, 4, 5)],
    ),
    "einsum": (
        lambda a, b: manipulation.einsum("bij,bjk->bik", a, b),
        lambda torch, a, b: torch.einsum("bij,bjk->bik", a, b),
        [(2, 3, 4), (2, 4, 5)],
    ),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("name", list(TORCH_CALLS))
def test_torch_policy_matches_pytorch(name: str, dtype: str) -> None:
    torch = pytest.importorskip("torch")
    ours, theirs, shapes = TORCH_CALLS[name]
    rng = np.random.default_rng(11)
    arrays = [_data(rng, s, dtype) for s in shapes]
    with rt.policy("torch"):
        got = ours(*map(rt.asarray, arrays))
    want = theirs(torch, *map(torch.as_tensor, arrays)).numpy()
    _compare(got, want, dtype, exact=False)


# -- Hypothesis: tensordot and einsum over random shapes ----------------------------------------------

SETTINGS = settings(max_examples=25, deadline=None)


@st.composite
def einsum_specs(draw: Any) -> tuple[str, list[tuple[int, ...]]]:
    """Random einsum calls: repeated letters (diagonals, traces), implicit and explicit outputs,
    and ``...`` standing for broadcast leading axes (of sizes 1 or the batch's)."""
    letters = "abcde"
    sizes = {c: draw(st.integers(1, 3)) for c in letters}
    batch = draw(st.lists(st.integers(2, 3), max_size=2))
    n_ops = draw(st.integers(1, 3))
    terms, shapes = [], []
    for _ in range(n_ops):
        term = draw(st.lists(st.sampled_from(letters), min_size=0, max_size=3))
        lead: list[int] = []
        if batch and draw(st.booleans()):
            k = draw(st.integers(0, len(batch)))
            lead = [draw(st.sampled_from([1, n])) for n in batch[len(batch) - k :]]
            term = ["...", *term]
        terms.append(term)
        shapes.append((*lead, *(sizes[c] for c in term if c != "...")))
    used = sorted({c for t in terms for c in t if c != "..."})
    out = draw(st.permutations(used).flatmap(lambda p: st.integers(0, len(p)).map(lambda k: p[:k])))
    dots = any("..." in t for t in terms)
    explicit = draw(st.booleans())
    spec = ",".join("".join(t) for t in terms)
    if explicit:
        spec += "->" + ("..." if dots else "") + "".join(out)
    return spec, shapes


@SETTINGS
@given(einsum_specs(), st.sampled_from(["float64", "int32"]))
def test_einsum_random_specs_match_jax(spec_shapes: tuple[str, list[tuple[int, ...]]], dtype: str) -> None:
    spec, shapes = spec_shapes
    rng = np.random.default_rng(0)
    arrays = [_data(rng, s, dtype) for s in shapes]
    got = manipulation.einsum(spec, *map(rt.asarray, arrays))
    want = jnp.einsum(spec, *arrays)
    _compare(got, want, dtype, exact=False)


@SETTINGS
@given(st.data())
def test_tensordot_random_axes_match_numpy(data: Any) -> None:
    rank_a, rank_b = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))
    k = data.draw(st.integers(0, min(rank_a, rank_b)))
    pa = data.draw(st.permutations(range(rank_a)))[:k]
    pb = data.draw(st.permutations(range(rank_b)))[:k]
    sizes = [data.draw(st.integers(1, 3)) for _ in range(k)]
    shape_a = [data.draw(st.integers(1, 3)) for _ in range(rank_a)]
    shape_b = [data.draw(st.integers(1, 3)) for _ in range(rank_b)]
    for i, j, n in zip(pa, pb, sizes, strict=True):
        shape_a[i] = shape_b[j] = n
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    axes = (list(pa), [j - rank_b if j % 2 else j for j in pb])  # some negative
    with rt.policy("numpy"):
        got = manipulation.tensordot(rt.asarray(a), rt.asarray(b), axes)
    _compare(got, np.tensordot(a, b, axes), "float64", exact=False)
