"""What docs/tensor.md says about out-of-bounds indices under the ``jax`` policy, held against
jax.numpy: a static Python int raises in castwise (jax.numpy 0.10.2 clamps it, a documented
departure); an integer-array index is clamped and an ``.at`` update dropped, as jax.numpy's."""

from __future__ import annotations

import numpy as np
import pytest

import autodiff
import runtime as rt

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.mark.parametrize("index", [10, -6])
def test_static_int_raises_where_jax_clamps(index: int) -> None:
    j = jnp.arange(5.0)
    assert float(j[index]) == float(j[min(max(index, -5), 4)])  # jax.numpy clamps
    assert float(jax.jit(lambda a: a[index])(j)) == float(j[index])
    x = rt.arange(5.0)
    with rt.policy("jax"):
        with pytest.raises(IndexError, match="out of bounds"):
            x[index]
        with pytest.raises(IndexError, match="out of bounds"):
            autodiff.jit(lambda t: t[index])(x)


def test_integer_array_index_clamps_and_at_drops_as_jax() -> None:
    j, x = jnp.arange(5.0), rt.arange(5.0)
    with rt.policy("jax"):
        np.testing.assert_array_equal(x[rt.asarray([10, -7])].numpy(), np.asarray(j[jnp.array([10, -7])]))
        assert x[rt.asarray(10)].item() == float(j[jnp.asarray(10)])
        np.testing.assert_array_equal(x.at[10].set(9.0).numpy(), np.asarray(j.at[10].set(9.0)))
