"""triangular_solve on singular triangles: which side is right, and the sweep's departure for it.

The sweep's integer and bool matrices are often singular (a zero on the
diagonal). Forward substitution then divides by zero, and the IEEE results (inf
from ``5/0``, NaN from ``0/0``, ``inf - inf``, ``0 * inf``) depend on the order
of operations. The definition's order is substitution row by row; castwise
computes exactly that, and so does XLA's solve of one system. ``jax.vmap`` with
only ``b`` batched solves one system with the batch folded into ``b``'s columns,
and XLA's CPU BLAS kernel for that many columns places NaN elsewhere on some
machines: the departure ``triangular_solve-singular`` explains those
checks, and nothing else.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("jax")

from autodiff.parity import run_case
from autodiff.parity._common import DEFAULT_DTYPES, Case, CheckResult, _make_inputs
from autodiff.parity.cases import build_cases
from autodiff.parity.departures import departure_explaining
from runtime.core import dtypes as dt
from runtime.core import kernels

#: the cases that failed the full sweep on an AMD EPYC machine (jax 0.10, ml_dtypes 0.7)
FAILED = ["triangular_solve[bool,u8]@jax", "triangular_solve[i16,u8]@jax", "triangular_solve[u16,i32]@jax",
          "triangular_solve[u32,i8]@jax", "triangular_solve[i64,u64]@neuron"]  # fmt: skip
DEPARTURE = "triangular_solve-singular"


def _cases() -> dict[str, Case]:
    return {c.id: c for c in build_cases(("jax", "neuron"), ("triangular_solve",), DEFAULT_DTYPES, 0)}


def _substitution(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The definition: ``tril(a) @ x = b`` solved row by row, ``x_i = (b_i - a_i,:i @ x_:i) / a_ii``
    (the inner product accumulated left to right), in a's dtype."""
    x = np.zeros(b.shape, a.dtype)
    with np.errstate(all="ignore"):
        for i in range(a.shape[0]):
            acc = b[i].copy()
            for j in range(i):
                acc = acc - a[i, j] * x[j]
            x[i] = acc / a[i, i]
    return x


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    """Equal values, NaN where the other has NaN."""
    return bool(np.array_equal(x, y, equal_nan=True))


def _close(x: np.ndarray, y: np.ndarray) -> bool:
    """NaN and inf (with their signs) in the same places; finite values within a few ulps (XLA's trsm
    multiplies by the pivot's reciprocal: an ulp off the division)."""
    finite = np.isfinite(x)
    return bool(np.array_equal(finite, np.isfinite(y)) and np.array_equal(x[~finite], y[~finite], equal_nan=True)
                and np.allclose(x[finite], y[finite], rtol=4 * np.finfo(np.float32).eps, atol=0))  # fmt: skip


@pytest.mark.parametrize("case_id", FAILED)
def test_castwise_solves_a_singular_triangle_as_the_definition_and_xla_unbatched(case_id: str) -> None:
    import jax

    case = _cases()[case_id]
    singular = 0
    for seed in range(3):  # the vmap rows' three examples
        a, b = (np.asarray(x).astype(np.float32) for x in _make_inputs(case, seed))
        (got,) = kernels.KERNELS["triangular_solve"](a, b, left_side=True, lower=True)
        assert _same(got, _substitution(np.tril(a), b)), (seed, got)
        xla = np.asarray(jax.lax.linalg.triangular_solve(a, b, left_side=True, lower=True))
        assert _close(got, xla), (seed, got, xla)
        singular += not np.all(np.isfinite(got))
    assert singular  # the sweep draws singular triangles here: the departure is about their non-finite values


def test_the_definition_puts_inf_where_a_column_batched_xla_solve_may_put_nan() -> None:
    """The example of the departure's reason: row 0 is ``x_0 = b_0 / 0``, inf for every positive b_0."""
    import jax

    a = np.tril(np.array([[0, 0, 0], [1, 1, 0], [0, 1, 1]], np.float32))
    b = np.array([[5, 3], [5, 1], [0, 2]], np.float32)
    want = _substitution(a, b)
    assert np.all(want[0] == np.inf) and np.all(np.isnan(want[2]))
    (got,) = kernels.KERNELS["triangular_solve"](a, b, left_side=True, lower=True)
    assert _same(got, want)
    assert _close(np.asarray(jax.lax.linalg.triangular_solve(a, b, left_side=True, lower=True)), want)
    # castwise's vmap of b is the solve of each example; XLA's may not be (machine-dependent, not asserted)
    (wide,) = kernels.KERNELS["triangular_solve"](a, np.concatenate([b, b, b], axis=1), left_side=True, lower=True)
    assert _same(wide, np.concatenate([want] * 3, axis=1))


@pytest.mark.parametrize("case_id", FAILED)
def test_the_sweep_passes_the_failed_cases(case_id: str) -> None:
    result = run_case(_cases()[case_id])
    assert result.status == "ok", [(c.check, c.active, c.message) for c in result.failures]
    departed = [c for c in result.checks if c.departure]
    assert all(c.departure == DEPARTURE and c.check == "vmap" and c.active == (1,) for c in departed)
    # the other vmap rows (a batched, both batched) compare every value, finite ones included
    others = [c for c in result.checks if c.check == "vmap" and c.active != (1,)]
    assert len(others) == 4 and all(c.ok and not c.departure for c in others)


def _check(**kw: Any) -> CheckResult:
    base: dict[str, Any] = {"check": "vmap", "ok": False, "ratio": float("inf"), "active": (1,),
                            "message": "batch axis 0, operands (1,) batched: output 0 (float32): NaN in different "
                            "positions"}  # fmt: skip
    return CheckResult(**{**base, **kw})


def test_the_departure_is_narrow() -> None:
    cases = _cases()
    singular = cases["triangular_solve[bool,u8]@jax"]
    assert departure_explaining(singular, _check()).name == DEPARTURE  # type: ignore[union-attr]
    inf_msg = "batch axis 1, operands (1,) batched: output 0 (float32): infinities differ"
    assert departure_explaining(singular, _check(message=inf_msg)) is not None
    # a finite value that differs is a failure
    finite = "batch axis 0, operands (1,) batched: output 0 (float32): max abs error 1 > tolerance 1e-06"
    assert departure_explaining(singular, _check(message=finite)) is None
    # the other checks and vmap rows, and float matrices (the sweep's are well conditioned) are not covered
    assert departure_explaining(singular, _check(check="primal", active=None)) is None
    both = "batch axis 0, operands (0, 1) batched: output 0 (float32): NaN in different positions"
    assert departure_explaining(singular, _check(active=(0, 1), message=both)) is None
    floats = next(c for c in cases.values() if c.slots[0] is dt.float32 and c.policy == "jax")
    assert departure_explaining(floats, _check()) is None
    other_op = next(c for c in build_cases(("jax",), ("cholesky",), DEFAULT_DTYPES, 0) if c.slots[0] is dt.int16)
    assert departure_explaining(other_op, _check()) is None
