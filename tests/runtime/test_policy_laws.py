"""Algebraic laws of the promotion policies.

``promote_types`` is checked exhaustively (29 x 29 pairs, 29^3 triples: well
under a second per policy). Associativity is asserted only where the policy's
reference is associative; where the reference itself is not (JAX's and NumPy's
pairwise ``promote_types``, torch's table once the "barebones" unsigned types
are in, Neuron's decision tree) a test pins a concrete counterexample, checked
against the real library where one is installed, so that a change is noticed.
``result_type`` with mixed operands (dtypes, Python scalars, 0-d arrays) is
checked with Hypothesis: independent of operand order, and equal to the oracle.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import runtime
from tests.runtime.policy_helpers import ERR, promote, result

POLICY_NAMES = ("jax", "jax-strict", "numpy", "torch", "neuron", "tenferro", "strict", "kael")
ASSOCIATIVE = ("jax-strict", "tenferro", "strict", "kael")
SCALARS = (True, 1, 1.0, 1j)
TORCH_C10 = tuple(
    runtime.dtype(n)
    for n in (
        "bool", "uint8", "int8", "int16", "int32", "int64",
        "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    )
)  # fmt: skip


def policy_dtypes(name):
    return runtime.get_policy_object(name).dtypes


def associativity_failures(policy, dtypes, *, definedness=True):
    """Triples where (a.b).c and a.(b.c) differ.

    With ``definedness`` a triple where exactly one grouping fails counts too;
    without it only triples where both groupings succeed are compared.
    """
    failures = []
    for a, b, c in itertools.product(dtypes, repeat=3):
        ab, bc = promote(a, b, policy), promote(b, c, policy)
        left = ERR if ab is ERR else promote(ab, c, policy)
        right = ERR if bc is ERR else promote(a, bc, policy)
        if left is right:
            continue
        if definedness or (left is not ERR and right is not ERR):
            failures.append((a, b, c, left, right))
    return failures


# -- commutativity and idempotence (every policy, exhaustive) ------------------


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_promote_types_is_commutative(policy):
    asymmetric = []
    for a in runtime.ALL_DTYPES:
        for b in runtime.ALL_DTYPES:
            if promote(a, b, policy) is not promote(b, a, policy):
                asymmetric.append((a.name, b.name))
    assert asymmetric == []


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_promote_types_is_idempotent_on_the_policy_dtypes(policy):
    dtypes = policy_dtypes(policy)
    assert dtypes, policy
    for a in dtypes:
        assert runtime.promote_types(a, a, policy=policy) is a


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_results_stay_inside_the_policy(policy):
    known = set(policy_dtypes(policy))
    for a in runtime.ALL_DTYPES:
        for b in runtime.ALL_DTYPES:
            r = promote(a, b, policy)
            if r is not ERR:
                assert a in known and b in known and r in known, (a, b, r)


# -- associativity -----------------------------------------------------------


@pytest.mark.parametrize("policy", ASSOCIATIVE)
def test_promote_types_is_associative(policy):
    assert associativity_failures(policy, policy_dtypes(policy)) == []


def test_jax_promote_types_is_associative_without_uint64():
    dtypes = [d for d in policy_dtypes("jax") if d is not runtime.uint64]
    assert associativity_failures("jax", dtypes) == []


def test_jax_promote_types_is_not_associative_with_uint64_and_neither_is_jax():
    # int8 v uint64 is the weak float node, which promote_types turns into
    # float64; JAX does the same, so the grouping matters in JAX too.
    a, b, c = runtime.int8, runtime.uint64, runtime.bfloat16
    assert promote(promote(a, b, "jax"), c, "jax") is runtime.float64
    assert promote(a, promote(b, c, "jax"), "jax") is runtime.bfloat16
    with jax.enable_x64(True):
        assert jnp.promote_types(jnp.promote_types(a.storage, b.storage), c.storage) == np.float64
        assert jnp.promote_types(a.storage, jnp.promote_types(b.storage, c.storage)) == jnp.bfloat16
        # the n-ary result_type takes the least upper bound of all three
        assert runtime.dtype(jnp.result_type(a.storage, b.storage, c.storage)) is runtime.bfloat16
    for order in itertools.permutations((a, b, c)):
        assert runtime.result_type(*order, policy="jax") is runtime.bfloat16
    failures = associativity_failures("jax", policy_dtypes("jax"))
    assert failures
    assert all(runtime.uint64 in f[:3] for f in failures)


def test_numpy_promote_types_is_not_associative_and_neither_is_numpy():
    a, b, c = runtime.int8, runtime.uint8, runtime.float16
    assert promote(promote(a, b, "numpy"), c, "numpy") is runtime.float32
    assert promote(a, promote(b, c, "numpy"), "numpy") is runtime.float16
    assert np.promote_types(np.promote_types(np.int8, np.uint8), np.float16) == np.float32
    assert np.promote_types(np.int8, np.promote_types(np.uint8, np.float16)) == np.float16
    # np.result_type is order-independent and so is ours
    assert np.result_type(np.int8, np.uint8, np.float16) == np.float16
    for order in itertools.permutations((a, b, c)):
        assert runtime.result_type(*order, policy="numpy") is runtime.float16
    assert associativity_failures("numpy", policy_dtypes("numpy"))


def test_torch_c10_table_is_associative():
    assert associativity_failures("torch", TORCH_C10) == []


def test_torch_groupings_agree_whenever_both_succeed():
    assert associativity_failures("torch", policy_dtypes("torch"), definedness=False) == []


def test_torch_associativity_counterexample_with_barebones_unsigned():
    # uint8 v uint4 raises in torch (uint4 promotes only with floats), but
    # uint4 v float16 is float16 and uint8 v float16 is float16.
    a, b, c = runtime.uint8, runtime.uint4, runtime.float16
    assert promote(a, b, "torch") is ERR
    assert promote(a, promote(b, c, "torch"), "torch") is runtime.float16
    failures = associativity_failures("torch", policy_dtypes("torch"))
    assert (a, b, c, ERR, runtime.float16) in failures


def test_neuron_associativity_counterexamples():
    # mixed-sign escape: (int8 v uint32) v int64 = float32 v int64 = float32,
    # but int8 v (uint32 v int64) = int8 v int64 = int64
    a, b, c = runtime.int8, runtime.uint32, runtime.int64
    assert promote(promote(a, b, "neuron"), c, "neuron") is runtime.float32
    assert promote(a, promote(b, c, "neuron"), "neuron") is runtime.int64
    # bool meets an int only through a float: (bool v int8) v float16 raises,
    # but bool v (int8 v float16) = bool v float16 = float16
    assert promote(runtime.bool_, runtime.int8, "neuron") is ERR
    via_float = promote(runtime.int8, runtime.float16, "neuron")
    assert promote(runtime.bool_, via_float, "neuron") is runtime.float16
    failures = associativity_failures("neuron", policy_dtypes("neuron"), definedness=False)
    assert (a, b, c, runtime.float32, runtime.int64) in failures


# -- result_type: order independence and the oracles (Hypothesis) --------------

JAX_DTYPES = tuple(d for d in runtime.ALL_DTYPES if d is not runtime.float32r)
NUMPY_NATIVE = policy_dtypes("numpy")


def operands_strategy(dtypes):
    dtype = st.sampled_from(dtypes)
    return st.lists(
        st.one_of(
            dtype,
            st.sampled_from(SCALARS),
            dtype.map(lambda d: np.zeros((), d.storage)),
        ),
        min_size=1,
        max_size=5,
    )


def _for_oracle(x):
    return x.storage if isinstance(x, runtime.DType) else x


def _oracle(fn, operands):
    try:
        return runtime.dtype(fn(*[_for_oracle(x) for x in operands]))
    except (TypeError, jax.dtypes.TypePromotionError):
        return ERR


@pytest.mark.parametrize(("policy", "mode"), [("jax", "standard"), ("jax-strict", "strict")])
def test_jax_result_type_of_every_triple_matches_jax(policy, mode):
    # Exhaustive over dtypes and Python scalars (32^3 triples, about a second).
    items = [*JAX_DTYPES, *SCALARS]
    mismatches = []
    with jax.enable_x64(True), jax.numpy_dtype_promotion(mode):
        for triple in itertools.product(items, repeat=3):
            expected = _oracle(jnp.result_type, triple)
            if result(*triple, policy=policy) is not expected:
                mismatches.append((triple, str(expected)))
    assert mismatches == []


def test_numpy_result_type_of_every_triple_matches_numpy():
    # Exhaustive over native dtypes, Python scalars and 0-d arrays (32^3 triples).
    items = [*NUMPY_NATIVE, *SCALARS, *(np.zeros((), d.storage) for d in NUMPY_NATIVE)]
    mismatches = []
    for triple in itertools.product(items, repeat=3):
        expected = _oracle(np.result_type, triple)
        if result(*triple, policy="numpy") is not expected:
            mismatches.append((triple, str(expected)))
    assert mismatches == []


@pytest.mark.parametrize(("policy", "mode"), [("jax", "standard"), ("jax-strict", "strict")])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_jax_result_type_is_order_independent_and_matches_jax(policy, mode, data):
    operands = data.draw(operands_strategy(JAX_DTYPES), label="operands")
    shuffled = data.draw(st.permutations(operands), label="shuffled")
    with jax.enable_x64(True), jax.numpy_dtype_promotion(mode):
        expected = _oracle(jnp.result_type, operands)
    assert result(*operands, policy=policy) is expected
    assert result(*shuffled, policy=policy) is expected


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_numpy_result_type_is_order_independent_and_matches_numpy(data):
    operands = data.draw(operands_strategy(NUMPY_NATIVE), label="operands")
    shuffled = data.draw(st.permutations(operands), label="shuffled")
    expected = _oracle(np.result_type, operands)
    assert result(*operands, policy="numpy") is expected
    assert result(*shuffled, policy="numpy") is expected


@pytest.mark.parametrize(
    ("policy", "dtypes"),
    [("torch", TORCH_C10), ("tenferro", policy_dtypes("tenferro")), ("strict", runtime.ALL_DTYPES)],
    ids=["torch-c10", "tenferro", "strict"],
)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_result_type_is_order_independent(policy, dtypes, data):
    operands = data.draw(operands_strategy(dtypes), label="operands")
    shuffled = data.draw(st.permutations(operands), label="shuffled")
    assert result(*operands, policy=policy) is result(*shuffled, policy=policy)


@pytest.mark.parametrize("policy", POLICY_NAMES)
@settings(max_examples=60, deadline=None)
@given(scalars=st.lists(st.sampled_from(SCALARS), min_size=1, max_size=4), data=st.data())
def test_scalar_only_result_type_is_order_independent(policy, scalars, data):
    shuffled = data.draw(st.permutations(scalars))
    assert result(*scalars, policy=policy) is result(*shuffled, policy=policy)


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_result_type_of_two_dtypes_is_promote_types(policy):
    # For strong, dimensioned operands result_type is exactly promote_types.
    for a in runtime.ALL_DTYPES:
        for b in runtime.ALL_DTYPES:
            assert result(a, b, policy=policy) is promote(a, b, policy), (a, b)
