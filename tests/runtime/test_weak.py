"""JAX's weak types: the flag on values, its promotion, and its propagation, against JAX.

Oracles: ``jax.lax`` primitives for the per-op propagation rules (table-driven
over the whole vocabulary: an op without a row fails), ``jax.numpy`` for the
promotion of weak values and for random programs (dtype, weak flag, values).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import ml_dtypes
import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from jax import lax  # noqa: E402
from jax._src.dtypes import is_weakly_typed  # noqa: E402
from jax._src.lax import windowed_reductions as wr  # noqa: E402
from jax._src.lax.lax import _convert_element_type  # noqa: E402

import autodiff  # noqa: E402,F401
import runtime as rt  # noqa: E402
from passes.promote import promote  # noqa: E402
from passes.verify import verify  # noqa: E402
from runtime.core import lax as F  # noqa: E402
from runtime.core import ops  # noqa: E402
from runtime.core.graph import trace  # noqa: E402
from runtime.core.weak import WEAK_RULES, output_weak  # noqa: E402

# -- the examples --------------------------------------------------------------------


def test_asarray_of_a_python_scalar_is_weak_as_in_jax_numpy() -> None:
    for value in (2.5, 2, 1 + 2j, True, [1.0, 2.0]):
        assert rt.asarray(value).weak == is_weakly_typed(jnp.asarray(value)), value
    assert not rt.asarray(2.5, dtype="float64").weak  # an explicit dtype is strong, as in JAX
    assert not rt.asarray(np.float64(2.5)).weak


def test_weak_times_python_scalar_stays_weak() -> None:
    x = rt.asarray(2.5)
    y = x * 2.5
    assert y.weak and y.dtype is rt.float64
    assert is_weakly_typed(jnp.asarray(2.5) * 2.5)


def test_int8_times_float_is_weak_so_bfloat16_wins() -> None:
    i8 = np.array([1, 2, 3], np.int8)
    bf = np.array([0.5, 1.5, 2.5], ml_dtypes.bfloat16)
    ours = (rt.asarray(i8) * 2.5) + rt.asarray(bf)
    theirs = (jnp.asarray(i8) * 2.5) + jnp.asarray(bf)
    assert ours.dtype is rt.bfloat16 and theirs.dtype == jnp.bfloat16
    np.testing.assert_array_equal(ours.numpy().astype(np.float64), np.asarray(theirs).astype(np.float64))


def test_tanh_of_a_weak_scalar_is_weak_so_float16_wins() -> None:
    h = np.array([1.0, 2.0], np.float16)
    ours = rt.tanh(rt.asarray(0.5)) + rt.asarray(h)
    theirs = jnp.tanh(jnp.asarray(0.5)) + jnp.asarray(h)
    assert ours.dtype is rt.float16 and theirs.dtype == jnp.float16
    np.testing.assert_array_equal(ours.numpy(), np.asarray(theirs))


def test_full_zeros_and_ones_are_weak_as_in_jax_numpy() -> None:
    for ours, theirs in [(F.full((2,), 2.5), jnp.full((2,), 2.5)), (F.full((2,), 2), jnp.full((2,), 2)),
                         (F.full((2,), 2.5, "float32"), jnp.full((2,), 2.5, jnp.float32)),
                         (F.full((2,), True), jnp.full((2,), True)),
                         (F.zeros((2,)), jnp.zeros((2,))), (F.ones((2,)), jnp.ones((2,)))]:  # fmt: skip
        assert ours.weak == bool(is_weakly_typed(theirs)) and ours.dtype.storage == theirs.dtype, (ours, theirs)


def test_convert_drops_the_flag() -> None:
    assert not rt.asarray(0.5).astype("float64").weak
    assert not is_weakly_typed(jnp.asarray(0.5).astype(jnp.float64))


@pytest.mark.parametrize("method", ["sum", "prod", "max", "min", "mean"])
def test_tensor_reductions_drop_the_flag_as_jax_numpy_does(method: str) -> None:
    ours = getattr(rt.asarray(2.5), method)()
    theirs = getattr(jnp, method)(jnp.asarray(2.5))
    assert ours.weak == is_weakly_typed(theirs) and ours.dtype.storage == theirs.dtype


def test_other_policies_have_no_weak_results() -> None:
    for policy in ("numpy", "torch", "strict", "neuron"):
        with rt.policy(policy):
            assert not rt.asarray(2.5).weak
            assert not (rt.asarray(np.ones(2, np.float32)) * 2.5).weak


def test_jax_strict_keeps_weak_flags() -> None:
    with rt.policy("jax-strict"):
        x = rt.asarray(2.5)
        assert x.weak and (x * 2.0).weak
        assert (x + rt.asarray(np.ones(2, np.float16))).dtype is rt.float16


# -- the abstract value: recording, printing, tracing, passes, lowering ------------------------


def test_printer_shows_weak_values_with_jax_s_tilde() -> None:
    graph = trace(lambda x: x * 2.5, np.ones(3, np.int8))
    assert str(graph) == (
        "{ lambda a:~f64[] ; b:i8[3] . let\n"
        "    c:~f64[3] = convert[to=f64 weak_type=True] b\n"
        "    d:~f64[3] = mul c a\n"
        "  in (d) }"
    )
    verify(graph)


def test_trace_of_a_python_scalar_example_is_a_weak_input() -> None:
    graph = trace(lambda x: rt.tanh(x) + 1, 0.5)
    assert str(graph) == (
        "{ lambda a:~f64[] ; b:~f64[] . let\n    c:~f64[] = tanh b\n    d:~f64[] = add c a\n  in (d) }"
    )


def test_recording_keeps_the_flag_and_backward_runs() -> None:
    x = rt.asarray(0.5, requires_grad=True)
    assert x.weak and x.node.weak
    y = rt.tanh(x) * 3.0
    assert y.weak and y.node.weak
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * (1 - np.tanh(0.5) ** 2))


def test_promote_pass_plans_weak_values_as_eager_does() -> None:
    from passes.build import GraphBuilder

    b = GraphBuilder()
    x = b.input("i8", (3,))
    w = b.input("f64", ())
    w.weak = True
    raw = b.build(b.raw("mul", x, w, out=("f64", (3,))))
    promoted = promote(raw, "jax")
    verify(promoted)
    assert "convert[to=f64 weak_type=True]" in str(promoted)
    assert promoted.outputs[0].weak
    strong = promote(raw, "numpy")
    assert "weak_type" not in str(strong) and not strong.outputs[0].weak


def test_verify_rejects_a_wrong_weak_flag() -> None:
    graph = trace(lambda x: x * 2.5, 1.5)
    graph.eqns[0].outputs[0].weak = False
    with pytest.raises(rt.GraphError, match="weak"):
        verify(graph)


def test_lowering_keeps_the_weak_flag() -> None:
    from passes.lower_jax import lower_to_jax

    graph = trace(lambda x: rt.tanh(x * 2.5), np.ones(3, np.int8))
    out = lower_to_jax(graph)(np.ones(3, np.int8))[0]
    expected = jnp.tanh(jnp.ones(3, jnp.int8) * 2.5)
    assert is_weakly_typed(out) and is_weakly_typed(expected)
    np.testing.assert_allclose(np.asarray(out), np.asarray(expected))


# -- propagation: one row per op of the vocabulary, against jax.lax ------------------------------

_F = np.float64
_DN_GATHER = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
_DN_SCATTER = lax.ScatterDimensionNumbers(
    update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)


#: op -> (jax function of the operands, operand (dtype, shape) list, castwise params, which
#: operands take part in the weak combinations)
def _jax_geqrf(x: Any) -> Any:
    """The geqrf primitive (jax.lax.linalg does not export it at 0.10; jnp.linalg.qr(mode="raw") calls it)."""
    from jax._src.lax import linalg as lax_linalg

    return lax_linalg.geqrf(x)


ROWS: dict[str, tuple[Callable[..., Any], list[tuple[Any, tuple[int, ...]]], dict[str, Any]]] = {}
for _name in ("add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2"):
    ROWS[_name] = (getattr(lax, _name), [(_F, (3,)), (_F, (3,))], {})
ROWS["floor_div"] = (jnp.floor_divide, [(_F, (3,)), (_F, (3,))], {})
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    ROWS[_name] = (getattr(lax, _name), [(_F, (3,)), (_F, (3,))], {})
ROWS["and"] = (lax.bitwise_and, [(np.int64, (3,)), (np.int64, (3,))], {})
ROWS["or"] = (lax.bitwise_or, [(np.int64, (3,)), (np.int64, (3,))], {})
ROWS["xor"] = (lax.bitwise_xor, [(np.int64, (3,)), (np.int64, (3,))], {})
ROWS["dot_general"] = (
    lambda a, b: lax.dot_general(a, b, (((0,), (0,)), ((), ()))),
    [(_F, (3,)), (_F, (3,))],
    {"dimension_numbers": (((0,), (0,)), ((), ()))},
)
_WIN = {
    "window_dimensions": (2,),
    "window_strides": (1,),
    "padding": ((0, 0),),
    "base_dilation": (1,),
    "window_dilation": (1,),
}
ROWS["conv_general_dilated"] = (
    lambda a, b: lax.conv_general_dilated(a, b, (1,), "VALID"),
    [(_F, (1, 1, 3)), (_F, (1, 1, 2))],
    {"window_strides": (1,), "padding": ((0, 0),), "lhs_dilation": (1,), "rhs_dilation": (1,),
     "dimension_numbers": None, "feature_group_count": 1, "batch_group_count": 1},
)  # fmt: skip
ROWS["reduce_window_sum"] = (lambda a: lax.reduce_window(a, 0.0, lax.add, (2,), (1,), "VALID"), [(_F, (3,))], _WIN)
ROWS["reduce_window_max"] = (lambda a: lax.reduce_window(a, -np.inf, lax.max, (2,), (1,), "VALID"), [(_F, (3,))], _WIN)
ROWS["reduce_window_min"] = (lambda a: lax.reduce_window(a, np.inf, lax.min, (2,), (1,), "VALID"), [(_F, (3,))], _WIN)
ROWS["select_and_gather_add"] = (
    lambda t, x: wr._select_and_gather_add(t, x, lax.ge_p, (2,), (1,), ((0, 0),), (1,), (1,)),
    [(_F, (3,)), (_F, (3,))],
    {**_WIN, "select_prim": "ge"},
)
ROWS["select_and_scatter_add"] = (
    lambda s, x: wr._select_and_scatter_add(s, x, lax.ge_p, (2,), (1,), ((0, 0),)),
    [(_F, (2,)), (_F, (3,))],
    {**_WIN, "select_prim": "ge"},
)
ROWS["select"] = (lax.select, [(np.bool_, (3,)), (_F, (3,)), (_F, (3,))], {})
ROWS["clamp"] = (lax.clamp, [(_F, ()), (_F, (3,)), (_F, ())], {})
ROWS["concatenate"] = (lambda a, b: lax.concatenate([a, b], 0), [(_F, (3,)), (_F, (3,))], {"dimension": 0})
ROWS["scatter"] = (
    lambda o, i, u: lax.scatter(o, i, u, _DN_SCATTER),
    [(_F, (3,)), (np.int64, (1, 1)), (_F, (1,))],
    {},
)
ROWS["scatter_add"] = (
    lambda o, i, u: lax.scatter_add(o, i, u, _DN_SCATTER),
    [(_F, (3,)), (np.int64, (1, 1)), (_F, (1,))],
    {},
)
ROWS["scatter_mul"] = (
    lambda o, i, u: lax.scatter_mul(o, i, u, _DN_SCATTER),
    [(_F, (3,)), (np.int64, (1, 1)), (_F, (1,))],
    {},
)
ROWS["scatter_min"] = (
    lambda o, i, u: lax.scatter_min(o, i, u, _DN_SCATTER),
    [(_F, (3,)), (np.int64, (1, 1)), (_F, (1,))],
    {},
)
ROWS["scatter_max"] = (
    lambda o, i, u: lax.scatter_max(o, i, u, _DN_SCATTER),
    [(_F, (3,)), (np.int64, (1, 1)), (_F, (1,))],
    {},
)
ROWS["sort"] = (
    lambda a, b: tuple(lax.sort((a, b), dimension=0, num_keys=1)),
    [(_F, (3,)), (np.int64, (3,))],
    {"dimension": 0},
)
ROWS["top_k"] = (lambda x: tuple(lax.top_k(x, 2)), [(_F, (3,))], {"k": 2})
ROWS["split"] = (lambda x: tuple(lax.split(x, (1, 2), axis=0)), [(_F, (3,))], {"sizes": (1, 2), "axis": 0})
ROWS["optimization_barrier"] = (
    lambda a, b: tuple(lax.optimization_barrier((a, b))),
    [(_F, (3,)), (np.int64, (2,))],
    {},
)
ROWS["bitcast_convert_type"] = (
    lambda x: lax.bitcast_convert_type(x, np.int64),
    [(_F, (3,))],
    {"new_dtype": rt.int64},
)
ROWS["integer_pow"] = (lambda x: lax.integer_pow(x, 3), [(_F, (3,))], {"y": 3})
ROWS["stop_gradient"] = (lax.stop_gradient, [(_F, (3,))], {})
ROWS["select_n"] = (lax.select_n, [(np.bool_, (3,)), (_F, (3,)), (_F, (3,))], {})
ROWS["gather"] = (
    lambda o, i: lax.gather(o, i, _DN_GATHER, (1,)),
    [(_F, (3,)), (np.int64, (2, 1))],
    {},
)
# castwise's starts clamp (allow_negative_indices=False, as its lowering says): the start
# indices reach the primitive as they are
ROWS["dynamic_slice"] = (
    lambda o, i: lax.dynamic_slice(o, (i,), (2,), allow_negative_indices=False),
    [(_F, (3,)), (np.int64, ())],
    {},
)
ROWS["dynamic_update_slice"] = (
    lambda o, u, i: lax.dynamic_update_slice(o, u, (i,), allow_negative_indices=False),
    [(_F, (3,)), (_F, (1,)), (np.int64, ())],
    {},
)
for _name in ("neg", "abs", "sign", "exp", "log", "expm1", "log1p", "sin", "cos", "tanh", "logistic", "sqrt",
              "rsqrt", "square", "reciprocal"):  # fmt: skip
    ROWS[_name] = (getattr(lax, _name), [(_F, (3,))], {})
for _name in ("conj", "real", "imag"):
    ROWS[_name] = (getattr(lax, _name), [(np.complex128, (3,))], {})
ROWS["convert"] = (lambda x: lax.convert_element_type(x, np.float32), [(_F, (3,))], {"new_dtype": rt.float32})


def _reduction(fn: Callable[..., Any]) -> Callable[[Any], Any]:
    return lambda x: fn(x, (0,))


for _name in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min"):
    ROWS[_name] = (_reduction(getattr(lax, _name)), [(_F, (3,))], {"axes": (0,)})
ROWS["reshape"] = (lambda x: lax.reshape(x, (3, 1)), [(_F, (3,))], {"new_sizes": (3, 1)})
ROWS["transpose"] = (lambda x: lax.transpose(x, (1, 0)), [(_F, (2, 3))], {"permutation": (1, 0)})
ROWS["broadcast_in_dim"] = (
    lambda x: lax.broadcast_in_dim(x, (2, 3), (1,)),
    [(_F, (3,))],
    {"shape": (2, 3), "broadcast_dimensions": (1,)},
)
ROWS["slice"] = (lambda x: lax.slice(x, (0,), (2,)), [(_F, (3,))], {"start_indices": (0,), "limit_indices": (2,)})
ROWS["pad"] = (
    lambda x: lax.pad(x, 0.0, [(1, 1, 0)]),
    [(_F, (3,))],
    {"padding_config": ((1, 1, 0),), "padding_value": 0.0},
)
ROWS["reverse"] = (lambda x: lax.rev(x, (0,)), [(_F, (3,))], {"dimensions": (0,)})
ROWS["iota"] = (lambda: lax.iota(np.float64, 3), [], {"dtype": rt.float64, "shape": (3,), "dimension": 0})
ROWS["full"] = (lambda: lax.full((3,), 2.5, np.float64), [], {"shape": (3,), "fill_value": 2.5, "dtype": rt.float64})
ROWS["eigh"] = (lambda x: lax.linalg.eigh(x), [(_F, (2, 2))], {})
ROWS["cholesky"] = (lambda x: lax.linalg.cholesky(x), [(_F, (2, 2))], {})
ROWS["lu"] = (lambda x: lax.linalg.lu(x), [(_F, (2, 2))], {})
ROWS["qr"] = (lambda x: lax.linalg.qr(x), [(_F, (2, 2))], {})
ROWS["svd"] = (lambda x: lax.linalg.svd(x), [(_F, (2, 2))], {})
ROWS["eig"] = (lambda x: lax.linalg.eig(x), [(_F, (2, 2))], {})
ROWS["geqrf"] = (lambda x: _jax_geqrf(x), [(_F, (2, 2))], {})
for _name in (
    "floor",
    "ceil",
    "is_finite",
    "exp2",
    "sinh",
    "cosh",
    "tan",
    "asin",
    "acos",
    "atan",
    "asinh",
    "acosh",
    "atanh",
    "cbrt",
):
    ROWS[_name] = (getattr(lax, _name), [(_F, (3,))], {})
ROWS["round"] = (lax.round, [(_F, (3,))], {"rounding_method": 0})
ROWS["population_count"] = (lax.population_count, [(np.int64, (3,))], {})
ROWS["clz"] = (lax.clz, [(np.int64, (3,))], {})
ROWS["not"] = (lax.bitwise_not, [(np.int64, (3,))], {})
ROWS["nextafter"] = (lax.nextafter, [(_F, (3,)), (_F, (3,))], {})
ROWS["complex"] = (lax.complex, [(_F, (3,)), (_F, (3,))], {})
for _name in ("erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i0e", "bessel_i1e"):
    ROWS[_name] = (getattr(lax, _name), [(_F, (3,))], {})
for _name in ("polygamma", "zeta", "igamma", "igammac", "igamma_grad_a"):
    ROWS[_name] = (getattr(lax, _name), [(_F, (3,)), (_F, (3,))], {})
for _name in ("shift_left", "shift_right_arithmetic", "shift_right_logical"):
    ROWS[_name] = (getattr(lax, _name), [(np.int64, (3,)), (np.int64, (3,))], {})
for _name in ("argmax", "argmin"):
    ROWS[_name] = (partial(getattr(lax, _name), axis=0, index_dtype=np.int32), [(_F, (3,))],
                   {"axes": (0,), "index_dtype": rt.int32})  # fmt: skip
for _name in ("reduce_and", "reduce_or", "reduce_xor"):
    ROWS[_name] = (_reduction(getattr(lax, _name)), [(np.int64, (3,))], {"axes": (0,)})
ROWS["reduce_precision"] = (partial(lax.reduce_precision, exponent_bits=5, mantissa_bits=2), [(_F, (3,))],
                            {"exponent_bits": 5, "mantissa_bits": 2})  # fmt: skip
for _name in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"):
    ROWS[_name] = (partial(getattr(lax, _name), axis=0), [(_F, (3,))], {"axis": 0, "reverse": False})
ROWS["fft"] = (lambda x: lax.fft(x, "FFT", (3,)), [(np.complex128, (3,))], {"fft_type": "FFT", "fft_lengths": (3,)})
ROWS["triangular_solve"] = (
    lambda a, b: lax.linalg.triangular_solve(a, b, left_side=True, lower=True),
    [(_F, (2, 2)), (_F, (2, 2))],
    {"left_side": True, "lower": True},
)


def _operand(dtype: Any, shape: tuple[int, ...], weak: bool) -> Any:
    if dtype is np.bool_:
        value = np.ones(shape, np.bool_)
    elif len(shape) == 2 and shape[0] == shape[1]:
        value = np.eye(shape[0], dtype=dtype) * 2  # positive definite, triangular
    elif (len(shape) == 2 and shape[1] == 1) or (dtype is np.int64 and shape != (3,)):
        value = np.zeros(shape, dtype)  # indices
    else:
        value = np.ones(shape, dtype)
    return _convert_element_type(jnp.asarray(value), np.dtype(dtype), weak)


#: ops whose outputs' weak flags are not a function of the operands' flags alone
_NOT_LAX = {
    "custom_jvp_call": "a user call: JAX's result is weak as the user's function makes it; castwise's is strong",
    "custom_vjp_call": "a user call: JAX's result is weak as the user's function makes it; castwise's is strong",
}


def test_every_op_has_a_weak_row_and_a_rule() -> None:
    assert set(ROWS) | set(_NOT_LAX) == set(ops.OPS), set(ops.OPS) ^ (set(ROWS) | set(_NOT_LAX))
    assert set(WEAK_RULES) == set(ops.OPS)


def test_user_calls_give_strong_results() -> None:
    for name in _NOT_LAX:
        assert output_weak(ops.get(name), (True,), {}) == (False,)


@pytest.mark.parametrize("name", sorted(set(ops.OPS) - set(_NOT_LAX)))
def test_weak_rule_matches_jax_lax(name: str) -> None:
    fn, specs, params = ROWS[name]
    for flags in itertools.product((False, True), repeat=len(specs)):
        args = [_operand(d, s, w) for (d, s), w in zip(specs, flags, strict=True)]
        out = fn(*args)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        theirs = tuple(bool(is_weakly_typed(o)) for o in outs)
        ours = output_weak(ops.get(name), flags, params)
        assert ours == theirs, (name, flags, ours, theirs)


def test_weak_convert_param_keeps_the_flag_as_jax_numpy_s_convert() -> None:
    x = _convert_element_type(jnp.ones(3, jnp.int8), np.dtype(np.float64), True)
    assert is_weakly_typed(x)
    assert output_weak(ops.convert, (False,), {"new_dtype": rt.float64, "weak_type": True}) == (True,)


# -- random programs against jax.numpy -----------------------------------------------------------

_STRONG = [np.int8, np.int32, np.int64, np.uint8, np.float16, ml_dtypes.bfloat16, np.float32, np.float64,
           np.complex64, np.bool_]  # fmt: skip
_BINARY = {"add": (lambda a, b: a + b), "sub": (lambda a, b: a - b), "mul": (lambda a, b: a * b),
           "max": F.max, "min": F.min}  # fmt: skip
_JBINARY = {"add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "max": jnp.maximum, "min": jnp.minimum}
_UNARY = {"tanh": (rt.tanh, jnp.tanh), "neg": (rt.lax.neg, jnp.negative), "sin": (rt.sin, jnp.sin),
          "square": (rt.square, jnp.square), "exp": (rt.exp, jnp.exp)}  # fmt: skip


@st.composite
def _leaf(draw: Any) -> tuple[Any, Any]:
    """(castwise value, jax value): a Python scalar, a weak 0-d array, or a strong array."""
    kind = draw(st.sampled_from(["py", "weak", "strong"]))
    if kind == "py":
        value = draw(st.sampled_from([2, 0.5, 1.5, 3]))
        return value, value
    if kind == "weak":
        value = draw(st.sampled_from([2, 0.5, 1.25]))
        return rt.asarray(value), jnp.asarray(value)
    dtype = draw(st.sampled_from(_STRONG))
    array = np.array([1, 0, 1], dtype) if dtype is np.bool_ else np.array([1, 2, 3], dtype)
    return rt.asarray(array), jnp.asarray(array)


@st.composite
def _program(draw: Any) -> list[tuple[str, str, int, int]]:
    return draw(
        st.lists(
            st.tuples(
                st.sampled_from(["binary", "unary"]),
                st.sampled_from(sorted(_BINARY) + sorted(_UNARY)),
                st.integers(0, 100),
                st.integers(0, 100),
            ),
            min_size=1,
            max_size=5,
        )
    )


@settings(max_examples=120, deadline=None)
@given(leaves=st.lists(_leaf(), min_size=2, max_size=4), program=_program())
def test_random_programs_match_jax_numpy_dtype_weak_flag_and_values(
    leaves: list[tuple[Any, Any]], program: Sequence[tuple[str, str, int, int]]
) -> None:
    pool = list(leaves)
    for kind, name, i, j in program:
        a, ja = pool[i % len(pool)]
        if kind == "unary" or name not in _BINARY:
            uname = name if name in _UNARY else "tanh"
            ours_fn, theirs_fn = _UNARY[uname]
            if isinstance(a, (int, float)) or a.dtype.kind in ("int", "uint", "bool"):
                continue  # int inputs to float-only ops are another plan family
            try:
                theirs = theirs_fn(ja)
            except (TypeError, ValueError):
                continue
            ours = ours_fn(a)
        else:
            b, jb = pool[j % len(pool)]
            if isinstance(a, (int, float)) and isinstance(b, (int, float)):
                continue
            if any(isinstance(v, rt.Tensor) and v.dtype is rt.bool_ for v in (a, b)):
                continue  # bool arithmetic is another plan family
            try:
                theirs = _JBINARY[name](ja, jb)
            except (TypeError, ValueError):
                with pytest.raises((rt.PromotionError, TypeError)):
                    _BINARY[name](a, b)
                continue
            if name in ("max", "min") and theirs.dtype.kind == "c":
                continue  # complex max/min order is a separate castwise departure
            ours = _BINARY[name](a, b)
        assert ours.dtype.storage == theirs.dtype, (name, ours.dtype, theirs.dtype)
        assert ours.weak == bool(is_weakly_typed(theirs)), (name, ours, theirs)
        np.testing.assert_allclose(
            ours.numpy().astype(np.complex128), np.asarray(theirs).astype(np.complex128), rtol=2e-2, atol=1e-6
        )
        pool.append((ours, theirs))


# -- the eager caches never serve one operand's plan to another -------------------------------------

_HISTORY_DTYPES = [rt.float32, rt.bfloat16, rt.float16, rt.float64, rt.int8, rt.int32, rt.complex64]
_HISTORY_OPS = [ops.add, ops.sub, ops.mul, ops.max, ops.eq]


def _tensor(dtype: rt.DType, shape: tuple[int, ...], weak: bool) -> rt.Tensor:
    t = rt.asarray(np.full(shape, 1.5).astype(dtype.storage))
    t.weak = weak
    return t


@st.composite
def _binary_calls(draw: Any) -> tuple[Any, ...]:
    """A binary op, a policy, and two operands: Tensors (dtype, shape, weak flag) or Python scalars."""

    def operand() -> Any:
        if draw(st.booleans()):
            return draw(st.sampled_from([2, 0.5, True]))
        return (draw(st.sampled_from(_HISTORY_DTYPES)), draw(st.sampled_from([(), (2,)])), draw(st.booleans()))

    return draw(st.sampled_from(_HISTORY_OPS)), operand(), operand(), draw(st.sampled_from(["jax", "numpy", "torch"]))


def _outcome(op: ops.OpDef, x: Any, y: Any, policy: str) -> tuple[Any, ...]:
    from runtime.core.executor import apply_binary

    a, b = (_tensor(*v) if isinstance(v, tuple) else v for v in (x, y))
    with rt.use_policy(policy):
        try:
            r = apply_binary(op, a, b)
        except (TypeError, ValueError) as err:
            return ("refused", type(err).__name__)
    return (r.dtype, r.weak, r.shape, r.numpy().tobytes())


def _flavours(v: Any) -> list[Any]:
    """The operand with either weak flag (a Python scalar stays as it is)."""
    return [(v[0], v[1], w) for w in (False, True)] if isinstance(v, tuple) else [v]


@settings(max_examples=80, deadline=None)
@given(st.lists(_binary_calls(), min_size=1, max_size=8))
@example([(ops.mul, (rt.float32, (), False), (rt.bfloat16, (2,), False), "jax")])
def test_a_result_does_not_depend_on_the_calls_before_it(calls: list[tuple[Any, ...]]) -> None:
    """Each call, run right after its twins (the same dtypes and shapes, each weak flag either
    way) and every call before it, gives what it gives with every plan cache empty: dtype,
    weak flag, shape and bits (a weak operand's plan once reached strong operands of the
    same dtype through the operator cache, and bfloat16 came out where float32 was due)."""
    from runtime.core.promotion import PLAN_CACHES

    warm = []
    for op, x, y, policy in calls:
        for a, b in itertools.product(_flavours(x), _flavours(y)):
            _outcome(op, a, b, policy)
        warm.append(_outcome(op, x, y, policy))
    for call, got in zip(calls, warm, strict=True):
        for cache in PLAN_CACHES:
            cache.clear()
        assert got == _outcome(*call), call


@pytest.mark.parametrize("policy", ["jax", "jax-strict"])
def test_weak_and_strong_operands_never_share_a_cached_plan(policy: str) -> None:
    """Every pair of dtypes and shapes, each operand weak and strong, in every order: each
    call gives what it gives with the plan caches empty (the exhaustive form of the property
    above, for the policies with weak types)."""
    from runtime.core.promotion import PLAN_CACHES

    operands = [(d, s) for d in _HISTORY_DTYPES for s in [(), (2,)]]
    for op in (ops.mul, ops.max):
        for (dx, sx), (dy, sy) in itertools.product(operands, operands):
            calls = [(op, (dx, sx, wx), (dy, sy, wy), policy) for wx in (False, True) for wy in (False, True)]
            for order in (calls, calls[::-1]):
                warm = [_outcome(*c) for c in order]
                for cache in PLAN_CACHES:
                    cache.clear()
                assert warm == [_outcome(*c) for c in order], (op.name, dx.name, sx, dy.name, sy)
