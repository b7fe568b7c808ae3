"""``rt.set_default_dtype`` / ``rt.get_default_dtype`` (issue 23), held to PyTorch's semantics.

Oracle: ``torch.set_default_dtype``'s documentation: the default floating dtype is what Python
floats, float creation functions and integer true division give, the default complex follows it
(complex32 for float16, complex128 for float64, complex64 otherwise), and only floating dtypes
are accepted; ``torch`` itself where installed. The setting is castwise's per-thread state: the
call takes effect at once and its ``with`` block restores the previous default.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

I = rt.asarray(np.arange(1, 4, dtype=np.int32))  # noqa: E741
I64 = rt.asarray(np.arange(1, 4, dtype=np.int64))
F32 = rt.asarray(np.ones(3, np.float32))

DEFAULTS = ["float32", "float64", "float16", "bfloat16"]
#: the default complex follows the default float (c10 toComplexType; bfloat16's is complex64)
COMPLEX = {"float32": "complex64", "float64": "complex128", "float16": "complex32", "bfloat16": "complex64"}
#: (label, what it computes, its dtype's name under each default float)
ROWS: list[tuple[str, Callable[[], Any], dict[str, str]]] = [
    ("python-float", lambda: rt.asarray(1.5), {}),
    ("python-float-list", lambda: rt.asarray([1.5, 2.0]), {}),
    ("int-tensor-plus-float", lambda: I + 1.5, {}),
    ("int64-times-float", lambda: rt.multiply(I64, 2.0), {}),
    ("int-true-divide", lambda: I / I, {}),
    ("int-true-divide-scalar", lambda: I64 / 2, {}),
    ("sqrt-int32", lambda: rt.sqrt(I), {}),  # an integer input of a float function: the default float
    ("exp-int64", lambda: rt.exp(I64), {}),
    ("sin-bool", lambda: rt.sin(rt.asarray([True, False])), {}),
    ("zeros", lambda: rt.zeros(3), {}),
    ("ones", lambda: rt.ones((2, 2)), {}),
    ("full-float", lambda: rt.full(3, 1.5), {}),
    ("eye", lambda: rt.eye(2), {}),
    ("arange-float", lambda: rt.arange(0.0, 2.0), {}),
    ("linspace", lambda: rt.linspace(0, 1, 3), {}),
    ("python-complex", lambda: rt.asarray(1j), COMPLEX),
    ("int-plus-complex", lambda: I + 1j, COMPLEX),
    # what the default does not touch: a float tensor keeps its dtype, ints stay ints
    ("float32-tensor-plus-float", lambda: F32 + 1.5, {d: "float32" for d in DEFAULTS}),
    ("python-int", lambda: rt.asarray(3), {d: "int64" for d in DEFAULTS}),
    ("arange-int", lambda: rt.arange(3), {d: "int64" for d in DEFAULTS}),
]  # fmt: skip


def _expected(default: str, overrides: dict[str, str]) -> str:
    """The row's dtype under ``default``: the default float itself unless the row says otherwise."""
    return overrides.get(default, default)


@pytest.mark.parametrize("default", DEFAULTS)
@pytest.mark.parametrize(("label", "make", "overrides"), ROWS, ids=[r[0] for r in ROWS])
def test_the_default_float_decides_every_float_default(
    label: str, make: Callable[[], Any], overrides: dict[str, str], default: str
) -> None:
    with rt.use_policy("torch"):
        before = make().dtype
        with rt.set_default_dtype(getattr(rt, default)):
            assert rt.get_default_dtype().name == default
            assert make().dtype.name == _expected(default, overrides), label
        assert rt.get_default_dtype() is rt.float32
        assert make().dtype is before  # restored: no plan cached under the other default leaks


def test_the_call_takes_effect_at_once_and_lasts_until_changed() -> None:
    with rt.use_policy("torch"):
        try:
            rt.set_default_dtype(rt.float64)
            assert rt.asarray(1.0).dtype is rt.float64 and (I + 0.5).dtype is rt.float64
            rt.set_default_dtype("float16")
            assert rt.get_default_dtype() is rt.float16
        finally:
            rt.set_default_dtype(rt.float32)
        assert rt.asarray(1.0).dtype is rt.float32 and (I + 0.5).dtype is rt.float32


def test_nested_blocks_restore_their_own_previous_default() -> None:
    with rt.use_policy("torch"), rt.set_default_dtype(rt.float64) as d:
        assert d is rt.float64
        with rt.set_default_dtype(rt.float16):
            assert rt.zeros(1).dtype is rt.float16
        assert rt.zeros(1).dtype is rt.float64
    with rt.use_policy("torch"):
        assert rt.zeros(1).dtype is rt.float32


def test_the_block_restores_on_an_exception() -> None:
    with rt.use_policy("torch"):
        with pytest.raises(RuntimeError), rt.set_default_dtype(rt.float64):
            raise RuntimeError("boom")
        assert rt.get_default_dtype() is rt.float32


def test_the_setting_is_per_thread() -> None:
    seen: list[Any] = []

    def other() -> None:
        with rt.use_policy("torch"):
            seen.append(rt.get_default_dtype())
            seen.append(rt.asarray(1.0).dtype)

    with rt.use_policy("torch"), rt.set_default_dtype(rt.float64):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert rt.asarray(1.0).dtype is rt.float64
    assert seen == [rt.float32, rt.float32]


def test_other_policies_keep_their_library_default() -> None:
    """Set under torch, the default is read only by torch: jax's and numpy's stay float64."""
    with rt.use_policy("torch"), rt.set_default_dtype(rt.float16):
        for name in ("jax", "numpy"):
            with rt.use_policy(name):
                assert rt.get_default_dtype() is rt.float64
                assert rt.asarray(1.0).dtype is rt.float64 and rt.zeros(1).dtype is rt.float64
        assert rt.asarray(1.0).dtype is rt.float16


@pytest.mark.parametrize("name", ["jax", "numpy", "jax-strict", "kael", "neuron", "tenferro", "strict"])
def test_outside_torch_set_default_dtype_raises(name: str) -> None:
    if name not in rt.policies():
        pytest.skip(f"policy {name!r} is not registered")
    with rt.use_policy(name):
        before = rt.get_default_dtype()
        with pytest.raises(rt.DefaultDtypeError, match=rf"^set_default_dtype: policy '{name}' has no default-dtype"):
            rt.set_default_dtype(rt.float32)
        assert rt.get_default_dtype() is before


@pytest.mark.parametrize(
    "bad", [rt.int32, rt.int64, rt.bool_, rt.complex64, rt.float8_e4m3fn, rt.uint8, "float99", None, 3.0]
)
def test_only_the_floating_defaults_torch_accepts(bad: Any) -> None:
    with rt.use_policy("torch"):
        with pytest.raises(rt.DefaultDtypeError, match=r"^set_default_dtype: only floating-point dtypes"):
            rt.set_default_dtype(bad)
        assert rt.get_default_dtype() is rt.float32


def test_matches_torch_where_installed() -> None:
    torch = pytest.importorskip("torch")
    previous = torch.get_default_dtype()
    try:
        for default in ("float64", "float16", "bfloat16", "float32"):
            torch.set_default_dtype(getattr(torch, default))
            with rt.use_policy("torch"), rt.set_default_dtype(getattr(rt, default)):
                pairs = [
                    (rt.asarray(1.5), torch.tensor(1.5)),
                    (rt.zeros(2), torch.zeros(2)),
                    (rt.arange(0.0, 2.0), torch.arange(0.0, 2.0)),
                    (I64 / 2, torch.arange(1, 4) / 2),
                    (rt.sqrt(I64), torch.sqrt(torch.arange(1, 4))),
                ]
                if default != "bfloat16":
                    pairs.append((rt.asarray(1j), torch.tensor(1j)))
                for got, want in pairs:
                    assert got.dtype.name == str(want.dtype).removeprefix("torch."), default
    finally:
        torch.set_default_dtype(previous)


def test_jit_traces_again_under_another_default() -> None:
    """A program traced under one default is not the program of another: autodiff.jit keys its
    cache (and its per-call fast path) by the default float too."""
    import autodiff

    f = autodiff.jit(lambda a: a + 1.5)
    with rt.use_policy("torch"):
        assert f(I).dtype is rt.float32 and f(I).dtype is rt.float32  # traced, then the fast path
        with rt.set_default_dtype(rt.float64):
            got = f(I)
            assert got.dtype is rt.float64
            np.testing.assert_array_equal(got.numpy(), np.arange(1, 4) + 1.5)
            assert f(I).dtype is rt.float64
        assert f(I).dtype is rt.float32
