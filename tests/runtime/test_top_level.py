"""The NumPy-named conveniences are castwise's top-level names, as jnp.arange is jax.numpy's."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
from runtime.numpy import creation, manipulation, nn
from runtime.numpy import elementwise as numpy_elementwise

MODULES = [creation, manipulation, numpy_elementwise]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_every_convenience_is_exported_at_the_top_level(module: object) -> None:
    for name in module.__all__:  # type: ignore[attr-defined]
        assert getattr(rt, name) is getattr(module, name), name
        assert name in rt.__all__, name


def test_the_activations_stay_in_their_namespace() -> None:
    # rt.relu would read as an op of the vocabulary; jax keeps them in jax.nn too
    assert not any(hasattr(rt, name) for name in nn.__all__)
    np.testing.assert_array_equal(rt.nn.relu(rt.asarray([-1.0, 2.0])).numpy(), [0.0, 2.0])


def test_top_level_names_do_not_shadow_each_other() -> None:
    names = [n for m in MODULES for n in m.__all__]  # type: ignore[attr-defined]
    assert len(names) == len(set(names))
    from runtime.core.lax import __all__ as ops_names

    assert not set(names) & set(ops_names)
