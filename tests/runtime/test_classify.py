"""One classification of operands: NumPy scalars are strong everywhere.

``np.float64`` and ``np.complex128`` subclass Python's ``float`` and
``complex``, but they carry a dtype: JAX and NumPy 2 (NEP 50) treat them as
strong 0-d values, never as weak Python scalars. ``result_type``,
``promote_types``, the plan of every eager op and every policy must agree.
Oracles: ``jax.numpy.result_type`` (x64; strict mode for ``jax-strict``) and
``numpy.result_type``; for the other policies, the policy's own answer for a
strong 0-d value of the scalar's dtype.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import runtime as rt
from runtime.core.promotion import PromotionError, classify

POLICY_NAMES = rt.policies()
#: every dtype with a NumPy / ml_dtypes scalar type of its own (float32r is stored as float32)
SCALAR_DTYPES = tuple(d for d in rt.ALL_DTYPES if d is not rt.float32r)
#: the Python int is 0 so that its value fits every integer dtype (int1 holds only -1 and 0):
#: these tests are about the dtype a scalar is classified as, not about its range
PY_SCALARS = (True, 0, 1.5, 1j)
ERR = "error"


def np_scalar(d: rt.DType) -> Any:
    """A NumPy (or ml_dtypes) scalar of dtype ``d``."""
    s = np.ones((), d.storage)[()]
    assert isinstance(s, np.generic) and not isinstance(s, np.ndarray)
    return s


def ours_result(*xs: Any, policy: str) -> Any:
    try:
        return rt.result_type(*xs, policy=policy)
    except PromotionError:
        return ERR


def ours_eager(a: Any, b: Any, policy: str) -> Any:
    """The dtype ``select`` gives its two promoted operands (a NumPy scalar or a Python
    scalar goes through the executor's classification): select takes every dtype."""
    try:
        with rt.use_policy(policy):
            return rt.lax.select(np.bool_(True), a, b).dtype
    except PromotionError:
        return ERR


def jax_result(*xs: Any, mode: str) -> Any:
    with jax.enable_x64(True), jax.numpy_dtype_promotion(mode):
        try:
            return rt.dtype(jnp.result_type(*xs))
        except (TypeError, jax.dtypes.TypePromotionError):
            return ERR


# -- the example ----------------------------------------------------------------


@pytest.mark.parametrize("policy", ["jax", "numpy", "torch", "neuron", "tenferro"])
def test_numpy_float64_scalar_is_strong_in_result_type_and_add(policy: str) -> None:
    a, b = np.float64(0), np.float32(0)
    assert rt.result_type(a, b, policy=policy) is rt.float64
    with rt.use_policy(policy):
        assert rt.add(a, b).dtype is rt.float64
    # a Python float is weak where the policy has weak scalars: float32 wins there
    assert rt.result_type(0.0, b, policy="jax") is rt.float32


def test_classify_keys_weak_scalars_on_the_exact_type() -> None:
    for value, kind in ((True, "bool"), (1, "int"), (1.0, "float"), (1j, "complex")):
        op = classify(value)
        assert op.pykind == kind and op.dtype is None
    for d in SCALAR_DTYPES:
        op = classify(np_scalar(d))
        assert op.pykind is None and op.dtype is d and op.zero_dim, d


def test_promote_types_takes_numpy_scalars_as_their_dtype() -> None:
    assert rt.promote_types(np.float64(0), np.float32(0)) is rt.float64
    assert rt.promote_types(np.complex64(0), np.float64(0), policy="numpy") is rt.complex128
    with pytest.raises(TypeError, match="weak Python float"):
        rt.promote_types(1.0, rt.float32)


# -- every policy: result_type and the executor agree ----------------------------------------


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_result_type_and_the_executor_classify_numpy_scalars_alike(policy: str) -> None:
    mismatches = []
    for a in SCALAR_DTYPES:
        sa = np_scalar(a)
        partners: list[Any] = [np_scalar(b) for b in SCALAR_DTYPES] + list(PY_SCALARS)
        for sb in partners:
            want = ours_result(sa, sb, policy=policy)
            # a NumPy scalar is what a strong 0-d tensor of its dtype is
            strong = ours_result(rt.asarray(np.asarray(sa)), sb, policy=policy)
            got = ours_eager(sa, sb, policy)
            if want == ERR and isinstance(sb, np.generic) and classify(sb).dtype is a:
                # operands that already share a dtype ask the policy nothing (docs/promotion.md)
                want = strong = a
            if not (want == strong == got):
                mismatches.append((a.name, repr(sb), str(want), str(strong), str(got)))
    assert not mismatches, mismatches[:20]


# -- the libraries as oracles ---------------------------------------------------------------


@pytest.mark.parametrize(("policy", "mode"), [("jax", "standard"), ("jax-strict", "strict")])
def test_numpy_scalars_match_jax(policy: str, mode: str) -> None:
    mismatches = []
    for a in SCALAR_DTYPES:
        sa = np_scalar(a)
        for sb in [np_scalar(b) for b in SCALAR_DTYPES] + list(PY_SCALARS):
            want = jax_result(sa, sb, mode=mode)
            got = ours_result(sa, sb, policy=policy)
            if want != got:
                mismatches.append((a.name, repr(sb), str(want), str(got)))
    assert not mismatches, mismatches[:20]


#: the dtypes NumPy itself has (its policy's dtypes)
NUMPY_NATIVE = rt.get_policy_object("numpy").dtypes


def test_numpy_scalars_match_numpy() -> None:
    mismatches = []
    for a in NUMPY_NATIVE:
        sa = np_scalar(a)
        for sb in [np_scalar(b) for b in NUMPY_NATIVE] + list(PY_SCALARS):
            want = rt.dtype(np.result_type(sa, sb))
            got = ours_result(sa, sb, policy="numpy")
            if want != got:
                mismatches.append((a.name, repr(sb), str(want), str(got)))
    assert not mismatches, mismatches[:20]


# -- refusals carry the policy's reason --------------------------------------------------------

REFUSALS = [
    ("jax", rt.bfloat16, rt.float8_e4m3fn, "8-bit floats do not support implicit promotion"),
    ("jax", rt.int4, rt.int8, "4-bit integers do not support implicit promotion"),
    ("jax-strict", rt.float32, rt.float64, "strict mode allows no implicit promotion"),
]


@pytest.mark.parametrize(("policy", "a", "b", "reason"), REFUSALS, ids=lambda x: str(x))
def test_result_type_refusal_carries_the_reason(policy: str, a: rt.DType, b: rt.DType, reason: str) -> None:
    for operands in ((a, b), (np_scalar(a), np_scalar(b)), (np.zeros(3, a.storage), b)):
        with pytest.raises(PromotionError, match=reason) as info:
            rt.result_type(*operands, policy=policy)
        assert repr(policy) in str(info.value)


@pytest.mark.parametrize(("policy", "a", "b", "reason"), REFUSALS, ids=lambda x: str(x))
def test_eager_refusal_carries_the_reason_op_and_policy(policy: str, a: rt.DType, b: rt.DType, reason: str) -> None:
    cases = [
        (rt.asarray(np.ones(3, a.storage), dtype=a), rt.asarray(np.ones(3, b.storage), dtype=b)),
        (np_scalar(a), np_scalar(b)),
        (rt.asarray(np.ones((), a.storage), dtype=a), np_scalar(b)),
    ]
    with rt.use_policy(policy):
        for x, y in cases:
            with pytest.raises(PromotionError, match=reason) as info:
                rt.add(x, y)
            assert "add" in str(info.value) and repr(policy) in str(info.value)


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_identical_dtypes_run_under_every_policy(policy: str) -> None:
    """docs/promotion.md: a policy decides mixes; operands sharing a dtype run everywhere,
    so a backward pass under another policy than its forward pass never fails on them."""
    for d in (rt.bfloat16, rt.float32r, rt.float8_e4m3fn):
        x = rt.asarray(np.ones(3, d.storage), dtype=d)
        with rt.use_policy(policy):
            assert rt.lax.max(x, x).dtype is d
            assert rt.lax.select(np.ones(3, bool), x, x).dtype is d


def test_backward_under_another_policy_than_the_forward_pass() -> None:
    import autodiff  # noqa: F401  (installs backward)

    with rt.use_policy("neuron"):
        w = rt.asarray(np.ones(3, np.float32), dtype=rt.float32r, requires_grad=True)
        loss = rt.lax.reduce_sum(w * w * w, (0,))
    loss.backward()  # under jax, which does not know float32r
    assert w.grad is not None and w.grad.dtype is rt.float32r
    np.testing.assert_allclose(np.asarray(w.grad), 3.0)


def test_weak_refusal_under_jax_strict_carries_the_reason() -> None:
    with pytest.raises(PromotionError, match="strict mode allows no implicit promotion"):
        rt.result_type(rt.float32, 1j, policy="jax-strict")
    with rt.use_policy("jax-strict"), pytest.raises(PromotionError, match="strict mode") as info:
        rt.add(rt.asarray(np.ones(2, np.float32)), 1j)
    assert "'jax-strict'" in str(info.value)
