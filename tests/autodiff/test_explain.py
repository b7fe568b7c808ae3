"""``castwise explain``: plans and graphs before/after the passes."""

from __future__ import annotations

import pytest

import runtime as rt
from autodiff import cli
from autodiff.explain import ExplainInputError, explain

SPECS = [
    ("add f64 c128", "plan add(f64, c128) -> (c128, c128)", 1),
    ("lt i32 f32", "plan lt(i32, f32) -> (f32, f32)", 1),
    ("and bool i32", "plan and(bool, i32) -> (i32, i32)", 1),
    ("dot_general f32 c64", "plan dot_general(f32, c64) -> (c64, c64)", 1),
    ("select bool f32 f64", "plan select(bool, f32, f64) -> (bool, f64, f64)", 1),
    ("clamp f32 f64 f32", "plan clamp(f32, f64, f32) -> (f64, f64, f64)", 2),
    ("concatenate f32 c64 f64", "plan concatenate(f32, c64, f64) -> (c128, c128, c128)", 3),
    ("scatter f32 i32 f64", "plan scatter(f32, i32, f64) -> (f64, i32, f64)", 1),
    ("scatter_add c64 i32 f32", "plan scatter_add(c64, i32, f32) -> (c64, i32, c64)", 1),
    ("dynamic_update_slice f32 f64 i32", "plan dynamic_update_slice(f32, f64, i32) -> (f64, f64, i32)", 1),
    ("exp bf16", "plan exp(bf16) -> (bf16)", 0),
]


@pytest.mark.parametrize("spec,plan_line,converts", SPECS, ids=[s[0] for s in SPECS])
def test_explain_shows_the_plan_and_the_converts_promote_adds(spec: str, plan_line: str, converts: int) -> None:
    text = explain(spec)
    assert plan_line in text
    before, after = text.split("after promote:")
    after_promote = after.split("after canonicalize:")[0]
    assert "convert" not in before
    assert after_promote.count("convert[") == converts


def test_explain_stack_shows_the_canonicalize_reshapes() -> None:
    text = explain("stack f64 c128")
    canonical = text.split("after canonicalize:")[1]
    assert canonical.count("reshape[new_sizes=(1, 3)]") == 2
    assert "convert[to=c128]" in canonical


def test_explain_follows_the_policy() -> None:
    assert "plan add(i64, f32) -> (f32, f32)" in explain("add i64 f32")
    assert "plan add(i64, f32) -> (f64, f64)" in explain("add i64 f32", policy="numpy")


def test_explain_expression_form() -> None:
    text = explain("x * 2.5 + y", ["x=i32[3]", "y=f32[3]"], policy="torch")
    assert "policy torch" in text
    assert "plan mul(i32, f32) -> (f32, f32)" in text  # torch: Python float -> float32
    assert "convert[to=f32] " in text


def test_explain_errors_are_clear() -> None:
    with pytest.raises(ValueError, match="OP DTYPE"):
        explain("add")
    with pytest.raises(ExplainInputError, match="unknown dtype 'f33'"):
        explain("add f33 f64")
    with pytest.raises(ExplainInputError, match="unknown op 'frob'"):
        explain("frob f32 f64")
    with pytest.raises(ValueError, match="NAME=DTYPE"):
        explain("x + 1", ["x:f32"])
    with pytest.raises(rt.PromotionError, match="strict"):
        explain("add f32 f64", policy="strict")


def test_cli_explain(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["explain", "add f64 c128"]) == 0
    assert "convert[to=c128]" in capsys.readouterr().out
    assert cli.main(["explain", "a + b", "--var", "a=f32[2]", "--var", "b=c64[2]", "--policy", "numpy"]) == 0
    assert "plan add(f32, c64) -> (c64, c64)" in capsys.readouterr().out


def test_explain_shows_what_a_rewritten_op_stands_for(capsys: pytest.CaptureFixture[str]) -> None:
    text = explain("add bool bool")
    assert "plan add(bool, bool) -> (bool, bool)" in text and "c:bool[3] = or a b" in text
    assert "convert[to=i64]" in explain("add bool bool", policy="kael")  # kael counts: no rewrite, a plan
    assert cli.main(["explain", "sub bool bool"]) == 2  # refused: one line on stderr, no traceback
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "sub" in err and "bool" in err
