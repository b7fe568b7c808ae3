"""Graph passes: promote, canonicalize, dce, verify, and their registry.

Golden tests compare ``pretty`` text exactly; property tests check, over random
mixed-dtype graphs, that ``promote`` inserts exactly one ``convert`` per operand
whose dtype differs from its ``plan`` target and that the promoted graph
verifies and evaluates to what NumPy computes independently.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import runtime as rt
from passes import (
    PASSES,
    GraphBuilder,
    canonicalize,
    dce,
    promote,
    promoted_positions,
    raw_eqn,
    run_passes,
    verify,
)
from runtime.core import ops
from runtime.core.dtypes import DType
from runtime.core.graph import Eqn, Graph, GraphError, Var, evaluate, pretty
from runtime.core.plan import plan
from runtime.core.promotion import Operand, PromotionError
from runtime.core.shapes import OpTypeError, ScatterDimensionNumbers, abstract_eval

# Point scatters: one index per update, windows of size 1 along dimension 0.
POINT_SCATTER = ScatterDimensionNumbers(
    update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)


def count_op(graph: Graph, name: str) -> int:
    return sum(1 for e in graph.eqns if e.op.name == name)


def values(dtype: str | DType, shape: tuple[int, ...], start: int = 0) -> np.ndarray:
    """Small integer-valued data: every dtype holds it exactly, so results compare exactly."""
    d = rt.dtype(dtype)
    n = int(np.prod(shape))
    raw = (np.arange(n) + start) % 4
    if d.kind == "bool":
        return (raw % 2 == 1).reshape(shape)
    if d.kind == "complex":
        return (raw + 1j * ((raw + 1) % 3)).astype(d.storage).reshape(shape)
    return raw.astype(d.storage).reshape(shape)


def run(graph: Graph, args: list[np.ndarray]) -> list[np.ndarray]:
    return [t._array for t in evaluate(graph, *args)]


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


# -- golden programs: one per promoting family -------------------------------------------------


@dataclass
class Golden:
    """A raw program, its printout before and after ``promote`` (default policy ``jax``),
    and a NumPy reference computed without castwise."""

    build: Callable[[], Graph]
    args: Callable[[], list[np.ndarray]]
    numpy: Callable[..., np.ndarray]
    before: str
    after: str


def _add() -> Graph:
    b = GraphBuilder()
    x, y = b.input("f64", (3,)), b.input("c128", (3,))
    return b.build(b.raw("add", x, y, out=("c128", (3,))))


def _lt() -> Graph:
    b = GraphBuilder()
    x, y = b.input("i32", (3,)), b.input("f32", (3,))
    return b.build(b.raw("lt", x, y, out=("bool", (3,))))


def _and() -> Graph:
    b = GraphBuilder()
    x, y = b.input("bool", (3,)), b.input("i32", (3,))
    return b.build(b.raw("and", x, y, out=("i32", (3,))))


_CONV_PARAMS = {"window_strides": (1,), "padding": ((0, 0),), "lhs_dilation": (1,), "rhs_dilation": (1,),
                "dimension_numbers": ((0, 1, 2), (0, 1, 2), (0, 1, 2)), "feature_group_count": 1,
                "batch_group_count": 1}  # fmt: skip


_CONV_EQN = (
    "conv_general_dilated[window_strides=(1,) padding=((0, 0),) lhs_dilation=(1,) rhs_dilation=(1,) "
    "dimension_numbers=((0, 1, 2), (0, 1, 2), (0, 1, 2)) feature_group_count=1 batch_group_count=1]"
)


def _conv() -> Graph:
    b = GraphBuilder()
    x, y = b.input("f32", (1, 1, 4)), b.input("c64", (1, 1, 2))
    return b.build(b.raw("conv_general_dilated", x, y, out=("c64", (1, 1, 3)), **_CONV_PARAMS))


def _dot() -> Graph:
    b = GraphBuilder()
    x, y = b.input("f32", (2, 3)), b.input("c64", (3, 4))
    return b.build(b.raw("dot_general", x, y, out=("c64", (2, 4)), dimension_numbers=(((1,), (0,)), ((), ()))))


def _select() -> Graph:
    b = GraphBuilder()
    p, t, f = b.input("bool", (3,)), b.input("f32", (3,)), b.input("f64", (3,))
    return b.build(b.raw("select", p, t, f, out=("f64", (3,))))


def _clamp() -> Graph:
    b = GraphBuilder()
    lo, x, hi = b.input("i32", ()), b.input("f32", (4,)), b.input("f64", ())
    return b.build(b.raw("clamp", lo, x, hi, out=("f64", (4,))))


def _concatenate() -> Graph:
    b = GraphBuilder()
    x, y, z = b.input("f32", (2,)), b.input("f64", (3,)), b.input("i64", (1,))
    return b.build(b.raw("concatenate", x, y, z, out=("f64", (6,)), dimension=0))


def _scatter() -> Graph:
    b = GraphBuilder()
    x, i, u = b.input("f32", (5,)), b.input("i32", (2, 1)), b.input("f64", (2,))
    return b.build(b.raw("scatter", x, i, u, out=("f64", (5,)), dimension_numbers=POINT_SCATTER))


def _scatter_add() -> Graph:
    b = GraphBuilder()
    x, i, u = b.input("c64", (5,)), b.input("i64", (2, 1)), b.input("f32", (2,))
    return b.build(b.raw("scatter_add", x, i, u, out=("c64", (5,)), dimension_numbers=POINT_SCATTER))


def _dynamic_update_slice() -> Graph:
    b = GraphBuilder()
    x, u, s = b.input("f32", (5,)), b.input("i64", (2,)), b.input("i32", ())
    return b.build(b.raw("dynamic_update_slice", x, u, s, out=("f32", (5,))))


def _np_scatter(x: np.ndarray, i: np.ndarray, u: np.ndarray) -> np.ndarray:
    out = x.astype(np.float64)
    out[i[:, 0]] = u
    return out


def _np_scatter_add(x: np.ndarray, i: np.ndarray, u: np.ndarray) -> np.ndarray:
    out = x.copy()
    np.add.at(out, i[:, 0], u.astype(np.complex64))
    return out


def _np_update_slice(x: np.ndarray, u: np.ndarray, s: np.ndarray) -> np.ndarray:
    out = x.copy()
    out[int(s) : int(s) + len(u)] = u.astype(np.float32)
    return out


#: How the printer spells ``POINT_SCATTER``: golden texts say ``DN`` for it, to stay readable.
DN = (
    "dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), "
    "scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())"
)

GOLDEN: dict[str, Golden] = {
    "add": Golden(
        _add,
        lambda: [values("f64", (3,)), values("c128", (3,))],
        lambda x, y: x.astype(np.complex128) + y,
        """\
{ lambda a:f64[3] b:c128[3] . let
    c:c128[3] = add a b
  in (c) }""",
        """\
{ lambda a:f64[3] b:c128[3] . let
    c:c128[3] = convert[to=c128] a
    d:c128[3] = add c b
  in (d) }""",
    ),
    "lt": Golden(
        _lt,
        lambda: [values("i32", (3,)), values("f32", (3,), start=1)],
        lambda x, y: x.astype(np.float32) < y,
        """\
{ lambda a:i32[3] b:f32[3] . let
    c:bool[3] = lt a b
  in (c) }""",
        """\
{ lambda a:i32[3] b:f32[3] . let
    c:f32[3] = convert[to=f32] a
    d:bool[3] = lt c b
  in (d) }""",
    ),
    "and": Golden(
        _and,
        lambda: [values("bool", (3,)), values("i32", (3,), start=1)],
        lambda x, y: x.astype(np.int32) & y,
        """\
{ lambda a:bool[3] b:i32[3] . let
    c:i32[3] = and a b
  in (c) }""",
        """\
{ lambda a:bool[3] b:i32[3] . let
    c:i32[3] = convert[to=i32] a
    d:i32[3] = and c b
  in (d) }""",
    ),
    "dot_general": Golden(
        _dot,
        lambda: [values("f32", (2, 3)), values("c64", (3, 4))],
        lambda x, y: x.astype(np.complex64) @ y,
        """\
{ lambda a:f32[2,3] b:c64[3,4] . let
    c:c64[2,4] = dot_general[dimension_numbers=(((1,), (0,)), ((), ()))] a b
  in (c) }""",
        """\
{ lambda a:f32[2,3] b:c64[3,4] . let
    c:c64[2,3] = convert[to=c64] a
    d:c64[2,4] = dot_general[dimension_numbers=(((1,), (0,)), ((), ()))] c b
  in (d) }""",
    ),
    "conv_general_dilated": Golden(
        _conv,
        lambda: [values("f32", (1, 1, 4)), values("c64", (1, 1, 2))],
        lambda x, y: np.convolve(x.astype(np.complex64)[0, 0], y[0, 0, ::-1], "valid")[None, None],
        f"""\
{{ lambda a:f32[1,1,4] b:c64[1,1,2] . let
    c:c64[1,1,3] = {_CONV_EQN} a b
  in (c) }}""",
        f"""\
{{ lambda a:f32[1,1,4] b:c64[1,1,2] . let
    c:c64[1,1,4] = convert[to=c64] a
    d:c64[1,1,3] = {_CONV_EQN} c b
  in (d) }}""",
    ),
    "select": Golden(
        _select,
        lambda: [values("bool", (3,)), values("f32", (3,)), values("f64", (3,), start=2)],
        lambda p, t, f: np.where(p, t.astype(np.float64), f),
        """\
{ lambda a:bool[3] b:f32[3] c:f64[3] . let
    d:f64[3] = select a b c
  in (d) }""",
        """\
{ lambda a:bool[3] b:f32[3] c:f64[3] . let
    d:f64[3] = convert[to=f64] b
    e:f64[3] = select a d c
  in (e) }""",
    ),
    "clamp": Golden(
        _clamp,
        lambda: [np.array(1, np.int32), values("f32", (4,)), np.array(2.0)],
        lambda lo, x, hi: np.minimum(np.maximum(x.astype(np.float64), lo), hi),
        """\
{ lambda a:i32[] b:f32[4] c:f64[] . let
    d:f64[4] = clamp a b c
  in (d) }""",
        """\
{ lambda a:i32[] b:f32[4] c:f64[] . let
    d:f64[] = convert[to=f64] a
    e:f64[4] = convert[to=f64] b
    f:f64[4] = clamp d e c
  in (f) }""",
    ),
    "concatenate": Golden(
        _concatenate,
        lambda: [values("f32", (2,)), values("f64", (3,), start=1), values("i64", (1,), start=3)],
        lambda x, y, z: np.concatenate([x.astype(np.float64), y, z.astype(np.float64)]),
        """\
{ lambda a:f32[2] b:f64[3] c:i64[1] . let
    d:f64[6] = concatenate[dimension=0] a b c
  in (d) }""",
        """\
{ lambda a:f32[2] b:f64[3] c:i64[1] . let
    d:f64[2] = convert[to=f64] a
    e:f64[1] = convert[to=f64] c
    f:f64[6] = concatenate[dimension=0] d b e
  in (f) }""",
    ),
    "scatter": Golden(
        _scatter,
        lambda: [values("f32", (5,)), np.array([[3], [0]], np.int32), np.array([7.5, -2.0])],
        _np_scatter,
        """\
{ lambda a:f32[5] b:i32[2,1] c:f64[2] . let
    d:f64[5] = scatter[DN] a b c
  in (d) }""",
        """\
{ lambda a:f32[5] b:i32[2,1] c:f64[2] . let
    d:f64[5] = convert[to=f64] a
    e:f64[5] = scatter[DN] d b c
  in (e) }""",
    ),
    "scatter_add": Golden(
        _scatter_add,
        lambda: [values("c64", (5,)), np.array([[1], [1]], np.int64), np.array([0.5, 2.0], np.float32)],
        _np_scatter_add,
        """\
{ lambda a:c64[5] b:i64[2,1] c:f32[2] . let
    d:c64[5] = scatter_add[DN] a b c
  in (d) }""",
        """\
{ lambda a:c64[5] b:i64[2,1] c:f32[2] . let
    d:c64[2] = convert[to=c64] c
    e:c64[5] = scatter_add[DN] a b d
  in (e) }""",
    ),
    "dynamic_update_slice": Golden(
        _dynamic_update_slice,
        lambda: [values("f32", (5,)), np.array([8, 9], np.int64), np.array(2, np.int32)],
        _np_update_slice,
        """\
{ lambda a:f32[5] b:i64[2] c:i32[] . let
    d:f32[5] = dynamic_update_slice a b c
  in (d) }""",
        """\
{ lambda a:f32[5] b:i64[2] c:i32[] . let
    d:f32[2] = convert[to=f32] b
    e:f32[5] = dynamic_update_slice a d c
  in (e) }""",
    ),
}
for _case in GOLDEN.values():
    _case.before = _case.before.replace("[DN]", f"[{DN}]")
    _case.after = _case.after.replace("[DN]", f"[{DN}]")


@pytest.mark.parametrize("name", GOLDEN)
def test_promote_golden(name: str) -> None:
    case = GOLDEN[name]
    graph = case.build()
    assert pretty(graph) == case.before
    promoted = promote(graph, "jax")
    assert pretty(promoted) == case.after
    assert pretty(graph) == case.before  # the input graph is not mutated


@pytest.mark.parametrize("name", GOLDEN)
def test_raw_graph_fails_verify_with_the_printed_equation(name: str) -> None:
    graph = GOLDEN[name].build()
    line = pretty(graph).splitlines()[1].strip()
    with pytest.raises(GraphError, match="promoted operands") as info:
        verify(graph)
    assert line in str(info.value)


@pytest.mark.parametrize("name", GOLDEN)
def test_promoted_golden_verifies_and_matches_numpy(name: str) -> None:
    case = GOLDEN[name]
    promoted = promote(case.build(), "jax")
    verify(promoted)
    args = case.args()
    (got,) = run(promoted, args)
    assert_same(got, case.numpy(*args))


def test_golden_covers_every_promoting_family() -> None:
    families = {ops.get(name).family for name in GOLDEN}
    promoting = {op.family for op in ops.OPS.values() if promoted_positions(op, 3)}
    assert families == promoting


def test_golden_covers_the_required_programs() -> None:
    assert set(GOLDEN) == {
        "add", "lt", "and", "dot_general", "select", "clamp", "concatenate",
        "scatter", "scatter_add", "dynamic_update_slice", "conv_general_dilated",
    }  # fmt: skip


@pytest.mark.parametrize("name", GOLDEN)
def test_promote_is_idempotent_on_goldens(name: str) -> None:
    once = promote(GOLDEN[name].build(), "jax")
    twice = promote(once, "jax")
    assert pretty(twice) == pretty(once)
    # Nothing is inserted, and the equations themselves are shared, not copied.
    assert [id(e) for e in twice.eqns] == [id(e) for e in once.eqns]


# -- policies --------------------------------------------------------------------------------------


def _int64_plus_float32() -> Graph:
    # Recorded under jax; the other policies re-plan it.
    b = GraphBuilder()
    x, y = b.input("i64", (3,)), b.input("f32", (3,))
    return b.build(b.raw("add", x, y, out=("f32", (3,))))


def _f32_plus_0d_f64() -> Graph:
    b = GraphBuilder()
    x, y = b.input("f32", (3,)), b.input("f64", ())
    return b.build(b.raw("add", x, y, out=("f64", (3,))))


POLICY_CASES = {
    # int64 + float32: jax keeps the float's width, numpy widens to f64, torch
    # keeps the float (category rule).
    ("i64+f32", "jax"): """\
{ lambda a:i64[3] b:f32[3] . let
    c:f32[3] = convert[to=f32] a
    d:f32[3] = add c b
  in (d) }""",
    ("i64+f32", "numpy"): """\
{ lambda a:i64[3] b:f32[3] . let
    c:f64[3] = convert[to=f64] a
    d:f64[3] = convert[to=f64] b
    e:f64[3] = add c d
  in (e) }""",
    ("i64+f32", "torch"): """\
{ lambda a:i64[3] b:f32[3] . let
    c:f32[3] = convert[to=f32] a
    d:f32[3] = add c b
  in (d) }""",
    # f32[3] + f64[]: a 0-d operand of the same category does not widen under
    # torch; jax and numpy treat it as any other f64.
    ("f32+f64[]", "jax"): """\
{ lambda a:f32[3] b:f64[] . let
    c:f64[3] = convert[to=f64] a
    d:f64[3] = add c b
  in (d) }""",
    ("f32+f64[]", "numpy"): """\
{ lambda a:f32[3] b:f64[] . let
    c:f64[3] = convert[to=f64] a
    d:f64[3] = add c b
  in (d) }""",
    ("f32+f64[]", "torch"): """\
{ lambda a:f32[3] b:f64[] . let
    c:f32[] = convert[to=f32] b
    d:f32[3] = add a c
  in (d) }""",
}
POLICY_PROGRAMS = {"i64+f32": _int64_plus_float32, "f32+f64[]": _f32_plus_0d_f64}


@pytest.mark.parametrize(("program", "policy"), POLICY_CASES)
def test_promote_follows_the_policy(program: str, policy: str) -> None:
    graph = POLICY_PROGRAMS[program]()
    promoted = promote(graph, policy)
    assert pretty(promoted) == POLICY_CASES[program, policy]
    assert promoted.meta["policy"] == policy
    verify(promoted)
    x = values(graph.inputs[0].dtype, graph.inputs[0].shape, start=1)
    y = values(graph.inputs[1].dtype, graph.inputs[1].shape, start=2)
    target = promoted.outputs[0].dtype.storage
    (got,) = run(promoted, [x, y])
    assert_same(got, x.astype(target) + y.astype(target))


def test_policy_none_means_the_active_policy() -> None:
    graph = _int64_plus_float32()
    with rt.use_policy("numpy"):
        assert pretty(promote(graph)) == POLICY_CASES["i64+f32", "numpy"]
    assert pretty(promote(graph)) == POLICY_CASES["i64+f32", rt.DEFAULT_POLICY]


def test_promote_names_the_equation_when_the_policy_has_no_path() -> None:
    graph = _int64_plus_float32()
    with pytest.raises(PromotionError, match=r"c:f32\[3\] = add a b"):
        promote(graph, "strict")


# -- canonicalize ---------------------------------------------------------------------------------


@dataclass
class Stack:
    """A recorded stack (or concatenate): printouts before canonicalize and after
    promote + canonicalize, and the NumPy result."""

    build: Callable[[], tuple[Graph, list[np.ndarray]]]
    numpy: Callable[..., np.ndarray]
    before: str
    after: str


def _stack_rank_deficient() -> tuple[Graph, list[np.ndarray]]:
    # stack([x, c]) with x tracked f32[3] and c an untracked f64[3] constant:
    # recorded as a concatenate of rank-1 operands into f64[2,3].
    b = GraphBuilder()
    c = b.const([1.0, 2.0, 3.0], "f64")
    x = b.input("f32", (3,))
    return b.build(b.raw("concatenate", x, c, out=("f64", (2, 3)), dimension=0)), [values("f32", (3,))]


def _stack_mixed_axis1() -> tuple[Graph, list[np.ndarray]]:
    # stack([x, c], axis=1): the tracked x's reshape was recorded, the untracked
    # constant's was not.
    b = GraphBuilder()
    c = b.const([5.0, 6.0], "f32")
    x = b.input("f32", (2,))
    x1 = b.op("reshape", x, new_sizes=(2, 1))
    return b.build(b.raw("concatenate", x1, c, out=("f32", (2, 2)), dimension=1)), [values("f32", (2,))]


def _stack_scalars() -> tuple[Graph, list[np.ndarray]]:
    # stack of 0-d values of distinct dtypes into a vector.
    b = GraphBuilder()
    c = b.const(4, "i32")
    x = b.input("f32", ())
    return b.build(b.raw("concatenate", x, c, out=("f32", (2,)), dimension=0)), [np.array(1.5, np.float32)]


def _stack_matrices_middle() -> tuple[Graph, list[np.ndarray]]:
    # stack of f32[2,3] matrices along axis 1 -> f32[2,2,3].
    b = GraphBuilder()
    c = b.const(values("f32", (2, 3), start=2))
    x = b.input("f32", (2, 3))
    return b.build(b.raw("concatenate", c, x, out=("f32", (2, 2, 3)), dimension=1)), [values("f32", (2, 3))]


def _concatenate_exact() -> tuple[Graph, list[np.ndarray]]:
    b = GraphBuilder()
    x, y = b.input("f32", (2, 3)), b.input("f32", (1, 3))
    return b.build(b.raw("concatenate", x, y, out=("f32", (3, 3)), dimension=0)), [
        values("f32", (2, 3)),
        values("f32", (1, 3), start=3),
    ]


STACKS: dict[str, Stack] = {
    "rank-deficient stack": Stack(
        _stack_rank_deficient,
        lambda x: np.stack([x.astype(np.float64), np.array([1.0, 2.0, 3.0])]),
        """\
{ lambda a:f64[3] ; b:f32[3] . let
    c:f64[2,3] = concatenate[dimension=0] b a
  in (c) }""",
        """\
{ lambda a:f64[3] ; b:f32[3] . let
    c:f64[3] = convert[to=f64] b
    d:f64[1,3] = reshape[new_sizes=(1, 3)] c
    e:f64[1,3] = reshape[new_sizes=(1, 3)] a
    f:f64[2,3] = concatenate[dimension=0] d e
  in (f) }""",
    ),
    "mixed stack along axis 1": Stack(
        _stack_mixed_axis1,
        lambda x: np.stack([x, np.array([5.0, 6.0], np.float32)], axis=1),
        """\
{ lambda a:f32[2] ; b:f32[2] . let
    c:f32[2,1] = reshape[new_sizes=(2, 1)] b
    d:f32[2,2] = concatenate[dimension=1] c a
  in (d) }""",
        """\
{ lambda a:f32[2] ; b:f32[2] . let
    c:f32[2,1] = reshape[new_sizes=(2, 1)] b
    d:f32[2,1] = reshape[new_sizes=(2, 1)] a
    e:f32[2,2] = concatenate[dimension=1] c d
  in (e) }""",
    ),
    "stack of scalars": Stack(
        _stack_scalars,
        lambda x: np.stack([x, np.float32(4)]),
        """\
{ lambda a:i32[] ; b:f32[] . let
    c:f32[2] = concatenate[dimension=0] b a
  in (c) }""",
        """\
{ lambda a:i32[] ; b:f32[] . let
    c:f32[] = convert[to=f32] a
    d:f32[1] = reshape[new_sizes=(1,)] b
    e:f32[1] = reshape[new_sizes=(1,)] c
    f:f32[2] = concatenate[dimension=0] d e
  in (f) }""",
    ),
    "stack of matrices along a middle axis": Stack(
        _stack_matrices_middle,
        lambda x: np.stack([values("f32", (2, 3), start=2), x], axis=1),
        """\
{ lambda a:f32[2,3] ; b:f32[2,3] . let
    c:f32[2,2,3] = concatenate[dimension=1] a b
  in (c) }""",
        """\
{ lambda a:f32[2,3] ; b:f32[2,3] . let
    c:f32[2,1,3] = reshape[new_sizes=(2, 1, 3)] a
    d:f32[2,1,3] = reshape[new_sizes=(2, 1, 3)] b
    e:f32[2,2,3] = concatenate[dimension=1] c d
  in (e) }""",
    ),
    "exact concatenate": Stack(
        _concatenate_exact,
        lambda x, y: np.concatenate([x, y]),
        """\
{ lambda a:f32[2,3] b:f32[1,3] . let
    c:f32[3,3] = concatenate[dimension=0] a b
  in (c) }""",
        """\
{ lambda a:f32[2,3] b:f32[1,3] . let
    c:f32[3,3] = concatenate[dimension=0] a b
  in (c) }""",
    ),
}


@pytest.mark.parametrize("name", STACKS)
def test_canonicalize_golden(name: str) -> None:
    case = STACKS[name]
    graph, args = case.build()
    assert pretty(graph) == case.before
    result = canonicalize(promote(graph, "jax"))
    assert pretty(result) == case.after
    assert pretty(graph) == case.before  # not mutated
    verify(result)
    (got,) = run(result, args)
    assert_same(got, case.numpy(*args))


@pytest.mark.parametrize("name", STACKS)
def test_canonicalize_is_idempotent(name: str) -> None:
    graph, _ = STACKS[name].build()
    once = canonicalize(promote(graph, "jax"))
    twice = canonicalize(once)
    assert pretty(twice) == pretty(once)
    assert [id(e) for e in twice.eqns] == [id(e) for e in once.eqns]


@pytest.mark.parametrize("name", [n for n in STACKS if "stack" in n])
def test_raw_stack_fails_verify_until_canonicalized(name: str) -> None:
    graph, _ = STACKS[name].build()
    promoted = promote(graph, "jax")
    concat = pretty(promoted).splitlines()[-2].strip()
    with pytest.raises(GraphError) as info:
        verify(promoted)
    assert concat in str(info.value)


def test_canonicalize_leaves_shapes_it_cannot_repair_to_verify() -> None:
    # f32[4] is neither of the result's rank nor a stacked f32[3]: no reshape can
    # make this concatenate right, so none is inserted and verify reports it.
    b = GraphBuilder()
    x, y = b.input("f32", (4,)), b.input("f32", (1, 3))
    graph = b.build(b.raw("concatenate", x, y, out=("f32", (2, 3)), dimension=0))
    result = canonicalize(graph)
    assert pretty(result) == pretty(graph)
    with pytest.raises(GraphError, match=r"c:f32\[2,3\] = concatenate\[dimension=0\] a b"):
        verify(result)


def test_canonicalize_then_promote_is_also_valid() -> None:
    # Both passes are needed; the documented order is promote first, but each
    # is independent of the other's concern.
    graph, args = _stack_rank_deficient()
    result = promote(canonicalize(graph), "jax")
    verify(result)
    (got,) = run(result, args)
    assert_same(got, STACKS["rank-deficient stack"].numpy(*args))


# -- promote over random mixed-dtype graphs ------------------------------------------------------

DTYPES = ("bool", "i32", "i64", "f32", "f64", "c64", "c128")
RANDOM_OPS = (
    "add", "sub", "mul", "lt", "eq", "and", "or", "dot_general", "select", "clamp",
    "concatenate", "scatter", "scatter_add", "dynamic_update_slice",
)  # fmt: skip


def eager_plan_input(var: Var) -> Any:
    """As eager execution classifies a tensor for the plan: 0-d tensors are marked."""
    return var.dtype if var.shape else Operand(var.dtype, None, True)


@dataclass
class RandomCase:
    graph: Graph
    policy: str
    mismatched: int  # operands whose dtype differs from their plan target
    feeds: dict[int, np.ndarray]  # input values that must be specific (indices)


@st.composite
def mixed_graphs(draw: st.DrawFn) -> RandomCase:
    """A raw recording of 1-5 promoting ops over inputs of random dtypes.

    Operands are fresh inputs or earlier results; each equation's output aval is
    what eager execution produced (the kernel's aval at the plan's targets), so
    the recording is consistent with ``policy``. Ops eager execution would
    refuse (``and`` of floats, ``lt`` of complex ...) are not recorded.
    """
    policy = draw(st.sampled_from(("jax", "numpy", "torch")))
    b = GraphBuilder()
    pool: list[Var] = []
    feeds: dict[int, np.ndarray] = {}
    mismatched = 0
    outputs: list[Var] = []

    def value(shape: tuple[int, ...] = (3,)) -> Var:
        if shape == (3,) and pool and draw(st.booleans()):
            return draw(st.sampled_from(pool))
        return b.input(draw(st.sampled_from(DTYPES)), shape)

    def elem() -> Var:  # an elementwise operand: mostly f32[3]-shaped, sometimes 0-d
        return value(draw(st.sampled_from([(3,), (3,), ()])))

    def index(shape: tuple[int, ...], contents: list[Any]) -> Var:
        var = b.input(draw(st.sampled_from(("i32", "i64"))), shape)
        feeds[id(var)] = np.array(contents, var.dtype.storage)
        return var

    for _ in range(draw(st.integers(1, 5))):
        name = draw(st.sampled_from(RANDOM_OPS))
        params: dict[str, Any] = {}
        if name == "dot_general":
            inputs = [value(), value()]
            params["dimension_numbers"] = (((0,), (0,)), ((), ()))
        elif name == "select":
            inputs = [b.input("bool", (3,)), elem(), elem()]
        elif name == "clamp":
            inputs = [value(draw(st.sampled_from([(), (3,)]))), value(), value(draw(st.sampled_from([(), (3,)])))]
        elif name == "concatenate":
            inputs = [value() for _ in range(draw(st.integers(1, 3)))]
            params["dimension"] = 0
        elif name in ("scatter", "scatter_add"):
            inputs = [value(), index((2, 1), [[2], [0]]), value((2,))]
            params["dimension_numbers"] = POINT_SCATTER
        elif name == "dynamic_update_slice":
            inputs = [value(), value((2,)), index((), 1)]
        else:
            inputs = [elem(), elem()]
        op = ops.get(name)
        targets = plan(op, [eager_plan_input(v) for v in inputs], policy)
        try:
            (out,) = abstract_eval(op, [(t, v.shape) for t, v in zip(targets, inputs, strict=True)], params)
        except OpTypeError:  # eager execution would refuse this op
            continue
        mismatched += sum(v.dtype is not t for v, t in zip(inputs, targets, strict=True))
        result = b.raw(op, *inputs, out=out, **params)
        outputs.append(result)
        if result.shape == (3,):
            pool.append(result)
    if not outputs:  # every drawn op was refused: record a plain mixed add
        x, y = b.input("f64", (3,)), b.input("c128", (3,))
        targets = plan(ops.add, [x.dtype, y.dtype], policy)
        mismatched += sum(v.dtype is not t for v, t in zip((x, y), targets, strict=True))
        outputs.append(b.raw("add", x, y, out=(targets[0], (3,))))
    return RandomCase(b.build(*outputs), policy, mismatched, feeds)


_NUMPY: dict[str, Callable[..., np.ndarray]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "lt": np.less,
    "eq": np.equal,
    "and": lambda x, y: np.logical_and(x, y) if x.dtype == bool else np.bitwise_and(x, y),
    "or": lambda x, y: np.logical_or(x, y) if x.dtype == bool else np.bitwise_or(x, y),
    "dot_general": lambda x, y: np.asarray(np.dot(x, y)),
    "select": np.where,
    "clamp": lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi),
    "concatenate": lambda *xs: np.concatenate(xs),
}


def _numpy_scatter(x: np.ndarray, i: np.ndarray, u: np.ndarray, add: bool) -> np.ndarray:
    out = x.copy()
    if add:
        np.add.at(out, i[:, 0], u)
    else:
        out[i[:, 0]] = u
    return out


def numpy_reference(graph: Graph, policy: str, feeds: dict[int, np.ndarray]) -> list[np.ndarray]:
    """Evaluate a raw graph with NumPy alone: cast each operand to its plan target
    with ``astype`` (exact for the small integer values fed), then the NumPy op."""
    env = {id(v): feeds.get(id(v), values(v.dtype, v.shape, start=k)) for k, v in enumerate(graph.inputs)}
    for eqn in graph.eqns:
        targets = plan(eqn.op, [eager_plan_input(v) for v in eqn.inputs], policy)
        args = [env[id(v)].astype(t.storage) for v, t in zip(eqn.inputs, targets, strict=True)]
        name = eqn.op.name
        if name in ("scatter", "scatter_add"):
            out = _numpy_scatter(*args, add=name == "scatter_add")
        elif name == "dynamic_update_slice":
            x, u, s = args
            out = x.copy()
            out[int(s) : int(s) + len(u)] = u
        else:
            out = np.asarray(_NUMPY[name](*args))
        (var,) = eqn.outputs
        env[id(var)] = out.astype(var.dtype.storage)
    return [env[id(v)] for v in graph.outputs]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_graphs())
def test_promote_inserts_one_convert_per_mismatched_operand(case: RandomCase) -> None:
    graph = case.graph
    promoted = promote(graph, case.policy)
    inserted = count_op(promoted, "convert") - count_op(graph, "convert")
    assert inserted == case.mismatched
    assert len(promoted.eqns) == len(graph.eqns) + case.mismatched  # converts only, nothing else
    verify(promoted)
    assert pretty(promote(promoted, case.policy)) == pretty(promoted)  # idempotent
    args = [case.feeds.get(id(v), values(v.dtype, v.shape, start=k)) for k, v in enumerate(graph.inputs)]
    for got, want in zip(run(promoted, args), numpy_reference(graph, case.policy, case.feeds), strict=True):
        assert_same(got, want)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_graphs())
def test_promote_inserts_nothing_in_promoted_graphs(case: RandomCase) -> None:
    promoted = promote(case.graph, case.policy)
    again = promote(promoted, case.policy)
    assert count_op(again, "convert") == count_op(promoted, "convert")
    assert [id(e) for e in again.eqns] == [id(e) for e in promoted.eqns]


def test_promote_retypes_downstream_values_under_another_policy() -> None:
    # Recorded under jax (i64 + f32 -> f32); numpy's plan makes the add f64, and
    # the neg that consumes it follows (the kernels' dtype rule, not a table here).
    b = GraphBuilder()
    x, y = b.input("i64", (3,)), b.input("f32", (3,))
    s = b.raw("add", x, y, out=("f32", (3,)))
    graph = b.build(b.op("neg", s))
    promoted = promote(graph, "numpy")
    assert (
        pretty(promoted)
        == """\
{ lambda a:i64[3] b:f32[3] . let
    c:f64[3] = convert[to=f64] a
    d:f64[3] = convert[to=f64] b
    e:f64[3] = add c d
    f:f64[3] = neg e
  in (f) }"""
    )
    verify(promoted)
    assert pretty(graph).splitlines()[-2].strip() == "d:f32[3] = neg c"  # the input graph is untouched


def test_promote_leaves_non_promoting_operands_alone() -> None:
    # gather's indices, a convert's source, unary ops: no plan targets to meet.
    b = GraphBuilder()
    x = b.input("f32", (3,))
    i = b.input("i32", (2, 1))
    c = b.op("convert", x, new_dtype=rt.float64)
    n = b.op("neg", c)
    graph = b.build(n, i)
    promoted = promote(graph)
    assert pretty(promoted) == pretty(graph)
    assert [id(e) for e in promoted.eqns] == [id(e) for e in graph.eqns]


def test_promote_does_not_mutate_its_input() -> None:
    graph = _select()
    eqn = graph.eqns[0]
    inputs, outputs = eqn.inputs, eqn.outputs
    text = pretty(graph)
    promote(graph)
    assert pretty(graph) == text
    assert eqn.inputs is inputs
    assert all(a is b for a, b in zip(eqn.outputs, outputs, strict=True))
    assert all(v.producer is eqn for v in outputs)


# -- dce ----------------------------------------------------------------------------------------


def test_dce_removes_dead_equations_and_unused_constants() -> None:
    b = GraphBuilder()
    used = b.const([1.0, 2.0, 3.0], "f32")
    unused = b.const([4.0, 5.0, 6.0], "f32")
    x = b.input("f32", (3,))
    b.input("f64", (2,))  # an unused input: part of the signature, kept
    dead = b.op("neg", unused)
    b.op("sin", dead)  # a dead chain
    y = b.op("add", x, used)
    b.op("mul", y, y)  # a dead consumer of a live value
    graph = b.build(y)
    assert (
        pretty(graph)
        == """\
{ lambda a:f32[3] b:f32[3] ; c:f32[3] d:f64[2] . let
    e:f32[3] = neg b
    f:f32[3] = sin e
    g:f32[3] = add c a
    h:f32[3] = mul g g
  in (g) }"""
    )
    result = dce(graph)
    assert (
        pretty(result)
        == """\
{ lambda a:f32[3] ; b:f32[3] c:f64[2] . let
    d:f32[3] = add b a
  in (d) }"""
    )
    assert result.outputs == graph.outputs and result.inputs == graph.inputs
    assert len(graph.eqns) == 4  # not mutated
    verify(result)
    assert pretty(dce(result)) == pretty(result)


def test_dce_keeps_a_multi_output_equation_when_one_output_is_used() -> None:
    b = GraphBuilder()
    x = b.input("f64", (2, 2))
    _, w = b.op("eigh", x, lower=True)
    b.op("eigh", x, lower=True)  # fully dead
    result = dce(b.build(w))
    assert [e.op.name for e in result.eqns] == ["eigh"]
    assert result.eqns[0].outputs[1] is w


def test_dce_of_a_graph_returning_its_input() -> None:
    b = GraphBuilder()
    x = b.input("f32", (3,))
    b.op("neg", x)
    result = dce(b.build(x))
    assert result.eqns == [] and result.outputs == [x]
    verify(result)


# -- verify ---------------------------------------------------------------------------------------


def _use_before_definition() -> Graph:
    x = Var(rt.float32, (3,))
    first = raw_eqn("neg", [x], {}, [("f32", (3,))])
    second = raw_eqn("sin", [first.outputs[0]], {}, [("f32", (3,))])
    return Graph([x], [], [second, first], [second.outputs[0]])


def _value_from_nowhere() -> Graph:
    x, stray = Var(rt.float32, (3,)), Var(rt.float32, (3,))
    eqn = raw_eqn("add", [x, stray], {}, [("f32", (3,))])
    return Graph([x], [], [eqn], [eqn.outputs[0]])


def _output_shape_disagrees() -> Graph:
    b = GraphBuilder()
    x, y = b.input("f32", (3,)), b.input("f32", (3,))
    return b.build(b.raw("add", x, y, out=("f32", (4,))))


def _output_dtype_disagrees() -> Graph:
    b = GraphBuilder()
    x, y = b.input("f32", (3,)), b.input("f32", (3,))
    return b.build(b.raw("mul", x, y, out=("f64", (3,))))


def _operand_shapes_disagree() -> Graph:
    b = GraphBuilder()
    x, y = b.input("f32", (3,)), b.input("f32", (4,))
    return b.build(b.raw("add", x, y, out=("f32", (4,))))


def _undefined_output() -> Graph:
    b = GraphBuilder()
    x = b.input("f32", (3,))
    b.op("neg", x)
    return b.build(Var(rt.float32, (3,)))


def _wrong_arity() -> Graph:
    b = GraphBuilder()
    x = b.input("f32", (3,))
    return b.build(b.raw("add", x, out=("f32", (3,))))


def _predicate_not_bool() -> Graph:
    b = GraphBuilder()
    p, t, f = b.input("i32", (3,)), b.input("f32", (3,)), b.input("f32", (3,))
    return b.build(b.raw("select", p, t, f, out=("f32", (3,))))


def _defined_twice() -> Graph:
    b = GraphBuilder()
    x = b.input("f32", (3,))
    y = b.op("neg", x)
    graph = b.build(y)
    graph.eqns.append(graph.eqns[0])
    return graph


def _const_array_disagrees() -> Graph:
    x = Var(rt.float32, (3,), None, np.zeros(3))  # declared f32, holds float64
    eqn = raw_eqn("neg", [x], {}, [("f32", (3,))])
    return Graph([], [x], [eqn], [eqn.outputs[0]])


BROKEN: dict[str, tuple[Callable[[], Graph], str, int | None]] = {
    # name: (builder, message pattern, index of the printed line that the message must contain)
    "use before definition": (_use_before_definition, "used before it is defined", 1),
    "value from nowhere": (_value_from_nowhere, "operand y of add is used before it is defined", 1),
    "output shape disagrees": (_output_shape_disagrees, r"recorded as f32\[4\] but the kernels give f32\[3\]", 1),
    "output dtype disagrees": (_output_dtype_disagrees, r"recorded as f64\[3\] but the kernels give f32\[3\]", 1),
    "operand shapes disagree": (_operand_shapes_disagree, "the kernels reject add: .*shape mismatch", 1),
    "undefined graph output": (_undefined_output, r"graph output\(s\) \[0\] are never defined", -1),
    "wrong arity": (_wrong_arity, r"add takes operands \(x, y\), got 1", 1),
    "predicate not bool": (_predicate_not_bool, "the kernels reject select", 1),
    "defined twice": (_defined_twice, "is already defined", 2),
    "constant holds another array": (_const_array_disagrees, "holds an array of float64", 0),
}


@pytest.mark.parametrize("name", BROKEN)
def test_verify_reports_broken_graphs_with_the_printed_line(name: str) -> None:
    build, pattern, line = BROKEN[name]
    graph = build()
    with pytest.raises(GraphError, match=pattern) as info:
        verify(graph)
    assert line is not None
    assert pretty(graph).splitlines()[line].strip() in str(info.value)


def test_verify_leaves_predicate_and_index_dtypes_alone() -> None:
    # Positions the plan does not promote may differ from the promoted ones.
    for name in ("select", "scatter", "dynamic_update_slice"):
        verify(promote(GOLDEN[name].build(), "jax"))


def test_promoted_positions_follow_the_plan() -> None:
    assert promoted_positions(ops.add, 2) == (0, 1)
    assert promoted_positions(ops.select, 3) == (1, 2)
    assert promoted_positions(ops.clamp, 3) == (0, 1, 2)
    assert promoted_positions(ops.concatenate, 4) == (0, 1, 2, 3)
    assert promoted_positions(ops.scatter_add, 3) == (0, 2)
    assert promoted_positions(ops.dynamic_update_slice, 4) == (0, 1)
    assert promoted_positions(ops.neg, 1) == ()
    assert promoted_positions(ops.gather, 2) == ()
    # Cross-check against the plan itself: positions it maps to one target.
    for op, dtypes in [
        (ops.select, (rt.bool_, rt.float32, rt.float64)),
        (ops.scatter, (rt.float32, rt.int32, rt.complex64)),
        (ops.dynamic_update_slice, (rt.int64, rt.float32, rt.int32, rt.int64)),
    ]:
        targets = plan(op, dtypes, "jax")
        changed = {i for i, (d, t) in enumerate(zip(dtypes, targets, strict=True)) if d is not t}
        assert changed <= set(promoted_positions(op, len(dtypes)))
        assert len({targets[i] for i in promoted_positions(op, len(dtypes))}) == 1


# -- registry and pipeline ------------------------------------------------------------------------


def squash(text: str) -> str:
    """Lines stripped of indentation, so a printout matches its indented copy in a docstring."""
    return "\n".join(line.strip() for line in text.strip().splitlines())


def test_registry_lists_the_passes() -> None:
    assert {"promote", "canonicalize", "dce", "verify"} <= set(PASSES)
    assert PASSES["verify"].kind == "check"
    assert all(PASSES[n].kind == "rewrite" for n in ("promote", "canonicalize", "dce"))


@pytest.mark.parametrize("name", ["promote", "canonicalize", "dce", "verify"])
def test_docstring_shows_the_rewrite_it_performs(name: str) -> None:
    entry = PASSES[name]
    doc = squash(entry.doc)
    before = entry.example()
    assert "->" in doc
    assert squash(pretty(before)) in doc
    if entry.kind == "rewrite":
        assert squash(pretty(entry(before))) in doc
    else:
        with pytest.raises(GraphError) as info:
            entry(before)
        assert squash(f"GraphError: {info.value}") in doc


def test_run_passes_turns_a_raw_recording_into_a_verified_graph() -> None:
    b = GraphBuilder()
    c = b.const([1.0, 2.0, 3.0], "f64")
    x = b.input("f32", (3,))
    b.raw("add", x, c, out=("f64", (3,)))  # dead
    graph = b.build(b.raw("concatenate", x, c, out=("f64", (2, 3)), dimension=0))
    result = run_passes(graph, policy="jax")
    assert (
        pretty(result)
        == """\
{ lambda a:f64[3] ; b:f32[3] . let
    c:f64[3] = convert[to=f64] b
    d:f64[1,3] = reshape[new_sizes=(1, 3)] c
    e:f64[1,3] = reshape[new_sizes=(1, 3)] a
    f:f64[2,3] = concatenate[dimension=0] d e
  in (f) }"""
    )
    with pytest.raises(GraphError):
        run_passes(graph, ["promote"], policy="jax")  # not canonicalized: verify refuses
    unchecked = run_passes(graph, ["promote", "dce"], policy="jax", check=False)
    assert count_op(unchecked, "add") == 0


def test_raw_eqn_links_its_outputs() -> None:
    x = Var(rt.float64, (3,))
    y = Var(rt.complex128, (3,))
    eqn = raw_eqn(ops.add, [x, y], {}, [(rt.complex128, (3,))])
    (out,) = eqn.outputs
    assert out.producer is eqn and out.aval == (rt.complex128, (3,))
    assert isinstance(eqn, Eqn)


def test_rewritten_equations_keep_the_eager_values_recorded_on_their_outputs() -> None:
    # Derivative rules read ``Var.value``; a rewrite that only adds converts or
    # reshapes before an equation must not lose what eager execution computed.
    graph, args = _stack_rank_deficient()
    recorded = np.stack([args[0].astype(np.float64), np.array([1.0, 2.0, 3.0])])
    graph.outputs[0].value = recorded
    result = canonicalize(promote(graph, "jax"))
    assert result.outputs[0] is not graph.outputs[0]
    assert result.outputs[0].value is recorded
    # A retyped output (another policy changes its dtype) has no stale value.
    raw = _int64_plus_float32()
    raw.outputs[0].value = np.zeros(3, np.float32)
    assert promote(raw, "numpy").outputs[0].value is None
    assert promote(raw, "jax").outputs[0].value is raw.outputs[0].value
