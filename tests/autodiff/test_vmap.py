"""``autodiff.vmap`` against ``jax.vmap``.

1. The batching table covers the vocabulary (a missing rule is a failing row).
2. Every op of the vocabulary, table-driven over the parity sweep's specs (their
   operands, shapes and input generators): vmap equals ``jax.vmap`` of the same
   ``jax.lax`` reference, with batch axes 0 and 1, each operand batched alone and
   all together, in f32 / f64 / c128 (int32 and bool for the integer-only ops);
   the result has the unbatched op's dtype. Every dtype of the sweep is
   ``-m slow``.
3. Promotion under vmap: the batched graph holds the same ``convert``
   equations, and every op the same operand dtypes, as the unbatched one.
4. Composition: ``vmap(grad)``, ``grad(vmap)``, ``jvp`` of ``vmap``, ``vmap``
   of ``jvp``, nested ``vmap``, ``jit``, values closed over (tracked ones get
   their gradient), in_axes None/int per argument and out_axes, against JAX.
5. Errors name vmap, the argument and the shapes.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from autodiff import parity  # noqa: E402
from autodiff.batching_rules import BATCH_RULES, missing_batch_rules  # noqa: E402
from runtime.core import ops  # noqa: E402
from runtime.core.dtypes import DType  # noqa: E402
from runtime.core.tensor import Tensor  # noqa: E402
from tests import jax_oracles  # noqa: E402
from tests.autodiff.rule_helpers import PARITY_TOL, assert_close, random_array, x64  # noqa: E402

BATCH = 3
FLOAT_DTYPES = (rt.float32, rt.float64, rt.complex128)
INT_ONLY = {"and", "or", "xor", "not", "population_count", "clz", "shift_left", "shift_right_arithmetic",
            "shift_right_logical", "reduce_and", "reduce_or", "reduce_xor"}  # fmt: skip
REAL_ONLY = {"max", "min", "atan2", "rem", "floor_div", "lt", "le", "gt", "ge", "clamp", "reduce_max",
             "reduce_min", "sign", "argmax", "argmin", "reduce_precision", "cummax", "cummin",
             "cumlogsumexp"}  # fmt: skip


# -- 1. the table -----------------------------------------------------------------------------------


def test_every_op_has_a_batching_rule() -> None:
    assert missing_batch_rules() == []
    for name in ops.OPS:
        assert callable(BATCH_RULES[name]), name


# -- 2. every op against jax.vmap ---------------------------------------------------------------------


def _dtypes_for(spec: parity.Spec, every: bool) -> list[DType]:
    if every:
        return list(parity.CORE_DTYPES)
    if spec.op in INT_ONLY:
        return [rt.int32, rt.bool_]
    if spec.op in REAL_ONLY:
        return [rt.float32, rt.float64]
    return list(FLOAT_DTYPES)


def _case(spec: parity.Spec, dtype: DType) -> parity.Case:
    slots: list[Any] = [spec.fixed.get(i, dtype) for i in range(spec.arity)]
    if spec.dtype_param:  # convert's destination, iota's and full's dtype
        slots.append(rt.float64 if dtype is not rt.float64 else rt.complex64)
    return parity.Case(spec, "jax", tuple(slots))


def _examples(case: parity.Case) -> list[list[Any]]:
    """BATCH examples of the case's operands (the sweep's generators, one seed per example)."""
    return [parity._make_inputs(case, seed) for seed in range(BATCH)]


def _batched_sets(n: int) -> list[tuple[int, ...]]:
    """Each operand batched alone, and all together."""
    sets = [(i,) for i in range(n)]
    if n > 1:
        sets.append(tuple(range(n)))
    return sets


def _stacked(examples: list[list[Any]], batched: Sequence[int], axis: int) -> list[np.ndarray]:
    """Operand i stacked along ``axis`` when batched, example 0's value otherwise."""
    out = []
    for i in range(len(examples[0])):
        if i in batched:
            out.append(np.stack([np.asarray(e[i]) for e in examples], axis=axis))
        else:
            out.append(np.asarray(examples[0][i]))
    return out


CASTWISE_REFUSALS = parity.CASTWISE_REFUSALS


def _check_op(spec: parity.Spec, dtype: DType) -> list[str]:
    """vmap of ``spec``'s op against jax.vmap for every axis and batched set; what was compared."""
    case = _case(spec, dtype)
    kw = {"dtype": case.slots[-1]} if spec.dtype_param else {}
    examples = _examples(case)
    slots = case.operand_slots
    try:
        eager = parity._call_ours(case, parity._ours_args(case, examples[0]))
    except CASTWISE_REFUSALS:
        return []  # the unbatched op refuses this dtype: nothing to batch
    done = []

    def ours(*xs: Any) -> Any:
        return spec.ours(*xs, **kw)

    # weak rows and real/imag of real operands mean what jax.numpy does (lax refuses the latter)
    lax_or_jnp = spec.jnp if spec.jnp is not None and (spec.policies or spec.op in ("real", "imag")) else spec.lax

    def ref(*xs: Any) -> Any:
        return lax_or_jnp(*xs, **kw)

    if spec.arity == 0:  # iota, full: an unbatched result inside a vmapped function is broadcast
        xs = rt.asarray(np.arange(BATCH * 2, dtype=np.float64).reshape(BATCH, 2))
        got = autodiff.vmap(lambda x: (x, ours()))(xs)[1]
        with x64():
            want = jax.vmap(lambda x: (x, ref()))(jnp.asarray(xs.numpy()))[1]
        assert got.dtype is eager[0].dtype
        assert_close(f"{spec.name}[{dtype.short}]", got.numpy(), np.asarray(want), got.dtype)
        return [f"{spec.name}[{dtype.short}]"]
    combos = [(axis, batched) for axis in (0, 1) for batched in _batched_sets(spec.arity)]
    stacks = [_stacked(examples, batched, axis) for axis, batched in combos]
    in_axes_of = [tuple(axis if i in batched else None for i in range(spec.arity)) for axis, batched in combos]

    def every_vmap(*stacked: list[Any]) -> list[Any]:
        return [jax.vmap(ref, in_axes=in_axes)(*arrays) for in_axes, arrays in zip(in_axes_of, stacked, strict=True)]

    # jax.vmap of every axis and batched set as one compiled program: eagerly each is an executable
    # of its own (a conv's compile takes a quarter of a second); compared within PARITY_TOL as before
    with x64():
        wants = jax_oracles.jitted(every_vmap)(*[[jnp.asarray(a) for a in arrays] for arrays in stacks])
    for (axis, batched), arrays, in_axes, jax_out in zip(combos, stacks, in_axes_of, wants, strict=True):
        what = f"{spec.name}[{dtype.short}] axis {axis} batched {batched}"
        args = [Tensor(a.copy(), s) for a, s in zip(arrays, slots, strict=True)]
        got = parity._outputs(autodiff.vmap(ours, in_axes=in_axes)(*args))
        want = parity._outputs(jax_out)
        assert len(got) == len(want), what
        for k, (g, w, e) in enumerate(zip(got, want, eager, strict=True)):
            assert g.dtype is e.dtype, f"{what}: output {k} is {g.dtype.short}, unbatched {e.dtype.short}"
            assert g.shape == w.shape, f"{what}: output {k} shape {g.shape} != jax.vmap's {w.shape}"
            tol_dtype = min((s for s in slots), key=lambda d: PARITY_TOL.get(d, 0.0) or 1.0)
            if g.dtype.is_inexact:
                assert_close(f"{what} output {k}", g.numpy(), np.asarray(w), tol_dtype)
            else:
                np.testing.assert_array_equal(g.numpy(), np.asarray(w), err_msg=what)
        done.append(what)
    return done


SPECS = parity.build_specs()


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_vmap_of_every_op_matches_jax_vmap(spec: parity.Spec) -> None:
    done = []
    for dtype in _dtypes_for(spec, every=False):
        done += _check_op(spec, dtype)
    assert done, f"{spec.name}: no dtype of {[d.short for d in _dtypes_for(spec, False)]} ran"


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_vmap_of_every_op_every_dtype(spec: parity.Spec) -> None:
    done = []
    for dtype in _dtypes_for(spec, every=True):
        done += _check_op(spec, dtype)
    assert done


def test_the_op_table_covers_the_vocabulary() -> None:
    assert {s.op for s in SPECS} == set(ops.OPS)


# -- 2b. batched indices (the sweep's index operands are constants) ------------------------------------

IDX = np.array([0, 5, 2], dtype=np.int32)  # in range and past the end (clamped)
#: negative start indices: castwise's dynamic_slice clamps them as the primitive does (jax.lax's
#: wrapper wraps them around first), so these are compared with the unbatched op per example
IDX_NEG = np.array([-2, 1, -7], dtype=np.int32)


def _per_example(f: Callable[..., Tensor], args: Sequence[Any], in_axes: Sequence[int | None]) -> np.ndarray:
    """``f`` on each example, unbatched, stacked: what vmap must equal."""
    outs = []
    for k in range(BATCH):
        call = [
            a if ax is None else Tensor(np.take(a.numpy(), k, axis=ax), a.dtype)
            for a, ax in zip(args, in_axes, strict=True)
        ]
        outs.append(f(*call).numpy())
    return np.stack(outs)


@pytest.mark.parametrize("operand_axis", [0, 1, None])
def test_dynamic_slice_with_batched_start_indices(operand_axis: int | None) -> None:
    rng = np.random.default_rng(10)
    x = rng.standard_normal((BATCH, 6, 4)) if operand_axis is not None else rng.standard_normal((6, 4))
    if operand_axis == 1:
        x = np.moveaxis(x, 0, 1)
    j = np.array([1, 0, 2], dtype=np.int64)  # a second index of another dtype, batched too
    in_axes = (operand_axis, 0, 0)
    got = autodiff.vmap(lambda a, i, k: rt.lax.dynamic_slice(a, [i, k], (3, 2)), in_axes=in_axes)(
        _t(x, rt.float64), Tensor(IDX, rt.int32), Tensor(j, rt.int64)
    )
    with x64():
        want = jax.vmap(lambda a, i, k: jax.lax.dynamic_slice(a, (i, k), (3, 2)), in_axes=in_axes)(
            jnp.asarray(x),
            jnp.asarray(IDX),
            jnp.asarray(j.astype(np.int32)),  # (jax.vmap refuses mixed index dtypes)
        )
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))
    args = [_t(x, rt.float64), Tensor(IDX_NEG, rt.int32), Tensor(j, rt.int64)]
    fn = lambda a, i, k: rt.lax.dynamic_slice(a, [i, k], (3, 2))  # noqa: E731
    got = autodiff.vmap(fn, in_axes=in_axes)(*args)
    np.testing.assert_array_equal(got.numpy(), _per_example(fn, args, in_axes))
    # one index batched, the other a constant
    got = autodiff.vmap(lambda a, i: rt.lax.dynamic_slice(a, [i, 1], (3, 2)), in_axes=in_axes[:2])(
        _t(x, rt.float64), Tensor(IDX, rt.int32)
    )
    with x64():
        want = jax.vmap(lambda a, i: jax.lax.dynamic_slice(a, (i, np.int32(1)), (3, 2)), in_axes=in_axes[:2])(
            jnp.asarray(x), jnp.asarray(IDX)
        )
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))


@pytest.mark.parametrize("batched", [(0, 1, 2), (1, 2), (0, 2), (2,)])
def test_dynamic_update_slice_with_batched_start_indices(batched: tuple[int, ...]) -> None:
    rng = np.random.default_rng(11)
    shapes = [(6,), (3,), ()]
    values = [rng.standard_normal((BATCH, *shapes[0])), rng.standard_normal((BATCH, *shapes[1])), IDX]
    args = [v if i in batched else (v[0] if i < 2 else np.int32(2)) for i, v in enumerate(values)]
    in_axes = tuple(0 if i in batched else None for i in range(3))
    got = autodiff.vmap(lambda x, u, i: rt.lax.dynamic_update_slice(x, u, [i]), in_axes=in_axes)(
        _t(args[0], rt.float64), _t(args[1], rt.float64), Tensor(np.asarray(args[2]), rt.int32)
    )
    with x64():
        want = jax.vmap(lambda x, u, i: jax.lax.dynamic_update_slice(x, u, (i,)), in_axes=in_axes)(
            *[jnp.asarray(a) for a in args]
        )
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))
    if 2 in batched:
        ts = [_t(args[0], rt.float64), _t(args[1], rt.float64), Tensor(IDX_NEG, rt.int32)]
        fn = lambda x, u, i: rt.lax.dynamic_update_slice(x, u, [i])  # noqa: E731
        got = autodiff.vmap(fn, in_axes=in_axes)(*ts)
        np.testing.assert_array_equal(got.numpy(), _per_example(fn, ts, in_axes))


ROW_GATHER = rt.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
ROW_SCATTER = rt.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))  # fmt: skip


def _jax_dn(dn: Any) -> Any:
    cls = (
        jax.lax.GatherDimensionNumbers if isinstance(dn, rt.GatherDimensionNumbers) else jax.lax.ScatterDimensionNumbers
    )
    return cls(**{f: getattr(dn, f) for f in dn.__dataclass_fields__})


@pytest.mark.parametrize("mode", ["clip", "fill"])
@pytest.mark.parametrize("in_axes", [(0, 0), (None, 0), (1, 0), (0, None)])
def test_gather_with_batched_indices(in_axes: tuple[Any, Any], mode: str) -> None:
    rng = np.random.default_rng(12)
    x = rng.standard_normal((BATCH, 5, 3)) if in_axes[0] is not None else rng.standard_normal((5, 3))
    if in_axes[0] == 1:
        x = np.moveaxis(x, 0, 1)
    idx = rng.integers(-1, 6, (BATCH, 4, 1)).astype(np.int32) if in_axes[1] is not None else IDX[:, None]
    got = autodiff.vmap(lambda a, i: rt.lax.gather(a, i, ROW_GATHER, (1, 3), mode=mode), in_axes=in_axes)(
        _t(x, rt.float64), Tensor(idx, rt.int32)
    )
    with x64():
        want = jax.vmap(lambda a, i: jax.lax.gather(a, i, _jax_dn(ROW_GATHER), (1, 3), mode=mode), in_axes=in_axes)(
            jnp.asarray(x), jnp.asarray(idx)
        )
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))


@pytest.mark.parametrize("op", ["scatter", "scatter_add"])
@pytest.mark.parametrize("in_axes", [(0, 0, 0), (None, 0, None), (None, 0, 1), (0, None, None), (None, None, 0)])
def test_scatter_with_batched_operands(op: str, in_axes: tuple[Any, Any, Any]) -> None:
    rng = np.random.default_rng(13)
    x = rng.standard_normal((BATCH, 5, 3)) if in_axes[0] is not None else rng.standard_normal((5, 3))
    # distinct rows per example for scatter (last write wins is order-dependent), repeats for scatter_add
    rows = [rng.permutation(5)[:2] if op == "scatter" else rng.integers(0, 5, 2) for _ in range(BATCH)]
    idx = np.stack(rows)[..., None].astype(np.int32) if in_axes[1] is not None else rows[0][:, None].astype(np.int32)
    u = rng.standard_normal((BATCH, 2, 3)) if in_axes[2] is not None else rng.standard_normal((2, 3))
    if in_axes[2] == 1:
        u = np.moveaxis(u, 0, 1)
    ours_fn, jax_fn = getattr(rt.lax, op), getattr(jax.lax, op)
    got = autodiff.vmap(lambda a, i, v: ours_fn(a, i, v, ROW_SCATTER), in_axes=in_axes)(
        _t(x, rt.float64), Tensor(idx, rt.int32), _t(u, rt.float64)
    )
    with x64():
        want = jax.vmap(lambda a, i, v: jax_fn(a, i, v, _jax_dn(ROW_SCATTER)), in_axes=in_axes)(
            jnp.asarray(x), jnp.asarray(idx), jnp.asarray(u)
        )
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-15)


# -- 3. promotion under vmap ------------------------------------------------------------------------------

#: ops a batching rule adds to move or broadcast a batch dimension
PLUMBING = {"transpose", "broadcast_in_dim", "reshape"}


def _signature(graph: rt.Graph) -> list[str]:
    """Each equation as ``op(in dtypes) -> out dtypes``, without the batching plumbing."""
    return [
        f"{e.op.name}{'[' + e.params['new_dtype'].short + ']' if e.op.name == 'convert' else ''}"
        f"({','.join(v.dtype.short for v in e.inputs)})->{','.join(v.dtype.short for v in e.outputs)}"
        for e in graph.eqns
        if e.op.name not in PLUMBING
    ]


MIXED = [
    ("f32*i32+f64", lambda x, y, z: x * y + z, (rt.float32, rt.int32, rt.float64)),
    ("c64-f64", lambda x, y, z: rt.lax.sub(x, y) * z, (rt.complex64, rt.float64, rt.float32)),
    ("bf16/f16", lambda x, y, z: rt.exp(x / y) + z, (rt.bfloat16, rt.float16, rt.float32)),
    ("i8 < f32 select", lambda x, y, z: rt.lax.select(rt.lax.lt(x, y), y, z), (rt.int8, rt.float32, rt.float64)),
    ("sum of i32*f32", lambda x, y, z: rt.lax.reduce_sum(x * y, (0,)) + z[0], (rt.int32, rt.float32, rt.bfloat16)),
    ("python scalars", lambda x, y, z: x * 2 + y * 0.5 - z, (rt.int16, rt.float16, rt.uint8)),
]  # fmt: skip


@pytest.mark.parametrize("policy", ["jax", "torch", "numpy"])
@pytest.mark.parametrize("name,f,dtypes", MIXED, ids=[m[0] for m in MIXED])
def test_converts_appear_where_they_would_without_vmap(
    name: str, f: Callable[..., Any], dtypes: tuple[DType, ...], policy: str
) -> None:
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    examples = [
        [random_array(d, (4,), rng) if d.kind != "int" else rng.integers(1, 5, 4).astype(d.storage) for d in dtypes]
        for _ in range(BATCH)
    ]
    with rt.use_policy(policy):
        try:
            plain = rt.trace(f, *[Tensor(a, d) for a, d in zip(examples[0], dtypes, strict=True)])
        except rt.PromotionError as err:  # the policy refuses these dtypes: vmap refuses them the same way
            stacked = [Tensor(np.stack([e[i] for e in examples]), d) for i, d in enumerate(dtypes)]
            with pytest.raises(rt.PromotionError) as under_vmap:
                autodiff.vmap(f)(*stacked)
            assert str(under_vmap.value).split(":")[0] == str(err).split(":")[0]
            return
        for axes in [(0, 0, 0), (1, 0, 1)]:
            batched = [
                Tensor(np.stack([e[i] for e in examples], axis=ax), d)
                for i, (d, ax) in enumerate(zip(dtypes, axes, strict=True))
            ]
            vm = autodiff.vmap(f, in_axes=axes)
            graph = rt.trace(vm, *batched)
            assert _signature(graph) == _signature(plain), f"{name} under {policy}, axes {axes}:\n{plain}\n{graph}"
            got = vm(*batched)
            assert got.dtype is plain.outputs[0].dtype
            for k in range(BATCH):
                want = plain(*[Tensor(a, d) for a, d in zip(examples[k], dtypes, strict=True)])[0]
                np.testing.assert_array_equal(got.numpy()[k], want.numpy())


CLOSED = [
    ("f32 array", lambda c: (lambda x: x * c), np.array([1.0, 2.0, 3.0], np.float32)),
    ("i32 0-d", lambda c: (lambda x: rt.lax.sub(x, c)), np.int32(3)),
    ("c64 array", lambda c: (lambda x: x + c), np.array([1j, 2.0, -1j], np.complex64)),
    ("bf16 array, two uses", lambda c: (lambda x: x * c + c), np.array([0.5, 1.5, 2.0]).astype(rt.bfloat16.storage)),
]  # fmt: skip


@pytest.mark.parametrize("policy", ["jax", "torch"])
@pytest.mark.parametrize("name,make,const", CLOSED, ids=[c[0] for c in CLOSED])
def test_a_closed_over_constant_is_converted_as_without_vmap(name: str, make: Any, const: Any, policy: str) -> None:
    c = rt.asarray(const)
    f = make(c)
    xs = _t(np.arange(12.0).reshape(4, 3), rt.float64)
    with rt.use_policy(policy):
        plain = rt.trace(f, xs[0])
        batched = rt.trace(autodiff.vmap(f), xs)
    assert _signature(batched) == _signature(plain), f"{name} under {policy}:\n{plain}\n{batched}"
    assert any(e.op.name == "convert" for e in plain.eqns)


def test_the_batched_graph_of_a_mixed_add_prints_the_same_convert() -> None:
    x = Tensor(np.ones((BATCH, 3), np.float32), rt.float32)
    y = Tensor(np.ones((BATCH, 3), np.float64), rt.float64)
    graph = rt.trace(autodiff.vmap(lambda a, b: a + b), x, y)
    text = str(graph)
    assert "convert[to=f64]" in text and text.count("convert") == 1, text
    add = next(e for e in graph.eqns if e.op.name == "add")
    assert [v.dtype for v in add.inputs] == [rt.float64, rt.float64]
    assert add.outputs[0].shape == (BATCH, 3)
    # batched along axis 1 on one side: one transpose, no other extra op
    graph = rt.trace(autodiff.vmap(lambda a, b: a + b, in_axes=(0, 1)), x, Tensor(np.ones((3, BATCH)), rt.float64))
    names = [e.op.name for e in graph.eqns]
    assert sorted(names) == ["add", "convert", "transpose"], graph


# -- 4. composition ----------------------------------------------------------------------------------------


def _mlp_ours(w: Tensor, b: Tensor, x: Tensor) -> Tensor:
    h = rt.tanh(rt.matmul(x, w) + b)
    return rt.lax.reduce_sum(rt.real(h * rt.conj(h)) if h.dtype.kind == "complex" else h * h, (0,))


def _mlp_jax(w: Any, b: Any, x: Any) -> Any:
    h = jnp.tanh(x @ w + b)
    return jnp.sum(jnp.real(h * jnp.conj(h)))


def _data(dtype: DType, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (random_array(dtype, (4, 3), rng) * 0.5, random_array(dtype, (3,), rng) * 0.5,
            random_array(dtype, (BATCH, 4), rng) * 0.5)  # fmt: skip


def _t(a: np.ndarray, d: DType) -> Tensor:
    return Tensor(np.asarray(a).astype(d.storage), d)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.short)
def test_vmap_of_grad_is_per_example_gradients(dtype: DType) -> None:
    w, b, xs = _data(dtype, 1)
    got = autodiff.vmap(autodiff.grad(_mlp_ours), in_axes=(None, None, 0))(_t(w, dtype), _t(b, dtype), _t(xs, dtype))
    with x64():
        want = jax.vmap(jax.grad(_mlp_jax), in_axes=(None, None, 0))(jnp.asarray(w), jnp.asarray(b), jnp.asarray(xs))
    want = np.conj(np.asarray(want))  # castwise's gradient of a complex input is JAX's conjugate
    assert got.dtype is dtype and got.shape == (BATCH, 4, 3)
    assert_close("vmap(grad)", got.numpy(), want, dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.short)
def test_grad_of_a_vmapped_loss(dtype: DType) -> None:
    w, b, xs = _data(dtype, 2)

    def loss(w: Tensor, b: Tensor) -> Tensor:
        per = autodiff.vmap(_mlp_ours, in_axes=(None, None, 0))(w, b, _t(xs, dtype))
        return rt.lax.reduce_sum(per, (0,))

    gw, gb = autodiff.grad(loss, argnums=(0, 1))(_t(w, dtype), _t(b, dtype))
    with x64():

        def jloss(w: Any, b: Any) -> Any:
            return jnp.sum(jax.vmap(_mlp_jax, in_axes=(None, None, 0))(w, b, jnp.asarray(xs)))

        jw, jb = jax.grad(jloss, argnums=(0, 1))(jnp.asarray(w), jnp.asarray(b))
    assert_close("grad w", gw.numpy(), np.conj(np.asarray(jw)), dtype)
    assert_close("grad b", gb.numpy(), np.conj(np.asarray(jb)), dtype)


def test_grad_through_vmap_of_the_batched_argument() -> None:
    xs = np.random.default_rng(3).standard_normal((BATCH, 5))
    g = autodiff.grad(lambda x: rt.lax.reduce_sum(autodiff.vmap(lambda r: rt.sin(r) * r)(x), (0, 1)))(
        _t(xs, rt.float64)
    )
    with x64():
        want = jax.grad(lambda x: jnp.sum(jax.vmap(lambda r: jnp.sin(r) * r)(x)))(jnp.asarray(xs))
    assert_close("grad(vmap)", g.numpy(), np.asarray(want), rt.float64)


def test_jvp_of_vmap_and_vmap_of_jvp() -> None:
    rng = np.random.default_rng(4)
    xs, ts = rng.standard_normal((BATCH, 4)), rng.standard_normal((BATCH, 4))

    def f(x: Tensor) -> Tensor:
        return rt.exp(rt.sin(x)) * x

    def jf(x: Any) -> Any:
        return jnp.exp(jnp.sin(x)) * x

    out, tan = autodiff.jvp(autodiff.vmap(f), (_t(xs, rt.float64),), (_t(ts, rt.float64),))
    per = autodiff.vmap(lambda x, t: autodiff.jvp(f, (x,), (t,))[1])(_t(xs, rt.float64), _t(ts, rt.float64))
    with x64():
        jout, jtan = jax.jvp(jax.vmap(jf), (jnp.asarray(xs),), (jnp.asarray(ts),))
    assert_close("jvp(vmap) primal", out.numpy(), np.asarray(jout), rt.float64)
    assert_close("jvp(vmap) tangent", tan.numpy(), np.asarray(jtan), rt.float64)
    assert_close("vmap(jvp)", per.numpy(), np.asarray(jtan), rt.float64)


def test_nested_vmap_with_axes_per_argument() -> None:
    rng = np.random.default_rng(5)
    a, b, c = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 3)), rng.standard_normal((4,))

    def f(x: Tensor, y: Tensor, z: Tensor) -> Tensor:
        return rt.tanh(x * y) + z

    def jf(x: Any, y: Any, z: Any) -> Any:
        return jnp.tanh(x * y) + z

    inner = autodiff.vmap(f, in_axes=(0, 1, None))
    got = autodiff.vmap(inner, in_axes=(0, None, None), out_axes=1)(_t(a, rt.float64), _t(b, rt.float64),
                                                                    _t(c, rt.float64))  # fmt: skip
    with x64():
        want = jax.vmap(jax.vmap(jf, in_axes=(0, 1, None)), in_axes=(0, None, None), out_axes=1)(
            jnp.asarray(a), jnp.asarray(b), jnp.asarray(c)
        )
    assert got.shape == want.shape == (3, 2, 4)
    assert_close("nested vmap", got.numpy(), np.asarray(want), rt.float64)


def test_nested_vmap_closing_over_the_outer_example() -> None:
    rng = np.random.default_rng(6)
    xs, ys = rng.standard_normal((2, 3)), rng.standard_normal((5, 3))

    def outer(x: Tensor) -> Tensor:
        return autodiff.vmap(lambda y: rt.lax.reduce_sum(x * y, (0,)))(_t(ys, rt.float64))

    got = autodiff.vmap(outer)(_t(xs, rt.float64))
    np.testing.assert_allclose(got.numpy(), xs @ ys.T, rtol=1e-12)
    g = autodiff.grad(lambda x: rt.lax.reduce_sum(autodiff.vmap(outer)(x), (0, 1)))(_t(xs, rt.float64))
    np.testing.assert_allclose(g.numpy(), np.tile(ys.sum(0), (2, 1)), rtol=1e-12)


@pytest.mark.parametrize("out_axes", [0, 1, -1, (1, None)])
def test_out_axes(out_axes: Any) -> None:
    xs = np.arange(6.0).reshape(3, 2)
    c = np.array([1.0, 2.0])

    def f(x: Tensor) -> tuple[Tensor, Tensor]:
        return x * 2.0, Tensor(c, rt.float64)

    got = autodiff.vmap(f, out_axes=out_axes)(_t(xs, rt.float64))
    with x64():
        want = jax.vmap(lambda x: (x * 2.0, jnp.asarray(c)), out_axes=out_axes)(jnp.asarray(xs))
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g.numpy(), np.asarray(w))


def test_vmap_under_jit_and_jit_under_vmap() -> None:
    xs = np.random.default_rng(7).standard_normal((BATCH, 3, 2))

    def f(x: Tensor) -> Tensor:
        return rt.lax.reduce_sum(rt.lax.transpose(x, (1, 0)) * 3.0, (1,))

    want = jax.vmap(lambda x: jnp.sum(x.T * 3.0, axis=1))(jnp.asarray(xs, jnp.float32))
    a = autodiff.jit(autodiff.vmap(f, in_axes=1))(_t(np.moveaxis(xs, 0, 1), rt.float64))
    b = autodiff.vmap(autodiff.jit(f))(_t(xs, rt.float64))
    np.testing.assert_allclose(a.numpy(), np.asarray(want), rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), np.asarray(want), rtol=1e-6)


def test_a_closed_over_tracked_value_gets_its_gradient() -> None:
    xs = np.random.default_rng(8).standard_normal((BATCH, 4))
    w = np.random.default_rng(9).standard_normal(4)

    def loss(w: Tensor) -> Tensor:
        scaled = w * 2.0  # computed outside vmap, closed over inside it
        return rt.lax.reduce_sum(autodiff.vmap(lambda x: rt.sin(x * scaled + w))(_t(xs, rt.float64)), (0, 1))

    got = autodiff.grad(loss)(_t(w, rt.float64))
    with x64():
        want = jax.grad(lambda w: jnp.sum(jax.vmap(lambda x: jnp.sin(x * (w * 2.0) + w))(jnp.asarray(xs))))(
            jnp.asarray(w)
        )
    assert_close("closed-over grad", got.numpy(), np.asarray(want), rt.float64)


def test_unmapped_arguments_may_be_python_scalars() -> None:
    xs = _t(np.arange(3.0), rt.float64)
    got = autodiff.vmap(lambda x, k: x * k, in_axes=(0, None))(xs, 3)
    np.testing.assert_array_equal(got.numpy(), [0.0, 3.0, 6.0])


def test_an_untracked_vmap_records_nothing() -> None:
    xs = _t(np.ones((BATCH, 2)), rt.float32)
    w = _t(np.ones(2), rt.float64)
    out = autodiff.vmap(lambda x: rt.tanh(x * w))(xs)
    assert out.node is None and not out.requires_grad and out.dtype is rt.float64


# -- 5. errors ---------------------------------------------------------------------------------------------


def test_mismatched_batch_sizes_name_the_arguments_and_shapes() -> None:
    with pytest.raises(autodiff.VmapError, match=r"vmap: .*argument 0 has size 3 .*f64\[3,2\].*argument 1 has size 2"):
        autodiff.vmap(lambda x, y: x)(_t(np.ones((3, 2)), rt.float64), _t(np.ones(2), rt.float32))


def test_an_axis_out_of_range() -> None:
    with pytest.raises(autodiff.VmapError, match=r"vmap: in_axes\[1\] = 2 is out of range for argument 1 of shape "):
        autodiff.vmap(lambda x, y: x, in_axes=(0, 2))(_t(np.ones((3, 2)), rt.float64), _t(np.ones((3, 2)), rt.float64))
    with pytest.raises(autodiff.VmapError, match=r"vmap: out_axes = 3 is out of range for the output of rank 2"):
        autodiff.vmap(lambda x: x, out_axes=3)(_t(np.ones((3, 2)), rt.float64))


def test_in_axes_of_the_wrong_structure() -> None:
    x = _t(np.ones((3, 2)), rt.float64)
    with pytest.raises(autodiff.VmapError, match=r"vmap: in_axes has 3 entries but there are 2 arguments"):
        autodiff.vmap(lambda a, b: a, in_axes=(0, 0, 0))(x, x)
    with pytest.raises(autodiff.VmapError, match=r"vmap: in_axes\[1\] must be an int or None, got 'x'"):
        autodiff.vmap(lambda a, b: a, in_axes=(0, "x"))(x, x)
    with pytest.raises(autodiff.VmapError, match=r"vmap: in_axes must be an int, None, or a tuple/list"):
        autodiff.vmap(lambda a: a, in_axes={"a": 0})(x)
    with pytest.raises(autodiff.VmapError, match=r"maps no argument"):
        autodiff.vmap(lambda a: a, in_axes=None)(x)
    with pytest.raises(autodiff.VmapError, match=r"argument 1 is a float, which has no axis to map"):
        autodiff.vmap(lambda a, b: a)(x, 2.0)
    with pytest.raises(
        autodiff.VmapError, match=r"the output \(f64\[3,2\]\) depends on the mapped arguments, but out_axes is None"
    ):
        autodiff.vmap(lambda a: a, out_axes=None)(x)


def test_vmap_of_grad_closing_over_the_mapped_value() -> None:
    xs = np.arange(6.0).reshape(3, 2)
    w0 = np.array([1.0, 2.0])
    got = autodiff.vmap(lambda x: autodiff.grad(lambda w: rt.lax.reduce_sum(rt.sin(w * x), (0,)))(_t(w0, rt.float64)))(
        _t(xs, rt.float64)
    )
    np.testing.assert_allclose(got.numpy(), np.cos(w0 * xs) * xs, rtol=1e-12)


def test_jit_of_grad_closing_over_an_argument_follows_each_call() -> None:
    # the inner grad's backward reads the jitted argument: it is recorded, not baked in from the first call
    w0 = _t(np.array([1.0, 2.0]), rt.float64)
    f = autodiff.jit(lambda x: autodiff.grad(lambda w: rt.lax.reduce_sum(rt.sin(w * x), (0,)))(w0))
    for row in np.arange(6.0).reshape(3, 2):
        np.testing.assert_allclose(f(_t(row, rt.float64)).numpy(), np.cos(w0.numpy() * row) * row, rtol=1e-12)


# -- 6. the parity sweep's vmap rows -------------------------------------------------------------------------


def _sweep_case(name: str, slots: tuple[Any, ...], policy: str = "jax") -> parity.Case:
    spec = next(s for s in SPECS if s.name == name)
    return parity.Case(spec, policy, slots)


def test_parity_has_vmap_rows_for_axes_0_and_1_and_each_batched_set() -> None:
    case = _sweep_case("add", (rt.float32, rt.float64))
    result = parity.run_case(case)
    rows = [c for c in result.checks if c.check == "vmap"]
    assert [c.active for c in rows] == [(0,), (1,), (0, 1)] * 2
    assert all(c.ok for c in rows), [c.message for c in rows if not c.ok]
    # a Python scalar operand is never batched
    rows = [c for c in parity.run_case(_sweep_case("mul", (rt.float32, parity.PyScalar("float")))).checks
            if c.check == "vmap"]  # fmt: skip
    assert [c.active for c in rows] == [(0,), (0,)]


def test_parity_vmap_rows_fail_on_a_wrong_batching_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    from autodiff.batching_rules import reductions

    def wrong(op: Any, args: Any, dims: Any, params: Any) -> Any:
        outs, _ = reductions.batch_reduce(op, args, dims, params)
        return outs, list(dims)  # forgets that reduced axes before the batch dimension move it

    monkeypatch.setitem(reductions.BATCH_RULES, "reduce_min", wrong)
    result = parity.run_case(_sweep_case("reduce_min", (rt.float64,)))
    rows = [c for c in result.checks if c.check == "vmap"]
    assert [c.ok for c in rows] == [True, False] and result.status == "failed"
    assert "batch axis 1" in rows[1].message


def test_the_quick_sweep_samples_vmap_rows() -> None:
    cases = parity.build_cases(quick=True)
    case = next(c for c in cases if c.spec.arity and c.spec.op == "dot_general")
    assert any(c.check == "vmap" for c in parity.run_case(case).checks)


@pytest.mark.parametrize("dtype", [rt.float32, rt.float64], ids=lambda d: d.short)
def test_jacobians_as_vmap_of_vjp_and_of_linearize(dtype: DType) -> None:
    """The jacrev / jacfwd construction: vmap of a VJP over the output basis, of a JVP over the input basis."""
    x0 = np.array([0.1, 0.7, -0.4, 1.2])

    def f(x: Tensor) -> Tensor:
        return rt.sin(x[:3]) * rt.lax.reduce_sum(x * x, (0,))

    x = _t(x0, dtype)
    _, vjp_fn = autodiff.vjp(f, x)
    rows = autodiff.vmap(lambda ct: vjp_fn(ct)[0])(_t(np.eye(3), dtype))
    _, f_jvp = autodiff.linearize(f, x)
    cols = autodiff.vmap(f_jvp, out_axes=1)(_t(np.eye(4), dtype))
    with x64():
        want = jax.jacfwd(lambda x: jnp.sin(x[:3]) * jnp.sum(x * x))(jnp.asarray(x0.astype(dtype.storage)))
    assert rows.dtype is dtype and cols.dtype is dtype
    assert_close("vmap(vjp)", rows.numpy(), np.asarray(want), dtype)
    assert_close("vmap(jvp)", cols.numpy(), np.asarray(want), dtype)


def test_jit_of_jvp_closing_over_an_argument_follows_each_call() -> None:
    w0 = _t(np.array([1.0, 2.0]), rt.float64)
    ones = _t(np.ones(2), rt.float64)
    f = autodiff.jit(lambda x: autodiff.jvp(lambda w: rt.sin(w * x), (w0,), (ones,))[1])
    for row in np.arange(6.0).reshape(3, 2):
        np.testing.assert_allclose(f(_t(row, rt.float64)).numpy(), np.cos(w0.numpy() * row) * row, rtol=1e-12)


def test_mixed_partial_through_a_closed_over_value_matches_jax() -> None:
    # d/dx of (d/dw sum(sin(w x)) at w0), summed: the inner derivative reads the outer x
    import jax
    import jax.numpy as jnp

    w0, x0 = np.array([0.3, -1.2]), np.array([0.7, 2.0])

    def ours(x: Any) -> Any:
        g = autodiff.grad(lambda w: rt.lax.reduce_sum(rt.sin(w * x), (0,)))(_t(w0, rt.float64))
        return rt.lax.reduce_sum(g, (0,))

    def theirs(x: Any) -> Any:
        return jnp.sum(jax.grad(lambda w: jnp.sum(jnp.sin(w * x)))(w0))

    with jax.enable_x64(True):
        expected = np.asarray(jax.grad(theirs)(x0))
    np.testing.assert_allclose(autodiff.grad(ours)(_t(x0, rt.float64)).numpy(), expected, rtol=1e-12)
