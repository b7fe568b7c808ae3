"""Derivative rules of the elementwise ops (binary, unary, convert, select, clamp).

Table-driven over every op of the family and the dtypes it supports:

1. ``check_grads`` to second order, forward (finite differences) and reverse
   (adjoint of forward);
2. parity with JAX: our JVP equals ``jax.jvp`` of the ``jax.lax`` equivalent and
   our VJP equals ``conj(jax_vjp(conj(ct)))``, with each operand active and
   inactive in turn (inactive operands are closed-over constants; on the eager
   tape they get no stored cotangent);
3. symbolic zeros: a rule never touches a ``Zero`` and does no work for an
   inactive operand;
4. the mixed-dtype eager ``add`` regression (f64/c128 and f32/c64): recorded with
   an explicit ``convert``, exact JVP/VJP in both operand orders.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from autodiff.derivatives import binary, contraction, conversion, unary  # noqa: E402, F401  (registers the rules)
from autodiff.rules import JVP_RULES, VJP_RULES  # noqa: E402
from autodiff.testing import check_grads, close_over  # noqa: E402
from autodiff.zeros import Zero  # noqa: E402
from runtime.core import lax as F  # noqa: E402
from runtime.core.dtypes import DType  # noqa: E402
from runtime.core.tensor import Tensor  # noqa: E402
from tests.autodiff.rule_helpers import assert_close as _assert_close  # noqa: E402
from tests.autodiff.rule_helpers import case_inputs as _inputs  # noqa: E402
from tests.autodiff.rule_helpers import counting_ops, x64  # noqa: E402
from tests.autodiff.rule_helpers import random_array as _random  # noqa: E402

# JAX warns when its convert_element_type drops an imaginary part (the convert-to-real cases)
pytestmark = pytest.mark.filterwarnings("ignore:Casting complex values to real:numpy.exceptions.ComplexWarning")

f32, f64, c64, c128 = rt.float32, rt.float64, rt.complex64, rt.complex128
REAL = (f32, f64)
COMPLEX = (c64, c128)
ALL = REAL + COMPLEX


# -- inputs (small fixed arrays: one shape, so JAX compiles each primitive once per dtype) ----

_RE = [np.array([0.3, -0.7, 1.2]), np.array([-0.5, 0.9, 0.4]), np.array([1.1, -0.2, -0.8])]
_IM = [np.array([0.4, -0.2, 0.6]), np.array([-0.3, 0.5, 0.1]), np.array([0.2, 0.7, -0.4])]
_POS = [np.array([0.6, 1.3, 2.1]), np.array([1.4, 0.7, 1.7]), np.array([0.9, 2.2, 1.1])]


def _arr(re: np.ndarray, im: np.ndarray, dtype: DType) -> np.ndarray:
    data = re + 1j * im if dtype.kind == "complex" else re
    return np.asarray(data).astype(dtype.storage)


def any_value(k: int) -> Callable[[DType], np.ndarray]:
    return lambda d: _arr(_RE[k], _IM[k], d)


def pos_value(k: int) -> Callable[[DType], np.ndarray]:
    """Positive reals; complex values with positive real part (away from branch cuts)."""
    return lambda d: _arr(_POS[k], 0.5 * _IM[k], d)


def unit_value(k: int) -> Callable[[DType], np.ndarray]:
    """Reals inside (-1, 1) (asin, acos, atanh); complex values near them, off the branch cuts."""
    return lambda d: _arr(np.clip(_RE[k], -0.8, 0.8), 0.5 * _IM[k], d)


def above_one_value(k: int) -> Callable[[DType], np.ndarray]:
    """Reals above 1 (acosh); complex values near them, off the branch cut."""
    return lambda d: _arr(_POS[k] + 1.0, 0.5 * _IM[k], d)


def fixed(values: Sequence[float]) -> Callable[[DType], np.ndarray]:
    return lambda d: np.asarray(values).astype(d.storage)


def scalar_value(v: float) -> Callable[[DType], np.ndarray]:
    """A 0-d operand (complex dtypes get an imaginary part too)."""
    return lambda d: np.asarray(v + 0.25j if d.kind == "complex" else v).astype(d.storage)


def pred_value(d: DType) -> np.ndarray:
    return np.array([True, False, True])


@dataclass(frozen=True)
class Case:
    """One op under test: ours (on Tensors), the JAX equivalent, inputs per dtype."""

    id: str
    ours: Callable[..., Any]
    theirs: Callable[..., Any]
    inputs: tuple[Callable[[DType], np.ndarray], ...]
    dtypes: tuple[DType, ...]
    #: positions that may be active (others are always constants: the select predicate)
    diff: tuple[int, ...] = ()
    #: check_grads overrides (eps, atol) for cases finite differences find hard
    grad_opts: dict[str, float] = field(default_factory=dict)
    #: dtypes skipped by the finite-difference check (the rule is a convention, not the calculus)
    no_fd: tuple[DType, ...] = ()

    def active_sets(self) -> list[tuple[int, ...]]:
        pos = self.diff or tuple(range(len(self.inputs)))
        return [s for r in range(1, len(pos) + 1) for s in itertools.combinations(pos, r)]


def _binary(name: str, theirs: Callable[..., Any], x: Any, y: Any, dtypes: tuple[DType, ...] = ALL) -> Case:
    return Case(name, getattr(F, name), theirs, (x, y), dtypes)


def _unary(name: str, theirs: Callable[..., Any], x: Any = None, dtypes: tuple[DType, ...] = ALL) -> Case:
    return Case(name, getattr(F, name), theirs, (x or any_value(0),), dtypes)


def _convert(src: DType, dst: DType, **grad_opts: float) -> Case:
    return Case(
        f"convert-{src.short}-{dst.short}",
        lambda x: F.convert(x, dst),
        lambda x: lax.convert_element_type(x, dst.storage),
        (any_value(0),),
        (src,),
        grad_opts=dict(grad_opts),
    )


# clamp: element 0 inside (lo, hi), element 1 below lo, element 2 above hi
_CL_X, _CL_LO, _CL_HI = fixed([0.3, -1.2, 1.5]), fixed([-0.5, -0.6, -0.4]), fixed([0.8, 0.7, 0.9])

CASES: list[Case] = [
    _binary("add", lax.add, any_value(0), any_value(1)),
    _binary("sub", lax.sub, any_value(0), any_value(1)),
    _binary("mul", lax.mul, any_value(0), any_value(1)),
    _binary("div", lax.div, any_value(0), any_value(1)),
    _binary("rem", lax.rem, fixed([2.3, -1.7, 3.1]), fixed([1.1, 0.7, -1.3]), REAL),
    _binary("pow", lax.pow, pos_value(0), pos_value(1)),
    _binary("max", lax.max, any_value(0), any_value(1)),
    _binary("min", lax.min, any_value(0), any_value(1)),
    _binary("atan2", lax.atan2, any_value(0), any_value(1), REAL),
    _unary("neg", lax.neg),
    _unary("abs", lax.abs),
    # sign(z) = z/|z| varies on the complex plane, but its derivative is defined as zero (as JAX does)
    Case("sign", F.sign, lax.sign, (any_value(0),), ALL, no_fd=COMPLEX),
    _unary("exp", lax.exp),
    _unary("log", lax.log, pos_value(0)),
    _unary("expm1", lax.expm1),
    _unary("log1p", lax.log1p, pos_value(0)),
    _unary("sin", lax.sin),
    _unary("cos", lax.cos),
    _unary("tanh", lax.tanh),
    _unary("logistic", lax.logistic),
    _unary("sqrt", lax.sqrt, pos_value(0)),
    _unary("rsqrt", lax.rsqrt, pos_value(0)),
    _unary("conj", jnp.conj),  # jnp.conj keeps real dtypes real, as castwise's conj does
    _unary("real", lax.real, dtypes=COMPLEX),
    _unary("imag", lax.imag, dtypes=COMPLEX),
    _unary("square", lax.square),
    _unary("reciprocal", lax.reciprocal),
    _unary("exp2", lax.exp2),
    _unary("sinh", lax.sinh),
    _unary("cosh", lax.cosh),
    _unary("tan", lax.tan),
    _unary("asin", lax.asin, unit_value(0)),
    _unary("acos", lax.acos, unit_value(0)),
    _unary("atan", lax.atan),
    _unary("asinh", lax.asinh),
    _unary("acosh", lax.acosh, above_one_value(0)),
    _unary("atanh", lax.atanh, unit_value(0)),
    _unary("cbrt", lax.cbrt, dtypes=REAL),  # real only, as lax.cbrt
    # the special functions: real only, as lax's; derivatives as jax._src.lax.special defines them
    _unary("erf", lax.erf, dtypes=REAL),
    _unary("erfc", lax.erfc, dtypes=REAL),
    _unary("erf_inv", lax.erf_inv, unit_value(0), REAL),
    _unary("lgamma", lax.lgamma, fixed([0.6, -1.3, 2.1]), REAL),  # -1.3: the reflection branch
    _unary("digamma", lax.digamma, fixed([0.6, -1.3, 2.1]), REAL),  # its derivative: polygamma(1, x)
    _unary("bessel_i0e", lax.bessel_i0e, fixed([0.3, -0.7, 9.5]), REAL),  # 9.5: the tail series
    _unary("bessel_i1e", lax.bessel_i1e, fixed([0.3, -0.7, 9.5]), REAL),
    # polygamma has no derivative in m (JAX neither): m stays a constant
    Case("polygamma-in-x", F.polygamma, lax.polygamma, (fixed([1.0, 2.0, 0.0]), pos_value(0)), REAL, diff=(1,)),
    # igamma's derivative in a is igamma_grad_a, which has none of its own (in JAX neither): order 2
    # here is in x; test_rules_special.py checks the first order in a
    Case("igamma", F.igamma, lax.igamma, (pos_value(1), pos_value(0)), REAL, diff=(1,)),
    Case("igammac", F.igammac, lax.igammac, (pos_value(1), pos_value(0)), REAL, diff=(1,)),
    _unary("log2", jnp.log2, pos_value(0)),  # functions built from log and div, as jnp builds them
    _unary("log10", jnp.log10, pos_value(0)),
    _binary("complex", lax.complex, any_value(0), any_value(1), REAL),
    # PyTorch's NaN-ignoring max / min: compositions of select (no ties here; see the fmax tests)
    _binary("fmax", jnp.fmax, any_value(0), any_value(1), REAL),
    _binary("fmin", jnp.fmin, any_value(0), any_value(1), REAL),
    _convert(f32, f64),
    _convert(f64, f32, eps=1e-3, atol=1e-3),
    _convert(f32, c64),
    _convert(f64, c128),
    _convert(c64, c128),
    _convert(c128, c64, eps=1e-3, atol=1e-3),
    _convert(c64, f32),
    _convert(c128, f64),
    _convert(f32, c128),
    _convert(f64, rt.int32),
    Case("select", F.select, lax.select, (pred_value, any_value(0), any_value(1)), ALL, diff=(1, 2)),
    # 0-d operands broadcast (lax's scalar rule): tangents broadcast, cotangents sum back
    Case("add-0d", F.add, lax.add, (scalar_value(0.7), any_value(1)), (f64, c128)),
    Case("mul-0d", F.mul, lax.mul, (any_value(0), scalar_value(-1.3)), (f64, c128)),
    Case("div-0d", F.div, lax.div, (scalar_value(0.9), any_value(1)), (f64, c128)),
    Case("pow-0d", F.pow, lax.pow, (pos_value(0), scalar_value(1.7)), (f64, c128)),
    Case("max-0d", F.max, lax.max, (scalar_value(0.2), any_value(1)), (f64,)),
    Case(
        "select-0d",
        F.select,
        lambda p, a, b: lax.select(p, a, jnp.broadcast_to(b, a.shape)),  # lax.select wants equal case shapes
        (pred_value, any_value(0), scalar_value(-0.4)),
        (f64, c128),
        diff=(1, 2),
    ),
    Case("clamp", F.clamp, lax.clamp, (_CL_LO, _CL_X, _CL_HI), REAL),
    # jax.lax.clamp's own JVP fails for 0-d bounds (select of a 0-d tangent with a shaped mask), so
    # JAX's side broadcasts them first; the VJP of that broadcast sums, as ours must.
    Case(
        "clamp-scalar-bounds",
        F.clamp,
        lambda lo, x, hi: lax.clamp(jnp.broadcast_to(lo, x.shape), x, jnp.broadcast_to(hi, x.shape)),
        (lambda d: np.asarray(-0.5, d.storage), _CL_X, lambda d: np.asarray(0.9, d.storage)),
        REAL,
    ),
]

PARAMS = [pytest.param(c, d, id=f"{c.id}-{d.short}") for c in CASES for d in c.dtypes]
FD_PARAMS = [pytest.param(c, d, id=f"{c.id}-{d.short}") for c in CASES for d in c.dtypes if d not in c.no_fd]


# -- helpers -------------------------------------------------------------------------------------


# -- 1. finite differences, second order ---------------------------------------------------------


@pytest.mark.parametrize(("case", "dtype"), FD_PARAMS)
def test_check_grads(case: Case, dtype: DType) -> None:
    arrays = _inputs(case, dtype)
    consts = [rt.asarray(a) for a in arrays]
    active = tuple(case.diff or range(len(arrays)))
    f = close_over(case.ours, consts, active)
    check_grads(f, [consts[i] for i in active], order=2, modes=("fwd", "rev"), **case.grad_opts)


# -- 2. parity with JAX, every active set; inactive operands get no cotangent --------------------


@pytest.mark.parametrize(("case", "dtype"), PARAMS)
def test_parity_with_jax(case: Case, dtype: DType) -> None:
    arrays = _inputs(case, dtype)
    ours_consts = [rt.asarray(a) for a in arrays]
    with x64():
        jax_consts = [jnp.asarray(a) for a in arrays]
        want_out = np.asarray(case.theirs(*jax_consts))
    out_dtype = rt.dtype(want_out.dtype)
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    for active in case.active_sets():
        act = [arrays[i] for i in active]
        tangents = [_random(rt.dtype(a.dtype), a.shape, rng) for a in act]
        if out_dtype.is_inexact:
            ct = _random(out_dtype, want_out.shape, rng)
        else:
            ct = np.zeros(want_out.shape, want_out.dtype)
        what = f"{case.id} {dtype.short} active={active}"

        with x64():
            fj = close_over(case.theirs, jax_consts, active)
            jax_out, jax_tan = jax.jvp(fj, tuple(jnp.asarray(a) for a in act), tuple(jnp.asarray(t) for t in tangents))
            if out_dtype.is_inexact:
                _, jax_vjp_fn = jax.vjp(fj, *(jnp.asarray(a) for a in act))
                want_cts = [np.conj(np.asarray(g)) for g in jax_vjp_fn(jnp.asarray(np.conj(ct)))]

        f = close_over(case.ours, ours_consts, active)
        out, out_t = autodiff.jvp(f, [rt.asarray(a) for a in act], [rt.asarray(t) for t in tangents])
        assert out.dtype is out_dtype, what
        _assert_close(f"{what}: primal", out.numpy(), jax_out, out_dtype)
        if not out_dtype.is_inexact:
            assert not np.any(out_t.numpy()), what
            continue
        assert out_t.dtype is out_dtype and out_t.shape == out.shape, what
        _assert_close(f"{what}: JVP", out_t.numpy(), jax_tan, out_dtype)

        _, vjp_fn = autodiff.vjp(f, *[rt.asarray(a) for a in act])
        cts = vjp_fn(rt.asarray(ct))
        for i, got, want in zip(active, cts, want_cts, strict=True):
            assert got is not None and got.dtype is rt.dtype(arrays[i].dtype), what
            _assert_close(f"{what}: VJP operand {i}", got.numpy(), want, rt.dtype(arrays[i].dtype))

        # The eager tape: only the active leaves receive a stored cotangent.
        leaves = [rt.asarray(a, requires_grad=True) if i in active else rt.asarray(a) for i, a in enumerate(arrays)]
        result = case.ours(*leaves)
        result.backward(cotangent=rt.asarray(ct))
        for i, leaf in enumerate(leaves):
            if i in active and leaf.grad is None:  # a symbolic-zero cotangent (sign) is never stored
                assert not np.any(want_cts[active.index(i)]), f"{what}: leaf {i} got no gradient"
            elif i in active:
                assert leaf.grad is not None
                _assert_close(f"{what}: backward operand {i}", leaf.grad.numpy(), want_cts[active.index(i)], leaf.dtype)
            else:
                assert leaf.grad is None, f"{what}: inactive leaf {i} got a gradient"


TIE_CASES = [
    pytest.param(F.max, lax.max, (fixed([0.5, 1.0, -2.0]), fixed([0.5, 0.3, -2.0])), id="max-ties"),
    pytest.param(F.min, lax.min, (fixed([0.5, 1.0, -2.0]), fixed([0.5, 0.3, -2.0])), id="min-ties"),
    # x == lo; x == hi; lo == hi < x; x < lo == hi; lo < x == hi
    pytest.param(
        F.clamp,
        lax.clamp,
        (fixed([-0.5, -1.0, 0.2, 0.4, -1.0]), fixed([-0.5, 0.9, 0.7, 0.1, 0.6]), fixed([0.5, 0.9, 0.2, 0.4, 0.6])),
        id="clamp-ties",
    ),
]


@pytest.mark.parametrize(("ours", "theirs", "inputs"), TIE_CASES)
@pytest.mark.parametrize("dtype", REAL, ids=lambda d: d.short)
def test_ties_split_like_jax(ours: Callable[..., Any], theirs: Callable[..., Any], inputs: Any, dtype: DType) -> None:
    case = Case("ties", ours, theirs, inputs, (dtype,))
    arrays = _inputs(case, dtype)
    rng = np.random.default_rng(7)
    for active in case.active_sets():
        act = [arrays[i] for i in active]
        tangents = [_random(dtype, a.shape, rng) for a in act]
        ct = _random(dtype, arrays[1].shape, rng)
        with x64():
            fj = close_over(theirs, [jnp.asarray(a) for a in arrays], active)
            _, jax_tan = jax.jvp(fj, tuple(jnp.asarray(a) for a in act), tuple(jnp.asarray(t) for t in tangents))
            want_cts = jax.vjp(fj, *(jnp.asarray(a) for a in act))[1](jnp.asarray(ct))
        f = close_over(ours, [rt.asarray(a) for a in arrays], active)
        _, out_t = autodiff.jvp(f, [rt.asarray(a) for a in act], [rt.asarray(t) for t in tangents])
        _assert_close(f"ties JVP active={active}", out_t.numpy(), jax_tan, dtype)
        cts = autodiff.vjp(f, *[rt.asarray(a) for a in act])[1](rt.asarray(ct))
        for got, want in zip(cts, want_cts, strict=True):
            assert got is not None
            _assert_close(f"ties VJP active={active}", got.numpy(), want, dtype)


def test_max_tie_splits_in_half_exactly() -> None:
    x, y = rt.asarray(np.array([1.0, 2.0])), rt.asarray(np.array([1.0, 0.0]))
    gx, gy = autodiff.vjp(F.max, x, y)[1](rt.asarray(np.array([4.0, 4.0])))
    assert gx is not None and gy is not None
    np.testing.assert_array_equal(gx.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(gy.numpy(), [2.0, 0.0])


# -- 3. symbolic zeros ---------------------------------------------------------------------------


def _t(a: np.ndarray) -> Tensor:
    return rt.asarray(a)


BINARY = [c for c in CASES if len(c.inputs) == 2 and c.id in JVP_RULES]


#: ops both operands' rules share (atan2: the x**2 + y**2 denominator)
#: (complex: each one-sided tangent still takes one op to embed its part, the two-sided one a single op)
SHARED_OPS = {"atan2": 3, "complex": 1}


@pytest.mark.parametrize("case", BINARY, ids=lambda c: c.id)
def test_binary_rules_skip_the_inactive_operand(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Zero tangent / an unneeded cotangent costs no op: the work done for one
    active operand plus the work for the other is at most the work for both
    (plus what the two sides share), and the unneeded cotangent is a Zero."""
    dtype = f64
    x, y = (_t(a) for a in _inputs(case, dtype))
    out = case.ours(x, y)
    t = _t(_random(dtype, x.shape, np.random.default_rng(0)))
    ct = _t(_random(out.dtype, out.shape, np.random.default_rng(1)))  # the output's dtype (complex's is complex)
    jvp_rule, vjp_rule = JVP_RULES[case.id], VJP_RULES[case.id]
    shared = SHARED_OPS.get(case.id, 0)

    jvp_counts = []
    for position in (0, 1):
        tangents: list[Any] = [Zero.like(x), Zero.like(y)]
        tangents[position] = t
        jvp_rule([x, y], tangents, [out])  # makes the rule's cached 0-d constants, once per process
        with counting_ops(monkeypatch) as names:
            (res,) = jvp_rule([x, y], tangents, [out])
        assert isinstance(res, Tensor) and res.dtype is out.dtype and res.shape == out.shape
        jvp_counts.append(len(names))
    with counting_ops(monkeypatch) as both:
        jvp_rule([x, y], [t, t], [out])
    assert sum(jvp_counts) <= len(both) + shared, f"{case.id} JVP: one-sided op counts {jvp_counts} vs {both}"

    vjp_counts = []
    for position in (0, 1):
        with counting_ops(monkeypatch) as names:
            grads = vjp_rule([ct], [x, y], [out], [position == 0, position == 1])
        assert isinstance(grads[1 - position], Zero), f"{case.id}: the unneeded cotangent is {grads[1 - position]!r}"
        assert isinstance(grads[position], Tensor)
        vjp_counts.append(len(names))
    with counting_ops(monkeypatch) as both:
        vjp_rule([ct], [x, y], [out], [True, True])
    assert sum(vjp_counts) <= len(both) + shared, f"{case.id} VJP: one-sided op counts {vjp_counts} vs {both}"


def test_select_and_clamp_rules_skip_inactive_operands(monkeypatch: pytest.MonkeyPatch) -> None:
    pred = _t(np.array([True, False, True]))
    a, b = _t(np.array([1.0, 2.0, 3.0])), _t(np.array([-1.0, -2.0, -3.0]))
    out = F.select(pred, a, b)
    ct = _t(np.array([1.0, 1.0, 1.0]))
    grads = VJP_RULES["select"]([ct], [pred, a, b], [out], [False, True, False])
    assert isinstance(grads[0], Zero) and isinstance(grads[2], Zero)
    assert isinstance(grads[1], Tensor)
    np.testing.assert_array_equal(grads[1].numpy(), [1.0, 0.0, 1.0])
    assert isinstance(JVP_RULES["select"]([pred, a, b], [Zero.like(pred), Zero.like(a), Zero.like(b)], [out])[0], Zero)

    lo, x, hi = _t(np.array([-0.5, -0.6, -0.4])), _t(np.array([0.3, -1.2, 1.5])), _t(np.array([0.8, 0.7, 0.9]))
    out = F.clamp(lo, x, hi)
    with counting_ops(monkeypatch) as names:
        grads = VJP_RULES["clamp"]([ct], [lo, x, hi], [out], [False, True, False])
    assert isinstance(grads[0], Zero) and isinstance(grads[2], Zero)
    assert isinstance(grads[1], Tensor)
    np.testing.assert_array_equal(grads[1].numpy(), [1.0, 0.0, 0.0])
    assert names.count("lt") + names.count("gt") == 2, names  # only the operand's mask was computed


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.short)
def test_zero_derivative_rules_return_zero_without_work(dtype: DType, monkeypatch: pytest.MonkeyPatch) -> None:
    x = _t(any_value(0)(dtype))
    t = _t(any_value(1)(dtype))
    s = F.sign(x)
    as_int = F.convert(x, rt.int32) if dtype.kind != "complex" else None
    with counting_ops(monkeypatch) as names:
        (jt,) = JVP_RULES["sign"]([x], [t], [s])
        (vt,) = VJP_RULES["sign"]([t], [x], [s], [True])
        if as_int is not None:
            (ct,) = JVP_RULES["convert"]([x], [t], [as_int], new_dtype=rt.int32)
            assert isinstance(ct, Zero) and ct.dtype is rt.int32
    assert names == []
    assert isinstance(jt, Zero) and jt.dtype is s.dtype and jt.shape == s.shape
    assert isinstance(vt, Zero) and vt.dtype is x.dtype and vt.shape == x.shape


def test_engine_passes_symbolic_zeros_for_inactive_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[Any]] = []
    rule = JVP_RULES["mul"]

    def spy(primals: Any, tangents: Any, outputs: Any, **params: Any) -> Any:
        seen.append(list(tangents))
        return rule(primals, tangents, outputs, **params)

    monkeypatch.setitem(JVP_RULES, "mul", spy)
    x, y = _t(np.array([1.0, 2.0])), _t(np.array([3.0, 4.0]))
    _, t = autodiff.jvp(F.mul, [x, y], [_t(np.array([1.0, 1.0])), None])
    np.testing.assert_array_equal(t.numpy(), [3.0, 4.0])
    assert len(seen) == 1 and isinstance(seen[0][1], Zero)


def test_every_elementwise_op_has_both_rules() -> None:
    names = {"add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "neg", "abs", "sign", "exp", "log",
             "expm1", "log1p", "sin", "cos", "tanh", "logistic", "sqrt", "rsqrt", "conj", "real", "imag", "square",
             "reciprocal", "convert", "select", "clamp"}  # fmt: skip
    assert names <= set(JVP_RULES) and names <= set(VJP_RULES)
    for name in ("floor_div", "eq", "lt", "and", "iota", "full"):
        assert name not in JVP_RULES and name not in VJP_RULES


def test_derivative_program_is_recorded_from_vocabulary_ops() -> None:
    """Second derivative of sin through the recorded first derivative (create_graph)."""
    x = rt.asarray(np.array([0.3, -0.7, 1.2]), requires_grad=True)
    y = F.sin(x)
    y.backward(cotangent=rt.asarray(np.ones(3)), create_graph=True)
    assert x.grad is not None and x.grad.node is not None  # cos(x), recorded
    g = x.grad
    x.grad = None
    g.backward(cotangent=rt.asarray(np.ones(3)))
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), -np.sin([0.3, -0.7, 1.2]), rtol=1e-15)


# -- 4. the mixed-dtype eager add regression ---------------------------------------------------

MIXED = [pytest.param(f64, c128, id="f64-c128"), pytest.param(f32, c64, id="f32-c64")]
ORDERS = [pytest.param(True, id="real+complex"), pytest.param(False, id="complex+real")]
ACTIVE = ["both", "real", "complex"]

_XR = np.array([0.5, -1.25, 2.0])
_XC = np.array([1.0 + 2.0j, -0.5 + 0.25j, 3.0 - 1.0j])
_TR = np.array([0.25, 3.0, -1.5])
_TC = np.array([-2.0 + 0.5j, 1.0 - 1.0j, 0.75 + 4.0j])
_CT = np.array([0.75 - 1.5j, 2.0 + 0.5j, -1.0 + 4.0j])


def _add(real_first: bool) -> Callable[[Any, Any], Any]:
    """``r + c`` or ``c + r`` as a function of (r, c)."""
    return (lambda r, c: r + c) if real_first else (lambda r, c: c + r)


@pytest.mark.parametrize(("rdt", "cdt"), MIXED)
@pytest.mark.parametrize("real_first", ORDERS)
@pytest.mark.parametrize("active", ACTIVE)
def test_mixed_add_eager_tape(rdt: DType, cdt: DType, real_first: bool, active: str) -> None:
    xr, xc, ct = _XR.astype(rdt.storage), _XC.astype(cdt.storage), _CT.astype(cdt.storage)
    r = rt.asarray(xr, requires_grad=active in ("both", "real"))
    c = rt.asarray(xc, requires_grad=active in ("both", "complex"))
    out = _add(real_first)(r, c)
    assert out.dtype is cdt
    np.testing.assert_array_equal(out.numpy(), xr.astype(cdt.storage) + xc)

    # what the graph records is what eager execution ran: an explicit convert of the real operand
    eqn = out.node.producer
    assert eqn.op.name == "add" and [v.dtype for v in eqn.inputs] == [cdt, cdt]
    real_in = eqn.inputs[0 if real_first else 1]
    assert real_in.producer is not None and real_in.producer.op.name == "convert"
    assert real_in.producer.params["new_dtype"] is cdt and real_in.producer.inputs[0].dtype is rdt

    out.backward(cotangent=rt.asarray(ct))
    if active in ("both", "real"):
        assert r.grad is not None and r.grad.dtype is rdt
        assert r.grad.numpy().dtype == rdt.storage
        np.testing.assert_array_equal(r.grad.numpy(), ct.real.astype(rdt.storage))
    else:
        assert r.grad is None
    if active in ("both", "complex"):
        assert c.grad is not None and c.grad.dtype is cdt
        np.testing.assert_array_equal(c.grad.numpy(), ct)
    else:
        assert c.grad is None


@pytest.mark.parametrize(("rdt", "cdt"), MIXED)
@pytest.mark.parametrize("real_first", ORDERS)
@pytest.mark.parametrize("active", ACTIVE)
def test_mixed_add_jvp_vjp(rdt: DType, cdt: DType, real_first: bool, active: str) -> None:
    xr, xc = _XR.astype(rdt.storage), _XC.astype(cdt.storage)
    tr, tc, ct = _TR.astype(rdt.storage), _TC.astype(cdt.storage), _CT.astype(cdt.storage)
    add = _add(real_first)
    r_const, c_const = rt.asarray(xr), rt.asarray(xc)
    if active == "both":
        f: Callable[..., Any] = add
        primals, tangents = [rt.asarray(xr), rt.asarray(xc)], [rt.asarray(tr), rt.asarray(tc)]
        want_t = tr.astype(cdt.storage) + tc
        want_cts: list[np.ndarray] = [ct.real.astype(rdt.storage), ct]
    elif active == "real":
        f = lambda r: add(r, c_const)  # noqa: E731
        primals, tangents = [rt.asarray(xr)], [rt.asarray(tr)]
        want_t = tr.astype(cdt.storage)
        want_cts = [ct.real.astype(rdt.storage)]
    else:
        f = lambda c: add(r_const, c)  # noqa: E731
        primals, tangents = [rt.asarray(xc)], [rt.asarray(tc)]
        want_t = tc
        want_cts = [ct]

    out, out_t = autodiff.jvp(f, primals, tangents)
    assert out.dtype is cdt and out_t.dtype is cdt
    np.testing.assert_array_equal(out.numpy(), xr.astype(cdt.storage) + xc)
    np.testing.assert_array_equal(out_t.numpy(), want_t)

    _, vjp_fn = autodiff.vjp(f, *primals)
    cts = vjp_fn(rt.asarray(ct))
    assert len(cts) == len(want_cts)
    for got, want, p in zip(cts, want_cts, primals, strict=True):
        assert got is not None and got.dtype is p.dtype and got.numpy().dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)

    # the constant side closed over gets nothing; a None tangent is a symbolic zero
    if active == "both":
        _, only_r = autodiff.jvp(add, primals, [rt.asarray(tr), None])
        np.testing.assert_array_equal(only_r.numpy(), tr.astype(cdt.storage))
        _, only_c = autodiff.jvp(add, primals, [None, rt.asarray(tc)])
        np.testing.assert_array_equal(only_c.numpy(), tc)
    if active != "both":
        const = c_const if active == "real" else r_const
        assert const.grad is None and const.node is None


@pytest.mark.parametrize(("rdt", "cdt"), MIXED)
def test_mixed_add_matches_jax(rdt: DType, cdt: DType) -> None:
    """Parity for the promoted add: ours(ct) == conj(jax_vjp(conj(ct)))."""
    xr, xc, ct = _XR.astype(rdt.storage), _XC.astype(cdt.storage), _CT.astype(cdt.storage)
    _, vjp_fn = autodiff.vjp(lambda r, c: r + c, rt.asarray(xr), rt.asarray(xc))
    gr, gc = vjp_fn(rt.asarray(ct))
    with x64():
        _, jfn = jax.vjp(lambda r, c: r + c, jnp.asarray(xr), jnp.asarray(xc))
        jr, jc = jfn(jnp.asarray(np.conj(ct)))
    assert gr is not None and gc is not None
    np.testing.assert_array_equal(gr.numpy(), np.conj(np.asarray(jr)))
    np.testing.assert_array_equal(gc.numpy(), np.conj(np.asarray(jc)))


# -- 5. rules do not depend on the promotion policy or on NumPy-native dtypes -------------------

POLICY_OPS = [
    pytest.param(F.exp, (any_value(0),), ALL[::2], id="exp"),
    pytest.param(F.sqrt, (pos_value(0),), ALL[::2], id="sqrt"),
    pytest.param(F.expm1, (any_value(0),), ALL[::2], id="expm1"),
    pytest.param(F.abs, (any_value(0),), ALL[::2], id="abs"),
    pytest.param(F.imag, (any_value(0),), (c64,), id="imag"),
    pytest.param(F.pow, (pos_value(0), pos_value(1)), ALL[::2], id="pow"),
    pytest.param(F.max, (any_value(0), any_value(1)), (f32,), id="max"),
    pytest.param(F.rem, (fixed([2.3, -1.7, 3.1]), fixed([1.1, 0.7, -1.3])), (f32,), id="rem"),
    pytest.param(F.clamp, (_CL_LO, _CL_X, _CL_HI), (f32,), id="clamp"),
]


@pytest.mark.parametrize("policy", rt.policies())
@pytest.mark.parametrize(("fn", "inputs", "dtypes"), POLICY_OPS)
def test_rules_are_policy_independent(policy: str, fn: Callable[..., Any], inputs: Any, dtypes: Any) -> None:
    """Rules build their constants in exact dtypes, so every policy gives the same derivatives."""
    for dtype in dtypes:
        args = [rt.asarray(make(dtype)) for make in inputs]
        out, vjp_fn = autodiff.vjp(fn, *args)
        ct = rt.asarray(_random(out.dtype, out.shape, np.random.default_rng(3)))
        want_cts = vjp_fn(ct)
        _, want_t = autodiff.jvp(fn, args, args)
        with rt.policy(policy):
            got_cts = autodiff.vjp(fn, *args)[1](ct)
            _, got_t = autodiff.jvp(fn, args, args)
        for got, want in zip(got_cts, want_cts, strict=True):
            assert got is not None and want is not None and got.dtype is want.dtype
            np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert got_t.dtype is want_t.dtype
        np.testing.assert_array_equal(got_t.numpy(), want_t.numpy())


NARROW_UNARY = ["neg", "abs", "exp", "log", "expm1", "log1p", "sin", "cos", "tanh", "logistic", "sqrt", "rsqrt",
                "conj", "square", "reciprocal"]  # fmt: skip
NARROW_BINARY = ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2"]


@pytest.mark.parametrize("dtype", [rt.float16, rt.bfloat16], ids=lambda d: d.short)
def test_narrow_float_rules_keep_dtypes(dtype: DType) -> None:
    """float16 / bfloat16 (bfloat16 has no NumPy type of its own): the rules keep the
    dtype and agree with float32 to the narrow type's precision."""
    for name in NARROW_UNARY + NARROW_BINARY:
        fn = getattr(F, name)
        makers = (pos_value(0),) if name in NARROW_UNARY else (pos_value(0), pos_value(1))
        narrow = [rt.asarray(m(f32)).astype(dtype) for m in makers]
        wide = [a.astype(f32) for a in narrow]
        out, vjp_fn = autodiff.vjp(fn, *narrow)
        ct = rt.asarray(np.ones(out.shape, out.dtype.storage), out.dtype)
        _, t = autodiff.jvp(fn, narrow, narrow)
        _, t32 = autodiff.jvp(fn, wide, wide)
        assert t.dtype is dtype, name
        np.testing.assert_allclose(t.numpy().astype(np.float32), t32.numpy(), rtol=5e-2, atol=5e-2, err_msg=name)
        grads32 = autodiff.vjp(fn, *wide)[1](ct.astype(f32))
        for g, g32 in zip(vjp_fn(ct), grads32, strict=True):
            assert g is not None and g32 is not None and g.dtype is dtype, name
            np.testing.assert_allclose(g.numpy().astype(np.float32), g32.numpy(), rtol=5e-2, atol=5e-2, err_msg=name)


# -- the new ops: non-differentiable declarations, fmax / fmin -------------------------------------


def test_rounding_tests_and_integer_ops_are_declared_non_differentiable() -> None:
    """As JAX's zero JVPs say (and nextafter has none): no rule, no tangent."""
    for name in ("floor", "ceil", "round", "is_finite", "nextafter", "not", "population_count", "clz",
                 "shift_left", "shift_right_arithmetic", "shift_right_logical"):  # fmt: skip
        assert not rt.ops.get(name).differentiable, name
        assert name not in JVP_RULES and name not in VJP_RULES, name
    x = rt.asarray(np.array([0.4, 1.6, -2.5]))
    _, t = autodiff.jvp(lambda v: F.mul(F.floor(v), v), [x], [rt.asarray(np.ones(3))])
    np.testing.assert_array_equal(t.numpy(), np.floor(x.numpy()))  # d(floor(x) x) = floor(x) dx


def test_fmax_fmin_ignore_nan_like_numpy() -> None:
    x = np.array([1.0, np.nan, 3.0, np.nan, -0.5])
    y = np.array([2.0, 1.0, np.nan, np.nan, -1.5])
    np.testing.assert_array_equal(F.fmax(x, y).numpy(), np.fmax(x, y))
    np.testing.assert_array_equal(F.fmin(x, y).numpy(), np.fmin(x, y))


def test_fmax_fmin_send_the_cotangent_to_the_operand_picked_and_to_x_on_ties() -> None:
    """PyTorch's fmax/fmin backward: the picked operand gets it all; a tie goes to x (max splits it)."""
    x = np.array([1.0, np.nan, 3.0, 2.0])
    y = np.array([2.0, 1.0, np.nan, 2.0])
    for fn, to_x in ((F.fmax, [0.0, 0.0, 1.0, 1.0]), (F.fmin, [1.0, 0.0, 1.0, 1.0])):
        _, vjp_fn = autodiff.vjp(fn, rt.asarray(x), rt.asarray(y))
        gx, gy = vjp_fn(rt.asarray(np.ones(4)))
        np.testing.assert_array_equal(gx.numpy(), to_x)
        np.testing.assert_array_equal(gy.numpy(), 1.0 - np.array(to_x))
