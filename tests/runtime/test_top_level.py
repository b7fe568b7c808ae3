"""The NumPy-named layer's functions are castwise's top-level names, as jnp.arange is jax.numpy's;
lax's op functions are under rt.lax only (tests/runtime/test_numpy_names.py holds each name
against NumPy)."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
from runtime.numpy import creation, manipulation, nn, shared_names
from runtime.numpy import elementwise as numpy_elementwise

MODULES = [creation, manipulation, numpy_elementwise, shared_names]


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


def test_an_op_function_at_the_top_level_is_the_one_of_rt_lax() -> None:
    # a name both layers use is either the same function (rt.sin is rt.lax.sin) or NumPy's
    # meaning, written in runtime.numpy.shared_names (rt.round, rt.max ...); never a third thing
    # (rt.fft is jnp.fft's namespace, which holds NumPy's transforms; the op function is rt.lax.fft;
    # rt.add is lax.add plus torch's alpha= under torch, written in runtime.numpy.alpha)
    assert rt.fft is rt.numpy.fft
    for name in rt.lax.__all__:
        fn = getattr(rt, name, None)
        if name == "fft":
            continue
        if fn is not None and fn is not getattr(rt.lax, name):
            assert fn.__module__ in ("runtime.numpy.shared_names", "runtime.numpy.alpha"), name
    assert rt.lax.round(2.5).item() == 3.0 and rt.round(2.5).item() == 2.0
