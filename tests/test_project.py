"""Project-level checks: README set-up commands, CI script, generated docs, CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import runtime
from autodiff import cli
from runtime.core import lattice

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    return [line for block in blocks for line in block.strip().splitlines()]


def test_readme_has_exactly_two_setup_commands_using_only_python3_and_pip() -> None:
    commands = _readme_commands()
    assert len(commands) == 2
    for command in commands:
        assert command.startswith("python3 -m venv .venv && .venv/bin/pip install")
        assert "uv " not in command and "conda" not in command
    assert "castwise parity" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _readme_commands()[1] in ci
    assert "set -euo pipefail" in ci


def test_generated_promotion_tables_are_fresh() -> None:
    text = (ROOT / "docs" / "promotion.md").read_text()
    assert lattice.DOC_BEGIN in text, "docs/promotion.md lost its generated section"
    generated = text[text.index(lattice.DOC_BEGIN) :]
    assert generated == lattice.generated_docs(), (
        "docs/promotion.md is stale: run `python -m runtime.core.lattice docs/promotion.md`"
    )


@pytest.mark.parametrize("policy", runtime.policies())
def test_lattice_json_agrees_with_promote_types(policy: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["lattice", policy, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    pol = runtime.get_policy_object(policy)
    assert data["dtypes"] == [d.short for d in pol.dtypes]
    for a in pol.dtypes:
        for b in pol.dtypes:
            cell = data["table"][a.short][b.short]
            if pol.can_promote(a, b):
                assert cell == runtime.promote_types(a, b, policy=policy).short
            else:
                assert cell is None


def test_lattice_text_and_markdown_show_errors_as_dash(capsys: pytest.CaptureFixture[str]) -> None:
    cli.main(["lattice", "strict"])
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].split()[0] == "strict"
    first = rows[1].split()
    assert first[0] == "bool" and first[1] == "bool" and set(first[2:]) == {"-"}
    cli.main(["lattice", "jax", "--format", "markdown"])
    md = capsys.readouterr().out.splitlines()
    assert md[0].startswith("| jax | bool |") and md[1].startswith("|---|")


def test_lattice_check_reports_each_law_with_counterexamples(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["lattice", "--check"]) == 0
    out = capsys.readouterr().out
    for name in runtime.policies():
        assert f"policy {name}:" in out
    # numpy's table is not associative; the report must show why
    numpy_block = out.split("policy numpy:")[1].split("policy")[0]
    match = re.search(r"associative\s+fails: \((\w+)\+(\w+)\)\+(\w+) = (\w+), \w+\+\(\w+\+\w+\) = (\w+)", numpy_block)
    assert match, numpy_block
    a, b, c, left, right = (match.group(i) for i in range(1, 6))
    lhs = runtime.promote_types(runtime.promote_types(a, b, policy="numpy"), c, policy="numpy")
    rhs = runtime.promote_types(a, runtime.promote_types(b, c, policy="numpy"), policy="numpy")
    assert (lhs.short, rhs.short) == (left, right) and lhs is not rhs
    strict_block = out.split("policy strict:")[1]
    assert re.search(r"commutative\s+holds", strict_block)


def test_console_script_runs_as_a_module() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "autodiff.cli", "lattice", "tenferro"], capture_output=True, text=True, check=True
    )
    header = proc.stdout.splitlines()[0].split()
    assert header == ["tenferro", "bool", "i32", "i64", "f32", "f64", "c64", "c128"]


# -- the package (issue 13, section 7) -------------------------------------------------------------

PACKAGES = ("runtime", "passes", "autodiff")


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_version_flag_prints_the_declared_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"castwise {_pyproject()['project']['version']}"


def test_license_file_matches_the_declared_license() -> None:
    declared = _pyproject()["project"]["license"]
    assert declared == {"text": "Apache-2.0"}
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_every_package_ships_a_py_typed_marker() -> None:
    for package in PACKAGES:
        assert (ROOT / package / "py.typed").is_file(), package
    assert "py.typed" in _pyproject()["tool"]["setuptools"]["package-data"]["*"]


def test_build_outputs_are_not_tracked() -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "ls-files", "*.egg-info"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert tracked.stdout == ""
    assert "*.egg-info/" in (ROOT / ".gitignore").read_text().splitlines()


def _declared_requirements() -> list[Requirement]:
    project = _pyproject()["project"]
    texts = [*project["dependencies"], *project["optional-dependencies"]["jax"],
             *project["optional-dependencies"]["test"]]  # fmt: skip
    return [Requirement(t) for t in texts]


def test_installed_versions_satisfy_the_declared_floors() -> None:
    checked = []
    for req in _declared_requirements():
        try:
            installed = Version(metadata.version(req.name))
        except metadata.PackageNotFoundError:
            continue  # an optional extra not installed here
        assert req.specifier.contains(installed, prereleases=True), f"{req.name} {installed} does not satisfy {req}"
        checked.append(req.name)
    assert {"numpy", "ml_dtypes"} <= set(checked)


#: What the code needs, and the first release that has it: a declared floor below this is a lie.
NEEDED = {
    "jax": ("0.8.0", "jax.enable_x64 (parity, jit, autodiff.testing)"),
    "jaxlib": ("0.8.0", "jax 0.8's jaxlib"),
    "ml_dtypes": ("0.6", "int1/uint1, int2/uint2, complex32 and bcomplex32 (and 0.5.1's float8_e8m0fnu rounding)"),
    "optree": ("0.14", "tree paths (autodiff.pytree)"),
    "numpy": ("2.0", "NEP 50 promotion, the numpy policy's oracle"),
}


def test_declared_floors_cover_what_the_code_uses() -> None:
    floors: dict[str, Version] = {}
    for req in _declared_requirements():
        for spec in req.specifier:
            if spec.operator == ">=":
                floors[req.name] = max(floors.get(req.name, Version(spec.version)), Version(spec.version))
    for name, (needed, why) in NEEDED.items():
        assert floors[name] >= Version(needed), f"{name} floor {floors[name]} is below {needed}, needed for {why}"
    jax = pytest.importorskip("jax")
    assert hasattr(jax, "enable_x64")
    import ml_dtypes
    import numpy as np

    assert np.array([3], np.int8).astype(ml_dtypes.float8_e8m0fnu).astype(np.float32)[0] == 4
    assert all(hasattr(ml_dtypes, name) for name in ("int1", "uint1", "int2", "uint2", "complex32", "bcomplex32"))


# -- documents outside the repository ------------------------------------------------------------

#: Paths of design documents that live outside this repository (spelled in pieces so that this
#: file does not cite them itself). Code and docs name the document instead.
_OUTSIDE = re.compile("|".join([r"DESIGN" + r"\.md", r"shared/" + r"reference", r"(?<![\w.-])reference/[\w.-]+",
                                r"/work/" + r"shared"]))  # fmt: skip
_TEXT_SUFFIXES = {".py", ".md", ".toml", ".txt", ".cfg", ".ini", ".yml", ".yaml", ".sh", ""}
_SKIP_DIRS = {".git", ".venv", "__pycache__", ".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache", "build"}


def test_nothing_cites_a_document_outside_the_repository() -> None:
    offenders = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if set(rel.parts) & _SKIP_DIRS or rel.parts[0].endswith(".egg-info") or not path.is_file():
            continue
        if path.suffix not in _TEXT_SUFFIXES or path.name == "LICENSE":
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if _OUTSIDE.search(line):
                offenders.append(f"{rel}:{n}: {line.strip()}")
    assert offenders == [], "name the source document instead (docs/promotion.md, Sources):\n" + "\n".join(offenders)


# -- the command line: one line per error, never a traceback -------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as exit_:  # argparse
        code = int(exit_.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    ("argv", "code", "needle"),
    [
        (("explain", "add f8e4m3fn f8e5m2"), 1, "8-bit floats do not support implicit promotion"),
        (("explain", "concatenate f8e4m3fn f32 f8e5m2"), 1, "float32 under policy 'jax': 8-bit floats"),
        (("explain", "add f32 f64", "--policy", "strict"), 1, "policy 'strict' refuses add(f32, f64)"),
        (("explain", "x + y", "--var", "x=f8e4m3fn[3]", "--var", "y=f8e5m2[3]"), 1, "refuses 'x + y'"),
        (("explain", "frob f32 f32"), 2, "unknown op 'frob'"),
        (("explain", "add f32 quux"), 2, "unknown dtype 'quux'"),
        (("explain", "add f32"), 2, "add: expected 2 operands"),
        (("explain", "neg f32 f32"), 2, "neg: expected 1 operands"),
        (("explain", "add"), 2, "expected 'OP DTYPE"),
        (("explain", "x + q", "--var", "x=f32[3]"), 2, "name 'q' is not defined"),
        (("explain", "x * (2 +", "--var", "x=f32[3]"), 2, "cannot parse the expression"),
        (("explain", "x + y", "--var", "x=f32[3]", "--var", "y=f32[4]"), 2, "cannot be broadcast together"),
        (("explain", "add f32 f32", "--policy", "bogus"), 2, "invalid choice: 'bogus'"),
        (("export", "tests/test_project.py:_no_such_function"), 2, "has no attribute '_no_such_function'"),
        (("export", "no_such_module_xyz:f"), 2, "No module named 'no_such_module_xyz'"),
        (("export", "runtime.core.lax:add", "--arg", "quux[3]", "--arg", "f32[3]"), 2, "bad --arg 'quux[3]'"),
        (("export", "runtime.core.lax:add", "--arg", "f32[3]"), 1, "missing 1 required positional argument"),
        (("export", "runtime.core.lax:add", "--arg", "f8e4m3fn[3]", "--arg", "f8e5m2[3]"), 1, "PromotionError"),
        (("export", "runtime.core.lax:neg", "--arg", "f32[3]", "--grad", "x"), 2, "--grad takes argument numbers"),
        (("export", "runtime.core.lax:neg", "--arg", "f32[3]", "--grad", "3"), 2, "--grad 3 is out of range"),
        (("lattice", "nonesuch"), 2, "invalid choice: 'nonesuch'"),
    ],
)
def test_cli_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], code: int, needle: str
) -> None:
    got, out, err = _cli(capsys, *argv)
    assert got == code, (got, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"castwise {argv[0]}: "), err
    assert needle in lines[0], err
    assert "Traceback" not in out + err


def test_explain_of_a_refused_promotion_shows_the_plan_error_and_the_policy_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, _, err = _cli(capsys, "explain", "add f8e4m3fn f8e5m2")
    pol = runtime.get_policy_object("jax")
    reason = pol.explain_failure(runtime.float8_e4m3fn, runtime.float8_e5m2)
    assert reason and reason in err
    with pytest.raises(runtime.PromotionError) as plan_error:
        runtime.plan(runtime.core.ops.add, [runtime.float8_e4m3fn, runtime.float8_e5m2])
    assert " ".join(str(plan_error.value).split()) in err


@pytest.mark.parametrize("policy", runtime.policies())
def test_lattice_text_fits_a_100_column_terminal(policy: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["lattice", policy]) == 0
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= 100
    # every cell is still there: each block lists every row, and the blocks' columns are the dtypes in order
    pol = runtime.get_policy_object(policy)
    blocks = [b.splitlines() for b in text.strip().split("\n\n")]
    columns = [name for block in blocks for name in block[0].split()[1:]]
    assert columns == [d.short for d in pol.dtypes]
    for block in blocks:
        assert [row.split()[0] for row in block[1:]] == [d.short for d in pol.dtypes]
    first_cells = {row.split()[0]: row.split()[1:] for row in blocks[0][1:]}
    a, b = pol.dtypes[0], pol.dtypes[1]
    want = runtime.promote_types(a, b, policy=policy).short if pol.can_promote(a, b) else lattice.ERROR_CELL
    assert first_cells[a.short][1] == want


def test_lattice_width_zero_keeps_one_block(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["lattice", "torch", "--width", "0"]) == 0
    text = capsys.readouterr().out
    assert "\n\n" not in text.strip() and len(text.splitlines()[0].split()) == 1 + len(
        runtime.get_policy_object("torch").dtypes
    )


def test_generated_plan_tables_are_fresh() -> None:
    from runtime.core import plan_tables

    text = (ROOT / "docs" / "plan.md").read_text()
    assert plan_tables.DOC_BEGIN in text, "docs/plan.md lost its generated section"
    assert plan_tables.generated_section(text) == plan_tables.generated_docs(), (
        "docs/plan.md is stale: run `python -m runtime.core.plan_tables docs/plan.md`"
    )
