"""``jacfwd``, ``jacrev`` and ``hessian`` against JAX on random inputs, in f32/f64/c128.

Real functions R^n -> R^m: jacfwd == jacrev == jax.jacfwd == jax.jacrev.
Complex (castwise's reverse mode is PyTorch's convention): for a holomorphic
f, jacfwd == jax.jacfwd(holomorphic=True) and jacrev == its conjugate; for a
real-valued f of complex inputs, jacrev's rows are castwise's ``grad``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from autodiff.pytree import tree_flatten, tree_map  # noqa: E402
from runtime.core import lax as F  # noqa: E402
from runtime.core.tensor import Tensor  # noqa: E402
from tests import jax_oracles  # noqa: E402
from tests.autodiff.tree_helpers import REAL, close, random, trees_close  # noqa: E402

# R^n -> R^m: a matrix, a nonlinearity and a coupling term
M = np.random.default_rng(7).standard_normal((4, 3))


def cw_f(x: Tensor) -> Tensor:
    m = rt.asarray(M, x.dtype)  # the dtype, not x.numpy(): x may be traced (jit), which has no value
    y = F.matmul(m, x)
    return F.add(F.sin(y), F.mul(y, F.reduce_sum(F.mul(x, x), (0,))))


def jax_f(x: Any) -> Any:
    y = jnp.asarray(M.astype(x.dtype)) @ x
    return jnp.sin(y) + y * jnp.sum(x * x)


@pytest.mark.parametrize("dtype", REAL, ids=lambda d: np.dtype(d).name)
def test_jacfwd_equals_jacrev_equals_jax(dtype: Any) -> None:
    x = random(np.random.default_rng(0), (3,), dtype)
    fwd = autodiff.jacfwd(cw_f)(rt.asarray(x))
    rev = autodiff.jacrev(cw_f)(rt.asarray(x))
    with jax.enable_x64(True):
        want_fwd = jax_oracles.jitted(jax.jacfwd(jax_f))(jnp.asarray(x))
        want_rev = jax_oracles.jitted(jax.jacrev(jax_f))(jnp.asarray(x))
    assert fwd.shape == rev.shape == (4, 3)
    close(fwd.numpy(), want_fwd, dtype)
    close(rev.numpy(), want_rev, dtype)
    close(fwd.numpy(), rev.numpy(), dtype)


def cw_holo(z: Tensor) -> Tensor:
    m = rt.asarray(M.astype(np.complex128))
    return F.mul(F.exp(F.matmul(m, z)), F.reduce_sum(F.mul(z, z), (0,)))


def jax_holo(z: Any) -> Any:
    return jnp.exp(jnp.asarray(M.astype(np.complex128)) @ z) * jnp.sum(z * z)


def test_complex_jacobians_follow_the_convention() -> None:
    z = random(np.random.default_rng(1), (3,), np.complex128)
    fwd = autodiff.jacfwd(cw_holo)(rt.asarray(z))
    rev = autodiff.jacrev(cw_holo)(rt.asarray(z))
    with jax.enable_x64(True):
        want = jax_oracles.jitted(jax.jacfwd(jax_holo, holomorphic=True))(jnp.asarray(z))
        want_rev = jax_oracles.jitted(jax.jacrev(jax_holo, holomorphic=True))(jnp.asarray(z))
    close(fwd.numpy(), want, np.complex128)
    close(rev.numpy(), np.conj(want_rev), np.complex128)  # castwise's reverse mode: the conjugate

    # a real-valued function of a complex input: jacrev's row is castwise's grad (conj of jax.grad)
    def loss(v: Tensor) -> Tensor:
        return F.reshape(F.reduce_sum(F.real(F.mul(F.sin(v), F.conj(v))), (0,)), (1,))

    row = autodiff.jacrev(loss)(rt.asarray(z))
    g = autodiff.grad(lambda v: F.reshape(loss(v), ()))(rt.asarray(z))
    with jax.enable_x64(True):
        jax_g = jax_oracles.jitted(jax.grad(lambda v: jnp.sum(jnp.real(jnp.sin(v) * jnp.conj(v)))))(jnp.asarray(z))
    close(row.numpy()[0], g.numpy(), np.complex128)
    close(g.numpy(), np.conj(np.asarray(jax_g)), np.complex128)
    with pytest.raises(TypeError, match="output leaf 0 is complex but an input is real: .* use jacfwd"):
        autodiff.jacrev(lambda x: F.mul(x, rt.asarray(np.array(1j))))(rt.asarray(np.ones(2)))


@pytest.mark.parametrize("dtype", [*REAL, np.complex128], ids=lambda d: np.dtype(d).name)
def test_pytree_inputs_outputs_and_argnums(dtype: Any) -> None:
    rng = np.random.default_rng(2)
    params = {"a": random(rng, (2,), dtype), "b": [random(rng, (2, 2), dtype)]}
    y = random(rng, (2,), dtype)

    def cw(p: Any, v: Tensor) -> Any:
        return {"u": F.mul(F.sin(p["a"]), v), "w": F.matmul(p["b"][0], F.mul(p["a"], v))}

    def jx(p: Any, v: Any) -> Any:
        return {"u": jnp.sin(p["a"]) * v, "w": p["b"][0] @ (p["a"] * v)}

    holomorphic = {"holomorphic": True} if np.dtype(dtype).kind == "c" else {}
    args_cw = (tree_map(rt.asarray, params), rt.asarray(y))
    for argnums in (0, (0, 1), 1):
        fwd = autodiff.jacfwd(cw, argnums=argnums)(*args_cw)
        rev = autodiff.jacrev(cw, argnums=argnums)(*args_cw)
        with jax.enable_x64(True):
            args_jx = (tree_map(jnp.asarray, params), jnp.asarray(y))
            want_fwd = jax_oracles.jitted(jax.jacfwd(jx, argnums=argnums, **holomorphic))(*args_jx)
            want_rev = jax_oracles.jitted(jax.jacrev(jx, argnums=argnums, **holomorphic))(*args_jx)
        trees_close(fwd, want_fwd, dtype)
        trees_close(rev, want_rev, dtype, conj=np.dtype(dtype).kind == "c")


def test_jacobians_with_has_aux() -> None:
    x = rt.asarray(np.array([0.3, -0.4, 1.1]))
    for jac in (autodiff.jacfwd, autodiff.jacrev):
        j, aux = jac(lambda v: (F.sin(v), {"sq": F.mul(v, v)}), has_aux=True)(x)
        np.testing.assert_allclose(j.numpy(), np.diag(np.cos(x.numpy())))
        np.testing.assert_allclose(aux["sq"].numpy(), x.numpy() ** 2)


def cw_loss(x: Tensor) -> Tensor:
    m = rt.asarray(M.astype(x.numpy().dtype))
    y = F.matmul(m, x)
    return F.reduce_sum(F.add(F.tanh(y), F.mul(F.mul(y, y), F.sin(y))), (0,))


def jax_loss(x: Any) -> Any:
    y = jnp.asarray(M.astype(x.dtype)) @ x
    return jnp.sum(jnp.tanh(y) + y * y * jnp.sin(y))


@pytest.mark.parametrize("dtype", REAL, ids=lambda d: np.dtype(d).name)
def test_hessian_of_a_scalar_loss(dtype: Any) -> None:
    x = random(np.random.default_rng(3), (3,), dtype)
    h = autodiff.hessian(cw_loss)(rt.asarray(x))
    with jax.enable_x64(True):
        want = jax_oracles.jitted(jax.hessian(jax_loss))(jnp.asarray(x))
    close(h.numpy(), want, dtype)
    close(h.numpy(), h.numpy().T, dtype)


def test_hessian_of_a_real_loss_of_complex_input() -> None:
    # jax.hessian needs holomorphic=True for complex inputs, which a real loss is not. Under
    # castwise's convention hessian(f) = jacfwd(grad(f)): column j is the derivative of castwise's
    # gradient (the conjugate of jax.grad's) along the real unit direction e_j.
    z = random(np.random.default_rng(4), (3,), np.complex128)

    def cw(v: Tensor) -> Tensor:
        m = rt.asarray(M.astype(np.complex128))
        y = F.matmul(m, v)
        return F.reduce_sum(F.real(F.mul(F.mul(y, F.conj(y)), F.sin(y))), (0,))

    def jx(v: Any) -> Any:
        y = jnp.asarray(M.astype(np.complex128)) @ v
        return jnp.sum(jnp.real(y * jnp.conj(y) * jnp.sin(y)))

    h = autodiff.hessian(cw)(rt.asarray(z))
    with jax.enable_x64(True):
        columns = [
            jax_oracles.jvp(jax.grad(jx), (jnp.asarray(z),), (jnp.asarray(np.eye(3)[j].astype(np.complex128)),))[1]
            for j in range(3)
        ]
    close(h.numpy(), np.conj(np.stack([np.asarray(c) for c in columns], axis=1)), np.complex128)


def test_hessian_with_pytree_argument_and_argnums() -> None:
    rng = np.random.default_rng(5)
    p = {"x": random(rng, (2,), np.float64), "y": random(rng, (), np.float64)}

    def cw(q: Any, s: Tensor) -> Tensor:
        return F.mul(F.reduce_sum(F.mul(F.sin(q["x"]), q["y"]), (0,)), s)

    def jx(q: Any, s: Any) -> Any:
        return jnp.sum(jnp.sin(q["x"]) * q["y"]) * s

    h = autodiff.hessian(cw, argnums=(0, 1))(tree_map(rt.asarray, p), rt.asarray(np.array(1.3)))
    with jax.enable_x64(True):
        want = jax_oracles.jitted(jax.hessian(jx, argnums=(0, 1)))(tree_map(jnp.asarray, p), jnp.asarray(1.3))
    trees_close(h, want, np.float64)


# -- built on vmap, on random R^n -> R^m functions ------------------------------------------------------

SHAPES = [((), (4,)), ((5,), ()), ((2, 3), (3, 2)), ((7,), (5,)), ((0,), (2,))]


def cw_mixed(x: Tensor, m: Tensor) -> Tensor:
    """R^n -> R^m for any shapes: a dense map of x, a nonlinearity and a coupling term."""
    y = F.reshape(F.matmul(m, F.reshape(x, (x.size,))), m.shape[:1])
    return F.add(F.tanh(y), F.mul(y, F.reduce_sum(F.mul(F.sin(x), x), tuple(range(x.ndim)))))


def jax_mixed(x: Any, m: Any) -> Any:
    y = m @ x.reshape(-1)
    return jnp.tanh(y) + y * jnp.sum(jnp.sin(x) * x)


@pytest.mark.parametrize("dtype", [*REAL, np.complex128], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("in_shape,out_shape", SHAPES, ids=[f"{i}->{o}" for i, o in SHAPES])
def test_random_rn_to_rm_jacobians_match_jax(in_shape: tuple[int, ...], out_shape: tuple[int, ...], dtype: Any) -> None:
    rng = np.random.default_rng(abs(hash((in_shape, out_shape))) % 2**32)
    size_in, size_out = int(np.prod(in_shape)), int(np.prod(out_shape))
    x, m = random(rng, in_shape, dtype) * 0.5, random(rng, (size_out, size_in), dtype) * 0.5

    def cw(v: Tensor) -> Tensor:
        return F.reshape(cw_mixed(v, rt.asarray(m)), out_shape)

    def jx(v: Any) -> Any:
        return jax_mixed(v, jnp.asarray(m)).reshape(out_shape)

    complex_ = np.dtype(dtype).kind == "c"
    fwd = autodiff.jacfwd(cw)(rt.asarray(x))
    rev = autodiff.jacrev(cw)(rt.asarray(x))
    with jax.enable_x64(True):
        want_fwd = jax_oracles.jitted(jax.jacfwd(jx, holomorphic=complex_))(jnp.asarray(x))
        want_rev = jax_oracles.jitted(jax.jacrev(jx, holomorphic=complex_))(jnp.asarray(x))
    assert fwd.shape == rev.shape == out_shape + in_shape
    close(fwd.numpy(), want_fwd, dtype)
    close(rev.numpy(), np.conj(want_rev) if complex_ else want_rev, dtype)
    close(rev.numpy(), np.conj(fwd.numpy()) if complex_ else fwd.numpy(), dtype)


def test_one_batched_pass_per_leaf_whatever_the_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """jacfwd / jacrev are vmap of the JVP / VJP over the basis: the ops they execute do not grow
    with the number of basis vectors (a Python loop over them would run every op n times)."""
    from tests.autodiff.rule_helpers import counting_ops

    counts = {}
    for n in (3, 24):
        m = rt.asarray(np.random.default_rng(n).standard_normal((n, n)))

        def f(v: Tensor, m: Tensor = m) -> Tensor:
            return F.mul(F.sin(F.matmul(m, v)), F.reduce_sum(F.mul(v, v), (0,)))

        x = rt.asarray(np.random.default_rng(0).standard_normal(n))
        for name, jac in (("jacfwd", autodiff.jacfwd), ("jacrev", autodiff.jacrev)):
            with counting_ops(monkeypatch) as names:
                jac(f)(x)
            counts[name, n] = len(names)
    assert counts["jacfwd", 3] == counts["jacfwd", 24], counts
    assert counts["jacrev", 3] == counts["jacrev", 24], counts


@pytest.mark.parametrize("dtype", REAL, ids=lambda d: np.dtype(d).name)
def test_jacobians_compose_with_jit_vmap_and_grad(dtype: Any) -> None:
    rng = np.random.default_rng(9)
    xs = random(rng, (4, 3), dtype)
    x = xs[0]
    with jax.enable_x64(True):
        want = jax_oracles.jitted(jax.jacrev(jax_f))(jnp.asarray(x))
        want_per = jax_oracles.jitted(jax.vmap(jax.jacfwd(jax_f)))(jnp.asarray(xs))
        want_g = jax_oracles.jitted(jax.grad(lambda v: jnp.sum(jnp.sin(jax.jacrev(jax_f)(v)))))(jnp.asarray(x))
    jitted = autodiff.jit(autodiff.jacrev(cw_f))
    close(jitted(rt.asarray(x)).numpy(), want, dtype)
    close(jitted(rt.asarray(x)).numpy(), want, dtype)
    close(autodiff.vmap(autodiff.jacfwd(cw_f))(rt.asarray(xs)).numpy(), want_per, dtype)
    g = autodiff.grad(lambda v: F.reduce_sum(F.sin(autodiff.jacrev(cw_f)(v)), (0, 1)))(rt.asarray(x))
    close(g.numpy(), want_g, dtype)


@pytest.mark.parametrize("dtype", [*REAL, np.complex128], ids=lambda d: np.dtype(d).name)
def test_has_aux_jacobians_and_hessian_match_jax(dtype: Any) -> None:
    rng = np.random.default_rng(10)
    x = random(rng, (3,), dtype)
    complex_ = np.dtype(dtype).kind == "c"

    def cw(v: Tensor) -> Any:
        y = cw_f(v)
        return y, {"y": y, "n": F.reduce_sum(F.mul(v, v), (0,))}

    def jx(v: Any) -> Any:
        y = jax_f(v)
        return y, {"y": y, "n": jnp.sum(v * v)}

    with jax.enable_x64(True):
        # compiled whole: eager jacfwd/jacrev/hessian compile each primitive of the derivative program
        want_fwd, want_aux = jax_oracles.jitted(jax.jacfwd(jx, has_aux=True, holomorphic=complex_))(jnp.asarray(x))
        want_rev, _ = jax_oracles.jitted(jax.jacrev(jx, has_aux=True, holomorphic=complex_))(jnp.asarray(x))
    for jac, want in ((autodiff.jacfwd, want_fwd), (autodiff.jacrev, np.conj(want_rev) if complex_ else want_rev)):
        j, aux = jac(cw, has_aux=True)(rt.asarray(x))
        close(j.numpy(), want, dtype)
        trees_close(aux, want_aux, dtype)
        assert all(leaf.node is None for leaf in tree_flatten(aux)[0])  # aux carries no derivative
    if complex_:
        return  # jax.hessian of a real loss of complex inputs is not defined (holomorphic only)

    def cw_l(v: Tensor) -> Any:
        return cw_loss(v), {"v": F.sin(v)}

    def jx_l(v: Any) -> Any:
        return jax_loss(v), {"v": jnp.sin(v)}

    h, aux = autodiff.hessian(cw_l, has_aux=True)(rt.asarray(x))
    with jax.enable_x64(True):
        want_h, want_aux = jax_oracles.jitted(jax.hessian(jx_l, has_aux=True))(jnp.asarray(x))
    close(h.numpy(), want_h, dtype)
    trees_close(aux, want_aux, dtype)


@pytest.mark.parametrize("dtype", REAL, ids=lambda d: np.dtype(d).name)
def test_second_order_jacobians_in_every_combination(dtype: Any) -> None:
    """jacfwd and jacrev of each other (vmap of a JVP / VJP of a batched pass) against JAX's."""
    x = random(np.random.default_rng(11), (3,), dtype)
    for outer, jax_outer in ((autodiff.jacfwd, jax.jacfwd), (autodiff.jacrev, jax.jacrev)):
        for inner, jax_inner in ((autodiff.jacfwd, jax.jacfwd), (autodiff.jacrev, jax.jacrev)):
            got = outer(inner(cw_f))(rt.asarray(x))
            with jax.enable_x64(True):
                want = jax.jit(jax_outer(jax_inner(jax_f)))(jnp.asarray(x))  # (one compile, not one per op)
            assert got.shape == (4, 3, 3)
            close(got.numpy(), want, dtype)
