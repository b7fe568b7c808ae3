"""Edge shapes JAX handles (issue 23, items 3 and 5): SAME padding of a dilated window, empty vmap
batches of conv and gather, eig of a 0x0 matrix, and sort's derivatives along an empty axis."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from runtime.core import lax as F  # noqa: E402
from runtime.core.shapes import GatherDimensionNumbers  # noqa: E402

WINDOWS = [((4, 6), (1, 2), (1, 1), (1, 2)), ((4, 6), (2, 3), (1, 2), (2, 2)), ((5, 7), (3, 2), (2, 1), (2, 3))]
REDUCERS = [(F.reduce_window_sum, lax.add, 0.0), (F.reduce_window_max, lax.max, -np.inf),
            (F.reduce_window_min, lax.min, np.inf)]  # fmt: skip


@pytest.mark.parametrize("padding", ["SAME", "SAME_LOWER"])
@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("reducer", REDUCERS, ids=["sum", "max", "min"])
def test_same_padding_of_a_dilated_window(reducer: Any, window: Any, padding: str) -> None:
    ours, computation, init = reducer
    shape, dims, strides, dilation = window
    x = np.random.default_rng(0).standard_normal(shape)
    expected = lax.reduce_window(x, init, computation, dims, strides, padding, window_dilation=dilation)
    got = ours(rt.asarray(x), dims, strides, padding, None, dilation)
    np.testing.assert_allclose(got.numpy(), np.asarray(expected))


def test_pooling_same_padding_matches_flax_shapes() -> None:
    x = rt.asarray(np.ones((1, 5, 5, 2)))
    assert rt.lax.max_pool(x, (2, 2), (2, 2), "SAME").shape == (1, 3, 3, 2)
    assert rt.lax.avg_pool(x, (3, 3), None, "SAME").shape == (1, 5, 5, 2)


def _conv(a: Any, w: Any) -> Any:
    return F.conv_general_dilated(a, w, (1, 1), "VALID")


def test_vmap_of_conv_over_an_empty_batch() -> None:
    lhs, rhs = np.zeros((0, 1, 2, 5, 5)), np.ones((3, 2, 3, 3))
    expected = jax.vmap(lambda a: lax.conv_general_dilated(a, rhs, (1, 1), "VALID"))(lhs)
    got = autodiff.vmap(lambda a: _conv(a, rt.asarray(rhs)))(rt.asarray(lhs))
    assert got.shape == expected.shape and got.dtype.name == expected.dtype.name
    kernels = np.zeros((0, 3, 2, 3, 3))
    expected = jax.vmap(lambda w: lax.conv_general_dilated(np.ones((1, 2, 5, 5)), w, (1, 1), "VALID"))(kernels)
    got = autodiff.vmap(lambda w: _conv(rt.asarray(np.ones((1, 2, 5, 5))), w))(rt.asarray(kernels))
    assert got.shape == expected.shape


def test_vmap_of_gather_over_an_empty_batch() -> None:
    dn = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    jdn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    op, idx = np.zeros((0, 5, 3)), np.zeros((0, 2, 1), np.int32)
    expected = jax.vmap(lambda a, i: lax.gather(a, i, jdn, (1, 3)))(op, idx)
    got = autodiff.vmap(lambda a, i: F.gather(a, i, dn, (1, 3)))(rt.asarray(op), rt.asarray(idx))
    assert got.shape == expected.shape


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0)])
def test_eig_of_empty_matrices_with_left_eigenvectors(shape: tuple[int, ...]) -> None:
    expected = lax.linalg.eig(jnp.zeros(shape), compute_left_eigenvectors=True)
    got = F.eig(rt.asarray(np.zeros(shape)), compute_left_eigenvectors=True)
    assert [t.shape for t in got] == [e.shape for e in expected]
    assert [t.dtype.name for t in got] == [e.dtype.name for e in expected]


@pytest.mark.parametrize("dimension", [0, 1])
def test_sort_derivatives_along_an_empty_axis(dimension: int) -> None:
    x = np.zeros((3, 0))
    expected_out, expected_t = jax.jvp(lambda a: lax.sort(a, dimension=dimension), (x,), (x,))
    out, tangent = autodiff.jvp(lambda a: F.sort(a, dimension=dimension), (rt.asarray(x),), (rt.asarray(x),))
    assert out.shape == expected_out.shape and tangent.shape == expected_t.shape
    _, pullback = autodiff.vjp(lambda a: F.sort(a, dimension=dimension), rt.asarray(x))
    (ct,) = pullback(rt.asarray(x))
    assert ct.shape == jax.vjp(lambda a: lax.sort(a, dimension=dimension), x)[1](x)[0].shape
    keyed = autodiff.jvp(lambda a: F.sort((a, a), dimension=dimension, num_keys=1)[1], (rt.asarray(x),),
                         (rt.asarray(x),))  # fmt: skip
    assert keyed[1].shape == (3, 0)
