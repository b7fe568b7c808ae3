"""``castwise parity --shard K/N`` and ``--merge`` (``autodiff.parity.shards``).

The partition is tested on case ids alone (no JAX): over the full case list and
``--quick``, the shards are disjoint, their union is the selection, they are the
same however often they are computed, and their expected costs are within a
stated factor of each other. The merge is tested twice: on the JSON reports of
three shards of a small real run, against that run's own report (summary,
counts, status per case, failures, printed text and exit status); and on
synthetic reports with failures, known failures and departures, without JAX.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from autodiff import cli
from autodiff.parity import cli as parity_cli
from autodiff.parity import shards
from autodiff.parity._common import CHECKS, DEFAULT_DTYPES, DEFAULT_POLICIES, Case, CheckResult
from autodiff.parity.cases import build_cases
from autodiff.parity.departures import DEPARTURES
from autodiff.parity.report import Report, case_from_json, case_to_json, write_json
from autodiff.parity.runner import CaseResult


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as exit_:  # argparse's usage errors
        code = int(exit_.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing JAX, building the cases or sweeping fails the test."""

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("reached the work")

    for name in ("_jax_installed", "_cases_for", "run_parity"):
        monkeypatch.setattr(parity_cli, name, refuse)


# -- the partition ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def full() -> list[Case]:
    return build_cases(DEFAULT_POLICIES, ("*",), DEFAULT_DTYPES, 0, False)


@pytest.fixture(scope="module")
def full_again() -> list[Case]:
    """The full case list built a second time, as another CI machine builds it."""
    return build_cases(DEFAULT_POLICIES, ("*",), DEFAULT_DTYPES, 0, False)


@pytest.fixture(scope="module")
def quick() -> list[Case]:
    return build_cases(DEFAULT_POLICIES, ("*",), DEFAULT_DTYPES, 0, True)


def _check_partition(cases: Sequence[Case], n: int) -> list[list[int]]:
    parts = shards.partition(cases, n)
    assert len(parts) == n
    ids = [cases[i].id for part in parts for i in part]
    assert len(ids) == len(set(ids)) == len(cases)  # no case twice ...
    assert set(ids) == {c.id for c in cases}  # ... and none left out
    for part in parts:
        assert part == sorted(part)  # each shard runs its cases in the selection's order
    return parts


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16])
def test_the_shards_of_the_full_sweep_are_the_selection_once(full: list[Case], full_again: list[Case], n: int) -> None:
    parts = _check_partition(full, n)
    # deterministic: a fresh case list (as another CI machine builds it) gives the same shards
    again = full_again
    assert [[again[i].id for i in p] for p in shards.partition(again, n)] == [[full[i].id for i in p] for p in parts]
    # ``--shard K/N`` is partition's K-th part, counted from 1 (first and last: each call partitions)
    for k in sorted({1, n}):
        assert shards.shard_indices(full, (k, n)) == parts[k - 1]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8])
def test_the_shards_of_quick_are_the_selection_once(quick: list[Case], n: int) -> None:
    _check_partition(quick, n)


#: The balance the partition promises: each shard's expected cost within 1/8 of the mean (its
#: chunks are at most 1/8 of it), or the mean plus one case where a single case is larger.
BALANCE: float = 1.125


@pytest.mark.parametrize(("which", "n"), [("full", 2), ("full", 4), ("full", 16), ("quick", 2), ("quick", 4),
                                          ("quick", 8)])  # fmt: skip
def test_the_shards_are_balanced_by_expected_cost(request: pytest.FixtureRequest, which: str, n: int) -> None:
    cases: list[Case] = request.getfixturevalue(which)
    costs = [shards.case_cost(c) for c in cases]
    loads = [sum(costs[i] for i in part) for part in shards.partition(cases, n)]
    mean = sum(costs) / n
    assert max(loads) <= max(BALANCE * mean, mean + max(costs)) + 1e-9, loads
    assert min(loads) >= mean / 2, loads  # (no shard is left nearly idle either)


def test_more_shards_than_cases_leaves_some_empty() -> None:
    cases = build_cases(("jax",), ("neg",), DEFAULT_DTYPES[:3], 0)
    parts = _check_partition(cases, len(cases) + 2)
    assert sum(1 for p in parts if not p) == 2


def test_case_cost_follows_the_programs_a_case_compiles(full: list[Case]) -> None:
    by_id = {c.id: c for c in full}
    one = shards.case_cost(by_id["neg[f32]@jax"])  # primal, 2 vmap rows, a JVP and a VJP
    assert shards.case_cost(by_id["neg[i32]@jax"]) < one  # no derivatives to compile
    assert shards.case_cost(by_id["add[f32,f32]@jax"]) > one  # 6 vmap rows, 2 JVPs
    assert shards.case_cost(by_id["cholesky[f32]@jax"]) > one  # a decomposition


@pytest.mark.parametrize("text", ["2/4", " 1/1 ", "4/4"])
def test_parse_shard(text: str) -> None:
    k, n = shards.parse_shard(text)
    assert f"{k}/{n}" == text.strip()


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "2", "a/b", "1/2/3", "x/3", ""])
def test_a_bad_shard_is_one_line_before_any_work(capsys: pytest.CaptureFixture[str], no_work: None,
                                                 text: str) -> None:  # fmt: skip
    code, out, err = _run(capsys, "parity", "--shard", text)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("castwise parity: --shard"), err


def test_merge_refuses_run_options(capsys: pytest.CaptureFixture[str], no_work: None, tmp_path: Path) -> None:
    code, _, err = _run(capsys, "parity", "--merge", str(tmp_path / "a.json"), "--ops", "add", "--shard", "1/2")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("castwise parity: --merge combines") and "--shard, --ops" in err


# -- the JSON of one case ------------------------------------------------------------------------------


def _result(k: int, status: str = "ok", **kw: Any) -> CaseResult:
    r = CaseResult(f"mul[f32,c64]@jax#{k}", "mul", "binary", "jax", ("f32", "c64"), f"mul(x:f32[3]) #{k}", status, **kw)
    if not r.checks and status not in ("unsupported", "departure"):
        r.checks = [CheckResult(c, True, 0.25) for c in CHECKS] + [CheckResult("vjp", True, 0.5, (0, 1))]
    return r


def test_a_case_survives_its_json() -> None:
    r = _result(0, "failed", castwise_error="", cpu_s=0.125)
    r.checks.append(CheckResult("jvp", False, float("inf"), (1,), "NaN in different positions", "[nan]", "[1.]"))
    r.checks.append(CheckResult("vmap", True, 0.0, (0,), "batch axis 0 ...", departure="some-departure"))
    back = case_from_json(json.loads(json.dumps(case_to_json(r, 7))))
    assert back == r
    assert case_to_json(r, 7)["i"] == 7


# -- the merge -------------------------------------------------------------------------------------------


def _shard_reports(report: Report, n: int, tmp_path: Path) -> list[str]:
    """``report`` split into ``n`` shards' JSON reports, written as ``--json`` writes them."""
    paths = []
    order = list(range(len(report.results)))
    for k in range(1, n + 1):
        idx = order[k - 1 :: n]
        part = Report([report.results[i] for i in idx], report.seed, report.quick, report.policies, 1.0 + k,
                      report.strict, shard={"k": k, "n": n, "selected": len(order), "ops": ["*"], "dtypes": []},
                      indices=idx)  # fmt: skip
        path = tmp_path / f"shard-{k}.json"
        with open(path, "w") as fh:
            write_json(part.to_json(), fh)
        paths.append(str(path))
    return paths


def _synthetic() -> Report:
    results = [_result(k) for k in range(10)]
    results.insert(3, _result(90, "unsupported", castwise_error="TypeError: no", jax_error="TypeError: no"))
    results.insert(5, _result(91, "departure", departure=DEPARTURES[0].name))
    bad = _result(92, "failed")
    bad.checks[1] = CheckResult("primal", False, float("inf"), None, "not bit-exact: max abs error 1", "[1.]", "[2.]")
    results.insert(7, bad)
    known = _result(93, "known")
    known.checks.append(CheckResult("vjp", False, 3.0, (0,), "far off", "[1.]", "[4.]", known="some-bug"))
    results.append(known)
    other = _result(94, "failed")
    other.checks.append(CheckResult("jvp", False, 2.0, (1,), "max abs error 2 > tolerance 1", "[0.]", "[2.]"))
    results.insert(1, other)
    return Report(results, 3, False, ("jax", "torch"), 5.0)


def _comparable(data: dict[str, Any]) -> dict[str, Any]:
    """A JSON report without what differs between runs of the same cases (times)."""
    out = {k: v for k, v in data.items() if k not in ("elapsed_s", "cpu_s_by_op", "shard")}
    out["cases"] = [{k: v for k, v in c.items() if k != "cpu_s"} for c in data["cases"]]
    return out


@pytest.mark.parametrize("strict", [False, True])
def test_merge_of_synthetic_shards_is_the_whole_report(capsys: pytest.CaptureFixture[str], no_work: None,
                                                       tmp_path: Path, strict: bool) -> None:  # fmt: skip
    whole = _synthetic()
    whole.strict = strict
    paths = _shard_reports(whole, 3, tmp_path)
    out_json = tmp_path / "merged.json"
    code, out, err = _run(capsys, "parity", "--merge", *reversed(paths), "--json", str(out_json))
    assert code == 1 and err == ""  # JAX never imported (no_work), the failure's exit status
    merged = json.loads(out_json.read_text())
    assert _comparable(merged) == _comparable(json.loads(json.dumps(whole.to_json())))
    assert merged["elapsed_s"] == 4.0  # the longest shard's
    assert merged["shard"]["merged"] == 3
    # what it prints is the whole run's report, the time aside
    expected = whole.render(10, width=parity_cli.terminal_width())
    assert re.sub(r"time: [0-9.]+s", "", out.strip()) == re.sub(r"time: [0-9.]+s", "", expected)
    assert "FAILED: " + ("3 checks in 3 cases" if strict else "2 checks in 2 cases") in out
    # the merged report merges again, as one shard of one (a second level of a matrix)
    code, out2, _ = _run(capsys, "parity", "--merge", str(out_json))
    assert code == 1 and out2 == out


def test_merge_exit_status_is_zero_when_every_shard_passed(capsys: pytest.CaptureFixture[str], no_work: None,
                                                           tmp_path: Path) -> None:  # fmt: skip
    whole = Report([_result(k) for k in range(5)], 0, True, ("jax",), 1.0)
    code, out, _ = _run(capsys, "parity", "--merge", *_shard_reports(whole, 2, tmp_path))
    assert code == 0 and "OK: castwise agrees" in out


def test_merge_refuses_reports_that_are_not_one_run(capsys: pytest.CaptureFixture[str], no_work: None,
                                                    tmp_path: Path) -> None:  # fmt: skip
    whole = _synthetic()
    one, two, three = _shard_reports(whole, 3, tmp_path)

    def error(*paths: str) -> str:
        code, out, err = _run(capsys, "parity", "--merge", *paths)
        assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("castwise parity: --merge"), err
        return err

    assert "shard 2/3 missing" in error(one, three)
    assert "shard 1/3 given twice" in error(one, one, two, three)
    other = json.loads(Path(three).read_text())
    other["seed"] = 4
    Path(tmp_path / "other.json").write_text(json.dumps(other))
    assert "not shards of one run (seed: 4 and 3)" in error(one, two, str(tmp_path / "other.json"))
    lost = json.loads(Path(three).read_text())
    lost["cases"] = lost["cases"][1:]
    Path(tmp_path / "lost.json").write_text(json.dumps(lost))
    assert "hold 14 of the 15 selected cases" in error(one, two, str(tmp_path / "lost.json"))
    old = json.loads(Path(three).read_text())
    del old["cases"]
    Path(tmp_path / "old.json").write_text(json.dumps(old))
    assert "no per-case results" in error(one, two, str(tmp_path / "old.json"))
    Path(tmp_path / "bad.json").write_text("{not json")
    assert "not JSON" in error(str(tmp_path / "bad.json"))
    assert "No such file" in error(str(tmp_path / "none.json"))


def test_merge_of_a_real_run_equals_the_single_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("jax")
    # 42 cases: an unsupported one (neg of bool), a departure (lt of complex under jax), the rest passing
    run = ["parity", "--ops", "add,neg,lt", "--policy", "jax", "--dtypes", "bool,f32,c64", "--no-progress"]
    code, single_out, _ = _run(capsys, *run, "--json", str(tmp_path / "single.json"))
    assert code == 0, single_out
    paths = []
    for k in (1, 2, 3):
        path = tmp_path / f"{k}.json"
        code, out, _ = _run(capsys, *run, "--shard", f"{k}/3", "--json", str(path))
        assert code == 0 and out.startswith(f"shard {k}/3: ") and "of the 42 selected cases" in out
        paths.append(str(path))
    code, merged_out, _ = _run(capsys, "parity", "--merge", *paths, "--json", str(tmp_path / "merged.json"))
    assert code == 0
    single = json.loads((tmp_path / "single.json").read_text())
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert merged["counts"] == single["counts"] and merged["counts"]["unsupported"] > 0
    assert merged["summary"] == single["summary"] and merged["departures"] == single["departures"] != []
    assert [(c["id"], c["status"]) for c in merged["cases"]] == [(c["id"], c["status"]) for c in single["cases"]]
    assert _comparable(merged) == _comparable(single)
    assert set(merged["cpu_s_by_op"]) == set(single["cpu_s_by_op"])
    # the shards split the cases: each ran some, none ran all
    sizes = [len(json.loads(Path(p).read_text())["cases"]) for p in paths]
    assert sum(sizes) == 42 and all(0 < s < 42 for s in sizes)
    assert re.sub(r"time: [0-9.]+s", "", merged_out) == re.sub(r"time: [0-9.]+s", "", single_out)
