"""Helpers the per-family rule tests share (elementwise and structural)."""

from __future__ import annotations

import os
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import jax
import numpy as np
import pytest

import runtime as rt
from runtime.core import lax as F
from runtime.core.dtypes import DType


def trials(full: int) -> int:
    """How many random configurations a loop over them draws: ``full`` with
    ``CASTWISE_FULL_TRIALS=1`` (or under ``-m slow`` runs that set it), a third of them by
    default. Each configuration compiles JAX's oracle anew (its shapes differ), which is most
    of these tests' CPU time; the first configurations are the same either way."""
    return full if os.environ.get("CASTWISE_FULL_TRIALS") else max(4, full // 3)


#: parity tolerance (relative, and absolute scaled by the largest expected value)
PARITY_TOL = {rt.float32: 1e-5, rt.complex64: 1e-5, rt.float64: 1e-12, rt.complex128: 1e-12}


@contextmanager
def x64() -> Iterator[None]:
    with jax.enable_x64(True):
        yield


def random_array(dtype: DType, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Standard normal values (real and imaginary parts for complex) in ``dtype``'s storage."""
    data = rng.standard_normal(shape)
    if dtype.kind == "complex":
        data = data + 1j * rng.standard_normal(shape)
    return np.asarray(data).astype(dtype.storage)


def assert_close(what: str, got: Any, want: Any, dtype: DType) -> None:
    """``got`` equals ``want`` within ``dtype``'s parity tolerance (shapes exactly)."""
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.shape == want_a.shape, f"{what}: shape {got_a.shape} != {want_a.shape}"
    tol = PARITY_TOL.get(dtype, 1e-5)
    scale = max(1.0, float(np.max(np.abs(want_a)))) if want_a.size else 1.0
    np.testing.assert_allclose(got_a, want_a, rtol=tol, atol=tol * scale, err_msg=what)


def close_within(got: Any, want: Any, rtol: float, what: str) -> None:
    """``|got - want| <= rtol * max(1, max |want|)``, shapes equal: the linalg derivative tests'
    comparison (their tolerances are per dtype, for results of a factorisation)."""
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.shape == want_a.shape, (what, got_a.shape, want_a.shape)
    scale = max(1.0, float(np.max(np.abs(want_a))))
    err = float(np.max(np.abs(got_a.astype(np.complex128) - want_a)))
    assert err <= rtol * scale, f"{what}: error {err:.3g}"


def case_inputs(case: Any, dtype: DType) -> list[np.ndarray]:
    """The arrays a rule-test case makes for ``dtype`` (``case.inputs``: one maker per operand)."""
    return [make(dtype) for make in case.inputs]


@contextmanager
def counting_ops(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Record the name of every op the runtime's op functions execute (both entry
    points: ``apply`` and the binary ops' ``apply_binary``)."""
    names: list[str] = []
    from runtime.core.executor import apply as original
    from runtime.core.executor import apply_binary as original_binary

    # the op functions live in one module per family (runtime.core.lax.<family>), each calling the
    # executor through its own imported names
    families = [m for m in vars(F).values() if isinstance(m, types.ModuleType) and m.__name__.startswith(F.__name__)]

    def counted(op: Any, operands: Any, params: Any) -> Any:
        names.append(op.name)
        return original(op, operands, params)

    def counted_binary(op: Any, x: Any, y: Any) -> Any:
        names.append(op.name)
        return original_binary(op, x, y)

    with monkeypatch.context() as m:
        for module in families:
            if getattr(module, "apply", None) is original:
                m.setattr(module, "apply", counted)
            if getattr(module, "apply_binary", None) is original_binary:
                m.setattr(module, "apply_binary", counted_binary)
        yield names
