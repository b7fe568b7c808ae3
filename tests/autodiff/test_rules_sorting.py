"""sort, argsort, top_k, split, select_n, scatter_mul/min/max, tile, repeat, expand_dims, squeeze.

1. Values against ``jax.lax`` / ``jax.numpy``, table-driven over dtypes, bit for bit: ties,
   NaNs (both signs), -0.0 / +0.0 and stability for sort (lax.sort: every zero ties,
   NaNs last) and top_k (IEEE total order, ties to the lower index); duplicates and
   out-of-bounds windows for the scatters.
2. ``check_grads`` (JVP and VJP, orders 1 and 2) in f32/f64 and c64/c128 where the op
   is defined for complex (top_k and scatter_min/max are real-only in derivative).
3. Our JVP equals ``jax.jvp`` and our VJP equals ``conj(jax_vjp(conj(ct)))`` on the same
   inputs, each output compared; ties in sort / top_k / scatter_min / scatter_max
   route derivatives as JAX does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from autodiff.testing import check_grads  # noqa: E402
from runtime.core.dtypes import DType  # noqa: E402
from runtime.core.executor import asarray  # noqa: E402
from runtime.core.shapes import ScatterDimensionNumbers  # noqa: E402
from runtime.core.tensor import Tensor  # noqa: E402
from tests.autodiff.rule_helpers import assert_close, x64  # noqa: E402

f32, f64, c64, c128 = rt.float32, rt.float64, rt.complex64, rt.complex128
REAL = (f32, f64)
ALL = (f32, f64, c64, c128)

#: dtypes compared bit for bit with XLA (every castwise dtype JAX has)
VALUE_DTYPES = [
    rt.dtype(n)
    for n in (
        "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16",
        "float32", "float64", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2", "int4", "uint4",
    )
]  # fmt: skip
REAL_VALUE_DTYPES = [d for d in VALUE_DTYPES if d.kind != "complex"]


def _values(d: DType, shape: tuple[int, ...], seed: int, specials: bool = True) -> np.ndarray:
    """Small values with many ties; floats also get NaN, -NaN, -0.0, +0.0 and infinities."""
    rng = np.random.default_rng(seed)
    ints = rng.integers(-3, 4, shape)
    if d.kind == "bool":
        return (ints > 0).astype(d.storage)
    if d.kind == "uint":
        return np.abs(ints).astype(d.storage)
    if d.kind == "int":
        return ints.astype(d.storage)
    data = ints.astype(np.float64) / 2
    if d.kind == "complex":
        data = data + 1j * rng.integers(-1, 2, shape) / 2
    flat = data.reshape(-1)
    if specials and flat.size >= 8:
        picks = rng.choice(flat.size, 8, replace=False)
        flat[picks] = [np.nan, -np.nan, -0.0, 0.0, -0.0, np.inf, -np.inf, np.nan]
    return data.astype(d.storage)


def _bits(a: Any) -> np.ndarray:
    """An array's exact bits (NaN payloads and zero signs included) as unsigned integers."""
    a = np.ascontiguousarray(np.asarray(a))
    if a.dtype == np.bool_ or a.dtype.kind in "iu" or a.dtype.itemsize * 8 not in (8, 16, 32, 64, 128):
        return a.astype(np.int64) if a.dtype.kind != "V" else a
    if a.dtype.itemsize == 16:
        return a.view(np.uint64)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def _same_bits(what: str, got: Any, want: Any, any_nan: bool = False) -> None:
    """Equal bit for bit; with ``any_nan`` every NaN counts as one (departures: XLA computes
    float8_e5m2 in a wider type, which rewrites NaN payloads, and which of several NaNs meeting
    in a scatter_min/max survives is XLA's choice)."""
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.shape == want_a.shape, f"{what}: shape {got_a.shape} != {want_a.shape}"
    assert got_a.dtype == want_a.dtype, f"{what}: dtype {got_a.dtype} != {want_a.dtype}"
    if any_nan or got_a.dtype == rt.float8_e5m2.storage:
        nan_g, nan_w = _isnan(got_a), _isnan(want_a)
        np.testing.assert_array_equal(nan_g, nan_w, err_msg=f"{what}: NaN positions")
        got_a, want_a = got_a[~nan_g], want_a[~nan_w]
    np.testing.assert_array_equal(_bits(got_a), _bits(want_a), err_msg=what)


def _isnan(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "biu" or a.dtype in (rt.int4.storage, rt.uint4.storage):
        return np.zeros(a.shape, bool)
    wide = a.astype(np.complex128) if np.iscomplexobj(a) else a.astype(np.float64)
    return np.isnan(wide)


def _outs(result: Any) -> list[Any]:
    return list(result) if isinstance(result, (tuple, list)) else [result]


# -- 1. values -----------------------------------------------------------------------------------


@pytest.mark.parametrize("d", VALUE_DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("dimension", [0, 1])
def test_sort_matches_lax_bit_for_bit(d: DType, dimension: int) -> None:
    x = _values(d, (6, 7), 1)
    with x64():
        want = lax.sort(jnp.asarray(x), dimension=dimension)
    _same_bits(f"sort {d.short}", rt.lax.sort(asarray(x), dimension).numpy(), want)


@pytest.mark.parametrize("d", VALUE_DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("num_keys", [1, 2])
def test_multi_operand_sort_is_stable_like_lax(d: DType, num_keys: int) -> None:
    """Ties in the keys (zeros of both signs, NaNs of both signs, equal values) keep the
    original order: a payload operand (an iota, and a float) shows the permutation."""
    keys = _values(d, (4, 9), 2)
    second = _values(rt.int8, (4, 9), 3)
    payload = np.arange(36, dtype=np.float32).reshape(4, 9)
    with x64():
        want = lax.sort((jnp.asarray(keys), jnp.asarray(second), jnp.asarray(payload)), dimension=1, num_keys=num_keys)
    got = rt.lax.sort((asarray(keys), asarray(second), asarray(payload)), 1, num_keys=num_keys)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        _same_bits(f"sort operand {i} {d.short}", g.numpy(), w)


@pytest.mark.parametrize("d", [f32, f64, c128, rt.int32], ids=lambda d: d.short)
def test_unstable_sort_orders_the_keys_like_lax(d: DType) -> None:
    """``is_stable=False`` allows any order of ties: the keys (as lax compares them) agree."""
    x = _values(d, (5, 8), 4)
    with x64():
        want = np.asarray(lax.sort(jnp.asarray(x), is_stable=False))
    got = rt.lax.sort(asarray(x), is_stable=False).numpy()
    canon = (lambda a: np.where(np.isnan(a), np.nan, a + 0)) if d.is_inexact else (lambda a: a)
    np.testing.assert_array_equal(canon(got), canon(want))


def test_sort_order_is_lax_total_order() -> None:
    """-0.0 and +0.0 tie (stable: input order), NaNs of either sign come last; complex by real then imaginary."""
    x = np.array([np.nan, 1.0, -0.0, -np.inf, 0.0, -np.nan, -0.0])
    got = rt.lax.sort(asarray(x)).numpy()
    assert np.array_equal(np.signbit(got[1:4]), [True, False, True]) and np.isnan(got[-2:]).all()
    z = np.array([1 + 2j, 1 + 1j, complex(np.nan, 0), -1 + 5j])
    np.testing.assert_array_equal(rt.lax.sort(asarray(z)).numpy()[:3], [-1 + 5j, 1 + 1j, 1 + 2j])


@pytest.mark.parametrize("d", REAL_VALUE_DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("k", [0, 3, 7])
def test_top_k_matches_lax_bit_for_bit(d: DType, k: int) -> None:
    if d in (rt.int4, rt.uint4) and k:
        pytest.skip("XLA CPU does not compile top_k of 4-bit integers (its topk-decomposer's iota)")
    x = _values(d, (5, 7), 5)
    with x64():
        want_v, want_i = lax.top_k(jnp.asarray(x), k)
    got_v, got_i = rt.lax.top_k(asarray(x), k)
    _same_bits(f"top_k values {d.short}", got_v.numpy(), want_v)
    _same_bits(f"top_k indices {d.short}", got_i.numpy(), want_i)
    assert got_i.dtype is rt.int32


@pytest.mark.parametrize("d", [d for d in REAL_VALUE_DTYPES if d not in (rt.int4, rt.uint4)], ids=lambda d: d.short)
@pytest.mark.parametrize(("axis", "k"), [(0, 2), (1, 5), (-3, 4), (-2, 0), (2, 3)])
def test_top_k_along_an_axis_matches_lax_bit_for_bit(d: DType, axis: int, k: int) -> None:
    """``lax.top_k(x, k, axis=...)``: values and int32 indices, with ties, NaNs and signed zeros."""
    x = _values(d, (4, 6, 3), 11)
    with x64():
        want_v, want_i = lax.top_k(jnp.asarray(x), k, axis=axis)
    got_v, got_i = rt.lax.top_k(asarray(x), k, axis=axis)
    _same_bits(f"top_k values {d.short} axis {axis}", got_v.numpy(), want_v)
    _same_bits(f"top_k indices {d.short} axis {axis}", got_i.numpy(), want_i)


def test_top_k_along_an_axis_records_transposes_that_replay_and_lower() -> None:
    """Another axis than the last is the last-axis op between two transposes: the graph says so,
    replaying it gives the eager values, and it lowers to lax (as its ops do)."""
    from passes import lower_to_jax
    from runtime.core.graph import evaluate

    x = asarray(_values(f64, (3, 5, 2), 12))
    graph = rt.trace(lambda a: rt.lax.top_k(a, 2, axis=1), x)
    assert [e.op.name for e in graph.eqns] == ["transpose", "top_k", "transpose", "transpose"], graph
    assert [e.params.get("permutation") for e in graph.eqns if e.op.name == "transpose"] == [
        (0, 2, 1), (0, 2, 1), (0, 2, 1)
    ], graph  # fmt: skip
    assert "top_k[k=2] " in str(graph) and "i32[3,2,2] = transpose" in str(graph), graph
    eager = rt.lax.top_k(x, 2, axis=1)
    for got, want in zip(evaluate(graph, x), eager, strict=True):
        _same_bits("replay", got.numpy(), want.numpy())
    with x64():
        lowered = lower_to_jax(graph)(x.numpy())
        want_v, want_i = lax.top_k(jnp.asarray(x.numpy()), 2, axis=1)
    _same_bits("lowered values", lowered[0], want_v)
    _same_bits("lowered indices", lowered[1], want_i)
    # the default (last) axis, named either way, is the one op, as before
    for axis in (-1, 2):
        names = [e.op.name for e in rt.trace(lambda a, axis=axis: rt.lax.top_k(a, 2, axis=axis), x).eqns]
        assert names == ["top_k"]


@pytest.mark.parametrize(("in_axis", "axis"), [(0, 0), (1, 0), (2, -2), (0, 1)])
def test_top_k_along_an_axis_vmaps_like_jax(in_axis: int, axis: int) -> None:
    x = _values(f64, (3, 4, 5), 13)
    with x64():
        want = jax.vmap(lambda a: lax.top_k(a, 2, axis=axis), in_axes=in_axis)(jnp.asarray(x))
    got = autodiff.vmap(lambda a: rt.lax.top_k(a, 2, axis=axis), in_axes=in_axis)(asarray(x))
    for g, w, what in zip(got, want, ("values", "indices"), strict=True):
        _same_bits(f"vmapped top_k {what}", g.numpy(), w)


@pytest.mark.parametrize(("axis", "k", "match"), [
    (2, 1, "top_k: axis 2 out of range for rank 2"),
    (-3, 1, "top_k: axis -3 out of range for rank 2"),
    (0, 4, r"top_k: k 4 outside \[0, 3\] \(the size of axis 0\)"),
])  # fmt: skip
def test_top_k_refuses_a_bad_axis_or_k_before_recording(axis: int, k: int, match: str) -> None:
    """The error names the op, the operand's dtype and shape and the policy, and the graph holds
    no half-recorded transpose."""
    x = asarray(np.ones((3, 4)))
    errors: list[Exception] = []

    def f(a: Tensor) -> Tensor:
        try:
            rt.lax.top_k(a, k, axis=axis)
        except rt.ShapeError as err:
            errors.append(err)
        return a

    graph = rt.trace(f, x)
    assert len(errors) == 1 and not list(graph.eqns), graph
    message = str(errors[0])
    assert re.search(match, message) and "f64[3, 4]" in message and "policy 'jax'" in message, message
    with pytest.raises(rt.OpTypeError, match=r"top_k.*c64\[3, 4\]"):
        rt.lax.top_k(asarray(np.ones((3, 4), np.complex64)), 1, axis=0)


def test_top_k_refuses_complex_and_too_large_k() -> None:
    with pytest.raises(rt.OpTypeError, match="top_k"):
        rt.lax.top_k(asarray(np.ones(3, np.complex64)), 1)
    with pytest.raises(rt.ShapeError, match="top_k: k 4"):
        rt.lax.top_k(asarray(np.ones(3)), 4)


@pytest.mark.parametrize("d", VALUE_DTYPES, ids=lambda d: d.short)
def test_split_matches_lax(d: DType) -> None:
    x = _values(d, (3, 6), 6)
    with x64():
        want = lax.split(jnp.asarray(x), (2, 0, 4), axis=1)
    got = rt.lax.split(asarray(x), (2, 0, 4), axis=-1)
    assert len(got) == 3
    for g, w in zip(got, want, strict=True):
        _same_bits(f"split {d.short}", g.numpy(), w)


@pytest.mark.parametrize("d", VALUE_DTYPES, ids=lambda d: d.short)
def test_select_n_matches_lax(d: DType) -> None:
    cases = [_values(d, (4, 5), s) for s in (7, 8, 9)]
    which = np.random.default_rng(0).integers(0, 3, (4, 5)).astype(np.int32)
    pred = which == 1
    with x64():
        want3 = lax.select_n(jnp.asarray(which), *(jnp.asarray(c) for c in cases))
        want2 = lax.select_n(jnp.asarray(pred), *(jnp.asarray(c) for c in cases[:2]))
        want0 = lax.select_n(jnp.asarray(np.int32(2)), *(jnp.asarray(c) for c in cases))
    _same_bits("select_n int32", rt.lax.select_n(asarray(which), *map(asarray, cases)).numpy(), want3)
    _same_bits("select_n bool", rt.lax.select_n(asarray(pred), *map(asarray, cases[:2])).numpy(), want2)
    _same_bits("select_n 0-d which", rt.lax.select_n(asarray(np.int32(2)), *map(asarray, cases)).numpy(), want0)


def test_select_n_refuses_a_bool_which_with_three_cases() -> None:
    with pytest.raises(rt.ShapeError, match="select_n: a bool which"):
        rt.lax.select_n(asarray(np.array([True])), 1.0, 2.0, 3.0)


_ROWS = ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
_ROWS_JAX = lax.ScatterDimensionNumbers(
    update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)
_SCATTERS = {"scatter_mul": lax.scatter_mul, "scatter_min": lax.scatter_min, "scatter_max": lax.scatter_max}


@pytest.mark.parametrize("op", sorted(_SCATTERS))
@pytest.mark.parametrize("d", VALUE_DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("mode", [None, "clip"])
def test_scatter_reductions_match_lax(op: str, d: DType, mode: str | None) -> None:
    """Duplicates combine in order, an out-of-bounds row is dropped (clipped with ``clip``)."""
    if op == "scatter_mul" and d.kind == "bool":
        with pytest.raises(rt.OpTypeError, match="scatter_mul"):
            rt.lax.scatter_mul(asarray(np.ones((2, 2), bool)), np.array([[0]]), asarray(np.ones((1, 2), bool)), _ROWS)
        return
    x = _values(d, (5, 4), 10, specials=False)
    u = _values(d, (6, 4), 11)
    idx = np.array([[0], [3], [0], [7], [3], [0]], np.int32)
    with x64():
        want = _SCATTERS[op](jnp.asarray(x), jnp.asarray(idx), jnp.asarray(u), _ROWS_JAX, mode=mode)
    got = getattr(rt.lax, op)(asarray(x), idx, asarray(u), _ROWS, mode=mode).numpy()
    _same_bits(f"{op} {d.short}", got, want, any_nan=True)


def test_tile_repeat_expand_squeeze_match_jnp() -> None:
    x = np.arange(6.0).reshape(2, 3)
    with x64():
        wants = [
            jnp.tile(x, (2, 1, 3)), jnp.tile(x, 2), jnp.tile(x, (1, 0)),
            jnp.repeat(x, 2, axis=1), jnp.repeat(x, 3), jnp.repeat(x, np.array([1, 0, 2]), axis=1),
            jnp.repeat(x, np.array([2, 1]), axis=0, total_repeat_length=5),
            jnp.repeat(x, np.array([2, 1]), axis=0, total_repeat_length=2),
            lax.expand_dims(x, (0, 3)), jnp.expand_dims(x, -1), jnp.squeeze(x[None, :, None]),
            lax.squeeze(x[None, :, :, None], (3,)),
        ]  # fmt: skip
    t = asarray(x)
    gots = [
        rt.tile(t, (2, 1, 3)), rt.tile(t, 2), rt.tile(t, (1, 0)),
        rt.repeat(t, 2, axis=1), rt.repeat(t, 3), rt.repeat(t, [1, 0, 2], axis=1),
        rt.repeat(t, [2, 1], axis=0, total_repeat_length=5), rt.repeat(t, [2, 1], axis=0, total_repeat_length=2),
        rt.lax.expand_dims(t, (0, 3)), rt.lax.expand_dims(t, -1), rt.lax.squeeze(rt.lax.reshape(t, (1, 2, 1, 3))),
        rt.lax.squeeze(rt.lax.reshape(t, (1, 2, 3, 1)), (3,)),
    ]  # fmt: skip
    for i, (g, w) in enumerate(zip(gots, wants, strict=True)):
        _same_bits(f"case {i}", g.numpy(), w)
    with pytest.raises(rt.ShapeError, match="squeeze"):
        rt.lax.squeeze(t, 0)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("d", [f32, f64, rt.int8, rt.bool_], ids=lambda d: d.short)
def test_argsort_matches_jnp(d: DType, descending: bool) -> None:
    x = _values(d, (4, 9), 12)
    with x64():
        want = jnp.argsort(jnp.asarray(x), axis=-1, stable=True, descending=descending)
        want0 = jnp.argsort(jnp.asarray(x), axis=0, stable=True, descending=descending)
    _same_bits("argsort", rt.lax.argsort(asarray(x), descending=descending).numpy(), want)
    _same_bits("argsort axis 0", rt.lax.argsort(asarray(x), 0, descending=descending).numpy(), want0)


# -- 2 and 3: derivatives -----------------------------------------------------------------------------


def _normal(d: DType, shape: tuple[int, ...], seed: int, ties: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    data = rng.integers(-2, 3, shape) / 2.0 if ties else rng.standard_normal(shape)
    if d.kind == "complex":
        data = data + 1j * (rng.integers(-1, 2, shape) / 2.0 if ties else rng.standard_normal(shape))
    return np.asarray(data).astype(d.storage)


@dataclass(frozen=True)
class Case:
    """``ours`` / ``theirs`` take the differentiable operands (indices and params closed over)."""

    id: str
    ours: Callable[..., Any]
    theirs: Callable[..., Any]
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[DType, ...] = ALL
    ties: bool = False  # the parity inputs have ties (check_grads always gets distinct values)


_IDX_DUP = np.array([[0], [3], [0], [7], [3]], np.int32)  # duplicates and one dropped row
_IDX_UNIQUE = np.array([[4], [0], [2]], np.int32)


def _scatter_pair(op: str, idx: np.ndarray, unique: bool = False, mode: str | None = None) -> tuple[Any, Any]:
    """With ``clip``, JAX is given the clipped indices: JAX's scatter_min/max JVP counts the
    writers with scatter_adds in the default (dropping) mode, so an index that ``clip``
    clamps is not counted and its tangent is NaN (``test_jax_clip_scatter_min_jvp_is_nan``)."""
    theirs_idx = np.clip(idx, 0, 4) if mode == "clip" else idx

    def ours(x: Tensor, u: Tensor) -> Tensor:
        return getattr(rt.lax, op)(x, idx, u, _ROWS, unique_indices=unique, mode=mode)  # type: ignore[no-any-return]

    def theirs(x: Any, u: Any) -> Any:
        return _SCATTERS[op](x, jnp.asarray(theirs_idx), u, _ROWS_JAX, unique_indices=unique, mode=mode)

    return ours, theirs


CASES = [
    Case("sort-axis1", lambda x: rt.lax.sort(x, 1), lambda x: lax.sort(x, dimension=1), ((3, 5),)),
    Case("sort-axis0-ties", lambda x: rt.lax.sort(x, 0), lambda x: lax.sort(x, dimension=0), ((6, 3),), ties=True),
    Case("sort-two-operands", lambda x, y: rt.lax.sort((x, y), 1), lambda x, y: tuple(lax.sort((x, y), dimension=1)),
         ((3, 5), (3, 5)), ties=True),
    Case("sort-num_keys-2", lambda x, y: rt.lax.sort((x, y), 0, num_keys=2),
         lambda x, y: tuple(lax.sort((x, y), dimension=0, num_keys=2)), ((6, 2), (6, 2)), ties=True),
    Case("top_k", lambda x: rt.lax.top_k(x, 3)[0], lambda x: lax.top_k(x, 3)[0], ((4, 6),), REAL),
    Case("top_k-ties", lambda x: rt.lax.top_k(x, 4)[0], lambda x: lax.top_k(x, 4)[0], ((3, 6),), REAL, ties=True),
    Case("top_k-axis0", lambda x: rt.lax.top_k(x, 3, axis=0)[0], lambda x: lax.top_k(x, 3, axis=0)[0], ((6, 4),), REAL),
    Case("top_k-axis1-of-3-ties", lambda x: rt.lax.top_k(x, 2, axis=-2)[0], lambda x: lax.top_k(x, 2, axis=-2)[0],
         ((2, 5, 3),), REAL, ties=True),
    Case("split", lambda x: tuple(rt.lax.split(x, (1, 0, 3), 1)), lambda x: tuple(lax.split(x, (1, 0, 3), axis=1)),
         ((2, 4),)),
    Case("select_n-int", lambda a, b, c: rt.lax.select_n(np.array([[0, 1, 2], [2, 1, 0]], np.int32), a, b, c),
         lambda a, b, c: lax.select_n(jnp.asarray(np.array([[0, 1, 2], [2, 1, 0]], np.int32)), a, b, c),
         ((2, 3), (2, 3), (2, 3))),
    Case("select_n-bool", lambda a, b: rt.lax.select_n(np.array([True, False, True]), a, b),
         lambda a, b: lax.select_n(jnp.asarray(np.array([True, False, True])), a, b), ((3,), (3,))),
    Case("scatter_mul-unique", *_scatter_pair("scatter_mul", _IDX_UNIQUE, unique=True), ((5, 3), (3, 3))),
    Case("scatter_mul-clip", *_scatter_pair("scatter_mul", np.array([[6], [1]], np.int32), True, "clip"),
         ((5, 3), (2, 3))),
    Case("scatter_min", *_scatter_pair("scatter_min", _IDX_DUP), ((5, 3), (5, 3)), REAL),
    Case("scatter_max", *_scatter_pair("scatter_max", _IDX_DUP), ((5, 3), (5, 3)), REAL),
    Case("scatter_max-ties", *_scatter_pair("scatter_max", _IDX_DUP), ((5, 3), (5, 3)), REAL, ties=True),
    Case("scatter_min-ties-clip", *_scatter_pair("scatter_min", _IDX_DUP, mode="clip"), ((5, 3), (5, 3)), REAL,
         ties=True),
    Case("tile", lambda x: rt.tile(x, (2, 1, 2)), lambda x: jnp.tile(x, (2, 1, 2)), ((2, 3),)),
    Case("repeat-int", lambda x: rt.repeat(x, 2, axis=0), lambda x: jnp.repeat(x, 2, axis=0), ((2, 3),)),
    Case("repeat-counts", lambda x: rt.repeat(x, [2, 0, 1], axis=1),
         lambda x: jnp.repeat(x, np.array([2, 0, 1]), axis=1, total_repeat_length=3), ((2, 3),)),
]  # fmt: skip


def _distinct(d: DType, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Values far apart (no ties, no near-ties), so finite differences do not cross a reordering."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    data = (rng.permutation(n) - n / 2).reshape(shape) * 0.37 + 0.1 + 0.013 * (seed % 7)  # no ties across operands
    if d.kind == "complex":
        data = data + 1j * rng.standard_normal(shape)
    return np.asarray(data).astype(d.storage)


GRAD_PARAMS = [pytest.param(c, d, id=f"{c.id}-{d.short}") for c in CASES for d in c.dtypes]


@pytest.mark.parametrize(("case", "d"), GRAD_PARAMS)
def test_check_grads(case: Case, d: DType) -> None:
    args = [asarray(_distinct(d, s, i + 20)) for i, s in enumerate(case.shapes)]
    check_grads(case.ours, args, order=2, modes=("fwd", "rev"))


def _leaves(x: Any) -> list[np.ndarray]:
    return [np.asarray(v.numpy() if isinstance(v, Tensor) else v) for v in _outs(x)]


@pytest.mark.parametrize(("case", "d"), GRAD_PARAMS)
def test_jvp_and_vjp_match_jax(case: Case, d: DType) -> None:
    make = _normal if case.ties else (lambda d_, s, i, ties=False: _distinct(d_, s, i))
    arrays = [make(d, s, i + 30, ties=case.ties) for i, s in enumerate(case.shapes)]
    tangents = [_normal(d, s, i + 40) for i, s in enumerate(case.shapes)]
    with x64():
        jax_out, jax_tan = jax.jvp(case.theirs, tuple(map(jnp.asarray, arrays)), tuple(map(jnp.asarray, tangents)))
        cts = [_normal(rt.dtype(np.asarray(o).dtype), np.shape(o), 50 + i) for i, o in enumerate(_outs(jax_out))]
        _, jax_vjp = jax.vjp(case.theirs, *map(jnp.asarray, arrays))
        conj_cts = [jnp.asarray(np.conj(c)) for c in cts]
        ct_tree = tuple(conj_cts) if isinstance(jax_out, tuple) else conj_cts[0]
        want_cts = [np.conj(np.asarray(g)) for g in jax_vjp(ct_tree)]
    out, out_t = autodiff.jvp(case.ours, [asarray(a) for a in arrays], [asarray(t) for t in tangents])
    for i, (o, w) in enumerate(zip(_leaves(out), _outs(jax_out), strict=True)):
        assert_close(f"{case.id} primal {i}", o, w, d)
    for i, (t, w) in enumerate(zip(_leaves(out_t), _outs(jax_tan), strict=True)):
        assert_close(f"{case.id} JVP {i}", t, w, d)
    _, vjp_fn = autodiff.vjp(case.ours, *[asarray(a) for a in arrays])
    ct_ours = tuple(asarray(c) for c in cts) if isinstance(jax_out, tuple) else asarray(cts[0])
    got_cts = vjp_fn(ct_ours)
    for i, (g, w) in enumerate(zip(got_cts, want_cts, strict=True)):
        assert_close(f"{case.id} VJP {i}", g.numpy(), w, d)


def test_scatter_mul_updates_derivative_needs_unique_indices_as_in_jax() -> None:
    """JAX raises NotImplementedError for the updates' derivative with repeated indices; so do we.
    The operand's derivative is defined either way and matches JAX's."""
    x, u = _normal(f64, (5, 3), 1), _normal(f64, (5, 3), 2)
    ours, theirs = _scatter_pair("scatter_mul", _IDX_DUP)
    with pytest.raises(NotImplementedError, match="unique_indices"):
        autodiff.vjp(ours, asarray(x), asarray(u))[1](asarray(np.ones((5, 3))))
    with x64(), pytest.raises(NotImplementedError):
        jax.vjp(theirs, jnp.asarray(x), jnp.asarray(u))[1](jnp.ones((5, 3)))
    ct = _normal(f64, (5, 3), 3)
    with x64():
        (want,) = jax.vjp(lambda a: theirs(a, jnp.asarray(u)), jnp.asarray(x))[1](jnp.asarray(ct))
    (got,) = autodiff.vjp(lambda a: ours(a, asarray(u)), asarray(x))[1](asarray(ct))
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-12)


def test_argsort_has_no_derivative_and_sort_routes_ties_by_position() -> None:
    """argsort's output is an int (no tangent); tied sort keys send each cotangent back to the
    element that the stable order put there."""
    x = asarray(np.array([2.0, 1.0, 2.0, 1.0]))
    _, vjp_fn = autodiff.vjp(lambda a: rt.lax.sort(a), x)
    (g,) = vjp_fn(asarray(np.array([10.0, 20.0, 30.0, 40.0])))
    np.testing.assert_array_equal(g.numpy(), [30.0, 10.0, 40.0, 20.0])
    assert rt.lax.argsort(x).dtype is rt.int64


def test_jax_clip_scatter_min_jvp_is_nan_where_ours_is_the_clamped_rule() -> None:
    """A departure from JAX, pinned: with ``mode="clip"`` and an out-of-bounds index, JAX's
    scatter_min JVP is NaN on the clamped row (its writer counts drop the clamped update);
    ours equals JAX's JVP on the clamped indices."""
    x, u = np.arange(10.0).reshape(5, 2), np.full((2, 2), -5.0)
    ones = (np.ones_like(x), np.ones_like(u))
    dn = lax.ScatterDimensionNumbers((1,), (0,), (0,))
    with x64():
        _, nan_t = jax.jvp(lambda a, b: lax.scatter_min(a, jnp.array([[7], [1]]), b, dn, mode="clip"), (x, u), ones)
        _, want = jax.jvp(lambda a, b: lax.scatter_min(a, jnp.array([[4], [1]]), b, dn, mode="clip"), (x, u), ones)
    assert np.isnan(np.asarray(nan_t)[4]).all()
    f = lambda a, b: rt.lax.scatter_min(a, np.array([[7], [1]]), b, _ROWS, mode="clip")  # noqa: E731
    _, got = autodiff.jvp(f, [asarray(x), asarray(u)], [asarray(o) for o in ones])
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))
