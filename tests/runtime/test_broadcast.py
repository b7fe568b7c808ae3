"""NumPy broadcasting of every elementwise family: eager values, recorded graphs, gradients.

Oracles: jax.numpy (shapes, values, gradients on random broadcastable shape
pairs), NumPy's ``broadcast_shapes`` for the shape plan, and golden printed
graphs for what the recorder writes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import jax.scipy.special as jsp  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402
from jax import lax  # noqa: E402

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from passes.promote import broadcast_example, promote  # noqa: E402
from passes.verify import verify  # noqa: E402
from runtime.core import lax as F  # noqa: E402
from runtime.core import ops  # noqa: E402
from runtime.core.executor import apply  # noqa: E402
from runtime.core.graph import trace  # noqa: E402
from runtime.core.shape_plan import BROADCASTING, broadcast_targets, result_shape  # noqa: E402
from runtime.core.shapes import ShapeError  # noqa: E402

#: every op of the broadcasting families, with its jax.numpy counterpart (a failing row
#: when the vocabulary gains an elementwise op without one)
JNP: dict[str, Any] = {
    "add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "div": jnp.divide, "rem": jnp.fmod,
    "pow": jnp.power, "max": jnp.maximum, "min": jnp.minimum, "atan2": jnp.arctan2,
    "floor_div": jnp.floor_divide, "eq": jnp.equal, "ne": jnp.not_equal, "lt": jnp.less,
    "le": jnp.less_equal, "gt": jnp.greater, "ge": jnp.greater_equal, "and": jnp.logical_and,
    "or": jnp.logical_or, "xor": jnp.logical_xor,
    "select": jnp.where, "select_n": lambda w, a: jnp.broadcast_to(a, jnp.broadcast_shapes(w.shape, a.shape)),
    "clamp": lambda lo, x, hi: jnp.minimum(jnp.maximum(x, lo), hi),
    "nextafter": jnp.nextafter, "complex": lambda re, im: re + 1j * im, "shift_left": jnp.left_shift,
    "shift_right_arithmetic": jnp.right_shift,
    "shift_right_logical": lambda x, y: jnp.right_shift(x.astype(jnp.uint64), y.astype(jnp.uint64)).astype(x.dtype),
    # the special functions: jax.scipy.special's, or lax's after broadcasting (jsp.polygamma wants an int m)
    "igamma": jsp.gammainc, "igammac": jsp.gammaincc, "zeta": jsp.zeta,
    "polygamma": lambda m, x: lax.polygamma(*jnp.broadcast_arrays(m, x)),
    "igamma_grad_a": lambda a, x: lax.igamma_grad_a(*jnp.broadcast_arrays(a, x)),
}  # fmt: skip
#: the integer-only ops of the binary family
_INTEGER_OPS = {"shift_left", "shift_right_arithmetic", "shift_right_logical"}
ELEMENTWISE = [op for op in ops.OPS.values() if op.family in BROADCASTING]
POLICIES = rt.policies()


def _operand(op: ops.OpDef, i: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if op.family == ops.LOGICAL or (op.family == ops.SELECT and i == 0):
        return rng.random(shape) < 0.5
    if op.name in _INTEGER_OPS:
        return rng.integers(0, 2**20 if i == 0 else 8, shape, dtype=np.int64)
    values = rng.uniform(0.5, 2.0, shape)
    if op.name == "polygamma" and i == 0:
        return np.floor(values * 2)  # m: whole numbers 1 .. 3
    if op.family == ops.CLAMP:
        values = values + (0.0, 0.5, 1.0)[i] * 1.5  # min < operand range < max, mostly
    return values


def test_every_elementwise_op_has_a_jax_numpy_row() -> None:
    assert {op.name for op in ELEMENTWISE} == set(JNP)


@pytest.mark.parametrize("op", ELEMENTWISE, ids=lambda o: o.name)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_shapes_and_values_match_jax_numpy(op: ops.OpDef, data: st.DataObject) -> None:
    arity = len(op.operands)
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=arity, min_dims=0, max_dims=3, max_side=3))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    arrays = [_operand(op, i, s, rng) for i, s in enumerate(shapes.input_shapes)]
    ours = apply(op, [rt.asarray(a) for a in arrays], {})
    assert ours.shape == shapes.result_shape == jnp.broadcast_shapes(*shapes.input_shapes)
    # jax.numpy's values, pointwise: each operand broadcast by NumPy, flattened and padded to one length,
    # so one compiled program serves every example (compiling per shape was most of this test's time)
    flat = [np.broadcast_to(a, shapes.result_shape).ravel() for a in arrays]
    padded = [np.concatenate([f, np.repeat(f[:1], _PADDED - f.size)]) for f in flat]
    theirs = np.asarray(JNP[op.name](*[jnp.asarray(p) for p in padded]))[: flat[0].size]
    np.testing.assert_allclose(ours.numpy(), theirs.reshape(shapes.result_shape), rtol=1e-12)


_PADDED = 3**3  # the largest result: max_dims=3, max_side=3


@pytest.mark.parametrize("policy", POLICIES)
def test_rank_equal_size_one_broadcasting_under_every_policy(policy: str) -> None:
    x, y = np.arange(12.0).reshape(3, 4), np.arange(3.0).reshape(3, 1)
    with rt.policy(policy):
        np.testing.assert_array_equal((rt.asarray(x) * rt.asarray(y)).numpy(), x * y)
        np.testing.assert_array_equal((rt.asarray(x) < rt.asarray(y)).numpy(), x < y)
        np.testing.assert_array_equal(F.select(rt.asarray(x > 5), rt.asarray(y), rt.asarray(x)).numpy(),
                                      np.where(x > 5, y, x))  # fmt: skip
        np.testing.assert_array_equal(F.clamp(rt.asarray(y), rt.asarray(x[0]), 6.0).numpy(),
                                      np.minimum(np.maximum(x[0], y), 6.0))  # fmt: skip


def test_tensor_operators_broadcast() -> None:
    x, y = np.arange(6.0).reshape(2, 3), np.array([1.0, 2.0, 3.0])
    tx, ty = rt.asarray(x), rt.asarray(y)
    for ours, theirs in [(tx + ty, x + y), (ty - tx, y - x), (tx * ty, x * y), (tx / ty, x / y),
                         (tx ** ty, x**y), (tx >= ty, x >= y), (tx == ty, x == y),
                         ((tx > 1) & (ty > 1), (x > 1) & (y > 1))]:  # fmt: skip
        np.testing.assert_array_equal(ours.numpy(), theirs)


def test_python_scalar_and_zero_d_operands_broadcast_without_an_equation() -> None:
    # lax's scalar rule takes 0-d operands as they are; the Python scalar joins a strong
    # f64, so its constant is strong too
    graph = trace(lambda x, s: x * s + 2.0, np.ones((2, 3)), np.float64(3.0))
    assert str(graph) == (
        "{ lambda a:f64[] ; b:f64[2,3] c:f64[] . let\n    d:f64[2,3] = mul b c\n    e:f64[2,3] = add d a\n  in (e) }"
    )
    verify(graph)


def test_recorded_graph_writes_convert_then_broadcast() -> None:
    graph = trace(lambda x, y: x + y, np.ones((3, 1)), np.ones(4, np.float32))
    assert str(graph) == (
        "{ lambda a:f64[3,1] b:f32[4] . let\n"
        "    c:f64[3,4] = broadcast_in_dim[shape=(3, 4) broadcast_dimensions=(0, 1)] a\n"
        "    d:f64[4] = convert[to=f64] b\n"
        "    e:f64[3,4] = broadcast_in_dim[shape=(3, 4) broadcast_dimensions=(1,)] d\n"
        "    f:f64[3,4] = add c e\n"
        "  in (f) }"
    )
    verify(graph)
    x, y = np.arange(3.0).reshape(3, 1), np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(graph(x, y)[0].numpy(), x + y)  # the replay computes what eager did


def test_recorded_select_and_clamp_broadcast_each_operand() -> None:
    graph = trace(lambda p, x: F.select(p, x, 0.0), np.ones(3, bool), np.ones((2, 1)))
    # the predicate broadcasts too; the Python scalar joins a strong f64, so it is strong
    assert str(graph) == (
        "{ lambda a:f64[] ; b:bool[3] c:f64[2,1] . let\n"
        "    d:bool[2,3] = broadcast_in_dim[shape=(2, 3) broadcast_dimensions=(1,)] b\n"
        "    e:f64[2,3] = broadcast_in_dim[shape=(2, 3) broadcast_dimensions=(0, 1)] c\n"
        "    f:f64[2,3] = select d e a\n"
        "  in (f) }"
    )
    verify(graph)
    # clamp's operand takes the full shape even when 0-d; min and max may stay 0-d
    graph = trace(lambda lo, x: F.clamp(lo, x, 5.0), np.zeros(3), np.float64(1.0))
    assert str(graph) == (
        "{ lambda a:f64[] ; b:f64[3] c:f64[] . let\n"
        "    d:f64[3] = broadcast_in_dim[shape=(3,) broadcast_dimensions=()] c\n"
        "    e:f64[3] = clamp b d a\n"
        "  in (e) }"
    )
    verify(graph)


def test_verify_rejects_an_implicit_broadcast_and_promote_makes_it_explicit() -> None:
    raw = broadcast_example()
    with pytest.raises(rt.GraphError):
        verify(raw)
    promoted = promote(raw)
    verify(promoted)
    assert str(promoted) == (
        "{ lambda a:f64[3,1] b:f32[4] . let\n"
        "    c:f64[3,4] = broadcast_in_dim[shape=(3, 4) broadcast_dimensions=(0, 1)] a\n"
        "    d:f64[4] = convert[to=f64] b\n"
        "    e:f64[3,4] = broadcast_in_dim[shape=(3, 4) broadcast_dimensions=(1,)] d\n"
        "    f:f64[3,4] = add c e\n"
        "  in (f) }"
    )
    assert str(promote(promoted)) == str(promoted)  # idempotent


@pytest.mark.parametrize("policy", POLICIES)
def test_incompatible_shapes_name_the_op_shapes_and_policy(policy: str) -> None:
    with rt.policy(policy), pytest.raises(ShapeError) as info:
        rt.asarray(np.zeros((2, 3))) + rt.asarray(np.zeros((4,)))
    text = str(info.value)
    for needle in ("add", "[2, 3]", "[4]", repr(policy)):
        assert needle in text, (needle, text)


def test_the_shape_plan_is_numpy_s_and_leaves_equal_shapes_alone() -> None:
    rng = np.random.default_rng(1)
    for _ in range(200):
        a = tuple(int(n) for n in rng.choice([1, 2, 3], rng.integers(0, 4)))
        b = tuple(int(n) for n in rng.choice([1, 2, 3], rng.integers(0, 4)))
        try:
            expected = np.broadcast_shapes(a, b)
        except ValueError:
            with pytest.raises(ShapeError):
                result_shape(ops.add, (a, b))
            continue
        assert result_shape(ops.add, (a, b)) == expected
    assert broadcast_targets(ops.add, ((3, 4), (3, 4))) is None
    assert broadcast_targets(ops.add, ((3, 4), ())) is None  # lax's scalar rule
    assert broadcast_targets(ops.add, ((3, 4), (3, 1))) == ((3, 4), (3, 4))
    assert broadcast_targets(ops.clamp, ((), (), (3,))) == ((), (3,), (3,))
    assert broadcast_targets(ops.reshape, ((3,), (4,))) is None  # not elementwise


def test_cached_signature_broadcasts_and_records_the_same() -> None:
    x, y = np.ones((3, 1)), np.arange(4.0)
    first = trace(lambda a, b: a * b, x, y)
    second = trace(lambda a, b: a * b, x, y)  # the signature cache's path this time
    assert str(first) == str(second)
    for _ in range(2):
        np.testing.assert_array_equal((rt.asarray(x) * rt.asarray(y)).numpy(), x * y)
        np.testing.assert_array_equal(F.atan2(rt.asarray(x), rt.asarray(y)).numpy(), np.arctan2(x, y))


def test_in_place_broadcasts_the_operand_but_not_the_target() -> None:
    x = rt.asarray(np.zeros((2, 3)))
    x += rt.asarray(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(x.numpy(), np.array([[1.0, 2.0, 3.0]] * 2))
    small = rt.asarray(np.zeros(3))
    with pytest.raises(ShapeError):
        small += rt.asarray(np.zeros((2, 3)))


# -- gradients -----------------------------------------------------------------------------------

DIFFERENTIABLE = ["add", "sub", "mul", "div", "pow", "max", "min", "atan2", "rem"]


@pytest.mark.parametrize("name", DIFFERENTIABLE)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_gradients_sum_back_to_each_operand_shape(name: str, data: st.DataObject) -> None:
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    a, b = (rng.uniform(0.5, 2.0, s) for s in shapes.input_shapes)
    op = ops.get(name)
    ta, tb = rt.asarray(a, requires_grad=True), rt.asarray(b, requires_grad=True)
    ct = rng.standard_normal(shapes.result_shape)
    apply(op, (ta, tb), {}).backward(rt.asarray(ct))
    _, vjp = jax.vjp(JNP[name], jnp.asarray(a), jnp.asarray(b))
    ga, gb = vjp(jnp.asarray(ct))
    assert ta.grad.shape == a.shape and tb.grad.shape == b.shape
    np.testing.assert_allclose(ta.grad.numpy(), np.asarray(ga), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(tb.grad.numpy(), np.asarray(gb), rtol=1e-9, atol=1e-12)


def test_gradients_of_select_and_clamp_with_broadcast_operands() -> None:
    rng = np.random.default_rng(3)
    p, x, y = rng.random(3) < 0.5, rng.standard_normal((2, 1)), rng.standard_normal((2, 3))
    tx, ty = rt.asarray(x, requires_grad=True), rt.asarray(y, requires_grad=True)
    F.select(rt.asarray(p), tx, ty).sum().backward()
    gx, gy = jax.grad(lambda a, b: jnp.where(p, a, b).sum(), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(tx.grad.numpy(), gx)
    np.testing.assert_allclose(ty.grad.numpy(), gy)
    lo = rt.asarray(np.array([-0.5, 0.0, 0.5]), requires_grad=True)
    v = rt.asarray(np.float64(0.2), requires_grad=True)
    F.clamp(lo, v, 1.0).sum().backward()
    glo, gv = jax.grad(lambda a, b: jnp.minimum(jnp.maximum(b, a), 1.0).sum(), argnums=(0, 1))(
        np.array([-0.5, 0.0, 0.5]), 0.2
    )
    np.testing.assert_allclose(lo.grad.numpy(), glo)
    np.testing.assert_allclose(v.grad.numpy(), gv)


def test_forward_mode_through_a_broadcast() -> None:
    x, y = np.arange(3.0).reshape(3, 1), np.arange(4.0)
    _, ours = autodiff.jvp(lambda a, b: a * b, (x, y), (np.ones((3, 1)), np.zeros(4)))
    _, theirs = jax.jvp(lambda a, b: a * b, (x, y), (np.ones((3, 1)), np.zeros(4)))
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs))
