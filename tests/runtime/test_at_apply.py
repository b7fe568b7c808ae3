"""``x.at[index].apply(func)`` (issue 23), held to jax.numpy's ``.at[].apply``.

Oracle: the same call in jax.numpy (values and dtypes), which applies ``func`` once per
occurrence of a position (``lax.scatter_apply``). JAX defines no derivative for it; castwise's
result is a composition of gathers, ``func`` and scatters, so its gradient is the chain rule,
checked here against central finite differences, and its vmap and jit against the eager values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402

RNG = np.random.default_rng(23)
X = RNG.uniform(0.5, 1.5, (4, 5))

#: (label, index, func for castwise, func for jax.numpy, x)
ROWS: list[tuple[str, Any, Callable[[Any], Any], Callable[[Any], Any], np.ndarray]] = [
    ("int", 2, rt.sin, jnp.sin, X[0]),
    ("negative-int", -1, rt.exp, jnp.exp, X[0]),
    ("row", 1, lambda v: v * 2, lambda v: v * 2, X),
    ("slice", np.s_[1:3], rt.sqrt, jnp.sqrt, X),
    ("strided-slice", np.s_[::2, 1::2], lambda v: -v, lambda v: -v, X),
    ("array", np.array([0, 3, 4]), rt.log, jnp.log, X[0]),
    ("repeated", np.array([1, 1, 1, 3]), lambda v: v * 2 + 1, lambda v: v * 2 + 1, X[0]),
    ("repeated-sin", np.array([2, 0, 2]), rt.sin, jnp.sin, X[1]),
    ("2d-pairs", (np.array([0, 2, 0]), np.array([1, 4, 1])), rt.tanh, jnp.tanh, X),
    ("mixed", (np.array([3, 0, 3]), np.s_[1:4]), lambda v: v * v, lambda v: v * v, X),
    ("mask", X > 1.0, lambda v: v - 1, lambda v: v - 1, X),
    ("ellipsis", (Ellipsis, 0), rt.abs, jnp.abs, X),
    ("out-of-bounds-dropped", np.array([1, 9]), lambda v: v * 10, lambda v: v * 10, X[0]),
    ("empty-index", np.array([], dtype=np.int64), rt.sin, jnp.sin, X[0]),
    ("int32-values", np.array([0, 0, 2]), lambda v: v * 3, lambda v: v * 3, np.arange(5, dtype=np.int32)),
    ("float32-values", np.array([4, 4]), rt.sin, jnp.sin, X[0].astype(np.float32)),
    ("bool-values", np.array([1, 2]), rt.logical_not, jnp.logical_not, np.array([True, False, True])),
    ("complex-values", 1, rt.conj, jnp.conj, X[0] + 1j * X[1]),
    ("scalar-operand", (), lambda v: v + 1, lambda v: v + 1, np.asarray(2.0)),
]


@pytest.mark.parametrize(("label", "index", "fn", "jfn", "x"), ROWS, ids=[r[0] for r in ROWS])
def test_apply_matches_jax_numpy(label: str, index: Any, fn: Any, jfn: Any, x: np.ndarray) -> None:
    jindex = tuple(jnp.asarray(i) if isinstance(i, np.ndarray) else i for i in index) if type(index) is tuple else index
    if isinstance(jindex, np.ndarray):
        jindex = jnp.asarray(jindex)
    want = np.asarray(jnp.asarray(x).at[jindex].apply(jfn))
    with rt.use_policy("jax"):
        got = rt.asarray(x).at[index].apply(fn)
    assert got.dtype.name == want.dtype.name, label
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6 if want.dtype == np.float32 else 1e-14)


def test_a_repeated_position_gets_func_once_per_occurrence() -> None:
    calls: list[int] = []

    def counted(v: Any) -> Any:
        calls.append(v.size)
        return v + 1

    out = rt.asarray(np.zeros(4)).at[np.array([1, 3, 1, 1])].apply(counted)
    assert out.tolist() == [0.0, 3.0, 0.0, 1.0]
    assert calls == [2, 1, 1]  # one round per repeat, each on the positions still owed one


@pytest.mark.parametrize("policy", ["numpy", "torch"])
def test_out_of_bounds_raises_where_the_policy_library_raises(policy: str) -> None:
    with rt.use_policy(policy), pytest.raises(IndexError, match=r"^at\[\.\.\.\]\.apply: "):
        rt.asarray(np.zeros(3)).at[np.array([0, 5])].apply(rt.sin)


def test_a_bad_index_names_apply() -> None:
    """As the other .at updates: IndexError, here naming apply and x (not the counts it computes)."""
    with pytest.raises(IndexError, match=r"^at\[\.\.\.\]\.apply: indices must be .*\[operand f64\[5\]; policy 'jax'\]"):
        rt.asarray(X[0]).at["a"].apply(rt.sin)


def test_gradient_against_finite_differences() -> None:
    """JAX has no derivative for scatter_apply; castwise's is the chain rule of its composition."""
    idx = np.array([1, 3, 1])
    x0 = RNG.uniform(0.2, 1.0, 5)

    def f(x: Any) -> Any:
        return (x.at[idx].apply(rt.sin) ** 2).sum()

    got = autodiff.grad(f)(rt.asarray(x0)).numpy()
    eps = 1e-6
    fd = np.empty(5)
    for i in range(5):
        e = np.zeros(5)
        e[i] = eps
        fd[i] = (f(rt.asarray(x0 + e)).item() - f(rt.asarray(x0 - e)).item()) / (2 * eps)
    np.testing.assert_allclose(got, fd, rtol=1e-7, atol=1e-9)
    # by hand: position 1 is sin(sin(x)), 3 is sin(x), the rest x
    s1, s3 = np.sin(np.sin(x0[1])), np.sin(x0[3])
    assert got[1] == pytest.approx(2 * s1 * np.cos(np.sin(x0[1])) * np.cos(x0[1]), rel=1e-12)
    assert got[3] == pytest.approx(2 * s3 * np.cos(x0[3]), rel=1e-12)
    assert got[0] == pytest.approx(2 * x0[0], rel=1e-12)


def test_vmap_and_jit_agree_with_eager() -> None:
    idx = np.array([0, 2, 2])
    xs = RNG.standard_normal((3, 4))

    def f(x: Any) -> Any:
        return x.at[idx].apply(lambda v: v * 3 - 1)

    eager = np.stack([f(rt.asarray(r)).numpy() for r in xs])
    np.testing.assert_array_equal(autodiff.vmap(f)(rt.asarray(xs)).numpy(), eager)
    np.testing.assert_array_equal(autodiff.jit(f)(rt.asarray(xs[0])).numpy(), eager[0])
    want = np.stack([np.asarray(jnp.asarray(r).at[jnp.asarray(idx)].apply(lambda v: v * 3 - 1)) for r in xs])
    np.testing.assert_allclose(eager, want, rtol=1e-15)


#: (label, call, error class, the message's start after ``at[...].apply: ``)
_SAME = "func must return a Tensor of the selected values' dtype and shape, "
ERRORS: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    ("not-callable", lambda: rt.asarray(X[0]).at[1].apply(3), rt.ApplyError,
     "func must be a callable of one Tensor, got int"),
    ("changes-dtype", lambda: rt.asarray(np.arange(3, dtype=np.int64)).at[1].apply(lambda v: v.astype(rt.float64)),
     rt.ApplyError, _SAME + "int64[1] (it is applied elementwise, as JAX's), got float64[1]"),
    ("changes-shape", lambda: rt.asarray(X[0]).at[np.array([1, 2])].apply(lambda v: v.sum()),
     rt.ApplyError, _SAME + "float64[2]"),
    ("returns-no-tensor", lambda: rt.asarray(X[0]).at[1].apply(lambda v: 1.0),
     rt.ApplyError, _SAME + "float64[1] (it is applied elementwise, as JAX's), got float"),
]  # fmt: skip


@pytest.mark.parametrize(("label", "call", "cls", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(label: str, call: Callable[[], Any], cls: type[Exception], message: str) -> None:
    for policy in rt.policies():
        with rt.use_policy(policy), pytest.raises(cls) as info:
            call()
        text = str(info.value)
        assert isinstance(info.value, rt.CastwiseError)
        assert text.startswith(f"at[...].apply: {message}"), text
        assert f"policy {policy!r}" in text, text


def test_a_traced_index_is_refused() -> None:
    def f(x: Any, i: Any) -> Any:
        return x.at[i].apply(rt.sin)

    with pytest.raises(rt.ConcretizationIndexError, match=r"^at\[\.\.\.\]\.apply: the index is traced"):
        autodiff.jit(f)(rt.asarray(X[0]), rt.asarray(np.array([0, 1])))
