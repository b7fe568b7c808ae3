"""``castwise parity``'s quick sample and its report of families that checked nothing (issue 13, section 7).

``castwise parity --quick --ops logical`` used to check 0 cases (all 318 refused by both sides, as the
sample preferred float operands, which the logical ops refuse) and still print OK.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("jax")

import runtime as rt
from autodiff import cli, parity
from autodiff.parity import CaseResult, CheckResult, Options, Report, build_cases, build_specs


def _run(**kw: Any) -> Report:
    return parity.run_parity(Options(**kw), progress=None)


def test_quick_sample_has_a_case_castwise_runs_in_every_family() -> None:
    cases = build_cases(parity.DEFAULT_POLICIES, quick=True)
    families = {s.family for s in build_specs()}
    accepted = {c.spec.family for c in cases if parity.castwise_accepts(c)}
    assert accepted == families
    # and per spec: every spec with a case castwise runs in the full sweep has one in the sample
    # (spot-checked on the specs that take few dtypes, where a random sample misses)
    for name in ("and", "or", "xor", "floor_div", "eigh", "cholesky", "triangular_solve"):
        assert any(c.spec.name == name and parity.castwise_accepts(c) for c in cases), name


def test_quick_logical_run_compares_values() -> None:
    report = _run(policies=("jax", "torch"), ops=("logical",), dtypes=(rt.bool_, rt.int8, rt.uint32, rt.float32),
                  quick=True)  # fmt: skip
    primal = report.table()["logical"]["primal"]
    assert primal.total > 0 and primal.failed == 0
    assert report.ok and not report.unchecked_families


def _result(family: str, checks: list[CheckResult], status: str) -> CaseResult:
    r = CaseResult(f"{family}-case", family, family, "jax", ("f32",), f"{family}(x:f32[3]) under jax")
    r.checks.extend(checks)
    r.status = status
    return r


def test_a_family_whose_cases_were_all_refused_is_not_ok() -> None:
    refused = _result("logical", [], "unsupported")
    checked = _result("unary", [CheckResult("agree", True), CheckResult("primal", True)], "ok")
    report = Report([refused, refused, checked], seed=0, quick=True, policies=("jax",))
    assert report.unchecked_families == {"logical": 2}
    assert not report.ok
    text = report.render()
    assert "NOT CHECKED: family logical: none of its 2 cases" in text
    assert "OK: castwise agrees" not in text
    assert Report([checked], seed=0, quick=True, policies=("jax",)).ok


def test_a_run_that_checks_nothing_of_a_requested_family_exits_non_zero(capsys: pytest.CaptureFixture[str]) -> None:
    # the logical ops take bool and integers only: with float32 alone, every case is refused
    code = cli.main(["parity", "--ops", "logical", "--dtypes", "f32", "--policy", "jax", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "NOT CHECKED: family logical" in out and "OK: castwise agrees" not in out
