"""Weak types propagate as jax.numpy propagates them (issue 23, item 1), plus result_type's edges.

Oracles: ``jnp.result_type``, ``jnp.add`` (dtype and ``is_weakly_typed``), ``jax.jit`` and
``jax.jvp``, over a table of (dtype, weak) operand pairs.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax._src.dtypes import is_weakly_typed  # noqa: E402
from jax._src.lax.lax import _convert_element_type  # noqa: E402

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from passes.verify import verify  # noqa: E402
from runtime.core.graph import trace  # noqa: E402
from runtime.core.promotion import PromotionError  # noqa: E402

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "uint64", "int64", "float16", "float32", "float64", "complex64"]
PAIRS = [(a, wa, b, wb) for (a, wa), (b, wb) in itertools.combinations_with_replacement(
    [(d, w) for d in DTYPES for w in (False, True)], 2)]  # fmt: skip


def ours(dtype: str, weak: bool) -> rt.Tensor:
    t = rt.asarray(np.zeros(3, dtype))
    t.weak = weak
    return t


def theirs(dtype: str, weak: bool) -> Any:
    return _convert_element_type(jnp.zeros(3, dtype), np.dtype(dtype), weak_type=weak)


@pytest.mark.parametrize(("a", "wa", "b", "wb"), PAIRS)
def test_add_and_result_type_match_jax(a: str, wa: bool, b: str, wb: bool) -> None:
    """``add``'s dtype and weak flag are jnp.add's, eager and recorded; ``result_type`` is jnp's."""
    try:
        expected = jnp.add(theirs(a, wa), theirs(b, wb))
    except TypeError:  # jnp refuses the pair: castwise must too
        with pytest.raises(PromotionError):
            ours(a, wa) + ours(b, wb)
        return
    got = ours(a, wa) + ours(b, wb)
    assert (got.dtype.name, got.weak) == (expected.dtype.name, bool(is_weakly_typed(expected)))
    assert rt.result_type(ours(a, wa), ours(b, wb)).name == jnp.result_type(theirs(a, wa), theirs(b, wb)).name
    graph = trace(lambda x, y: x + y, ours(a, wa), ours(b, wb))
    verify(graph)  # the recorded weak flags follow the ops' rules
    assert graph.outputs[0].weak == got.weak and graph.outputs[0].dtype is got.dtype


def test_issue_examples() -> None:
    w, h = rt.asarray(1.0), rt.asarray(np.zeros((), np.float16))
    assert rt.result_type(w, h) is rt.float16 and (w + h).dtype is rt.float16
    c = rt.asarray(np.zeros(3, np.int8)) + rt.asarray(np.zeros(3, np.uint64))
    assert c.dtype is rt.float64 and c.weak
    assert (c + rt.asarray(np.zeros(3, np.float32))).dtype is rt.float32
    wb = rt.asarray(1.0) < 2.0
    assert wb.weak and not (wb + wb).weak
    assert (ours("int8", True) + ours("int8", True)).dtype is rt.int8


def test_strict_mode_all_weak_matches_jax() -> None:
    with jax.numpy_dtype_promotion("strict"):
        expected = jnp.add(theirs("int8", True), theirs("int8", True))
    with rt.use_policy("jax-strict"):
        got = ours("int8", True) + ours("int8", True)
    assert (got.dtype.name, got.weak) == (expected.dtype.name, bool(is_weakly_typed(expected)))


def test_jit_keeps_the_weak_flag() -> None:
    out = autodiff.jit(lambda a: a * 2.0)(rt.asarray(1.0))
    expected = jax.jit(lambda a: a * 2.0)(jnp.asarray(1.0))
    assert out.weak == bool(is_weakly_typed(expected)) is True
    assert (out + rt.asarray(np.zeros(2, np.float16))).dtype is rt.float16


def test_jvp_of_a_python_float_primal_is_weak() -> None:
    primal, _ = autodiff.jvp(lambda x: x * 2, (1.0,), (1.0,))
    expected, _ = jax.jvp(lambda x: x * 2, (1.0,), (1.0,))
    assert primal.weak == bool(is_weakly_typed(expected)) is True


def test_result_type_of_nothing() -> None:
    with pytest.raises(ValueError, match="at least one array or dtype is required"):
        jnp.result_type()
    with pytest.raises(PromotionError, match=r"^result_type: at least one array or dtype is required") as err:
        rt.result_type()
    assert isinstance(err.value, ValueError) and "policy 'jax'" in str(err.value)


@pytest.mark.parametrize("policy", ["numpy", "torch"])
def test_arange_of_bools(policy: str) -> None:
    """np.arange(False, True) and torch.arange(False, True) are int64 [0] (jnp refuses: iota of bool)."""
    expected = np.arange(False, True)
    with rt.use_policy(policy):
        got = rt.arange(False, True)
    assert got.dtype is rt.int64 and got.numpy().tolist() == expected.tolist() == [0]


# torch.clamp promotes input, min and max at once: torch.result_type over the three by its categories
# (dimensioned tensors > 0-d tensors > Python scalars, within a category the usual promotion). Encoded
# from torch's type-promotion docs as the rows below: (input, min, max) -> result.
CLAMP_ROWS = [
    (("int32", 1), ("float64", 0), ("float32", 1), "float32"),
    (("int32", 1), ("float64", 0), None, "float64"),
    (("int32", 1), ("float32", 1), ("float64", 0), "float32"),
    (("int8", 1), ("int64", 0), ("int16", 1), "int16"),
    (("float16", 1), ("float64", 0), ("float32", 0), "float16"),
    (("int32", 1), 0.5, ("float16", 1), "float16"),
]


@pytest.mark.parametrize("row", CLAMP_ROWS)
def test_torch_clamp_promotes_all_three(row: Any) -> None:
    def make(spec: Any) -> Any:
        if spec is None or isinstance(spec, float):
            return spec
        name, ndim = spec
        return rt.asarray(np.ones((3,) * ndim, name))

    x, lo, hi, expected = row
    with rt.use_policy("torch"):
        assert make(x).clamp(make(lo), make(hi)).dtype.name == expected
        assert rt.clip(make(x), make(lo), make(hi)).dtype.name == expected
