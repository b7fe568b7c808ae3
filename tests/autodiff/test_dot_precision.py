"""``precision=`` on the contractions and convolutions (issue 23), against jax.lax / jax.numpy.

The oracle for what a precision means is JAX itself: the precision lax records in its jaxpr's
``dot_general`` / ``conv_general_dilated`` equation for the same argument. castwise records the
same pair (by lax.Precision member name), keeps it on every product its JVP, VJP and batching
rules derive (JAX's rules do the same), and its lowering hands it back to lax.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import autodiff
import runtime as rt
from passes.lower_jax import lower_to_jax
from runtime.core.graph import Graph
from runtime.core.shapes import canonical_precision

PRODUCTS = ("dot_general", "conv_general_dilated")

#: every spelling lax accepts, with the pair lax records (None: no precision asked for)
PRECISIONS: list[Any] = [
    None, "default", "high", "highest", "fastest", "bfloat16", "tensorfloat32", "float32",
    lax.Precision.DEFAULT, lax.Precision.HIGH, lax.Precision.HIGHEST,
    "bfloat16_3x", ("default", "highest"), (lax.Precision.HIGH, lax.Precision.DEFAULT),
    [lax.Precision.HIGHEST, lax.Precision.HIGH],
]  # fmt: skip

#: 'DEFAULT' and 'F32_F32_F32' are lax.DotAlgorithmPreset names in jax, which castwise does not take
BAD_PRECISIONS: list[Any] = [
    "DEFAULT", "F32_F32_F32", "fast", 3, 1.5, ("high",), ("high", "high", "high"), ("high", "nope"), object(),
    (lax.Precision.HIGH, "default"), ("high", None),
]  # fmt: skip
# (ids: repr, but for the bare object, whose repr holds an address: xdist's workers must collect the same ids)

DIMS = (((1,), (0,)), ((), ()))


def _jax_recorded(p: Any) -> Any:
    """The precision jax.lax records for ``p`` on a dot_general, as castwise's pair of names."""
    a = jnp.ones((2, 3))
    b = jnp.ones((3, 4))
    q = tuple(p) if isinstance(p, list) else p  # jax 0.10 cannot hash a list param; castwise takes one
    jaxpr = jax.make_jaxpr(lambda x, y: lax.dot_general(x, y, DIMS, precision=q))(a, b)
    (eqn,) = [e for e in jaxpr.eqns if e.primitive.name == "dot_general"]
    rec = eqn.params["precision"]
    return None if rec is None else tuple(q.name.lower() for q in rec)


def _products(graph: Graph) -> list[Any]:
    """The precision param of every dot_general / conv equation of ``graph`` (a derived product
    without one would show as ``None``)."""
    return [e.params.get("precision") for e in graph.eqns if e.op.name in PRODUCTS]


@pytest.mark.parametrize("p", PRECISIONS, ids=repr)
def test_recorded_precision_is_jaxs(p: Any) -> None:
    assert getattr(rt, "matmul") is rt.lax.matmul  # noqa: B009  (the top level's matmul is the op function)
    x, y = rt.asarray(np.ones((2, 3))), rt.asarray(np.ones((3, 4)))
    graph = rt.trace(lambda a, b: rt.lax.dot_general(a, b, DIMS, p), x, y)
    assert _products(graph) == [_jax_recorded(p)]
    if p is not None:
        assert "precision=" in str(graph)


# -- every function that takes precision=, against its JAX twin ----------------------------------

rng = np.random.default_rng(0)
A = rng.standard_normal((3, 4)).astype(np.float32)
B = rng.standard_normal((4, 5)).astype(np.float32)
V = rng.standard_normal(4).astype(np.float32)
L4 = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
R4 = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
BATCH = rng.standard_normal((2, 3, 4)).astype(np.float32)

#: (name, castwise call, JAX call, operands): each takes precision as the keyword ``p``
CALLS: list[tuple[str, Callable[..., Any], Callable[..., Any], tuple[np.ndarray, ...]]] = [
    ("lax.dot_general", lambda a, b, p: rt.lax.dot_general(a, b, DIMS, p),
     lambda a, b, p: lax.dot_general(a, b, DIMS, p), (A, B)),
    ("matmul", lambda a, b, p: rt.lax.matmul(a, b, precision=p), lambda a, b, p: jnp.matmul(a, b, precision=p), (A, B)),
    ("matmul batched", lambda a, b, p: rt.lax.matmul(a, b, precision=p),
     lambda a, b, p: jnp.matmul(a, b, precision=p), (BATCH, B)),
    ("dot", lambda a, b, p: rt.dot(a, b, precision=p), lambda a, b, p: jnp.dot(a, b, precision=p), (A, V)),
    ("inner", lambda a, b, p: rt.inner(a, b, precision=p), lambda a, b, p: jnp.inner(a, b, precision=p), (A, V)),
    ("tensordot", lambda a, b, p: rt.tensordot(a, b, 1, precision=p),
     lambda a, b, p: jnp.tensordot(a, b, 1, precision=p), (A, B)),
    ("einsum", lambda a, b, p: rt.einsum("ij,jk->ik", a, b, precision=p),
     lambda a, b, p: jnp.einsum("ij,jk->ik", a, b, precision=p), (A, B)),
    ("lax.conv_general_dilated", lambda a, b, p: rt.lax.conv_general_dilated(a, b, (1, 2), "SAME", precision=p),
     lambda a, b, p: lax.conv_general_dilated(a, b, (1, 2), "SAME", precision=p), (L4, R4)),
    ("lax.conv", lambda a, b, p: rt.lax.conv(a, b, (1, 1), "VALID", p),
     lambda a, b, p: lax.conv(a, b, (1, 1), "VALID", p), (L4, R4)),
]  # fmt: skip
CALL_IDS = [c[0] for c in CALLS]


@pytest.mark.parametrize(("name", "ours", "theirs", "args"), CALLS, ids=CALL_IDS)
@pytest.mark.parametrize("p", [None, "highest", (lax.Precision.HIGH, lax.Precision.DEFAULT)], ids=repr)
def test_values_and_derivatives_equal_jax(name: str, ours: Callable[..., Any], theirs: Callable[..., Any],
                                          args: tuple[np.ndarray, ...], p: Any) -> None:  # fmt: skip
    """Eager values, JVP and VJP against JAX at HIGHEST (castwise's kernels are full precision)."""
    got = ours(*[rt.asarray(a) for a in args], p)
    want = theirs(*args, lax.Precision.HIGHEST)
    assert got.dtype.name == str(want.dtype)
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-5, atol=1e-5)
    tangents = [rng.standard_normal(a.shape).astype(a.dtype) for a in args]
    _, t_ours = autodiff.jvp(lambda *xs: ours(*xs, p), tuple(rt.asarray(a) for a in args), tuple(tangents))
    _, t_jax = jax.jvp(lambda *xs: theirs(*xs, lax.Precision.HIGHEST), tuple(args), tuple(tangents))
    np.testing.assert_allclose(t_ours.numpy(), np.asarray(t_jax), rtol=1e-4, atol=1e-4)
    ct = rng.standard_normal(got.shape).astype(args[0].dtype)
    _, vjp_ours = autodiff.vjp(lambda *xs: ours(*xs, p), *[rt.asarray(a) for a in args])
    _, vjp_jax = jax.vjp(lambda *xs: theirs(*xs, lax.Precision.HIGHEST), *args)
    for g, w in zip(vjp_ours(ct), vjp_jax(ct), strict=True):
        np.testing.assert_allclose(g.numpy(), np.asarray(w), rtol=1e-4, atol=1e-4)


def _pair(p: Any) -> Any:
    return canonical_precision(p)


@pytest.mark.parametrize(("name", "ours", "theirs", "args"), CALLS, ids=CALL_IDS)
@pytest.mark.parametrize("p", ["high", ("default", "highest")], ids=repr)
def test_transforms_keep_precision(name: str, ours: Callable[..., Any], theirs: Callable[..., Any],
                                   args: tuple[np.ndarray, ...], p: Any) -> None:  # fmt: skip
    """The recorded graphs of jvp, vjp, vmap and a second derivative carry the precision on every
    product they derive, as JAX's rules do (its jaxpr of the same transform is the oracle)."""
    xs = [rt.asarray(a) for a in args]
    want = _pair(p)

    def jvp_fn(*ys: Any) -> Any:
        return autodiff.jvp(lambda *zs: ours(*zs, p), tuple(ys), tuple(rt.ones_like(y) for y in ys))[1]

    def vjp_fn(*ys: Any) -> Any:
        out, back = autodiff.vjp(lambda *zs: ours(*zs, p), *ys)
        return tuple(back(rt.ones_like(out)))

    def vmap_fn(*ys: Any) -> Any:
        return autodiff.vmap(lambda z: ours(z, ys[1], p))(rt.stack([ys[0], ys[0]]))

    def second_fn(*ys: Any) -> Any:
        return autodiff.grad(lambda z: rt.sum(rt.lax.square(ours(z, ys[1], p))))(ys[0])

    for fn in (jvp_fn, vjp_fn, vmap_fn, second_fn):
        graph = rt.trace(fn, *xs)
        found = _products(graph)
        assert found and all(q == want for q in found), (fn.__name__, str(graph))
        assert str(graph).count("precision=") == len(found)
    # JAX's own VJP keeps it as well (the oracle for "the derivative's products carry it")
    jaxpr = jax.make_jaxpr(lambda *ys: jax.vjp(lambda *zs: theirs(*zs, p), *ys)[1](theirs(*ys, p)))(*args)
    recorded = [e.params["precision"] for e in jaxpr.eqns if e.primitive.name in PRODUCTS]
    assert recorded and all(tuple(q.name.lower() for q in r) == want for r in recorded)


@pytest.mark.parametrize(("name", "ours", "theirs", "args"), CALLS, ids=CALL_IDS)
@pytest.mark.parametrize("p", [None, "high", ("default", "highest")], ids=repr)
def test_lowering_passes_precision(name: str, ours: Callable[..., Any], theirs: Callable[..., Any],
                                   args: tuple[np.ndarray, ...], p: Any) -> None:  # fmt: skip
    """lower_to_jax hands the recorded precision to lax (HIGHEST where none was asked for), seen
    in the jaxpr of the lowered function; autodiff.jit's values equal the eager ones."""
    xs = [rt.asarray(a) for a in args]
    graph = rt.trace(lambda *ys: ours(*ys, p), *xs)
    fn = lower_to_jax(graph)
    jaxpr = jax.make_jaxpr(fn)(*args)
    recorded = [e.params["precision"] for e in jaxpr.eqns if e.primitive.name in PRODUCTS]
    want = ("highest", "highest") if p is None else _pair(p)
    assert recorded and all(tuple(q.name.lower() for q in r) == want for r in recorded)
    eager = ours(*xs, p)
    np.testing.assert_allclose(np.asarray(fn(*args)[0]), eager.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(autodiff.jit(lambda *ys: ours(*ys, p))(*xs).numpy(), eager.numpy(), rtol=1e-5,
                               atol=1e-5)  # fmt: skip


@pytest.mark.parametrize(("name", "ours", "theirs", "args"), CALLS, ids=CALL_IDS)
@pytest.mark.parametrize("bad", BAD_PRECISIONS, ids=lambda b: "object()" if type(b) is object else repr(b))
def test_bad_precision_raises(name: str, ours: Callable[..., Any], theirs: Callable[..., Any],
                              args: tuple[np.ndarray, ...], bad: Any) -> None:  # fmt: skip
    """A precision lax refuses raises rt.PrecisionError (a ShapeError) naming the function called,
    the operands' dtypes and shapes and the policy, before anything is recorded; JAX refuses it too."""
    xs = [rt.asarray(a, requires_grad=True) for a in args]
    fn_name = name.split()[0].removeprefix("lax.")
    with pytest.raises(rt.PrecisionError, match=rf"^{fn_name}.*precision .*f32\[{args[0].shape[0]}.*policy 'jax'"):
        ours(*xs, bad)
    assert issubclass(rt.PrecisionError, rt.ShapeError)
    if not (isinstance(bad, str) and bad.isupper()):
        with pytest.raises((TypeError, ValueError, KeyError, AttributeError)):
            theirs(*args, bad)


DOT_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4))]


@pytest.mark.parametrize(("lhs", "rhs"), DOT_SHAPES, ids=str)
def test_lax_dot_is_jaxs(lhs: tuple[int, ...], rhs: tuple[int, ...]) -> None:
    """``rt.lax.dot``: values, dtypes (mixed operands promote, as lax.dot's) and the recorded
    precision against ``jax.lax.dot``; general ranks take ``dimension_numbers``."""
    gen = np.random.default_rng(0)
    a, b = gen.standard_normal(lhs).astype(np.float32), gen.integers(-3, 4, rhs).astype(np.int32)
    want = jax.lax.dot(a, b, precision="highest")
    got = rt.lax.dot(rt.asarray(a), rt.asarray(b), precision="highest")
    assert got.dtype.name == str(want.dtype)
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-6)
    graph = rt.trace(lambda x, y: rt.lax.dot(x, y, precision="highest"), rt.asarray(a), rt.asarray(b))
    dims = (((len(lhs) - 1,), (0,)), ((), ()))
    general = rt.trace(lambda x, y: rt.lax.dot_general(x, y, dims, "highest"), rt.asarray(a), rt.asarray(b))
    assert str(graph) == str(general) and "precision=('highest', 'highest')" in str(graph)


def test_lax_dot_with_dimension_numbers_and_its_refusal() -> None:
    gen = np.random.default_rng(1)
    a, b = gen.standard_normal((2, 3, 4)), gen.standard_normal((2, 4, 5))
    dims = (((2,), (1,)), ((0,), (0,)))
    with jax.enable_x64(True):
        want = jax.lax.dot(a, b, dimension_numbers=dims)
    np.testing.assert_allclose(rt.lax.dot(rt.asarray(a), rt.asarray(b), dimension_numbers=dims).numpy(), want)
    with pytest.raises(rt.ShapeError, match=r"^dot: dimension_numbers must be given.*policy"):
        rt.lax.dot(rt.asarray(a), rt.asarray(b))
    with pytest.raises(rt.ShapeError, match=r"^dot: "):
        rt.lax.dot(rt.asarray(np.ones(3)), rt.asarray(np.ones(4)))
