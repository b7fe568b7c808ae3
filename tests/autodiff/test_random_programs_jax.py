"""Random mixed-dtype programs against JAX: primal, JVP and VJP.

Hypothesis draws a program of 2 to 20 steps over a pool of values (the inputs,
then each step's output) of mixed dtypes, covering every promoting family:
binary, compare, select, clamp, concatenate, dot_general, scatter (set and add)
and dynamic_update_slice, plus a few unary ops and explicit converts. Each step
has a castwise body and a JAX twin built from the same step list: ``jax.numpy``
supplies the promotion semantics (castwise runs under policy ``jax``), and
``jax.lax`` ops that do not promote get operands converted to
``jnp.result_type`` first. A random subset of the float/complex inputs is
active; the others are closed-over constants on both sides.

``check_against_jax`` compares the outputs, ``autodiff.jvp`` with ``jax.jvp``
and ``autodiff.vjp`` with the conjugate of ``jax.vjp`` of the conjugate. On a
failure Hypothesis shrinks the program, and the message prints the minimal
program's steps and castwise's recorded graph.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import runtime as rt  # noqa: E402
from autodiff.testing import check_against_jax  # noqa: E402
from runtime.core import lax as F  # noqa: E402
from runtime.core.graph import collect, pretty, trace  # noqa: E402
from runtime.core.promotion import PromotionError  # noqa: E402
from runtime.core.shapes import ArityError, KernelDTypeError, OpTypeError, ShapeError  # noqa: E402
from runtime.core.tensor import Tensor  # noqa: E402

N = 3  # every pool value is a vector of N elements
PROGRAM_DTYPES: tuple[rt.DType, ...] = (
    rt.bool_, rt.int8, rt.int16, rt.int32, rt.int64, rt.uint8, rt.uint32,
    rt.bfloat16, rt.float16, rt.float32, rt.float64, rt.complex64, rt.complex128,
)  # fmt: skip
MAX_EXTRA = 63  # each step draws an int in 0..MAX_EXTRA for its own choices (axis, target dtype)

SCATTER_DIMS = rt.ScatterDimensionNumbers(
    update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)
JAX_SCATTER_DIMS = lax.ScatterDimensionNumbers(
    update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)
SET_INDICES = np.array([[0], [2]], np.int32)
ADD_INDICES = np.array([[2], [1]], np.int32)
CONTRACT = (((0,), (0,)), ((), ()))


# -- JAX twins ----------------------------------------------------------------------------------


def promoted(*xs: Any) -> list[Any]:
    """Convert every operand to their ``jnp.result_type`` (what castwise's plan does)."""
    target = jnp.result_type(*xs)
    return [lax.convert_element_type(x, target) for x in xs]


def jax_predicate(x: Any) -> Any:
    if x.dtype == jnp.bool_:
        return x
    return jnp.less(jnp.real(x) if jnp.iscomplexobj(x) else x, 0.5)


def ours_predicate(x: Tensor) -> Tensor:
    if x.dtype is rt.bool_:
        return x
    return F.lt(F.real(x) if x.dtype.kind == "complex" else x, 0.5)


def ours_second_of_stack(x: Tensor, y: Tensor, axis: int) -> Tensor:
    stacked = F.stack([x, y], axis)
    if axis == 0:
        return F.reshape(F.slice(stacked, (1, 0), (2, N)), (N,))
    return F.reshape(F.slice(stacked, (0, 1), (N, 2)), (N,))


def jax_second_of_stack(x: Any, y: Any, axis: int) -> Any:
    stacked = jnp.stack([x, y], axis)
    return stacked[1] if axis == 0 else stacked[:, 1]


def convert_target(extra: int) -> rt.DType:
    return PROGRAM_DTYPES[extra % len(PROGRAM_DTYPES)]


# -- guards: steps whose two implementations may legitimately disagree ---------------------------
#
# Two correct implementations round differently (complex division, transcendental functions,
# summation order), so a value computed by a chain of steps may differ by an ulp between
# castwise and JAX. That is harmless until a *discontinuous* step looks at it: a comparison, a
# max/min/clamp/select choosing a side, a float-to-int convert. The generator therefore tracks
# which pool values are bit-exact on both sides (inputs, and correctly rounded steps of exact
# values) and draws a discontinuous step on an inexact value only when no operand pair is
# near a tie. Exact ties (``max(a, a)``, ``clamp(x, x, hi)``) stay in: they test tie rules.

#: relative distance a non-exact value must keep from a decision boundary, by dtype
TIE_GAP = {"bfloat16": 0.2, "float16": 5e-2, "float32": 1e-4, "complex64": 1e-4, "float64": 1e-9, "complex128": 1e-9}


def _wide(x: Tensor) -> np.ndarray:
    return x.numpy().astype(np.complex128 if x.dtype.kind == "complex" else np.float64)


def _bounded(x: Tensor, limit: float = 1e3) -> bool:
    return bool(np.all(np.abs(_wide(x)) < limit))


def _away_from_zero(x: Tensor, eps: float = 0.1) -> bool:
    return bool(np.all(np.abs(_wide(x)) > eps))


def _gap(values: Sequence[Tensor]) -> float:
    return max((TIE_GAP.get(v.dtype.name, 0.0) for v in values), default=0.0)


def _no_near_ties(values: Sequence[Tensor], exact: Sequence[bool]) -> bool:
    """All values exact on both sides, or the real parts of every pair clearly apart.

    Real parts suffice: complex ``max``/``min`` compare lexicographically, real part
    first, and ``eq`` is false on both sides when the real parts differ.
    """
    if all(exact):
        return True
    gap = _gap(values)
    real = [_wide(v).real for v in values]
    for i in range(len(real)):
        for j in range(i + 1, len(real)):
            scale = np.maximum(1.0, np.maximum(np.abs(real[i]), np.abs(real[j])))
            if not np.all(np.abs(real[i] - real[j]) > gap * scale):
                return False
    return True


def _predicate_ok(x: Tensor, exact: bool) -> bool:
    """``x < 0.5`` (real part) is decided the same way on both sides."""
    if exact or x.dtype.kind == "bool":
        return True
    return bool(np.all(np.abs(_wide(x).real - 0.5) > _gap([x]) * np.maximum(1.0, np.abs(_wide(x).real))))


def _compare_ok(args: Sequence[Tensor], exact: Sequence[bool], extra: int) -> bool:
    return _no_near_ties(args, exact)


def _select_ok(args: Sequence[Tensor], exact: Sequence[bool], extra: int) -> bool:
    return _predicate_ok(args[0], exact[0])


def _convert_ok(args: Sequence[Tensor], exact: Sequence[bool], extra: int) -> bool:
    """Skip converts whose value is implementation-defined or lossy in a way JAX warns about
    (complex to real, float out of an integer's range), and float-to-integer converts of a
    non-exact value near an integer (truncation is a decision)."""
    (x,), target = args, convert_target(extra)
    if x.dtype.kind == "complex" and target.kind != "complex":
        return False
    if not _bounded(x, 100.0):
        return False
    w = _wide(x).real
    if x.dtype.is_inexact and target.kind == "uint" and not np.all(w >= 0):
        return False
    if x.dtype.is_inexact and not target.is_inexact and not exact[0]:
        return bool(np.all(np.abs(w - np.round(w)) > _gap([x]) * np.maximum(1.0, np.abs(w))))
    return True


def _div_ok(args: Sequence[Tensor], exact: Sequence[bool], extra: int) -> bool:
    return _away_from_zero(args[1]) and _bounded(args[0]) and _bounded(args[1])


def _pow_ok(args: Sequence[Tensor], exact: Sequence[bool], extra: int) -> bool:
    """Inexact results only, a base away from zero (and positive when real), a small exponent."""
    base, exponent = args
    if not (base.dtype.is_inexact or exponent.dtype.is_inexact):
        return False
    wb = _wide(base)
    positive = base.dtype.kind == "complex" or bool(np.all(wb.real > 0.1))
    return positive and _away_from_zero(base) and _bounded(base, 10.0) and _bounded(exponent, 3.0)


def _abs_ok(args: Sequence[Tensor], exact: Sequence[bool], extra: int) -> bool:
    """Away from the kink at 0 (float and complex; integers have no derivative)."""
    return not args[0].dtype.is_inexact or _away_from_zero(args[0], 1e-3)


def _always(args: Sequence[Tensor], exact: Sequence[bool], extra: int) -> bool:
    return True


# -- exactness: which steps give bit-identical results on both sides for bit-identical inputs ----

_NARROW = ("float16", "bfloat16")


def _exact_always(out: Tensor) -> bool:
    return True


def _exact_never(out: Tensor) -> bool:
    return False


def _exact_rounded(out: Tensor) -> bool:
    """Correctly rounded IEEE arithmetic (add, sub, real mul/div), not emulated narrow floats."""
    return out.dtype.name not in _NARROW


def _exact_real(out: Tensor) -> bool:
    """Real (and integer) results only: complex multiply/divide/abs round differently."""
    return out.dtype.kind != "complex" and out.dtype.name not in _NARROW


def _exact_integer(out: Tensor) -> bool:
    """Integer sums are exact in any order; float sums are not."""
    return not out.dtype.is_inexact


# -- the step table -----------------------------------------------------------------------------

Guard = Callable[[Sequence[Tensor], Sequence[bool], int], bool]


@dataclass(frozen=True)
class Step:
    """One kind of program step: arity, castwise body, JAX twin, a guard on its operands
    (values and exactness), and whether its output is exact when its operands are."""

    arity: int
    ours: Callable[[list[Tensor], int], Tensor]
    theirs: Callable[[list[Any], int], Any]
    ok: Guard = _always
    exact: Callable[[Tensor], bool] = _exact_always


def _binary(ours: Callable[..., Tensor], theirs: Callable[..., Any], ok: Guard = _always,
            exact: Callable[[Tensor], bool] = _exact_always) -> Step:  # fmt: skip
    return Step(2, lambda a, e: ours(a[0], a[1]), lambda a, e: theirs(a[0], a[1]), ok, exact)


STEPS: dict[str, Step] = {
    # binary family
    "add": _binary(F.add, jnp.add, exact=_exact_rounded),
    "sub": _binary(F.sub, jnp.subtract, exact=_exact_rounded),
    "mul": _binary(F.mul, jnp.multiply, exact=_exact_real),
    "div": _binary(F.div, jnp.true_divide, _div_ok, _exact_real),
    "pow": _binary(F.pow, jnp.power, _pow_ok, _exact_never),
    "max": _binary(F.max, jnp.maximum, _compare_ok),
    "min": _binary(F.min, jnp.minimum, _compare_ok),
    "and": _binary(F.logical_and, jnp.bitwise_and),
    # compare family
    "lt": _binary(F.lt, jnp.less, _compare_ok),
    "eq": _binary(F.eq, jnp.equal, _compare_ok),
    # select: the predicate comes from the first operand
    "select": Step(
        3,
        lambda a, e: F.select(ours_predicate(a[0]), a[1], a[2]),
        lambda a, e: lax.select(jax_predicate(a[0]), *promoted(a[1], a[2])),
        _select_ok,
    ),
    "clamp": Step(
        3, lambda a, e: F.clamp(a[0], a[1], a[2]), lambda a, e: lax.clamp(*promoted(a[0], a[1], a[2])), _compare_ok
    ),
    "concatenate": Step(
        3,
        lambda a, e: F.slice(F.concatenate([a[0], a[1], a[2]], 0), (2,), (2 + N,)),
        lambda a, e: jnp.concatenate([a[0], a[1], a[2]])[2 : 2 + N],
    ),
    "stack": Step(
        2,
        lambda a, e: ours_second_of_stack(a[0], a[1], (0, -1)[e % 2]),
        lambda a, e: jax_second_of_stack(a[0], a[1], (0, -1)[e % 2]),
    ),
    "dot_general": Step(
        2,
        lambda a, e: F.broadcast_in_dim(F.dot_general(a[0], a[1], CONTRACT), (N,), ()),
        lambda a, e: jnp.broadcast_to(_jax_dot(a[0], a[1]), (N,)),
        exact=_exact_integer,
    ),
    "conv_general_dilated": Step(
        2,
        lambda a, e: F.reshape(
            F.conv_general_dilated(F.reshape(a[0], (1, 1, N)), F.reshape(a[1], (1, 1, N)), (1,), "SAME"), (N,)
        ),
        lambda a, e: _jax_conv(a[0], a[1]),
        exact=_exact_integer,
    ),
    "scatter": Step(
        2,
        lambda a, e: F.scatter(a[0], SET_INDICES, F.slice(a[1], (0,), (2,)), SCATTER_DIMS),
        lambda a, e: lax.scatter(*_scatter_operands(a[0], a[1][0:2], SET_INDICES), JAX_SCATTER_DIMS),
    ),
    "scatter_add": Step(
        2,
        lambda a, e: F.scatter_add(a[0], ADD_INDICES, F.slice(a[1], (1,), (3,)), SCATTER_DIMS),
        lambda a, e: lax.scatter_add(*_scatter_operands(a[0], a[1][1:3], ADD_INDICES), JAX_SCATTER_DIMS),
        exact=_exact_rounded,
    ),
    "dynamic_update_slice": Step(
        2,
        lambda a, e: F.dynamic_update_slice(a[0], F.slice(a[1], (0,), (2,)), [1]),
        lambda a, e: _jax_update_slice(a[0], a[1][0:2]),
    ),
    # unary ops and converts: more dtypes flowing between the promoting steps
    # jax.numpy converts an integer or bool operand of a float-only op as castwise's plan does
    "sin": Step(1, lambda a, e: F.sin(a[0]), lambda a, e: jnp.sin(a[0]), exact=_exact_never),
    "tanh": Step(1, lambda a, e: F.tanh(a[0]), lambda a, e: jnp.tanh(a[0]), exact=_exact_never),
    "neg": Step(1, lambda a, e: F.neg(a[0]), lambda a, e: lax.neg(a[0])),
    "abs": Step(1, lambda a, e: F.abs(a[0]), lambda a, e: jnp.abs(a[0]), _abs_ok, _exact_real),
    "real": Step(1, lambda a, e: F.real(a[0]), lambda a, e: jnp.real(a[0])),  # a real operand: itself
    "convert": Step(
        1,
        lambda a, e: F.convert(a[0], convert_target(e)),
        lambda a, e: lax.convert_element_type(a[0], convert_target(e).storage),
        _convert_ok,
    ),
}


def _jax_conv(x: Any, y: Any) -> Any:
    px, py = promoted(x, y)
    out = lax.conv_general_dilated(
        px.reshape(1, 1, N), py.reshape(1, 1, N), (1,), "SAME", precision=lax.Precision.HIGHEST
    )
    return out.reshape(N)


def _jax_dot(x: Any, y: Any) -> Any:
    px, py = promoted(x, y)
    return lax.dot_general(px, py, CONTRACT)


def _jax_update_slice(operand: Any, update: Any) -> Any:
    po, pu = promoted(operand, update)
    return lax.dynamic_update_slice(po, pu, (1,))


def _scatter_operands(operand: Any, updates: Any, indices: np.ndarray) -> tuple[Any, Any, Any]:
    op, upd = promoted(operand, updates)
    return op, jnp.asarray(indices), upd


# -- programs -----------------------------------------------------------------------------------

_REFUSALS = (PromotionError, OpTypeError, ShapeError, KernelDTypeError, ArityError, TypeError)


def make_input(dtype: rt.DType, rng: np.random.Generator) -> np.ndarray:
    if dtype.kind == "bool":
        return rng.integers(0, 2, N).astype(bool)
    if dtype.kind == "uint":
        return rng.integers(0, 5, N).astype(dtype.storage)
    if dtype.kind == "int":
        return rng.integers(-4, 5, N).astype(dtype.storage)
    data = rng.uniform(-2, 2, N)
    if dtype.kind == "complex":
        data = data + 1j * rng.uniform(-2, 2, N)
    return data.astype(dtype.storage)


@dataclass
class JaxProgram:
    """Inputs (dtype, active), and steps ``(name, pool indices, extra)`` over the pool of values."""

    input_dtypes: list[rt.DType]
    active: list[bool]
    seed: int
    steps: list[tuple[str, list[int], int]] = field(default_factory=list)

    def inputs(self) -> list[np.ndarray]:
        rng = np.random.default_rng(self.seed)
        return [make_input(d, rng) for d in self.input_dtypes]

    def run_ours(self, values: Sequence[Tensor]) -> tuple[Tensor, ...]:
        pool = list(values)
        for name, picks, extra in self.steps:
            pool.append(STEPS[name].ours([pool[i] for i in picks], extra))
        return tuple(pool[len(values) :])

    def run_jax(self, values: Sequence[Any]) -> tuple[Any, ...]:
        pool = list(values)
        for name, picks, extra in self.steps:
            pool.append(STEPS[name].theirs([pool[i] for i in picks], extra))
        return tuple(pool[len(values) :])

    def describe(self) -> str:
        names = [f"x{i}:{d.short}{'(active)' if a else ''}" for i, (d, a) in enumerate(
            zip(self.input_dtypes, self.active, strict=True))]  # fmt: skip
        lines = [f"inputs {' '.join(names)} (seed {self.seed})"]
        pool = [f"x{i}" for i in range(len(self.input_dtypes))]
        for k, (name, picks, extra) in enumerate(self.steps):
            lines.append(f"  v{k} = {name}({', '.join(pool[i] for i in picks)}) extra={extra}")
            pool.append(f"v{k}")
        return "\n".join(lines)


def _try_step(
    name: str, pool: Sequence[Tensor], exact: Sequence[bool], picks: Sequence[int], extra: int
) -> tuple[list[int], Tensor, bool] | None:
    """Run step ``name`` on the first picks, or ``None`` when castwise refuses it or a guard rejects it."""
    step = STEPS[name]
    used = list(picks[: step.arity])
    args = [pool[i] for i in used]
    flags = [exact[i] for i in used]
    if not step.ok(args, flags, extra):
        return None
    try:
        with np.errstate(all="ignore"):
            out = step.ours(args, extra)
    except _REFUSALS:
        return None  # castwise refuses (e.g. sin of an integer): not a valid step
    if out.dtype.is_inexact and not (np.all(np.isfinite(_wide(out))) and _bounded(out, 1e6)):
        return None  # keep values finite and moderate: overflow is not what this test is about
    return used, out, all(flags) and step.exact(out)


@st.composite
def jax_programs(draw: st.DrawFn, min_ops: int = 2, max_ops: int = 20) -> JaxProgram:
    """A program of ``min_ops``..``max_ops`` steps that castwise accepts, and whose guards hold."""
    n_inputs = draw(st.integers(2, 4))
    dtypes = draw(st.lists(st.sampled_from(PROGRAM_DTYPES), min_size=n_inputs, max_size=n_inputs))
    # each float/complex input is active with probability 3/4: most programs differentiate something
    active = [d.is_inexact and draw(st.integers(0, 3)) > 0 for d in dtypes]
    prog = JaxProgram(dtypes, active, seed=draw(st.integers(0, 2**16)))
    pool = [rt.asarray(v) for v in prog.inputs()]
    exact = [True] * len(pool)  # bit-identical in castwise and JAX (see the guards above)
    target = draw(st.sampled_from(range(min_ops, max_ops + 1)))  # uniform length, shrinks to the shortest
    attempts = 0
    names = list(STEPS)  # in table order: Hypothesis favours (and shrinks to) the first, "add"
    while len(prog.steps) < target and attempts < 4 * max_ops:
        attempts += 1
        first = draw(st.integers(0, len(names) - 1))
        picks = [draw(st.integers(0, len(pool) - 1)) for _ in range(3)]
        extra = draw(st.integers(0, MAX_EXTRA))
        # The drawn step first; when castwise refuses it or a guard rejects it, the next
        # steps of the table on the same operands (so even all-zero draws make a program).
        for offset in range(len(names)):
            name = names[(first + offset) % len(names)]
            made = _try_step(name, pool, exact, picks, extra)
            if made is not None:
                used, out, out_exact = made
                prog.steps.append((name, used, extra))
                pool.append(out)
                exact.append(out_exact)
                break
    if len(prog.steps) < min_ops:
        reject()
    return prog


def recorded_graph(prog: JaxProgram) -> str:
    """castwise's recorded graph of the program (active inputs tracked), for failure messages."""
    values = prog.inputs()
    try:
        tensors = [rt.asarray(v, requires_grad=a) for v, a in zip(values, prog.active, strict=True)]
        outs = prog.run_ours(tensors)
        recorded = [o.node for o in outs if o.node is not None]
        if recorded:
            return pretty(collect(recorded, [t.node for t in tensors if t.node is not None]))
        return "(no step has an active input) traced:\n" + pretty(trace(lambda *xs: prog.run_ours(xs), *values))
    except Exception as err:  # the message must survive a program that breaks the recorder too
        return f"(recording failed: {type(err).__name__}: {err})"


def check_program(prog: JaxProgram) -> None:
    values = prog.inputs()
    tensors = [rt.asarray(v) for v in values]
    active = [i for i, a in enumerate(prog.active) if a]

    def closed(run: Callable[[Sequence[Any]], tuple[Any, ...]], consts: Sequence[Any]) -> Callable[..., Any]:
        def f(*act: Any) -> tuple[Any, ...]:
            full = list(consts)
            for i, a in zip(active, act, strict=True):
                full[i] = a
            return run(full)

        return f

    with jax.enable_x64(True):
        jax_consts = [jnp.asarray(v) for v in values]
    try:
        with rt.use_policy("jax"):
            check_against_jax(
                closed(prog.run_ours, tensors),
                closed(prog.run_jax, jax_consts),
                [values[i] for i in active],
                seed=prog.seed,
            )
    except Exception as err:
        raise AssertionError(
            f"{type(err).__name__}: {err}\n\nprogram:\n{prog.describe()}\n\ncastwise graph:\n{recorded_graph(prog)}"
        ) from err


@given(jax_programs(2, 20))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_random_programs_match_jax(prog: JaxProgram) -> None:
    check_program(prog)


def test_step_table_covers_every_promoting_family() -> None:
    from runtime.core import ops
    from runtime.core.plan import PLAN_RULES

    recorded: set[str] = set()
    for name, step in STEPS.items():
        for dtype in (rt.float64, rt.int32, rt.complex128):
            args = [np.arange(1.0, N + 1).astype(dtype.storage)] * step.arity
            try:
                graph = trace(lambda *xs, step=step: step.ours(list(xs), 0), *args)
            except _REFUSALS:
                continue
            recorded |= {e.op.name for e in graph.eqns}
            break
        else:
            raise AssertionError(f"step {name} accepts no f64, i32 or c128 operands")
    # (the promoting families; per-op rules, tests/runtime/test_opfamilies.py, convert single ops)
    promoting = {op.family for op in ops.OPS.values() if op.family in PLAN_RULES}
    covered = {ops.OPS[name].family for name in recorded}
    assert promoting <= covered, promoting - covered


def test_failure_message_shows_the_program_and_its_recorded_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrong JAX twin makes the check fail with the steps and castwise's graph printed."""
    prog = JaxProgram([rt.float64, rt.complex128], [True, False], seed=3, steps=[("mul", [0, 1], 0)])
    check_program(prog)
    monkeypatch.setitem(STEPS, "mul", Step(2, STEPS["mul"].ours, lambda a, e: jnp.add(a[0], a[1])))
    with pytest.raises(AssertionError) as info:
        check_program(prog)
    text = str(info.value)
    assert "[primal] output 0" in text and "v0 = mul(x0, x1)" in text
    assert "convert[to=c128]" in text and "mul" in text and "{ lambda" in text


def test_a_wrong_derivative_rule_fails_with_its_minimal_program(monkeypatch: pytest.MonkeyPatch) -> None:
    """mul's VJP without the conjugates (JAX's convention, not castwise's): caught in reverse mode."""
    from autodiff.rules import VJP_RULES

    def unconjugated_mul_vjp(cts: Any, primals: Any, outputs: Any, needs: Any, **params: Any) -> list[Tensor]:
        (ct,), (x, y) = cts, primals
        return [F.convert(F.mul(ct, y), x.dtype), F.convert(F.mul(ct, x), y.dtype)]

    prog = JaxProgram([rt.complex128, rt.complex128], [True, True], seed=5, steps=[("mul", [0, 1], 0)])
    check_program(prog)
    monkeypatch.setitem(VJP_RULES, "mul", unconjugated_mul_vjp)
    with pytest.raises(AssertionError, match=r"\[vjp\] cotangent of argument 0 \(c128\[3\]\)") as info:
        check_program(prog)
    assert "c:c128[3] = mul a b" in str(info.value)
