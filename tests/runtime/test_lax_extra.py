"""The lax names issue 23 found missing: ``integer_pow``, ``stop_gradient``, ``optimization_barrier``,
``pad`` with an array padding value, ``broadcast_shapes`` and ``unstack``.

Oracles: the same call in ``jax.lax`` (values, dtypes, weak flags), ``jax.grad`` / ``jax.jvp`` /
``jax.vmap`` of the JAX reference, and finite differences for the padding value's cotangent (JAX's
own ``grad`` of a padding value alone raises in its transpose).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax import lax as jlax  # noqa: E402
from jax._src.dtypes import is_weakly_typed  # noqa: E402

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from runtime.core import lax  # noqa: E402
from runtime.core.graph import trace  # noqa: E402
from tests import jax_oracles  # noqa: E402

RNG = np.random.default_rng(23)
X = RNG.standard_normal((3, 4))


def _np(x: Any) -> np.ndarray:
    return x.numpy() if isinstance(x, rt.Tensor) else np.asarray(x)


# -- integer_pow --------------------------------------------------------------------------------------

POW_ROWS = [
    (dtype, y)
    for dtype in ("float16", "bfloat16", "float32", "float64", "complex64", "int8", "int32", "uint8")
    for y in (0, 1, 2, 3, 5, 8, -1, -3)
    if not (y < 0 and dtype.startswith(("int", "uint")))
]


@pytest.mark.parametrize(("dtype", "y"), POW_ROWS)
def test_integer_pow_is_laxs_bit_for_bit(dtype: str, y: int) -> None:
    base = np.array([1.5, -0.75, 2.0, 0.5]) if not dtype.startswith(("int", "uint")) else np.array([3, 2, 7, 1])
    data = base.astype(jnp.dtype(dtype))
    got = lax.integer_pow(rt.asarray(data), y)
    want = jlax.integer_pow(jnp.asarray(data), y)
    assert got.dtype.name == np.dtype(want.dtype).name
    np.testing.assert_array_equal(_np(got).astype(np.complex128), np.asarray(want).astype(np.complex128))


@pytest.mark.parametrize("y", [0, 1, 2, 3, -2])
def test_integer_pow_derivatives_are_jaxs(y: int) -> None:
    x = np.array([1.5, -0.75, 2.0])
    t = np.array([0.3, -1.0, 0.5])
    _, tangent = autodiff.jvp(lambda a: lax.integer_pow(a, y), (rt.asarray(x),), (rt.asarray(t),))
    _, want_t = jax_oracles.jvp(lambda a: jlax.integer_pow(a, y), (x,), (t,))
    np.testing.assert_allclose(_np(tangent), want_t, rtol=1e-14)
    g = autodiff.grad(lambda a: lax.reduce_sum(lax.integer_pow(a, y), (0,)))(rt.asarray(x))
    np.testing.assert_allclose(
        _np(g), jax_oracles.jitted(jax.grad(lambda a: jlax.integer_pow(a, y).sum()))(x), rtol=1e-14
    )
    v = autodiff.vmap(lambda a: lax.integer_pow(a, y))(rt.asarray(X))
    np.testing.assert_allclose(_np(v), jax_oracles.jitted(jax.vmap(lambda a: jlax.integer_pow(a, y)))(X), rtol=1e-14)


def test_integer_pow_complex_gradient_is_the_conjugate_convention() -> None:
    """castwise's VJP is the real inner product's (PyTorch's): the conjugate of jax.vjp's."""
    z = np.array([1.0 + 2.0j, -0.5 + 0.25j])
    ct = np.array([1.0 - 1.0j, 0.5 + 2.0j])
    (ours,) = autodiff.vjp(lambda a: lax.integer_pow(a, 3), rt.asarray(z))[1](rt.asarray(ct))
    (theirs,) = jax_oracles.vjp(lambda a: jlax.integer_pow(a, 3), z)[1](np.conj(ct))
    np.testing.assert_allclose(_np(ours), np.conj(theirs), rtol=1e-14)


def test_integer_pow_lowers_and_records_one_op() -> None:
    graph = trace(lambda a: lax.integer_pow(a, 3), rt.asarray(X))
    assert [e.op.name for e in graph.eqns] == ["integer_pow"]
    got = autodiff.jit(lambda a: lax.integer_pow(a, -3))(rt.asarray(X))
    np.testing.assert_allclose(_np(got), np.asarray(jlax.integer_pow(X, -3)), rtol=1e-15)
    weak = lax.integer_pow(rt.asarray(2.0), 3)
    assert weak.weak == bool(is_weakly_typed(jlax.integer_pow(jnp.asarray(2.0), 3)))


# -- stop_gradient -----------------------------------------------------------------------------------


STOP_ROWS: list[tuple[str, Callable[[Any], Any], Callable[[Any], Any]]] = [
    ("alone", lambda a: lax.stop_gradient(a), lambda a: jlax.stop_gradient(a)),
    ("times-self", lambda a: lax.stop_gradient(a) * a, lambda a: jlax.stop_gradient(a) * a),
    ("inside-exp", lambda a: lax.exp(lax.stop_gradient(a * 2.0)) + a,
     lambda a: jnp.exp(jlax.stop_gradient(a * 2.0)) + a),
]  # fmt: skip


@pytest.mark.parametrize(("name", "ours", "theirs"), STOP_ROWS, ids=[r[0] for r in STOP_ROWS])
def test_stop_gradient_derivatives_are_jaxs(name: str, ours: Any, theirs: Any) -> None:
    x = X[0]
    np.testing.assert_allclose(_np(ours(rt.asarray(x))), theirs(x), rtol=1e-15)
    g = autodiff.grad(lambda a: lax.reduce_sum(ours(a), (0,)))(rt.asarray(x))
    np.testing.assert_allclose(_np(g), jax_oracles.jitted(jax.grad(lambda a: theirs(a).sum()))(x), rtol=1e-14)
    _, t = autodiff.jvp(ours, (rt.asarray(x),), (rt.asarray(np.ones(4)),))
    np.testing.assert_allclose(_np(t), jax_oracles.jvp(theirs, (x,), (np.ones(4),))[1], rtol=1e-14)
    jitted = autodiff.jit(autodiff.grad(lambda a: lax.reduce_sum(ours(a), (0,))))(rt.asarray(x))
    np.testing.assert_allclose(_np(jitted), _np(g), rtol=1e-14)


def test_stop_gradient_keeps_its_op_and_maps_over_containers() -> None:
    graph = trace(lambda a: lax.stop_gradient(a), rt.asarray(X))
    assert [e.op.name for e in graph.eqns] == ["stop_gradient"]
    out = lax.stop_gradient({"a": rt.asarray(X), "b": (rt.asarray(1), rt.asarray(2.0))})
    assert set(out) == {"a", "b"} and isinstance(out["b"], tuple)
    assert out["b"][0].dtype.name == "int64" and out["b"][1].weak


# -- optimization_barrier -----------------------------------------------------------------------------


def test_optimization_barrier_is_an_identity_that_graphs_and_lowering_keep() -> None:
    a, b = rt.asarray(X), rt.asarray(np.arange(3, dtype=np.int32))
    out = lax.optimization_barrier((a, b))
    assert isinstance(out, tuple) and len(out) == 2
    np.testing.assert_array_equal(_np(out[0]), X)
    assert out[1].dtype.name == "int32"
    assert isinstance(lax.optimization_barrier([a]), list)
    single = lax.optimization_barrier(a)
    assert isinstance(single, rt.Tensor)
    jitted = autodiff.jit(lambda u, v: lax.optimization_barrier((u * 2.0, v)))
    assert "optimization_barrier" in [e.op.name for e in jitted.lower(a, b).eqns]
    assert "optimization_barrier" in jitted.export(a, b)
    np.testing.assert_array_equal(_np(jitted(a, b)[0]), 2 * X)


def test_optimization_barrier_derivatives_and_vmap_are_jaxs() -> None:
    def ours(u: Any) -> Any:
        p, q = lax.optimization_barrier((u, lax.sin(u)))
        return p * q

    def theirs(u: Any) -> Any:
        p, q = jlax.optimization_barrier((u, jnp.sin(u)))
        return p * q

    x = X[1]
    g = autodiff.grad(lambda u: lax.reduce_sum(ours(u), (0,)))(rt.asarray(x))
    np.testing.assert_allclose(_np(g), jax_oracles.jitted(jax.grad(lambda u: theirs(u).sum()))(x), rtol=1e-14)
    _, t = autodiff.jvp(ours, (rt.asarray(x),), (rt.asarray(np.ones(4)),))
    np.testing.assert_allclose(_np(t), jax_oracles.jvp(theirs, (x,), (np.ones(4),))[1], rtol=1e-14)
    np.testing.assert_allclose(
        _np(autodiff.vmap(ours)(rt.asarray(X))), jax_oracles.jitted(jax.vmap(theirs))(X), rtol=1e-14
    )


def test_optimization_barrier_keeps_each_weak_flag() -> None:
    out = lax.optimization_barrier((rt.asarray(1.0), rt.asarray(np.float32(1))))
    want = jlax.optimization_barrier((jnp.asarray(1.0), jnp.float32(1)))
    assert [o.weak for o in out] == [bool(is_weakly_typed(w)) for w in want]


# -- pad with an array padding value -------------------------------------------------------------------

CONFIGS = [((1, 2, 0), (0, 0, 0)), ((1, 0, 1), (0, -1, 0)), ((0, 0, 2), (2, 1, 1)), ((-1, 1, 0), (1, -2, 1))]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool"])
def test_pad_with_an_array_value_is_laxs(config: Any, dtype: str) -> None:
    x = (X > 0) if dtype == "bool" else (X * 3).astype(dtype)
    value = np.asarray(True if dtype == "bool" else 7, dtype)
    got = lax.pad(rt.asarray(x), rt.asarray(value), config)
    want = jlax.pad(jnp.asarray(x), jnp.asarray(value), config)
    assert got.dtype.name == np.dtype(want.dtype).name
    np.testing.assert_array_equal(_np(got), np.asarray(want))
    # the same as the scalar param
    np.testing.assert_array_equal(_np(got), _np(lax.pad(rt.asarray(x), value.item(), config)))


@pytest.mark.parametrize("config", CONFIGS)
def test_pad_value_derivatives(config: Any) -> None:
    """The operand's and the value's cotangents are jax.grad's; the value's is the sum of the
    output cotangent over the padded positions, checked by finite differences too; JVP and vmap
    over the value are jax.jvp's and jax.vmap's."""
    w = RNG.standard_normal(jlax.pad(X, 0.0, config).shape)

    def ours(a: Any, v: Any) -> Any:
        return lax.reduce_sum(lax.pad(a, v, config) * w, (0, 1))

    def theirs(a: Any, v: Any) -> Any:
        return (jlax.pad(a, v, config) * w).sum()

    v0 = np.float64(0.5)
    gx, gv = autodiff.grad(ours, argnums=(0, 1))(rt.asarray(X), rt.asarray(v0))
    wx, wv = jax_oracles.jitted(jax.grad(theirs, argnums=(0, 1)))(X, v0)
    np.testing.assert_allclose(_np(gx), wx, rtol=1e-14)
    np.testing.assert_allclose(_np(gv), wv, rtol=1e-12)
    eps = 1e-6
    fd = (_np(ours(rt.asarray(X), rt.asarray(v0 + eps))) - _np(ours(rt.asarray(X), rt.asarray(v0 - eps)))) / (2 * eps)
    np.testing.assert_allclose(_np(gv), fd, rtol=1e-6)
    mask = np.asarray(jlax.pad(np.zeros_like(X), 1.0, config))
    np.testing.assert_allclose(_np(gv), (w * mask).sum(), rtol=1e-12)
    _, t = autodiff.jvp(lambda v: lax.pad(rt.asarray(X), v, config), (rt.asarray(v0),), (rt.asarray(np.float64(1)),))
    np.testing.assert_array_equal(_np(t), mask)
    values = np.array([0.0, -1.0, 2.5])
    got = autodiff.vmap(lambda v: lax.pad(rt.asarray(X), v, config))(rt.asarray(values))
    np.testing.assert_array_equal(
        _np(got), np.asarray(jax_oracles.jitted(jax.vmap(lambda v: jlax.pad(X, v, config)))(values))
    )
    both = autodiff.vmap(lambda a, v: lax.pad(a, v, config))(rt.asarray(np.stack([X, -X])), rt.asarray(values[:2]))
    want = jax_oracles.jitted(jax.vmap(lambda a, v: jlax.pad(a, v, config)))(np.stack([X, -X]), values[:2])
    np.testing.assert_array_equal(_np(both), np.asarray(want))


def test_pad_value_is_traced_under_jit() -> None:
    f = autodiff.jit(lambda a, v: lax.pad(a, v, ((1, 1, 0), (0, 0, 0))))
    first = f(rt.asarray(X), rt.asarray(np.float64(1)))
    second = f(rt.asarray(X), rt.asarray(np.float64(2)))
    assert f.traces == 1
    assert _np(first)[0, 0] == 1 and _np(second)[0, 0] == 2


def test_pad_value_of_another_dtype_is_refused_as_lax_refuses_it() -> None:
    x = rt.asarray(X.astype(np.float32))
    for ours, theirs in ((rt.asarray(2.0), jnp.asarray(2.0)), (rt.asarray(np.float64(2)), jnp.float64(2))):
        with pytest.raises(TypeError):
            jlax.pad(jnp.asarray(X, jnp.float32), theirs, ((1, 0, 0), (0, 0, 0)))
        with pytest.raises(rt.OpTypeError, match="pad: padding_value dtype float64 differs"):
            lax.pad(x, ours, ((1, 0, 0), (0, 0, 0)))


# -- broadcast_shapes and unstack ------------------------------------------------------------------------

SHAPE_ROWS = [
    ((2, 1), (3,)),
    ((1,), (4, 1), (1, 5)),
    ((),),
    ((0,), (1,)),
    ((2, 3), (2, 3)),
    ((3, 1, 2), (1, 4, 1)),
    ((5,),),
]


@pytest.mark.parametrize("shapes", SHAPE_ROWS)
def test_broadcast_shapes_is_laxs(shapes: Any) -> None:
    assert lax.broadcast_shapes(*shapes) == jlax.broadcast_shapes(*shapes)


@pytest.mark.parametrize("shapes", [((2,), (3,)), ((2, 3), (3, 2)), ((0,), (2,))])
def test_broadcast_shapes_refuses_what_lax_refuses(shapes: Any) -> None:
    with pytest.raises(ValueError):
        jlax.broadcast_shapes(*shapes)
    with pytest.raises(rt.ShapeError, match="broadcast_shapes: incompatible"):
        lax.broadcast_shapes(*shapes)


@pytest.mark.parametrize(
    ("shape", "axis"), [((2, 3), 0), ((2, 3), 1), ((2, 3), -1), ((4,), 0), ((0, 2), 1), ((3, 0), 1)]
)
def test_unstack_is_laxs(shape: tuple[int, ...], axis: int) -> None:
    data = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    got = lax.unstack(rt.asarray(data), axis)
    want = jlax.unstack(jnp.asarray(data), axis)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_array_equal(_np(g), np.asarray(w))


def test_unstack_gradient_and_vmap_are_jaxs() -> None:
    def ours(a: Any) -> Any:
        p, q, r = lax.unstack(a, 0)
        return lax.reduce_sum(p * 2.0 + q * r, (0,))

    def theirs(a: Any) -> Any:
        p, q, r = jlax.unstack(a, 0)
        return (p * 2.0 + q * r).sum()

    np.testing.assert_allclose(
        _np(autodiff.grad(ours)(rt.asarray(X))), jax_oracles.jitted(jax.grad(theirs))(X), rtol=1e-14
    )
    np.testing.assert_allclose(
        _np(autodiff.vmap(ours)(rt.asarray(np.stack([X, 2 * X])))),
        jax_oracles.jitted(jax.vmap(theirs))(np.stack([X, 2 * X])),
        rtol=1e-14,
    )


# -- result_type's weak flag -------------------------------------------------------------------------------

_KINDS = ["bool", "int8", "uint64", "int32", "float16", "float32", "float64", "complex64"]
_RT_OPERANDS: list[tuple[str, bool]] = [(d, w) for d in _KINDS for w in (False, True)]


def _ours_operand(spec: Any) -> Any:
    if not isinstance(spec, tuple):
        return spec  # a Python scalar
    t = rt.asarray(np.zeros(2, spec[0]))
    t.weak = spec[1]
    return t


def _theirs_operand(spec: Any) -> Any:
    from jax._src.lax.lax import _convert_element_type

    if not isinstance(spec, tuple):
        return spec
    return _convert_element_type(jnp.zeros(2, spec[0]), np.dtype(spec[0]), weak_type=spec[1])


RT_ROWS = [
    *[(a,) for a in _RT_OPERANDS],
    *[(a, b) for i, a in enumerate(_RT_OPERANDS) for b in _RT_OPERANDS[i:]],
    (1.0,), (2,), (True,), (1j,), (1.0, 2), (True, False), (2, ("int8", False)), (1.0, ("int8", False)),
    (("int8", False), ("uint64", False), ("float16", False)),
]  # fmt: skip


@pytest.mark.parametrize("row", RT_ROWS, ids=[repr(r) for r in RT_ROWS])
def test_result_type_weak_flag_is_jaxs(row: tuple[Any, ...]) -> None:
    from jax._src import dtypes as jdtypes

    try:
        want_dtype, want_weak = jdtypes.result_type(*[_theirs_operand(x) for x in row], return_weak_type_flag=True)
    except TypeError:
        with pytest.raises(rt.CastwiseError):
            rt.result_type(*[_ours_operand(x) for x in row], return_weak_type_flag=True)
        return
    got_dtype, got_weak = rt.result_type(*[_ours_operand(x) for x in row], return_weak_type_flag=True)
    assert (got_dtype.name, got_weak) == (np.dtype(want_dtype).name, bool(want_weak))
    assert rt.result_type(*[_ours_operand(x) for x in row]) is got_dtype


def test_result_type_weak_flag_is_false_without_weak_types() -> None:
    with rt.use_policy("numpy"):
        assert rt.result_type(1.0, return_weak_type_flag=True) == (rt.float64, False)


# -- bitcast_convert_type ------------------------------------------------------------------------------------

BITCAST_ROWS = [
    ("float32", "int32", (3,)), ("float32", "uint8", (3,)), ("float64", "uint16", (2,)), ("uint8", "float32", (2, 4)),
    ("int16", "float64", (4,)), ("bfloat16", "float16", (3,)), ("float8_e4m3fn", "int8", (3,)),
    ("int32", "bfloat16", (3,)), ("int4", "uint4", (3,)), ("uint2", "int2", (4,)), ("int8", "int4", (3,)),
    ("uint4", "uint8", (3, 2)), ("complex64", "complex64", (2,)), ("bool", "bool", (2,)), ("float64", "float64", ()),
]  # fmt: skip


def _bits(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    storage = jnp.dtype(dtype)
    if dtype == "bool":
        return np.array([True, False])
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(storage) if dtype not in ("int4", "uint4", "int2", "uint2") else None
        lo, hi = (info.min, info.max) if info else ((-8, 7) if dtype == "int4" else (0, 15) if dtype == "uint4" else
                                                     (-2, 1) if dtype == "int2" else (0, 3))  # fmt: skip
        return RNG.integers(lo, hi, shape, endpoint=True).astype(storage)
    values = RNG.standard_normal(shape) * 3
    if storage.kind == "c":
        values = values + 1j * RNG.standard_normal(shape)
    return values.astype(storage)


@pytest.mark.parametrize(("src", "dst", "shape"), BITCAST_ROWS, ids=[f"{a}-{b}" for a, b, _ in BITCAST_ROWS])
def test_bitcast_convert_type_is_laxs(src: str, dst: str, shape: tuple[int, ...]) -> None:
    data = _bits(src, shape)
    got = lax.bitcast_convert_type(rt.asarray(data), dst)
    want = jlax.bitcast_convert_type(jnp.asarray(data), jnp.dtype(dst))
    assert got.dtype.name == np.dtype(want.dtype).name and got.shape == want.shape
    wide = np.uint16 if np.dtype(want.dtype).itemsize <= 2 else np.uint64
    if np.dtype(want.dtype).kind in "iu" or np.dtype(want.dtype).name.startswith(("int", "uint")):
        np.testing.assert_array_equal(np.asarray(_np(got)).astype(np.int64), np.asarray(want).astype(np.int64))
    elif np.dtype(want.dtype).kind == "c" or dst == "bool":
        np.testing.assert_array_equal(_np(got), np.asarray(want))
    else:  # bit patterns (NaNs compare equal)
        np.testing.assert_array_equal(
            np.asarray(_np(got)).view(f"uint{8 * np.dtype(want.dtype).itemsize}").astype(wide),
            np.asarray(want).view(f"uint{8 * np.dtype(want.dtype).itemsize}").astype(wide),
        )
    jitted = autodiff.jit(lambda a: lax.bitcast_convert_type(a, dst))(rt.asarray(data))
    assert jitted.dtype is got.dtype and jitted.shape == got.shape


def test_bitcast_convert_type_vmap_and_derivative_are_jaxs() -> None:
    data = RNG.standard_normal((3, 2)).astype(np.float32)
    for axis in (0, 1):
        got = autodiff.vmap(lambda a: lax.bitcast_convert_type(a, "uint8"), in_axes=axis)(rt.asarray(data))
        want = jax_oracles.jitted(jax.vmap(lambda a: jlax.bitcast_convert_type(a, jnp.uint8), in_axes=axis))(data)
        np.testing.assert_array_equal(_np(got), np.asarray(want))
    # no derivative: the cast back to float carries none, as in JAX (a zero gradient)
    g = autodiff.grad(lambda a: lax.reduce_sum(lax.convert(lax.bitcast_convert_type(a, "int32"), "float32"), (0,)))
    np.testing.assert_array_equal(_np(g(rt.asarray(data[0]))), np.zeros(2, np.float32))
