"""The ``castwise`` command line as a newcomer meets it: mistyped names get suggestions, bad
arguments are refused in one line before any work (or any JAX import), ``castwise export``
imports from the current directory, bare ``castwise lattice`` is short, and the parity report
and progress bar fit the terminal.

Everything runs in process and cheaply: the parity tests that reach the sweep replace it
(``run_parity``) or run a handful of cases; the width tests render synthetic reports.
"""

from __future__ import annotations

import io
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

import runtime as rt
from autodiff import cli
from autodiff.parity import cli as parity_cli
from autodiff.parity._common import CHECKS, CheckResult
from autodiff.parity.departures import DEPARTURES
from autodiff.parity.report import Report, terminal_width
from autodiff.parity.runner import CaseResult


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as exit_:  # argparse's usage errors
        code = int(exit_.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_line_error(err: str, command: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"castwise {command}: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def no_sweep(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """``castwise parity`` without its sweep: the options it would run are recorded, the report is empty."""
    runs: list[Any] = []

    def fake(options: Any, progress: Any = None) -> Report:
        runs.append(options)
        return Report([], options.seed, options.quick, options.policies)

    monkeypatch.setattr(parity_cli, "run_parity", fake)
    return runs


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing JAX, building the cases or sweeping fails the test: a usage error must come first."""

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("reached the work before the arguments were checked")

    for name in ("_jax_installed", "_cases_for", "run_parity"):
        monkeypatch.setattr(parity_cli, name, refuse)


# -- 1. names: suggestions, not lists ----------------------------------------------------------------


def test_did_you_mean() -> None:
    assert cli.did_you_mean("addd", ["add", "and", "sub"]) == "did you mean add, and?"
    assert cli.did_you_mean("pytorch", rt.policies()) == "did you mean torch?"
    assert cli.did_you_mean("dot", ["not", "dot_general", "sort"]).startswith("did you mean dot_general")
    assert cli.did_you_mean("xyz", ["add", "sub"]) == ""


def test_explain_unknown_op_suggests_the_closest_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "explain", "addd f64 c128")
    line = _one_line_error(err, "explain")
    assert code == 2
    assert "unknown op 'addd'; did you mean add," in line and "and" in line
    assert len(line) < 200  # it was one 1,214-character line of every op name
    code, _, err = _run(capsys, "explain", "xyz f32")
    assert code == 2 and "--list-ops" in _one_line_error(err, "explain")
    code, _, err = _run(capsys, "explain", "add f64 f33")
    assert code == 2 and "unknown dtype 'f33'; did you mean f32" in _one_line_error(err, "explain")


def test_explain_list_ops_fits_the_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = _run(capsys, "explain", "--list-ops")
    assert code == 0 and all(len(line) <= 80 for line in out.splitlines())
    names = re.split(r",\s*", " ".join(out.split()))
    assert names == ["stack", *rt.ops.OPS]
    code, _, err = _run(capsys, "explain")
    assert code == 2 and "--list-ops" in _one_line_error(err, "explain")


@pytest.mark.parametrize(
    "argv", [("explain", "add f32 f32", "--policy", "pytorch"), ("lattice", "pytorch")], ids=["explain", "lattice"]
)
def test_unknown_policy_suggests_one(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]) -> None:
    code, _, err = _run(capsys, *argv)
    line = _one_line_error(err, argv[0])
    assert code == 2 and "invalid choice: 'pytorch'; did you mean torch?" in line


def test_parity_unknown_policy_is_refused_before_jax_is_imported(
    capsys: pytest.CaptureFixture[str], no_work: None
) -> None:
    code, _, err = _run(capsys, "parity", "--policy", "pytorch")
    line = _one_line_error(err, "parity")
    assert code == 2 and "unknown policy 'pytorch'; did you mean torch?" in line


@pytest.mark.parametrize(
    ("ops", "needle"),
    [("nosuchop", "the families: binary,"), ("mull", "did you mean mul"), ("add,sinn", "did you mean sin")],
)
def test_parity_unknown_ops_pattern_is_refused_with_a_suggestion(
    capsys: pytest.CaptureFixture[str], no_work: None, ops: str, needle: str
) -> None:
    code, _, err = _run(capsys, "parity", "--ops", ops)
    line = _one_line_error(err, "parity")
    assert code == 2 and "no cases match --ops" in line and needle in line


def test_parity_unknown_dtype_suggests_one(capsys: pytest.CaptureFixture[str], no_work: None) -> None:
    code, _, err = _run(capsys, "parity", "--dtypes", "f32,bf61")
    assert code == 2 and "unknown dtype 'bf61'; did you mean bf16" in _one_line_error(err, "parity")


# -- 2. output paths and --jobs, checked before the sweep ---------------------------------------------


@pytest.mark.parametrize("flag", ["--json", "--markdown"])
def test_parity_output_path_is_checked_before_the_sweep(
    capsys: pytest.CaptureFixture[str], no_work: None, tmp_path: Path, flag: str
) -> None:
    code, _, err = _run(capsys, "parity", "--ops", "neg", flag, str(tmp_path / "missing" / "x.json"))
    assert code == 2 and f"{flag} " in _one_line_error(err, "parity") and "no such directory" in err
    code, _, err = _run(capsys, "parity", "--ops", "neg", flag, str(tmp_path))
    assert code == 2 and "is a directory" in _one_line_error(err, "parity")


@pytest.mark.parametrize("jobs", ["-1", "-4"])
def test_parity_negative_jobs_are_refused(capsys: pytest.CaptureFixture[str], no_work: None, jobs: str) -> None:
    code, _, err = _run(capsys, "parity", "--ops", "neg", "--jobs", jobs)
    assert code == 2 and "--jobs takes 0 (one worker per CPU" in _one_line_error(err, "parity")


def test_parity_other_bad_numbers_are_refused(capsys: pytest.CaptureFixture[str], no_work: None) -> None:
    for argv, needle in ((("--seed", "-1"), "--seed takes 0 or more"), (("--max-failures", "-2"), "--max-failures")):
        code, _, err = _run(capsys, "parity", "--ops", "neg", *argv)
        assert code == 2 and needle in _one_line_error(err, "parity")


def test_parity_jobs_zero_chooses_and_small_runs_stay_in_process(
    capsys: pytest.CaptureFixture[str], no_sweep: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented convention: 0 (the default) is one worker per CPU for 200 cases or more, none below."""
    monkeypatch.delenv("CASTWISE_PARITY_JOBS", raising=False)
    for argv in ((), ("--jobs", "0")):
        code, _, _ = _run(capsys, "parity", "--ops", "neg", "--policy", "jax", "--dtypes", "f32", *argv)
        assert code == 0
    assert [o.jobs for o in no_sweep] == [1, 1]
    code, _, _ = _run(capsys, "parity", "--ops", "neg", "--policy", "jax", "--dtypes", "f32", "--jobs", "3")
    assert code == 0 and no_sweep[-1].jobs == 3


def test_a_bad_jobs_variable_is_one_line_and_spares_the_other_commands(
    capsys: pytest.CaptureFixture[str], no_work: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CASTWISE_PARITY_JOBS", "many")  # read when the parser was built: every command crashed
    code, out, _ = _run(capsys, "lattice", "kael")
    assert code == 0 and out.startswith("kael")
    code, _, err = _run(capsys, "parity", "--ops", "neg")
    assert code == 2 and "$CASTWISE_PARITY_JOBS must be a whole number" in _one_line_error(err, "parity")
    monkeypatch.setenv("CASTWISE_PARITY_JOBS", "-1")
    code, _, err = _run(capsys, "parity", "--ops", "neg")
    assert code == 2 and "$CASTWISE_PARITY_JOBS takes 0" in _one_line_error(err, "parity")


# -- 3. castwise export imports from the current directory ------------------------------------------


def _without_cwd(monkeypatch: pytest.MonkeyPatch, where: Path) -> None:
    """``sys.path`` as the console script has it: its own directory first, not the current one."""
    monkeypatch.chdir(where)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(where))])


def test_export_imports_a_module_from_the_current_directory(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    name = f"mymod_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text("import runtime as rt\n\n\ndef f(x):\n    return rt.sin(x)\n")
    _without_cwd(monkeypatch, tmp_path)
    try:
        code, out, err = _run(capsys, "export", f"{name}:f", "--arg", "f32[3]", "--format", "graph")
    finally:
        sys.modules.pop(name, None)
    assert code == 0, err
    assert "sin" in out
    assert str(tmp_path) not in sys.path  # put there for the import only


def test_export_of_a_file_finds_its_sibling_modules(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    helper = f"helper_{uuid.uuid4().hex[:8]}"
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / f"{helper}.py").write_text("import runtime as rt\n\n\ndef twice(x):\n    return rt.add(x, x)\n")
    (tmp_path / "pkg" / "model.py").write_text(f"from {helper} import twice\n\n\ndef f(x):\n    return twice(x)\n")
    _without_cwd(monkeypatch, tmp_path)
    try:
        code, out, err = _run(capsys, "export", "pkg/model.py:f", "--arg", "f32[3]", "--format", "graph")
    finally:
        sys.modules.pop(helper, None)
    assert code == 0, err
    assert "add" in out


# -- 4. bare castwise lattice --------------------------------------------------------------------------


def test_bare_lattice_lists_the_policies_briefly(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = _run(capsys, "lattice")
    lines = out.splitlines()
    assert code == 0 and len(lines) < 30 and all(len(line) <= 80 for line in lines)  # it was 649 lines
    for name in rt.policies():
        assert re.search(rf"^  {re.escape(name)} +\d+ dtypes  ", out, re.M), name
    assert "castwise lattice POLICY" in out and "--check" in out and "--all" in out


def test_lattice_policy_check_and_all_still_print_tables(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "lattice", "torch")
    assert code == 0 and out.split()[0] == "torch" and "c128" in out
    code, out, _ = _run(capsys, "lattice", "--check")
    assert code == 0 and all(f"policy {name}:" in out for name in rt.policies())
    code, out, _ = _run(capsys, "lattice", "--all", "--width", "0")
    blocks = out.strip().split("\n\n")
    assert code == 0 and [b.split()[0] for b in blocks] == list(rt.policies())


# -- 5. the report and the progress bar fit the terminal ---------------------------------------------


def _synthetic_report(per_check: int = 4000) -> Report:
    """A report with what makes lines long: long family names, big counts with known failures,
    many unsupported cases, every departure, a failure with long values, an unchecked family."""
    results: list[CaseResult] = []
    families = ["dynamic_update_slice", "binary", "conv", "logical"]
    for fam in families:
        for k in range(3):
            r = CaseResult(f"{fam}-{k}", f"{fam}-spec", fam, "jax", ("f32", "c64"), f"{fam}(x:f32[3]) under jax")
            if fam == "logical":  # refused by both: no value compared
                r.status = "unsupported"
                r.castwise_error = r.jax_error = "TypeError: no"
            else:
                r.checks = [CheckResult(c, True, 0.0064) for c in CHECKS for _ in range(per_check)]
                r.checks.append(CheckResult("vjp", False, 0.5, (0,), "x", known="some-bug"))
            results.append(r)
    for d in DEPARTURES:
        results.append(
            CaseResult("d", "add", "binary", "torch", ("i8", "u2"), "add", status="departure", departure=d.name)
        )
    for k in range(12):
        results.append(CaseResult(f"u{k}", "scatter_max", "scatter", "neuron", ("f8e4m3b11fnuz", "c128"), "s",
                                  status="unsupported"))  # fmt: skip
    bad = CaseResult("bad", "mul", "binary", "jax", ("c64", "c64"), "mul(x:c64[3], y:c64[3]) under jax", "failed")
    values = "[" + ", ".join(f"{v / 7:.17g}+{v / 3:.17g}j" for v in range(12)) + "] ... (48 values)"
    bad.checks = [CheckResult("vjp", False, 3.5, (0, 1), "output 0 (complex64): " + "far off " * 20, values, values)]
    results.append(bad)
    return Report(results, 0, False, ("jax", "torch", "neuron"), 12.5)


@pytest.mark.parametrize("columns", [80, 60, 132])
def test_the_report_fits_the_terminal_and_keeps_its_content(monkeypatch: pytest.MonkeyPatch, columns: int) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    report = _synthetic_report()
    text = report.render(width=terminal_width())  # what castwise parity prints
    lines = text.splitlines()
    assert all(len(line) <= columns for line in lines), max(lines, key=len)
    words = set(text.split())
    for name in ("dynamic_update_slice", "binary", "conv", *CHECKS):
        assert name in words, name
    assert "12000/12003" in text and "(3k)" in text  # the cells
    counts = f"cases: {len(report.results)}, failed: 1, with known failures: 9, unsupported (castwise and JAX both "
    assert counts + f"refuse): {len(report.unsupported)}," in " ".join(text.split())
    for d in DEPARTURES:
        assert f"  {d.name} (1 case): " in text
    flat = " ".join(text.split())
    assert "scatter_max @neuron: (f8e4m3b11fnuz,c128)" in flat and "(12 in all)" in flat
    assert "NOT CHECKED: family logical" in text and "FAILED: 1 checks in 1 cases" in text
    # the long values wrap, nothing is cut: joined up again they are whole
    assert "".join(text.split()).count("".join(report.results[-1].checks[0].got.split())) == 2
    blocks = [line.split()[1:] for line in lines if line.startswith("family")]
    assert [c for block in blocks for c in block] == list(CHECKS)  # every check once, in order


def test_the_table_splits_evenly_and_width_zero_keeps_one_line() -> None:
    report = _synthetic_report(per_check=10)
    for width, split in ((80, [3, 3]), (60, [2, 2, 2]), (200, [6]), (0, [6])):
        heads = [line.split()[1:] for line in report.render(width=width).splitlines() if line.startswith("family")]
        assert [len(h) for h in heads] == split, (width, heads)
    assert report.render().splitlines()[0].split() == ["family", *CHECKS]  # no width: as before, one block


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("columns", [80, 120, 40])
def test_progress_shows_rate_and_time_left(monkeypatch: pytest.MonkeyPatch, columns: int) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    stream = _Terminal()
    bar = parity_cli.Progress(1000, stream)
    bar.start = time.monotonic() - 100  # 250 cases in 100 s: 2.5 cases/s, 300 s to go
    bar.update(250, 2)
    line = stream.getvalue().removeprefix("\r").removesuffix("\x1b[K")
    assert len(line) <= columns, line
    if columns >= 80:  # the bar takes what the figures leave
        assert re.fullmatch(r"\[#+\.+\] 250/1000 cases, 2 failed, 1m40s, 2\.5 cases/s, 5m00s left", line), line
    else:
        assert line.startswith("250/1000 cases, 2 failed, 1m40s")
    plain = io.StringIO()  # not a terminal: a line per tenth, with the same figures
    bar = parity_cli.Progress(10, plain)
    bar.start = time.monotonic() - 4
    bar.update(2, 0)
    assert re.fullmatch(r"parity: 2/10 cases, 0 failed, 4s, 0\.5 cases/s, (16|17)s left\n", plain.getvalue())


def test_a_tiny_sweep_prints_within_80_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = _run(capsys, "parity", "--ops", "neg", "--policy", "jax", "--dtypes", "bool,f32", "--no-progress")
    assert code == 0, out
    assert all(len(line) <= 80 for line in out.splitlines()), out
    assert "OK: castwise agrees with JAX" in out and "neg @jax: (bool)" in out
