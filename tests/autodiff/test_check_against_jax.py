"""``autodiff.testing.check_against_jax``: passes for correct functions, fails loudly otherwise.

Each failure case breaks exactly one thing (a derivative rule, the JAX twin, a
dtype, the number of outputs) and asserts that the check raises and names the
mode and the output or argument at fault.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import runtime as rt  # noqa: E402
from autodiff.rules import JVP_RULES, VJP_RULES  # noqa: E402
from autodiff.testing import PARITY_TOL, check_against_jax, parity_tolerance  # noqa: E402
from runtime.core import lax as F  # noqa: E402
from runtime.core.tensor import Tensor  # noqa: E402

X64 = np.array([0.3, -0.7, 1.2])
C64 = np.array([0.5 + 0.25j, -1.0 + 0.5j, 0.75 - 1.5j], np.complex64)
C128 = np.array([0.4 - 0.3j, 1.1 + 0.2j, -0.6 + 0.9j])
I32 = np.array([2, -1, 3], np.int32)


def ours_mixed(x: Tensor, z: Tensor) -> Tensor:
    return F.mul(F.sin(x), z)  # f64 * c64 -> c128: an implicit convert on each side


def jax_mixed(x: Any, z: Any) -> Any:
    return jnp.sin(x) * z


# -- passing -------------------------------------------------------------------------------------


def test_passes_for_a_correct_mixed_dtype_function() -> None:
    check_against_jax(ours_mixed, jax_mixed, [X64, C64])


def test_passes_with_tuple_outputs_integer_arguments_and_non_differentiable_outputs() -> None:
    def ours(x: Tensor, n: Tensor, z: Tensor) -> tuple[Tensor, ...]:
        return F.mul(x, n), F.add(n, n), F.lt(x, 0.0), F.dot_general(z, x, (((0,), (0,)), ((), ())))

    def theirs(x: Any, n: Any, z: Any) -> tuple[Any, ...]:
        return x * n, n + n, x < 0.0, jnp.dot(z, x)

    # jax.jvp would refuse a float tangent for the int32 argument: it must be closed over
    check_against_jax(ours, theirs, [X64, I32, C128])


def test_passes_for_list_outputs_and_castwise_tensor_arguments() -> None:
    args = [rt.asarray(X64), rt.asarray(np.float32(2.5))]
    check_against_jax(
        lambda x, s: [F.mul(x, s), F.tanh(s)],
        lambda x, s: [x * s, jnp.tanh(s)],
        args,
    )


def test_only_integer_arguments_checks_the_primal_only() -> None:
    check_against_jax(lambda n: F.mul(n, n), lambda n: n * n, [I32])


def test_runs_under_the_active_policy_and_jax_strict_maps_to_strict_mode() -> None:
    with rt.use_policy("jax-strict"):
        check_against_jax(lambda x, y: F.add(x, y), lambda x, y: x + y, [X64, X64 * 2])
        with pytest.raises(rt.PromotionError):
            check_against_jax(ours_mixed, jax_mixed, [X64, C64])


# -- failing: derivative rules -------------------------------------------------------------------


def test_fails_for_a_wrong_jvp_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    def wrong_sin_jvp(primals: Any, tangents: Any, outputs: Any, **params: Any) -> list[Tensor]:
        return [F.mul(tangents[0], F.sin(primals[0]))]  # should be cos

    monkeypatch.setitem(JVP_RULES, "sin", wrong_sin_jvp)
    with pytest.raises(AssertionError, match=r"\[jvp\] tangent of output 0 \(c128\[3\]\): max abs error"):
        check_against_jax(ours_mixed, jax_mixed, [X64, C64])
    # the other modes do not use the JVP rule
    check_against_jax(ours_mixed, jax_mixed, [X64, C64], modes=("primal", "vjp"))


def test_fails_for_a_vjp_rule_with_the_wrong_conjugation(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ct * cos(x)`` instead of ``ct * conj(cos(x))``: right for real x, wrong for complex x."""

    def unconjugated_sin_vjp(cts: Any, primals: Any, outputs: Any, needs: Any, **params: Any) -> list[Tensor]:
        return [F.mul(cts[0], F.cos(primals[0]))]

    monkeypatch.setitem(VJP_RULES, "sin", unconjugated_sin_vjp)
    check_against_jax(F.sin, jnp.sin, [X64])
    with pytest.raises(AssertionError, match=r"\[vjp\] cotangent of argument 0 \(c128\[3\]\)"):
        check_against_jax(F.sin, jnp.sin, [C128])
    check_against_jax(F.sin, jnp.sin, [C128], modes=("primal", "jvp"))


# -- failing: the JAX twin, dtypes, structure ----------------------------------------------------


def test_fails_for_a_mismatched_jax_function() -> None:
    with pytest.raises(AssertionError, match=r"\[primal\] output 0 \(c128\[3\]\): max abs error"):
        check_against_jax(ours_mixed, lambda x, z: jnp.cos(x) * z, [X64, C64])


def test_fails_for_a_mismatched_output_dtype() -> None:
    with pytest.raises(AssertionError, match="dtype complex128 differs from JAX's complex64"):
        check_against_jax(ours_mixed, lambda x, z: (jnp.sin(x) * z).astype(jnp.complex64), [X64, C64])


def test_fails_for_a_different_number_of_outputs() -> None:
    with pytest.raises(AssertionError, match="castwise returned 2 output"):
        check_against_jax(lambda x: (F.sin(x), F.cos(x)), lambda x: (jnp.sin(x),), [X64])
    with pytest.raises(AssertionError, match="as a sequence"):
        check_against_jax(lambda x: (F.sin(x),), jnp.sin, [X64])


def test_integer_outputs_are_compared_exactly() -> None:
    with pytest.raises(AssertionError, match=r"1 of 3 element\(s\) differ \(exact comparison\)"):
        check_against_jax(lambda n: F.add(n, n), lambda n: (n + n).at[0].add(1), [I32])


def test_nan_positions_must_agree() -> None:
    with pytest.raises(AssertionError, match="NaNs in different places"):
        check_against_jax(F.sqrt, lambda x: jnp.sqrt(jnp.abs(x)), [X64], modes=("primal",))


def test_tolerances_default_per_dtype_and_can_be_widened() -> None:
    def off(x: Tensor) -> Tensor:
        return F.mul(F.sin(x), 1.0 + 1e-7)

    check_against_jax(off, jnp.sin, [X64.astype(np.float32)])  # f32 tolerance 1e-5: within
    with pytest.raises(AssertionError, match=r"rtol=1e-10"):
        check_against_jax(off, jnp.sin, [X64])  # f64 tolerance 1e-10: caught
    check_against_jax(off, jnp.sin, [X64], rtol=1e-6)
    check_against_jax(off, jnp.sin, [X64], rtol=0.0, atol=1e-6)
    assert parity_tolerance([rt.float64, rt.float32, rt.int32]) == PARITY_TOL["float32"]
    assert parity_tolerance([rt.int8]) == 0.0


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown mode"):
        check_against_jax(F.sin, jnp.sin, [X64], modes=("primal", "hessian"))


def test_importing_autodiff_testing_does_not_import_jax() -> None:
    code = "import sys, autodiff.testing; assert 'jax' not in sys.modules, 'jax imported eagerly'"
    subprocess.run([sys.executable, "-c", code], check=True)
