"""Running one case: castwise and JAX side by side, the comparisons and the checks."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from autodiff.parity._common import Case, CheckResult, _as_float, _eps
from autodiff.parity.departures import departure_explaining, known_failure_for
from runtime.core.dtypes import DType
from runtime.core.promotion import PromotionError
from runtime.core.shapes import ArityError, KernelDTypeError, OpTypeError
from runtime.core.shapes import ShapeError as _ShapeError

# -- running one case ------------------------------------------------------------------------------------


#: castwise's own refusals: every other exception from castwise is a crash (a failure).
CASTWISE_REFUSALS: Final = (PromotionError, OpTypeError, KernelDTypeError, ArityError, _ShapeError)


@dataclass
class CaseResult:
    """Everything the sweep learned about one case."""

    case_id: str
    spec: str
    family: str
    policy: str
    slots: tuple[str, ...]
    description: str
    #: "ok" | "failed" | "known" (only known failures) | "unsupported" | "departure"
    status: str = "ok"
    checks: list[CheckResult] = field(default_factory=list)
    castwise_error: str = ""
    jax_error: str = ""
    departure: str = ""
    #: CPU seconds the case took (JAX compilation included)
    cpu_s: float = 0.0
    #: the store or oracle record JAX's references came from ("": computed by JAX in this run)
    reference: str = ""

    @property
    def failures(self) -> list[CheckResult]:
        """Failed checks that are not known failures."""
        return [c for c in self.checks if not c.ok and not c.known]

    @property
    def known_failures(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.ok and c.known]

    def settle(self, case: Case) -> None:
        """Pass the failed checks a documented departure explains, attach known failures to
        the others, and set the status from the checks."""
        for c in self.checks:
            if not c.ok:
                dep = departure_explaining(case, c)
                if dep is not None:
                    c.ok, c.departure = True, dep.name
                    continue
                found = known_failure_for(case, c)
                c.known = found.name if found is not None else ""
        self.status = "failed" if self.failures else ("known" if self.known_failures else "ok")


# -- comparing ---------------------------------------------------------------------------------------------


def tolerance(d: DType, derivative: bool) -> float:
    """Relative tolerance (scaled by ``max(1, max|expected|)``) for values computed in ``d``.

    Counted in units of the dtype's epsilon: wide floats allow the few ulps by
    which NumPy's and XLA's transcendental functions and summation orders
    differ; narrow floats are computed in float32 and rounded once per op, so
    results differ by at most an ulp or two per op. Derivative programs chain
    several ops, hence the wider allowance.
    """
    ulps = (64 if derivative else 16) if d.bits >= 32 or d.kind == "complex" else (8 if derivative else 2)
    return ulps * _eps(d)


def compare(got: np.ndarray, want: np.ndarray, tol: float, exact: bool) -> tuple[bool, float, str]:
    """``(ok, error / tolerance, message)`` for two arrays of the same dtype family.

    Integer and bool values, and ``exact`` checks, must agree exactly (NaN with
    NaN). Otherwise the error is ``max |got - want|`` against ``tol * max(1, max|want|)``.
    """
    got_a, want_a = np.asarray(got), np.asarray(want)
    if got_a.shape != want_a.shape:
        return False, math.inf, f"shape {got_a.shape} != expected {want_a.shape}"
    if got_a.size == 0:
        return True, 0.0, ""
    if want_a.dtype.kind in "biu" or got_a.dtype.kind in "biu":
        bad = int(np.count_nonzero(got_a != want_a))
        return bad == 0, (0.0 if bad == 0 else math.inf), (f"{bad} of {got_a.size} values differ" if bad else "")
    g, w = _as_float(got_a), _as_float(want_a)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    if np.any(nan_g != nan_w):
        return False, math.inf, "NaN in different positions"
    finite = ~nan_w
    inf_mismatch = np.any((np.isinf(g) | np.isinf(w)) & finite & (g != w))
    if inf_mismatch:
        return False, math.inf, "infinities differ"
    both = finite & ~np.isinf(w)
    err = float(np.max(np.abs(g[both] - w[both]))) if np.any(both) else 0.0
    scale = max(1.0, float(np.max(np.abs(w[both])))) if np.any(both) else 1.0
    if exact:
        if err == 0.0:
            return True, 0.0, ""
        return False, math.inf, f"not bit-exact: max abs error {err:.3g}"
    ratio = err / (tol * scale)
    return ratio <= 1.0, ratio, (f"max abs error {err:.3g} > tolerance {tol * scale:.3g}" if ratio > 1 else "")
