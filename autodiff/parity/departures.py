"""Documented, deliberate departures from JAX, and the known failures the sweep reports."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import ml_dtypes

from autodiff.parity._common import (
    FLOAT8_DTYPES,
    NARROW_INT_DTYPES,
    Case,
    CheckResult,
    PyScalar,
    _has,
    _planned,
)
from runtime.core import dtypes as dt
from runtime.core.promotion import PromotionError


def _no_refusal(case: Case, operands: Sequence[Any], ours_refused: bool, jax_refused: bool) -> bool:
    return False


def _no_check(case: Case, check: CheckResult) -> bool:
    return False


@dataclass(frozen=True)
class Departure:
    """A documented place where castwise and JAX differ by design.

    ``applies(case, operands, ours_refused, jax_refused)`` says whether it
    explains a disagreement on acceptance (castwise refuses what JAX accepts,
    or the reverse); ``explains(case, check)``, whether it explains a failed
    check of a case both accept (a result dtype or value). ``where`` names the
    documentation.
    """

    name: str
    reason: str
    where: str
    applies: Callable[[Case, Sequence[Any], bool, bool], bool] = _no_refusal
    explains: Callable[[Case, CheckResult], bool] = _no_check
    #: ``applies`` only where jax.lax refuses the case too (JAX's ``lax`` reference of the case)
    needs_lax_refusal: bool = False


def _kinds(case: Case) -> set[str]:
    """The kinds among a case's operands, Python scalars included (``py-complex`` is complex)."""
    return {s.kind for s in case.operand_slots}


def _lax_refuses_too(case: Case, operands: Sequence[Any], ours_refused: bool, jax_refused: bool) -> bool:
    """Under ``jax`` the reference is jax.numpy, which converts operands jax.lax refuses
    (bool arithmetic, atan2 of integers, ordering complex numbers ...): castwise follows
    jax.lax, so its refusal stands when lax, at JAX's own promoted dtype, refuses too (the
    sweep's ``lax`` reference, ``Departure.needs_lax_refusal``)."""
    return case.policy == "jax" and case.spec.jnp is not None and ours_refused and not jax_refused


def _refuses_kind(op: str, kind: str) -> Callable[[Case, Sequence[Any], bool, bool], bool]:
    def applies(case: Case, operands: Sequence[Any], ours_refused: bool, jax_refused: bool) -> bool:
        return case.spec.op == op and ours_refused and not jax_refused and kind in _kinds(case)

    return applies


def _integer_pow(case: Case, check: CheckResult) -> bool:
    """pow under jax with a Python int or bool exponent, where jnp.power calls lax.integer_pow:
    a bool base becomes int32 there (int64 in castwise's plan), and in float8_e8m0fnu castwise's
    ``y * x**(y - 1)`` is NaN for ``y = 1`` (0 does not exist) where integer_pow's is not."""
    exponent = case.slots[1] if case.spec.op == "pow" and len(case.slots) == 2 else None
    if case.policy != "jax" or not isinstance(exponent, PyScalar) or exponent.kind not in ("int", "bool"):
        return False
    if check.check == "primal":
        return case.slots[0] is dt.bool_ and _message_has(check, "dtype int64, expected int32")
    return (check.check in ("jvp", "vjp") and case.slots[0] is dt.float8_e8m0fnu
            and _message_has(check, "NaN in different positions"))  # fmt: skip


#: Cumulative reductions whose JAX derivative (a prefix scan that pads and interleaves with zeros)
#: is NaN throughout in float8_e8m0fnu, where castwise's scan rules keep the finite values.
_E8M0_SCANS: Final = ("cumprod", "cummax", "cummin", "cumlogsumexp")


def _e8m0_derivative_formula(case: Case, check: CheckResult) -> bool:
    """The float8_e8m0fnu derivatives whose formulae differ from JAX's (see DEPARTURES)."""
    formula = case.spec.op in ("scatter_add", "reduce_prod", *_E8M0_SCANS) or case.spec.name == "reduce_argmax"
    return (check.check in ("jvp", "vjp") and formula
            and _has(case, dt.float8_e8m0fnu) and _message_has(check, "NaN in different positions"))  # fmt: skip


#: What XLA on CPU refuses for the 2-bit ints, which castwise computes in 8 bits and wraps.
_NARROW_INT_XLA_GAPS: Final = frozenset({"pow", "dot_general", "abs", "concatenate", "conv_general_dilated"})


def _plans_half_complex(case: Case, operands: Sequence[Any], ours_refused: bool, jax_refused: bool) -> bool:
    """A case castwise runs in complex32/bcomplex32 (torch: float16 with a complex scalar), JAX cannot."""
    if ours_refused or not jax_refused or case.policy == "jax":
        return False
    if _has(case, *dt.SMALL_COMPLEX):
        return True
    try:
        return any(t in dt.SMALL_COMPLEX for t in _planned(case))
    except PromotionError:
        return False


def _narrow_int_true_divide(case: Case, check: CheckResult) -> bool:
    """div of 2-bit ints under jax: jnp.true_divide keeps int2/uint2 (see DEPARTURES)."""
    return (case.policy == "jax" and case.spec.op == "div" and check.check == "primal"
            and _has(case, *NARROW_INT_DTYPES) and _message_has(check, "dtype float32, expected "))  # fmt: skip


def _narrow_int_sort(case: Case, check: CheckResult) -> bool:
    """sort of int2/uint2: XLA on CPU returns values that are not sorted (not even a permutation)."""
    return case.spec.op == "sort" and check.check in ("primal", "vmap") and _has(case, *NARROW_INT_DTYPES)


_XLA_TOP_K_GAPS: Final = (*NARROW_INT_DTYPES, dt.int4, dt.uint4)


def _python_int_out_of_narrow_range(case: Case, operands: Sequence[Any], ours_refused: bool,
                                    jax_refused: bool) -> bool:  # fmt: skip
    """A Python int operand that does not fit the case's 2-bit int (the sweep's 2 in int2)."""
    if not ours_refused or jax_refused:
        return False
    ints = [x for s, x in zip(case.operand_slots, operands, strict=True) if isinstance(s, PyScalar) and s.kind == "int"]
    ranges = [ml_dtypes.iinfo(d.storage) for d in case.slots if isinstance(d, dt.DType) and d in NARROW_INT_DTYPES]
    return any(not int(r.min) <= v <= int(r.max) for v in ints for r in ranges)


#: The windowed ops whose selections and sums in float8_e8m0fnu (no zero: every sum is NaN) place NaN
#: where XLA's do not.
_WINDOW_OPS: Final = frozenset({"reduce_window_max", "reduce_window_min", "select_and_gather_add",
                                "select_and_scatter_add"})  # fmt: skip


def _window_e8m0(case: Case, check: CheckResult) -> bool:
    """A windowed op's derivative or scatter in float8_e8m0fnu, whose zeros are NaN (see DEPARTURES)."""
    return (case.spec.op in _WINDOW_OPS and _has(case, dt.float8_e8m0fnu)
            and _message_has(check, "NaN in different positions"))  # fmt: skip


def _pad_value_sum_narrow(case: Case, check: CheckResult) -> bool:
    """pad's padding-value cotangent in a narrow float, summed another way than JAX's (see DEPARTURES)."""
    narrow = (dt.float16, dt.bfloat16, *FLOAT8_DTYPES)
    return case.spec.name == "pad-operand-value" and check.check in ("vjp", "vmap") and _has(case, *narrow)


def _window_narrow_int_ties(case: Case, check: CheckResult) -> bool:
    """select_and_scatter_add in 2-bit ints, where every window has ties (see DEPARTURES)."""
    return (case.spec.op == "select_and_scatter_add" and check.check in ("primal", "vmap")
            and _has(case, *NARROW_INT_DTYPES))  # fmt: skip


#: special functions XLA on CPU cannot compile for 8-bit floats (their CHLO expansion fails to
#: legalize): erfc and bessel_i1e themselves, and bessel_i0e's derivative, which is written with i1e
_SPECIAL_FLOAT8_GAPS: Final = frozenset({"erfc", "bessel_i1e"})


def _special_float8_derivative(case: Case, check: CheckResult) -> bool:
    """bessel_i0e's JVP/VJP in an 8-bit float, which JAX writes with bessel_i1e (see DEPARTURES)."""
    return (case.spec.op in _SPECIAL_FLOAT8_GAPS | {"bessel_i0e"} and _has(case, *FLOAT8_DTYPES)
            and _message_has(check, "failed to legalize operation 'chlo."))  # fmt: skip


#: the special functions (runtime/core/kernels/special.py), all computed in float32 for 8-bit floats
_SPECIAL_OPS: Final = frozenset({"erf", "erfc", "erf_inv", "lgamma", "digamma", "polygamma", "zeta", "igamma",
                                 "igammac", "igamma_grad_a", "bessel_i0e", "bessel_i1e"})  # fmt: skip


def _special_float8_nan(case: Case, check: CheckResult) -> bool:
    """A special function in an 8-bit float whose NaNs sit elsewhere than XLA's (see DEPARTURES)."""
    return (case.spec.op in _SPECIAL_OPS and _has(case, *FLOAT8_DTYPES)
            and _message_has(check, "NaN in different positions"))  # fmt: skip


def _nextafter_e8m0(case: Case, check: CheckResult) -> bool:
    """nextafter in float8_e8m0fnu, which XLA computes wrongly (see DEPARTURES)."""
    return case.spec.op == "nextafter" and _has(case, dt.float8_e8m0fnu) and _message_has(check, "not bit-exact")


def _triangular_solve_columns(case: Case, check: CheckResult) -> bool:
    """vmap of triangular_solve with only b batched, on an integer or bool matrix (converted to a float),
    whose difference is where the non-finite values are (see DEPARTURES)."""
    a_slot = case.operand_slots[0] if case.spec.op == "triangular_solve" else None
    non_finite = _message_has(check, "NaN in different positions") or _message_has(check, "infinities differ")
    return (check.check == "vmap" and isinstance(a_slot, dt.DType) and not a_slot.is_inexact
            and check.active == (1,) and _message_has(check, "operands (1,) batched") and non_finite)  # fmt: skip


#: How far past the derivative tolerance ``det-jvp-rounding`` explains (a wrong rule is far past it)
DET_ROUNDING_RATIO: float = 4.0


def _det_rounding(case: Case, check: CheckResult) -> bool:
    """det's JVP or VJP in a wide float, off by less than ``DET_ROUNDING_RATIO`` tolerances (see DEPARTURES)."""
    wide = all(isinstance(s, dt.DType) and s.is_inexact and s.bits >= 64 for s in case.operand_slots)
    return (case.spec.name == "det" and check.check in ("jvp", "vjp") and wide
            and math.isfinite(check.ratio) and check.ratio <= DET_ROUNDING_RATIO)  # fmt: skip


def _lerp_e8m0(case: Case, check: CheckResult) -> bool:
    """torch.lerp's far-weight formula in float8_e8m0fnu, which has no zero and no negatives (see DEPARTURES)."""
    return case.spec.name == "lerp" and _has(case, dt.float8_e8m0fnu) and _message_has(check, "NaN in different")


DEPARTURES: Final[tuple[Departure, ...]] = (
    Departure(
        "lerp-e8m0",
        "lerp computes end - (end - input) (1 - weight) where |weight| >= 0.5, as torch.lerp does; the "
        "reference is the definition input + weight (end - input). float8_e8m0fnu has no zero and no "
        "negative values, so each formula is NaN where its own differences are, at different positions",
        "runtime/numpy/elementwise.py: lerp",
        explains=_lerp_e8m0,
    ),
    Departure(
        "narrow-int-python-int-range",
        "a Python int that does not fit a 2-bit int (2 in int2, whose range is -2..1) is refused, as int8 + 300 "
        "is; JAX converts it to int2 and wraps it silently (to -2)",
        "runtime/core/tensor.py (a Python scalar that does not fit its planned dtype is refused)",
        applies=_python_int_out_of_narrow_range,
    ),
    Departure(
        "select_and_gather_add-bool",
        "select_and_gather_add (the internal op of a max window's derivative) refuses bool: lax's packs each "
        "(value, tangent) pair into one word and its bool results are not the selected tangents",
        "runtime/core/shapes/windowed.py: select_and_gather_add_rule",
        _refuses_kind("select_and_gather_add", "bool"),
    ),
    Departure(
        "window-e8m0",
        "float8_e8m0fnu has no zero: the zeros that a max window's derivative scatters into (and a sum over "
        "no selected element) are NaN, placed where castwise's tap-by-tap kernels put them, not where XLA's do",
        "runtime/core/kernels/windowed.py",
        explains=_window_e8m0,
    ),
    Departure(
        "select_and_scatter_add-ties",
        "with ties in a window (every window of a 2-bit int operand has some), XLA's SelectAndScatter picks "
        "another of the equal elements in some layouts (batched, or widened to 8 bits); castwise always picks "
        "the first",
        "runtime/core/kernels/windowed.py",
        explains=_window_narrow_int_ties,
    ),
    Departure(
        "pad-value-cotangent-sum",
        "pad's padding-value cotangent is the sum of the output cotangent over the padded positions, summed "
        "directly; jax.lax.pad's transpose computes sum(ct) - sum(ct at the operand's positions), which in "
        "float16, bfloat16 and float8 rounds differently (and raises when the operand is a constant)",
        "runtime/core/lax/structural.py: pad",
        explains=_pad_value_sum_narrow,
    ),
    Departure(
        "jnp-converts",
        "castwise ops follow jax.lax dtype rules: where jax.numpy converts first (bool arithmetic, atan2 of "
        "integers, ordering complex numbers) and jax.lax refuses, castwise refuses too",
        "runtime/core/shapes/ (accepted dtypes follow jax.lax); docs/promotion.md (bool arithmetic)",
        _lax_refuses_too,
        needs_lax_refusal=True,
    ),
    Departure(
        "atan2-complex",
        "atan2 is real-only in castwise; jax.lax.atan2 also takes complex operands",
        "runtime/core/shapes/binary.py: atan2_rule",
        _refuses_kind("atan2", "complex"),
    ),
    Departure(
        "clamp-complex",
        "clamp refuses complex operands (XLA's complex clamp has no documented order); jax.lax.clamp accepts them",
        "runtime/core/shapes/contraction.py: clamp_rule",
        _refuses_kind("clamp", "complex"),
    ),
    Departure(
        "full-complex-fill",
        "full refuses a complex fill value for a non-complex dtype (taking the real part silently would hide a "
        "bug); jax.lax.full converts it to bool as bool(fill)",
        "runtime/core/shapes/_common.py: _check_scalar_param",
        lambda c, x, o, j: c.spec.name == "full-complex" and o and not j,
    ),
    Departure(
        "floor_div-bool",
        "floor_div of bools is refused where the policy has no bool rule (torch: PyTorch refuses it; neuron); "
        "the reference after the plan, jnp.floor_divide, turns bool operands into int32",
        "runtime/core/plan.py: NUMERIC_OF_BOOL; runtime/core/shapes/binary.py: floor_div_rule",
        _refuses_kind("floor_div", "bool"),
    ),
    Departure(
        "pow-integer-exponent",
        "with a Python int or bool exponent, jnp.power is lax.integer_pow: the exponent takes no part in "
        "promotion (a bool base becomes int32, even with x64) and the derivative is n * x**(n-1) through "
        "integer_pow; castwise's pow is the binary op, planned like every other (bool and a Python int give "
        "int64, as jnp.result_type and jnp.add do) and differentiated as y * x**(y - 1), which is NaN in "
        "float8_e8m0fnu for y = 1 (the format has no 0)",
        "docs/promotion.md (departures); docs/parity.md",
        explains=_integer_pow,
    ),
    Departure(
        "narrow-int-xla",
        "castwise computes every integer op on int2/uint2 in 8 bits and wraps back; XLA on CPU has no 2-bit "
        "integer pow (jnp.power's integer algorithm), dot or concatenate (its compiler aborts), and jnp.abs "
        "refuses narrow integers as platform-dependent",
        "runtime/core/kernels/ (module docstring); tests/runtime/test_kernels_new_dtypes.py (exact integers)",
        lambda c, x, o, j: c.spec.op in _NARROW_INT_XLA_GAPS and not o and j and _has(c, *NARROW_INT_DTYPES),
    ),
    Departure(
        "special-float8-xla",
        "XLA on CPU does not compile erfc or bessel_i1e on 8-bit floats (its CHLO expansion fails to "
        "legalize), so JAX refuses them and bessel_i0e's derivative (written with bessel_i1e) there; castwise "
        "computes them in float32 and rounds once, as JAX computes every other special function of these formats",
        "runtime/core/kernels/special.py",
        lambda c, x, o, j: c.spec.op in _SPECIAL_FLOAT8_GAPS and not o and j and _has(c, *FLOAT8_DTYPES),
        _special_float8_derivative,
    ),
    Departure(
        "special-float8-nan",
        "XLA evaluates igamma's series in the 8-bit format itself and gets NaN for ordinary inputs (lax.igamma "
        "of float8_e3m4 a=[0.78..], x=[..] is NaN where the float32 result rounded to e3m4 is 0.781); castwise "
        "computes every special function of an 8-bit float in float32 and rounds once. And float8_e8m0fnu has no "
        "zero: where XLA's float32 expansion gives exactly 0 (lgamma(2)) and castwise's a residue within the "
        "documented ulp bounds (4.8e-7), XLA's result is NaN and castwise's 2**-21",
        "runtime/core/kernels/special.py; tests/runtime/test_special.py (ulp bounds)",
        explains=_special_float8_nan,
    ),
    Departure(
        "nextafter-e8m0",
        "XLA's nextafter is wrong in float8_e8m0fnu (powers of two, no zero, no sign): lax.nextafter(0.25, 4.0) "
        "is 0.125 and nextafter(2, 1) is 2**-126, and vmap of it gives other values again; castwise steps one "
        "power of two towards y (ml_dtypes' nextafter), checked over every pair of values",
        "runtime/core/kernels/binary.py: nextafter_kernel; tests/runtime/test_kernels.py (every e8m0 pair)",
        explains=_nextafter_e8m0,
    ),
    Departure(
        "narrow-int-sort-xla",
        "XLA on CPU sorts int2/uint2 wrongly (lax.sort of int2 [1, -2, 0, 1, -1, 0, -2, 1] gives "
        "[-2, -2, 1, -1, -1, 0, -2, 1], not a permutation of the input), fails to sort them together with "
        "operands of other widths ('Inputs must have the same shape') and does not compile top_k of 2- or "
        "4-bit integers (its topk-decomposer's iota); castwise sorts and takes the top k of them as of any integer",
        "docs/structural.md (departures); runtime/core/kernels/structural.py",
        lambda c, x, o, j: (
            not o
            and j
            and (
                (c.spec.op == "top_k" and _has(c, *_XLA_TOP_K_GAPS))
                or (c.spec.op == "sort" and _has(c, *NARROW_INT_DTYPES))
            )
        ),
        _narrow_int_sort,
    ),
    Departure(
        "half-complex-no-jax",
        "under torch, float16 with a complex scalar or 0-d tensor is complex32 (PyTorch's ComplexHalf), which JAX "
        "does not have: no JAX reference; castwise computes it in complex64 and rounds each part to float16",
        "docs/promotion.md (torch); tests/runtime/test_kernels_new_dtypes.py",
        _plans_half_complex,
    ),
    Departure(
        "narrow-int-true-divide",
        "jnp.true_divide keeps int1/int2/uint1/uint2 (JAX's to_inexact_dtype has no entry for them) and divides "
        "as integers; castwise's true division of every integer narrower than 64 bits is float32, as for int4",
        "docs/promotion.md (jax)",
        explains=_narrow_int_true_divide,
    ),
    Departure(
        "cumlogsumexp-complex",
        "castwise's cumlogsumexp takes real floats only; lax.cumlogsumexp also takes complex operands "
        "(JAX's complex logaddexp, its imaginary part wrapped into (-pi, pi])",
        "docs/parity.md (cumulative reductions); runtime/core/shapes/reductions.py: cumlogsumexp_rule",
        lambda c, x, o, j: c.spec.op == "cumlogsumexp" and o and not j and "complex" in _kinds(c),
    ),
    Departure(
        "e8m0-argmax",
        "argmax/argmin of float8_e8m0fnu: XLA on CPU returns index 0 throughout (its comparisons of the "
        "format see every value as unordered); castwise compares the values, as for every other float",
        "docs/parity.md (cumulative reductions); runtime/core/kernels/reductions.py: _arg_extreme",
        explains=lambda c, k: (
            c.spec.op in ("argmax", "argmin") and k.check in ("primal", "vmap") and _has(c, dt.float8_e8m0fnu)
        ),
    ),
    Departure(
        "e8m0-derivative-formula",
        "float8_e8m0fnu has no zero and no negative values, so a derivative formula that materialises a zero "
        "or sums from one is NaN in it. castwise keeps scatter_add's zero update tangent symbolic where JAX "
        "materialises it (NaN at the scattered positions), and differentiates reduce_prod as "
        "sum_i t_i * prod_{j != i} x_j (a sum from 0: NaN) where JAX differentiates a product tree (finite); "
        "a reduce with an argmax computation selects the chosen element's tangent where the reference's "
        "jnp.maximum JVP multiplies the other by a zero (NaN)",
        "docs/autodiff.md (symbolic zeros); autodiff/derivatives/indexing.py, autodiff/derivatives/reductions.py, "
        "runtime/core/lax/computations.py",
        explains=_e8m0_derivative_formula,
    ),
    Departure(
        "det-jvp-rounding",
        "det's derivative in float64/complex128: JAX's rule (_cofactor_solve: an LU with its last pivot set "
        "aside, partial products of the diagonal, then a solve) rounds more than the derivative tolerance of 64 "
        "ulps allows on some well-conditioned matrices; castwise computes det(a) tr(a^-1 t) with one LU solve "
        "(the cofactors at singular matrices). On the sweep's det(f64[4,4]) under torch (condition number 5.1) "
        "JAX's JVP is 68 ulps from the exact rational value and castwise's 5; explained only within 4 tolerances",
        "docs/parity.md (documented departures); runtime/core/lax/linalg.py: _det_jvp",
        explains=_det_rounding,
    ),
    Departure(
        "triangular_solve-singular",
        "triangular_solve of a singular triangle (a zero pivot, as the sweep's integer and bool matrices have) "
        "divides by zero: substitution gives inf (5/0) and NaN (0/0, inf - inf, 0 * inf) in the order the "
        "definition computes them, which castwise follows and XLA's unbatched solve matches. jax.vmap with "
        "only b batched folds the batch into b's columns, one LAPACK trsm call with 6 columns instead of 2, and "
        "the BLAS kernel that column count selects (CPU-dependent) puts NaN where substitution gives inf "
        "(lax.linalg.triangular_solve of tril([[0,0,0],[1,1,0],[0,1,1]]), b = [[5,3],[5,1],[0,2]] is inf in row "
        "0 for 2 columns and NaN in columns 0-3 for 6 copies of them); finite values still must agree",
        "docs/parity.md (documented departures); runtime/core/kernels/linalg.py: triangular_solve_kernel",
        explains=_triangular_solve_columns,
    ),
)


def departure_for(case: Case, operands: Sequence[Any], ours_refused: bool, jax_refused: bool,
                  lax_refused: bool = False) -> Departure | None:  # fmt: skip
    """The documented departure that explains an acceptance disagreement, if any (``lax_refused``:
    whether jax.lax refused the case at JAX's own promoted dtypes, where that was asked)."""
    for dep in DEPARTURES:
        if dep.needs_lax_refusal and not lax_refused:
            continue
        if dep.applies(case, operands, ours_refused, jax_refused):
            return dep
    return None


def departure_explaining(case: Case, check: CheckResult) -> Departure | None:
    """The documented departure that explains a failed check, if any."""
    for dep in DEPARTURES:
        if dep.explains(case, check):
            return dep
    return None


@dataclass(frozen=True)
class KnownFailure:
    """A castwise bug the sweep found and reported, not yet fixed.

    Failures it ``matches`` are listed as known (``castwise parity --strict``
    counts them as failures). Remove the entry with the fix: the sweep then
    checks the case like any other.
    """

    name: str
    description: str
    matches: Callable[[Case, CheckResult], bool]


def _message_has(check: CheckResult, *texts: str) -> bool:
    """Whether the failure message contains every one of ``texts``."""
    return all(t in check.message for t in texts)


#: Known castwise bugs, found by this sweep and reported (docs/parity.md has the details
#: and a reproducer for each). Each matcher is as narrow as the bug.
KNOWN_FAILURES: tuple[KnownFailure, ...] = ()


def known_failure_for(case: Case, check: CheckResult) -> KnownFailure | None:
    """The ``KNOWN_FAILURES`` entry a failed check is, if any."""
    for known in KNOWN_FAILURES:
        if known.matches(case, check):
            return known
    return None
