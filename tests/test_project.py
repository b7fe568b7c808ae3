"""Project-level checks: README set-up commands, CI script, generated docs, CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import runtime
from autodiff import cli
from runtime import lattice

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
        "docs/promotion.md is stale: run `python -m runtime.lattice docs/promotion.md`"
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


def test_generated_plan_tables_are_fresh() -> None:
    from runtime import plan_tables

    text = (ROOT / "docs" / "plan.md").read_text()
    assert plan_tables.DOC_BEGIN in text, "docs/plan.md lost its generated section"
    assert plan_tables.generated_section(text) == plan_tables.generated_docs(), (
        "docs/plan.md is stale: run `python -m runtime.plan_tables docs/plan.md`"
    )
