"""The Fourier transforms: the ``fft`` op (``rt.lax.fft``) and the ``rt.fft`` namespace.

Oracles: ``jax.numpy.fft`` / ``jax.lax.fft`` for values, dtypes, JVPs and VJPs (castwise's reverse
mode is the conjugate of JAX's: ``autodiff.testing.check_against_jax``), central finite differences
(``check_grads``), ``jax.vmap`` for batching, and eager execution for ``autodiff.jit``. The default
run samples the dtype table (``SAMPLED`` in tests/conftest.py); ``pytest -m ''`` runs all of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import autodiff as ad
import runtime as rt
from autodiff.testing import check_against_jax, check_grads
from runtime.core import ops
from runtime.core.plan import plan
from tests import jax_oracles

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

RNG = np.random.default_rng(7)


def data(dtype: Any, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Random values of ``dtype`` (integers small, bools coin flips, complex with both parts)."""
    rng = np.random.default_rng(seed)
    d = np.dtype(dtype)
    if d.kind == "b":
        return rng.integers(0, 2, shape).astype(d)
    if d.kind in "iu":
        return rng.integers(0, 5, shape).astype(d)
    x = rng.uniform(-2, 2, shape)
    if d.kind == "c":
        x = x + 1j * rng.uniform(-2, 2, shape)
    return x.astype(d)


def tolerance(dtype: Any) -> float:
    """Relative tolerance (to the largest magnitude) of a result of ``dtype``: pocketfft and XLA
    round differently, by a few ulps of the result's precision times log n."""
    return 1e-12 if np.dtype(dtype) in (np.float64, np.complex128) else 2e-5


def assert_close(ours: rt.Tensor, theirs: Any, what: str) -> None:
    want = np.asarray(theirs)
    assert ours.dtype is rt.dtype(want.dtype), f"{what}: {ours.dtype.name} where JAX gives {want.dtype}"
    assert ours.shape == want.shape, f"{what}: shape {ours.shape} where JAX gives {want.shape}"
    got = ours.numpy()
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    err = float(np.abs(got.astype(np.complex128) - want.astype(np.complex128)).max(initial=0.0)) / scale
    assert err <= tolerance(want.dtype), f"{what}: relative error {err:.2e}"


# -- the rt.fft namespace against jax.numpy.fft ------------------------------------------------------

#: (function, keyword arguments, operand shape, whether the operand may be complex)
CALLS: list[tuple[str, dict[str, Any], tuple[int, ...], bool]] = [
    ("fft", {}, (3, 5), True),
    ("fft", {"n": 7, "axis": 0, "norm": "ortho"}, (3, 5), True),
    ("ifft", {"n": 4, "norm": "forward"}, (3, 5), True),
    ("rfft", {}, (3, 6), False),
    ("rfft", {"n": 5, "axis": 0, "norm": "ortho"}, (4, 3), False),
    ("irfft", {}, (3, 4), True),
    ("irfft", {"n": 7, "axis": 0, "norm": "forward"}, (3, 2), True),
    ("hfft", {}, (2, 4), True),
    ("hfft", {"n": 5, "norm": "ortho"}, (2, 4), True),
    ("ihfft", {"norm": "forward"}, (2, 5), False),
    ("fftn", {}, (2, 3, 4), True),
    ("fftn", {"s": (3, 2), "axes": (2, 0), "norm": "ortho"}, (2, 3, 4), True),
    ("ifftn", {"s": (4, 4)}, (2, 3, 5), True),
    ("rfftn", {}, (2, 3, 4), False),
    ("rfftn", {"axes": (0, 2), "norm": "forward"}, (2, 3, 5), False),
    ("irfftn", {}, (2, 3, 3), True),
    ("irfftn", {"s": (3, 5), "axes": (1, 0)}, (2, 3, 3), True),
    ("fft2", {}, (2, 3, 4), True),
    ("ifft2", {"axes": (0, 2), "norm": "ortho"}, (2, 3, 4), True),
    ("rfft2", {"s": (4, 4)}, (2, 3, 5), False),
    ("irfft2", {"norm": "forward"}, (2, 3, 3), True),
    ("fftn", {}, (2, 2, 3, 2, 2), True),  # five axes: lax transforms three at a time
    ("rfftn", {}, (2, 3, 2, 2), False),  # four axes: two and two
    ("irfftn", {}, (2, 3, 2, 3), True),
    ("fftshift", {}, (3, 4), True),
    ("ifftshift", {"axes": (0,)}, (5, 4), True),
    ("fftshift", {"axes": 1}, (5, 3), True),
]
DTYPES = [np.float32, np.float64, np.complex64, np.complex128, np.int32, np.int64, np.uint8, np.bool_]


def _call_ids() -> list[Any]:
    out = []
    for name, kw, shape, complex_ok in CALLS:
        for d in DTYPES:
            if np.dtype(d).kind == "c" and not complex_ok:
                continue
            label = "-".join(f"{k}{v}" for k, v in kw.items()).replace(" ", "")
            out.append(pytest.param(name, kw, shape, d, id=f"{name}[{label}]-{np.dtype(d).name}"))
    return out


ALL_CALLS = _call_ids()


@pytest.mark.parametrize(("name", "kw", "shape", "dtype"), ALL_CALLS)
def test_namespace_matches_jax_numpy_fft(name: str, kw: dict[str, Any], shape: tuple[int, ...], dtype: Any) -> None:
    """Sampled (tests/conftest.py ``SAMPLED``): the default run keeps every dtype kind and about one
    row in 6; ``pytest -m ''`` runs every function with every dtype."""
    x = data(dtype, shape, seed=len(shape))
    assert_close(getattr(rt.fft, name)(x, **kw), getattr(jnp.fft, name)(x, **kw), f"fft.{name}({kw})")


def test_every_function_of_the_namespace_is_in_the_table() -> None:
    tested = {name for name, *_ in CALLS} | {"fftfreq", "rfftfreq"}
    assert tested == set(rt.fft.__all__)
    assert rt.numpy.fft is rt.fft and rt.lax.fft is not rt.fft


@pytest.mark.parametrize(
    ("name", "n", "kw"),
    [("fftfreq", 7, {}), ("fftfreq", 8, {"d": 0.25}), ("rfftfreq", 7, {"d": 3.0}), ("rfftfreq", 8, {}),
     ("fftfreq", 5, {"dtype": np.float32}), ("rfftfreq", 6, {"dtype": np.float32, "d": 0.5})],
)  # fmt: skip
def test_frequencies_match_jax_numpy(name: str, n: int, kw: dict[str, Any]) -> None:
    assert_close(getattr(rt.fft, name)(n, **kw), getattr(jnp.fft, name)(n, **kw), name)


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16", "float8_e4m3fn"])
def test_narrow_floats_follow_jax_numpy(dtype: Any) -> None:
    """fft, ifft, irfft and hfft transform a narrow float in complex64 (a recorded convert); rfft
    and ihfft refuse it, as jnp.fft does."""
    d = rt.dtype(dtype)
    x = rt.asarray(data(np.float32, (2, 4)).astype(d.storage), d)
    for name in ("fft", "ifft", "irfft", "hfft"):
        assert_close(getattr(rt.fft, name)(x), getattr(jnp.fft, name)(jnp.asarray(x.numpy())), name)
    for name in ("rfft", "ihfft"):
        with pytest.raises(ValueError):
            getattr(jnp.fft, name)(jnp.asarray(x.numpy()))
        with pytest.raises(rt.OpTypeError, match=rf"fft\.{name}: .*RFFT takes float32 or float64"):
            getattr(rt.fft, name)(x)


# -- the plan: every conversion recorded --------------------------------------------------------------


def test_real_operand_of_a_complex_transform_is_converted_by_a_recorded_convert() -> None:
    g = rt.trace(lambda a: rt.fft.fft(a), np.ones(4, np.float32))
    assert "convert[to=c64]" in str(g) and "fft[fft_type='FFT' fft_lengths=(4,)]" in str(g)
    g = rt.trace(lambda a: rt.fft.rfft(a), np.ones(4, np.int32))
    assert "convert[to=f32]" in str(g) and "c64[3]" in str(g)


@pytest.mark.parametrize(
    ("policy", "dtype", "fft_type", "expected"),
    [
        ("jax", rt.int32, "FFT", rt.complex64), ("jax", rt.int64, "IRFFT", rt.complex128),
        ("jax", rt.float32, "RFFT", rt.float32), ("jax", rt.bfloat16, "IFFT", rt.complex64),
        ("numpy", rt.int8, "FFT", rt.complex128), ("numpy", rt.int8, "RFFT", rt.float64),
        ("torch", rt.int64, "FFT", rt.complex64), ("tenferro", rt.int32, "RFFT", rt.float64),
        ("jax", rt.complex64, "IRFFT", rt.complex64),
    ],
)  # fmt: skip
def test_plan_of_the_operand(policy: str, dtype: rt.DType, fft_type: str, expected: rt.DType) -> None:
    assert plan(ops.fft, (dtype,), policy, {"fft_type": fft_type, "fft_lengths": (4,)}) == (expected,)


def test_numpy_policy_computes_integers_in_double_as_numpy_fft() -> None:
    x = np.arange(6, dtype=np.int16)
    with rt.use_policy("numpy"):
        assert_close(rt.fft.fft(x), np.fft.fft(x), "fft")
        assert_close(rt.fft.irfft(x), np.fft.irfft(x), "irfft")


@pytest.mark.parametrize("policy", ["kael", "neuron"])
def test_policies_without_complex_dtypes_refuse_every_transform(policy: str) -> None:
    with rt.use_policy(policy):
        for name in ("fft", "rfft", "irfft"):
            with pytest.raises(rt.PromotionError, match=rf"fft\.{name}: .*policy '{policy}' has no complex dtypes"):
                getattr(rt.fft, name)(np.ones(4, np.float32))


def test_strict_refuses_integers_but_transforms_floats() -> None:
    with rt.use_policy("strict"):
        with pytest.raises(rt.PromotionError, match="fft.fft: .*int32.*convert explicitly"):
            rt.fft.fft(np.ones(4, np.int32))
        assert rt.fft.fft(np.ones(4, np.float32)).dtype is rt.complex64


def test_lax_fft_takes_jax_s_fft_type_enum_and_refuses_unknown_types() -> None:
    x = data(np.complex128, (2, 4))
    assert_close(rt.lax.fft(x, jax.lax.FftType.IFFT, (4,)), jax.lax.fft(x, "IFFT", (4,)), "lax.fft")
    with pytest.raises(rt.ShapeError, match="fft: fft_type must be one of FFT, IFFT, RFFT, IRFFT"):
        rt.lax.fft(x, "DCT", (4,))
    with pytest.raises(rt.ShapeError, match="fft: an IRFFT of fft_lengths .* needs innermost dimensions"):
        rt.lax.fft(x, "IRFFT", (4,))


# -- derivatives -------------------------------------------------------------------------------------

#: (fft_type, operand shape, fft_lengths, complex operand)
LAX_CASES = [
    ("FFT", (3, 4), (4,), True),
    ("FFT", (2, 3, 4), (2, 3, 4), True),
    ("IFFT", (3, 5), (3, 5), True),
    ("RFFT", (3, 4), (4,), False),
    ("RFFT", (2, 5), (2, 5), False),
    ("RFFT", (2, 2, 3, 3), (2, 3, 3), False),
    ("IRFFT", (3, 3), (4,), True),
    ("IRFFT", (2, 3), (5,), True),
    ("IRFFT", (2, 3, 3), (3, 4), True),
    ("IRFFT", (2, 1), (1,), True),
]
LAX_IDS = [f"{t}-{'x'.join(map(str, s))}-{'x'.join(map(str, n))}" for t, s, n, _ in LAX_CASES]


@pytest.mark.parametrize(("fft_type", "shape", "lengths", "cplx"), LAX_CASES, ids=LAX_IDS)
def test_lax_fft_primal_jvp_vjp_match_jax(fft_type: str, shape: Any, lengths: Any, cplx: bool) -> None:
    x = data(np.complex128 if cplx else np.float64, shape)
    check_against_jax(lambda a: rt.lax.fft(a, fft_type, lengths), lambda a: jax.lax.fft(a, fft_type, lengths), [x])


@pytest.mark.parametrize(("fft_type", "shape", "lengths", "cplx"), LAX_CASES, ids=LAX_IDS)
def test_lax_fft_derivatives_match_finite_differences(fft_type: str, shape: Any, lengths: Any, cplx: bool) -> None:
    x = data(np.complex128 if cplx else np.float64, shape)
    check_grads(lambda a: rt.lax.fft(a, fft_type, lengths), [x], order=2)


def test_real_operand_of_a_complex_transform_gets_a_real_cotangent() -> None:
    x = data(np.float64, (4,))
    check_against_jax(lambda a: rt.lax.fft(a, "FFT", (4,)), lambda a: jax.lax.fft(a, "FFT", (4,)), [x])
    _, back = ad.vjp(lambda a: rt.lax.fft(a, "IRFFT", (6,)), rt.asarray(x))
    (ct,) = back(rt.asarray(data(np.float64, (6,))))
    assert ct.dtype is rt.float64


def test_inactive_operand_gives_a_symbolic_zero_tangent() -> None:
    """The tangent of a transform of a constant is a symbolic zero: no transform runs for it."""
    c = rt.asarray(data(np.complex128, (4,)))

    def f(a: rt.Tensor) -> rt.Tensor:
        return rt.add(rt.lax.fft(c, "FFT", (4,)), a)

    g = rt.trace(lambda a, t: ad.jvp(f, (a,), (t,))[1], data(np.complex128, (4,)), data(np.complex128, (4,)))
    assert "fft" not in str(g)


NAMESPACE_GRADS: list[tuple[Callable[..., Any], Callable[..., Any], tuple[int, ...], bool]] = [
    (lambda x: rt.fft.fft(x, n=6, norm="ortho"), lambda x: jnp.fft.fft(x, n=6, norm="ortho"), (2, 4), True),
    (lambda x: rt.fft.rfft(x, n=5, axis=0), lambda x: jnp.fft.rfft(x, n=5, axis=0), (4, 3), False),
    (lambda x: rt.fft.irfft(x, n=5, norm="forward"), lambda x: jnp.fft.irfft(x, n=5, norm="forward"), (2, 3), True),
    (lambda x: rt.fft.hfft(x), lambda x: jnp.fft.hfft(x), (2, 4), True),
    (lambda x: rt.fft.ihfft(x, norm="ortho"), lambda x: jnp.fft.ihfft(x, norm="ortho"), (2, 5), False),
    (lambda x: rt.fft.rfftn(x, axes=(0, 2)), lambda x: jnp.fft.rfftn(x, axes=(0, 2)), (2, 3, 4), False),
    (lambda x: rt.fft.irfftn(x, s=(3, 4)), lambda x: jnp.fft.irfftn(x, s=(3, 4)), (2, 3, 3), True),
    (lambda x: rt.fft.ifft2(x, s=(2, 5)), lambda x: jnp.fft.ifft2(x, s=(2, 5)), (3, 4), True),
    (lambda x: rt.fft.fftshift(rt.fft.fft(x)), lambda x: jnp.fft.fftshift(jnp.fft.fft(x)), (5,), True),
]


@pytest.mark.parametrize(("ours", "theirs", "shape", "cplx"), NAMESPACE_GRADS)
def test_namespace_derivatives_match_jax_and_finite_differences(
    ours: Callable[..., Any], theirs: Callable[..., Any], shape: tuple[int, ...], cplx: bool
) -> None:
    x = data(np.complex128 if cplx else np.float64, shape)
    # a namespace function is several primitives: JAX's twin compiled whole, not one program per primitive
    check_against_jax(ours, jax_oracles.jitted(theirs), [x])
    check_grads(ours, [x], order=1)


# -- vmap and jit ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("fft_type", "shape", "lengths", "cplx"), LAX_CASES, ids=LAX_IDS)
def test_vmap_matches_jax_vmap_for_every_batch_position(fft_type: str, shape: Any, lengths: Any, cplx: bool) -> None:
    xs = data(np.complex128 if cplx else np.float64, (3, *shape))
    ours = lambda a: rt.lax.fft(a, fft_type, lengths)  # noqa: E731
    theirs = lambda a: jax.lax.fft(a, fft_type, lengths)  # noqa: E731
    for axis in range(len(shape) + 1):  # before, among and after the transformed axes
        moved = np.moveaxis(xs, 0, axis)
        got = ad.vmap(ours, in_axes=axis)(rt.asarray(moved))
        assert_close(got, jax.vmap(theirs, in_axes=axis)(moved), f"vmap in_axes={axis}")


def test_vmap_of_the_namespace_matches_jax_vmap() -> None:
    xs = data(np.float32, (3, 4, 6))
    assert_close(ad.vmap(lambda a: rt.fft.rfft2(a, norm="ortho"), in_axes=1)(rt.asarray(xs)),
                 jax.vmap(lambda a: jnp.fft.rfft2(a, norm="ortho"), in_axes=1)(xs), "vmap rfft2")  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.float64, np.complex128, np.int32])
def test_jit_agrees_with_eager(dtype: Any) -> None:
    """autodiff.jit lowers to XLA's transforms, eager runs pocketfft in the same precision: they agree
    to that precision's rounding (single stays single on both sides)."""
    x = data(dtype, (3, 8))

    def f(a: rt.Tensor) -> tuple[rt.Tensor, ...]:
        return rt.fft.fft(a), rt.fft.irfft(rt.fft.rfft2(rt.real(rt.fft.ifft(a)), norm="ortho"), n=5), rt.fft.hfft(a)

    eager, jitted = f(rt.asarray(x)), ad.jit(f)(rt.asarray(x))
    for e, j in zip(eager, jitted, strict=True):
        assert e.dtype is j.dtype and e.shape == j.shape
        assert_close(j, e.numpy(), "jit")


def test_grad_of_a_spectral_loss_matches_jax_grad() -> None:
    x = data(np.float64, (8,))

    def ours(a: rt.Tensor) -> rt.Tensor:
        return rt.sum(rt.abs(rt.fft.rfft(a, norm="ortho")) ** 2)

    def theirs(a: Any) -> Any:
        return jnp.sum(jnp.abs(jnp.fft.rfft(a, norm="ortho")) ** 2)

    got = ad.grad(ours)(rt.asarray(x))
    np.testing.assert_allclose(got.numpy(), np.asarray(jax.grad(theirs)(x)), rtol=1e-12, atol=1e-12)


def test_a_traced_length_is_refused_and_an_untracked_one_is_read() -> None:
    """``n`` decides the result's shape: a 0-d Tensor is read eagerly, a traced one raises
    ``ConcretizationError`` naming the function and the parameter, as jax.jit would."""
    n = rt.asarray(6)
    assert rt.fft.fft(np.ones(4), n=n).shape == (6,) and rt.fft.fftfreq(n).shape == (6,)
    with pytest.raises(rt.ConcretizationError, match="fft.fft: n is traced"):
        ad.jit(lambda x, k: rt.fft.fft(x, n=k))(rt.asarray(np.ones(4)), n)
    with pytest.raises(rt.ConcretizationError, match="fft.rfftn: s is traced"):
        ad.jit(lambda x, k: rt.fft.rfftn(x, s=(k,)))(rt.asarray(np.ones(4)), n)
