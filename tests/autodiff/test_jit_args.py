"""``autodiff.jit``'s ``static_argnums`` / ``static_argnames`` and keyword arguments, against ``jax.jit``.

Each row of the table calls the same function, written once for castwise and
once for ``jax.numpy``, through ``autodiff.jit`` and ``jax.jit`` with the same
options and the same sequence of calls: the values must agree, and so must the
number of times each traced the function (a trace counter in the function
body), i.e. which calls hit the cache and which retrace.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import autodiff
import runtime as rt
from autodiff.jit_args import JitArgumentError
from runtime.core import lax as F

jax = pytest.importorskip("jax")
jnp = jax.numpy

CW = SimpleNamespace(mul=F.mul, add=F.add, sub=F.sub, asarray=rt.asarray)
JX = SimpleNamespace(mul=jnp.multiply, add=jnp.add, subtract=jnp.subtract, asarray=jnp.asarray)
JX.sub = JX.subtract


def make(ops: SimpleNamespace) -> tuple[Callable[..., Any], list[int]]:
    """A function with a positional static candidate (n), a defaulted array (y), keyword-only
    parameters (scale, mode), and a trace counter."""
    count = [0]

    def f(x: Any, n: Any, y: Any = None, *, scale: Any = 1.0, mode: str = "add") -> Any:
        count[0] += 1
        r = ops.mul(x, float(n))
        r = ops.mul(r, scale)
        if y is not None:
            r = ops.add(r, y) if mode == "add" else ops.sub(r, y)
        return r

    return f, count


RNG = np.random.default_rng(0)
VALUES: dict[str, Any] = {
    "X": RNG.uniform(-1, 1, (3,)).astype(np.float32),
    "Y": RNG.uniform(-1, 1, (3,)).astype(np.float32),
    "S": np.float32(0.5),
    "X2": RNG.uniform(-1, 1, (2, 3)).astype(np.float32),
    "Y2": RNG.uniform(-1, 1, (2, 3)).astype(np.float32),
}

#: (options, calls): each call is (positional, keyword); a name of VALUES stands for that array
TABLE: list[tuple[dict[str, Any], list[tuple[tuple[Any, ...], dict[str, Any]]]]] = [
    ({"static_argnums": 1}, [(("X", 2), {}), (("X", 2), {}), (("X", 3), {})]),
    ({"static_argnums": (1,)}, [(("X", 2), {}), (("X",), {"n": 2}), (("X",), {"n": 2})]),
    ({"static_argnames": "n"}, [(("X",), {"n": 2}), (("X",), {"n": 2}), (("X", 2), {}), (("X", 2), {})]),
    ({"static_argnums": -1}, [(("X", 2), {}), (("X", 2), {}), (("X", 4), {})]),
    ({"static_argnums": -2}, [(("X", 2, "Y"), {}), (("X", 5, "Y"), {}), (("X", 5, "Y"), {})]),
    ({"static_argnums": 1}, [(("X", 2), {"y": "Y"}), (("X", 2, "Y"), {}), (("X", 2), {"y": "Y"})]),
    ({"static_argnums": 1}, [(("X", 2), {"y": "Y", "scale": "S"}), (("X", 2), {"scale": "S", "y": "Y"})]),
    ({"static_argnums": 1}, [(("X", 2), {"y": "Y"}), (("X2", 2), {"y": "Y2"}), (("X", 2), {"y": "Y"})]),
    ({"static_argnums": 1}, [(("X", 2), {}), (("X", 2.0), {}), (("X", True), {}), (("X", 2), {})]),
    (
        {"static_argnames": ("n", "mode")},
        [(("X", 2, "Y"), {"mode": "sub"}), (("X", 2, "Y"), {"mode": "add"}), (("X", 2, "Y"), {"mode": "sub"})],
    ),
    ({"static_argnames": ("n", "scale")}, [(("X", 3), {"scale": 2.0}), (("X", 3), {"scale": 2.0}), (("X", 3), {})]),
    ({"static_argnames": "n"}, [((), {"x": "X", "n": 2}), ((), {"n": 2, "x": "X"}), ((), {"x": "X2", "n": 2})]),
    ({"static_argnums": 1, "static_argnames": ("mode",)}, [(("X", 2, "Y"), {"mode": "sub"}), (("X", 2, "Y"), {})]),
]


def _bind(call: tuple[tuple[Any, ...], dict[str, Any]], ops: SimpleNamespace) -> tuple[list[Any], dict[str, Any]]:
    def value(v: Any) -> Any:
        return ops.asarray(VALUES[v]) if isinstance(v, str) and v in VALUES else v

    args, kwargs = call
    return [value(a) for a in args], {k: value(v) for k, v in kwargs.items()}


@pytest.mark.parametrize(("options", "calls"), TABLE, ids=[f"row{i}" for i in range(len(TABLE))])
def test_call_patterns_match_jax_jit(options: dict[str, Any], calls: list[Any]) -> None:
    f, ours = make(CW)
    g, theirs = make(JX)
    jitted, reference = autodiff.jit(f, **options), jax.jit(g, **options)
    for call in calls:
        args, kwargs = _bind(call, CW)
        jargs, jkwargs = _bind(call, JX)
        got, want = jitted(*args, **kwargs), reference(*jargs, **jkwargs)
        assert got.dtype is rt.float32
        np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-6)
        eager = f(*args, **kwargs)  # (counted: compare the counts before it)
        ours[0] -= 1
        np.testing.assert_allclose(got.numpy(), eager.numpy(), rtol=1e-6)
        assert ours[0] == theirs[0], (call, ours[0], theirs[0])
    assert jitted.traces == ours[0]


def test_static_argnums_and_argnames_are_inferred_from_each_other() -> None:
    f, _ = make(CW)
    assert autodiff.jit(f, static_argnums=1).static_argnames == {"n"}
    assert autodiff.jit(f, static_argnames=("n", "mode")).static_argnums == (1,)  # mode is keyword-only
    assert autodiff.jit(f, static_argnums=-1).static_argnames == frozenset()  # resolved per call, as jax
    both = autodiff.jit(f, static_argnums=0, static_argnames="mode")  # both given: taken as they are
    assert both.static_argnums == (0,) and both.static_argnames == {"mode"}


def test_a_static_value_is_passed_as_it_is_and_keyed_by_value() -> None:
    seen: list[Any] = []

    def f(x: Any, spec: Any) -> Any:
        seen.append(spec)
        return F.mul(x, float(len(spec)))

    jitted = autodiff.jit(f, static_argnums=1)
    x = rt.asarray(VALUES["X"])
    jitted(x, ("a", "b"))
    jitted(x, ("a", "b"))  # an equal tuple: the cache
    jitted(x, ("a", "b", "c"))
    assert seen == [("a", "b"), ("a", "b", "c")] and jitted.traces == 2


def test_zero_and_negative_zero_statics_trace_apart() -> None:
    # castwise keys float statics by repr, as it keys Python scalars: 1 / n differs (jax.jit's
    # cache compares with ==, so there -0.0 would reuse 0.0's program)
    jitted = autodiff.jit(lambda x, n: F.mul(x, float(np.copysign(1.0, n))), static_argnums=1)
    x = rt.asarray(VALUES["X"])
    np.testing.assert_array_equal(jitted(x, 0.0).numpy(), VALUES["X"])
    np.testing.assert_array_equal(jitted(x, -0.0).numpy(), -VALUES["X"])
    assert jitted.traces == 2


def test_keyword_calls_do_not_take_the_positional_fast_path() -> None:
    jitted = autodiff.jit(lambda x, y=None: x if y is None else F.add(x, y))
    x, y = rt.asarray(VALUES["X"]), rt.asarray(VALUES["Y"])
    np.testing.assert_allclose(jitted(x, y=y).numpy(), VALUES["X"] + VALUES["Y"])
    np.testing.assert_array_equal(jitted(x).numpy(), VALUES["X"])  # the default, not the keyword entry
    np.testing.assert_array_equal(jitted(x).numpy(), VALUES["X"])  # now the fast path
    np.testing.assert_allclose(jitted(x, y=y).numpy(), VALUES["X"] + VALUES["Y"])
    np.testing.assert_allclose(jitted(x, y).numpy(), VALUES["X"] + VALUES["Y"])
    assert jitted.traces == 3  # (x, y=y), (x,), (x, y): three signatures, as jax.jit


@pytest.mark.parametrize(
    ("call", "where"),
    [
        ((("X", [1, 2]), {}), "argument 1"),
        ((("X", {"a": 1}), {}), "argument 1"),
        ((("X",), {"n": [2]}), "keyword argument 'n'"),
    ],
)
def test_unhashable_statics_raise_like_jax(call: Any, where: str) -> None:
    f, _ = make(CW)
    g, _ = make(JX)
    args, kwargs = _bind(call, CW)
    with pytest.raises(JitArgumentError) as err:
        autodiff.jit(f, static_argnums=1)(*args, **kwargs)
    assert isinstance(err.value, rt.CastwiseError) and isinstance(err.value, ValueError)
    message = str(err.value)
    assert message.startswith("autodiff.jit(f): ") and where in message and "hashable" in message
    assert "tuple instead of a list" in message  # the fix
    jargs, jkwargs = _bind(call, JX)
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        jax.jit(g, static_argnums=1)(*jargs, **jkwargs)


def test_an_array_static_is_refused_like_jax() -> None:
    f, _ = make(CW)
    g, _ = make(JX)
    with pytest.raises(JitArgumentError, match=r"autodiff.jit\(f\): argument 1 is static .* array \(Tensor\)"):
        autodiff.jit(f, static_argnums=1)(rt.asarray(VALUES["X"]), rt.asarray(VALUES["Y"]))
    with pytest.raises(JitArgumentError, match="array"):
        autodiff.jit(f, static_argnums=1)(rt.asarray(VALUES["X"]), VALUES["Y"])
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        jax.jit(g, static_argnums=1)(jnp.asarray(VALUES["X"]), jnp.asarray(VALUES["Y"]))


@pytest.mark.parametrize("nums", [3, -4, (1, 7), (-5,)])
def test_out_of_range_static_argnums_raise_like_jax(nums: Any) -> None:
    f, _ = make(CW)
    g, _ = make(JX)
    with pytest.raises(JitArgumentError) as err:
        autodiff.jit(f, static_argnums=nums)
    message = str(err.value)
    assert isinstance(err.value, rt.CastwiseError) and isinstance(err.value, ValueError)
    assert "autodiff.jit(f): static_argnums=" in message and "out of range" in message
    assert "takes 3 positional arguments" in message and "from -3 to 2" in message
    with pytest.raises(ValueError, match="only accepts 3 positional arguments"):
        jax.jit(g, static_argnums=nums)


def test_static_argnums_past_the_parameters_are_fine_with_varargs() -> None:
    def f(x: Any, *rest: Any) -> Any:
        return F.mul(x, float(sum(rest)))

    jitted = autodiff.jit(f, static_argnums=5)  # no check with *args, as jax
    np.testing.assert_allclose(jitted(rt.asarray(VALUES["X"]), 2.0).numpy(), VALUES["X"] * 2)


def test_bad_static_argnames_raise_like_jax() -> None:
    f, _ = make(CW)
    g, _ = make(JX)
    with pytest.raises(JitArgumentError, match=r"autodiff.jit\(f\): static_argnames names 'zz', which f does not"):
        autodiff.jit(f, static_argnames="zz")
    with pytest.raises(ValueError, match="invalid argnames"):
        jax.jit(g, static_argnames="zz")

    def p(x: Any, n: Any, /) -> Any:
        return F.mul(x, float(n))

    with pytest.raises(JitArgumentError, match="positional-only parameter.* n of p; pass their positions"):
        autodiff.jit(p, static_argnames="n")
    with pytest.raises(ValueError, match="positional-only"):
        jax.jit(p, static_argnames="n")
    with pytest.raises(JitArgumentError, match="static_argnums must be an int"):
        autodiff.jit(f, static_argnums="n")  # type: ignore[arg-type]
    with pytest.raises(JitArgumentError, match="static_argnames must be a str"):
        autodiff.jit(f, static_argnames=(1,))  # type: ignore[arg-type]


def test_a_bad_keyword_leaf_names_the_keyword() -> None:
    jitted = autodiff.jit(lambda x, y=None: x)
    with pytest.raises(TypeError, match="jit: keyword argument 'y' is a str"):
        jitted(rt.asarray(VALUES["X"]), y="abc")


def loss_cw(w: Any, n: Any, *, power: int = 1) -> Any:
    r = F.mul(F.sin(w), float(n))
    for _ in range(power - 1):
        r = F.mul(r, r)
    return F.reduce_sum(r, (0,))


def loss_jx(w: Any, n: Any, *, power: int = 1) -> Any:
    r = jnp.sin(w) * float(n)
    for _ in range(power - 1):
        r = r * r
    return jnp.sum(r)


def test_grad_of_a_jitted_function_with_a_static_argument() -> None:
    w = VALUES["X"]
    want = jax.grad(jax.jit(loss_jx, static_argnums=1, static_argnames="power"))(jnp.asarray(w), 3, power=2)
    jitted = autodiff.jit(loss_cw, static_argnums=1, static_argnames="power")
    # autodiff.grad takes positional arguments: the keyword goes through a closure
    got = autodiff.grad(lambda v: jitted(v, 3, power=2))(rt.asarray(w))  # recorded: runs eagerly inside grad
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-5)
    want = jax.grad(jax.jit(loss_jx, static_argnums=1))(jnp.asarray(w), 3)
    got = autodiff.grad(autodiff.jit(loss_cw, static_argnums=1))(rt.asarray(w), 3)
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-5)


def test_jit_of_grad_with_a_static_argument() -> None:
    w = rt.asarray(VALUES["X"])
    step = autodiff.jit(autodiff.grad(loss_cw), static_argnums=1)
    # grad's function takes (*args): no name to infer, and any position is in range
    assert list(inspect.signature(autodiff.grad(loss_cw)).parameters) == ["args"]
    assert step.static_argnames == frozenset()
    for n in (2, 2, 3, 3):
        want = jax.jit(jax.grad(loss_jx), static_argnums=1)(jnp.asarray(VALUES["X"]), n)
        np.testing.assert_allclose(step(w, n).numpy(), np.asarray(want), rtol=1e-5)
    assert step.traces == 2


def test_inspection_methods_take_keyword_and_static_arguments() -> None:
    jitted = autodiff.jit(loss_cw, static_argnames=("n", "power"))
    w = rt.asarray(VALUES["X"])
    graph = jitted.lower(w, n=2, power=2)
    assert len(graph.inputs) == 1  # the statics are baked in
    assert "stablehlo.sine" in jitted.export(w, n=2, power=2)
    (out,) = jitted.jax_function(w, n=2, power=2)(VALUES["X"])
    np.testing.assert_allclose(np.asarray(out), jitted(w, n=2, power=2).numpy(), rtol=1e-6)
    assert jitted.compile_seconds(w, n=2, power=2) is not None and jitted.traces == 1
