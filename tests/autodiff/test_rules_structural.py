"""Derivative rules of the structural, indexing, contraction and reduction ops.

Table-driven over every op of the family (``dot_general``, ``concatenate``,
``scatter``, ``scatter_add``, ``gather``, ``dynamic_slice``,
``dynamic_update_slice``, ``reduce_sum/prod/max/min``, ``reshape``,
``transpose``, ``broadcast_in_dim``, ``slice``, ``pad``, ``reverse``) in f32,
f64, c64 and c128:

1. ``check_grads`` to second order, forward (finite differences) and reverse
   (adjoint of forward);
2. parity with JAX: our JVP equals ``jax.jvp`` of the ``jax.lax`` equivalent and
   our VJP equals ``conj(jax_vjp(conj(ct)))``, with each operand active alone and
   all together (inactive operands are closed-over constants; on the eager tape
   they get no stored cotangent);
3. symbolic zeros: all-``Zero`` inputs cost no op, a cotangent that is not
   needed is a ``Zero`` and costs nothing (the work with every operand needed is
   exactly the sum of the work for each alone), and integer index operands
   always get a ``Zero``;
4. regressions: promoted (non-add) replays of mixed-dtype ``concatenate`` and
   ``dot_general`` recorded eagerly, and VJP-then-JVP on one recording of a
   mixed tracked/untracked ``stack``, with exact expected values.

Deliberate departures from JAX, tested as such: a gather in JAX's default mode
(``promise_in_bounds``, which clamps) is compared with JAX's ``clip`` gather,
because JAX transposes the default to a scatter that drops out-of-bounds
windows (wrong gradients, as JAX documents) while ours transposes to a
clipping scatter-add (the exact adjoint).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from autodiff.derivatives import contraction, indexing, reductions, structural  # noqa: E402, F401  (registers the rules)
from autodiff.engine import jvp_pass, reachable_eqns  # noqa: E402
from autodiff.rules import JVP_RULES, VJP_RULES  # noqa: E402
from autodiff.testing import check_grads, close_over  # noqa: E402
from autodiff.zeros import Zero  # noqa: E402
from runtime.core import lax as F  # noqa: E402
from runtime.core.dtypes import DType  # noqa: E402
from runtime.core.executor import asarray  # noqa: E402
from runtime.core.graph import collect  # noqa: E402
from runtime.core.shapes import GatherDimensionNumbers, ScatterDimensionNumbers  # noqa: E402
from runtime.core.tensor import Tensor  # noqa: E402
from tests.autodiff.rule_helpers import assert_close as _assert_close  # noqa: E402
from tests.autodiff.rule_helpers import case_inputs as _inputs  # noqa: E402
from tests.autodiff.rule_helpers import counting_ops, x64  # noqa: E402
from tests.autodiff.rule_helpers import random_array as _random  # noqa: E402

f32, f64, c64, c128 = rt.float32, rt.float64, rt.complex64, rt.complex128
REAL = (f32, f64)
ALL = (f32, f64, c64, c128)


# -- inputs ------------------------------------------------------------------------------------


def val(shape: tuple[int, ...], seed: int, scale: float = 1.0) -> Callable[[DType], np.ndarray]:
    """Fixed normal data of ``shape`` in the given dtype (complex: an independent imaginary part)."""

    def make(d: DType) -> np.ndarray:
        rng = np.random.default_rng(seed)
        data = rng.standard_normal(shape) * scale
        if d.kind == "complex":
            data = data + 1j * rng.standard_normal(shape) * scale
        return np.asarray(data).astype(d.storage)

    return make


def fixed(values: Any) -> Callable[[DType], np.ndarray]:
    return lambda d: np.asarray(values).astype(d.storage)


@dataclass(frozen=True)
class Case:
    """One op under test: ours (on Tensors), the JAX equivalent, differentiable inputs per dtype.

    Index operands and static params are closed over inside ``ours`` / ``theirs``.
    """

    id: str
    op: str
    ours: Callable[..., Any]
    theirs: Callable[..., Any]
    inputs: tuple[Callable[[DType], np.ndarray], ...]
    dtypes: tuple[DType, ...] = ALL
    grad_opts: dict[str, float] = field(default_factory=dict)
    marks: tuple[Any, ...] = ()

    def active_sets(self) -> list[tuple[int, ...]]:
        n = len(self.inputs)
        singles: list[tuple[int, ...]] = [(i,) for i in range(n)]
        return singles if n == 1 else [*singles, tuple(range(n))]


def _dot(dims: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    return (lambda x, y: F.dot_general(x, y, dims)), (lambda x, y: lax.dot_general(x, y, dims))


def _unary(
    op: str,
    cid: str,
    ours: Callable[..., Any],
    theirs: Callable[..., Any],
    shape: tuple[int, ...],
    dtypes: tuple[DType, ...] = ALL,
    seed: int = 0,
    **grad_opts: float,
) -> Case:
    return Case(cid, op, ours, theirs, (val(shape, seed),), dtypes, dict(grad_opts))


# gather / scatter along rows of a (5, 3) operand
ROW_SCATTER = ScatterDimensionNumbers(
    update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)
ROW_SCATTER_JAX = lax.ScatterDimensionNumbers(
    update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)
ROW_GATHER = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
ROW_GATHER_JAX = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
# 2x2 windows of a (4, 5) operand at 2-D start indices
WIN_GATHER = GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1))
WIN_GATHER_JAX = lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1))
WIN_SCATTER = ScatterDimensionNumbers(
    update_window_dims=(1, 2), inserted_window_dims=(), scatter_dims_to_operand_dims=(0, 1)
)
WIN_SCATTER_JAX = lax.ScatterDimensionNumbers(
    update_window_dims=(1, 2), inserted_window_dims=(), scatter_dims_to_operand_dims=(0, 1)
)


def _scatter_case(
    cid: str, op: str, idx: list[list[int]], unique: bool = False, mode: str | None = None, windows: bool = False
) -> Case:
    ours_fn, theirs_fn = (F.scatter, lax.scatter) if op == "scatter" else (F.scatter_add, lax.scatter_add)
    indices = np.asarray(idx, dtype=np.int32)
    dn, dn_jax = (WIN_SCATTER, WIN_SCATTER_JAX) if windows else (ROW_SCATTER, ROW_SCATTER_JAX)
    operand_shape = (4, 5) if windows else (5, 3)
    updates_shape = (len(idx), 2, 2) if windows else (len(idx), 3)

    def ours(x: Tensor, u: Tensor) -> Tensor:
        return ours_fn(x, asarray(indices), u, dn, unique_indices=unique, mode=mode)

    def theirs(x: Any, u: Any) -> Any:
        return theirs_fn(x, jnp.asarray(indices), u, dn_jax, unique_indices=unique, mode=mode)

    return Case(cid, op, ours, theirs, (val(operand_shape, 1), val(updates_shape, 2)))


def _gather_case(
    cid: str,
    idx: list[list[int]],
    mode: str | None = None,
    windows: bool = False,
    fill: float | None = None,
    jax_mode: str | None = None,
) -> Case:
    """``jax_mode``: the mode to give JAX when it differs (JAX's default gather clamps like ``clip``
    but transposes to a dropping scatter, so its gradient is wrong out of bounds; ours clips)."""
    indices = np.asarray(idx, dtype=np.int32)
    dn, dn_jax, sizes, shape = (
        (WIN_GATHER, WIN_GATHER_JAX, (2, 2), (4, 5)) if windows else (ROW_GATHER, ROW_GATHER_JAX, (1, 3), (5, 3))
    )

    def ours(x: Tensor) -> Tensor:
        return F.gather(x, asarray(indices), dn, sizes, mode=mode, fill_value=fill)

    def theirs(x: Any) -> Any:
        return lax.gather(x, jnp.asarray(indices), dn_jax, sizes, mode=jax_mode or mode, fill_value=fill)

    return Case(cid, "gather", ours, theirs, (val(shape, 3),))


def _prod_with_zeros(d: DType) -> np.ndarray:
    x = val((3, 5), 4)(d)
    x[0, 2] = 0  # one zero in row 0
    x[1, 1] = x[1, 3] = 0  # two zeros in row 1; row 2 has none
    return x


_MM, _BATCHED, _TWO_CONTRACT = (((1,), (0,)), ((), ())), (((2,), (0,)), ((0,), (1,))), (((2, 0), (0, 2)), ((), ()))

CASES: list[Case] = [
    Case("dot_general-matmul", "dot_general", *_dot(_MM), (val((3, 4), 1), val((4, 2), 2))),
    Case("dot_general-batched", "dot_general", *_dot(_BATCHED), (val((2, 3, 4), 1), val((4, 2, 5), 2))),
    Case("dot_general-two-contracting", "dot_general", *_dot(_TWO_CONTRACT), (val((4, 3, 2), 1), val((2, 5, 4), 2))),
    Case(
        "concatenate-3",
        "concatenate",
        lambda a, b, c: F.concatenate([a, b, c], 0),
        lambda a, b, c: lax.concatenate([a, b, c], 0),
        (val((2, 3), 1), val((1, 3), 2), val((2, 3), 3)),
    ),
    Case(
        "concatenate-axis1",
        "concatenate",
        lambda a, b: F.concatenate([a, b], 1),
        lambda a, b: lax.concatenate([a, b], 1),
        (val((2, 3), 1), val((2, 2), 2)),
    ),
    _scatter_case("scatter_add-rows", "scatter_add", [[0], [3], [1]]),
    _scatter_case("scatter_add-duplicates", "scatter_add", [[0], [3], [0]]),
    _scatter_case("scatter_add-dropped", "scatter_add", [[4], [7], [1]]),
    _scatter_case("scatter_add-windows-clip", "scatter_add", [[1, 2], [3, 4]], mode="clip", windows=True),
    _scatter_case("scatter-unique", "scatter", [[4], [0], [2]], unique=True),
    _scatter_case("scatter-unique-unpromised", "scatter", [[4], [0], [2]]),
    _scatter_case("scatter-dropped", "scatter", [[4], [9], [2]]),
    _scatter_case("scatter-windows-clip", "scatter", [[0, 0], [2, 4]], unique=True, mode="clip", windows=True),
    _gather_case("gather-rows", [[4], [0], [2], [0]]),
    _gather_case("gather-windows", [[1, 2], [0, 3]], windows=True),
    _gather_case("gather-windows-clamped", [[3, 4], [0, 0]], windows=True, jax_mode="clip"),
    _gather_case("gather-clip", [[6], [1]], mode="clip"),
    _gather_case("gather-fill", [[6], [1], [-1]], mode="fill", fill=2.5),
    _unary(
        "dynamic_slice",
        "dynamic_slice-1d",
        lambda x: F.dynamic_slice(x, [2], (3,)),
        lambda x: lax.dynamic_slice(x, (2,), (3,)),
        (6,),
    ),
    _unary(
        "dynamic_slice",
        "dynamic_slice-1d-clamped",
        lambda x: F.dynamic_slice(x, [5], (3,)),
        lambda x: lax.dynamic_slice(x, (5,), (3,)),
        (6,),
    ),
    Case(
        "dynamic_slice-2d",
        "dynamic_slice",
        lambda x: F.dynamic_slice(x, [1, 3], (2, 2)),
        lambda x: lax.dynamic_slice(x, (1, 3), (2, 2)),
        (val((4, 5), 0),),
    ),
    Case(
        "dynamic_slice-2d-clamped",
        "dynamic_slice",
        lambda x: F.dynamic_slice(x, [3, -1], (2, 2)),
        lambda x: lax.dynamic_slice(x, (3, 0), (2, 2)),
        (val((4, 5), 0),),
    ),
    Case(
        "dynamic_update_slice-1d",
        "dynamic_update_slice",
        lambda x, u: F.dynamic_update_slice(x, u, [1]),
        lambda x, u: lax.dynamic_update_slice(x, u, (1,)),
        (val((6,), 1), val((3,), 2)),
    ),
    Case(
        "dynamic_update_slice-1d-clamped",
        "dynamic_update_slice",
        lambda x, u: F.dynamic_update_slice(x, u, [5]),
        lambda x, u: lax.dynamic_update_slice(x, u, (5,)),
        (val((6,), 1), val((3,), 2)),
    ),
    Case(
        "dynamic_update_slice-2d",
        "dynamic_update_slice",
        lambda x, u: F.dynamic_update_slice(x, u, [1, 2]),
        lambda x, u: lax.dynamic_update_slice(x, u, (1, 2)),
        (val((4, 5), 1), val((2, 3), 2)),
    ),
    Case(
        "dynamic_update_slice-2d-clamped",
        "dynamic_update_slice",
        lambda x, u: F.dynamic_update_slice(x, u, [3, 4]),
        lambda x, u: lax.dynamic_update_slice(x, u, (3, 4)),
        (val((4, 5), 1), val((2, 3), 2)),
    ),
    _unary("reduce_sum", "reduce_sum-1", lambda x: F.reduce_sum(x, (1,)), lambda x: lax.reduce_sum(x, (1,)), (3, 4)),
    _unary(
        "reduce_sum", "reduce_sum-02", lambda x: F.reduce_sum(x, (0, 2)), lambda x: lax.reduce_sum(x, (0, 2)), (3, 4, 2)
    ),
    _unary(
        "reduce_prod", "reduce_prod-1", lambda x: F.reduce_prod(x, (1,)), lambda x: lax.reduce_prod(x, (1,)), (3, 4)
    ),
    _unary(
        "reduce_prod",
        "reduce_prod-02",
        lambda x: F.reduce_prod(x, (2, 0)),
        lambda x: lax.reduce_prod(x, (0, 2)),
        (2, 3, 5),
    ),
    Case(
        "reduce_prod-zeros",
        "reduce_prod",
        lambda x: F.reduce_prod(x, (1,)),
        lambda x: lax.reduce_prod(x, (1,)),
        (_prod_with_zeros,),
    ),
    _unary("reduce_max", "reduce_max-1", lambda x: F.reduce_max(x, (1,)), lambda x: lax.reduce_max(x, (1,)), (3, 4)),
    _unary(
        "reduce_max", "reduce_max-01", lambda x: F.reduce_max(x, (0, 1)), lambda x: lax.reduce_max(x, (0, 1)), (3, 4)
    ),
    _unary("reduce_min", "reduce_min-0", lambda x: F.reduce_min(x, (0,)), lambda x: lax.reduce_min(x, (0,)), (3, 4)),
    _unary("reshape", "reshape", lambda x: F.reshape(x, (2, 6)), lambda x: lax.reshape(x, (2, 6)), (3, 4)),
    _unary("reshape", "reshape-unit", lambda x: F.reshape(x, (4, 1, 3)), lambda x: lax.reshape(x, (4, 1, 3)), (3, 4)),
    _unary(
        "transpose", "transpose", lambda x: F.transpose(x, (2, 0, 1)), lambda x: lax.transpose(x, (2, 0, 1)), (2, 3, 4)
    ),
    _unary(
        "broadcast_in_dim",
        "broadcast_in_dim-stretch",
        lambda x: F.broadcast_in_dim(x, (2, 3, 4), (1, 2)),
        lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)),
        (3, 1),
    ),
    _unary(
        "broadcast_in_dim",
        "broadcast_in_dim-new",
        lambda x: F.broadcast_in_dim(x, (3, 4), (0,)),
        lambda x: lax.broadcast_in_dim(x, (3, 4), (0,)),
        (3,),
    ),
    _unary(
        "slice",
        "slice-strided",
        lambda x: F.slice(x, (1, 0), (5, 5), (2, 2)),
        lambda x: lax.slice(x, (1, 0), (5, 5), (2, 2)),
        (5, 6),
    ),
    _unary("slice", "slice", lambda x: F.slice(x, (0, 2), (3, 6)), lambda x: lax.slice(x, (0, 2), (3, 6)), (5, 6)),
    _unary(
        "pad",
        "pad-interior",
        lambda x: F.pad(x, 0.5, ((1, 2, 1), (-1, 0, 2))),
        lambda x: lax.pad(x, jnp.asarray(0.5, x.dtype), ((1, 2, 1), (-1, 0, 2))),
        (3, 4),
    ),
    _unary(
        "pad",
        "pad-negative",
        lambda x: F.pad(x, 0, ((0, -1, 0), (-2, 1, 1))),
        lambda x: lax.pad(x, jnp.asarray(0, x.dtype), ((0, -1, 0), (-2, 1, 1))),
        (3, 4),
    ),
    _unary("reverse", "reverse", lambda x: F.reverse(x, (0, 1)), lambda x: lax.rev(x, (0, 1)), (3, 4)),
    _unary("reverse", "reverse-1", lambda x: F.reverse(x, (1,)), lambda x: lax.rev(x, (1,)), (3, 4)),
]

PARAMS = [pytest.param(c, d, id=f"{c.id}-{d.short}", marks=c.marks) for c in CASES for d in c.dtypes]


def by_case(cases: Sequence[Case]) -> list[Any]:
    return [pytest.param(c, id=c.id, marks=c.marks) for c in cases]


def test_every_op_of_the_family_is_covered() -> None:
    family = {
        "dot_general",
        "concatenate",
        "scatter",
        "scatter_add",
        "gather",
        "dynamic_slice",
        "dynamic_update_slice",
        "reduce_sum",
        "reduce_prod",
        "reduce_max",
        "reduce_min",
        "reshape",
        "transpose",
        "broadcast_in_dim",
        "slice",
        "pad",
        "reverse",
    }
    assert {c.op for c in CASES} == family
    assert all(name in JVP_RULES and name in VJP_RULES for name in family)
    assert "iota" not in JVP_RULES and "full" not in VJP_RULES  # declared non-differentiable


# -- helpers -------------------------------------------------------------------------------------


# -- 1. finite differences, second order ---------------------------------------------------------


@pytest.mark.parametrize(("case", "dtype"), PARAMS)
def test_check_grads(case: Case, dtype: DType) -> None:
    args = [asarray(a) for a in _inputs(case, dtype)]
    check_grads(case.ours, args, order=2, modes=("fwd", "rev"), **case.grad_opts)


# -- 2. parity with JAX, every active set; inactive operands get no cotangent --------------------


def _check_parity(case: Case, dtype: DType, arrays: list[np.ndarray]) -> None:
    with x64():
        jax_consts = [jnp.asarray(a) for a in arrays]
        want_out = np.asarray(case.theirs(*jax_consts))
    out_dtype = rt.dtype(want_out.dtype)
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    for active in case.active_sets():
        act = [arrays[i] for i in active]
        tangents = [_random(rt.dtype(a.dtype), a.shape, rng) for a in act]
        ct = _random(out_dtype, want_out.shape, rng)
        what = f"{case.id} {dtype.short} active={active}"
        with x64():
            fj = close_over(case.theirs, jax_consts, active)
            jax_out, jax_tan = jax.jvp(fj, tuple(jnp.asarray(a) for a in act), tuple(jnp.asarray(t) for t in tangents))
            _, jax_vjp_fn = jax.vjp(fj, *(jnp.asarray(a) for a in act))
            want_cts = [np.conj(np.asarray(g)) for g in jax_vjp_fn(jnp.asarray(np.conj(ct)))]

        f = close_over(case.ours, [asarray(a) for a in arrays], active)
        out, out_t = autodiff.jvp(f, [asarray(a) for a in act], [asarray(t) for t in tangents])
        assert out.dtype is out_dtype, what
        _assert_close(f"{what}: primal", out.numpy(), jax_out, out_dtype)
        assert out_t.dtype is out_dtype and out_t.shape == out.shape, what
        _assert_close(f"{what}: JVP", out_t.numpy(), jax_tan, out_dtype)

        _, vjp_fn = autodiff.vjp(f, *[asarray(a) for a in act])
        cts = vjp_fn(asarray(ct))
        for i, got, want in zip(active, cts, want_cts, strict=True):
            assert got is not None and got.dtype is rt.dtype(arrays[i].dtype), what
            _assert_close(f"{what}: VJP operand {i}", got.numpy(), want, rt.dtype(arrays[i].dtype))

        # The eager tape: only the active leaves receive a stored cotangent.
        leaves = [asarray(a, requires_grad=True) if i in active else asarray(a) for i, a in enumerate(arrays)]
        case.ours(*leaves).backward(cotangent=asarray(ct))
        for i, leaf in enumerate(leaves):
            if i in active:
                assert leaf.grad is not None, f"{what}: leaf {i} got no gradient"
                _assert_close(f"{what}: backward operand {i}", leaf.grad.numpy(), want_cts[active.index(i)], leaf.dtype)
            else:
                assert leaf.grad is None, f"{what}: inactive leaf {i} got a gradient"


@pytest.mark.parametrize(("case", "dtype"), PARAMS)
def test_parity_with_jax(case: Case, dtype: DType) -> None:
    _check_parity(case, dtype, _inputs(case, dtype))


TIE_CASES = [
    Case(
        "reduce_max-ties",
        "reduce_max",
        lambda x: F.reduce_max(x, (1,)),
        lambda x: lax.reduce_max(x, (1,)),
        (fixed([[1.0, 3.0, 3.0, -2.0], [2.0, 2.0, 2.0, 0.5], [0.0, 1.0, -1.0, 0.5]]),),
    ),
    Case(
        "reduce_min-ties",
        "reduce_min",
        lambda x: F.reduce_min(x, (0, 1)),
        lambda x: lax.reduce_min(x, (0, 1)),
        (fixed([[1.0, -3.0, 3.0], [-3.0, 2.0, -3.0]]),),
    ),
]


@pytest.mark.parametrize("case", TIE_CASES, ids=lambda c: c.id)
@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.short)
def test_ties_split_like_jax(case: Case, dtype: DType) -> None:
    _check_parity(case, dtype, _inputs(case, dtype))


def test_reduce_max_tie_divides_equally_exactly() -> None:
    x = asarray(np.array([[1.0, 3.0, 3.0, 3.0], [2.0, 0.0, 2.0, 1.0]]))
    (g,) = autodiff.vjp(lambda x: F.reduce_max(x, (1,)), x)[1](asarray(np.array([3.0, 4.0])))
    assert g is not None
    np.testing.assert_array_equal(g.numpy(), [[0.0, 1.0, 1.0, 1.0], [2.0, 0.0, 2.0, 0.0]])


def test_reduce_prod_with_zeros_is_exact() -> None:
    """One zero in a group: only the zero gets the product of the others; two zeros: all 0."""
    x = np.array([[2.0, 0.0, 3.0], [0.0, 5.0, 0.0], [1.0, 2.0, 4.0]])
    (g,) = autodiff.vjp(lambda x: F.reduce_prod(x, (1,)), asarray(x))[1](asarray(np.ones(3)))
    assert g is not None
    np.testing.assert_array_equal(g.numpy(), [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [8.0, 4.0, 2.0]])
    # Second order is exact too, even on the row with two zeros.
    hess_row = autodiff.jvp(
        lambda x: autodiff.vjp(lambda y: F.reduce_prod(y, (1,)), x)[1](asarray(np.ones(3)))[0],
        [asarray(x)],
        [asarray(np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))],
    )[1]
    # row 1 = (0, 5, 0): d/dx0 of (x1 x2, x0 x2, x0 x1) = (0, x2, x1) = (0, 0, 5)
    np.testing.assert_array_equal(hess_row.numpy()[1], [0.0, 0.0, 5.0])


def test_scatter_with_overlapping_indices_gives_the_winner_the_cotangent() -> None:
    """Non-unique scatter indices: only the update the kernel kept (the last) gets the cotangent."""
    operand = asarray(np.arange(10.0).reshape(5, 2))
    updates = asarray(np.array([[10.0, 11.0], [20.0, 21.0], [30.0, 31.0]]))
    idx = asarray(np.array([[1], [3], [1]], dtype=np.int32))

    def f(x: Tensor, u: Tensor) -> Tensor:
        return F.scatter(x, idx, u, ROW_SCATTER)

    out, vjp_fn = autodiff.vjp(f, operand, updates)
    np.testing.assert_array_equal(out.numpy()[1], [30.0, 31.0])
    ct = np.arange(1.0, 11.0).reshape(5, 2)
    gx, gu = vjp_fn(asarray(ct))
    assert gx is not None and gu is not None
    want_gx = ct.copy()
    want_gx[[1, 3]] = 0
    np.testing.assert_array_equal(gx.numpy(), want_gx)
    np.testing.assert_array_equal(gu.numpy(), [[0.0, 0.0], ct[3], ct[1]])
    check_grads(f, [operand, updates], order=2)
    # JAX resolves the overlap the same way here (its JVP masks by scattered ids).
    with x64():
        jax_ct = jax.vjp(
            lambda x, u: lax.scatter(x, jnp.asarray(idx.numpy()), u, ROW_SCATTER_JAX), operand.numpy(), updates.numpy()
        )[1](jnp.asarray(ct))
    np.testing.assert_array_equal(gx.numpy(), np.asarray(jax_ct[0]))
    np.testing.assert_array_equal(gu.numpy(), np.asarray(jax_ct[1]))


# -- 3. symbolic zeros ---------------------------------------------------------------------------


def _eqn_of(case: Case, dtype: DType) -> tuple[Any, list[Tensor], list[Tensor]]:
    """The last recorded equation of ``case`` (the op under test), its primal inputs and outputs."""
    leaves = [asarray(a, requires_grad=True) for a in _inputs(case, dtype)]
    out = case.ours(*leaves)
    eqn = out.node.producer
    assert eqn.op.name == case.op
    primals = [Tensor(v.value if v.value is not None else v.const, v.dtype) for v in eqn.inputs]
    return eqn, primals, [out.detach()]


MULTI = [c for c in CASES if len(c.inputs) > 1]
INDEXED = [c for c in CASES if c.op in ("gather", "scatter", "scatter_add", "dynamic_slice", "dynamic_update_slice")]


@pytest.mark.parametrize("case", by_case(MULTI))
def test_rules_skip_inactive_operands(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    eqn, primals, outputs = _eqn_of(case, f64)
    rng = np.random.default_rng(0)
    diff = [i for i, p in enumerate(primals) if p.dtype.is_inexact]
    full_t = [asarray(_random(p.dtype, p.shape, rng)) if i in diff else Zero.like(p) for i, p in enumerate(primals)]
    ct = asarray(_random(outputs[0].dtype, outputs[0].shape, rng))
    jvp_rule, vjp_rule = JVP_RULES[case.op], VJP_RULES[case.op]
    with counting_ops(monkeypatch) as all_ops:
        jvp_rule(primals, full_t, outputs, **eqn.params)
    with counting_ops(monkeypatch) as all_vjp_ops:
        vjp_rule([ct], primals, outputs, [i in diff for i in range(len(primals))], **eqn.params)
    singles: list[str] = []
    for position in diff:
        tangents = [t if i == position else Zero.like(t) for i, t in enumerate(full_t)]
        with counting_ops(monkeypatch) as one:
            (res,) = jvp_rule(primals, tangents, outputs, **eqn.params)
        assert isinstance(res, Tensor) and res.dtype is outputs[0].dtype and res.shape == outputs[0].shape
        assert "dot_general" not in one or one.count("dot_general") < all_ops.count("dot_general")

        needs = [i == position for i in range(len(primals))]
        with counting_ops(monkeypatch) as one:
            grads = vjp_rule([ct], primals, outputs, needs, **eqn.params)
        for i, g in enumerate(grads):
            if i == position:
                assert isinstance(g, Tensor) and g.dtype is primals[i].dtype and g.shape == primals[i].shape
            else:
                assert isinstance(g, Zero), f"{case.id}: operand {i} not needed but got {g!r}"
        singles += one
    # Each operand's cotangent costs its own ops only: the work with every operand
    # needed is exactly the sum of the work for each one alone.
    assert sorted(singles) == sorted(all_vjp_ops), f"{case.id}: {singles} vs {all_vjp_ops}"


def test_dot_general_jvp_with_one_active_operand_is_one_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = asarray(val((3, 4), 1)(f64)), asarray(val((4, 2), 2)(f64))
    out = F.dot_general(x, y, _MM)
    with counting_ops(monkeypatch) as names:
        JVP_RULES["dot_general"]([x, y], [x, Zero.like(y)], [out], dimension_numbers=_MM)
        VJP_RULES["dot_general"]([out], [x, y], [out], [False, True], dimension_numbers=_MM)
    # a plain matrix product's rhs cotangent is conj(x)^T . ct, already in y's axis order
    assert names == ["dot_general", "dot_general"], names


@pytest.mark.parametrize("needs", [[True, False], [False, True]], ids=["lhs", "rhs"])
def test_matmul_cotangents_record_no_transpose(monkeypatch: pytest.MonkeyPatch, needs: list[bool]) -> None:
    x, y = asarray(val((3, 4), 1)(c128)), asarray(val((4, 2), 2)(c128))
    out = F.dot_general(x, y, _MM)
    ct = asarray(val((3, 2), 3)(c128))
    with counting_ops(monkeypatch) as names:
        grads = VJP_RULES["dot_general"]([ct], [x, y], [out], needs, dimension_numbers=_MM)
    assert "transpose" not in names, names
    want = ct.numpy() @ y.numpy().conj().T if needs[0] else x.numpy().conj().T @ ct.numpy()
    np.testing.assert_allclose(grads[needs.index(True)].numpy(), want, rtol=1e-13)


@pytest.mark.parametrize("case", by_case(INDEXED))
def test_index_operands_get_zero_cotangents(case: Case) -> None:
    eqn, primals, outputs = _eqn_of(case, f64)
    ct = asarray(_random(outputs[0].dtype, outputs[0].shape, np.random.default_rng(0)))
    grads = VJP_RULES[case.op]([ct], primals, outputs, [True] * len(primals), **eqn.params)
    assert len(grads) == len(primals)
    for p, g in zip(primals, grads, strict=True):
        if not p.dtype.is_inexact:
            assert isinstance(g, Zero) and g.dtype is p.dtype and g.shape == p.shape
        else:
            assert isinstance(g, Tensor)


@pytest.mark.parametrize("case", by_case(CASES))
def test_all_zero_inputs_give_zero_without_work(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    eqn, primals, outputs = _eqn_of(case, c128)
    with counting_ops(monkeypatch) as names:
        (t,) = JVP_RULES[case.op](primals, [Zero.like(p) for p in primals], outputs, **eqn.params)
        grads = VJP_RULES[case.op]([Zero.like(outputs[0])], primals, outputs, [True] * len(primals), **eqn.params)
    assert names == []
    assert isinstance(t, Zero) and t.dtype is outputs[0].dtype and t.shape == outputs[0].shape
    assert all(isinstance(g, Zero) and g.dtype is p.dtype for g, p in zip(grads, primals, strict=True))


# -- 4. regressions: promoted non-add replays ---------------------------------------------------

#: the public constructor (``runtime.asarray``), once ``runtime`` re-exports it
public_asarray: Callable[..., Tensor] = getattr(rt, "asarray", asarray)

MIXED = [
    ("concatenate", f32, f64),
    ("concatenate", f64, f32),
    ("concatenate", f64, c128),
    ("concatenate", c128, f64),
    ("dot_general", f32, f64),
    ("dot_general", f64, f32),
    ("dot_general", f64, c128),
    ("dot_general", c128, f64),
]


def _mixed_fns(op: str) -> tuple[Callable[..., Any], Callable[..., Any], tuple[tuple[int, ...], tuple[int, ...]]]:
    if op == "concatenate":
        return (lambda x, y: F.concatenate([x, y], 0)), (lambda x, y: jnp.concatenate([x, y], 0)), ((2, 3), (1, 3))
    return (lambda x, y: F.dot_general(x, y, _MM)), (lambda x, y: jnp.matmul(x, y)), ((2, 3), (3, 2))


@pytest.mark.parametrize("active", [(0,), (1,), (0, 1)], ids=lambda a: "active" + "".join(map(str, a)))
@pytest.mark.parametrize(("op", "dx", "dy"), MIXED, ids=[f"{o}-{a.short}-{b.short}" for o, a, b in MIXED])
def test_promoted_replay_matches_jax(op: str, dx: DType, dy: DType, active: tuple[int, ...]) -> None:
    ours, theirs, (sx, sy) = _mixed_fns(op)
    arrays = [val(sx, 5)(dx), val(sy, 6)(dy)]
    out_dtype = c128 if c128 in (dx, dy) else f64
    rng = np.random.default_rng(11)
    ct = _random(out_dtype, (3, 3) if op == "concatenate" else (2, 2), rng)
    with x64():
        fj = close_over(theirs, [jnp.asarray(a) for a in arrays], active)
        jax_out, jax_vjp_fn = jax.vjp(fj, *(jnp.asarray(arrays[i]) for i in active))
        want_cts = [np.conj(np.asarray(g)) for g in jax_vjp_fn(jnp.asarray(np.conj(ct)))]
        tangents = [_random(rt.dtype(arrays[i].dtype), arrays[i].shape, rng) for i in active]
        _, jax_tan = jax.jvp(fj, tuple(jnp.asarray(arrays[i]) for i in active), tuple(map(jnp.asarray, tangents)))
    tol_dtype = f32 if f32 in (dx, dy) else out_dtype

    # Eager recording with tracked leaves: an explicit convert, replayed by backward.
    leaves = [public_asarray(a, requires_grad=i in active) for i, a in enumerate(arrays)]
    out = ours(*leaves)
    assert out.dtype is out_dtype and out.requires_grad
    text = str(collect([out.node]))
    assert f"convert[to={out_dtype.short}]" in text and op in text, text
    _assert_close("primal", out.numpy(), jax_out, tol_dtype)
    out.backward(cotangent=asarray(ct))
    for i, leaf in enumerate(leaves):
        if i in active:
            assert leaf.grad is not None and leaf.grad.dtype is leaf.dtype
            _assert_close(f"backward {i}", leaf.grad.numpy(), want_cts[active.index(i)], tol_dtype)
        else:
            assert leaf.grad is None

    # The functional API on the same function.
    f = close_over(ours, [asarray(a) for a in arrays], active)
    _, out_t = autodiff.jvp(f, [asarray(arrays[i]) for i in active], [asarray(t) for t in tangents])
    assert out_t.dtype is out_dtype
    _assert_close("jvp", out_t.numpy(), jax_tan, tol_dtype)
    grads = autodiff.vjp(f, *[asarray(arrays[i]) for i in active])[1](asarray(ct))
    for i, g, want in zip(active, grads, want_cts, strict=True):
        assert g is not None and g.dtype is rt.dtype(arrays[i].dtype)
        _assert_close(f"vjp {i}", g.numpy(), want, tol_dtype)
    # And finite differences.
    check_grads(f, [asarray(arrays[i]) for i in active], order=2)


STACKS = [((3,), 0), ((3,), -1), ((2, 3), 0), ((2, 3), 1), ((2, 3), -1)]


@pytest.mark.parametrize("tracked_first", [True, False], ids=["tracked-first", "tracked-second"])
@pytest.mark.parametrize(("tracked", "other"), [(f64, c128), (c128, f64)], ids=["f64-tracked", "c128-tracked"])
@pytest.mark.parametrize(("shape", "axis"), STACKS, ids=[f"{s}-axis{a}" for s, a in STACKS])
def test_stack_vjp_then_jvp_on_one_recording(
    shape: tuple[int, ...], axis: int, tracked: DType, other: DType, tracked_first: bool
) -> None:
    a_np, b_np = val(shape, 7)(tracked), val(shape, 8)(other)
    pos = 0 if tracked_first else 1
    ax = axis % (len(shape) + 1)

    def f(a: Tensor) -> Tensor:
        b = asarray(b_np)
        return F.stack([a, b] if tracked_first else [b, a], axis)

    def part(stacked: np.ndarray, k: int) -> np.ndarray:
        return np.take(stacked, k, axis=ax)

    rng = np.random.default_rng(3)
    ct = _random(c128, tuple(np.insert(np.array(shape), ax, 2)), rng)
    t = _random(tracked, shape, rng)
    want_grad = part(ct, pos).real if tracked is f64 else part(ct, pos)
    want_tan = np.zeros(ct.shape, np.complex128)
    np.put_along_axis(want_tan, np.full((*shape[:ax], 1, *shape[ax:]), pos), np.expand_dims(t, ax), ax)

    # Eager tape: VJP (keeping the recording), then JVP through the same equations.
    a = public_asarray(a_np, requires_grad=True)
    out = f(a)
    assert out.dtype is c128 and out.shape == ct.shape
    assert np.array_equal(part(out.numpy(), pos), a_np.astype(np.complex128))
    out.backward(cotangent=asarray(ct), retain_graph=True)
    assert a.grad is not None and a.grad.dtype is tracked
    np.testing.assert_array_equal(a.grad.numpy(), want_grad)
    created = jvp_pass(reachable_eqns([out.node]), {id(a.node): asarray(t)}, create_graph=False)
    out_t = created[id(out.node)]
    assert isinstance(out_t, Tensor) and out_t.dtype is c128
    np.testing.assert_array_equal(out_t.numpy(), want_tan)

    # Functional API: vjp, then linearize, on the same function.
    (g,) = autodiff.vjp(f, a_np)[1](asarray(ct))
    assert g is not None and g.dtype is tracked
    np.testing.assert_array_equal(g.numpy(), want_grad)
    _, f_jvp = autodiff.linearize(f, a_np)
    np.testing.assert_array_equal(f_jvp(asarray(t)).numpy(), want_tan)
    np.testing.assert_array_equal(f_jvp(asarray(2 * t)).numpy(), 2 * want_tan)
