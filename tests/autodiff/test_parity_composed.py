"""The parity sweep's rows of composed functions (``autodiff/parity/cases_composed.py``):
torch's ``lerp``, ``addcdiv``, ``add``/``subtract(alpha=)``, jax.numpy's ``.at[].apply``, and
``lax.reduce`` / ``lax.reduce_window`` with a computation that is no monoid.

Each row runs through the sweep's own checks (primal, replay, vmap, JVP, VJP) against the
function's definition in JAX, at the dtypes its library gives (``Spec.targets``). Held here:
the rows pass where the library accepts the dtypes and are unsupported where it refuses them,
a wrong castwise function fails its row, and the references are PyTorch's functions (checked
against torch itself where it is installed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

import autodiff.parity as parity
import runtime as rt
from autodiff.parity import Case, build_cases
from autodiff.parity.cases_composed import ADDCDIV_VALUE, _addcdiv_ref, _alpha_ref, _lerp_ref
from runtime.core import dtypes as dt

f32, f64, c64, i32, b = dt.float32, dt.float64, dt.complex64, dt.int32, dt.bool_
ROWS = ("lerp", "addcdiv", "add_alpha", "subtract_alpha", "at_apply", "reduce_plus_product",
        "reduce_window_plus_product", "reduce_argmax")  # fmt: skip


def _spec(name: str) -> parity.Spec:
    return next(s for s in parity.build_specs() if s.name == name)


# (row, policy, slots, the status the sweep gives it)
EXPECTED: list[tuple[str, str, tuple[parity.Slot, ...], str]] = [
    ("lerp", "torch", (f32, f32, f32), "ok"),
    ("lerp", "torch", (c64, c64, c64), "ok"),
    ("lerp", "torch", (f64, f64, parity.PyScalar("float")), "ok"),
    ("lerp", "torch", (f32, f64, f32), "unsupported"),  # torch.lerp takes one dtype
    ("lerp", "torch", (i32, i32, i32), "unsupported"),  # and floating or complex only
    ("addcdiv", "torch", (f64, f64, f64), "ok"),
    ("addcdiv", "torch", (i32, f32, f64), "ok"),  # every step in the common dtype
    ("addcdiv", "torch", (f32, i32, i32), "unsupported"),  # integer division
    ("add_alpha", "torch", (f32, f64), "ok"),
    ("add_alpha", "torch", (i32, i32), "ok"),
    ("add_alpha", "torch", (c64, parity.PyScalar("int")), "ok"),
    ("subtract_alpha", "torch", (f64, c64), "ok"),
    ("subtract_alpha", "torch", (i32, i32), "unsupported"),  # a float alpha for an integral result
    ("at_apply", "jax", (f64,), "ok"),
    ("at_apply", "torch", (c64,), "ok"),
    ("at_apply", "jax", (i32,), "ok"),
    ("reduce_plus_product", "jax", (f32,), "ok"),
    ("reduce_plus_product", "jax", (c64,), "ok"),
    ("reduce_plus_product", "jax", (i32,), "ok"),
    ("reduce_window_plus_product", "jax", (f64,), "ok"),  # (values only: JAX has no derivative of it)
    ("reduce_window_plus_product", "jax", (b,), "ok"),
    ("reduce_argmax", "jax", (f64,), "ok"),
    ("reduce_argmax", "jax", (i32,), "ok"),
    ("reduce_argmax", "jax", (c64,), "unsupported"),  # complex values have no order: lax.gt refuses them
]


@pytest.mark.parametrize(
    ("row", "policy", "slots", "status"),
    EXPECTED,
    ids=[f"{r}-{p}-{'-'.join(parity.slot_name(s) for s in sl)}" for r, p, sl, _ in EXPECTED],
)
def test_composed_rows_pass_or_are_refused_on_both_sides(
    row: str, policy: str, slots: tuple[parity.Slot, ...], status: str
) -> None:
    result = parity.run_case(Case(_spec(row), policy, slots))
    failed = [c for c in result.checks if not c.ok]
    assert result.status == status, (result.status, [(c.check, c.message) for c in failed])
    if status == "ok" and any(isinstance(s, dt.DType) and s.is_inexact for s in slots):
        derivatives = {"jvp", "vjp"} if _spec(row).differentiable else set()
        assert {"primal", "replay", "vmap", *derivatives} <= {c.check for c in result.checks}


def test_rows_are_in_the_sweep_under_their_policies() -> None:
    cases = build_cases(parity.DEFAULT_POLICIES, ROWS, parity.CORE_DTYPES, seed=0)
    by_row = {r: {c.policy for c in cases if c.spec.name == r} for r in ROWS}
    assert by_row == {"lerp": {"torch"}, "addcdiv": {"torch"}, "add_alpha": {"torch"}, "subtract_alpha": {"torch"},
                      "at_apply": {"jax", "torch"}, "reduce_plus_product": {"jax"},
                      "reduce_window_plus_product": {"jax"}, "reduce_argmax": {"jax"}}  # fmt: skip
    # a composed row is not its op: --ops add leaves it out, its own name or family takes it
    assert not {c.spec.name for c in build_cases(("torch",), ("add",), parity.CORE_DTYPES)} & set(ROWS)
    assert "lerp" in {c.spec.name for c in build_cases(("torch",), ("binary",), (dt.float32,))}


@pytest.mark.parametrize(
    ("row", "wrong"),
    [
        ("lerp", lambda a, e, w: rt.lerp(e, a, w)),  # the ends swapped
        ("addcdiv", lambda x, t1, t2: rt.addcdiv(x, t2, t1, value=ADDCDIV_VALUE)),
        ("add_alpha", lambda x, y: rt.add(x, y, alpha=3)),
        ("at_apply", lambda x: x.at[rt.asarray(np.array([0, 2]))].apply(lambda v: v * v)),  # 0 once, not twice
        ("reduce_plus_product", lambda x: rt.lax.reduce(x, 0, lambda a, b: a + b + a * a, (1,))),
        ("reduce_window_plus_product", lambda x: rt.lax.reduce_window(x, 0, lambda a, b: a + b, (1, 3))),
        (
            "reduce_argmax",
            lambda x: rt.lax.reduce((x, x), (x[0, 0], x[0, 0]), lambda a, b: (a[0], rt.lax.max(a[1], b[1])), (1,))[0],
        ),
    ],
)
def test_a_wrong_function_fails_its_row(row: str, wrong: Callable[..., Any]) -> None:
    spec = replace(_spec(row), ours=wrong)
    slots = (f64,) * spec.arity
    result = parity.run_case(Case(spec, spec.policies[0], slots))
    assert result.status == "failed"
    assert any(c.check == "primal" and not c.ok for c in result.checks)


def test_references_are_pytorchs_functions() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    a, e, w = (rng.standard_normal(5) for _ in range(3))
    ta, te, tw = (torch.tensor(v) for v in (a, e, w))
    np.testing.assert_allclose(np.asarray(_lerp_ref(a, e, w)), torch.lerp(ta, te, tw).numpy(), rtol=1e-12)
    t2 = np.abs(w) + 1
    want = torch.addcdiv(ta, te, torch.tensor(t2), value=ADDCDIV_VALUE).numpy()
    np.testing.assert_allclose(np.asarray(_addcdiv_ref(a, e, t2)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(_alpha_ref(2, False)(a, e)), torch.add(ta, te, alpha=2).numpy())
    np.testing.assert_allclose(np.asarray(_alpha_ref(0.5, True)(a, e)), torch.sub(ta, te, alpha=0.5).numpy())
