"""Helpers the pytree, Jacobian and vmap tests share: random inputs in f32/f64/c128 and
leafwise comparison of castwise's pytrees with JAX's."""

from __future__ import annotations

from typing import Any

import numpy as np

import runtime as rt
from autodiff.pytree import tree_flatten, tree_map
from runtime.core.tensor import Tensor

#: the dtypes each transform is checked in against JAX
DTYPES = [np.float32, np.float64, np.complex128]
REAL = [np.float32, np.float64]
#: relative tolerance, and absolute scaled by the largest expected magnitude
RTOL = {np.float32: 2e-4, np.float64: 1e-11, np.complex128: 1e-11}


def dtype_id(dtype: Any) -> str:
    return np.dtype(dtype).name


def random(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Standard normal values (real and imaginary parts for a complex dtype)."""
    data = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        data = data + 1j * rng.standard_normal(shape)
    return np.asarray(data).astype(dtype)


def to_tensors(tree: Any) -> Any:
    """Every leaf of ``tree`` as a castwise Tensor."""
    return tree_map(rt.asarray, tree)


def close(got: Any, want: Any, dtype: Any) -> None:
    """Same shape and dtype, values within ``dtype``'s tolerance."""
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.shape == want_a.shape and got_a.dtype == want_a.dtype, (got_a.shape, got_a.dtype, want_a.shape,
                                                                         want_a.dtype)  # fmt: skip
    finite = np.abs(want_a[np.isfinite(want_a)])  # an inf must match exactly; it sets no scale
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    np.testing.assert_allclose(got_a, want_a, rtol=RTOL[dtype], atol=RTOL[dtype] * scale)


def trees_close(ours: Any, theirs: Any, dtype: Any, conj: bool = False) -> None:
    """Same structure, leaves equal (castwise's against the conjugate of JAX's where ``conj``:
    castwise's reverse mode is PyTorch's convention)."""
    ours_leaves, ours_tree = tree_flatten(ours)
    theirs_leaves, theirs_tree = tree_flatten(theirs)
    assert ours_tree == theirs_tree, (ours_tree, theirs_tree)
    for o, t in zip(ours_leaves, theirs_leaves, strict=True):
        assert isinstance(o, Tensor), type(o)
        close(o.numpy(), np.conj(np.asarray(t)) if conj else np.asarray(t), dtype)
