"""The plan's per-op families, each against the real library of its policy.

* integer and bool inputs to float-only ops (``ops.FLOAT_ONLY``) go to the
  policy's inexact dtype: jax.numpy (x64), NumPy, PyTorch (importorskip);
* bool + bool / bool * bool are logical or / and, sum and prod of bool count
  in int64;
* real / conj of a real input is the input, imag is zeros.

Every table row comes from running the library itself; the recording of each
convenience is checked by its printed graph.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import ml_dtypes
import numpy as np
import pytest
from jax import lax

import autodiff
import runtime as rt
from runtime.core import lax as F
from runtime.core import ops
from runtime.core.executor import apply
from runtime.core.plan import OP_RULES, REWRITE_RULES, plan
from runtime.core.promotion import PromotionError
from runtime.core.shapes import OpTypeError, abstract_eval

jax.config.update("jax_enable_x64", True)

#: every integer and bool dtype of the catalog
INTEGRAL = [d for d in rt.ALL_DTYPES if d.kind in ("bool", "int", "uint")]
#: the ones NumPy computes with natively
NUMPY_INTEGRAL = [d for d in INTEGRAL if d.storage.kind in "biu" and d.bits == d.itemsize * 8]
REAL = [d for d in rt.ALL_DTYPES if d.kind != "complex"]

ELEMENTWISE = sorted((o for o in ops.FLOAT_ONLY if o.family in (ops.UNARY, ops.BINARY)), key=lambda o: o.name)
UNARY_FLOAT_ONLY = [o for o in ELEMENTWISE if o.arity == 1]
LINALG = sorted((o for o in ops.FLOAT_ONLY if o.family == ops.LINALG), key=lambda o: o.name)


def _values(d: rt.DType, n: int = 4) -> np.ndarray:
    """Small non-negative values of ``d`` (bool: True and False)."""
    if d is rt.bool_:
        return np.array([True, False, True, True][:n])
    return np.arange(1, n + 1).astype(d.storage)


def _jax_array(a: np.ndarray, d: rt.DType) -> Any:
    return jnp.asarray(a, dtype=d.storage)


# -- the vocabulary ----------------------------------------------------------------------------


#: float-only kernels whose jax.numpy meaning on an integer is no conversion: castwise refuses the
#: integer for now (jnp.floor/ceil/round return it unchanged, jnp.isfinite gives all True;
#: lax.complex takes floats only, as castwise's complex does)
_KEEPS_INTEGERS = {"floor", "ceil", "round", "is_finite", "complex"}


@pytest.mark.parametrize("op", sorted(ops.OPS.values(), key=lambda o: o.name), ids=lambda o: o.name)
def test_every_float_only_op_has_the_inexact_rule(op: ops.OpDef) -> None:
    """An op whose kernel takes float32 but refuses int32 (every operand) is float-only, and
    the plan has the rule that converts integer inputs for it: a missing rule fails here."""
    if op.arity is None or op.arity == 0 or (op.params and op.name not in _PARAMS):
        return
    ok = lambda d: _accepts(op, d)  # noqa: E731
    float_only = ok(rt.float32) and not ok(rt.int32) and not ok(rt.bool_)
    if op in ops.COMPLEX_PARTS:
        assert op.name in REWRITE_RULES
    elif float_only and op.name not in _KEEPS_INTEGERS:
        assert op in ops.FLOAT_ONLY, f"{op.name} refuses integers: add it to ops.FLOAT_ONLY"
    if op in ops.FLOAT_ONLY:
        assert OP_RULES[op.name].__name__ == "plan_inexact_operands"
        assert plan(op, (rt.int32,) * op.arity) == (rt.float32,) * op.arity


#: params for the ops that need some to be typed
_PARAMS: dict[str, dict[str, Any]] = {
    "eigh": {"lower": True},
    "triangular_solve": {"left_side": True, "lower": True, "transpose_a": False, "conjugate_a": False,
                         "unit_diagonal": False},
}  # fmt: skip


def _accepts(op: ops.OpDef, d: rt.DType) -> bool:
    try:
        abstract_eval(op, [(d, (2, 2))] * (op.arity or 1), _PARAMS.get(op.name, {}))
    except (TypeError, ValueError):
        return False
    return True


# -- int and bool inputs to float-only ops: jax.numpy ------------------------------------------

JAX_FUNCS: dict[str, Callable[..., Any]] = {
    "exp2": jnp.exp2, "sinh": jnp.sinh, "cosh": jnp.cosh, "tan": jnp.tan, "asin": jnp.arcsin, "acos": jnp.arccos,
    "atan": jnp.arctan, "asinh": jnp.arcsinh, "acosh": jnp.arccosh, "atanh": jnp.arctanh, "cbrt": jnp.cbrt,
    "nextafter": jnp.nextafter,
    "exp": jnp.exp, "log": jnp.log, "expm1": jnp.expm1, "log1p": jnp.log1p, "sin": jnp.sin, "cos": jnp.cos,
    "tanh": jnp.tanh, "sqrt": jnp.sqrt, "reciprocal": jnp.reciprocal,
    "logistic": jsp.expit,  # jax.nn.sigmoid calls lax.logistic directly (floats only); expit promotes
    "rsqrt": lambda x: 1 / jnp.sqrt(x),  # jnp has no rsqrt: the promotion is jnp.sqrt's
    "atan2": jnp.arctan2,
    "erf": jsp.erf, "erfc": jsp.erfc, "erf_inv": jsp.erfinv, "lgamma": jsp.gammaln, "digamma": jsp.digamma,
    "bessel_i0e": jsp.i0e, "bessel_i1e": jsp.i1e, "igamma": jsp.gammainc, "igammac": jsp.gammaincc,
    # no jax.numpy-level function (or one that wants an integer m): lax's, after jnp.exp's promotion
    "polygamma": lambda m, x: _lax_inexact(lax.polygamma, m, x),
    "zeta": lambda x, q: _lax_inexact(lax.zeta, x, q),
    "igamma_grad_a": lambda a, x: _lax_inexact(lax.igamma_grad_a, a, x),
}  # fmt: skip


def _lax_inexact(f: Callable[..., Any], *xs: Any) -> Any:
    """``f`` on operands converted as jax.numpy converts a float-only op's integers (jnp.exp's dtype)."""
    return f(*(jnp.asarray(x, jnp.exp(x).dtype) for x in xs))


#: XLA compiles no 1-bit integer program (the new-dtypes tests check int1/uint1 against other oracles)
JAX_INTEGRAL = [d for d in INTEGRAL if d in rt.get_policy_object("jax").dtypes and d not in (rt.int1, rt.uint1)]


@pytest.mark.parametrize("d", JAX_INTEGRAL, ids=lambda d: d.name)
@pytest.mark.parametrize("op", ELEMENTWISE, ids=lambda o: o.name)
@pytest.mark.parametrize("policy", ["jax", "jax-strict"])
def test_float_only_ops_on_integers_follow_jax_numpy(policy: str, op: ops.OpDef, d: rt.DType) -> None:
    x = _values(d)
    args = (x,) * (op.arity or 1)
    try:
        with jax.numpy_dtype_promotion("strict" if policy == "jax-strict" else "standard"):
            expected = JAX_FUNCS[op.name](*(_jax_array(a, d) for a in args))
    except TypeError:  # jax.numpy has no inexact dtype for 2-bit integers: castwise refuses them too
        with rt.use_policy(policy), pytest.raises(rt.PromotionError, match=f"{op.name}: .*{d.name}"):
            apply(op, [rt.asarray(a, d) for a in args], {})
        return
    with rt.use_policy(policy):
        got = apply(op, [rt.asarray(a, d) for a in args], {})
    assert isinstance(got, rt.Tensor)
    assert got.dtype is rt.dtype(expected.dtype), (op.name, d.name)
    np.testing.assert_allclose(
        np.asarray(got.numpy(), np.float64),
        np.asarray(expected, np.float64),
        rtol=2e-6,
        atol=_NEAR_ZERO_ATOL.get(op.name, 0),
        err_msg=f"{op.name} {d.name}",
    )


#: lgamma(1) = lgamma(2) = 0 come out of a difference of O(1) terms, whose elementary functions
#: (log, log1p) XLA and NumPy round differently: a few float32 ulps of 1 apart there
_NEAR_ZERO_ATOL: dict[str, float] = {"lgamma": 1e-6, "digamma": 1e-6}


# -- NumPy -----------------------------------------------------------------------------------

NUMPY_FUNCS: dict[str, Callable[..., Any]] = {
    "exp2": np.exp2, "sinh": np.sinh, "cosh": np.cosh, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "cbrt": np.cbrt,
    "nextafter": np.nextafter,
    "exp": np.exp, "log": np.log, "expm1": np.expm1, "log1p": np.log1p, "sin": np.sin, "cos": np.cos,
    "tanh": np.tanh, "sqrt": np.sqrt, "atan2": np.arctan2,
}  # fmt: skip


@pytest.mark.parametrize("d", NUMPY_INTEGRAL, ids=lambda d: d.name)
@pytest.mark.parametrize("op", ELEMENTWISE, ids=lambda o: o.name)
def test_float_only_ops_on_integers_follow_numpy(op: ops.OpDef, d: rt.DType) -> None:
    x = _values(d)
    args = [rt.asarray(x, d)] * (op.arity or 1)
    if op is ops.reciprocal:
        # np.reciprocal keeps integers integral (1 // x): castwise's reciprocal is float-only, so it refuses
        with np.errstate(divide="ignore", invalid="ignore"):  # (the oracle's 1 // 0)
            assert np.reciprocal(x).dtype.kind in "iu"
        with rt.use_policy("numpy"), pytest.raises(PromotionError, match="reciprocal.*NumPy"):
            apply(op, args, {})
        return
    # NumPy has no logistic or rsqrt: their ufunc loop would be chosen as np.exp's and np.sqrt's is
    # (nor the special functions: a unary one's as np.sqrt's, a binary one's as np.arctan2's)
    ref = NUMPY_FUNCS.get(op.name, np.exp if op is ops.logistic else np.sqrt if (op.arity or 1) == 1 else np.arctan2)
    with np.errstate(all="ignore"):
        expected_dtype = ref(*[x] * (op.arity or 1)).dtype
        with rt.use_policy("numpy"):
            got = apply(op, args, {})
    assert isinstance(got, rt.Tensor)
    assert got.dtype is rt.dtype(expected_dtype), (op.name, d.name)
    if op.name in NUMPY_FUNCS:
        with np.errstate(all="ignore"):  # the oracle's own IEEE results (acos(2) is NaN), NumPy's warning aside
            expected = NUMPY_FUNCS[op.name](*[x] * (op.arity or 1))
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-3 if expected.dtype == np.float16 else 1e-12)


def test_numpy_inexact_table_is_numpys() -> None:
    # The exact table the brief names, from np.exp itself.
    for d in NUMPY_INTEGRAL:
        assert plan(ops.exp, (d,), policy="numpy") == (rt.dtype(np.exp(np.zeros(2, d.storage)).dtype),), d.name


# -- PyTorch -----------------------------------------------------------------------------------


def _torch() -> Any:
    return pytest.importorskip("torch")


TORCH_NAMES = {
    "exp": "exp",
    "log": "log",
    "expm1": "expm1",
    "log1p": "log1p",
    "sin": "sin",
    "cos": "cos",
    "tanh": "tanh",
    "sqrt": "sqrt",
    "rsqrt": "rsqrt",
    "reciprocal": "reciprocal",
    "logistic": "sigmoid",
    "atan2": "atan2",
    "exp2": "exp2",
    "sinh": "sinh",
    "cosh": "cosh",
    "tan": "tan",
    "asin": "asin",
    "acos": "acos",
    "atan": "atan",
    "asinh": "asinh",
    "acosh": "acosh",
    "atanh": "atanh",
    "nextafter": "nextafter",
}  # fmt: skip  (torch has no cbrt)
TORCH_INTEGRAL = ["bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("name", TORCH_INTEGRAL)
@pytest.mark.parametrize("op", ELEMENTWISE, ids=lambda o: o.name)
def test_float_only_ops_on_integers_follow_torch(op: ops.OpDef, name: str) -> None:
    torch = _torch()
    if op.name not in TORCH_NAMES:
        pytest.skip(f"PyTorch has no {op.name}")
    d = rt.dtype(name)
    x = _values(d)
    tx = torch.from_numpy(x.astype(np.int64)).to(getattr(torch, name))
    try:
        expected = getattr(torch, TORCH_NAMES[op.name])(*[tx] * (op.arity or 1))
    except (NotImplementedError, RuntimeError, TypeError):  # PyTorch refuses the dtype: so must castwise
        with rt.use_policy("torch"), pytest.raises(rt.PromotionError, match=f"{op.name}.*{name}"):
            apply(op, [rt.asarray(x, d)] * (op.arity or 1), {})
        return
    with rt.use_policy("torch"):
        got = apply(op, [rt.asarray(x, d)] * (op.arity or 1), {})
    assert isinstance(got, rt.Tensor)
    assert got.dtype.name == str(expected.dtype).removeprefix("torch."), (op.name, name)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)


# -- linear algebra ----------------------------------------------------------------------------


def _linalg(op: ops.OpDef, a: Any) -> Any:
    """Run a linalg op of castwise on the integer matrix ``a`` (eigh: its eigenvalues)."""
    if op is ops.eigh:
        return F.eigh(a)[1]
    if op is ops.triangular_solve:
        return F.triangular_solve(a, a, left_side=True, lower=True)
    if op is ops.lu:
        return F.det(a)  # the only lu NumPy has
    if op is ops.qr:
        return F.qr(a)[1]
    if op is ops.geqrf:
        return F.geqrf(a)[1]
    if op is ops.svd:
        return F.svd(a, compute_uv=False)
    if op is ops.eig:
        w = F.eigvals(a)
        return rt.asarray(np.sort_complex(w.numpy()), w.dtype)
    return F.cholesky(a)


JAX_LINALG: dict[str, Callable[[Any], Any]] = {
    "cholesky": jnp.linalg.cholesky,
    "eigh": lambda a: jnp.linalg.eigh(a)[0],
    "triangular_solve": lambda a: jax.scipy.linalg.solve_triangular(a, a, lower=True),
    "lu": jnp.linalg.det,  # castwise: lu through det, as NumPy below
    "qr": lambda a: jnp.linalg.qr(a)[1],
    "geqrf": lambda a: jnp.linalg.qr(a, mode="raw")[1],
    "svd": lambda a: jnp.linalg.svd(a, compute_uv=False),
    "eig": lambda a: jnp.sort_complex(jnp.linalg.eigvals(a)),
}
NUMPY_LINALG: dict[str, Callable[[Any], Any]] = {
    "cholesky": np.linalg.cholesky,
    "eigh": lambda a: np.linalg.eigh(a)[0],
    "triangular_solve": lambda a: np.linalg.solve(a, a),  # NumPy has no triangular solve; same _commonType
    "lu": lambda a: np.linalg.det(a),  # NumPy has no LU; det factors with it, same _commonType
    "qr": lambda a: np.linalg.qr(a)[1],
    "geqrf": lambda a: np.linalg.qr(a, mode="raw")[1],
    "svd": lambda a: np.linalg.svd(a, compute_uv=False),
    "eig": lambda a: np.sort_complex(np.linalg.eigvals(a)),
}


@pytest.mark.parametrize("d", [rt.bool_, rt.int8, rt.int32, rt.int64, rt.uint8], ids=lambda d: d.name)
@pytest.mark.parametrize("op", LINALG, ids=lambda o: o.name)
def test_linalg_on_integers_follows_jax_numpy_and_numpy(op: ops.OpDef, d: rt.DType) -> None:
    # symmetric positive definite (cholesky, eigh) or lower triangular (triangular_solve)
    a = np.tri(3) + np.eye(3) if op is ops.triangular_solve else np.ones((3, 3)) + 2 * np.eye(3)
    a = np.eye(3, dtype=bool) if d is rt.bool_ else a.astype(d.storage)
    for policy, ref in (("jax", JAX_LINALG[op.name]), ("numpy", NUMPY_LINALG[op.name])):
        expected = np.asarray(ref(a))
        got = _run(policy, lambda: _linalg(op, rt.asarray(a, d)))
        assert got.dtype is rt.dtype(expected.dtype), (policy, op.name, d.name)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_linalg_on_integers_is_refused_like_torch() -> None:
    torch = _torch()
    with pytest.raises(RuntimeError, match="float"):
        torch.linalg.cholesky(torch.eye(2, dtype=torch.int64))
    with rt.use_policy("torch"), pytest.raises(PromotionError, match="cholesky.*PyTorch"):
        F.cholesky(rt.asarray(np.eye(2, dtype=np.int64)))


# -- the other policies ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "d", "expected"),
    [
        ("neuron", rt.int8, rt.float32), ("neuron", rt.int64, rt.float32), ("neuron", rt.uint32, rt.float32),
        ("tenferro", rt.bool_, rt.float64), ("tenferro", rt.int32, rt.float64), ("tenferro", rt.int64, rt.float64),
        ("kael", rt.bool_, rt.float32), ("kael", rt.int64, rt.float32),  # F32, kael's default float (div_dtype)
    ],
)  # fmt: skip
def test_float_only_ops_under_the_other_policies(policy: str, d: rt.DType, expected: rt.DType) -> None:
    for op in ops.FLOAT_ONLY:
        assert plan(op, (d,) * (op.arity or 1), policy=policy) == (expected,) * (op.arity or 1), op.name


@pytest.mark.parametrize("d", [rt.bool_, rt.int8, rt.int32, rt.uint64])
def test_strict_refuses_integer_inputs_to_float_only_ops_saying_to_convert(d: rt.DType) -> None:
    with rt.use_policy("strict"):
        for op in ELEMENTWISE:
            with pytest.raises(PromotionError, match=rf"{op.name}.*{d.name}.*convert explicitly.*strict"):
                apply(op, [rt.asarray(_values(d), d)] * (op.arity or 1), {})
        assert rt.exp(rt.asarray(np.ones(2, np.float32))).dtype is rt.float32  # floats are untouched


def test_policies_refuse_dtypes_they_do_not_compute() -> None:
    with pytest.raises(PromotionError, match="int16"):
        plan(ops.exp, (rt.int16,), policy="kael")  # not a kael dtype
    with pytest.raises(PromotionError, match="int4"):
        plan(ops.exp, (rt.int4,), policy="torch")  # torch computes nothing in its int4 shell type


def test_the_convert_is_recorded_and_replays() -> None:
    g = rt.trace(lambda x: rt.tanh(x), np.arange(3, dtype=np.int32))
    assert str(g) == ("{ lambda a:i32[3] . let\n    b:f32[3] = convert[to=f32] a\n    c:f32[3] = tanh b\n  in (c) }")
    with rt.use_policy("numpy"):
        g = rt.trace(lambda x: rt.exp(x), np.arange(3, dtype=np.int8))
    assert "convert[to=f16] a" in str(g)
    (out,) = rt.evaluate(g, np.arange(3, dtype=np.int8))
    np.testing.assert_array_equal(out.numpy(), np.exp(np.arange(3, dtype=np.int8)))


def test_the_promote_pass_writes_the_same_convert() -> None:
    from passes import promote, verify
    from passes.build import GraphBuilder

    b = GraphBuilder()
    x = b.input("i64", (3,))
    raw = b.build(b.raw("sqrt", x, out=("f64", (3,))))
    done = promote(raw)
    verify(done)
    assert [e.op.name for e in done.eqns] == ["convert", "sqrt"]
    assert done.eqns[0].outputs[0].dtype is rt.float64  # jnp.sqrt(int64) is float64


def test_gradients_flow_through_the_float_op_of_a_converted_integer() -> None:
    # x is a float leaf; an integer tensor joins through a float-only op (a constant branch)
    n = rt.asarray(np.arange(1, 4, dtype=np.int32))
    x = rt.asarray(np.array([0.5, 1.0, 2.0], np.float32), requires_grad=True)
    (x * rt.sqrt(n)).sum().backward()
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), np.sqrt(np.arange(1, 4, dtype=np.float32)))


# -- bool arithmetic and reductions ------------------------------------------------------------

BOOLS = (np.array([True, False, True, False]), np.array([True, True, False, False]))

#: the anchor library of each policy whose bool arithmetic follows it: add, mul, sum, prod
LIBRARIES: dict[str, tuple[Callable[..., Any], ...]] = {
    "jax": (jnp.add, jnp.multiply, jnp.sum, jnp.prod),
    "numpy": (np.add, np.multiply, np.sum, np.prod),
}


def _run(policy: str, f: Callable[..., Any], *args: Any) -> rt.Tensor:
    with rt.use_policy(policy):
        return f(*args)  # type: ignore[no-any-return]


@pytest.mark.parametrize("policy", ["jax", "jax-strict", "numpy"])
def test_bool_add_mul_sum_prod_follow_the_library(policy: str) -> None:
    lib = LIBRARIES["numpy" if policy == "numpy" else "jax"]
    a, b = (rt.asarray(v) for v in BOOLS)
    cases: list[tuple[Callable[[], Any], Callable[[], Any]]] = [
        (lambda: lib[0](*BOOLS), lambda: a + b), (lambda: lib[1](*BOOLS), lambda: a * b),
        (lambda: lib[2](BOOLS[0]), lambda: a.sum()), (lambda: lib[3](BOOLS[0]), lambda: a.prod()),
        (lambda: lib[0](BOOLS[0], True), lambda: a + True), (lambda: lib[0](BOOLS[0], 1), lambda: a + 1),
        (lambda: lib[1](BOOLS[0], 2.5), lambda: a * 2.5),
    ]  # fmt: skip
    for reference, run in cases:
        with jax.numpy_dtype_promotion("strict" if policy == "jax-strict" else "standard"):
            try:
                expected = np.asarray(reference())
            except (TypeError, jax.dtypes.TypePromotionError):  # strict mode refuses bool + weak int: so must we
                with pytest.raises(PromotionError):
                    _run(policy, run)
                continue
        got = _run(policy, run)
        assert got.dtype is rt.dtype(expected.dtype), (policy, expected)
        np.testing.assert_array_equal(got.numpy(), expected)


def test_bool_add_mul_sum_prod_follow_torch() -> None:
    torch = _torch()
    ta, tb = (torch.from_numpy(v) for v in BOOLS)
    a, b = (rt.asarray(v) for v in BOOLS)
    for expected, run in [(ta + tb, lambda: a + b), (ta * tb, lambda: a * b), (ta.sum(), lambda: a.sum()),
                          (ta.prod(), lambda: a.prod()), (ta + True, lambda: a + True)]:  # fmt: skip
        got = _run("torch", run)
        assert got.dtype.name == str(expected.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    for refused in (lambda: ta - tb, lambda: torch.imag(ta.float())):
        with pytest.raises(RuntimeError):
            refused()


@pytest.mark.parametrize("policy", ["jax", "jax-strict", "numpy", "torch"])
def test_bool_arithmetic_is_recorded_as_logical_ops_and_a_convert(policy: str) -> None:
    with rt.use_policy(policy):
        g = rt.trace(lambda x, y: (x + y, x * y, x.sum()), *BOOLS)
    assert str(g) == (
        "{ lambda a:bool[4] b:bool[4] . let\n"
        "    c:bool[4] = or a b\n"
        "    d:bool[4] = and a b\n"
        "    e:i64[4] = convert[to=i64] a\n"
        "    f:i64[] = reduce_sum[axes=(0,)] e\n"
        "  in (c, d, f) }"
    )
    (c, d, f) = rt.evaluate(g, *BOOLS)
    np.testing.assert_array_equal(c.numpy(), BOOLS[0] | BOOLS[1])
    np.testing.assert_array_equal(d.numpy(), BOOLS[0] & BOOLS[1])
    assert f.item() == 2


def test_the_promote_pass_rewrites_bool_add_of_a_raw_graph() -> None:
    from passes import promote, verify
    from passes.build import GraphBuilder

    b = GraphBuilder()
    x = b.input("bool", (2,))
    raw = b.build(b.raw("add", x, x, out=("bool", (2,))), b.raw("mul", x, x, out=("bool", (2,))))
    done = promote(raw, "jax")
    verify(done)
    assert [e.op.name for e in done.eqns] == ["or", "and"]
    kael = promote(raw, "kael")
    assert [e.op.name for e in kael.eqns] == ["convert", "convert", "add", "and"]


@pytest.mark.parametrize("policy", ["jax", "jax-strict", "numpy", "torch", "strict"])
def test_bool_minus_bool_is_refused(policy: str) -> None:
    a, b = (rt.asarray(v) for v in BOOLS)
    with rt.use_policy(policy), pytest.raises(TypeError, match="bool"):
        a - b
    with pytest.raises(TypeError):
        jnp.subtract(*BOOLS)
    with pytest.raises(TypeError):
        np.subtract(*BOOLS)


#: numeric-only ops on bools: castwise op, jax.numpy / NumPy function, torch function
NUMERIC_ONLY = [(ops.floor_div, "floor_divide"), (ops.rem, "fmod"), (ops.pow, "power"), (ops.square, "square")]


@pytest.mark.parametrize(("op", "name"), NUMERIC_ONLY, ids=lambda v: getattr(v, "name", v))
@pytest.mark.parametrize("policy", ["jax", "jax-strict", "numpy"])
def test_numeric_only_ops_on_bools_follow_the_library(policy: str, op: ops.OpDef, name: str) -> None:
    a, b = BOOLS[0], np.array([True, True, True, True])  # no division by False
    args = (a, b) if op.arity == 2 else (a,)
    lib = np if policy == "numpy" else jnp
    with jax.numpy_dtype_promotion("strict" if policy == "jax-strict" else "standard"):
        expected = np.asarray(getattr(lib, name)(*args))
    got = _run(policy, lambda: apply(op, [rt.asarray(x) for x in args], {}))
    assert got.dtype is rt.dtype(expected.dtype), (policy, op.name)
    np.testing.assert_array_equal(got.numpy(), expected)


def test_numeric_only_ops_on_bools_follow_torch() -> None:
    torch = _torch()
    tb = torch.from_numpy(BOOLS[0])
    assert str(torch.square(tb).dtype) == "torch.int64"
    assert _run("torch", lambda: F.square(rt.asarray(BOOLS[0]))).dtype is rt.int64
    for op, f in ((ops.floor_div, torch.floor_divide), (ops.rem, torch.fmod), (ops.pow, torch.pow)):
        with pytest.raises(RuntimeError, match="Bool"):
            f(tb, tb)
        with rt.use_policy("torch"), pytest.raises(OpTypeError, match="bool"):
            apply(op, [rt.asarray(BOOLS[0])] * 2, {})


@pytest.mark.parametrize("d", [rt.bool_, rt.uint8, rt.uint16, rt.uint32, rt.uint64], ids=lambda d: d.name)
def test_abs_of_bool_and_unsigned_is_the_operand(d: rt.DType) -> None:
    x = rt.asarray(_values(d), d)
    for policy, lib in (("jax", jnp), ("numpy", np)):
        expected = np.asarray(lib.abs(_values(d)))
        got = _run(policy, lambda: abs(x))
        assert got.dtype is rt.dtype(expected.dtype)
        np.testing.assert_array_equal(got.numpy(), expected)
        assert not np.shares_memory(got.numpy(), x.numpy())  # a write into |x| must not change x
        with rt.use_policy(policy):
            assert not rt.trace(abs, x).eqns  # the operand itself: no equation
    assert jax.make_jaxpr(jnp.abs)(_values(d)).eqns == []  # jax.numpy records no equation either
    if d is rt.bool_:
        with rt.use_policy("torch"), pytest.raises(OpTypeError):
            abs(x)  # torch.abs refuses bool
    else:
        np.testing.assert_array_equal(_run("torch", lambda: abs(x)).numpy(), x.numpy())


#: rounding and tests of exact (integer and bool) operands: castwise function, jax.numpy / NumPy
#: name, PyTorch name. jax.lax takes floats only; the libraries keep integers, or answer True.
EXACT_UNARY = [(F.floor, "floor", "floor"), (F.ceil, "ceil", "ceil"), (F.round, "round", "round"),
               (F.is_finite, "isfinite", "isfinite"), (F.sign, "sign", "sign")]  # fmt: skip
EXACT_DTYPES = [rt.bool_, rt.int8, rt.int16, rt.int32, rt.int64, rt.uint8, rt.uint16, rt.uint32, rt.uint64]


def _library_result(policy: str, name: str, values: np.ndarray) -> np.ndarray | None:
    """What the policy's library gives for ``name(values)``, or None where it refuses."""
    try:
        if policy == "numpy":
            return np.asarray(getattr(np, name)(values))
        if policy == "torch":
            torch = _torch()
            try:
                return getattr(torch, name)(torch.from_numpy(values)).numpy()  # type: ignore[no-any-return]
            except (RuntimeError, NotImplementedError) as err:
                if "not implemented for" in str(err):  # uint16/32/64 are barebones in PyTorch (no add either)
                    pytest.skip(f"PyTorch has no {name} kernel for {values.dtype}: no oracle")
                raise
        with jax.enable_x64(True), jax.numpy_dtype_promotion("strict" if policy == "jax-strict" else "standard"):
            return np.asarray(getattr(jnp, name)(jnp.asarray(values)))
    except (TypeError, RuntimeError, ValueError):
        return None


@pytest.mark.parametrize("d", EXACT_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize(("fn", "name", "torch_name"), EXACT_UNARY, ids=[n for _, n, _ in EXACT_UNARY])
@pytest.mark.parametrize("policy", ["jax", "jax-strict", "numpy", "torch"])
def test_rounding_and_tests_of_integers_follow_the_library(
    policy: str, fn: Callable[..., rt.Tensor], name: str, torch_name: str, d: rt.DType
) -> None:
    """floor / ceil / round of an integer keep it (and the libraries' bool rules), is_finite is
    all True, sign of bool is bool under torch: the dtype, the values and the refusals of
    jax.numpy, NumPy and PyTorch; the result never shares the operand's memory."""
    values = _values(d)
    expected = _library_result(policy, torch_name if policy == "torch" else name, values)
    x = rt.asarray(values)
    if expected is None:
        with rt.use_policy(policy), pytest.raises((OpTypeError, PromotionError)):
            fn(x)
        return
    got = _run(policy, fn, x)
    assert got.dtype is rt.dtype(expected.dtype), (policy, name, d.name, got.dtype, expected.dtype)
    np.testing.assert_array_equal(got.numpy(), expected)
    assert not np.shares_memory(got.numpy(), x.numpy())


def test_rounding_and_tests_of_integers_are_recorded_explicitly() -> None:
    i, b = rt.asarray(np.arange(3, dtype=np.int32)), rt.asarray(np.array([True, False, True]))
    g = rt.trace(lambda i: (F.floor(i), F.is_finite(i)), i)
    assert str(g) == "{ lambda a:bool[3] ; b:i32[3] . let\n  in (b, a) }"  # the operand; a constant True
    np.testing.assert_array_equal(rt.evaluate(g, i)[1].numpy(), [True, True, True])
    with rt.use_policy("numpy"):
        g = rt.trace(F.round, b)
    assert [e.op.name for e in g.eqns] == ["convert", "round"]  # np.round(bool) computes in float16
    assert g.eqns[0].outputs[0].dtype is rt.float16


def test_abs_of_bool_under_torch_is_refused_like_torch() -> None:
    torch = _torch()
    with pytest.raises(RuntimeError):
        torch.abs(torch.tensor([True]))
    assert str(torch.abs(torch.tensor([1], dtype=torch.uint8)).dtype) == "torch.uint8"


@pytest.mark.parametrize("policy", ["neuron", "tenferro", "strict"])
def test_policies_without_a_bool_rule_keep_lax_meaning(policy: str) -> None:
    a = rt.asarray(BOOLS[0])
    with rt.use_policy(policy):
        for f in (lambda: a + a, lambda: a * a, lambda: a.sum()):
            with pytest.raises(OpTypeError, match="bool"):
                f()


# -- real, imag, conj of real inputs -----------------------------------------------------------


def _real_values(d: rt.DType) -> np.ndarray:
    if d.kind == "float":
        return np.array([0.5, -1.5, 2.0]).astype(d.storage)
    return _values(d, 3)


@functools.cache
def _jax_has(d: rt.DType) -> bool:
    if d in (rt.int1, rt.uint1):  # XLA compiles no 1-bit integer program
        return False
    try:
        np.asarray(jnp.real(jnp.asarray(np.zeros(1, d.storage))))
    except Exception:  # XLA lacks some sub-byte formats (it compiles no int1/uint1 program)
        return False
    return True


@pytest.mark.parametrize("d", [d for d in REAL if d in rt.get_policy_object("jax").dtypes], ids=lambda d: d.name)
def test_real_imag_conj_of_real_inputs_follow_jax_numpy(d: rt.DType) -> None:
    if not _jax_has(d):  # probed here, not at collection: every xdist worker collects
        pytest.skip(f"XLA compiles no {d.name} program")
    x = rt.asarray(_real_values(d), d)
    for op, f in ((ops.real, jnp.real), (ops.imag, jnp.imag), (ops.conj, jnp.conj)):
        expected = f(_jax_array(_real_values(d), d))
        got = apply(op, (x,), {})
        assert isinstance(got, rt.Tensor)
        assert got.dtype is rt.dtype(expected.dtype), (op.name, d.name)
        np.testing.assert_array_equal(np.asarray(got.numpy(), np.float64), np.asarray(expected, np.float64))
    assert rt.real(x) is x and rt.conj(x) is x  # the input itself, as jnp.real returns it


@pytest.mark.parametrize("d", [*NUMPY_INTEGRAL, rt.float16, rt.float32, rt.float64], ids=lambda d: d.name)
def test_real_imag_conj_of_real_inputs_follow_numpy(d: rt.DType) -> None:
    values = _real_values(d)
    x = rt.asarray(values, d)
    with rt.use_policy("numpy"):
        for op, f in ((ops.real, np.real), (ops.imag, np.imag), (ops.conj, np.conj)):
            expected = f(values)
            got = apply(op, (x,), {})
            assert isinstance(got, rt.Tensor)
            assert got.dtype is rt.dtype(expected.dtype), (op.name, d.name)  # np.conj(bool) is int8
            np.testing.assert_array_equal(got.numpy(), expected)


def test_real_imag_conj_of_real_inputs_follow_torch() -> None:
    torch = _torch()
    for name in ("bool", "int8", "int64", "float32", "float64"):
        d = rt.dtype(name)
        tx = torch.from_numpy(_real_values(d))
        x = rt.asarray(_real_values(d), d)
        with rt.use_policy("torch"):
            assert rt.real(x) is x and torch.real(tx) is tx
            assert rt.conj(x) is x and torch.conj(tx) is tx
            with pytest.raises(RuntimeError, match="non-complex"):
                torch.imag(tx)
            with pytest.raises(OpTypeError, match="imag.*non-complex"):
                rt.imag(x)


def test_complex_inputs_keep_their_kernels() -> None:
    z = rt.asarray(np.array([1 + 2j, -3j]))
    assert rt.real(z).dtype is rt.float64 and rt.imag(z).numpy().tolist() == [2.0, -3.0]
    assert rt.conj(z).numpy().tolist() == [1 - 2j, 3j]


def test_real_imag_conj_are_recorded_as_identities_and_constants() -> None:
    g = rt.trace(lambda x: (rt.real(x), rt.imag(x), rt.conj(x) * 2.0), np.ones(3))
    # real and conj write no equation; imag is a constant of zeros
    assert [e.op.name for e in g.eqns] == ["mul"]
    assert g.outputs[0] is g.inputs[0]
    zeros = g.outputs[1]
    assert zeros.const is not None and not zeros.const.any() and zeros.dtype is rt.float64


def _loss(x: Any, c: Any, lib: Any) -> Any:
    """A real loss through real(x), imag(x) and conj(x) of a real x, mixed with a complex c."""
    if lib is jnp:
        return jnp.sum(jnp.abs(jnp.real(x) * c + jnp.imag(x) * c) ** 2) + jnp.sum(jnp.conj(x) * jnp.sin(x))
    return (F.abs(F.real(x) * c + F.imag(x) * c) ** 2).sum() + (F.conj(x) * F.sin(x)).sum()


def test_grad_through_complex_parts_of_a_real_leaf_matches_jax() -> None:
    xs = np.array([0.3, -1.2, 2.0])
    cs = np.array([1 + 2j, -0.5j, 3.0 + 0j])
    expected = jax.grad(lambda x: _loss(x, cs, jnp))(xs)
    got = autodiff.grad(lambda x: _loss(x, rt.asarray(cs), F))(rt.asarray(xs))
    assert got.dtype is rt.float64  # the real-leaf projection: the gradient of a real leaf is real
    np.testing.assert_allclose(got.numpy(), np.asarray(expected), rtol=1e-12)


def test_jvp_and_vjp_through_complex_parts_of_a_real_leaf_match_jax() -> None:
    xs = np.array([0.3, -1.2, 2.0])
    cs = np.array([1 + 2j, -0.5j, 3.0 + 0j])

    def f_jax(x: Any) -> Any:
        return jnp.real(x) * cs + jnp.imag(x) + jnp.conj(x) * jnp.cos(x)

    def f_ours(x: Any) -> Any:
        return F.real(x) * rt.asarray(cs) + F.imag(x) + F.conj(x) * F.cos(x)

    t = np.array([1.0, -2.0, 0.5])
    _, jt = jax.jvp(f_jax, (xs,), (t,))
    _, ot = autodiff.jvp(f_ours, (rt.asarray(xs),), (rt.asarray(t),))
    np.testing.assert_allclose(ot.numpy(), np.asarray(jt), rtol=1e-12)
    ct = np.array([1 - 1j, 2 + 0.5j, -1j])
    _, jax_vjp = jax.vjp(f_jax, xs)
    _, our_vjp = autodiff.vjp(f_ours, rt.asarray(xs))
    (ours,) = our_vjp(rt.asarray(ct))
    (theirs,) = jax_vjp(np.conj(ct))
    assert ours is not None and ours.dtype is rt.float64
    np.testing.assert_allclose(ours.numpy(), np.conj(np.asarray(theirs)), rtol=1e-12)


def test_real_of_a_leaf_is_the_leaf_for_backward() -> None:
    x = rt.asarray(np.array([1.0, 2.0]), requires_grad=True)
    (rt.real(x) * 3.0 + rt.imag(x)).sum().backward()
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


# -- all of it, over every policy and every dtype: nothing half-done ---------------------------


@pytest.mark.parametrize("policy", rt.policies())
def test_each_plan_decision_is_what_eager_ran(policy: str) -> None:
    """For every float-only op and integer dtype the policy accepts, the eager result's dtype
    is the planned one, and the traced graph replays it bit for bit."""
    pol = rt.get_policy_object(policy)
    for op, d in itertools.product(UNARY_FLOAT_ONLY, [d for d in INTEGRAL if d in pol.dtypes]):
        try:
            (target,) = plan(op, (d,), policy=policy)
        except PromotionError:
            continue
        x = _values(d)
        with rt.use_policy(policy):
            got = apply(op, (rt.asarray(x, d),), {})
            g = rt.trace(lambda t, op=op: apply(op, (t,), {}), rt.asarray(x, d))
        assert isinstance(got, rt.Tensor) and got.dtype is target
        (replayed,) = rt.evaluate(g, x)
        np.testing.assert_array_equal(replayed.numpy().view(np.uint8), got.numpy().view(np.uint8))


def test_ml_dtypes_int4_follows_jax() -> None:
    x = np.array([1, 2, 3], ml_dtypes.int4)
    assert rt.exp(rt.asarray(x)).dtype is rt.dtype(jnp.exp(x).dtype)
