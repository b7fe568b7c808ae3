"""Pytrees through every transform, and ``has_aux``, against the same computations in JAX.

Arguments and results are nested tuples, lists, dicts, namedtuples and None;
``argnums`` is an int or a tuple; a registered user container is a node; a
leaf that is not an array is reported with its path. JAX (x64 on) is the
oracle: castwise's reverse mode is PyTorch's convention, so a complex
gradient is compared with the conjugate of ``jax.grad``'s.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from autodiff.pytree import leaf_paths, register_pytree_node, tree_flatten, tree_map, tree_unflatten  # noqa: E402
from autodiff.testing import check_against_jax, check_grads  # noqa: E402
from runtime.core import lax as F  # noqa: E402
from runtime.core.tensor import Tensor  # noqa: E402
from tests import jax_oracles  # noqa: E402
from tests.autodiff.tree_helpers import DTYPES, close, random, to_tensors, trees_close  # noqa: E402

# -- the MLP with dict parameters ------------------------------------------------------------


def mlp_params(rng: np.random.Generator, dtype: Any) -> dict[str, Any]:
    return {
        "layers": [
            {"w": random(rng, (4, 5), dtype), "b": random(rng, (5,), dtype)},
            {"w": random(rng, (5, 3), dtype), "b": random(rng, (3,), dtype)},
        ],
        "scale": random(rng, (), dtype),
    }


def cw_loss(params: dict[str, Any], x: Tensor) -> Tensor:
    h = x
    for i, layer in enumerate(params["layers"]):
        z = F.matmul(h, layer["w"])
        h = F.add(z, F.broadcast_in_dim(layer["b"], z.shape, (1,)))
        if i == 0:
            h = F.tanh(h)
    out = F.mul(h, params["scale"])
    square = F.mul(out, F.conj(out))
    return F.reduce_sum(F.real(square) if square.dtype.kind == "complex" else square, (0, 1))


def jax_loss(params: dict[str, Any], x: Any) -> Any:
    h = x
    for i, layer in enumerate(params["layers"]):
        h = h @ layer["w"] + layer["b"]
        if i == 0:
            h = jnp.tanh(h)
    out = h * params["scale"]
    return jnp.sum(jnp.real(out * jnp.conj(out)))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_mlp_dict_parameters_grad_matches_jax(dtype: Any) -> None:
    rng = np.random.default_rng(0)
    params, x = mlp_params(rng, dtype), random(rng, (2, 4), dtype)
    value, grads = autodiff.value_and_grad(cw_loss)(to_tensors(params), rt.asarray(x))
    with jax.enable_x64(True):
        want_value, want = jax_oracles.jitted(jax.value_and_grad(jax_loss))(
            tree_map(jnp.asarray, params), jnp.asarray(x)
        )
    close(value.numpy(), want_value, dtype)
    # the gradient is a dict shaped like the parameters; complex: PyTorch's convention, conj of JAX's
    assert isinstance(grads, dict) and isinstance(grads["layers"], list)
    trees_close(grads, want, dtype, conj=np.dtype(dtype).kind == "c")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_tuple_argnums_gives_a_tuple_of_trees(dtype: Any) -> None:
    rng = np.random.default_rng(1)
    params, x = mlp_params(rng, dtype), random(rng, (2, 4), dtype)
    grads = autodiff.grad(cw_loss, argnums=(0, 1))(to_tensors(params), rt.asarray(x))
    with jax.enable_x64(True):
        want = jax_oracles.jitted(jax.grad(jax_loss, argnums=(0, 1)))(tree_map(jnp.asarray, params), jnp.asarray(x))
    assert isinstance(grads, tuple) and len(grads) == 2
    trees_close(grads, want, dtype, conj=np.dtype(dtype).kind == "c")
    # a negative argnums counts from the end, as in JAX
    g_x = autodiff.grad(cw_loss, argnums=-1)(to_tensors(params), rt.asarray(x))
    trees_close(g_x, want[1], dtype, conj=np.dtype(dtype).kind == "c")


Point = namedtuple("Point", ["x", "y"])


def test_nested_containers_namedtuples_and_none_through_vjp_and_jvp() -> None:
    rng = np.random.default_rng(2)
    tree = {"p": Point(random(rng, (3,), np.float64), random(rng, (2,), np.float64)), "n": None,
            "l": [random(rng, (2, 2), np.float64)]}  # fmt: skip

    def ours(t: Any) -> Any:
        return {"s": F.mul(F.sin(t["p"].x), 2.0), "pair": (F.reduce_sum(t["l"][0], (0,)), None), "y": t["p"].y}

    def theirs(t: Any) -> Any:
        return {"s": jnp.sin(t["p"].x) * 2.0, "pair": (jnp.sum(t["l"][0], 0), None), "y": t["p"].y}

    check_against_jax(ours, theirs, [tree])
    # the output keeps its containers: dict, tuple with None, namedtuple in the cotangent
    out, vjp_fn = autodiff.vjp(ours, to_tensors(tree))
    assert out["pair"][1] is None
    ct = tree_map(lambda o: rt.asarray(np.ones(o.shape)), out)
    (g,) = vjp_fn(ct)
    assert isinstance(g["p"], Point) and g["n"] is None and isinstance(g["l"], list)
    np.testing.assert_allclose(g["p"].x.numpy(), 2 * np.cos(tree["p"].x))
    np.testing.assert_array_equal(g["l"][0].numpy(), np.ones((2, 2)))
    _, t_out = autodiff.jvp(ours, (to_tensors(tree),), (tree_map(lambda a: rt.asarray(np.ones_like(a)), tree),))
    np.testing.assert_allclose(t_out["s"].numpy(), 2 * np.cos(tree["p"].x))


def test_linearize_takes_and_returns_pytrees() -> None:
    x = {"a": rt.asarray(np.array([0.1, 0.2])), "b": [rt.asarray(np.array(1.5))]}
    _, f_jvp = autodiff.linearize(lambda t: (F.exp(t["a"]), F.mul(t["b"][0], t["a"])), x)
    t1 = f_jvp({"a": rt.asarray(np.array([1.0, 0.0])), "b": [rt.asarray(np.array(0.0))]})
    np.testing.assert_allclose(t1[0].numpy(), [np.exp(0.1), 0.0])
    np.testing.assert_allclose(t1[1].numpy(), [1.5, 0.0])
    t2 = f_jvp({"a": rt.asarray(np.zeros(2)), "b": [rt.asarray(np.array(1.0))]})
    np.testing.assert_allclose(t2[1].numpy(), [0.1, 0.2])


class Pair:
    """A user container: registered, it is a node; its leaves are differentiated."""

    def __init__(self, first: Any, second: Any) -> None:
        self.first, self.second = first, second


register_pytree_node(Pair, lambda p: ((p.first, p.second), None), lambda _, children: Pair(*children))


def test_registered_user_container() -> None:
    p = Pair(rt.asarray(np.array([1.0, 2.0])), rt.asarray(np.array(3.0)))
    g = autodiff.grad(lambda q: F.reduce_sum(F.mul(q.first, q.second), (0,)))(p)
    assert isinstance(g, Pair)
    np.testing.assert_array_equal(g.first.numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(g.second.numpy(), 3.0)
    leaves, treedef = tree_flatten(p)
    assert len(leaves) == 2 and isinstance(tree_unflatten(treedef, leaves), Pair)


def test_a_leaf_that_is_not_an_array_is_named_by_its_path() -> None:
    params = {"w": [rt.asarray(np.ones(2)), "oops"], "b": rt.asarray(np.zeros(2))}

    def loss(p: Any) -> Tensor:
        return F.reduce_sum(p["b"], (0,))

    with pytest.raises(TypeError, match=r"grad: argument 0, leaf \['w'\]\[1\] is a str"):
        autodiff.grad(loss)(params)
    with pytest.raises(TypeError, match=r"vjp: argument 1, leaf \['w'\]\[1\] is a str"):
        autodiff.vjp(lambda a, p: a, rt.asarray(1.0), params)
    with pytest.raises(TypeError, match=r"jit: argument 0, leaf \['w'\]\[1\] is a str"):
        autodiff.jit(loss)(params)
    # an integer leaf among the differentiated ones: named too
    ints = {"w": rt.asarray(np.ones(2)), "k": rt.asarray(np.array([1, 2]))}
    with pytest.raises(autodiff.NonDifferentiableInputError, match=r"argument 0, leaf \['k'\] has dtype int64"):
        autodiff.grad(lambda p: F.reduce_sum(p["w"], (0,)))(ints)
    # an argument that is not differentiated may hold anything (as in JAX)
    g = autodiff.grad(lambda x, cfg: F.mul(x, cfg["scale"]))(rt.asarray(2.0), {"scale": 3.0, "name": "run"})
    assert g.item() == 3.0
    assert leaf_paths({"w": [1, 2]})[0] == ["['w'][0]", "['w'][1]"]


def test_jit_takes_and_returns_pytrees() -> None:
    calls = []

    def step(params: Any, x: Tensor) -> Any:
        calls.append(1)
        g = autodiff.grad(cw_loss)(params, x)
        return {"grads": g, "loss": cw_loss(params, x), "nothing": None}

    rng = np.random.default_rng(3)
    params, x = mlp_params(rng, np.float64), random(rng, (2, 4), np.float64)
    jitted = autodiff.jit(step)
    got = jitted(to_tensors(params), rt.asarray(x))
    again = jitted(to_tensors(params), rt.asarray(x))
    assert jitted.traces == 1 and got["nothing"] is None
    with jax.enable_x64(True):
        want = jax_oracles.jitted(jax.grad(jax_loss))(tree_map(jnp.asarray, params), jnp.asarray(x))
    trees_close(got["grads"], want, np.float64)
    trees_close(again["grads"], want, np.float64)
    # a different structure is a different signature
    jitted({"layers": params["layers"][:1], "scale": params["scale"]}, x)
    assert jitted.traces == 2


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_has_aux_returning_a_dict(dtype: Any) -> None:
    rng = np.random.default_rng(4)
    params, x = mlp_params(rng, dtype), random(rng, (2, 4), dtype)
    conj = np.dtype(dtype).kind == "c"

    def cw(p: Any, v: Tensor) -> Any:
        loss = cw_loss(p, v)
        return loss, {"loss": loss, "first": F.tanh(F.matmul(v, p["layers"][0]["w"]))}

    def jx(p: Any, v: Any) -> Any:
        loss = jax_loss(p, v)
        return loss, {"loss": loss, "first": jnp.tanh(v @ p["layers"][0]["w"])}

    p_cw, p_jx = to_tensors(params), None
    with jax.enable_x64(True):
        p_jx = tree_map(jnp.asarray, params)
        tangent = tree_map(lambda a: random(rng, a.shape, dtype), params)

        def references(p: Any, v: Any, t: Any) -> Any:
            """JAX's value_and_grad, vjp and jvp with has_aux: one compiled program (an MLP's
            derivative programs compile an executable per primitive eagerly)."""
            value_aux, grad = jax.value_and_grad(jx, has_aux=True)(p, v)
            out, pullback, aux2 = jax.vjp(lambda q: jx(q, v), p, has_aux=True)
            (ct,) = pullback(jnp.ones_like(out))
            _, tangent_out, _ = jax.jvp(lambda q: jx(q, v), (p,), (t,), has_aux=True)
            return value_aux, grad, aux2, ct, tangent_out

        (want_v, want_aux), want_g, want_aux2, want_ct, want_t = jax_oracles.jitted(references)(
            p_jx, jnp.asarray(x), tree_map(jnp.asarray, tangent)
        )

    (value, aux), g = autodiff.value_and_grad(cw, has_aux=True)(p_cw, rt.asarray(x))
    close(value.numpy(), want_v, dtype)
    trees_close(aux, want_aux, dtype)
    trees_close(g, want_g, dtype, conj=conj)
    # aux comes back cut from the recording (JAX's aux carries no derivative)
    assert all(leaf.node is None for leaf in tree_flatten(aux)[0])

    g2, aux2 = autodiff.grad(cw, has_aux=True)(p_cw, rt.asarray(x))
    trees_close(g2, want_g, dtype, conj=conj)
    trees_close(aux2, want_aux, dtype)

    out, vjp_fn, aux3 = autodiff.vjp(lambda p: cw(p, rt.asarray(x)), p_cw, has_aux=True)
    trees_close(aux3, want_aux2, dtype)
    (ct,) = vjp_fn(rt.asarray(np.ones(out.shape, out.numpy().dtype)))
    trees_close(ct, want_ct, dtype, conj=conj)

    _, t_out, aux4 = autodiff.jvp(lambda p: cw(p, rt.asarray(x)), (p_cw,), (to_tensors(tangent),), has_aux=True)
    close(t_out.numpy(), want_t, dtype)
    trees_close(aux4, want_aux, dtype)


def test_has_aux_requires_a_pair() -> None:
    with pytest.raises(TypeError, match=r"has_aux=True: the function must return a pair"):
        autodiff.grad(lambda x: F.reduce_sum(x, (0,)), has_aux=True)(rt.asarray(np.ones(2)))


def test_check_grads_and_check_against_jax_take_pytrees() -> None:
    rng = np.random.default_rng(5)
    params, x = mlp_params(rng, np.float64), random(rng, (2, 4), np.float64)
    check_grads(cw_loss, [params, x], order=2)
    check_against_jax(cw_loss, jax_loss, [params, x])

    def wrong(p: Any, v: Any) -> Any:  # a JAX twin that differs in one leaf's derivative
        return jax_loss({**p, "scale": jax.lax.stop_gradient(p["scale"])}, v)

    with pytest.raises(AssertionError, match=r"\[vjp\] cotangent of argument 0 leaf \['scale'\]"):
        check_against_jax(cw_loss, wrong, [params, x], modes=("vjp",))
