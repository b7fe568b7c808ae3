"""``rt.lax.reduce`` / ``rt.lax.reduce_window`` with a user computation, against jax.lax (issue 23).

A monoid computation (add, mul, max, min; and / or / xor on bool and integers) becomes the
existing reduce op of that monoid; the oracle is ``jax.lax.reduce`` / ``jax.lax.reduce_window``
with the same computation in lax ops, values and dtypes, and ``jax.grad`` / ``jax.vmap`` for the
transforms. Any other elementwise computation (an argmax pair, logaddexp, ``x + y + x y``, a
computation with a constant, a monoid with no windowed op) is the pairwise tree of
``runtime/core/lax/computations.py``; the oracle is the same: every case of a row and dtype is
checked against one jitted JAX program (one compile per row), bit for bit where the
computation's arithmetic is exact. The derivatives and transforms of the general path are in
``tests/autodiff/test_reduce_computation_transforms.py``.
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
from runtime.core.lax.computations import ReduceComputationError

rng = np.random.default_rng(0)

#: (name, castwise computation, lax computation, identity, dtypes)
MONOIDS: list[tuple[str, Callable[..., Any], Callable[..., Any], Any, tuple[str, ...]]] = [
    ("add-operator", lambda a, b: a + b, lax.add, 0, ("float32", "float64", "int32", "int8")),
    ("add", rt.lax.add, lax.add, 0, ("float32", "float64", "int32")),
    ("mul", rt.lax.mul, lax.mul, 1, ("float32", "float64", "int32")),
    ("max", rt.lax.max, lax.max, "lowest", ("float32", "float64", "int32", "uint8")),
    ("min", rt.lax.min, lax.min, "highest", ("float32", "float64", "int32", "uint8")),
    ("and", rt.lax.logical_and, lax.bitwise_and, True, ("bool",)),
    ("or", rt.lax.logical_or, lax.bitwise_or, False, ("bool",)),
]
CASES = [(name, ours, theirs, ident, d) for name, ours, theirs, ident, ds in MONOIDS for d in ds]


def _data(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.6
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 4, shape).astype(dtype)
    return rng.uniform(0.5, 1.5, shape).astype(dtype)


def _ident(kind: Any, dtype: str) -> Any:
    d = np.dtype(dtype)
    if kind == "lowest":
        return np.array(-np.inf if d.kind == "f" else np.iinfo(d).min, d)
    if kind == "highest":
        return np.array(np.inf if d.kind == "f" else np.iinfo(d).max, d)
    return np.array(kind, d)


@pytest.mark.parametrize(("name", "ours", "theirs", "ident", "dtype"), CASES, ids=[f"{c[0]}-{c[4]}" for c in CASES])
@pytest.mark.parametrize("init_kind", ["identity", "other"])
def test_reduce_equals_jax(name: str, ours: Any, theirs: Any, ident: Any, dtype: str, init_kind: str) -> None:
    x = _data(dtype, (3, 4, 2))
    init = _ident(ident, dtype) if init_kind == "identity" else _data(dtype, ())
    with jax.enable_x64(True):
        want = lax.reduce(x, init, theirs, (0, 2))
    got = rt.lax.reduce(rt.asarray(x), rt.asarray(init), ours, (0, 2))
    assert got.dtype.name == str(want.dtype)
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-6)


WINDOWS = [
    ((2, 2), (1, 1), "VALID", None, None),
    ((2, 3), (2, 1), "SAME", None, None),
    ((2, 2), (1, 2), ((1, 0), (0, 2)), (1, 2), None),
    ((2, 2), (1, 1), ((0, 1), (1, 1)), None, (2, 1)),
]


@pytest.mark.parametrize(("name", "ours", "theirs", "ident", "dtype"),
                         [c for c in CASES if c[0] in ("add", "max", "min")], ids=lambda v: str(v)[:12])  # fmt: skip
def test_reduce_window_equals_jax(name: str, ours: Any, theirs: Any, ident: Any, dtype: str) -> None:
    """Every window of ``WINDOWS``, from the identity and from another init value: JAX's side as
    one compiled program per (monoid, dtype)."""
    x = _data(dtype, (4, 6))
    inits = [_ident(ident, dtype), _data(dtype, ())]

    def theirs_all(x: Any, identity: Any, other: Any) -> list[Any]:
        return [lax.reduce_window(x, init, theirs, *window) for init in (identity, other) for window in WINDOWS]

    with jax.enable_x64(True):
        want = jax.jit(theirs_all)(x, *inits)
    got = [rt.lax.reduce_window(rt.asarray(x), rt.asarray(init), ours, *window) for init in inits for window in WINDOWS]
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.shape == w.shape and g.dtype.name == str(w.dtype), k
        np.testing.assert_allclose(g.numpy(), np.asarray(w), rtol=1e-6, err_msg=str(k))


def test_variadic_pair_of_monoids_equals_jax() -> None:
    x, y = _data("float64", (3, 4)), _data("int32", (3, 4))
    with jax.enable_x64(True):
        want = lax.reduce((x, y), (0.0, np.int32(0)), lambda a, b: (lax.add(a[0], b[0]), lax.max(a[1], b[1])), (1,))
        want_w = lax.reduce_window((x, y), (0.0, np.int32(0)), lambda a, b: (a[0] + b[0], lax.max(a[1], b[1])),
                                   (2, 2), (1, 1), "VALID")  # fmt: skip
    got = rt.lax.reduce((x, y), (0.0, 0), lambda a, b: (a[0] + b[0], rt.lax.max(a[1], b[1])), (1,))
    got_w = rt.lax.reduce_window((x, y), (0.0, 0), lambda a, b: (a[0] + b[0], rt.lax.max(a[1], b[1])),
                                 (2, 2), (1, 1), "VALID")  # fmt: skip
    for g, w in (*zip(got, want, strict=True), *zip(got_w, want_w, strict=True)):
        assert g.dtype.name == str(w.dtype)
        np.testing.assert_allclose(g.numpy(), np.asarray(w))


def _arg_pair(library: Any, better: str) -> Callable[[Any, Any], Any]:
    """(value, index): the ``better`` value (``gt``: argmax, ``lt``: argmin), the smaller index on a
    tie, in castwise's ops (``library`` rt.lax) or lax's."""
    either = library.logical_or if library is rt.lax else lax.bitwise_or
    both = library.logical_and if library is rt.lax else lax.bitwise_and

    def pair(a: Any, b: Any) -> Any:
        take = either(getattr(library, better)(a[0], b[0]), both(library.eq(a[0], b[0]), library.lt(a[1], b[1])))
        return library.select(take, a[0], b[0]), library.select(take, a[1], b[1])

    return pair


_argmax_ours, _argmax_jax = _arg_pair(rt.lax, "gt"), _arg_pair(lax, "gt")
_argmin_ours, _argmin_jax = _arg_pair(rt.lax, "lt"), _arg_pair(lax, "lt")


def _lexmax_ours(a: Any, b: Any) -> Any:  # the lexicographic maximum of (first, second)
    take = rt.lax.logical_or(rt.lax.gt(a[0], b[0]), rt.lax.logical_and(rt.lax.eq(a[0], b[0]), rt.lax.ge(a[1], b[1])))
    return rt.lax.select(take, a[0], b[0]), rt.lax.select(take, a[1], b[1])


def _lexmax_jax(a: Any, b: Any) -> Any:
    take = lax.bitwise_or(lax.gt(a[0], b[0]), lax.bitwise_and(lax.eq(a[0], b[0]), lax.ge(a[1], b[1])))
    return lax.select(take, a[0], b[0]), lax.select(take, a[1], b[1])


def _logaddexp_ours(a: Any, b: Any) -> Any:  # jnp.logaddexp's formula: -inf with -inf is a + b, not NaN
    delta = a - b
    return rt.lax.select(
        rt.lax.ne(delta, delta), a + b, rt.lax.max(a, b) + rt.lax.log1p(rt.lax.exp(-rt.lax.abs(delta)))
    )


def _index(shape: tuple[int, ...], axis: int = 1) -> np.ndarray:
    along = np.arange(shape[axis], dtype=np.int32).reshape([-1 if d == axis else 1 for d in range(len(shape))])
    return np.broadcast_to(along, shape).copy()


def _pair_index(dtype: str, shape: tuple[int, ...]) -> list[np.ndarray]:
    return [_data(dtype, shape), _index(shape)]


def _pair_same(dtype: str, shape: tuple[int, ...]) -> list[np.ndarray]:
    return [_data(dtype, shape), _data(dtype, shape)]


def _one(dtype: str, shape: tuple[int, ...]) -> list[np.ndarray]:
    return [_data(dtype, shape)]


def _small(dtype: str, shape: tuple[int, ...]) -> list[np.ndarray]:
    if np.dtype(dtype).kind in "iu":
        return [rng.integers(-3, 4, shape).astype(dtype)]
    return [rng.uniform(-0.3, 0.3, shape).astype(dtype)]  # x + y + xy stays near 0: no overflow


def _lowest(dtype: str) -> Any:
    d = np.dtype(dtype)
    return np.array(np.iinfo(d).min, d) if d.kind in "iu" else np.array(-np.inf, d)


#: name -> (castwise computation, lax computation, operands, init values, dtypes, exact)
GENERAL: dict[str, tuple[Callable[..., Any], Callable[..., Any], Callable[..., list[np.ndarray]],
                         Callable[[str], list[Any]], tuple[str, ...], bool]] = {
    "argmax-pair": (_argmax_ours, _argmax_jax, _pair_index, lambda d: [_lowest(d), np.int32(0)],
                    ("float32", "float64", "int32", "bfloat16"), True),
    "argmin-pair": (_argmin_ours, _argmin_jax, _pair_index, lambda d: [np.array(np.iinfo(d).max, d)
                    if np.dtype(d).kind in "iu" else -_lowest(d), np.int32(0)], ("float64", "int8"), True),
    "lexicographic-max": (_lexmax_ours, _lexmax_jax, _pair_same, lambda d: [_lowest(d), _lowest(d)],
                          ("float64", "int32"), True),
    "logaddexp": (_logaddexp_ours, jnp.logaddexp, _one, lambda d: [_lowest(d)], ("float32", "float64"), False),
    "plus-product": (lambda a, b: a + b + a * b, lambda a, b: a + b + a * b, _small, lambda d: [np.zeros((), d)],
                     ("int32", "float64"), False),
    "clipped-max": (lambda a, b: rt.lax.max(a, rt.lax.min(b, 2)),
                    lambda a, b: lax.max(a, lax.min(b, lax.full_like(b, 2))), _one,
                    lambda d: [_lowest(d)], ("float64", "int32"), True),
}  # fmt: skip
GENERAL_CASES = [(name, d) for name, row in GENERAL.items() for d in row[4]]
REDUCE_DIMS = [(1,), (0, 2), (), (0, 1, 2), (2, 1)]
GENERAL_WINDOWS = [
    ((2, 3, 2), (1, 1, 1), "VALID", None, None),
    ((2, 2, 1), (2, 1, 1), "SAME", (1, 2, 1), (1, 1, 2)),
    ((1, 3, 2), (1, 2, 1), ((1, 0), (0, 2), (1, 1)), None, (2, 1, 1)),
    ((4, 1, 1), (1, 1, 1), "VALID", None, None),  # no window fits: an empty result
]


def _check(got: Any, want: Any, exact: bool, what: str) -> None:
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        assert g.dtype.name == str(w.dtype) and g.shape == w.shape, (what, g.dtype, g.shape, w.dtype, w.shape)
        if exact:
            np.testing.assert_array_equal(g.numpy().astype(np.float64), w.astype(np.float64), err_msg=what)
        else:
            np.testing.assert_allclose(g.numpy().astype(np.float64), w.astype(np.float64), rtol=1e-5, atol=1e-6,
                                       err_msg=what)  # fmt: skip


@pytest.mark.parametrize(("row", "dtype"), GENERAL_CASES, ids=[f"{r}-{d}" for r, d in GENERAL_CASES])
def test_a_general_computation_equals_jax(row: str, dtype: str) -> None:
    """Every reduce and window layout of a row in one jitted JAX program: values and dtypes."""
    ours, theirs, operands, inits, _, exact = GENERAL[row]
    xs, empty = operands(dtype, (3, 5, 4)), operands(dtype, (3, 0, 4))
    init = inits(dtype)
    tupled = len(xs) > 1

    def pack(v: list[Any]) -> Any:
        return tuple(v) if tupled else v[0]

    def lax_cases(xs: list[Any], empty: list[Any]) -> list[Any]:
        out = [lax.reduce(pack(xs), pack(init), theirs, dims) for dims in REDUCE_DIMS]
        out.append(lax.reduce(pack(empty), pack(init), theirs, (1,)))
        out += [lax.reduce_window(pack(xs), pack(init), theirs, *w) for w in GENERAL_WINDOWS]
        return out

    with jax.enable_x64(True):
        want = jax.jit(lax_cases)(xs, empty)
    ts, te = [rt.asarray(x) for x in xs], [rt.asarray(x) for x in empty]
    got = [rt.lax.reduce(pack(ts), pack(init), ours, dims) for dims in REDUCE_DIMS]
    got.append(rt.lax.reduce(pack(te), pack(init), ours, (1,)))
    got += [rt.lax.reduce_window(pack(ts), pack(init), ours, *w) for w in GENERAL_WINDOWS]
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        _check(g if tupled else (g,), w if tupled else (w,), exact, f"{row} {dtype} case {k}")


@pytest.mark.parametrize(("monoid", "ours", "theirs", "init", "dtype"), [
    ("mul", rt.lax.mul, lax.mul, 1, "float64"),
    ("mul", rt.lax.mul, lax.mul, 1, "int32"),
    ("and", rt.lax.logical_and, lax.bitwise_and, True, "bool"),
    ("xor", rt.lax.logical_xor, lax.bitwise_xor, False, "bool"),
])  # fmt: skip
def test_a_monoid_without_a_windowed_op_runs_as_a_general_window(
    monoid: str, ours: Any, theirs: Any, init: Any, dtype: str
) -> None:
    x = _data(dtype, (4, 6))
    lax_init = np.array(init, dtype)
    with jax.enable_x64(True):
        want = jax.jit(lambda x: [lax.reduce_window(x, lax_init, theirs, *w[:3]) for w in WINDOWS])(x)
    for w, expected in zip(WINDOWS, want, strict=True):
        got = rt.lax.reduce_window(rt.asarray(x), init, ours, *w[:3])
        _check((got,), (expected,), dtype != "float64", f"{monoid} {w}")


def test_one_element_is_its_own_reduction_as_in_xla() -> None:
    """XLA's CPU backend turns a reduce of one element (no dimensions, or axes of size 1) into a
    reshape, dropping a non-identity init value; over no element the result is the init value."""
    x = _data("int32", (3, 1, 4)) + 3
    clipped_ours, clipped_jax = GENERAL["clipped-max"][:2]
    layouts = [(), (1,), (0,)]

    def theirs(x: Any) -> list[Any]:
        return [lax.reduce(x, np.int32(10), lax.add, d) for d in layouts] + [
            lax.reduce(x, np.int32(-100), clipped_jax, d) for d in layouts
        ]

    with jax.enable_x64(True):
        want = jax.jit(theirs)(x)
    t = rt.asarray(x)
    got = [rt.lax.reduce(t, 10, rt.lax.add, d) for d in layouts] + [
        rt.lax.reduce(t, -100, clipped_ours, d) for d in layouts
    ]
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        _check((g,), (w,), True, f"layout {k}")
    assert np.array_equal(got[0].numpy(), x) and np.array_equal(got[2].numpy(), x.sum(0) + 10)  # init once over 3


def test_a_non_associative_computation_gives_the_trees_value_in_every_mode() -> None:
    """XLA's CPU fold and castwise's pairwise tree differ for ``a + 2 b`` (docs/jax.md): castwise
    gives its tree's value eagerly and under jit, ``c(0, c(c(1, 5), 3))`` = 34 (XLA's: 18)."""
    import autodiff

    x = rt.asarray(np.array([[1.0, 5.0, 3.0]]))

    def f(t: Any) -> Any:
        return rt.lax.reduce(t, 0.0, lambda a, b: a + 2 * b, (1,))

    assert f(x).tolist() == [34.0]
    assert autodiff.jit(f)(x).tolist() == [34.0]
    with jax.enable_x64(True):
        assert lax.reduce(np.array([[1.0, 5.0, 3.0]]), 0.0, lambda a, b: a + 2 * b, (1,)).tolist() == [18.0]


def _bad_computations() -> list[tuple[str, Callable[[], Any], type[Exception], str]]:
    x, idx = rt.asarray(_data("float64", (3, 4))), rt.asarray(_index((3, 4)))
    w = rt.asarray(2.0, requires_grad=True)
    return [
        ("not-elementwise", lambda: rt.lax.reduce(x, 0.0, lambda a, b: rt.lax.reshape(a + b, (1,)), (1,)),
         ReduceComputationError, "one 0-d value per operand"),
        ("uses-a-reduction", lambda: rt.lax.reduce(x, 0.0, lambda a, b: a + rt.lax.reduce_sum(b, ()), (1,)),
         ReduceComputationError, "elementwise"),
        ("wrong-dtype", lambda: rt.lax.reduce(x, 0.0, lambda a, b: rt.lax.convert(a * b, rt.float32), (1,)),
         ReduceComputationError, r"f64\[\]\); it returns f32\[\]"),
        ("wrong-count", lambda: rt.lax.reduce((x, idx), (0.0, 0), lambda a, b: a[0] * b[0], (1,)),
         ReduceComputationError, "one 0-d value per operand"),
        ("closes-over-tracked", lambda: rt.lax.reduce(x, 0.0, lambda a, b: a + w * b, (1,)),
         ReduceComputationError, "closes over a tracked or traced Tensor"),
        ("not-callable", lambda: rt.lax.reduce(x, 0.0, "add", (1,)), ReduceComputationError, "callable"),
        ("operand-shapes", lambda: rt.lax.reduce((x, rt.asarray(_index((3, 5)))), (0.0, 0), _argmax_ours, (1,)),
         rt.ShapeError, "one shape"),
        ("dimension-range", lambda: rt.lax.reduce(x, 0.0, lambda a, b: a * b + a, (2,)), rt.ShapeError, "rank-2"),
        ("dimension-repeated", lambda: rt.lax.reduce(x, 0.0, lambda a, b: a * b + a, (1, 1)), rt.ShapeError,
         "distinct"),
        ("dimension-type", lambda: rt.lax.reduce(x, 0.0, lambda a, b: a * b + a, (1.5,)), rt.OpTypeError, "ints"),
        ("window-rank", lambda: rt.lax.reduce_window((x, idx), (0.0, 0), _argmax_ours, (2,)), rt.ShapeError,
         "reduce_window"),
        ("no-operand", lambda: rt.lax.reduce((), (), _argmax_ours, (0,)), rt.ShapeError, "at least one"),
    ]  # fmt: skip


@pytest.mark.parametrize("case", _bad_computations(), ids=lambda c: c[0])
def test_a_computation_castwise_cannot_run_raises_a_named_error(case: Any) -> None:
    _, call, error, match = case
    with pytest.raises(error, match=match) as info:
        call()
    message = str(info.value)
    assert message.startswith(("reduce:", "reduce_window:")) and "policy 'jax'" in message, message
    assert issubclass(ReduceComputationError, rt.OpTypeError)


def test_a_refused_computation_records_nothing() -> None:
    """The checks run before the first op: a refused call leaves no equation behind."""

    def f(t: Any) -> Any:
        with pytest.raises(ReduceComputationError):
            rt.lax.reduce(t, 0.0, lambda a, b: rt.lax.convert(a, rt.float32), (0,))
        return t

    graph = rt.trace(f, rt.asarray(_data("float64", (3,))))
    assert graph.eqns == []


def test_derivatives_batching_and_jit_follow_the_monoid_ops() -> None:
    x = _data("float64", (3, 4))

    def ours(t: Any) -> Any:
        s = rt.lax.reduce(t, 0.0, rt.lax.mul, (1,))
        w = rt.lax.reduce_window(t, -np.inf, rt.lax.max, (2, 2), (1, 1), "SAME")
        return rt.lax.reduce_sum(s, (0,)) + rt.lax.reduce_sum(w, (0, 1))

    def theirs(t: Any) -> Any:
        s = lax.reduce(t, 1.0, lax.mul, (1,))
        w = lax.reduce_window(t, -jnp.inf, lax.max, (2, 2), (1, 1), "SAME")
        return jnp.sum(s) + jnp.sum(w)

    def ours_ident(t: Any) -> Any:  # init 1.0: mul's identity
        s = rt.lax.reduce(t, 1.0, rt.lax.mul, (1,))
        w = rt.lax.reduce_window(t, -np.inf, rt.lax.max, (2, 2), (1, 1), "SAME")
        return rt.lax.reduce_sum(s, (0,)) + rt.lax.reduce_sum(w, (0, 1))

    with jax.enable_x64(True):
        want = jax.grad(theirs)(x)
        want_v = jax.vmap(theirs)(np.stack([x, 2 * x]))
    np.testing.assert_allclose(autodiff.grad(ours_ident)(rt.asarray(x)).numpy(), np.asarray(want), rtol=1e-10)
    np.testing.assert_allclose(autodiff.vmap(ours_ident)(rt.asarray(np.stack([x, 2 * x]))).numpy(), np.asarray(want_v),
                               rtol=1e-10)  # fmt: skip
    np.testing.assert_allclose(autodiff.jit(ours_ident)(rt.asarray(x)).numpy(), ours_ident(rt.asarray(x)).numpy())
    # a non-identity init is combined once (XLA's CPU result): zero here, and its gradient too
    assert ours(rt.asarray(x)).numpy() == pytest.approx(ours_ident(rt.asarray(x)).numpy() - np.prod(x, 1).sum())
