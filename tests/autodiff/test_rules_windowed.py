"""The windowed reductions and the convolution, end to end: values, derivatives and batching.

Oracles: ``jax.lax`` (reduce_window sum/max/min, its internal select_and_gather_add /
select_and_scatter_add, conv_general_dilated at Precision.HIGHEST), ``jax.jvp`` / ``jax.vjp``,
finite differences and the adjoint identity (``autodiff.testing.check_grads``, orders 1 and 2).

Accuracy, measured against XLA on CPU and asserted here:

* max/min windows, and every integer and bool result, are bit-exact;
* window sums fold the window element by element from 0, as XLA does; XLA reorders some
  windows over a dilated operand, so float32/float64/complex sums agree within 4 ulps of the
  sum of the magnitudes (at most 1 ulp seen) and float16/bfloat16 sums, which round after every
  step, within K unit roundoffs of it for a window of K elements (mostly bit-exact);
* float16/bfloat16 convolutions are bit-exact (both accumulate in float32 and round once);
  float32/float64/complex convolutions run in BLAS's order: ``|ours - XLA| <= 4 eps (|lhs| conv
  |rhs|)``, the forward error bound of a sum of products (seen: at most 2.3 eps).
"""

from __future__ import annotations

import zlib
from typing import Any

import jax
import numpy as np
import pytest
from jax import lax
from jax._src.lax import windowed_reductions as wr

import autodiff
import runtime as rt
from autodiff.api import jvp, vjp
from autodiff.testing import check_grads
from runtime.core import lax as F
from runtime.core.shapes import ShapeError
from tests import jax_oracles
from tests.autodiff.rule_helpers import trials

jax.config.update("jax_enable_x64", True)

EPS = {"float32": 2.0**-23, "float64": 2.0**-52, "complex64": 2.0**-23, "complex128": 2.0**-52}
#: the narrow floats' unit roundoff, where each step of a window sum rounds
NARROW_EPS = {"bfloat16": 2.0**-8, "float16": 2.0**-11}
SPECS = [None, ("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC"), ("NHWC", "OIHW", "NCHW"), ("CNWH", "IOHW", "WHCN")]


def _rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith(("int", "uint")):
        return rng.integers(-3, 4, shape).astype(dtype)
    x = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        x = x + 1j * rng.standard_normal(shape)
    return np.asarray(x).astype(dtype)


def _window_config(rng: np.random.Generator, rank: int = 2) -> dict[str, Any]:
    shape = tuple(int(v) for v in rng.integers(1, 6, size=rank))
    return {
        "shape": shape,
        "window_dimensions": tuple(int(rng.integers(1, 4)) for _ in shape),
        "window_strides": tuple(int(rng.integers(1, 3)) for _ in shape),
        # XLA CPU aborts on negative reduce_window padding with a base dilation: non-negative here
        "padding": tuple((int(rng.integers(0, 3)), int(rng.integers(0, 3))) for _ in shape),
        "base_dilation": tuple(int(rng.integers(1, 3)) for _ in shape),
        "window_dilation": tuple(int(rng.integers(1, 3)) for _ in shape),
    }


def _geometry(cfg: dict[str, Any]) -> tuple[Any, ...]:
    return (cfg["window_dimensions"], cfg["window_strides"], cfg["padding"], cfg["base_dilation"],
            cfg["window_dilation"])  # fmt: skip


def _distinct(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """No ties (max/min derivatives pick one element), well apart for finite differences."""
    n = int(np.prod(shape))
    return (rng.permutation(n).reshape(shape) * 0.5 - n / 4).astype(dtype)


JAX_WINDOW = {"sum": wr._reduce_window_sum, "max": wr._reduce_window_max, "min": wr._reduce_window_min}
OURS_WINDOW = {"sum": F.reduce_window_sum, "max": F.reduce_window_max, "min": F.reduce_window_min}


# -- reduce_window: values --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16", "int32", "int8", "complex64", "bool"])
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_reduce_window_values_match_lax(kind: str, dtype: str) -> None:
    if kind == "sum" and dtype == "bool":
        with pytest.raises(rt.OpTypeError, match="reduce_window_sum"):
            F.reduce_window_sum(np.ones((2, 2), bool), (1, 1))
        return
    rng = np.random.default_rng(zlib.crc32(f"{kind}-{dtype}".encode()))
    for _ in range(trials(20)):
        cfg = _window_config(rng)
        x = _rand(rng, cfg["shape"], dtype) * (1 if dtype in ("bool",) or dtype.startswith("int") else 3)
        want = np.asarray(JAX_WINDOW[kind](x, *_geometry(cfg)))
        got = OURS_WINDOW[kind](x, *_geometry(cfg)).numpy()
        assert got.shape == want.shape and got.dtype == want.dtype, cfg
        if kind != "sum" or dtype in ("int32", "int8"):
            np.testing.assert_array_equal(got, want, err_msg=str(cfg))
        elif dtype in NARROW_EPS:  # every step rounds: K steps, each within eps of the partial sum
            steps = int(np.prod(cfg["window_dimensions"]))
            wide = np.abs(x).astype(np.float64)
            bound = steps * NARROW_EPS[dtype] * np.asarray(JAX_WINDOW["sum"](wide, *_geometry(cfg)))
            assert np.all(np.abs(got.astype(np.float64) - want.astype(np.float64)) <= bound), cfg
        else:
            bound = 4 * EPS[dtype] * np.asarray(JAX_WINDOW["sum"](np.abs(x).astype(np.float64), *_geometry(cfg)))
            assert np.all(np.abs(got.astype(np.complex128) - want) <= bound), cfg


def test_reduce_window_padding_strings_and_defaults() -> None:
    x = np.arange(30.0).reshape(5, 6)
    for padding in ("SAME", "VALID", "SAME_LOWER"):
        want = lax.reduce_window(x, -np.inf, lax.max, (2, 3), (2, 2), padding)
        np.testing.assert_array_equal(F.reduce_window_max(x, (2, 3), (2, 2), padding).numpy(), want)
    want = lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "VALID")
    np.testing.assert_array_equal(F.reduce_window_sum(x, (2, 2)).numpy(), want)


def test_pools_are_channels_last_windows() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 6, 5, 3)).astype(np.float32)
    want_max = lax.reduce_window(x, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "SAME")
    np.testing.assert_array_equal(F.max_pool(x, (2, 2), (2, 2), "SAME").numpy(), want_max)
    want_avg = lax.reduce_window(x, 0.0, lax.add, (1, 3, 2, 1), (1, 1, 1, 1), "VALID") / 6
    np.testing.assert_allclose(F.avg_pool(x, (3, 2)).numpy(), want_avg, rtol=1e-6)


def test_window_params_are_checked() -> None:
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(ShapeError, match="reduce_window_max: window_strides .* needs one entry"):
        F.reduce_window_max(x, (2, 2), (1,))
    with pytest.raises(ShapeError, match="reduce_window_sum: window_dilation .* must be positive"):
        F.reduce_window_sum(x, (2, 2), window_dilation=(0, 1))
    with pytest.raises(ShapeError, match="padding"):
        F.reduce_window_sum(x, (2, 2), padding="FULL")
    with pytest.raises(rt.OpTypeError, match="select_and_gather_add: operand dtype c64"):
        F.select_and_gather_add(x.astype(np.complex64), x.astype(np.complex64), "ge", (2, 2), (1, 1),
                                ((0, 0), (0, 0)), (1, 1), (1, 1))  # fmt: skip


# -- select_and_gather_add / select_and_scatter_add ------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_select_ops_match_lax(dtype: str) -> None:
    rng = np.random.default_rng(1)
    for _ in range(trials(20)):
        cfg = _window_config(rng)
        x = _distinct(rng, cfg["shape"], dtype)
        t = _rand(rng, cfg["shape"], dtype)
        for prim, lax_prim in (("ge", lax.ge_p), ("le", lax.le_p)):
            want = np.asarray(wr._select_and_gather_add(t, x, lax_prim, *_geometry(cfg)))
            np.testing.assert_array_equal(F.select_and_gather_add(t, x, prim, *_geometry(cfg)).numpy(), want)
            plain = {**cfg, "base_dilation": (1, 1), "window_dilation": (1, 1)}
            s = _rand(rng, F.reduce_window_max(x, *_geometry(plain)).shape, dtype)
            want = np.asarray(wr._select_and_scatter_add(s, x, lax_prim, *_geometry(plain)[:3]))
            got = F.select_and_scatter_add(s, x, prim, *_geometry(plain)).numpy()
            # the scatter's sums may run in another order: within the dtype's rounding
            tol = {"float32": 1e-6, "float64": 1e-14, "bfloat16": 2e-2, "float16": 2e-3}[dtype]
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


def test_select_ops_are_each_others_transposes_with_dilation() -> None:
    """<gather(t), s> == <t, scatter(s)>, where lax has no scatter to compare with."""
    rng = np.random.default_rng(2)
    for _ in range(trials(20)):
        cfg = _window_config(rng)
        x = _distinct(rng, cfg["shape"], "float64")
        t = rng.standard_normal(cfg["shape"])
        g = F.select_and_gather_add(t, x, "ge", *_geometry(cfg)).numpy()
        s = rng.standard_normal(g.shape)
        sc = F.select_and_scatter_add(s, x, "ge", *_geometry(cfg)).numpy()
        assert np.isclose(np.sum(g * s), np.sum(t * sc), rtol=1e-12, atol=1e-12)


# -- reduce_window: derivatives ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_reduce_window_jvp_and_vjp_match_jax(kind: str) -> None:
    rng = np.random.default_rng(3)
    for _ in range(trials(25)):
        cfg = _window_config(rng)
        x = _distinct(rng, cfg["shape"], "float64")
        t = rng.standard_normal(cfg["shape"])

        def jf(v: Any, cfg: dict[str, Any] = cfg) -> Any:
            return JAX_WINDOW[kind](v, *_geometry(cfg))

        def of(v: Any, cfg: dict[str, Any] = cfg) -> Any:
            return OURS_WINDOW[kind](v, *_geometry(cfg))

        ct = rng.standard_normal(jax.eval_shape(jf, x).shape)
        # lax transposes no max window with a window dilation: there JAX's JVP alone
        if kind == "sum" or (cfg["window_dilation"] == (1, 1)):
            _, want_t, (want_ct,) = jax_oracles.jvp_and_vjp(jf, (x,), (t,), ct)  # one program for both
        else:
            _, want_t = jax_oracles.jvp(jf, (x,), (t,))
            want_ct = None
        _, got_t = jvp(of, (x,), (t,))
        np.testing.assert_allclose(got_t.numpy(), want_t, rtol=1e-12, atol=1e-12, err_msg=str(cfg))
        (got_ct,) = vjp(of, x)[1](ct)
        if want_ct is not None:
            np.testing.assert_allclose(got_ct.numpy(), want_ct, rtol=1e-12, atol=1e-12, err_msg=str(cfg))
        assert np.isclose(np.sum(got_ct.numpy() * t), np.sum(ct * got_t.numpy()), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [rt.float32, rt.float64, rt.complex64, rt.complex128])
def test_reduce_window_sum_check_grads(dtype: rt.DType) -> None:
    rng = np.random.default_rng(4)
    x = rt.asarray(_rand(rng, (4, 5), dtype.name), dtype)
    geo = ((2, 3), (2, 1), ((1, 0), (2, 1)), (1, 2), (2, 1))
    check_grads(lambda v: F.reduce_window_sum(F.mul(v, v), *geo), [x], order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("dtype", [rt.float32, rt.float64])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_reduce_window_max_min_check_grads(kind: str, dtype: rt.DType) -> None:
    rng = np.random.default_rng(5)
    x = rt.asarray(_distinct(rng, (5, 4), dtype.name) + 10, dtype)  # positive: the squares stay distinct
    geo = ((2, 2), (1, 2), ((1, 1), (0, 1)), (2, 1), (1, 2))
    check_grads(lambda v: OURS_WINDOW[kind](F.mul(v, v), *geo), [x], order=2, modes=("fwd", "rev"), eps=1e-3)


def test_select_ops_check_grads() -> None:
    rng = np.random.default_rng(6)
    x = _distinct(rng, (5, 4), "float64")
    geo = ((2, 2), (1, 2), ((1, 1), (0, 1)), (2, 1), (1, 2))
    t = rng.standard_normal((5, 4))
    s = rng.standard_normal(F.reduce_window_max(x, *geo).shape)
    check_grads(lambda v: F.select_and_gather_add(F.mul(v, v), x, "ge", *geo), [t], order=2)
    check_grads(lambda v: F.select_and_scatter_add(F.mul(v, v), x, "le", *geo), [s], order=2)


def test_reduce_window_batching_matches_a_loop() -> None:
    rng = np.random.default_rng(7)
    x = _distinct(rng, (3, 4, 5), "float64")
    geo = ((2, 2), (1, 2), ((1, 0), (0, 1)), (1, 2), (2, 1))
    for kind in ("sum", "max", "min"):
        got = autodiff.vmap(lambda v, kind=kind: OURS_WINDOW[kind](v, *geo), in_axes=1)(x).numpy()
        want = np.stack([np.asarray(JAX_WINDOW[kind](x[:, i], *geo)) for i in range(4)])
        np.testing.assert_allclose(got, want, rtol=1e-12)
    # the derivative's select_and_* ops batch too (lax transposes no max window with a window dilation)
    geo = ((2, 2), (1, 2), ((1, 0), (0, 1)), (1, 2), (1, 1))
    ct = rng.standard_normal((4, *F.reduce_window_max(x[:, 0], *geo).shape))
    got = autodiff.vmap(lambda v, c: vjp(lambda u: F.reduce_window_max(u, *geo), v)[1](c)[0], in_axes=(1, 0))(x, ct)
    want = np.stack([np.asarray(jax_oracles.pullback(lambda u: JAX_WINDOW["max"](u, *geo), x[:, i])(ct[i])[0])
                     for i in range(4)])  # fmt: skip
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


# -- conv_general_dilated ----------------------------------------------------------------------------------


def _conv_config(rng: np.random.Generator, trial: int) -> dict[str, Any]:
    spec = SPECS[trial % len(SPECS)]
    g = int(rng.integers(1, 3))
    b = 1 if g > 1 else int(rng.integers(1, 3))
    n, i = b * int(rng.integers(1, 3)), int(rng.integers(1, 3))
    c, o = i * g, g * b * int(rng.integers(1, 3))
    sp = tuple(int(v) for v in rng.integers(3, 7, size=2))
    k = tuple(int(v) for v in rng.integers(1, 4, size=2))
    lhs_c, rhs_c = (n, c, *sp), (o, i, *k)
    if spec is None:
        lshape, rshape = lhs_c, rhs_c
    else:
        dn = lax.conv_dimension_numbers(lhs_c, rhs_c, spec)
        lshape_l, rshape_l = [0] * 4, [0] * 4
        for j, d in enumerate(dn.lhs_spec):
            lshape_l[d] = lhs_c[j]
        for j, d in enumerate(dn.rhs_spec):
            rshape_l[d] = rhs_c[j]
        lshape, rshape = tuple(lshape_l), tuple(rshape_l)
    return {
        "lshape": lshape,
        "rshape": rshape,
        "kw": {
            "window_strides": tuple(int(v) for v in rng.integers(1, 3, size=2)),
            "padding": tuple((int(rng.integers(-1, 3)), int(rng.integers(-1, 3))) for _ in range(2)),
            "lhs_dilation": tuple(int(v) for v in rng.integers(1, 3, size=2)),
            "rhs_dilation": tuple(int(v) for v in rng.integers(1, 3, size=2)),
            "dimension_numbers": spec,
            "feature_group_count": g,
            "batch_group_count": b,
        },
    }


def _lax_conv(lhs: Any, rhs: Any, kw: dict[str, Any]) -> Any:
    return lax.conv_general_dilated(lhs, rhs, precision=lax.Precision.HIGHEST, **kw)


@pytest.mark.parametrize(
    "dtype", ["float32", "float64", "bfloat16", "float16", "complex64", "complex128", "int32", "int8", "bool"]
)
def test_conv_values_match_lax(dtype: str) -> None:
    rng = np.random.default_rng(zlib.crc32(dtype.encode()))
    for trial in range(trials(25)):
        cfg = _conv_config(rng, trial)
        lhs, rhs = _rand(rng, cfg["lshape"], dtype), _rand(rng, cfg["rshape"], dtype)
        want = np.asarray(_lax_conv(lhs, rhs, cfg["kw"]))
        got = F.conv_general_dilated(lhs, rhs, **cfg["kw"]).numpy()
        assert got.shape == want.shape and got.dtype == want.dtype, cfg
        if dtype in EPS:
            wide = np.float64
            bound = (
                4 * EPS[dtype] * np.asarray(_lax_conv(np.abs(lhs).astype(wide), np.abs(rhs).astype(wide), cfg["kw"]))
            )
            assert np.all(np.abs(got.astype(np.complex128) - want) <= bound), cfg
        elif dtype in NARROW_EPS:
            # both accumulate in float32 and round once; a float32 sum in another order can land on
            # the other side of a rounding tie: at most one narrow ulp apart
            wide_got, wide_want = got.astype(np.float64), want.astype(np.float64)
            ulp = 2 * NARROW_EPS[dtype] * np.abs(wide_want) + np.finfo(np.float32).tiny
            assert np.all(np.abs(wide_got - wide_want) <= ulp), cfg
        else:
            np.testing.assert_array_equal(got, want, err_msg=str(cfg))


def test_conv_padding_strings_and_lax_conv() -> None:
    rng = np.random.default_rng(8)
    lhs, rhs = rng.standard_normal((2, 3, 7, 6)), rng.standard_normal((4, 3, 3, 2))
    for padding in ("SAME", "VALID", "SAME_LOWER"):
        want = lax.conv_general_dilated(lhs, rhs, (2, 1), padding, rhs_dilation=(1, 2))
        got = F.conv_general_dilated(lhs, rhs, (2, 1), padding, rhs_dilation=(1, 2))
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(F.conv(lhs, rhs, (1, 1), "SAME").numpy(), lax.conv(lhs, rhs, (1, 1), "SAME"),
                               rtol=1e-12, atol=1e-12)  # fmt: skip
    dn = lax.conv_dimension_numbers(lhs.shape, rhs.shape, ("NCHW", "OIHW", "NCHW"))
    np.testing.assert_allclose(F.conv_general_dilated(lhs, rhs, (1, 1), "VALID", dimension_numbers=dn).numpy(),
                               lax.conv(lhs, rhs, (1, 1), "VALID"), rtol=1e-12, atol=1e-12)  # fmt: skip


def test_conv_operands_promote_together() -> None:
    lhs = rt.asarray(np.ones((1, 1, 3, 3)), rt.bfloat16)
    rhs = rt.asarray(np.ones((1, 1, 2, 2)), rt.float32)
    out = F.conv_general_dilated(lhs, rhs, (1, 1), "VALID")
    assert out.dtype is rt.float32
    graph = rt.trace(lambda a, b: F.conv_general_dilated(a, b, (1, 1), "VALID"), lhs, rhs)
    assert [e.op.name for e in graph.eqns] == ["convert", "conv_general_dilated"]


def test_conv_params_are_checked() -> None:
    lhs, rhs = np.zeros((1, 4, 5, 5), np.float32), np.zeros((2, 3, 2, 2), np.float32)
    with pytest.raises(ShapeError, match=r"conv_general_dilated: lhs feature dimension \(4\) must equal"):
        F.conv_general_dilated(lhs, rhs, (1, 1), "VALID")
    with pytest.raises(ShapeError, match="must hold 'N' and 'C'"):
        F.conv_general_dilated(lhs, rhs, (1, 1), "VALID", dimension_numbers=("NXHW", "OIHW", "NCHW"))
    with pytest.raises(ShapeError, match="string padding"):
        F.conv_general_dilated(lhs, rhs, (1, 1), "SAME", lhs_dilation=(2, 1))
    with pytest.raises(ShapeError, match="at most one of feature_group_count and batch_group_count"):
        F.conv_general_dilated(lhs, np.zeros((2, 2, 2, 2), np.float32), (1, 1), "VALID", feature_group_count=2,
                               batch_group_count=2)  # fmt: skip


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_conv_jvp_and_vjp_match_jax(dtype: str) -> None:
    rng = np.random.default_rng(9)
    checked = 0
    for trial in range(trials(30)):
        cfg = _conv_config(rng, trial)
        kw = cfg["kw"]
        lhs, rhs = _rand(rng, cfg["lshape"], dtype), _rand(rng, cfg["rshape"], dtype)
        tl, tr = _rand(rng, cfg["lshape"], dtype), _rand(rng, cfg["rshape"], dtype)
        out_shape = jax.eval_shape(lambda a, b, kw=kw: _lax_conv(a, b, kw), lhs, rhs).shape
        if 0 in out_shape:
            continue
        ct = _rand(rng, out_shape, dtype)
        # JAX's JVP and VJP of this configuration: one compiled program (a conv compiles slowly)
        _, want_t, (want_l, want_r) = jax_oracles.jvp_and_vjp(
            lambda a, b, kw=kw: _lax_conv(a, b, kw), (lhs, rhs), (tl, tr), np.conj(ct)
        )
        _, got_t = jvp(lambda a, b, kw=kw: F.conv_general_dilated(a, b, **kw), (lhs, rhs), (tl, tr))
        np.testing.assert_allclose(got_t.numpy(), want_t, rtol=1e-11, atol=1e-11, err_msg=str(cfg))
        got_l, got_r = vjp(lambda a, b, kw=kw: F.conv_general_dilated(a, b, **kw), lhs, rhs)[1](ct)
        # castwise's cotangents are the conjugates of JAX's (the real inner product)
        np.testing.assert_allclose(got_l.numpy(), np.conj(want_l), rtol=1e-11, atol=1e-11, err_msg=str(cfg))
        np.testing.assert_allclose(got_r.numpy(), np.conj(want_r), rtol=1e-11, atol=1e-11, err_msg=str(cfg))
        checked += 1
    assert checked >= trials(30) * 2 // 3


@pytest.mark.parametrize("dtype", [rt.float32, rt.float64, rt.complex64, rt.complex128])
@pytest.mark.parametrize("groups", [(1, 1), (2, 1), (1, 2)], ids=["plain", "feature-groups", "batch-groups"])
def test_conv_check_grads(dtype: rt.DType, groups: tuple[int, int]) -> None:
    rng = np.random.default_rng(10)
    g, b = groups
    lhs = rt.asarray(_rand(rng, (2 * b, 5, 4, 2 * g), dtype.name), dtype)  # NHWC
    rhs = rt.asarray(_rand(rng, (2, 3, 2, 2 * g * b), dtype.name), dtype)  # HWIO
    kw = {"window_strides": (2, 1), "padding": ((1, 0), (0, 1)), "lhs_dilation": (1, 2), "rhs_dilation": (2, 1),
          "dimension_numbers": ("NHWC", "HWIO", "NHWC"), "feature_group_count": g, "batch_group_count": b}  # fmt: skip
    check_grads(lambda a, w: F.conv_general_dilated(a, w, **kw), [lhs, rhs], order=2, modes=("fwd", "rev"))


def test_conv_batching_matches_jax_vmap() -> None:
    rng = np.random.default_rng(11)
    lhs, rhs = rng.standard_normal((3, 2, 4, 5, 5)), rng.standard_normal((3, 6, 2, 3, 3))
    kw = {"window_strides": (1, 2), "padding": ((1, 1), (0, 1)), "rhs_dilation": (2, 1), "feature_group_count": 2}
    for axes in ((0, None), (None, 0), (0, 0), (2, None)):
        a = np.moveaxis(lhs, 0, axes[0]) if axes[0] is not None else lhs[0]
        w = rhs if axes[1] is not None else rhs[0]
        got = autodiff.vmap(lambda x, y: F.conv_general_dilated(x, y, **kw), in_axes=axes)(a, w)
        want = jax_oracles.jitted(jax.vmap(lambda x, y: _lax_conv(x, y, kw), in_axes=axes))(a, w)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-11, atol=1e-11)
