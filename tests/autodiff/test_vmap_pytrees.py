"""``vmap`` with pytree arguments, results, ``in_axes`` and ``out_axes`` against ``jax.vmap``,
and its compositions (nested, under ``jit``, with ``jvp``) in f32 / f64 / c128.

``in_axes`` is a tree prefix of the positional arguments (ints, None, nested
dicts / tuples / namedtuples; a list at the top means the tuple), ``out_axes``
a tree prefix of the result; keyword arguments are mapped along axis 0;
``axis_size`` sizes a vmap that maps no argument. Errors name the path of the
leaf (or the spec position) at fault.
"""

from __future__ import annotations

import zlib
from collections import namedtuple
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from autodiff.pytree import tree_map  # noqa: E402
from runtime.core import lax as F  # noqa: E402
from tests import jax_oracles  # noqa: E402
from tests.autodiff.tree_helpers import DTYPES, close, dtype_id, random, to_tensors, trees_close  # noqa: E402

B = 4
Pair = namedtuple("Pair", ["lo", "hi"])


def cw_f(p: Any, x: Any) -> Any:
    """A function of a dict of parameters (a list and a namedtuple inside) and an array."""
    h = F.add(F.mul(F.sin(p["w"]), x), p["b"][0])
    return {"h": h, "s": (F.reduce_sum(F.mul(h, p["pair"].lo), (0,)), F.mul(p["pair"].hi, 2.0))}


def jax_f(p: Any, x: Any) -> Any:
    h = jnp.sin(p["w"]) * x + p["b"][0]
    return {"h": h, "s": (jnp.sum(h * p["pair"].lo), p["pair"].hi * 2.0)}


def unbatched(rng: np.random.Generator, dtype: Any) -> tuple[Any, Any]:
    p = {"w": random(rng, (3,), dtype), "b": [random(rng, (3,), dtype)],
         "pair": Pair(random(rng, (3,), dtype), random(rng, (2,), dtype))}  # fmt: skip
    return p, random(rng, (3,), dtype)


def batch_along(value: np.ndarray, axis: int | None, rng: np.random.Generator) -> np.ndarray:
    """``B`` random examples like ``value`` stacked along ``axis`` (``value`` itself when None)."""
    if axis is None:
        return value
    examples = [random(rng, value.shape, value.dtype) for _ in range(B)]
    return np.stack(examples, axis=axis % (value.ndim + 1))


def batched_args(rng: np.random.Generator, dtype: Any, in_axes: Any) -> tuple[Any, Any]:
    """Arguments for ``cw_f`` batched as ``in_axes`` (a tree prefix) says."""
    p, x = unbatched(rng, dtype)
    spec = tuple(in_axes) if isinstance(in_axes, list) else in_axes
    p_axes = spec[0] if isinstance(spec, tuple) else spec
    x_axis = spec[1] if isinstance(spec, tuple) else spec

    def along(axis: Any, tree: Any) -> Any:
        return tree_map(lambda a: batch_along(a, axis, rng), tree)

    if isinstance(p_axes, dict):
        p = {k: along(p_axes[k], v) if not isinstance(p_axes[k], list | tuple)
             else type(v)(*[along(ax, item) for ax, item in zip(p_axes[k], v, strict=True)])
             if isinstance(v, Pair) else type(v)(along(ax, item) for ax, item in zip(p_axes[k], v, strict=True))
             for k, v in p.items()}  # fmt: skip
    else:
        p = along(p_axes, p)
    return p, along(x_axis, x)


IN_OUT = [
    (0, 0),
    ((None, 0), 0),
    ((0, 1), -1),
    (({"w": 0, "b": [1], "pair": Pair(None, 0)}, None), {"h": 1, "s": (0, 1)}),
    (({"w": -1, "b": None, "pair": 0}, 0), {"h": -1, "s": 0}),
    ([{"w": None, "b": [0], "pair": None}, 0], {"h": 1, "s": (0, None)}),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("in_axes,out_axes", IN_OUT, ids=[str(i) for i in range(len(IN_OUT))])
def test_pytree_in_axes_and_out_axes_match_jax_vmap(in_axes: Any, out_axes: Any, dtype: Any) -> None:
    rng = np.random.default_rng(zlib.crc32(f"{in_axes}|{out_axes}".encode()))
    p, x = batched_args(rng, dtype, in_axes)
    got = autodiff.vmap(cw_f, in_axes=in_axes, out_axes=out_axes)(to_tensors(p), rt.asarray(x))
    with jax.enable_x64(True):
        want = jax_oracles.jitted(jax.vmap(jax_f, in_axes=in_axes, out_axes=out_axes))(
            tree_map(jnp.asarray, p), jnp.asarray(x)
        )
    trees_close(got, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_keyword_arguments_none_leaves_and_scalar_outputs(dtype: Any) -> None:
    rng = np.random.default_rng(1)
    xs, ys = random(rng, (B, 3), dtype), random(rng, (B, 3), dtype)

    def cw(x: Any, cfg: Any, *, y: Any) -> Any:
        return (F.mul(x, y), None, {"k": cfg["scale"], "c": 2.0})

    def jx(x: Any, cfg: Any, *, y: Any) -> Any:
        return (x * y, None, {"k": cfg["scale"], "c": 2.0})

    cfg = {"scale": random(rng, (2,), dtype), "name": None}
    got = autodiff.vmap(cw, in_axes=(0, None))(rt.asarray(xs), to_tensors(cfg), y=rt.asarray(ys))
    with jax.enable_x64(True):
        want = jax_oracles.jitted(jax.vmap(jx, in_axes=(0, None)))(
            jnp.asarray(xs), tree_map(jnp.asarray, cfg), y=jnp.asarray(ys)
        )
    assert got[1] is None
    close(got[0].numpy(), want[0], dtype)
    close(got[2]["k"].numpy(), want[2]["k"], dtype)  # an unbatched leaf is broadcast along the batch
    np.testing.assert_array_equal(got[2]["c"].numpy(), np.asarray(want[2]["c"]))
    # an unmapped leaf may be anything f accepts, as in jax.vmap
    out = autodiff.vmap(lambda x, tag: F.mul(x, 2.0) if tag == "double" else x, in_axes=(0, None))(
        rt.asarray(xs), "double"
    )
    close(out.numpy(), xs * 2, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_axis_size_when_nothing_is_mapped(dtype: Any) -> None:
    rng = np.random.default_rng(2)
    x = random(rng, (3,), dtype)
    got = autodiff.vmap(lambda v: {"a": F.sin(v), "b": 1.5}, in_axes=None, axis_size=5, out_axes={"a": 1, "b": 0})(
        rt.asarray(x)
    )
    with jax.enable_x64(True):
        want = jax_oracles.jitted(
            jax.vmap(lambda v: {"a": jnp.sin(v), "b": 1.5}, in_axes=None, axis_size=5, out_axes={"a": 1, "b": 0})
        )(jnp.asarray(x))
    trees_close({"a": got["a"]}, {"a": want["a"]}, dtype)
    np.testing.assert_array_equal(got["b"].numpy(), np.asarray(want["b"]))
    # agreeing with the mapped axes is fine; disagreeing is an error naming both
    xs = rt.asarray(random(rng, (B, 3), dtype))
    np.testing.assert_array_equal(autodiff.vmap(F.neg, axis_size=B)(xs).numpy(), -xs.numpy())
    with pytest.raises(autodiff.VmapError, match=r"different sizes: axis_size is 5; argument 0 has size 4"):
        autodiff.vmap(F.neg, axis_size=5)(xs)
    with pytest.raises(autodiff.VmapError, match=r"maps no argument .* axis_size is not given"):
        autodiff.vmap(F.neg, in_axes=None)(xs)
    with pytest.raises(autodiff.VmapError, match=r"maps no argument"):  # jax.vmap refuses this too
        autodiff.vmap(lambda p: p, in_axes=({"a": None},))({"a": None})


# -- errors name the path ---------------------------------------------------------------------------


def test_errors_name_the_leaf_and_the_spec_position() -> None:
    x3, x4 = rt.asarray(np.ones((3, 2))), rt.asarray(np.ones((4, 2)))
    ident = autodiff.vmap(lambda p, q: p)
    with pytest.raises(
        autodiff.VmapError,
        match=r"argument 0, leaf \['a'\] has size 3 along axis 0 .*argument 0, leaf \['b'\]\[1\] has size 4",
    ):
        ident({"a": x3, "b": [x3, x4]}, x3)
    with pytest.raises(
        autodiff.VmapError, match=r"in_axes\[0\]\['b'\]\[0\] = 2 is out of range for argument 0, leaf \['b'\]\[0\]"
    ):
        autodiff.vmap(lambda p: p, in_axes=({"a": 0, "b": [2, 0]},))({"a": x3, "b": [x3, x3]})
    with pytest.raises(autodiff.VmapError, match=r"in_axes\[0\]\.hi = -3 is out of range for argument 0, leaf \.hi"):
        autodiff.vmap(lambda p: p, in_axes=(Pair(0, -3),))(Pair(x3, x3))
    with pytest.raises(autodiff.VmapError, match=r"keyword argument 'y' has size 4"):
        autodiff.vmap(lambda x, y: x)(x3, y=x4)
    # a spec that is not a tree prefix of the arguments
    with pytest.raises(
        autodiff.VmapError,
        match=r"in_axes is not a tree prefix of the arguments: at in_axes\[0\] it is a dict with keys \['a'\] but "
        r"the arguments\[0\] is a dict with keys \['a', 'b'\]",
    ):
        autodiff.vmap(lambda p: p, in_axes=({"a": 0},))({"a": x3, "b": x3})
    with pytest.raises(
        autodiff.VmapError, match=r"at in_axes\[0\] it is a list of 2 but the arguments\[0\] is a tuple"
    ):
        autodiff.vmap(lambda p: p, in_axes=([0, 1],))((x3, x3))
    with pytest.raises(
        autodiff.VmapError, match=r"at in_axes\[0\] it is a tuple of 2 but the arguments\[0\] is an array"
    ):
        autodiff.vmap(lambda p: p, in_axes=((0, 1),))(x3)
    # spec leaves must be ints or None (checked when vmap is called to wrap f)
    for bad, where in [((True,), r"in_axes\[0\]"), (({"a": 0.0},), r"in_axes\[0\]\['a'\]"), ("x", "in_axes")]:
        with pytest.raises(autodiff.VmapError, match=where + r" must be an int or None|in_axes must be an int, None"):
            autodiff.vmap(lambda p: p, in_axes=bad)
    with pytest.raises(autodiff.VmapError, match=r"out_axes\['u'\] must be an int or None, got 'z'"):
        autodiff.vmap(lambda p: p, out_axes={"u": "z"})
    # out_axes: a prefix of the output, None only where nothing is batched
    with pytest.raises(
        autodiff.VmapError, match=r"out_axes is not a tree prefix of the output: at out_axes it is a list"
    ):
        autodiff.vmap(lambda a: (a, a), out_axes=[0, 1])(x3)
    with pytest.raises(
        autodiff.VmapError,
        match=r"output \['v'\]\[1\] \(f64\[3,2\]\) depends on the mapped arguments, but "
        r"out_axes\['v'\]\[1\] is None",
    ):
        autodiff.vmap(lambda a: {"u": a, "v": (a, a)}, out_axes={"u": 1, "v": (0, None)})(x3)
    with pytest.raises(autodiff.VmapError, match=r"out_axes\['u'\] = 2 is out of range for output \['u'\] of rank 1"):
        autodiff.vmap(lambda a: {"u": a[0]}, out_axes={"u": 2})(x3)
    with pytest.raises(autodiff.VmapError, match=r"f must return arrays; output \[1\] is a str"):
        autodiff.vmap(lambda a: (a, "done"))(x3)


# -- compositions, each against JAX ---------------------------------------------------------------------


def cw_g(x: Any, y: Any) -> Any:
    return F.mul(F.exp(F.sin(x)), y)


def jax_g(x: Any, y: Any) -> Any:
    return jnp.exp(jnp.sin(x)) * y


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_vmap_of_vmap(dtype: Any) -> None:
    rng = np.random.default_rng(3)
    xs, ys = random(rng, (2, B, 3), dtype), random(rng, (3, B), dtype)
    inner = (0, None)
    got = autodiff.vmap(autodiff.vmap(cw_g, in_axes=inner), in_axes=(1, 1), out_axes=-1)(rt.asarray(xs), rt.asarray(ys))
    with jax.enable_x64(True):
        want = jax_oracles.jitted(jax.vmap(jax.vmap(jax_g, in_axes=inner), in_axes=(1, 1), out_axes=-1))(
            jnp.asarray(xs), jnp.asarray(ys)
        )
    close(got.numpy(), want, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_jit_of_vmap(dtype: Any) -> None:
    rng = np.random.default_rng(4)
    p, x = batched_args(rng, dtype, IN_OUT[3][0])
    in_axes, out_axes = IN_OUT[3]
    jitted = autodiff.jit(autodiff.vmap(cw_f, in_axes=in_axes, out_axes=out_axes))
    got = jitted(to_tensors(p), rt.asarray(x))
    again = jitted(to_tensors(p), rt.asarray(x))
    with jax.enable_x64(True):
        want = jax.jit(jax.vmap(jax_f, in_axes=in_axes, out_axes=out_axes))(tree_map(jnp.asarray, p), jnp.asarray(x))
    assert jitted.traces == 1
    trees_close(got, want, dtype)
    trees_close(again, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_vmap_of_jvp_and_jvp_of_vmap(dtype: Any) -> None:
    rng = np.random.default_rng(5)
    xs, ys, txs, tys = (random(rng, (B, 3), dtype) for _ in range(4))

    def cw_jvp(x: Any, y: Any, tx: Any, ty: Any) -> Any:
        return autodiff.jvp(cw_g, (x, y), (tx, ty))

    with jax.enable_x64(True):
        want_out, want_tan = jax_oracles.jitted(jax.vmap(lambda x, y, tx, ty: jax.jvp(jax_g, (x, y), (tx, ty))))(
            *map(jnp.asarray, (xs, ys, txs, tys))
        )
        want_out2, want_tan2 = jax_oracles.jvp(jax.vmap(jax_g), (jnp.asarray(xs), jnp.asarray(ys)),
                                       (jnp.asarray(txs), jnp.asarray(tys)))  # fmt: skip
    out, tan = autodiff.vmap(cw_jvp)(*map(rt.asarray, (xs, ys, txs, tys)))
    close(out.numpy(), want_out, dtype)
    close(tan.numpy(), want_tan, dtype)
    out2, tan2 = autodiff.jvp(autodiff.vmap(cw_g), (rt.asarray(xs), rt.asarray(ys)), (rt.asarray(txs), rt.asarray(tys)))
    close(out2.numpy(), want_out2, dtype)
    close(tan2.numpy(), want_tan2, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_vmap_of_grad_and_grad_of_vmap_with_dict_parameters(dtype: Any) -> None:
    rng = np.random.default_rng(6)
    p = {"w": random(rng, (3, 2), dtype), "b": random(rng, (2,), dtype)}
    xs = random(rng, (B, 3), dtype)
    conj = np.dtype(dtype).kind == "c"

    def cw_loss(q: Any, x: Any) -> Any:
        h = F.tanh(F.add(F.matmul(x, q["w"]), q["b"]))
        sq = F.mul(h, F.conj(h))
        return F.reduce_sum(F.real(sq) if sq.dtype.kind == "complex" else sq, (0,))

    def jax_loss(q: Any, x: Any) -> Any:
        h = jnp.tanh(x @ q["w"] + q["b"])
        return jnp.sum(jnp.real(h * jnp.conj(h)))

    per = autodiff.vmap(autodiff.grad(cw_loss), in_axes=(None, 0))(to_tensors(p), rt.asarray(xs))
    total = autodiff.grad(lambda q: F.reduce_sum(autodiff.vmap(cw_loss, in_axes=(None, 0))(q, rt.asarray(xs)), (0,)))(
        to_tensors(p)
    )
    with jax.enable_x64(True):
        jp = tree_map(jnp.asarray, p)
        want_per = jax_oracles.jitted(jax.vmap(jax.grad(jax_loss), in_axes=(None, 0)))(jp, jnp.asarray(xs))
        want_total = jax_oracles.jitted(
            jax.grad(lambda q: jnp.sum(jax.vmap(jax_loss, in_axes=(None, 0))(q, jnp.asarray(xs))))
        )(jp)
    trees_close(per, want_per, dtype, conj=conj)
    trees_close(total, want_total, dtype, conj=conj)


# -- a property: random trees, random axes ----------------------------------------------------------------


@st.composite
def trees_and_axes(draw: Any) -> tuple[dict[str, Any], Any, Any]:
    """A dict of 1-3 leaves (rank 0-2, one of them mapped at least), a tree-prefix ``in_axes``
    for it (per leaf, or one int for all) and an ``out_axes`` for ``tree_fn``'s result."""
    names = draw(st.lists(st.sampled_from("abc"), min_size=1, max_size=3, unique=True))
    shapes = {k: tuple(draw(st.lists(st.integers(1, 3), max_size=2))) for k in names}
    per_leaf = draw(st.booleans())
    if per_leaf:
        axes = {k: draw(st.one_of(st.none(), st.integers(-len(s) - 1, len(s)))) for k, s in shapes.items()}
        if all(a is None for a in axes.values()):
            axes[names[0]] = 0
        in_axes: Any = (axes,)
    else:
        in_axes = draw(st.integers(-min(len(s) for s in shapes.values()) - 1, min(len(s) for s in shapes.values())))
        axes = dict.fromkeys(names, in_axes)
    leaves = {}
    for k, s in shapes.items():
        a = axes[k]
        at = None if a is None else a % (len(s) + 1)
        leaves[k] = s if at is None else (*s[:at], B, *s[at:])
    out_axes = {"each": {k: draw(st.integers(-len(shapes[k]) - 1, len(shapes[k]))) for k in names},
                "total": draw(st.sampled_from([0, -1]))}  # fmt: skip
    return leaves, in_axes, out_axes


def tree_fn(p: dict[str, Any], sin: Any, reduce: Any) -> Any:
    total = sum(reduce(sin(v)) for v in p.values())
    return {"each": {k: sin(v) * 2.0 for k, v in p.items()}, "total": total}


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=trees_and_axes(), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**16))
def test_random_trees_and_axes_match_jax_vmap(case: tuple[dict[str, Any], Any, Any], dtype: Any, seed: int) -> None:
    shapes, in_axes, out_axes = case
    rng = np.random.default_rng(seed)
    p = {k: random(rng, s, dtype) for k, s in shapes.items()}
    got = autodiff.vmap(
        lambda q: tree_fn(q, F.sin, lambda v: F.reduce_sum(v, tuple(range(v.ndim)))), in_axes, out_axes
    )(to_tensors(p))
    with jax.enable_x64(True):
        want = jax_oracles.jitted(jax.vmap(lambda q: tree_fn(q, jnp.sin, jnp.sum), in_axes, out_axes))(
            tree_map(jnp.asarray, p)
        )
    trees_close(got, want, dtype)
