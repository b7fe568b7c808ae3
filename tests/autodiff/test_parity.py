"""The ``castwise parity`` sweep machinery (``autodiff.parity``).

The sweep itself is the project's main job; these tests check that it checks:
a small run passes, a broken derivative rule or kernel is reported (non-zero
exit, the case and the expected vs got values), unsupported combinations are
listed rather than skipped, the filters and the JSON report behave, and the
documented departures and known failures are applied narrowly.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("jax")

import runtime as rt
from autodiff import cli, parity
from autodiff.parity import Case, CheckResult, KnownFailure, Options, Report, build_cases, build_specs
from autodiff.rules import VJP_RULES
from autodiff.zeros import Zero
from runtime.core import kernels, ops
from runtime.core import lax as F

f32, f64, c64, c128, i32 = rt.float32, rt.float64, rt.complex64, rt.complex128, rt.int32


def _run(**kw: Any) -> Report:
    return parity.run_parity(Options(**kw), progress=None)


def _spec(name: str) -> parity.Spec:
    return next(s for s in build_specs() if s.name == name)


# -- the table ---------------------------------------------------------------------------------------


def test_every_op_of_the_vocabulary_is_swept() -> None:
    assert {s.op for s in build_specs()} == set(ops.OPS)
    assert len({s.name for s in build_specs()}) == len(build_specs())


def test_cases_cover_every_dtype_both_orders_and_python_scalars() -> None:
    cases = build_cases(("jax",), ("add",), parity.DEFAULT_DTYPES, seed=0)
    slots = {c.slots for c in cases}
    for d in parity.DEFAULT_DTYPES:
        assert (d, d) in slots
        assert any(s[0] is d and s[1] is not d for s in slots), f"{d.name} never first in a mixed pair"
        assert any(s[1] is d and s[0] is not d for s in slots), f"{d.name} never second in a mixed pair"
    assert (f64, c128) in slots and (c128, f64) in slots
    for a, b in slots:
        if a != b and isinstance(a, rt.DType) and isinstance(b, rt.DType):
            assert (b, a) in slots, f"({a.short}, {b.short}) without its reverse"
    assert {s.kind for t in slots for s in t if isinstance(s, parity.PyScalar)} == {"bool", "int", "float", "complex"}
    convert = build_cases(("jax",), ("convert",), (f32, c64, i32), seed=0)
    assert {c.slots for c in convert} == {(a, b) for a in (f32, c64, i32) for b in (f32, c64, i32)}


def test_seed_changes_samples_and_inputs_but_is_deterministic() -> None:
    a = build_cases(("torch",), ("mul",), parity.CORE_DTYPES, seed=0)
    assert [c.id for c in a] == [c.id for c in build_cases(("torch",), ("mul",), parity.CORE_DTYPES, seed=0)]
    b = build_cases(("torch",), ("mul",), parity.CORE_DTYPES, seed=1)
    assert [c.id for c in a] != [c.id for c in b]
    case = Case(_spec("mul"), "jax", (f32, c64))
    x0, x0_again, x1 = (parity._make_inputs(case, s) for s in (0, 0, 1))
    assert all(np.array_equal(p, q) for p, q in zip(x0, x0_again, strict=True))
    assert not all(np.array_equal(p, q) for p, q in zip(x0, x1, strict=True))


def test_inputs_avoid_ties_and_stay_in_domain() -> None:
    rng = np.random.default_rng(0)
    for d in (f32, rt.float16, rt.bfloat16, rt.float8_e4m3fn, rt.float8_e5m2, c64):
        x = parity.draw(d, "any", (64,), rng, 0, 2)
        y = parity.draw(d, "any", (64,), rng, 1, 2)
        assert not np.any(x == y), d.name  # operand positions draw from disjoint grids
        assert np.all(np.real(parity.draw(d, "pos", (64,), rng)).astype(np.float64) > 0)
    lo, x, hi = parity._gen_clamp((f32, rt.int8, f64), rng)
    assert lo[0] < x[0] < hi[0] and x[1] < lo[1] and x[2] > hi[2]
    m = parity.draw_distinct(rt.float8_e5m2, (3, 4), 1, rng)
    assert all(len(set(row.tolist())) == 4 for row in m.astype(np.float64))


def test_quick_samples_every_op_a_few_hundred_cases() -> None:
    cases = build_cases(parity.DEFAULT_POLICIES, quick=True)
    assert 200 <= len(cases) <= 500
    assert {c.spec.name for c in cases} == {s.name for s in build_specs()}
    assert {c.policy for c in cases} == set(parity.DEFAULT_POLICIES)


# -- runs ------------------------------------------------------------------------------------------------


SMALL_SWEEP: dict[str, Any] = {
    "policies": ("jax",),
    "ops": ("mul", "exp", "convert", "dot_general", "select", "reduce_max"),
    "dtypes": (rt.bool_, i32, f32, c64),
}
#: of the small sweep's specs, the ones the default run leaves to the slow test (a third of its CPU:
#: each case compiles a dozen programs); their families keep the specs of the plain op
SMALL_SWEEP_SLOW_SPECS = ("dot_general-batched", "select-broadcast")


def test_a_small_sweep_passes_every_check() -> None:
    # (one policy and four dtypes: since the sweep has vmap checks, two policies took a minute of CI;
    # every policy is swept by test_quick_sweep_passes_from_the_command_line and the full run)
    selected = build_cases(SMALL_SWEEP["policies"], SMALL_SWEEP["ops"], SMALL_SWEEP["dtypes"])
    cases = [c for c in selected if c.spec.name not in SMALL_SWEEP_SLOW_SPECS]
    report = Report([parity.run_case(c) for c in cases], seed=0, quick=False, policies=("jax",), strict=False)
    _assert_the_small_sweep_passes(report)


@pytest.mark.slow
def test_a_small_sweep_passes_every_check_in_every_spec() -> None:
    _assert_the_small_sweep_passes(_run(**SMALL_SWEEP))


def _assert_the_small_sweep_passes(report: Report) -> None:
    assert report.ok, report.render()
    table = report.table()
    for family in ("binary", "unary", "convert", "dot_general", "select", "reduce"):
        cells = table[family]
        for check in ("agree", "primal", "replay"):
            assert cells[check].passed > 0 and cells[check].failed == 0, (family, check)
    assert table["binary"]["jvp"].passed > 0 and table["binary"]["vjp"].passed > 0
    assert "OK" in report.render()


def test_a_broken_vjp_rule_is_reported_with_a_non_zero_exit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """mul's VJP without the conjugates: right for real dtypes, wrong for complex ones."""
    right = VJP_RULES["mul"]

    def wrong(cotangents: Any, primals: Any, outputs: Any, needs: Any) -> Any:
        (ct,), (x, y) = cotangents, primals
        return [F.mul(ct, y) if needs[0] else Zero.like(x), F.mul(ct, x) if needs[1] else Zero.like(y)]

    monkeypatch.setitem(VJP_RULES, "mul", wrong)
    code = cli.main(["parity", "--ops", "mul", "--policy", "jax", "--dtypes", "f32,c64", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAILED" in out and "- vjp: mul(x:c64[3], y:c64[3]) under jax" in out
    assert "expected:" in out and "got:" in out
    report = _run(policies=("jax",), ops=("mul",), dtypes=(f32, c64))
    failed = {(r.slots, c.check) for r in report.results for c in r.failures}
    # only cases with a complex operand (a tensor or a Python complex) can see the missing conjugates
    assert failed and all(any(s in ("c64", "py-complex") for s in slots) and check == "vjp" for slots, check in failed)
    assert report.table()["binary"]["jvp"].failed == 0  # forward mode is untouched
    monkeypatch.setitem(VJP_RULES, "mul", right)
    assert _run(policies=("jax",), ops=("mul",), dtypes=(f32, c64)).ok


def test_a_broken_kernel_fails_primal_and_replay_still_matches_eager(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = kernels.KERNELS["max"]

    def off_by_one(x: np.ndarray, y: np.ndarray, **params: Any) -> tuple[np.ndarray, ...]:
        (out,) = kernel(x, y, **params)
        return ((out + np.ones((), out.dtype)).astype(out.dtype),)

    monkeypatch.setitem(kernels.KERNELS, "max", off_by_one)
    report = _run(policies=("numpy",), ops=("max",), dtypes=(i32, f64))
    checks = {c.check for r in report.failed for c in r.failures}
    assert "primal" in checks
    assert "replay" not in checks  # the replay runs the same (broken) kernel: still bit for bit


def test_replay_catches_eager_paths_that_bypass_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mixed-dtype add/sub/mul run as one NumPy ufunc call with in-loop casting, not convert +
    kernel: if the kernel disagreed with that path, the recorded graph's replay would differ."""
    kernel = kernels.KERNELS["sub"]

    def off_by_one(x: np.ndarray, y: np.ndarray, **params: Any) -> tuple[np.ndarray, ...]:
        (out,) = kernel(x, y, **params)
        return ((out + np.ones((), out.dtype)).astype(out.dtype),)

    monkeypatch.setitem(kernels.KERNELS, "sub", off_by_one)
    result = parity.run_case(Case(_spec("sub"), "numpy", (f32, f64)))
    replay = next(c for c in result.checks if c.check == "replay")
    assert not replay.ok and "replay differs from eager execution" in replay.message


def test_json_report_structure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "parity.json"
    # (neg of bool: refused by both sides, an unsupported case; sqrt of integers converts now)
    code = cli.main(["parity", "--ops", "sqrt,add,neg", "--policy", "jax", "torch", "--dtypes", "bool,i32,f32,c64",
                     "--json", str(path), "--no-progress"])  # fmt: skip
    assert code == 0, capsys.readouterr().out
    data = json.loads(path.read_text())
    assert data["ok"] is True and data["version"] == 1 and data["policies"] == ["jax", "torch"]
    counts = data["counts"]
    assert counts["cases"] == len(build_cases(("jax", "torch"), ("sqrt", "add", "neg"), (rt.bool_, i32, f32, c64)))
    assert counts["failed_checks"] == 0 and data["failures"] == []
    assert counts["unsupported"] == len(data["unsupported"]) > 0
    assert counts["departures"] == len(data["departures"])
    for row in data["summary"]:
        assert set(row) == {"family", "check", "passed", "failed", "known", "worst"}
        assert row["check"] in parity.CHECKS
    assert {row["family"] for row in data["summary"]} == {"binary", "unary"}
    for item in data["unsupported"]:
        assert set(item) == {"case", "op", "policy", "dtypes", "castwise", "jax"}
        assert item["castwise"] and item["jax"]  # both sides said why
    assert set(data["cpu_s_by_op"]) == {"sqrt", "add", "neg"}


@functools.cache
def _neuron_report() -> Report:
    """One sweep for the two tests that read its unsupported cases (they only read the report)."""
    return _run(policies=("jax", "neuron"), ops=("neg", "add", "lt"), dtypes=(rt.bool_, i32, f32, c64))


def test_unsupported_cases_are_listed_not_skipped() -> None:
    report = _neuron_report()
    unsupported = {(r.spec, r.policy, r.slots) for r in report.unsupported}
    assert ("neg", "jax", ("bool",)) in unsupported  # lax.neg and jnp.negative refuse bool, so does castwise
    assert ("add", "neuron", ("bool", "bool")) in unsupported  # neuron keeps lax's meaning: refused
    # jnp.less orders complex numbers where lax refuses: a documented departure, not a failure
    assert [r.departure for r in report.departures if r.spec == "lt" and r.slots == ("c64", "c64")] == ["jnp-converts"]
    assert ("add", "neuron", ("c64", "f32")) in unsupported  # neuron has no complex dtypes to promote to
    assert all(r.castwise_error and r.jax_error for r in report.unsupported)
    text = report.render()
    assert f"unsupported (castwise and JAX both refuse): {len(report.unsupported)}" in text
    assert "neg @jax: (bool)" in text
    # every case is accounted for: checked, unsupported or a documented departure
    assert all(r.checks or r.status == "unsupported" for r in report.results)


def test_documented_departures_are_applied_narrowly() -> None:
    # the two dtypes the assertions name (the slow test below adds bool and float32: three times the cases)
    _assert_departures_are_narrow(_run(policies=("jax", "torch"), ops=("atan2", "clamp", "lt"), dtypes=(i32, c64)))


@pytest.mark.slow
def test_documented_departures_are_applied_narrowly_among_four_dtypes() -> None:
    report = _run(policies=("jax", "torch"), ops=("atan2", "clamp", "lt"), dtypes=(rt.bool_, i32, f32, c64))
    _assert_departures_are_narrow(report)


def _assert_departures_are_narrow(report: Report) -> None:
    assert report.ok, report.render()
    deps = {(r.spec, r.policy, r.slots): r.departure for r in report.departures}
    assert deps[("atan2", "torch", ("c64", "c64"))] == "atan2-complex"
    assert deps[("clamp", "torch", ("c64", "c64", "c64"))] == "clamp-complex"
    assert deps[("lt", "jax", ("c64", "c64"))] == "jnp-converts"
    # atan2 of integers converts them to the policy's float, as jnp.arctan2 does: no departure
    assert ("atan2", "jax", ("i32", "i32")) not in deps and ("atan2", "torch", ("i32", "i32")) not in deps
    assert "documented departures" in report.render()


def test_special_functions_xla_cannot_compile_in_float8_are_a_narrow_departure() -> None:
    e4m3 = rt.float8_e4m3fn
    report = _run(policies=("torch",), ops=("erfc", "erf", "bessel_i0e", "bessel_i1e"), dtypes=(e4m3, f32))
    assert report.ok, report.render()
    deps = {(r.spec, r.slots): r.departure for r in report.departures}
    assert deps[("erfc", ("f8e4m3fn",))] == deps[("bessel_i1e", ("f8e4m3fn",))] == "special-float8-xla"
    # erf compiles in float8 and bessel_i0e's primal too: compared as every other case
    assert ("erf", ("f8e4m3fn",)) not in deps and not any(spec == "erfc" for spec, slots in deps if slots == ("f32",))


def test_special_function_nans_in_8_bit_floats_are_a_departure_only_there() -> None:
    # two of the sweep's igamma cases (each compiles XLA's series, seconds per program; the slow
    # test below sweeps all twelve): e3m4 with a Python int, whose primal, JVP and VJP XLA gets
    # NaN for, and float32 with a Python float, compared as every other case
    spec, e3m4 = _spec("igamma"), rt.float8_e3m4
    results = [parity.run_case(Case(spec, "jax", slots)) for slots in
               ((e3m4, parity.PyScalar("int")), (parity.PyScalar("float"), f32))]  # fmt: skip
    report = Report(results, seed=0, quick=False, policies=("jax",), strict=True)
    assert report.ok, report.render()
    explained = {(r.slots, c.check) for r, c in report.departed_checks if c.departure == "special-float8-nan"}
    assert explained == {(("f8e3m4", "py-int"), check) for check in ("primal", "jvp", "vjp")}


@pytest.mark.slow
def test_special_function_nans_in_8_bit_floats_are_a_departure_only_there_in_every_igamma_case() -> None:
    e3m4 = rt.float8_e3m4
    report = _run(policies=("jax",), ops=("igamma",), dtypes=(e3m4, f32))
    assert report.ok, report.render()
    explained = {(r.spec, r.slots) for r, c in report.departed_checks if c.departure == "special-float8-nan"}
    assert ("igamma", ("f8e3m4", "f8e3m4")) in explained  # XLA runs the series in e3m4 and gets NaN
    assert not any("f32" in slots for _, slots in explained)  # float32 is compared as every other case


def test_nextafter_in_e8m0_is_a_departure_only_there() -> None:
    report = _run(policies=("jax",), ops=("nextafter",), dtypes=(rt.float8_e8m0fnu, f32))
    assert report.ok, report.render()
    explained = {(r.spec, r.slots, c.check) for r, c in report.departed_checks if c.departure == "nextafter-e8m0"}
    assert ("nextafter", ("f8e8m0fnu", "f8e8m0fnu"), "vmap") in explained  # XLA's batched nextafter differs again
    assert not any("f32" in slots for _, slots, _ in explained)  # float32 is compared as every other case


def test_castwise_accepting_what_jax_refuses_is_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _spec("neg")
    lenient = dataclasses.replace(spec, ours=lambda x: F.convert(x, i32) if x.dtype is rt.bool_ else F.neg(x))
    result = parity.run_case(Case(lenient, "torch", (rt.bool_,)))
    assert result.status == "failed"
    (check,) = result.failures
    assert check.check == "agree" and check.message == "castwise accepts what JAX refuses"


def test_known_failures_are_listed_and_strict_fails_them(monkeypatch: pytest.MonkeyPatch) -> None:
    def off(x: np.ndarray, y: np.ndarray, **params: Any) -> tuple[np.ndarray, ...]:
        return ((x - y + np.ones((), x.dtype)).astype(x.dtype),)

    monkeypatch.setitem(kernels.KERNELS, "sub", off)
    known = KnownFailure("sub-off-by-one", "sub adds one", lambda case, check: case.spec.op == "sub")
    monkeypatch.setattr(parity.departures, "KNOWN_FAILURES", (known,))
    monkeypatch.setattr(parity.report, "KNOWN_FAILURES", (known,))
    report = _run(policies=("jax",), ops=("sub",), dtypes=(i32,))
    assert report.ok and not report.failed and report.known
    assert "known failures" in report.render() and "sub-off-by-one" in report.render()
    cell = report.table()["binary"]["primal"]
    assert cell.known > 0 and cell.failed == 0
    strict = parity.run_parity(Options(policies=("jax",), ops=("sub",), dtypes=(i32,), strict=True), progress=None)
    assert not strict.ok and "FAILED" in strict.render()


def test_filters(capsys: pytest.CaptureFixture[str]) -> None:
    by_family = build_cases(("jax",), ("reduce",), (f32,))
    assert {c.spec.op for c in by_family} == {"reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "argmax",
                                              "argmin", "reduce_and", "reduce_or", "reduce_xor"}  # fmt: skip
    globbed = build_cases(("jax",), ("dot_*",), (f32, c64))
    assert {c.spec.name for c in globbed} == {"dot_general", "dot_general-batched", "dot_general-precision"}
    for c in globbed:
        assert all(s in (f32, c64) for s in c.slots)
    assert parity.parse_dtypes("f32, complex64,float8") == (f32, c64, *parity.FLOAT8_DTYPES)
    assert cli.main(["parity", "--dtypes", "f33", "--no-progress"]) == 2
    assert cli.main(["parity", "--ops", "no-such-op", "--no-progress"]) == 2
    assert cli.main(["parity", "--policy", "nope", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "f33" in err and "no cases match" in err and "unknown policy" in err


def test_progress_bar_goes_to_the_stream() -> None:
    stream = io.StringIO()
    parity.run_parity(Options(policies=("jax",), ops=("neg",), dtypes=(f32, i32)), progress=stream)
    text = stream.getvalue()
    assert "parity: 2/2 cases, 0 failed" in text  # not a terminal: a line per tenth


def test_compare_tolerance_and_exactness() -> None:
    a = np.array([1.0, 2.0, np.nan], np.float32)
    ok, ratio, _ = parity.compare(a, a.copy(), 1e-6, exact=True)
    assert ok and ratio == 0
    b = np.nextafter(a, np.float32(3))
    assert not parity.compare(b, a, 1e-6, exact=True)[0]
    ok, ratio, _ = parity.compare(b, a, parity.tolerance(f32, derivative=False), exact=False)
    assert ok and 0 < ratio <= 1
    assert not parity.compare(np.array([1, 2]), np.array([1, 3]), 1.0, exact=False)[0]
    assert not parity.compare(np.array([1.0]), np.array([np.inf]), 1.0, exact=False)[0]


def test_check_result_of_a_wrong_dtype_names_both() -> None:
    from runtime.core.tensor import Tensor

    got = Tensor(np.zeros(3, np.float64), f64)
    result = parity._check_arrays("primal", [got], [np.zeros(3, np.float32)], f32, False, False)
    assert isinstance(result, CheckResult) and not result.ok
    assert "dtype float64, expected float32" in result.message


@pytest.mark.slow
def test_quick_sweep_passes_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["parity", "--quick", "--no-progress"]) == 0, capsys.readouterr().out


def test_markdown_lists_unsupported_combinations() -> None:
    report = _neuron_report()
    text = parity.markdown(report)
    assert "| neg | bool |" in text  # refused under every policy swept
    assert "| add | bool [neuron] |" in text  # under jax, bool + bool is a logical or on both sides
    assert "| neuron | add |" in text and re.search(r"jnp-converts [1-9]", text)


def test_docs_describe_every_departure_and_known_failure() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "parity.md").read_text()
    for entry in (*parity.DEPARTURES, *parity.KNOWN_FAILURES):
        assert f"`{entry.name}`" in text, f"docs/parity.md does not describe {entry.name}"
    assert "<!-- BEGIN GENERATED: castwise parity --markdown" in text and "### Unsupported" in text


def test_pow_by_a_python_int_is_a_documented_departure() -> None:
    import jax.numpy as jnp

    # The evidence: JAX's lattice, and jnp.add, give int64 for bool and a Python int (x64), and so
    # does castwise's one plan. jnp.power alone gives int32: a concrete integer exponent makes it
    # lax.integer_pow of the base promoted on its own (bool -> int32, whatever x64 says).
    with parity._jax_x64():
        b = jnp.array([True, False])
        assert jnp.result_type(jnp.bool_, 2) == jnp.add(b, 2).dtype == jnp.multiply(b, 2).dtype == jnp.int64
        assert jnp.power(b, 2).dtype == jnp.power(b, np.int64(2)).dtype == jnp.int32
        assert jnp.power(b, jnp.array([2, 2])).dtype == jnp.int64  # an array exponent takes part in promotion
    assert F.pow(rt.asarray(np.array([True, False])), 2).dtype is rt.int64
    spec = _spec("pow")
    py_int, py_bool = parity.PyScalar("int"), parity.PyScalar("bool")
    primal = parity.run_case(Case(spec, "jax", (rt.bool_, py_int)))
    assert primal.status == "ok" and [(c.check, c.departure) for c in primal.checks if c.departure] == [
        ("primal", "pow-integer-exponent")
    ]
    # float8_e8m0fnu ** True: integer_pow's derivative is finite, castwise's y * x**(y - 1) is NaN (no 0)
    derivative = parity.run_case(Case(spec, "jax", (rt.float8_e8m0fnu, py_bool)))
    assert derivative.status == "ok"
    assert {c.check for c in derivative.checks if c.departure == "pow-integer-exponent"} == {"jvp", "vjp"}
    # narrowly: other policies plan the same way on both sides, and other exponents are promoted operands
    for case in (Case(spec, "torch", (rt.bool_, py_int)), Case(spec, "jax", (i32, py_int))):
        assert not any(c.departure for c in parity.run_case(case).checks)
    report = Report([primal, derivative], seed=0, quick=False, policies=("jax",), strict=True)
    assert report.ok and report.departure_counts()["pow-integer-exponent"] == (0, 3)
    assert "pow-integer-exponent (3 checks)" in report.render()
    assert "pow-integer-exponent 0 + 3 checks" in parity.markdown(report)


def test_e8m0_jvps_of_several_operands_come_from_one_jax_jvp() -> None:
    # JAX's JVP with one operand active pads with its zeros, NaN in float8_e8m0fnu: summing those
    # per-operand JVPs would make every multi-operand JVP NaN. The sweep asks JAX for the joint JVP.
    e8m0 = rt.float8_e8m0fnu
    for name in ("concatenate", "select", "dynamic_update_slice", "scatter"):
        case = next(c for c in build_cases(("jax",), (name,), (rt.bool_, e8m0)) if c.slots.count(e8m0) >= 2)
        result = parity.run_case(case)
        assert result.status == "ok" and not any(c.departure for c in result.checks), result.checks
        assert any(c.check == "jvp" and c.active is not None and len(c.active) > 1 for c in result.checks)


def test_e8m0_derivative_formula_departure_is_narrow() -> None:
    e8m0 = rt.float8_e8m0fnu
    for name in ("scatter_add", "reduce_prod"):
        (case,) = [c for c in build_cases(("jax",), (name,), (e8m0,))]
        result = parity.run_case(case)
        assert result.status == "ok"
        assert {c.departure for c in result.checks if c.departure} == {"e8m0-derivative-formula"}
        assert all(c.check in ("jvp", "vjp") for c in result.checks if c.departure)
    # the same ops in float8_e4m3fn are checked like any other
    for name in ("scatter_add", "reduce_prod"):
        (case,) = [c for c in build_cases(("jax",), (name,), (rt.float8_e4m3fn,))]
        assert not any(c.departure for c in parity.run_case(case).checks)


# -- the plan's per-op families and the kael policy --------------------------------------------------


def test_integer_inputs_to_float_only_ops_are_checked_under_every_policy() -> None:
    report = _run(policies=("jax", "torch", "numpy"), ops=("sqrt", "tanh", "logistic", "rsqrt"), dtypes=(rt.bool_, i32))
    assert report.ok, report.render()
    checked = {(r.spec, r.policy, r.slots) for r in report.results if r.checks and r.status != "unsupported"}
    for policy in ("jax", "torch", "numpy"):
        assert ("sqrt", policy, ("i32",)) in checked and ("tanh", policy, ("bool",)) in checked


def test_bool_arithmetic_and_complex_parts_are_checked_through_the_rewrite() -> None:
    report = _run(policies=("jax", "numpy", "torch"), ops=("add", "mul", "real", "imag", "conj", "reduce_sum"),
                  dtypes=(rt.bool_, f64))  # fmt: skip
    assert report.ok, report.render()
    results = {(r.spec, r.policy, r.slots): r for r in report.results}
    for policy in ("jax", "numpy", "torch"):
        assert results[("add", policy, ("bool", "bool"))].status == "ok"
        assert results[("reduce_sum", policy, ("bool",))].status == "ok"
    # imag of a tracked real operand is a constant: replayed, and its zero cotangent agrees with JAX's
    imag = results[("imag", "jax", ("f64",))]
    assert imag.status == "ok" and {c.check for c in imag.checks} >= {"replay", "vjp"}
    assert results[("imag", "torch", ("f64",))].status == "unsupported"  # PyTorch refuses, so does castwise


def test_kael_is_swept_in_its_own_dtypes() -> None:
    assert "kael" in parity.DEFAULT_POLICIES
    cases = build_cases(("kael",), ("add", "exp", "div"), parity.DEFAULT_DTYPES)
    kael = {rt.bool_, rt.int64, rt.float32, f64}
    assert cases and all(s in kael for c in cases for s in c.slots if isinstance(s, rt.DType))
    # the two ops the assertions name, in every kael dtype (the slow test below adds mul, lt and exp)
    _assert_kael_sweep_passes(_run(policies=("kael",), ops=("add", "div")))


@pytest.mark.slow
def test_kael_is_swept_in_its_own_dtypes_over_five_ops() -> None:
    _assert_kael_sweep_passes(_run(policies=("kael",), ops=("add", "mul", "div", "lt", "exp")))


def _assert_kael_sweep_passes(report: Report) -> None:
    assert report.ok, report.render()
    results = {(r.spec, r.slots): r for r in report.results}
    assert results[("add", ("bool", "bool"))].status == "ok"  # counted in int64 on both sides
    assert results[("div", ("i64", "i64"))].status == "ok"


# -- the vmap rows ------------------------------------------------------------------------------------


def test_per_example_vmap_reference_stacks_along_the_output_batch_axis() -> None:
    # div of int2 under jax is a documented departure (jnp keeps int2, castwise gives float32), so
    # its vmap rows compare with castwise's own per-example results; vmap puts the batch on output
    # axis 0 whatever the operands' batch axis. [3,1] / [4] gives [3,4]: with 3 examples a
    # reference stacked along the operands' axis 1 has the same shape but other values.
    (case,) = build_cases(("jax",), ("div-broadcast",), (rt.int2,))
    result = parity.run_case(case)
    rows = [c for c in result.checks if c.check == "vmap"]
    assert len(rows) == 6 and all(c.ok for c in rows), [c.message for c in rows if not c.ok]
    # the same fallback on a float case that jax.vmap also checks: both references agree
    (case,) = build_cases(("jax",), ("min-broadcast-rank-equal",), (f32,))
    prep = parity.references.prepare(case, 0)
    answers = parity.checks.eager_source(prep)
    for primal_ok in (True, False):
        rows = parity.checks._check_vmap(prep, answers, f32, True, primal_ok)
        assert len(rows) == 6 and all(c.ok for c in rows), [c.message for c in rows if not c.ok]


def test_dtypes_a_policy_does_not_know_leave_it_without_cases() -> None:
    # kael has four dtypes: --dtypes narrow-int leaves it none, which must not crash the case builder
    cases = build_cases(parity.DEFAULT_POLICIES, ("add", "mul"), parity.NARROW_INT_DTYPES)
    assert cases and not any(c.policy == "kael" for c in cases)


def test_float_only_ops_of_integer_operands_are_checked_against_jax_numpy() -> None:
    # nextafter converts integer and bool operands as the other float-only ops do: under jax the
    # reference is jnp.nextafter, which converts them too (lax.nextafter refuses them)
    report = _run(policies=("jax",), ops=("nextafter",), dtypes=(rt.bool_, rt.int8, i32, rt.int64))
    assert report.ok, report.render()
    results = {r.slots: r for r in report.results}
    assert results[("i32", "i32")].status == "ok" and results[("bool", "bool")].status == "ok"


def test_integer_cholesky_inputs_keep_their_dtype() -> None:
    # the generator's symmetric integer matrix stays in the slot's dtype (NumPy's maximum of two
    # int2 arrays is int8, which castwise refuses to hold as int2)
    report = _run(policies=("neuron",), ops=("cholesky",), dtypes=(rt.int2, rt.uint2))
    assert report.ok, report.render()
    assert {r.status for r in report.results} <= {"ok", "unsupported", "departure"}


def test_compile_cache_keeps_the_reference_executables_between_runs(tmp_path: Path) -> None:
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    names = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
             "jax_persistent_cache_min_entry_size_bytes")  # fmt: skip
    saved = {n: getattr(jax.config, n) for n in names}
    # (one policy: what is kept and reused does not depend on it)
    opts = {"policies": ("jax",), "ops": ("atan2",), "dtypes": (f32, rt.float16),
            "compile_cache": str(tmp_path / "xla")}  # fmt: skip
    try:
        first = _run(**opts)
        entries = sorted(p.name for p in (tmp_path / "xla").iterdir())
        assert entries  # every executable is kept, however quick it was to compile
        second = _run(**opts)
        # a second run compiles nothing new, and checks the same things with the same outcome
        assert sorted(p.name for p in (tmp_path / "xla").iterdir()) == entries
    finally:
        for n, v in saved.items():
            jax.config.update(n, v)
        compilation_cache.reset_cache()
    assert first.ok and second.ok
    assert [(r.case_id, r.status, [(c.check, c.ok, c.ratio) for c in r.checks]) for r in first.results] == [
        (r.case_id, r.status, [(c.check, c.ok, c.ratio) for c in r.checks]) for r in second.results
    ]


def test_markdown_regenerates_the_generated_block_of_a_page_in_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\nprose\n\n<!-- BEGIN GENERATED: castwise parity --markdown (x) -->\n\nold\n\n"
                    "<!-- END GENERATED -->\n\nafter\n")  # fmt: skip
    assert cli.main(["parity", "--ops", "neg", "--policy", "jax", "--dtypes", "f32", "--no-progress",
                     "--no-compile-cache", "--markdown", str(page)]) == 0  # fmt: skip
    capsys.readouterr()
    text = page.read_text()
    assert text.startswith("# Title\n\nprose\n\n<!-- BEGIN GENERATED: castwise parity --markdown (x) -->\n\nSeed 0")
    assert text.endswith("\n\n<!-- END GENERATED -->\n\nafter\n") and "old" not in text
    # docs/parity.md has the block: splicing its own contents back leaves the page unchanged
    docs = (Path(__file__).resolve().parents[2] / "docs" / "parity.md").read_text()
    block = docs.split("(seed 0, full sweep) -->\n", 1)[1].split("<!-- END GENERATED -->")[0].strip("\n")
    assert parity.report.splice_markdown(docs, block) == docs


def test_a_python_int_out_of_a_2_bit_range_is_a_documented_refusal() -> None:
    # castwise refuses int2 - 2 (2 does not fit int2) where JAX wraps it to -2; in uint2 it fits
    report = _run(policies=("jax", "torch"), ops=("sub",), dtypes=(rt.int2, rt.uint2))
    assert report.ok, report.render()
    results = {(r.policy, r.slots): r for r in report.results}
    refused = results[("jax", ("i2", "py-int"))]
    assert refused.status == "departure" and refused.departure == "narrow-int-python-int-range"
    fits = [r for r in report.results if "py-int" in r.slots and "u2" in r.slots and "i2" not in r.slots]
    assert fits and all(r.status == "ok" for r in fits)
