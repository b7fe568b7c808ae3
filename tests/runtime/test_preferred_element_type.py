"""``preferred_element_type`` of dot_general / matmul / conv_general_dilated against JAX.

lax's meaning: the result has that dtype and the products are accumulated in it. castwise
records it as XLA computes it where XLA widens: each promoted operand converted to the
preferred dtype, then the ordinary op. The tests:

1. A table over (operand dtype, preferred dtype) of every castwise dtype XLA's CPU backend
   handles, for both ops: what JAX refuses castwise refuses (an ``OpTypeError`` naming the op,
   the operands, the policy and the preferred type); what castwise computes has JAX's dtype and
   JAX's values (bit for bit for integer and bool results, within a rounding bound for floats).
   What JAX accepts and castwise refuses is only the documented departure: a preferred type
   ranked below the operands', where XLA computes in the operands' type and converts the result
   (checked: JAX's value is that).
2. int8 products summed in int32 do not wrap as int8; bfloat16 ones accumulate in float32.
3. Mixed operand dtypes: castwise's promotion, then the preferred type.
4. The recorded graph shows the converts; replaying and lowering it give the eager values;
   ``None`` (or the operands' own dtype) records exactly what it did before.
5. Gradients (JVP and VJP) against ``jax.jvp`` / ``jax.vjp`` for the float cases, and vmap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from passes import lower_to_jax  # noqa: E402
from runtime.core.dtypes import DType  # noqa: E402
from runtime.core.executor import asarray  # noqa: E402
from runtime.core.graph import evaluate  # noqa: E402
from runtime.core.tensor import Tensor  # noqa: E402
from tests.autodiff.rule_helpers import assert_close, x64  # noqa: E402

#: every castwise dtype that JAX has and XLA's CPU backend compiles a dot / convolution of
TABLE_DTYPES = [
    rt.dtype(n)
    for n in (
        "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float8_e4m3fn",
        "float8_e5m2", "bfloat16", "float16", "float32", "float64", "complex64", "complex128",
    )
]  # fmt: skip

DOT_DN = (((1,), (0,)), ((), ()))
CONV_DN = ("NCH", "OIH", "NCH")


def _lax_dot(x: Any, y: Any, pref: Any) -> Any:
    return lax.dot_general(x, y, DOT_DN, preferred_element_type=pref)


def _lax_conv(x: Any, y: Any, pref: Any) -> Any:
    dn = lax.conv_dimension_numbers(np.shape(x), np.shape(y), CONV_DN)
    return lax.conv_general_dilated(x, y, (1,), [(1, 1)], dimension_numbers=dn, preferred_element_type=pref)


def _rt_dot(x: Any, y: Any, pref: Any) -> Tensor:
    return rt.lax.dot_general(x, y, DOT_DN, preferred_element_type=pref)


def _rt_conv(x: Any, y: Any, pref: Any) -> Tensor:
    return rt.lax.conv_general_dilated(x, y, (1,), [(1, 1)], dimension_numbers=CONV_DN, preferred_element_type=pref)


#: op name -> (castwise, lax, lhs shape, rhs shape, number of products per output)
OPS: dict[str, tuple[Callable[..., Any], Callable[..., Any], tuple[int, ...], tuple[int, ...], int]] = {
    "dot_general": (_rt_dot, _lax_dot, (3, 7), (7, 2), 7),
    "conv_general_dilated": (_rt_conv, _lax_conv, (2, 3, 5), (2, 3, 3), 9),
}


def _sample(d: DType, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Small values (products and sums stay finite in every float8 type)."""
    rng = np.random.default_rng(seed)
    if d.kind == "bool":
        return rng.random(shape) < 0.5
    if d.kind == "uint":
        return rng.integers(0, 4, shape).astype(d.storage)
    if d.kind == "int":
        return rng.integers(-3, 4, shape).astype(d.storage)
    data = rng.integers(-6, 7, shape) / 4 + (rng.standard_normal(shape) / 64 if d.bits > 8 else 0)
    if d.kind == "complex":
        data = data + 1j * (rng.integers(-6, 7, shape) / 4)
    return np.asarray(data).astype(d.storage)


def _jax(fn: Callable[..., Any], *args: Any, pref: Any) -> np.ndarray | TypeError:
    """JAX's answer, or the TypeError with which it refuses the combination."""
    try:
        with x64():
            return np.asarray(fn(*[jnp.asarray(a) for a in args], pref))
    except TypeError as err:
        return err


def _wide(a: np.ndarray) -> np.ndarray:
    return a.astype(np.complex128) if np.iscomplexobj(a) else a.astype(np.float64)


def _assert_values(what: str, got: np.ndarray, want: np.ndarray, bound_ref: np.ndarray, pref: DType, n: int) -> None:
    """Integer and bool results bit for bit; float ones within ``n`` roundings of ``pref`` of
    the sum of absolute products (``bound_ref``), as summation order may differ."""
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if not pref.is_inexact:
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    eps = float(ml_dtypes.finfo(rt.core.dtypes.COMPLEX_PART.get(pref, pref).storage).eps)
    err = np.abs(_wide(got) - _wide(want))
    assert np.all(err <= 2 * n * eps * bound_ref + 1e-300), f"{what}: {got} vs {want}"


def _refusal_text(err: Exception, op: str, pref: DType, lshape: tuple[int, ...], d: DType) -> None:
    message = str(err)
    assert f"{op}: preferred_element_type {pref}" in message, message
    assert f"lhs:{d.short}{list(lshape)}" in message and "policy 'jax'" in message, message


TABLE = [
    pytest.param(op, c, p, id=f"{op}-{c.short}-{p.short}") for op in OPS for c in TABLE_DTYPES for p in TABLE_DTYPES
]


def _xla_conv_complex_in_operand_precision(op: str, c: DType, p: DType) -> bool:
    """A departure: XLA's CPU convolution of complex64 operands with a complex128 preferred type
    computes in complex64's precision (errors of float32 roundings); castwise accumulates in
    complex128, lax's documented meaning, which the convolution of the converted operands gives."""
    return op == "conv_general_dilated" and c is rt.complex64 and p is rt.complex128


@pytest.mark.filterwarnings("ignore:Casting complex values to real")  # JAX's own complex -> real rounding
@pytest.mark.parametrize(("op", "c", "p"), TABLE)
def test_preferred_element_type_matches_lax(op: str, c: DType, p: DType) -> None:
    ours, theirs, lshape, rshape, n = OPS[op]
    x, y = _sample(c, lshape, 1), _sample(c, rshape, 2)
    want = _jax(theirs, x, y, pref=p.storage)
    if _xla_conv_complex_in_operand_precision(op, c, p):
        assert not isinstance(want, TypeError)
        want = _jax(theirs, x.astype(p.storage), y.astype(p.storage), pref=None)
    try:
        got = ours(asarray(x), asarray(y), p)
    except rt.OpTypeError as err:
        _refusal_text(err, op, p, lshape, c)
        if isinstance(want, TypeError):
            return  # refused by both
        # the departure: JAX accepts, and computes in the operands' type and converts the
        # result (XLA's order ranks the preferred type below theirs), which is no accumulation
        # in the preferred type
        assert "XLA computes it in" in str(err), str(err)
        if not (c.kind == "complex" and p.kind == "uint"):  # XLA's complex -> unsigned differs from lax's convert
            with x64():
                rounded = np.asarray(lax.convert_element_type(theirs(jnp.asarray(x), jnp.asarray(y), None), p.storage))
            np.testing.assert_array_equal(
                _wide(want), _wide(rounded), err_msg=f"{op} {c} -> {p}: XLA rounds the result"
            )
        return
    assert not isinstance(want, TypeError), f"JAX refuses {op} {c} -> {p} ({want}) and castwise computes it"
    assert got.dtype is p
    bound = np.abs(_wide(np.asarray(_jax(theirs, np.abs(_wide(x)), np.abs(_wide(y)), pref=None))))
    _assert_values(f"{op} {c} -> {p}", got.numpy(), want, bound, p, n)


def test_int8_products_summed_in_int32_do_not_wrap() -> None:
    x = np.full((2, 40), 100, np.int8)
    y = np.full((40, 3), -100, np.int8)
    got = rt.lax.dot_general(asarray(x), asarray(y), DOT_DN, preferred_element_type=rt.int32)
    with x64():
        want = np.asarray(lax.dot_general(x, y, DOT_DN, preferred_element_type=np.int32))
    np.testing.assert_array_equal(got.numpy(), want)
    assert got.numpy()[0, 0] == -400_000 and got.dtype is rt.int32
    wrapped = rt.lax.dot_general(asarray(x), asarray(y), DOT_DN)  # in int8, as before: wraps
    assert wrapped.dtype is rt.int8 and wrapped.numpy()[0, 0] == np.int8(-400_000 % 256 - 256)
    # matmul passes it through, as jnp.matmul does
    got_mm = rt.matmul(asarray(x), asarray(y), preferred_element_type=rt.int32)
    with x64():
        want_mm = np.asarray(jnp.matmul(x, y, preferred_element_type=np.int32))
    np.testing.assert_array_equal(got_mm.numpy(), want_mm)


def test_xla_complex_convolution_with_a_complex128_preferred_type_keeps_complex64_precision() -> None:
    """The departure, pinned: XLA's result is off the complex128 convolution by float32
    roundings; castwise's is that convolution (to float64 roundings)."""
    x, y = _sample(rt.complex64, (2, 3, 5), 1), _sample(rt.complex64, (2, 3, 3), 2)
    x = x + np.complex64(1e-3j)  # bits below the sampled quarters
    xla = _jax(_lax_conv, x, y, pref=np.complex128)
    exact = _jax(_lax_conv, x.astype(np.complex128), y.astype(np.complex128), pref=None)
    ours = _rt_conv(asarray(x), asarray(y), rt.complex128).numpy()
    assert isinstance(xla, np.ndarray) and isinstance(exact, np.ndarray)
    assert np.max(np.abs(ours - exact)) < 1e-12 < np.max(np.abs(xla - exact)) < 1e-5


def test_bfloat16_products_accumulate_in_float32() -> None:
    """(1 + 2^-7)^2 (exact in bfloat16's 8 significant bits) summed 64 times: in float32 each
    product keeps its 2^-14 bit and the sum is exact; in bfloat16 it is rounded."""
    v = np.float64(1 + 2**-7)
    x = np.full((1, 64), v, ml_dtypes.bfloat16)
    y = np.full((64, 1), v, ml_dtypes.bfloat16)
    got = rt.lax.dot_general(asarray(x), asarray(y), DOT_DN, preferred_element_type=rt.float32)
    with x64():
        want = np.asarray(lax.dot_general(x, y, DOT_DN, preferred_element_type=np.float32))
    assert got.dtype is rt.float32
    np.testing.assert_array_equal(got.numpy(), want)
    assert got.numpy()[0, 0] == np.float32(64 * v * v)
    assert float(rt.lax.dot_general(asarray(x), asarray(y), DOT_DN).numpy()[0, 0]) != float(got.numpy()[0, 0])


MIXED = [
    (rt.int8, rt.uint8, rt.int32),
    (rt.int8, rt.int16, rt.int64),
    (rt.uint8, rt.int32, rt.int64),
    (rt.bfloat16, rt.float16, rt.float64),
    (rt.int8, rt.float32, rt.float64),
    (rt.float32, rt.complex64, rt.complex128),
]


@pytest.mark.parametrize(("a", "b", "p"), MIXED, ids=[f"{a.short}-{b.short}-{p.short}" for a, b, p in MIXED])
@pytest.mark.parametrize("op", list(OPS))
def test_mixed_operands_promote_then_convert(op: str, a: DType, b: DType, p: DType) -> None:
    """castwise's promotion first (jnp's common dtype), then the preferred type; the graph holds
    the promotion's convert and the preferred one."""
    ours, theirs, lshape, rshape, n = OPS[op]
    x, y = _sample(a, lshape, 3), _sample(b, rshape, 4)
    common = jnp.promote_types(a.storage, b.storage)
    want = _jax(theirs, x.astype(common), y.astype(common), pref=p.storage)
    if _xla_conv_complex_in_operand_precision(op, rt.dtype(common), p):
        want = _jax(theirs, x.astype(p.storage), y.astype(p.storage), pref=None)
    assert not isinstance(want, TypeError)
    got = ours(asarray(x), asarray(y), p)
    bound = np.abs(_wide(np.asarray(_jax(theirs, np.abs(_wide(x)), np.abs(_wide(y)), pref=None))))
    _assert_values(f"{op} {a}, {b} -> {p}", got.numpy(), want, bound, p, n)
    graph = rt.trace(lambda u, v: ours(u, v, p), asarray(x), asarray(y))
    main = graph.eqns[-1]
    assert main.op.name == op and [v.dtype for v in main.inputs] == [p, p], graph
    targets = [e.params["new_dtype"] for e in graph.eqns if e.op.name == "convert"]
    assert sorted(t.name for t in targets) == sorted(
        [rt.dtype(common).name for d in (a, b) if d is not rt.dtype(common)] + [p.name, p.name]
    ), graph


def test_the_graph_shows_the_converts_and_replays_and_lowers() -> None:
    x, y = _sample(rt.int8, (3, 7), 5), _sample(rt.int8, (7, 2), 6)
    xt, yt = asarray(x), asarray(y)
    graph = rt.trace(lambda u, v: rt.lax.dot_general(u, v, DOT_DN, preferred_element_type=rt.int32), xt, yt)
    text = str(graph)
    assert [e.op.name for e in graph.eqns] == ["convert", "convert", "dot_general"], text
    assert text.count("convert[to=i32]") == 2 and "i32[3,2] = dot_general" in text, text
    eager = rt.lax.dot_general(xt, yt, DOT_DN, preferred_element_type=rt.int32)
    (replayed,) = evaluate(graph, xt, yt)
    np.testing.assert_array_equal(replayed.numpy(), eager.numpy())
    with x64():
        (lowered,) = lower_to_jax(graph)(x, y)
        want = lax.dot_general(x, y, DOT_DN, preferred_element_type=np.int32)
    np.testing.assert_array_equal(np.asarray(lowered), np.asarray(want))
    # None, or the operands' own dtype, records the op alone, as before
    for pref in (None, rt.int8):
        plain = rt.trace(lambda u, v, pref=pref: rt.lax.dot_general(u, v, DOT_DN, preferred_element_type=pref), xt, yt)
        assert [e.op.name for e in plain.eqns] == ["dot_general"], plain
        assert str(plain) == str(rt.trace(lambda u, v: rt.lax.dot_general(u, v, DOT_DN), xt, yt))
    conv = rt.trace(lambda u, v: _rt_conv(u, v, rt.float64), asarray(_sample(rt.float32, (2, 3, 5), 7)),
                    asarray(_sample(rt.float32, (2, 3, 3), 8)))  # fmt: skip
    assert [e.op.name for e in conv.eqns] == ["convert", "convert", "conv_general_dilated"], conv
    assert str(conv).count("convert[to=f64]") == 2, conv


@pytest.mark.parametrize(
    ("op", "c", "p", "why"),
    [
        ("dot_general", rt.int32, rt.int16, "must not be narrower than the operands' int32"),
        ("dot_general", rt.float32, rt.bfloat16, "XLA computes it in float32"),
        ("dot_general", rt.float32, rt.int32, "XLA computes it in float32"),
        ("conv_general_dilated", rt.float32, rt.int32, "compatible"),
        ("conv_general_dilated", rt.int8, rt.uint16, "signedness"),
        ("dot_general", rt.int4, rt.int8, "CPU backend"),
    ],
)
def test_refusals_name_everything_and_record_nothing(op: str, c: DType, p: DType, why: str) -> None:
    ours, _, lshape, rshape, _ = OPS[op]
    errors: list[Exception] = []

    def f(u: Tensor, v: Tensor) -> Tensor:
        try:
            ours(u, v, p)
        except rt.OpTypeError as err:
            errors.append(err)
        return u

    graph = rt.trace(f, asarray(_sample(c, lshape, 9)), asarray(_sample(c, rshape, 10)))
    assert len(errors) == 1 and not list(graph.eqns), graph
    assert why in str(errors[0]), str(errors[0])
    _refusal_text(errors[0], op, p, lshape, c)
    with pytest.raises(rt.ShapeError, match=r"preferred_element_type float64.*lhs:f32\[3, 7\]"):
        rt.lax.dot_general(asarray(np.ones((3, 7), np.float32)), asarray(np.ones((6, 2), np.float32)), DOT_DN,
                       preferred_element_type=rt.float64)  # fmt: skip
    with pytest.raises(rt.OpTypeError, match="is not a dtype"):
        rt.lax.dot_general(asarray(np.ones((3, 7))), asarray(np.ones((7, 2))), DOT_DN, preferred_element_type="f99")


GRADS = [
    (op, c, p) for op in OPS for c, p in ((rt.float32, rt.float64), (rt.bfloat16, rt.float32), (rt.float16, rt.float32))
]


@pytest.mark.parametrize(("op", "c", "p"), GRADS, ids=[f"{o}-{c.short}-{p.short}" for o, c, p in GRADS])
def test_jvp_and_vjp_match_jax(op: str, c: DType, p: DType) -> None:
    ours, theirs, lshape, rshape, _ = OPS[op]
    rng = np.random.default_rng(11)
    x, y = (rng.standard_normal(s).astype(c.storage) for s in (lshape, rshape))
    tx, ty = (rng.standard_normal(s).astype(c.storage) for s in (lshape, rshape))
    out_shape = ours(asarray(x), asarray(y), p).shape
    ct = rng.standard_normal(out_shape).astype(p.storage)
    with x64():
        f_jax = lambda u, v: theirs(u, v, p.storage)  # noqa: E731
        want_out, want_t = jax.jvp(f_jax, (jnp.asarray(x), jnp.asarray(y)), (jnp.asarray(tx), jnp.asarray(ty)))
        want_cts = jax.vjp(f_jax, jnp.asarray(x), jnp.asarray(y))[1](jnp.asarray(ct))
    f = lambda u, v: ours(u, v, p)  # noqa: E731
    out, out_t = autodiff.jvp(f, [asarray(x), asarray(y)], [asarray(tx), asarray(ty)])
    assert out_t.dtype is p
    assert_close(f"{op} primal", out.numpy(), np.asarray(want_out), c)
    assert_close(f"{op} JVP", out_t.numpy(), np.asarray(want_t), c)
    got_cts = autodiff.vjp(f, asarray(x), asarray(y))[1](asarray(ct))
    for g, w in zip(got_cts, want_cts, strict=True):
        assert g.dtype is c and np.asarray(w).dtype == c.storage
        assert_close(f"{op} VJP", _wide(g.numpy()), _wide(np.asarray(w)), c)


def test_vmap_matches_jax() -> None:
    xs, y = _sample(rt.int8, (4, 3, 7), 12), _sample(rt.int8, (7, 2), 13)
    got = autodiff.vmap(lambda u: _rt_dot(u, asarray(y), rt.int32))(asarray(xs))
    with x64():
        want = jax.vmap(lambda u: _lax_dot(u, jnp.asarray(y), np.int32))(jnp.asarray(xs))
    assert got.dtype is rt.int32
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))
