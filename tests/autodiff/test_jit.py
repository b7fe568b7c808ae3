"""``autodiff.jit``: trace once per signature, compile with JAX, return castwise Tensors;
StableHLO export, the ``castwise export`` command, and sharding across devices."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import autodiff
import runtime as rt
from autodiff.jit import add_export_parser, export_command, parse_arg_spec
from passes import export_stablehlo
from runtime.core import lax as F
from runtime.core.inplace import InPlaceError
from runtime.core.tensor import Tensor

jax = pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[2]


def arr(dtype: str, shape: tuple[int, ...], seed: int = 0) -> Tensor:
    d = rt.dtype(dtype)
    rng = np.random.default_rng(seed)
    data = rng.uniform(-1, 1, shape)
    if d.kind == "complex":
        data = data + 1j * rng.uniform(-1, 1, shape)
    if d.kind in ("int", "uint"):
        data = np.round(data * 5)
    return rt.asarray(np.asarray(data).astype(d.storage), d)


def mlp_loss(w1: Tensor, b1: Tensor, w2: Tensor, x: Tensor) -> Tensor:
    h = F.tanh(F.add(F.matmul(x, w1), F.broadcast_in_dim(b1, (x.shape[0], b1.shape[0]), (1,))))
    out = F.matmul(h, w2)
    return F.div(F.reduce_sum(F.mul(out, out), (0, 1)), float(out.size))


def test_jit_of_grad_matches_eager_grad() -> None:
    args = [arr("f32", (6, 5)), arr("f32", (5,), 1), arr("f32", (5, 3), 2), arr("f32", (4, 6), 3)]
    eager = autodiff.grad(mlp_loss, argnums=(0, 1, 2))(*args)
    compiled = autodiff.jit(autodiff.grad(mlp_loss, argnums=(0, 1, 2)))(*args)
    assert isinstance(compiled, tuple) and len(compiled) == 3
    for got, want in zip(compiled, eager, strict=True):
        assert isinstance(got, Tensor) and got.dtype is want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize("copy", [False, True])
def test_results_keep_castwise_dtypes_read_only_by_default_writable_with_copy(copy: bool) -> None:
    def f(a: Tensor, b: Tensor, i: Tensor) -> list[Tensor]:
        return [F.mul(a, a), F.add(b, 1.5), F.lt(i, 0), F.add(i, 1), F.sin(F.convert(a, "c64"))]

    a, b, i = rt.asarray(np.array([0.5, -2.0], np.float32), "f32r"), arr("bf16", (2,)), arr("i8", (2,))
    eager = f(a, b, i)
    jf = autodiff.jit(f, copy=copy)
    for _ in range(2):  # the first call, then the per-call path
        got = jf(a, b, i)
        assert isinstance(got, list)
        for g, w in zip(got, eager, strict=True):
            assert g.dtype is w.dtype, (g.dtype, w.dtype)  # float32r stays float32r, bf16 stays bf16
            np.testing.assert_allclose(g.numpy().astype(np.complex128), w.numpy().astype(np.complex128), rtol=1e-6)
            assert g._array.flags.writeable is copy
    if copy:
        got[3] += 1  # an in-place update of a copied result works (the array is castwise's, not XLA's)
        np.testing.assert_array_equal(got[3].numpy(), eager[3].numpy() + 1)
    else:
        with pytest.raises(ValueError, match="read-only"):
            got[3] += 1  # XLA's buffer: refused, nothing changes
        np.testing.assert_array_equal(got[3].numpy(), eager[3].numpy())


def test_views_never_alias_inputs() -> None:
    x = arr("f32", (3,))
    sq, same = autodiff.jit(lambda a: (F.mul(a, a), a))(x)
    np.testing.assert_allclose(sq.numpy(), x.numpy() ** 2)
    assert not sq._array.flags.writeable  # XLA's own buffer, not copied
    assert same._array.flags.writeable and not np.shares_memory(same.numpy(), x.numpy())  # an input: copied
    with pytest.raises(ValueError, match="read-only"):
        sq += 1.0


def test_traces_once_per_signature_dtypes_shapes_and_policy() -> None:
    calls: list[str] = []

    def f(x: Tensor, y: Tensor) -> Tensor:
        calls.append("traced")
        return F.mul(x, y)

    jf = autodiff.jit(f)
    x, y = arr("i32", (3,)), arr("f32", (3,), 1)
    first = jf(x, y)
    jf(arr("i32", (3,), 5), arr("f32", (3,), 6))  # new values, same signature: no retrace
    assert jf.traces == 1 and len(calls) == 1
    assert first.dtype is rt.float32
    jf(arr("i32", (4,)), arr("f32", (4,)))  # new shape
    jf(arr("i64", (3,)), arr("f32", (3,)))  # new dtype
    assert jf.traces == 3
    with rt.use_policy("tenferro"):  # any int with any float -> float64 under tenferro
        promoted = jf(x, y)
    assert jf.traces == 4 and promoted.dtype is rt.float64
    assert jf(x, y).dtype is rt.float32 and jf.traces == 4  # back under jax: the cached entry
    np.testing.assert_allclose(promoted.numpy(), (x.numpy() * y.numpy().astype(np.float64)), rtol=1e-7)


def test_python_scalars_are_static_weak_and_part_of_the_signature() -> None:
    def f(x: Tensor, c: float) -> Tensor:
        return F.mul(F.add(x, c), c)

    jf = autodiff.jit(f)
    x = arr("f32", (3,))
    out = jf(x, 2.0)
    assert out.dtype is rt.float32  # the scalar stays weak, as in eager execution
    np.testing.assert_allclose(out.numpy(), f(x, 2.0).numpy())
    jf(x, 2.0)
    assert jf.traces == 1
    np.testing.assert_allclose(jf(x, 3.0).numpy(), f(x, 3.0).numpy())
    assert jf.traces == 2
    # 0.0 and -0.0 are equal but not the same constant
    np.testing.assert_array_equal(np.signbit(jf(rt.asarray(np.zeros(1, np.float32)), -0.0).numpy()), [True])
    assert jf.traces == 3


def test_numpy_arguments_and_none_outputs_pass_through() -> None:
    def f(x: Tensor, i: Tensor) -> tuple[Any, ...]:
        _, pullback = autodiff.vjp(lambda a, b: F.mul(a, F.convert(b, a.dtype)), x, i)
        return pullback(F.convert(i, x.dtype))

    x, i = np.array([1.0, 2.0, 3.0]), np.array([1, 2, 3], np.int32)
    grads = autodiff.jit(f)(x, i)
    assert isinstance(grads, tuple) and grads[1] is None  # an integer input has no cotangent
    np.testing.assert_allclose(grads[0].numpy(), [1.0, 4.0, 9.0])
    assert grads[0].dtype is rt.float64


def test_64_bit_programs_run_without_global_x64() -> None:
    with jax.enable_x64(False):
        out = autodiff.jit(lambda x: F.exp(x))(rt.asarray(np.array([1e-3, 700.0])))
    assert out.dtype is rt.float64
    np.testing.assert_allclose(out.numpy(), np.exp([1e-3, 700.0]), rtol=1e-14)


def test_tracked_arguments_run_eagerly_so_outer_derivatives_flow_through() -> None:
    jf = autodiff.jit(lambda x: F.mul(F.sin(x), x))
    x = arr("f64", (3,))

    def loss(a: Tensor) -> Tensor:
        return F.reduce_sum(jf(a), (0,))

    g = autodiff.grad(loss)(x)
    expected = np.cos(x.numpy()) * x.numpy() + np.sin(x.numpy())
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-12)
    assert jf.traces == 0  # it ran eagerly inside the recording
    y = rt.asarray(x.numpy(), requires_grad=True)
    with autodiff.no_grad():  # nothing is recorded: the compiled path serves
        jf(y)
    assert jf.traces == 1


def test_closed_over_tensors_are_protected_from_in_place_writes() -> None:
    c = rt.asarray(np.array([1.0, 2.0]))
    jf = autodiff.jit(lambda x: F.add(F.mul(x, c), x))
    jf(arr("f64", (2,)))
    with pytest.raises(InPlaceError):
        c += 1.0  # the cached program baked c in; a silent change would go stale


def test_lower_export_and_jax_function() -> None:
    jf = autodiff.jit(autodiff.grad(lambda x: F.reduce_sum(F.tanh(x), (0,))))
    x = arr("f32", (4,))
    graph = jf.lower(x)
    assert "tanh" in str(graph)
    text = jf.export(x)
    assert text.count("stablehlo.tanh") == export_stablehlo(graph).count("stablehlo.tanh") == 1
    assert "tensor<4xf32>" in text
    (g,) = jf.jax_function(x)(jax.numpy.asarray(x.numpy()))
    np.testing.assert_allclose(np.asarray(g), 1 - np.tanh(x.numpy()) ** 2, rtol=1e-6)


def test_jit_of_a_jitted_function_keeps_its_own_cache() -> None:
    inner = autodiff.jit(lambda x: F.neg(x))
    outer = autodiff.jit(inner)
    np.testing.assert_array_equal(outer(arr("f32", (2,))).numpy(), -arr("f32", (2,)).numpy())
    assert outer.traces == 1 and inner.traces == 0  # the inner one ran inside the outer trace, eagerly
    assert vars(outer)["__name__"] == "<lambda>"


def test_bad_arguments_and_results_are_reported() -> None:
    with pytest.raises(TypeError, match="argument 1"):
        autodiff.jit(lambda x, s: x)(arr("f32", (2,)), "text")
    with pytest.raises(TypeError, match="must return"):
        autodiff.jit(lambda x: 3)(arr("f32", (2,)))


# -- the per-call path of a cached signature ------------------------------------------------------------


def aligned(t: Tensor, offset: int = 0) -> Tensor:
    """``t`` copied into storage ``offset`` bytes past a 64-byte boundary (XLA on CPU reads 0 in place)."""
    raw = np.empty(t.numpy().nbytes + 128, np.uint8)
    start = -raw.ctypes.data % 64 + offset
    array = raw[start : start + t.numpy().nbytes].view(t.numpy().dtype).reshape(t.shape)
    array[...] = t.numpy()
    assert array.ctypes.data % 64 == offset
    return Tensor(array, t.dtype)


def no_general_path(jf: autodiff.Jitted, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any call that misses the per-call cache fail."""

    def fail(*args: Any) -> Any:
        raise AssertionError("the general path ran")

    monkeypatch.setattr(jf, "_call", fail)


def test_a_cached_signature_runs_without_the_general_path_and_reads_new_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    jf = autodiff.jit(autodiff.grad(mlp_loss, argnums=(0, 1, 2)))
    args = [arr("f32", (6, 5)), arr("f32", (5,), 1), arr("f32", (5, 3), 2), arr("f32", (4, 6), 3)]
    jf(*args)
    no_general_path(jf, monkeypatch)
    fresh = [arr("f32", (6, 5), 4), arr("f32", (5,), 5), arr("f32", (5, 3), 6), arr("f32", (4, 6), 7)]
    for got, want in zip(jf(*fresh), autodiff.grad(mlp_loss, argnums=(0, 1, 2))(*fresh), strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=1e-7)
    fresh[3] += 1.0  # an in-place write into an argument: the next call computes with the new values
    for got, want in zip(jf(*fresh), autodiff.grad(mlp_loss, argnums=(0, 1, 2))(*fresh), strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=1e-7)
    assert jf.traces == 1


def test_the_per_call_cache_keys_on_dtype_shape_policy_and_tracking() -> None:
    jf = autodiff.jit(lambda x, y: F.mul(x, y))
    i, f = arr("i32", (3,)), arr("f32", (3,), 1)
    assert jf(i, f).dtype is rt.float32 and jf(i, f).dtype is rt.float32 and jf.traces == 1
    with rt.use_policy("tenferro"):  # the policy is part of the key: int32 * float32 -> float64 there
        assert jf(i, f).dtype is rt.float64 and jf(i, f).dtype is rt.float64
    assert jf.traces == 2
    assert jf(i, f).dtype is rt.float32 and jf.traces == 2
    assert jf(arr("i32", (4,)), arr("f32", (4,))).shape == (4,) and jf.traces == 3
    assert jf(f, i).dtype is rt.float32 and jf.traces == 4  # the argument order is part of the key
    f32r = rt.asarray(f.numpy(), "f32r")  # the storage of float32, another castwise dtype
    assert jf(f, f).dtype is rt.float32 and jf(f32r, f32r).dtype is rt.float32r and jf(f32r, f32r).dtype is rt.float32r
    assert jf(f, f).dtype is rt.float32 and jf.traces == 6

    # a tracked argument is recorded through, never served from the cache
    def loss(a: Tensor) -> Tensor:
        return F.reduce_sum(jf(i, a), (0,))

    g = autodiff.grad(loss)(f)
    np.testing.assert_array_equal(g.numpy(), i.numpy().astype(np.float32))
    assert jf.traces == 6


@pytest.mark.parametrize("weak_first", [True, False])
def test_a_weak_argument_is_its_own_signature(weak_first: bool) -> None:
    """A weak float32 0-d times bfloat16 is bfloat16, a strong one float32 (as jax.numpy): the
    two must not share a compiled program, in either order, on either path."""
    jf = autodiff.jit(lambda x, y: F.mul(x, y))
    y = arr("bf16", (3,))
    strong = rt.asarray(np.float32(0.5))
    weak = rt.asarray(np.float32(0.5))
    weak.weak = True
    order = [weak, strong] if weak_first else [strong, weak]
    for x in order:
        eager = F.mul(x, y)
        for _ in range(2):  # the general path, then the per-call cache
            out = jf(x, y)
            assert out.dtype is eager.dtype and out.weak == eager.weak
            np.testing.assert_array_equal(out.numpy(), eager.numpy())
    assert jf.traces == 2
    assert F.mul(strong, y).dtype is rt.float32 and F.mul(weak, y).dtype is rt.bfloat16


def test_python_scalar_and_array_arguments_hit_the_cache_on_the_general_path() -> None:
    jf = autodiff.jit(lambda x, c: F.mul(x, c))
    x = np.array([1.0, 2.0], np.float32)
    for c in (2.0, 2.0, 3.0, 3.0):
        np.testing.assert_array_equal(jf(x, c).numpy(), x * c)
    assert jf.traces == 2


@pytest.mark.parametrize("copy", [False, True])
def test_every_call_returns_results_of_its_own(copy: bool) -> None:
    jf = autodiff.jit(lambda x: (F.mul(x, 2.0), F.neg(x)), copy=copy)
    x = arr("f32", (3,))
    a, b = jf(x)
    c, d = jf(x)
    for r in (a, b, c, d):
        assert r._array.flags.writeable is r._array.flags.owndata is copy
    assert not np.shares_memory(a.numpy(), c.numpy()) and not np.shares_memory(b.numpy(), d.numpy())
    del a, b  # the buffers of dropped results are XLA's to reuse; the live ones keep theirs
    for _ in range(3):
        jf(x)
    np.testing.assert_array_equal(c.numpy(), x.numpy() * 2)
    np.testing.assert_array_equal(d.numpy(), -x.numpy())
    if copy:
        c += 1.0  # an in-place update of one result changes nothing else
        np.testing.assert_array_equal(jf(x)[0].numpy(), x.numpy() * 2)


def test_the_same_value_returned_twice() -> None:
    x = arr("f32", (3,))
    jf, jf_copy = autodiff.jit(lambda x: [F.sin(x)] * 2), autodiff.jit(lambda x: [F.sin(x)] * 2, copy=True)
    for _ in range(2):
        a, b = jf(x)  # views (of one buffer or two): neither can change
        assert not a._array.flags.writeable and not b._array.flags.writeable
        a, b = jf_copy(x)  # copies: independent
        a += 1.0
        np.testing.assert_allclose(b.numpy(), np.sin(x.numpy()), rtol=1e-6)


@pytest.mark.parametrize("copy", [True, False])
def test_results_never_alias_arguments_that_xla_takes_without_a_copy(copy: bool) -> None:
    x = aligned(arr("f32", (4, 4)))
    y = aligned(arr("f32", (4,), 1))

    def f(a: Tensor, b: Tensor) -> tuple[Tensor, ...]:
        # outputs that XLA could be tempted to hand back as an argument's own buffer
        return a, F.conj(a), F.reshape(a, (16,)), F.convert(a, "f32"), F.transpose(a, (1, 0)), F.add(b, 0.0), b

    jf = autodiff.jit(f, copy=copy)
    for _ in range(2):  # the first call (general path) and a cached one
        before = x.numpy().copy()
        results = jf(x, y)
        for r in results:
            assert not np.shares_memory(r.numpy(), x.numpy()) and not np.shares_memory(r.numpy(), y.numpy())
        x._array[...] += 1.0  # writing into the argument (its storage) afterwards does not reach the results
        np.testing.assert_array_equal(results[0].numpy(), before)
        np.testing.assert_array_equal(results[2].numpy(), before.reshape(16))


def test_unaligned_and_strided_arguments() -> None:
    # XLA reads a 64-byte aligned C-contiguous argument in place and copies others in (from 100 KiB
    # up on a worker thread): the results are the same either way, on the first call and cached ones
    jf = autodiff.jit(lambda a, b: F.add(F.mul(a, 2.0), F.broadcast_in_dim(b, a.shape, (1,))))
    base = aligned(arr("f32", (161, 160)))  # 103 040 bytes
    small = aligned(arr("f32", (160,), 1), offset=16)
    strided = Tensor(arr("f32", (160, 161), 2).numpy().T, rt.float32)
    for _ in range(2):
        for x in (base, aligned(base, offset=16), aligned(base, offset=32), strided):
            np.testing.assert_array_equal(jf(x, small).numpy(), x.numpy() * 2 + small.numpy())
    assert jf.traces == 1


def test_views_are_read_only_and_work_as_arguments_everywhere() -> None:
    jf = autodiff.jit(lambda x: F.mul(F.tanh(x), 0.5))
    x = arr("f32", (8, 8))
    first, second = jf(x), jf(x)
    for r in (first, second):
        assert not r._array.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            r.numpy()[0, 0] = 1.0
        with pytest.raises(ValueError, match="read-only"):
            r += 1.0
    assert not np.shares_memory(first.numpy(), second.numpy())
    again = jf(first)  # a read-only result as the next argument (XLA's own buffer: 64-byte aligned)
    np.testing.assert_allclose(again.numpy(), np.tanh(np.tanh(x.numpy()) * 0.5) * 0.5, rtol=1e-6)
    np.testing.assert_allclose(first.numpy(), np.tanh(x.numpy()) * 0.5, rtol=1e-6)
    # eager ops, autodiff and in-place writes into other tensors take it like any Tensor
    np.testing.assert_allclose((first * 2.0).numpy(), first.numpy() * 2, rtol=1e-6)
    g = autodiff.grad(lambda a: F.reduce_sum(F.mul(a, a), (0, 1)))(first)
    np.testing.assert_allclose(g.numpy(), 2 * first.numpy(), rtol=1e-6)
    leaf = rt.asarray(first.numpy(), requires_grad=True)
    F.reduce_sum(F.sin(leaf), (0, 1)).backward()
    assert leaf.grad is not None
    np.testing.assert_allclose(leaf.grad.numpy(), np.cos(first.numpy()), rtol=1e-6)
    y = arr("f32", (8, 8), 1)
    y += first
    np.testing.assert_allclose(y.numpy(), arr("f32", (8, 8), 1).numpy() + first.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["bool", "i8", "u32", "i4", "bf16", "f16", "f8e4m3fn", "f32r", "f64", "c64"])
def test_views_and_copies_keep_every_dtype(dtype: str) -> None:
    x = arr(dtype, (3, 2))
    f = (lambda a: F.logical_xor(a, a)) if dtype == "bool" else (lambda a: F.add(a, a))
    copied, viewed = autodiff.jit(f, copy=True), autodiff.jit(f)
    for _ in range(2):
        want, got = copied(x), viewed(x)
        assert got.dtype is want.dtype is x.dtype and got.numpy().dtype == want.numpy().dtype
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert want._array.flags.writeable and not got._array.flags.writeable


def test_cached_calls_keep_none_outputs_lists_and_64_bit_programs() -> None:
    def f(x: Tensor, i: Tensor) -> list[Any]:
        _, pullback = autodiff.vjp(lambda a, b: F.mul(a, F.convert(b, a.dtype)), x, i)
        return list(pullback(F.convert(i, x.dtype)))

    jf = autodiff.jit(f)
    x, i = rt.asarray(np.array([1.0, 2.0, 3.0])), rt.asarray(np.array([1, 2, 3], np.int32))
    with jax.enable_x64(False):
        for _ in range(3):
            grads = jf(x, i)
            assert isinstance(grads, list) and grads[1] is None
            assert grads[0].dtype is rt.float64
            np.testing.assert_array_equal(grads[0].numpy(), [1.0, 4.0, 9.0])
    assert jf.traces == 1


# -- the ``castwise export`` command ------------------------------------------------------------------


def run_export(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="castwise")
    add_export_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["export", *argv])
    code = args.func(args)
    out = capsys.readouterr()
    return code, out.out, out.err


MODULE = """
from runtime.core import lax as F


def predict(w, x, scale):
    return F.mul(F.tanh(F.matmul(x, w)), scale)


def loss(w, x):
    return F.reduce_sum(F.mul(predict(w, x, 2.0), predict(w, x, 2.0)), (0, 1))
"""


def test_export_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = tmp_path / "model.py"
    module.write_text(textwrap.dedent(MODULE))
    code, out, _ = run_export([f"{module}:predict", "--arg", "f32[3,2]", "--arg", "bf16[4,3]", "--arg", "0.5"], capsys)
    assert code == 0 and "stablehlo.tanh" in out and "tensor<4x3xbf16>" in out and "tensor<4x2xf32>" in out
    code, out, _ = run_export([f"{module}:loss", "--arg", "f32[3,2]", "--arg", "f32[4,3]", "--grad", "--format",
                               "graph"], capsys)  # fmt: skip
    assert code == 0 and out.startswith("{ lambda") and "dot_general" in out
    target = tmp_path / "out.mlir"
    code, out, _ = run_export([f"{module}:predict", "--arg", "i32[3,2]", "--arg", "f32[4,3]", "--arg", "1",
                               "--policy", "tenferro", "-o", str(target)], capsys)  # fmt: skip
    assert code == 0 and out == ""
    assert "tensor<4x2xf64>" in target.read_text()  # tenferro: int with float -> float64
    code, _, err = run_export([f"{module}:predict", "--arg", "f32[3,"], capsys)
    assert code == 2 and "bad argument spec" in err
    code, _, err = run_export(["no_such_module_castwise:f"], capsys)
    assert code == 2 and "no_such_module_castwise" in err
    code, _, err = run_export([f"{module}:predict", "--arg", "f32[3,2]", "--arg", "f32[5,5]", "--arg", "1.0"], capsys)
    assert code == 1 and "ShapeError" in err  # a matmul that does not fit
    assert export_command is not None


def test_parse_arg_spec() -> None:
    t = parse_arg_spec("c64[2, 3]")
    assert isinstance(t, Tensor) and t.dtype is rt.complex64 and t.shape == (2, 3)
    assert parse_arg_spec("i64[]").shape == ()
    assert parse_arg_spec("True") is True and parse_arg_spec("-0.5") == -0.5
    with pytest.raises(ValueError):
        parse_arg_spec("[1, 2]")


# -- sharding across devices -----------------------------------------------------------------------------

SHARDED = """
import json
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import autodiff
import runtime as rt
from passes import lower_to_jax
from runtime.core import lax as F

def loss(w, x):
    h = F.tanh(F.matmul(x, w))
    return F.reduce_sum(F.mul(h, h), (0, 1))

def program(w, x):
    value, grad = autodiff.value_and_grad(loss)(w, x)
    return [value, grad, F.tanh(F.matmul(x, w))]

rng = np.random.default_rng(0)
w = rng.standard_normal((16, 8)).astype(np.float32)
x = rng.standard_normal((64, 16)).astype(np.float32)
graph = rt.trace(program, w, x)
fn = lower_to_jax(graph)

mesh = Mesh(np.array(jax.devices()), ("batch",))
replicated, batch = NamedSharding(mesh, P()), NamedSharding(mesh, P("batch"))
ws, xs = jax.device_put(w, replicated), jax.device_put(x, batch)
sharded = jax.jit(fn, in_shardings=(replicated, batch), out_shardings=[replicated, replicated, batch])
outs = sharded(ws, xs)
one = jax.devices()[0]
single = jax.jit(fn)(jax.device_put(w, one), jax.device_put(x, one))
interp = rt.evaluate(graph, w, x)
print(json.dumps({
    "devices": len(jax.devices()),
    "input_devices": len(xs.sharding.device_set),
    "output_devices": [len(o.sharding.device_set) for o in outs],
    "activation_shard_shape": list(outs[2].addressable_shards[0].data.shape),
    "vs_one_device": [float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) for a, b in zip(outs, single)],
    "vs_interpreter": [float(np.max(np.abs(np.asarray(a) - b.numpy()))) for a, b in zip(outs, interp)],
}))
"""


def test_a_lowered_graph_runs_batch_sharded_over_8_devices_like_on_one() -> None:
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", SHARDED], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["devices"] == 8 and report["input_devices"] == 8
    assert report["output_devices"] == [8, 8, 8]
    assert report["activation_shard_shape"] == [8, 8]  # 64 rows split 8 ways
    assert max(report["vs_one_device"]) < 1e-4, report  # sharded reductions may sum in another order
    assert max(report["vs_interpreter"]) < 1e-4, report
