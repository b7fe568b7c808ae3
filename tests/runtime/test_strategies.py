"""``runtime.testing.strategies``: each strategy draws what it promises, under every policy."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

import runtime as rt
from runtime.core.dtypes import DType
from runtime.core.tensor import Tensor
from runtime.testing import strategies as cst

POLICIES = rt.policies()
MIXING = [p for p in POLICIES if p not in ("strict", "jax-strict")]
FAST = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check_tensor(t: Tensor, dtype: DType) -> None:
    """A tensor of ``dtype``, small shape, finite moderate values (the defaults' promise)."""
    assert isinstance(t, Tensor) and t.dtype is dtype
    assert t.numpy().dtype == dtype.storage
    assert t.ndim <= 3 and all(1 <= s <= 4 for s in t.shape)
    values = t.numpy().astype(np.complex128 if dtype.kind == "complex" else np.float64)
    assert np.all(np.isfinite(values))
    if dtype.kind == "bool":
        return
    if dtype.is_integer:
        assert np.all(np.abs(values) <= cst.INT_BOUND)
        assert dtype.kind == "int" or np.all(values >= 0)
    else:
        assert np.all(np.abs(values.real) <= cst.MAX_MAGNITUDE) and np.all(np.abs(values.imag) <= cst.MAX_MAGNITUDE)
    if dtype.name == "float8_e8m0fnu":
        assert np.all(values > 0)


# -- dtypes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", POLICIES)
@FAST
@given(data=st.data())
def test_dtypes_are_the_policys_own(policy: str, data: st.DataObject) -> None:
    pol = rt.get_policy_object(policy)
    assert data.draw(cst.dtypes(policy)) in pol.dtypes
    inexact = data.draw(cst.dtypes(pol, kinds="inexact"))
    assert inexact in pol.dtypes and inexact.is_inexact
    integer = data.draw(cst.dtypes(policy, kinds=["integer", "bool"]))
    assert integer.kind in ("int", "uint", "bool")


@pytest.mark.parametrize("policy", POLICIES)
def test_every_dtype_of_a_policy_can_be_drawn(policy: str) -> None:
    pol = rt.get_policy_object(policy)
    for target in (pol.dtypes[0], pol.dtypes[-1]):

        def is_target(d: DType, target: DType = target) -> bool:
            return d is target

        assert find(cst.dtypes(policy), is_target) is target


def test_dtypes_default_to_the_policy_active_when_built() -> None:
    with rt.use_policy("tenferro"):
        strategy = cst.dtypes()
    tenferro = rt.get_policy_object("tenferro").dtypes
    assert find(strategy, lambda d: True) in tenferro
    with pytest.raises(NoSuchExample):
        find(strategy, lambda d: d is rt.bfloat16)  # a jax dtype, not a tenferro one


def test_dtypes_refuse_unknown_kinds_and_empty_selections() -> None:
    with pytest.raises(ValueError, match="unknown dtype kind 'real'"):
        cst.dtypes(kinds="real")
    with pytest.raises(ValueError, match="knows no dtype"):
        cst.dtypes("neuron", kinds="complex")
    with pytest.raises(ValueError, match="unknown promotion policy"):
        cst.dtypes("nope")


# -- tensors --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", rt.ALL_DTYPES, ids=lambda d: d.short)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_tensors_of_every_dtype_are_small_finite_and_moderate(dtype: DType, data: st.DataObject) -> None:
    _check_tensor(data.draw(cst.tensors(dtype)), dtype)
    _check_tensor(data.draw(cst.tensors(dtype.name)), dtype)  # names work too


@FAST
@given(data=st.data())
def test_tensors_take_a_fixed_shape_a_shape_strategy_elements_and_a_dtype_strategy(data: st.DataObject) -> None:
    assert data.draw(cst.tensors(rt.float32, shape=(2, 3))).shape == (2, 3)
    assert data.draw(cst.tensors(rt.int8, shape=())).shape == ()
    t = data.draw(cst.tensors(rt.float64, shape=cst.shapes(2, 2, 5, 5)))
    assert t.shape == (5, 5)
    ones = data.draw(cst.tensors(rt.float16, shape=(3,), elements=st.just(1.0)))
    assert ones.dtype is rt.float16 and np.all(ones.numpy() == 1)
    mixed = data.draw(cst.tensors(cst.dtypes("torch", kinds="complex"), shape=(2,)))
    assert mixed.dtype in (rt.complex32, rt.complex64, rt.complex128)  # torch has complex32, not bcomplex32


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(t=cst.tensors(rt.float8_e4m3fn, shape=(2,), elements=st.sampled_from([1.0, 1e6])))
def test_tensors_never_hold_non_finite_values_even_from_custom_elements(t: Tensor) -> None:
    # float8_e4m3fn has no infinity: 1e6 becomes NaN on storage, and such draws are rejected
    assert np.all(np.isfinite(t.numpy().astype(np.float32)))


def test_tensors_shrink_toward_zero() -> None:
    smallest = find(cst.tensors(rt.float64, shape=(3,)), lambda t: True)
    assert smallest.numpy().tolist() == [0.0, 0.0, 0.0]


# -- pairs ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", MIXING)
@FAST
@given(data=st.data())
def test_mixed_dtype_pairs_differ_and_promote(policy: str, data: st.DataObject) -> None:
    pol = rt.get_policy_object(policy)
    a, b = data.draw(cst.mixed_dtype_pairs(policy))
    assert a is not b and a in pol.dtypes and b in pol.dtypes
    assert rt.promote_types(a, b, policy=policy) in pol.dtypes
    a, b = data.draw(cst.mixed_dtype_pairs(policy, kinds="inexact"))
    assert a.is_inexact and b.is_inexact and pol.can_promote(a, b)


@pytest.mark.parametrize("policy", MIXING)
def test_mixed_dtype_pairs_come_in_both_orders(policy: str) -> None:
    a, b = find(cst.mixed_dtype_pairs(policy), lambda p: True)
    assert find(cst.mixed_dtype_pairs(policy), lambda p: p == (b, a)) == (b, a)


@pytest.mark.parametrize("policy", ["strict", "jax-strict"])
def test_policies_without_implicit_promotion_have_no_mixed_pairs(policy: str) -> None:
    with pytest.raises(ValueError, match="promotes no pair of different dtypes"):
        cst.mixed_dtype_pairs(policy)
    with pytest.raises(ValueError, match="promotes no pair"):
        cst.operand_pairs(policy)


@pytest.mark.parametrize("policy", MIXING)
@FAST
@given(data=st.data())
def test_operand_pairs_share_a_shape_and_their_dtypes_promote(policy: str, data: st.DataObject) -> None:
    x, y = data.draw(cst.operand_pairs(policy))
    assert x.shape == y.shape and x.dtype is not y.dtype
    out_dtype = rt.promote_types(x.dtype, y.dtype, policy=policy)
    _check_tensor(x, x.dtype)
    _check_tensor(y, y.dtype)
    if policy == "jax" and x.ndim:
        # what the pairs are for: mixed-dtype ops promote as the policy says
        with rt.use_policy(policy):
            try:
                out = rt.add(x, y)
            except rt.KernelDTypeError:
                return  # no add kernel for this dtype (e.g. the narrow float formats)
        assert out.dtype is out_dtype


@FAST
@given(pair=cst.operand_pairs("numpy", kinds=["int", "float"], shape=(2, 2)))
def test_operand_pairs_take_kinds_and_shape(pair: tuple[Tensor, Tensor]) -> None:
    x, y = pair
    assert x.shape == y.shape == (2, 2)
    assert {x.dtype.kind, y.dtype.kind} <= {"int", "float"}


def test_shapes_respect_their_bounds() -> None:
    assert find(cst.shapes(1, 2, 3, 4), lambda s: len(s) == 2) == (3, 3)
    with pytest.raises(ValueError, match="bad bounds"):
        cst.shapes(min_dims=3, max_dims=1)


def test_importing_runtime_does_not_import_the_strategies_or_hypothesis() -> None:
    code = (
        "import sys, runtime, autodiff; "
        "assert 'runtime.testing' not in sys.modules and 'runtime.testing.strategies' not in sys.modules; "
        "assert 'hypothesis' not in sys.modules, 'hypothesis imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("dtype", [d for d in rt.ALL_DTYPES if d.is_integer and d.bits < 8], ids=lambda d: d.short)
def test_sub_byte_int_elements_reach_both_ends_of_the_range(dtype: DType) -> None:
    # ml_dtypes.iinfo is the oracle: int1 holds -1..0, uint2 0..3, int4 -8..7 (uint4 is clipped to 10)
    info = ml_dtypes.iinfo(dtype.storage)
    for end in (max(int(info.min), -cst.INT_BOUND), min(int(info.max), cst.INT_BOUND)):
        found = find(cst.tensors(dtype, shape=(1,)), lambda t, end=end: int(t.numpy().astype(np.int64)[0]) == end)
        assert found.dtype is dtype
