"""Operator and Tensor-method habits of NumPy, jax.numpy and PyTorch users, held against them.

In-place operators alias as ``+=`` does; ``~``, ``<<``, ``>>`` as NumPy's ``invert`` /
``left_shift`` / ``right_shift``; ``__index__``, ``mT``, ``len``; ``matmul`` batch broadcasting
(values against NumPy, derivatives against ``jax.grad``, batching against ``jax.vmap``); empty
boolean masks; ``transpose``/``ravel``/``cumsum``/math methods, ``zero_`` and ``.at[]``'s
``multiply``/``divide``/``power`` against jax.numpy.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autodiff
import runtime as rt
from runtime.core.inplace import InPlaceError
from runtime.core.shapes import OpTypeError, ShapeError

jax.config.update("jax_enable_x64", True)

INTS = [rt.int8, rt.int16, rt.int32, rt.int64, rt.uint8, rt.uint16, rt.uint32, rt.uint64]

# (symbol, in-place function, NumPy's out-of-place function, dtype, operand)
INPLACE: list[tuple[str, Callable[[Any, Any], Any], Callable[[Any, Any], Any], rt.DType, Any]] = [
    ("%=", operator.imod, np.remainder, rt.int32, 3),
    ("%=", operator.imod, np.remainder, rt.float64, -1.5),
    ("&=", operator.iand, np.bitwise_and, rt.int16, 6),
    ("|=", operator.ior, np.bitwise_or, rt.uint8, 9),
    ("^=", operator.ixor, np.bitwise_xor, rt.int64, 5),
    ("&=", operator.iand, np.logical_and, rt.bool_, np.array([True, False, True, True])),
    ("<<=", operator.ilshift, np.left_shift, rt.int32, 2),
    (">>=", operator.irshift, np.right_shift, rt.int8, 1),
    (">>=", operator.irshift, np.right_shift, rt.uint16, 3),
    ("//=", operator.ifloordiv, np.floor_divide, rt.int64, 3),
    ("**=", operator.ipow, np.power, rt.float32, 2.0),
    ("@=", operator.imatmul, np.matmul, rt.float64, np.arange(4.0).reshape(2, 2)),
]


def _values(d: rt.DType, n: int = 4) -> np.ndarray:
    if d is rt.bool_:
        return np.array([True, True, False, True])
    if d.is_integer:
        return (np.arange(n) * 7 - (0 if d.kind == "uint" else 9)).astype(d.storage)
    return (np.arange(n) - 1.5).astype(d.storage)


@pytest.mark.parametrize("symbol, iop, np_op, d, other", INPLACE, ids=[f"{r[0]}-{r[3].name}" for r in INPLACE])
def test_inplace_operators_write_through_every_alias(
    symbol: str, iop: Callable[[Any, Any], Any], np_op: Callable[[Any, Any], Any], d: rt.DType, other: Any
) -> None:
    a = _values(d).reshape(2, 2) if symbol == "@=" else _values(d)
    x = rt.asarray(a.copy())
    y = x
    view = x.detach()  # another Tensor of the same memory
    before = x._version
    out = iop(x, other)
    assert out is y  # x was not rebound
    expected = np_op(a, other).astype(d.storage)
    np.testing.assert_array_equal(y.numpy(), expected)
    np.testing.assert_array_equal(view.numpy(), expected)
    assert view._version == before + 1  # one write, counted for every alias


@pytest.mark.parametrize("iop", [operator.imod, operator.iand, operator.imatmul, operator.ilshift, operator.irshift])
def test_inplace_operators_refuse_tracked_tensors(iop: Callable[[Any, Any], Any]) -> None:
    a = np.ones((2, 2), np.int32) if iop is not operator.imatmul else np.eye(2)
    x = rt.asarray(a, requires_grad=a.dtype.kind == "f")
    if not x.requires_grad:
        return  # integers carry no gradient: nothing to refuse
    with pytest.raises(InPlaceError, match="requires grad"):
        iop(x, x.detach())


def test_inplace_refuses_a_result_of_a_higher_category() -> None:
    x = rt.asarray(np.arange(4, dtype=np.int32))
    with pytest.raises(TypeError, match="remainder_"):
        x %= 1.5


@pytest.mark.parametrize("d", INTS, ids=lambda d: d.name)
def test_shifts_and_invert_match_numpy(d: rt.DType) -> None:
    a = _values(d)
    shifts = (np.arange(4) % d.bits).astype(d.storage)
    x, s = rt.asarray(a), rt.asarray(shifts)
    np.testing.assert_array_equal((x << s).numpy(), np.left_shift(a, shifts))
    np.testing.assert_array_equal((x >> s).numpy(), np.right_shift(a, shifts))
    np.testing.assert_array_equal((x >> 1).numpy(), a >> d.storage.type(1))
    np.testing.assert_array_equal((~x).numpy(), np.invert(a))
    np.testing.assert_array_equal((1 << s).numpy(), np.left_shift(d.storage.type(1), shifts))
    np.testing.assert_array_equal((100 >> s).numpy(), np.right_shift(d.storage.type(100), shifts))
    np.testing.assert_array_equal(np.asarray(jnp.right_shift(jnp.asarray(a), 2)), (x >> 2).numpy())


def test_invert_of_bool_is_logical_not() -> None:
    m = np.array([True, False, True])
    assert (~rt.asarray(m)).dtype is rt.bool_
    np.testing.assert_array_equal((~rt.asarray(m)).numpy(), ~m)


@pytest.mark.parametrize(
    "name, call",
    [("left_shift", lambda x: x << 1), ("right_shift", lambda x: x >> 1), ("invert", lambda x: ~x),
     ("left_shift", lambda x: 1 << x)],
)  # fmt: skip
def test_bit_operators_refuse_floats_naming_the_operator(name: str, call: Callable[[Any], Any]) -> None:
    with pytest.raises(OpTypeError, match=rf"^{name} \(.*f64.*policy 'jax'"):
        call(rt.asarray(np.ones(2)))


def test_index_len_mt_device() -> None:
    i = rt.asarray(np.int64(2))
    assert operator.index(i) == 2 and list(range(5))[i] == 2 and [10, 20, 30][i] == 30
    for bad in (rt.asarray(np.float64(2.0)), rt.asarray(np.array([1, 2])), rt.asarray(np.bool_(True))):
        with pytest.raises(TypeError, match="__index__"):
            operator.index(bad)
    with pytest.raises(TypeError, match="len"):
        len(rt.asarray(1.0))
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(rt.asarray(a).mT.numpy(), np.swapaxes(a, -1, -2))
    with pytest.raises(ShapeError, match="^mT"):
        _ = rt.asarray(np.ones(3)).mT
    assert rt.asarray(a).device is rt.cpu


def test_index_of_a_traced_tensor_behaves_as_int() -> None:
    """``__index__`` goes through ``int()``, so a traced tensor meets int()'s guard."""

    def outcome(fn: Callable[[Any], Any]) -> str:
        try:
            rt.trace(fn, rt.asarray(np.int64(1)))
        except Exception as err:
            return type(err).__name__
        return "ok"

    assert outcome(lambda t: operator.index(t) + 0 * t) == outcome(lambda t: int(t) + 0 * t)


# -- matmul broadcasting -------------------------------------------------------------------------------

MATMUL_SHAPES = [((2, 3, 4), (4, 5)), ((4,), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 6)), ((3, 4), (2, 4, 5)),
                 ((2, 3, 4), (4,)), ((2, 3, 4), (2, 4, 5)), ((1, 3, 4), (6, 4, 2))]  # fmt: skip


@pytest.mark.parametrize("xs, ys", MATMUL_SHAPES, ids=[f"{a}@{b}" for a, b in MATMUL_SHAPES])
def test_matmul_broadcasts_and_differentiates_as_jax(xs: tuple[int, ...], ys: tuple[int, ...]) -> None:
    r = np.random.default_rng(0)
    a, b = r.normal(size=xs), r.normal(size=ys)
    np.testing.assert_allclose((rt.asarray(a) @ rt.asarray(b)).numpy(), a @ b, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(jnp.matmul(a, b)), a @ b, rtol=1e-12)

    def loss(x: Any, y: Any) -> Any:
        return ((x @ y) ** 2).sum()

    gx, gy = autodiff.grad(loss, argnums=(0, 1))(rt.asarray(a), rt.asarray(b))
    jx, jy = jax.grad(lambda x, y: jnp.sum(jnp.matmul(x, y) ** 2), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(gx.numpy(), np.asarray(jx), rtol=1e-10)
    np.testing.assert_allclose(gy.numpy(), np.asarray(jy), rtol=1e-10)
    batched = autodiff.vmap(lambda x: x @ rt.asarray(b))(rt.asarray(np.stack([a, 2 * a])))
    np.testing.assert_allclose(batched.numpy(), np.asarray(jax.vmap(lambda x: jnp.matmul(x, b))(np.stack([a, 2 * a]))))


def test_matmul_refuses_batches_that_do_not_broadcast() -> None:
    with pytest.raises(ShapeError, match=r"matmul's batch dimensions \[2\] and \[3\]"):
        rt.asarray(np.ones((2, 3, 4))) @ rt.asarray(np.ones((3, 4, 5)))


# -- indexing ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, index",
    [((0, 3), lambda: np.zeros((0, 3), bool)), ((0, 3), lambda: np.zeros(0, bool)),
     ((0, 3), lambda: (np.zeros(0, bool), slice(1, None))), ((2, 0), lambda: (slice(None), np.zeros(0, bool))),
     ((0,), lambda: np.zeros(0, np.int64))],
)  # fmt: skip
def test_empty_masks_on_empty_arrays_match_numpy(shape: tuple[int, ...], index: Callable[[], Any]) -> None:
    a = np.zeros(shape)
    got = rt.asarray(a)[index()]
    assert got.shape == a[index()].shape


# -- Tensor methods -----------------------------------------------------------------------------------


def test_transpose_ravel_cumsum_match_numpy() -> None:
    a = np.arange(24.0).reshape(2, 3, 4)
    x = rt.asarray(a)
    np.testing.assert_array_equal(x.transpose(1, 0, 2).numpy(), a.transpose(1, 0, 2))
    np.testing.assert_array_equal(x.transpose((2, 0, 1)).numpy(), a.transpose((2, 0, 1)))
    np.testing.assert_array_equal(x.transpose().numpy(), a.transpose())
    np.testing.assert_array_equal(x.transpose(0, 2).numpy(), np.swapaxes(a, 0, 2))  # PyTorch's two-axis form
    m = rt.asarray(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(m.transpose(0, 1).numpy(), m.numpy())  # NumPy: the identity permutation
    with rt.policy("torch"):
        np.testing.assert_array_equal(m.transpose(0, 1).numpy(), m.numpy().T)  # PyTorch: a swap
    np.testing.assert_array_equal(x.ravel().numpy(), a.ravel())
    np.testing.assert_array_equal(x.cumsum(axis=1).numpy(), a.cumsum(axis=1))
    np.testing.assert_array_equal(x.cumsum().numpy(), a.cumsum())
    np.testing.assert_array_equal(x.cumprod(axis=-1).numpy(), a.cumprod(axis=-1))


@pytest.mark.parametrize("d", [rt.int8, rt.uint8, rt.bool_, rt.float32, rt.int64], ids=lambda d: d.name)
def test_cumsum_dtype_matches_jax_numpy(d: rt.DType) -> None:
    a = _values(d).reshape(2, 2)
    got, want = rt.asarray(a).cumsum(axis=0), jnp.cumsum(a, axis=0)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))
    with rt.policy("numpy"):
        got = rt.asarray(a).cumsum(axis=0)
    assert got.dtype == np.cumsum(a, axis=0).dtype
    np.testing.assert_array_equal(got.numpy(), np.cumsum(a, axis=0))


MATH = ["abs", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos", "tan", "arcsin", "arctan",
        "sinh", "cosh", "tanh", "arcsinh", "floor", "ceil", "square", "reciprocal", "sign", "negative"]  # fmt: skip


@pytest.mark.parametrize("name", MATH)
def test_math_methods_match_jax_numpy(name: str) -> None:
    a = np.linspace(0.1, 0.9, 5)
    got = getattr(rt.asarray(a), name)()
    np.testing.assert_allclose(got.numpy(), np.asarray(getattr(jnp, name)(a)), rtol=1e-14)


def test_math_methods_record_and_differentiate() -> None:
    a = np.linspace(0.1, 0.9, 5)
    g = autodiff.grad(lambda t: t.exp().sqrt().log1p().sum())(rt.asarray(a))
    want = jax.grad(lambda t: jnp.sum(jnp.log1p(jnp.sqrt(jnp.exp(t)))))(a)
    np.testing.assert_allclose(g.numpy(), np.asarray(want), rtol=1e-12)


def test_zero_is_in_place_as_pytorch() -> None:
    w = rt.asarray(np.array([1.0, 2.0]), requires_grad=True)
    (w * w).sum().backward()
    grad = w.grad
    assert grad is not None
    version = grad._version
    assert grad.zero_() is grad and w.grad is grad
    np.testing.assert_array_equal(grad.numpy(), [0.0, 0.0])
    assert grad._version == version + 1
    with pytest.raises(InPlaceError, match="^zero_"):
        w.zero_()  # a leaf that requires grad, as PyTorch outside no_grad
    assert rt.asarray(np.ones(3, np.int8)).fill_(7).tolist() == [7, 7, 7]


AT_CASES = [("multiply", [0, 2], 3.0), ("multiply", [1, 1], 2.0), ("divide", [0, 2], 4.0), ("divide", [1, 1], 2.0),
            ("power", [0, 3], 2.0), ("power", [2, 2], 2.0), ("min", [0, 1], 1.5), ("max", [3], 9.0)]  # fmt: skip


@pytest.mark.parametrize("kind, idx, value", AT_CASES, ids=[f"{k}{i}" for k, i, _ in AT_CASES])
@pytest.mark.parametrize("dtype", [np.float64, np.int32], ids=["f64", "i32"])
def test_at_updates_match_jax_numpy(kind: str, idx: list[int], value: float, dtype: Any) -> None:
    a = np.array([2, 3, 4, 5], dtype)
    if dtype is np.int32:
        value = int(value)
    got = getattr(rt.asarray(a).at[np.array(idx)], kind)(value)
    want = getattr(jnp.asarray(a).at[np.array(idx)], kind)(value)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-14)
