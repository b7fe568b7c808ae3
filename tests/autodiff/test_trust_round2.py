"""A second adversarial review: silent wrong answers where a transform kept stale state.

* ``autodiff.jit``'s caches were keyed by the promotion policy's *name*: a policy registered
  again under that name kept the compiled programs of the old one.
* ``vmap`` of a ``custom_vjp`` ran the call once per example but gave every example the
  residuals ``fwd`` saved for example 0, so reverse mode through it used example 0's.
* Custom rules read what they close over when they run (at backward, at a jvp, when ``jit``
  lowers them), outside the version counters: a residual or a closed-over constant written in
  place after the call was recorded went into the derivative with its new value.

Each test fails on the code before the fix; the oracle is JAX (x64), eager castwise or an
exact value.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from runtime import functions as F  # noqa: E402
from runtime.promotion import LatticePolicy, get_policy_object, register_policy, use_policy  # noqa: E402
from runtime.tensor import Tensor  # noqa: E402


def S(t: Tensor) -> Tensor:
    return F.reduce_sum(t, tuple(range(t.ndim)))


def close(got: Any, want: Any) -> None:
    got = got.numpy() if isinstance(got, Tensor) else got
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)


# -- (a) jit keys its caches by the policy object, not its name ---------------------------------------------


@pytest.fixture
def strict_policy() -> Iterator[Any]:
    """``register(target)`` registers a policy named "strict" whose every promotion gives
    ``target``; the real "strict" is registered again afterwards."""
    original = get_policy_object("strict")

    def register(target: rt.DType) -> None:
        class Fixed(LatticePolicy):
            name = "strict"

            def _promote(self, a: rt.DType, b: rt.DType) -> rt.DType | None:
                return target

        register_policy(Fixed())

    try:
        yield register
    finally:
        register_policy(original)


def test_jit_follows_a_policy_registered_again_under_the_same_name(strict_policy: Any) -> None:
    a, b = rt.asarray(np.full(2, 1.5, np.float32)), rt.asarray(np.full(2, 2.0))
    mul = autodiff.jit(lambda x, y: x * y)
    plain = b.numpy()  # a NumPy argument: the general path
    strict_policy(rt.float64)
    with use_policy("strict"):
        for _ in range(2):  # the second call takes the per-call path
            assert mul(a, b).dtype is rt.float64
            assert mul(a, plain).dtype is rt.float64
    strict_policy(rt.float32)
    with use_policy("strict"):
        for _ in range(2):
            want = a * b  # eager, under the policy registered now
            assert want.dtype is rt.float32
            got = mul(a, b)
            assert got.dtype is want.dtype, "a program compiled under the replaced policy was served"
            close(got, want.numpy())
            assert mul(a, plain).dtype is rt.float32
    assert mul.traces == 4  # two signatures (Tensor, NumPy argument) under each policy
