"""The special functions' kernels against JAX on CPU, on dense grids with their edges.

The kernels evaluate XLA's expansions (the same constants, order of operations and fused
multiply-adds), so plain arithmetic agrees bit for bit; what remains are the elementary functions
under them (XLA's own exp / log / log1p / sin / cos / rsqrt / pow against NumPy's), which the
expansions amplify in places. ``MAX_ULPS`` holds, per op and dtype, the largest distance measured
on these grids (in ulps of the result, or of 1 where a result crosses zero through cancellation:
lgamma at 1 and 2, digamma at its root); the test fails on any growth past it. float16 and bfloat16
compute in float32 and round once, as XLA does.

Values XLA flushes to zero (results below float32's smallest normal, CPU's flush-to-zero) count as
equal: castwise keeps IEEE gradual underflow (runtime.core.kernels' documented departure).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

from jax import lax  # noqa: E402

from runtime.core.kernels import KERNELS  # noqa: E402

F64, F32, F16, BF16 = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
DTYPES = (F64, F32, F16, BF16)

#: Ops whose result crosses zero by cancellation of O(1) terms: ulps are counted at magnitude 1 there.
CANCELS = {"lgamma", "digamma", "polygamma"}

#: The largest distance to JAX measured on the grids below, per op: (f64, f32, f16, bf16) in ulps.
MAX_ULPS: dict[str, tuple[float, float, float, float]] = {
    "erf": (0, 0, 0, 0),
    "erfc": (4, 4, 1, 1),
    "erf_inv": (24, 2, 1, 1),  # float64: its log1p, then a 23-term polynomial
    "lgamma": (16, 16, 1, 1),
    "digamma": (8, 16, 1, 1),
    "bessel_i0e": (2, 4, 1, 1),  # the tail's rsqrt
    "bessel_i1e": (2, 4, 1, 1),
    "polygamma": (32, 16, 1, 1),  # m! zeta(m + 1, x) near digamma's poles
    "zeta": (4, 4, 1, 1),
    # x**a e**-x / Gamma(a) = exp(a log x - x - lgamma(a)): an ulp of an exponent near 100 is ~100 ulps
    "igamma": (512, 512, 1, 1),
    "igammac": (512, 512, 1, 1),
    "igamma_grad_a": (512, 512, 1, 1),
}

_EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 1e-5, -1e-5, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, -3.0,
          -2.5, 3.8, -3.8, 8.0, -8.0, 9.0, 30.0, -30.0, 1e10, -1e10, 1e30]  # fmt: skip


def unary_grid(name: str, n: int) -> np.ndarray:
    """A dense grid over the op's interesting range, its edges (0, +-inf, NaN, huge), and its poles."""
    lo, hi = {"erf_inv": (-1.0, 1.0), "lgamma": (-30.0, 40.0), "digamma": (-30.0, 40.0)}.get(name, (-40.0, 40.0))
    return np.concatenate([np.linspace(lo, hi, n), _EDGES])


def binary_grid(name: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A grid over (a, x) (polygamma: (m, x) with whole m; zeta: (x, q)), plus the domain's edges."""
    side = int(np.sqrt(n))
    if name == "polygamma":
        a, x = np.meshgrid(np.arange(0.0, 5.0), np.linspace(-6.0, 20.0, n // 5))
    elif name == "zeta":
        a, x = np.meshgrid(np.linspace(1.0, 12.0, side), np.linspace(-4.0, 25.0, side))
    else:
        a, x = np.meshgrid(np.linspace(0.0, 30.0, side), np.linspace(0.0, 40.0, side))
    edges_a = [0.0, 1.0, 0.5, np.nan, 2.0, 3.0, 1e-3, -1.0, 1.0, 50.0, 1e-20]
    edges_x = [0.0, 0.0, np.inf, 1.0, np.nan, 0.0, 1e-3, 1.0, -1.0, 49.0, 1e-20]
    return np.concatenate([a.ravel(), edges_a]), np.concatenate([x.ravel(), edges_x])


def ulps(ours: np.ndarray, theirs: np.ndarray, dtype: np.dtype[Any], magnitude_floor: float) -> np.ndarray:
    """|ours - theirs| in ulps of ``dtype`` at max(|theirs|, magnitude_floor); NaN vs NaN is 0."""
    a, b = ours.astype(np.float64), theirs.astype(np.float64)
    fi = ml_dtypes.finfo(dtype)
    compute_tiny = float(np.finfo(np.float64 if dtype == F64 else np.float32).smallest_normal)
    flushed = (b == 0) & (np.abs(a) <= compute_tiny)  # XLA CPU flushes subnormal results to zero
    same = (a == b) | (np.isnan(a) & np.isnan(b)) | flushed
    mag = np.maximum(np.maximum(np.abs(b), magnitude_floor), float(fi.smallest_normal))
    with np.errstate(all="ignore"):
        ulp = 2.0 ** (np.floor(np.log2(np.where(np.isfinite(mag), mag, 1.0))) - fi.nmant)
        d = np.abs(a - b) / ulp
    d = np.where(same, 0.0, d)
    return np.where(~same & ~(np.isfinite(a) & np.isfinite(b)), np.inf, d)


@np.errstate(over="ignore", invalid="ignore")  # samples past float16's range, NaN payloads: as intended
def _run(name: str, dtype: np.dtype[Any], args: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
    ref: Callable[..., Any] = getattr(lax, name)
    xs = tuple(a.astype(dtype) for a in args)
    ours = KERNELS[name](*xs)[0]
    theirs = np.asarray(jax.jit(ref)(*xs))
    assert ours.dtype == theirs.dtype == dtype
    return ours, theirs


@np.errstate(over="ignore", invalid="ignore")  # samples past float16's range, NaN payloads: as intended
def _check(name: str, dtype: np.dtype[Any], args: tuple[np.ndarray, ...]) -> None:
    ours, theirs = _run(name, dtype, args)
    d = ulps(ours, theirs, dtype, 1.0 if name in CANCELS else 0.0)
    # XLA CPU also reads subnormal inputs as zero (bfloat16 has float32's subnormals): the same departure
    tiny = float(np.finfo(np.float64 if dtype == F64 else np.float32).smallest_normal)
    for a in args:
        v = np.abs(a.astype(dtype).astype(np.float64))
        d = np.where((v > 0) & (v < tiny), 0.0, d)
    bound = MAX_ULPS[name][DTYPES.index(dtype)]
    worst = int(np.argmax(d))
    at = tuple(a.astype(dtype)[worst] for a in args)
    assert d.max() <= bound, f"{name} {dtype}: {d.max():.3g} ulps at {at}: ours {ours[worst]!r}, jax {theirs[worst]!r}"


UNARY = ["erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i0e", "bessel_i1e"]
BINARY = ["polygamma", "zeta", "igamma", "igammac", "igamma_grad_a"]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", UNARY)
def test_unary_special_functions_stay_within_the_measured_ulps_of_jax(name: str, dtype: np.dtype[Any]) -> None:
    _check(name, dtype, (unary_grid(name, 20001),))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", BINARY)
def test_binary_special_functions_stay_within_the_measured_ulps_of_jax(name: str, dtype: np.dtype[Any]) -> None:
    _check(name, dtype, binary_grid(name, 4000))


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", UNARY)
def test_unary_special_functions_on_a_dense_grid(name: str, dtype: np.dtype[Any]) -> None:
    _check(name, dtype, (unary_grid(name, 400001),))


@pytest.mark.parametrize("dtype", [F16, BF16], ids=str)
@pytest.mark.parametrize("name", ["erf", "erfc", "erf_inv", "bessel_i0e", "bessel_i1e"])
def test_narrow_floats_exhaustively(name: str, dtype: np.dtype[Any]) -> None:
    """Every float16 / bfloat16 value: computed in float32 and rounded once, as XLA does."""
    bits = np.arange(2**16, dtype=np.uint16).view(dtype)
    with np.errstate(invalid="ignore"):  # (the NaN bit patterns, cast to float64)
        wide = bits.astype(np.float64)
    _check(name, dtype, (wide,))


def test_erf_is_bit_exact_in_float32_and_float64() -> None:
    """float32: Eigen's rational interpolant with XLA's fused multiply-adds; float64: the C library's."""
    rng = np.random.default_rng(0)
    for dtype in (F32, F64):
        x = np.concatenate([rng.standard_normal(100000) * 3, _EDGES]).astype(dtype)
        ours, theirs = _run("erf", dtype, (x,))
        np.testing.assert_array_equal(ours, theirs)


def test_edges_match_jax_exactly() -> None:
    """Poles, infinities, NaN and the domain's ends give JAX's value, not an approximation of it."""
    x = np.array([0.0, -1.0, -2.0, 1.0, 2.0, np.inf, -np.inf, np.nan])
    for name in ("lgamma", "digamma"):
        ours, theirs = _run(name, F64, (x,))
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs), err_msg=name)
        np.testing.assert_array_equal(ours[np.isinf(theirs)], theirs[np.isinf(theirs)], err_msg=name)
    ours, theirs = _run("erf_inv", F32, (np.array([-1.0, 1.0, 1.5, -2.0, np.nan]),))
    np.testing.assert_array_equal(ours, theirs)
    a = np.array([0.0, 1.0, -1.0, 2.0, 1.0, np.nan])
    x = np.array([0.0, 0.0, 1.0, np.inf, -1.0, 1.0])
    for name in ("igamma", "igammac", "igamma_grad_a"):
        ours, theirs = _run(name, F64, (a, x))
        np.testing.assert_array_equal(ours, theirs, err_msg=name)
