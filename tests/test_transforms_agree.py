"""Every transform agrees with eager execution of the same program, or raises a castwise error.

Hypothesis draws random programs (Python source, shown in full when an example fails) over
the op vocabulary and the NumPy-named functions, with the steps where transforms have gone
wrong before mixed in:

* views and in-place writes: a constant made inside the program, an argument's
  ``detach()`` or an intermediate written through ``reshape`` / ``detach`` / basic-index
  views (``v += 10``), before or after it was read; ``.at[].set`` (functional) next to them;
  NumPy writes (``np.asarray(c)[...] += 10``) where a derivative is taken;
* Python floats and 0-d Tensors as parameters (``nn.leaky_relu``'s ``negative_slope``,
  ``nn.elu``'s ``alpha``, ``clip`` bounds, ``nan_to_num``, ``isclose``'s ``rtol``,
  ``.at[i].set``'s value), and 0-d integer Tensors as lengths (``rt.arange(n)``);
* integer index arrays as arguments (``take`` in every ``mode``, ``x[i]``, ``.at[i].add``,
  ``.at[i].set``, ``take_along_axis``), in bounds on the first call (the trace) and out of
  bounds on later calls or later examples of a batch;
* ``custom_vjp`` / ``custom_jvp`` wrappers of sub-programs whose rule is the true
  derivative, closing over constants (made inside the program, or module-level ones the
  test writes through a view between two calls of a jitted function);
* float32 values mixed with float64 ones, under every policy of ``rt.policies()``, and a
  policy re-registered under its own name between two calls of a jitted function.

Each test checks one property, a transform against its oracle, on programs drawn by one
generator (``programs``, with per-test weights of the step kinds):

- ``test_jit_agrees_with_eager``: ``autodiff.jit(f)`` called three times (same shapes,
  new values) == eager ``f`` on each call;
- ``test_vmap_agrees_with_a_loop``: ``autodiff.vmap(f)`` over a batch of three == eager
  ``f`` on each example, stacked;
- ``test_trace_evaluate_agrees``: ``rt.evaluate(rt.trace(f, *first), *args)`` == eager
  ``f(*args)`` for the first arguments and two more sets;
- ``test_grad_agrees_with_finite_differences``: ``autodiff.grad`` of a weighted sum of the
  outputs, and ``autodiff.jit`` of it on three calls, == central differences;
- ``test_vjp_and_jvp_agree_with_finite_differences``: ``autodiff.vjp`` and
  ``autodiff.jvp`` == central differences;
- ``test_backward_agrees_with_finite_differences``: the tape (``requires_grad``,
  ``.backward()``, ``.grad``) == central differences;
- ``test_custom_rules_agree``: programs that call custom functions, under ``jit``,
  ``jit(grad)``, ``grad``, ``vmap`` and ``grad`` of a summed ``vmap``, == the oracles above
  (a custom rule is the true derivative, so wrapping changes nothing).

"Agrees" means: where eager raises a castwise error, the transform raises one too; where
eager returns, the transform returns the same dtypes, shapes and values (NaNs in the same
places; float64 to 1e-9, float32 to 2e-5), or raises a castwise error. A castwise error is
an instance of one of castwise's exception classes, or a builtin ``IndexError`` /
``TypeError`` / ``ValueError`` ... raised by a ``raise`` statement in castwise's own code (so
NumPy's or JAX's errors escaping from inside castwise do not count). One exception: NumPy's
own read-only ``ValueError`` at a program's NumPy write counts as a refusal of that write
(castwise may hand out read-only views of memory a recording saved).

Derivatives are compared in float64 against central differences of the eager program
(step 1e-6, tolerance 1e-5); where the one-sided differences disagree (a kink or a jump of
``relu``, ``where``, ``clip`` ... within a step, where castwise, like JAX, picks one side) the
gradient is not compared.

In the default run. The default profile (``repro``, tests/conftest.py: derandomized, so every
machine draws the same examples) keeps the file at about 38 CPU-seconds (measured with
``/usr/bin/time -v``: user + system time of ``pytest tests/test_transforms_agree.py``);
``HYPOTHESIS_PROFILE=explore`` draws fresh examples, ten times as many per test (about ten times the CPU
time): run it before a stop to look for new counterexamples.
``CASTWISE_AGREE_OFF=write,custom`` leaves step kinds out of every program (``write``,
``numpy_write``, ``custom`` (or only ``custom_vjp`` / ``custom_jvp``), ``index``, ``parametric``,
``arange``, ``mixed``, ``global``; also ``reregister`` and ``global_writes`` for what happens
between calls), to see what else fails while one class of bugs is being fixed.

The last two bugs it found, fixed with it: under ``vmap``, a ``custom_vjp`` whose function
closes over a constant that the program writes through a view after the call read the written
value when the call was run again per example (castwise's bug: the per-example run now checks
what the function closes over and raises ``SavedValueModifiedError``, as ``grad`` does); and
``test_vjp_and_jvp_agree_with_finite_differences``'s directional differences handed a program
that writes into its argument a read-only view of the test's array (the suite's bug: each point
now gets a copy).
"""

from __future__ import annotations

import dis
import linecache
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, event, given, note, settings
from hypothesis import strategies as st

import autodiff
import passes
import runtime as rt
from autodiff.api import NonDifferentiableInputError
from autodiff.batching import VmapError
from autodiff.custom import CustomRuleError, CustomVJPForwardError
from autodiff.derivatives.linalg import LinalgDerivativeError
from autodiff.derivatives.special import NoDerivativeError
from passes.lower_jax._common import LoweringError
from runtime.core.kernels import KernelOutputError
from runtime.core.promotion import Policy, get_policy_object, register_policy

EXPLORE = os.environ.get("HYPOTHESIS_PROFILE") == "explore"


def examples(n: int) -> int:
    """``n`` examples by default, ten times as many under the explore profile."""
    return 10 * n if EXPLORE else n


SETTINGS = {
    "deadline": None,
    "phases": [Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
}

# -- what counts as a castwise error -----------------------------------------------------------

_CASTWISE_DIRS = tuple(str(Path(str(m.__file__)).resolve().parent) + os.sep for m in (rt, autodiff, passes))

#: castwise's own exception classes (KernelOutputError is not one: it reports a castwise bug)
CASTWISE_ERRORS: tuple[type[BaseException], ...] = (
    rt.ShapeError,
    rt.OpTypeError,
    rt.KernelDTypeError,
    rt.ArityError,
    rt.OpMemoryError,
    rt.PromotionError,
    rt.InPlaceError,
    rt.GraphError,
    VmapError,
    CustomRuleError,
    CustomVJPForwardError,
    NonDifferentiableInputError,
    LinalgDerivativeError,
    NoDerivativeError,
    LoweringError,
)


def _raised_by_castwise(err: BaseException) -> bool:
    """The innermost frame of ``err``'s traceback is castwise code at a ``raise X`` statement
    (not a call into NumPy or JAX that raised, and not a bare re-raise of their error)."""
    tb = err.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    if not str(Path(code.co_filename).resolve()).startswith(_CASTWISE_DIRS):
        return False
    for instruction in dis.get_instructions(code):
        if instruction.offset == tb.tb_lasti:
            return instruction.opname == "RAISE_VARARGS" and bool(instruction.arg)
    return False


def is_castwise_error(err: BaseException) -> bool:
    if isinstance(err, (KernelOutputError, AssertionError)):
        return False
    if isinstance(err, CASTWISE_ERRORS):
        return True
    if isinstance(err, ValueError) and "read-only" in str(err) and getattr(err, "at_numpy_write", False):
        return True
    return _raised_by_castwise(err)


def describe(err: BaseException) -> str:
    return f"{type(err).__module__}.{type(err).__qualname__}: {err}"


# -- programs ------------------------------------------------------------------------------------


@dataclass
class Arg:
    """One argument of a program: ``x`` (the float64 input, differentiated), ``py`` (a Python
    float parameter), ``t0`` (a 0-d float64 Tensor parameter), ``index`` (an int64 index vector
    along axis 0), ``count_t0`` / ``count_py`` (a length, as a 0-d int64 Tensor or an int)."""

    name: str
    kind: str


class Program:
    """A drawn program: its policy, the shape of its float values, its arguments, the lines of
    ``f``'s body and the module-level constants it reads. Its repr is its Python source."""

    def __init__(
        self,
        policy: str,
        shape: tuple[int, ...],
        args: list[Arg],
        lines: list[str],
        globals_: dict[str, list[Any]] | None = None,
    ) -> None:
        self.policy, self.shape, self.args, self.lines = policy, shape, args, lines
        self.globals_: dict[str, list[Any]] = {} if globals_ is None else globals_
        self.features: set[str] = set()

    @property
    def source(self) -> str:
        header = [f"{name} = rt.asarray(np.array({value!r}))" for name, value in self.globals_.items()]
        signature = ", ".join(a.name for a in self.args)
        body = [f"    {line}" for line in self.lines]
        return "\n".join([*header, f"def f({signature}):", *body])

    def __repr__(self) -> str:
        return f"<program under policy {self.policy!r}:\n{self.source}\n>"

    def build(self) -> tuple[Callable[..., Any], dict[str, Any]]:
        """Fresh module-level constants and a fresh ``f`` (tracebacks show the source)."""
        source = self.source
        filename = f"<program {abs(hash(source)):x}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        namespace: dict[str, Any] = {"rt": rt, "np": np, "autodiff": autodiff}
        exec(compile(source, filename, "exec"), namespace)
        return namespace["f"], namespace


def _literal(draw: Any, shape: tuple[int, ...], low: int = -20, high: int = 20) -> list[Any]:
    size = int(np.prod(shape))
    values = draw(st.lists(st.integers(low, high), min_size=size, max_size=size))
    return (np.array(values, np.float64) / 10).reshape(shape).tolist()  # type: ignore[no-any-return]


UNARY = [
    "rt.sin({a})",
    "rt.cos({a})",
    "rt.tanh({a})",
    "rt.exp(rt.tanh({a}))",
    "-{a}",
    "{a} * {a}",
    "rt.nn.sigmoid({a})",
    "rt.nn.softplus({a})",
    "rt.nn.silu({a})",
    "rt.nn.gelu({a})",
    "rt.sqrt({a} * {a} + 1.0)",
    "rt.log1p({a} * {a})",
    "{a} * 0.5 + 1.0",
    "rt.abs({a})",
    "rt.nn.relu({a})",
]
BINARY = [
    "{a} + {b}",
    "{a} - {b}",
    "{a} * {b}",
    "{a} / ({b} * {b} + 1.0)",
    "rt.maximum({a}, {b})",
    "rt.minimum({a}, {b})",
    "rt.where({a} > {b}, {a}, {b})",
    "rt.lax.mul({a}, rt.sin({b}))",
]
STRUCTURAL = [
    "{a} - {a}.mean(axis=-1, keepdims=True)",
    "rt.nn.softmax({a}, axis=-1)",
    "rt.flip({a}, axis=-1)",
    "rt.roll({a}, 1, axis=-1)",
    "rt.lax.cumsum({a}, {last})",
    "{a}.reshape(-1).reshape({shape})",
    "{a} * {a}.sum()",
    "rt.lax.concatenate([{a}, {b}], -1)[..., :{n}]",
    "{a}[::-1]",
]
STRUCTURAL_1D = ["rt.dot({a}, {b}) * {a}"]
STRUCTURAL_2D = ["rt.matmul(rt.matmul({a}, {b}.T), {a}) * 0.25", "{a}.T.T * 1.0"]
PARAMETRIC = [
    "rt.nn.leaky_relu({a}, negative_slope={p})",
    "rt.nn.elu({a}, alpha={p})",
    "rt.clip({a}, -{p}, {q})",
    "{a}.clip(-{p}, {q})",
    # (the log's argument is never exactly 0: there the gradient is NaN by the chain rule, as in JAX)
    "rt.nan_to_num(rt.log({a} - 0.0123), nan={p}, posinf={q}, neginf=-{q})",
    "rt.where(rt.isclose({a}, {b}, rtol={p}, atol=0.0), {a}, {b})",
    "{a} * {p}",
]
INDEXING = [
    "rt.take({a}, {i}, axis=0)",
    "{a}[{i}]",
    "{a}.at[{i}].add({b})",
    "{a}.at[{i}].set({p})",
    "rt.take_along_axis({a}, {ib}, axis=0)",
    "rt.take({a}, {i}, axis=0, mode={mode!r})",
]
#: a float32 value meets a float64 one (the policy decides the result)
MIXED = ["{a}.astype(rt.float32) * {b}", "{a} + {b}.astype(rt.float32)", "rt.maximum({a}.astype(rt.float32), {b})"]
#: elementwise sub-programs ``h(u, c)`` with ``dh/du`` (a custom rule's true derivative)
CUSTOM_BODIES = [
    ("rt.sin({u})", "rt.cos({u})", False),
    ("{u} * {c}", "{c}", True),
    ("rt.tanh({u} * {c})", "{c} * (1.0 - rt.tanh({u} * {c}) ** 2)", True),
    ("rt.sin({u}) * {u}", "rt.cos({u}) * {u} + rt.sin({u})", False),
    ("rt.exp(rt.tanh({u})) * {c}", "rt.exp(rt.tanh({u})) * (1.0 - rt.tanh({u}) ** 2) * {c}", True),
]


#: step kinds (``_Builder`` methods) and their default weights
STEP_KINDS = {
    "unary": 3,
    "binary": 3,
    "structural": 2,
    "const": 2,
    "write": 3,
    "parametric": 3,
    "index": 3,
    "custom": 1,
    "mixed": 1,
    "arange": 1,
    "numpy_write": 0,
    "read_global": 1,
}
#: step kinds left out of every program (see the module docstring)
OFF = {kind for kind in os.environ.get("CASTWISE_AGREE_OFF", "").replace(" ", "").split(",") if kind}


@dataclass(frozen=True)
class Knobs:
    """What a test's programs may contain."""

    #: weights that differ from ``STEP_KINDS`` (0 leaves a kind out)
    weights: tuple[tuple[str, int], ...] = ()
    #: writes into non-constants may scale (a derivative test keeps them additive: castwise
    #: documents a write through detach() as not differentiated)
    scaling_writes: bool = True
    min_steps: int = 1
    max_steps: int = 8
    min_custom: int = 0

    def menu(self) -> list[str]:
        weights = {**STEP_KINDS, **dict(self.weights)}
        off = OFF | ({"read_global"} if "global" in OFF else set())
        return [kind for kind, w in weights.items() if kind not in off for _ in range(w)]

    def allows(self, kind: str) -> bool:
        return kind in self.menu()


class _Builder:
    def __init__(self, draw: Any, knobs: Knobs, shape: tuple[int, ...], policy: str) -> None:
        self.draw = draw
        self.knobs = knobs
        self.prog = Program(policy, shape, [Arg("x", "x")], [])
        self.pool: list[str] = ["x"]  # float values of the program's shape
        self.consts: list[str] = []  # made inside the program (fresh on each call)
        self.read: set[str] = set()  # pool values some step has read
        self.extras: list[str] = []  # outputs of other shapes
        self.counter = 0
        self.menu: list[str] = []
        self.outputs: list[str] = []  # values returned besides the last one

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def pick(self) -> str:
        name = self.draw(st.sampled_from(self.pool))
        self.read.add(name)
        return str(name)

    def emit(self, expr: str, feature: str) -> None:
        name = self.fresh("v")
        self.prog.lines.append(f"{name} = {expr}")
        self.pool.append(name)
        self.prog.features.add(feature)
        if self.draw(st.booleans()):  # drawn here, in the step's span: the shrinker drops both
            self.outputs.append(name)

    def arg(self, kind: str, prefix: str) -> str:
        """An existing argument of ``kind`` or a new one."""
        existing = [a.name for a in self.prog.args if a.kind == kind]
        if existing and self.draw(st.booleans()):
            return str(self.draw(st.sampled_from(existing)))
        name = f"{prefix}{len([a for a in self.prog.args if a.name.startswith(prefix)])}"
        self.prog.args.append(Arg(name, kind))
        return name

    def param(self) -> str:
        """A parameter: a literal, a Python float argument or a 0-d Tensor argument."""
        how = self.draw(st.sampled_from(["t0", "t0", "t0", "py", "literal"]))
        if how == "literal":
            return repr(self.draw(st.integers(1, 10)) / 10)
        self.prog.features.add(f"param_{how}")
        return self.arg(how, "p")

    # -- step kinds ------------------------------------------------------------------------
    def unary(self) -> None:
        self.emit(self.draw(st.sampled_from(UNARY)).format(a=self.pick()), "unary")

    def binary(self) -> None:
        template = self.draw(st.sampled_from(BINARY))
        a, b = self.pick(), self.pick()
        self.emit(template.format(a=a, b=b), "binary")

    def structural(self) -> None:
        shape = self.prog.shape
        templates = STRUCTURAL + (STRUCTURAL_1D if len(shape) == 1 else STRUCTURAL_2D)
        template = self.draw(st.sampled_from(templates))
        a, b = self.pick(), self.pick() if "{b}" in template else ""
        self.emit(template.format(a=a, b=b, last=len(shape) - 1, shape=shape, n=shape[-1]), "structural")

    def const(self) -> None:
        name = self.fresh("c")
        self.prog.lines.append(f"{name} = rt.asarray(np.array({_literal(self.draw, self.prog.shape)!r}))")
        self.pool.append(name)
        self.consts.append(name)
        self.prog.features.add("const")
        if self.draw(st.booleans()):  # read at once by an op that saves it for the derivative
            self.emit(f"{'x' if self.draw(st.booleans()) else self.pick()} * {name}", "binary")
            self.read.add(name)

    def global_(self) -> str:
        """A module-level constant (the jit tests write it through a view between calls)."""
        if self.prog.globals_ and self.draw(st.booleans()):
            return str(self.draw(st.sampled_from(sorted(self.prog.globals_))))
        name = f"G{len(self.prog.globals_)}"
        self.prog.globals_[name] = _literal(self.draw, self.prog.shape)
        self.prog.features.add("global")
        return name

    def read_global(self) -> None:
        name = self.global_()
        if name not in self.pool:
            self.pool.append(name)

    def write(self, target: str | None = None) -> None:
        """``view = t.<view>; view op= k`` into a constant, the argument or an intermediate
        (never a module-level constant: only the tests write those, between calls)."""
        draw = self.draw
        if target is None:
            used = [c for c in self.consts if c in self.read]
            candidates = [p for p in self.pool if p not in self.prog.globals_]
            if used and draw(st.integers(0, 2)):
                target = str(draw(st.sampled_from(used)))
            else:
                target = str(draw(st.sampled_from(candidates)))
            if target in self.consts:
                self.use_first(target)
        views = [".reshape(-1)", ".detach()", "[0]"] + ([".T"] if len(self.prog.shape) == 2 else [])
        if target not in self.consts and draw(st.integers(0, 3)):
            views = [".detach()"]  # a recording refuses writes into the others (tracked views)
        view = draw(st.sampled_from(views))
        ops = ["+= 10.0", "-= 1.5"]
        if target in self.consts or self.knobs.scaling_writes:
            ops.append("*= 2.0")
        op = draw(st.sampled_from(ops))
        w = self.fresh("w")
        self.prog.lines.append(f"{w} = {target}{view}")
        self.prog.lines.append(f"{w} {op}")
        kind = "const" if target in self.consts else ("arg" if target == "x" else "intermediate")
        self.prog.features.add(f"write_{kind}")

    def use_first(self, const: str) -> None:
        """Sometimes read ``const`` first, by an op that saves it for ``x``'s derivative."""
        if const not in self.read or self.draw(st.integers(0, 3)) == 0:
            self.emit(f"x * {const}", "binary")
            self.read.add(const)

    def numpy_write(self) -> None:
        if not self.consts:
            self.const()
        used = [c for c in self.consts if c in self.read] or self.consts
        target = self.draw(st.sampled_from(used))
        self.use_first(target)
        self.prog.lines.append(f"np.asarray({target})[...] += 10.0  # NumPy write")
        self.prog.features.add("numpy_write")

    def parametric(self) -> None:
        template = self.draw(st.sampled_from(PARAMETRIC))
        a, b = self.pick(), self.pick() if "{b}" in template else ""
        p = self.param()
        q = self.param() if "{q}" in template else ""
        self.emit(template.format(a=a, b=b, p=p, q=q), "param")

    def index(self) -> None:
        i = self.arg("index", "i")
        ib = i if len(self.prog.shape) == 1 else f"rt.lax.reshape({i}, ({self.prog.shape[0]}, 1))"
        template = self.draw(st.sampled_from(INDEXING))
        mode = self.draw(st.sampled_from(["raise", "clip", "wrap", "fill"]))
        a, b = self.pick(), self.pick() if "{b}" in template else ""
        p = self.param() if "{p}" in template else ""
        self.emit(template.format(a=a, b=b, i=i, ib=ib, p=p, mode=mode), "index")

    def mixed(self) -> None:
        template = self.draw(st.sampled_from(MIXED))
        self.emit(template.format(a=self.pick(), b=self.pick()), "mixed")

    def arange(self) -> None:
        kind = self.draw(st.sampled_from(["count_t0", "count_t0", "count_py"]))
        n = self.arg(kind, "n")
        self.extras.append(f"rt.arange({n})")
        self.prog.features.add(f"arange_{kind}")

    def custom(self) -> None:
        """A ``custom_vjp`` or ``custom_jvp`` function of one pool value, whose rule is the
        true derivative of its body, defined inside ``f`` and closing over a constant made
        in the program or a module-level one; sometimes written through a view right after."""
        draw = self.draw
        body, deriv, needs_c = draw(st.sampled_from(CUSTOM_BODIES))
        c = "None"
        if needs_c:
            where = draw(st.sampled_from(["const", "global", "global"]))
            if where == "global" and self.knobs.allows("read_global"):
                c = self.global_()
            elif self.consts and draw(st.booleans()):
                c = str(draw(st.sampled_from(self.consts)))
            else:
                self.const()
                c = self.consts[-1]
            self.read.add(c)
        name = self.fresh("cf")
        kinds = [k for k in ("vjp", "vjp", "jvp") if f"custom_{k}" not in OFF] or ["jvp"]
        kind = draw(st.sampled_from(kinds))
        lines = self.prog.lines
        lines.append(f"@autodiff.custom_{kind}")
        lines.append(f"def {name}(u):")
        lines.append(f"    return {body.format(u='u', c=c)}")
        if kind == "vjp":
            if needs_c and draw(st.booleans()):  # the constant is a residual
                lines.append(f"{name}.defvjp(")
                lines.append(f"    lambda u: ({body.format(u='u', c=c)}, (u, {c})),")
                lines.append(f"    lambda res, g: (g * ({deriv.format(u='res[0]', c='res[1]')}),),")
                lines.append(")")
                self.prog.features.add("custom_vjp_const_residual")
            else:  # the rule closes over the constant
                lines.append(f"{name}.defvjp(")
                lines.append(f"    lambda u: ({body.format(u='u', c=c)}, u),")
                lines.append(f"    lambda u, g: (g * ({deriv.format(u='u', c=c)}),),")
                lines.append(")")
        else:
            lines.append(f"{name}.defjvp(")
            lines.append(f"    lambda p, t: ({body.format(u='p[0]', c=c)}, t[0] * ({deriv.format(u='p[0]', c=c)}))")
            lines.append(")")
        self.emit(f"{name}({self.pick()})", f"custom_{kind}")
        if c in self.consts and self.knobs.allows("write") and draw(st.integers(0, 2)) == 0:
            self.write(target=c)

    def step(self, draw: Any) -> str:
        """One step, drawn with ``draw`` (a span of its own, so that the shrinker can drop it)."""
        outer, self.draw = self.draw, draw
        try:
            kind = str(draw(st.sampled_from(self.menu)))
            getattr(self, kind)()
            return kind
        finally:
            self.draw = outer

    def build(self) -> Program:
        knobs, draw = self.knobs, self.draw
        self.menu = knobs.menu()
        for _ in range(0 if "custom" in OFF else knobs.min_custom):
            self.custom()
        steps = st.composite(lambda d: self.step(d))()
        draw(st.lists(steps, min_size=knobs.min_steps, max_size=knobs.max_steps))
        # the last value, and the ones drawn as outputs
        outs = [self.pool[-1], *(name for name in self.outputs if name != self.pool[-1])]
        self.prog.lines.append(f"return [{', '.join(outs + self.extras)}]")
        return self.prog


@st.composite
def programs(draw: Any, knobs: Knobs = Knobs()) -> Program:
    shape = draw(st.sampled_from([(3,), (2, 3)]))
    policy = draw(st.sampled_from(rt.policies()))
    return _Builder(draw, knobs, shape, policy).build()


# -- arguments -----------------------------------------------------------------------------------


def _x_values(shape: tuple[int, ...]) -> st.SearchStrategy[np.ndarray]:
    size = int(np.prod(shape))
    return st.lists(st.integers(-20, 20), min_size=size, max_size=size).map(
        lambda v: (np.array(v, np.float64) / 10).reshape(shape)
    )


def draw_call(data: Any, prog: Program, first: bool, label: str, fixed: dict[str, Any] | None = None) -> list[Any]:
    """One call's arguments: Tensors (or Python numbers for the ``py`` kinds). Index vectors are
    in bounds on the ``first`` call, and may be out of bounds on the others."""
    m = prog.shape[0]
    values: list[Any] = []
    for a in prog.args:
        if fixed is not None and a.name in fixed:
            values.append(fixed[a.name])
        elif a.kind == "x":
            values.append(rt.asarray(data.draw(_x_values(prog.shape), label=f"{label} x")))
        elif a.kind in ("py", "t0"):
            p = data.draw(st.integers(5, 100), label=f"{label} {a.name}") / 100
            values.append(p if a.kind == "py" else rt.asarray(np.float64(p)))
        elif a.kind == "index":
            oob = not first and data.draw(st.booleans(), label=f"{label} {a.name} may be out of bounds")
            low, high = (-m - 2, m + 1) if oob else (-m, m - 1)
            ints = data.draw(st.lists(st.integers(low, high), min_size=m, max_size=m), label=f"{label} {a.name}")
            values.append(rt.asarray(np.array(ints, np.int64)))
        else:
            n = data.draw(st.integers(1, 4), label=f"{label} {a.name}")
            values.append(n if a.kind == "count_py" else rt.asarray(np.int64(n)))
    return values


def fresh(args: Sequence[Any]) -> list[Any]:
    """Copies (eager programs write into their arguments' memory)."""
    return [rt.asarray(np.array(a.numpy(), copy=True)) if isinstance(a, rt.Tensor) else a for a in args]


# -- outcomes ------------------------------------------------------------------------------------


@dataclass
class Outcome:
    values: list[tuple[str, np.ndarray]] | None = None
    error: BaseException | None = None

    def __repr__(self) -> str:
        if self.error is not None:
            return f"raised {describe(self.error)}"
        assert self.values is not None
        return "[" + ", ".join(f"{d}{list(v.shape)} {v.tolist()}" for d, v in self.values) + "]"


def _as_values(out: Any) -> list[tuple[str, np.ndarray]]:
    items = out if isinstance(out, (list, tuple)) else [out]
    result = []
    for item in items:
        t = item if isinstance(item, rt.Tensor) else rt.asarray(item)
        result.append((t.dtype.name, np.array(t.numpy(), copy=True)))
    return result


def _mark_numpy_write(err: BaseException) -> None:
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None and tb.tb_frame.f_code.co_filename.startswith("<program"):
        line = linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        if "# NumPy write" in line:
            err.at_numpy_write = True  # type: ignore[attr-defined]


def attempt(fn: Callable[..., Any], *args: Any) -> Outcome:
    """``fn(*args)``'s values, or the exception it raised."""
    try:
        with np.errstate(all="ignore"):
            out = fn(*args)
        return Outcome(values=_as_values(out))
    except Exception as err:  # compared below: castwise's errors are allowed
        _mark_numpy_write(err)
        return Outcome(error=err)


def tolerance(dtype: str) -> float:
    return 2e-5 if dtype in ("float32", "complex64") else 1e-9


def assert_agrees(want: Outcome, got: Outcome, what: str) -> None:
    """``got`` (a transform) agrees with ``want`` (eager, or a loop of eager calls)."""
    note(f"{what}: eager {want!r}; transform {got!r}")
    if want.error is not None:
        if not is_castwise_error(want.error):
            raise AssertionError(f"{what}: eager raised a non-castwise error {describe(want.error)}") from want.error
        if got.error is None:
            raise AssertionError(f"{what}: eager raised {describe(want.error)}, the transform returned {got!r}")
        if not is_castwise_error(got.error):
            raise AssertionError(f"{what}: the transform raised a non-castwise error") from got.error
        event(f"{what}: both raised")
        return
    if got.error is not None:
        if not is_castwise_error(got.error):
            raise AssertionError(f"{what}: the transform raised a non-castwise error") from got.error
        event(f"{what}: the transform raised {type(got.error).__name__}")
        return
    assert want.values is not None and got.values is not None
    assert len(want.values) == len(got.values), f"{what}: {len(got.values)} outputs, eager has {len(want.values)}"
    for k, ((wd, wv), (gd, gv)) in enumerate(zip(want.values, got.values, strict=True)):
        assert wd == gd, f"{what}: output {k} is {gd}, eager's is {wd}\neager {want!r}\ntransform {got!r}"
        assert wv.shape == gv.shape, f"{what}: output {k} has shape {gv.shape}, eager's {wv.shape}"
        if wv.dtype.kind in "fc":
            tol = tolerance(wd)
            np.testing.assert_allclose(gv, wv, rtol=tol, atol=tol, equal_nan=True, err_msg=f"{what}: output {k}")
        else:
            np.testing.assert_array_equal(gv, wv, err_msg=f"{what}: output {k}")
    event(f"{what}: equal")


@contextmanager
def policy_of(prog: Program) -> Iterator[None]:
    with rt.use_policy(prog.policy):
        yield


def write_globals(data: Any, namespace: dict[str, Any], prog: Program, label: str) -> None:
    """Write module-level constants through a view (castwise ticks their version counter)."""
    for name in prog.globals_:
        if "global_writes" not in OFF and data.draw(st.booleans(), label=f"{label}: write {name} through a view"):
            view = namespace[name].reshape(-1)
            try:
                view += 0.5
            except rt.InPlaceError:
                pass  # refused: nothing was written
            else:
                event("a module-level constant was written between calls")


class _Narrowing:
    """Mixin: two different float dtypes promote to the narrower one."""

    def promote_types(self, a: rt.DType, b: rt.DType) -> rt.DType:
        if a is not b and a.kind == "float" and b.kind == "float":
            return a if a.bits <= b.bits else b
        return super().promote_types(a, b)  # type: ignore[misc, no-any-return]


@contextmanager
def reregistrations() -> Iterator[Callable[[str], None]]:
    """``replace(name)`` registers a replacement policy under ``name`` (mixed floats promote to
    the narrower one); every original comes back at the end."""
    originals: dict[str, Policy] = {}

    def replace(name: str) -> None:
        original = originals.setdefault(name, get_policy_object(name))
        replacement = type(f"Narrowing{type(original).__name__}", (_Narrowing, type(original)), {})
        register_policy(replacement())

    try:
        yield replace
    finally:
        for original in originals.values():
            register_policy(original)


# -- finite differences --------------------------------------------------------------------------


def _weights(shape: tuple[int, ...], k: int) -> np.ndarray:
    return np.random.default_rng(k).uniform(0.5, 1.5, shape)


def float_outputs(out: Any) -> list[rt.Tensor]:
    items = out if isinstance(out, (list, tuple)) else [out]
    return [t for t in items if isinstance(t, rt.Tensor) and t.dtype.kind == "float"]


def loss_of(f: Callable[..., Any]) -> Callable[..., Any]:
    """``sum_k sum(out_k * w_k)`` over ``f``'s float outputs, as castwise ops."""

    def loss(x: Any, *rest: Any) -> Any:
        total: Any = rt.asarray(np.float64(0.0))
        for k, o in enumerate(float_outputs(f(x, *rest))):
            total = total + (o * _weights(o.shape, k)).sum()
        return total

    return loss


def _eager_loss(loss: Callable[..., Any], x: np.ndarray, rest: Sequence[Any]) -> float:
    with np.errstate(all="ignore"):
        return float(loss(rt.asarray(x.copy()), *fresh(rest)).item())


#: the step of the central differences
STEP = 1e-6


def _smooth(up: np.ndarray, mid: np.ndarray, down: np.ndarray) -> bool:
    """The one-sided differences agree: no kink or jump within a step (at a kink the central
    difference averages the two sides, where castwise, as JAX, takes one)."""
    forward, backward = (up - mid) / STEP, (mid - down) / STEP
    if not (np.all(np.isfinite(forward)) and np.all(np.isfinite(backward))):
        return False
    return bool(np.all(np.abs(forward - backward) <= 1e-4 * (1 + np.abs(forward + backward))))


def finite_difference_gradient(loss: Callable[..., Any], x: np.ndarray, rest: Sequence[Any]) -> np.ndarray | None:
    """Central differences of the eager ``loss`` at ``x``; ``None`` where it is not smooth there
    (the one-sided differences disagree in some coordinate) or not finite."""
    mid = _eager_loss(loss, x, rest)
    if not np.isfinite(mid):
        return None
    g = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[j] += STEP
        down[j] -= STEP
        f_up, f_down = _eager_loss(loss, up, rest), _eager_loss(loss, down, rest)
        if not _smooth(np.array(f_up), np.array(mid), np.array(f_down)):
            return None
        g[j] = (f_up - f_down) / (2 * STEP)
    return g


def assert_gradient(got: Outcome, want: np.ndarray | None, eager: Outcome, what: str) -> None:
    """``got`` is the finite-difference gradient ``want``, or a castwise error."""
    note(f"{what}: finite differences {None if want is None else want.tolist()}; transform {got!r}")
    if eager.error is not None:
        assert_agrees(eager, got, what)
        return
    if got.error is not None:
        if not is_castwise_error(got.error):
            raise AssertionError(f"{what}: the transform raised a non-castwise error") from got.error
        event(f"{what}: raised {type(got.error).__name__}")
        return
    if want is None:
        event(f"{what}: not smooth here, not compared")
        return
    assert got.values is not None
    (_, g), *_ = got.values
    np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5, err_msg=f"{what} against finite differences")
    event(f"{what}: equal")


def assert_tangents(got: Outcome, want: list[np.ndarray] | None, what: str) -> None:
    """``got`` (one tangent per float output) is ``want`` (directional differences), or a
    castwise error."""
    note(f"{what}: finite differences {None if want is None else [w.tolist() for w in want]}; transform {got!r}")
    if got.error is not None:
        if not is_castwise_error(got.error):
            raise AssertionError(f"{what}: the transform raised a non-castwise error") from got.error
        event(f"{what}: raised {type(got.error).__name__}")
        return
    if want is None:
        event(f"{what}: not smooth here, not compared")
        return
    assert got.values is not None and len(got.values) == len(want), f"{what}: {got!r}"
    for k, ((_, g), w) in enumerate(zip(got.values, want, strict=True)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"{what}: output {k} against finite differences")
    event(f"{what}: equal")


# -- the properties -------------------------------------------------------------------------------

JIT_KNOBS = Knobs(weights=(("mixed", 2), ("parametric", 4)))


@settings(max_examples=examples(50), **SETTINGS)  # type: ignore[arg-type]
@given(prog=programs(JIT_KNOBS), data=st.data())
def test_jit_agrees_with_eager(prog: Program, data: Any) -> None:
    """``autodiff.jit(f)`` called three times with arguments of the same shapes == eager ``f``;
    between calls, module-level constants may be written through a view and the policy
    re-registered under its own name."""
    f, namespace = prog.build()
    jitted = autodiff.jit(f)
    reregister = 0  # before which call (0: never)
    if "mixed" in prog.features and "reregister" not in OFF:
        reregister = data.draw(st.integers(0, 2), label=f"re-register {prog.policy!r} before call (0: never)")
    with reregistrations() as replace, policy_of(prog):
        for k in range(3):
            args = draw_call(data, prog, first=k == 0, label=f"call {k}")
            if k:
                write_globals(data, namespace, prog, f"before call {k}")
                if k == reregister:
                    replace(prog.policy)
                    event("policy re-registered")
            want = attempt(f, *fresh(args))
            got = attempt(jitted, *fresh(args))
            assert_agrees(want, got, f"jit call {k}")


VMAP_KNOBS = Knobs(weights=(("read_global", 0),))


@settings(max_examples=examples(100), **SETTINGS)  # type: ignore[arg-type]
@given(prog=programs(VMAP_KNOBS), data=st.data())
def test_vmap_agrees_with_a_loop(prog: Program, data: Any) -> None:
    """``autodiff.vmap(f)`` over a batch of three == eager ``f`` on each example, stacked
    (Python-number arguments are not mapped; the first example's indices are in bounds)."""
    f, _ = prog.build()
    unmapped = [a for a in prog.args if a.kind in ("py", "count_py")]
    fixed = dict(zip([a.name for a in unmapped], draw_call(data, _only(prog, unmapped), True, "unmapped"), strict=True))
    batch = [draw_call(data, prog, first=b == 0, label=f"example {b}", fixed=fixed) for b in range(3)]
    with policy_of(prog):
        per_example = [attempt(f, *fresh(args)) for args in batch]
        want = _stack(per_example)
        stacked = [
            fixed[a.name] if a.name in fixed else rt.asarray(np.stack([args[j].numpy() for args in batch]))
            for j, a in enumerate(prog.args)
        ]
        in_axes = tuple(None if a.name in fixed else 0 for a in prog.args)
        got = attempt(autodiff.vmap(f, in_axes=in_axes), *fresh(stacked))
    assert_agrees(want, got, "vmap")


def _only(prog: Program, args: list[Arg]) -> Program:
    return Program(prog.policy, prog.shape, args, prog.lines)


def _stack(per_example: list[Outcome]) -> Outcome:
    """The outcomes of a loop: the first error, or the stacked values. Examples whose outputs do
    not stack (different shapes or dtypes) leave no batched value: the transform must raise."""
    for outcome in per_example:
        if outcome.error is not None:
            return outcome
    values = [o.values for o in per_example]
    assert all(v is not None for v in values)
    stacked = []
    for outputs in zip(*values, strict=True):  # type: ignore[misc]
        dtypes = {d for d, _ in outputs}
        shapes = {v.shape for _, v in outputs}
        if len(dtypes) > 1 or len(shapes) > 1:
            # eager cannot batch these: the transform must refuse (a castwise error)
            return Outcome(error=rt.ShapeError(f"the examples' outputs do not stack: {dtypes}, {shapes}"))
        stacked.append((outputs[0][0], np.stack([v for _, v in outputs])))
    return Outcome(values=stacked)


TRACE_KNOBS = Knobs(weights=(("read_global", 0),))


@settings(max_examples=examples(100), **SETTINGS)  # type: ignore[arg-type]
@given(prog=programs(TRACE_KNOBS), data=st.data())
def test_trace_evaluate_agrees(prog: Program, data: Any) -> None:
    """``rt.evaluate(rt.trace(f, *first), *args)`` == eager ``f(*args)``, for the first arguments
    and two more sets of the same shapes."""
    f, _ = prog.build()
    calls = [draw_call(data, prog, first=k == 0, label=f"call {k}") for k in range(3)]
    with policy_of(prog):
        try:
            with np.errstate(all="ignore"):
                graph = rt.trace(f, *fresh(calls[0]))
        except Exception as err:
            assert_agrees(attempt(f, *fresh(calls[0])), Outcome(error=err), "trace")
            return
        for k, args in enumerate(calls):
            want = attempt(f, *fresh(args))
            got = attempt(rt.evaluate, graph, *fresh(args))
            assert_agrees(want, got, f"evaluate call {k}")


GRAD_KNOBS = Knobs(
    weights=(("mixed", 0), ("arange", 0), ("unary", 2), ("binary", 2), ("write", 4), ("numpy_write", 4), ("custom", 2)),
    scaling_writes=False,
)


@settings(max_examples=examples(40), **SETTINGS)  # type: ignore[arg-type]
@given(prog=programs(GRAD_KNOBS), data=st.data())
def test_grad_agrees_with_finite_differences(prog: Program, data: Any) -> None:
    """``autodiff.grad`` of a weighted sum of ``f``'s outputs, and ``jit`` of that gradient
    called three times (module-level constants written through a view between calls), ==
    central differences of the eager function."""
    f, namespace = prog.build()
    loss = loss_of(f)
    jitted = autodiff.jit(autodiff.grad(loss))
    with policy_of(prog):
        for k in range(3):
            args = draw_call(data, prog, first=k == 0, label=f"call {k}")
            if k:
                write_globals(data, namespace, prog, f"before call {k}")
            x, rest = args[0].numpy(), args[1:]
            eager = attempt(loss, *fresh(args))
            want = finite_difference_gradient(loss, x, rest) if eager.error is None else None
            if k == 0:
                got = attempt(autodiff.grad(loss), *fresh(args))
                assert_gradient(got, want, eager, "grad")
            got = attempt(jitted, *fresh(args))
            assert_gradient(got, want, eager, f"jit(grad) call {k}")


@settings(max_examples=examples(60), **SETTINGS)  # type: ignore[arg-type]
@given(prog=programs(GRAD_KNOBS), data=st.data())
def test_vjp_and_jvp_agree_with_finite_differences(prog: Program, data: Any) -> None:
    """``autodiff.vjp`` with the loss's weights as cotangents == central differences of the
    loss; ``autodiff.jvp`` along a direction == central differences of each float output."""
    f, _ = prog.build()
    loss = loss_of(f)
    args = draw_call(data, prog, first=True, label="call")
    x, rest = args[0].numpy(), args[1:]
    with policy_of(prog):
        eager = attempt(loss, *fresh(args))
        want = finite_difference_gradient(loss, x, rest) if eager.error is None else None

        def of_x(t: Any) -> list[rt.Tensor]:
            return float_outputs(f(t, *fresh(rest)))

        def pull_back() -> Any:
            outs, vjp_fn = autodiff.vjp(of_x, rt.asarray(x.copy()))
            return vjp_fn([_weights(o.shape, k) for k, o in enumerate(outs)])[0]

        def push_forward() -> Any:
            return autodiff.jvp(of_x, (rt.asarray(x.copy()),), (rt.asarray(direction),))[1]

        assert_gradient(attempt(pull_back), want, eager, "vjp")
        direction = np.random.default_rng(1).uniform(-1.0, 1.0, x.shape)
        eager_outs = attempt(of_x, rt.asarray(x.copy()))
        got = attempt(push_forward)
        if eager_outs.error is not None:
            assert_agrees(eager_outs, got, "jvp")
            return
        assert_tangents(got, _directional_differences(f, x, rest, direction), "jvp")


def _directional_differences(
    f: Callable[..., Any], x: np.ndarray, rest: Sequence[Any], direction: np.ndarray
) -> list[np.ndarray] | None:
    def outs(at: np.ndarray) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            # a copy: the program may write into its argument (a read-only array would refuse the
            # write, and a write into ``x`` itself would move the points of the later differences)
            return [np.array(o.numpy()) for o in float_outputs(f(rt.asarray(at.copy()), *fresh(rest)))]

    up, mid, down = outs(x + STEP * direction), outs(x), outs(x - STEP * direction)
    if not all(_smooth(u, m, d) for u, m, d in zip(up, mid, down, strict=True)):
        return None
    return [(u - d) / (2 * STEP) for u, d in zip(up, down, strict=True)]


@settings(max_examples=examples(60), **SETTINGS)  # type: ignore[arg-type]
@given(prog=programs(GRAD_KNOBS), data=st.data())
def test_backward_agrees_with_finite_differences(prog: Program, data: Any) -> None:
    """The eager tape: ``loss.backward()`` on a ``requires_grad`` leaf leaves the central
    differences of the eager loss in ``.grad``."""
    f, _ = prog.build()
    loss = loss_of(f)
    args = draw_call(data, prog, first=True, label="call")
    x, rest = args[0].numpy(), args[1:]
    with policy_of(prog):
        eager = attempt(loss, *fresh(args))
        want = finite_difference_gradient(loss, x, rest) if eager.error is None else None

        def tape() -> Any:
            leaf = rt.asarray(x.copy(), requires_grad=True)
            total = loss(leaf, *fresh(rest))
            if total.node is not None:  # else nothing depends on the leaf
                total.backward()
            return leaf.grad if leaf.grad is not None else rt.zeros_like(leaf.detach())

        assert_gradient(attempt(tape), want, eager, "backward")


CUSTOM_KNOBS = Knobs(
    weights=(("mixed", 0), ("arange", 0), ("index", 1), ("parametric", 1)),
    scaling_writes=False,
    min_custom=1,
    max_steps=5,
)


@settings(max_examples=examples(40), **SETTINGS)  # type: ignore[arg-type]
@given(prog=programs(CUSTOM_KNOBS), data=st.data())
def test_custom_rules_agree(prog: Program, data: Any) -> None:
    """Programs calling ``custom_vjp`` / ``custom_jvp`` functions whose rule is the true
    derivative: ``jit`` on three calls (module-level constants written through a view between
    them) == eager, and ``jit(grad)`` == finite differences; ``grad`` == finite differences;
    ``vmap`` == a loop; ``grad`` of the summed ``vmap`` == finite differences per example."""
    f, namespace = prog.build()
    loss = loss_of(f)
    with policy_of(prog):
        calls = [draw_call(data, prog, first=k == 0, label=f"call {k}") for k in range(3)]
        jitted, jitted_grad = autodiff.jit(f), autodiff.jit(autodiff.grad(loss))
        for k, call in enumerate(calls):
            if k:
                write_globals(data, namespace, prog, f"before call {k}")
            assert_agrees(attempt(f, *fresh(call)), attempt(jitted, *fresh(call)), f"jit call {k}")
            eager = attempt(loss, *fresh(call))
            want = finite_difference_gradient(loss, call[0].numpy(), call[1:]) if eager.error is None else None
            assert_gradient(attempt(jitted_grad, *fresh(call)), want, eager, f"jit(grad) call {k}")

        args = calls[0]
        eager = attempt(loss, *fresh(args))
        want = finite_difference_gradient(loss, args[0].numpy(), args[1:]) if eager.error is None else None
        assert_gradient(attempt(autodiff.grad(loss), *fresh(args)), want, eager, "grad")

        # vmap, and grad of the summed vmap, over the three calls' arguments as a batch
        in_axes = tuple(0 if isinstance(a, rt.Tensor) else None for a in args)
        batch = [[a if axis is None else b for a, b, axis in zip(args, call, in_axes, strict=True)] for call in calls]
        stacked = [
            a if axis is None else rt.asarray(np.stack([c[j].numpy() for c in batch]))
            for j, (a, axis) in enumerate(zip(args, in_axes, strict=True))
        ]  # Python numbers are not mapped: the first call's value for the whole batch
        per_example = [attempt(f, *fresh(c)) for c in batch]
        assert_agrees(_stack(per_example), attempt(autodiff.vmap(f, in_axes=in_axes), *fresh(stacked)), "vmap")

        def summed(xs: Any, *more: Any) -> Any:
            return autodiff.vmap(loss, in_axes=in_axes)(xs, *more).sum()

        got = attempt(autodiff.grad(summed), *fresh(stacked))
        failed = next((o for o in (attempt(loss, *fresh(c)) for c in batch) if o.error is not None), None)
        if failed is not None:
            assert_agrees(failed, got, "grad(vmap)")
            return
        per_example_fd = [finite_difference_gradient(loss, c[0].numpy(), c[1:]) for c in batch]
        want_batch = None if any(g is None for g in per_example_fd) else np.stack(per_example_fd)  # type: ignore[arg-type]
        assert_gradient(got, want_batch, Outcome(values=[]), "grad(vmap)")


def test_the_error_classifier() -> None:
    """castwise's own errors count; NumPy's from inside castwise do not."""
    with rt.use_policy("numpy"):
        taken = attempt(rt.take, rt.asarray(np.arange(3.0)), rt.asarray(np.array([5])))
    assert taken.error is not None and is_castwise_error(taken.error)
    numpy_error = attempt(np.take, np.arange(3.0), [5])
    assert numpy_error.error is not None and not is_castwise_error(numpy_error.error)
    assert not is_castwise_error(AssertionError("castwise"))
