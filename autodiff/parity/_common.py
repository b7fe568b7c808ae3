"""What the parity sweep's modules share: the swept dtypes, JAX (imported lazily), input
generation, the ``Spec`` and ``Case`` types, and the JAX side of a case.
"""

from __future__ import annotations

import contextlib
import functools
import os
import warnings
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import ml_dtypes
import numpy as np

from runtime.core import dtypes as dt
from runtime.core import ops
from runtime.core.dtypes import DType
from runtime.core.plan import PLAN_RULES, PlanInput, plan, rewrite
from runtime.core.promotion import Operand
from runtime.core.tensor import Tensor

# -- what is swept ------------------------------------------------------------------------------


#: The dtypes every op is tried in (besides the float8 family).
CORE_DTYPES: Final[tuple[DType, ...]] = (
    dt.bool_, dt.int8, dt.int16, dt.int32, dt.int64, dt.uint8, dt.uint16, dt.uint32, dt.uint64,
    dt.bfloat16, dt.float16, dt.float32, dt.float64, dt.complex64, dt.complex128,
)  # fmt: skip
#: The float8 family: each op is tried in them same-dtype, and mixed where a policy's plan mixes them.
FLOAT8_DTYPES: Final[tuple[DType, ...]] = (
    dt.float8_e3m4, dt.float8_e4m3, dt.float8_e4m3fn, dt.float8_e4m3fnuz, dt.float8_e4m3b11fnuz,
    dt.float8_e5m2, dt.float8_e5m2fnuz, dt.float8_e8m0fnu,
)  # fmt: skip
#: The 2-bit integers, which XLA computes (it cannot compile int1/uint1, and JAX has no
#: complex32/bcomplex32, so those are checked against other oracles in the test suite).
NARROW_INT_DTYPES: Final[tuple[DType, ...]] = (dt.int2, dt.uint2)
DEFAULT_DTYPES: Final[tuple[DType, ...]] = CORE_DTYPES + FLOAT8_DTYPES + NARROW_INT_DTYPES
DEFAULT_POLICIES: Final[tuple[str, ...]] = ("jax", "torch", "numpy", "neuron", "kael")
#: The checks, in report order.
CHECKS: Final[tuple[str, ...]] = ("agree", "primal", "replay", "jvp", "vjp", "vmap")
#: The case budget of ``--quick``, split evenly over the op specs (4 each for 66 specs: 264 cases).
QUICK_CASES: Final = 320


@dataclass(frozen=True, slots=True)
class PyScalar:
    """A Python scalar operand (weakly typed in most policies) of ``kind``."""

    kind: str  # "bool" | "int" | "float" | "complex"

    @property
    def short(self) -> str:
        return f"py-{self.kind}"

    @property
    def name(self) -> str:
        return self.short


#: What fills one operand slot of a case: a dtype, or a Python scalar kind.
Slot = DType | PyScalar

PY_SCALARS: Final[tuple[PyScalar, ...]] = tuple(PyScalar(k) for k in ("bool", "int", "float", "complex"))
#: The value each Python scalar operand takes: inside every input domain (positive,
#: non-zero, a small exponent), and not on the float grid (``_MAGNITUDES``), so it
#: never ties with a tensor operand of max/min/clamp.
PY_VALUES: Final[dict[str, bool | int | float | complex]] = {
    "bool": True,
    "int": 2,
    "float": 0.6875,
    "complex": 0.6875 + 0.4375j,
}


def slot_name(slot: Slot) -> str:
    """``f32``, ``py-int``: how a slot appears in case ids and reports."""
    return slot.short


# -- JAX, imported lazily -------------------------------------------------------------------------


@functools.cache
def _jax_modules() -> tuple[Any, Any, Any]:
    """``(jax, jax.numpy, jax.lax)``; imported on first use so ``import autodiff`` needs no JAX."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    return jax, jnp, lax


def default_compile_cache() -> str:
    """Where ``castwise parity`` keeps JAX's compiled executables between runs:
    ``$CASTWISE_PARITY_CACHE``, else ``castwise/parity-xla`` under the user's cache directory."""
    env = os.environ.get("CASTWISE_PARITY_CACHE")
    if env is not None:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "castwise", "parity-xla")


def use_compile_cache(path: str) -> None:
    """Keep every executable JAX compiles for the sweep in its persistent cache at ``path``.

    The reference side compiles one small executable per primitive and signature;
    those compiles are most of a run's time, and they are the same from run to
    run and across the workers of one run (which share the directory). JAX's
    thresholds normally skip executables that compile in under a second, which
    is all of them here, so both are set to zero. The cache is keyed by the
    lowered program, the compile options and the jax/jaxlib versions: what runs is
    what a fresh compile would run.
    """
    from jax.experimental.compilation_cache import compilation_cache

    jax = _jax_modules()[0]
    os.makedirs(path, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    # JAX settles whether (and where) to cache at its first compile: a process that compiled
    # before this call (a test session) must look again
    compilation_cache.reset_cache()


def _jnp() -> Any:
    return _jax_modules()[1]


def _lax() -> Any:
    return _jax_modules()[2]


@contextlib.contextmanager
def _jax_x64() -> Iterator[None]:
    """JAX with 64-bit types on: the ``jax`` policy is defined against x64 JAX."""
    jax = _jax_modules()[0]
    with jax.enable_x64(True), jax.disable_jit(), warnings.catch_warnings():
        # JAX warns when a convert drops an imaginary part; castwise does the same silently.
        warnings.simplefilter("ignore")
        yield


# -- inputs ----------------------------------------------------------------------------------------


#: Positive magnitudes of the float grid: m * 2**e with two mantissa bits, so every
#: value is exact in every float8 format that has mantissa bits (and float8_e8m0fnu
#: keeps the powers of two). Integers are left out so a float operand never ties with
#: an integer one after promotion; splitting the grid by operand position
#: (``_positional``) keeps float operands of max/min/clamp apart from each other.
_MAGNITUDES: Final = np.array(
    sorted({m * 2.0**e for m in (1.0, 1.25, 1.5, 1.75) for e in range(-6, 2)} - {1.0, 2.0, 3.0})
)
_MAGNITUDES.setflags(write=False)


def _component(d: DType) -> DType:
    """The real dtype of a complex dtype's parts (any other dtype is its own)."""
    return dt.COMPLEX_PART.get(d, d)


@functools.cache
def _float_grid(d: DType, domain: str) -> np.ndarray:
    """The grid values exactly representable in real float ``d`` that lie in ``domain``.

    Formats of 8 bits or fewer keep to magnitudes in [0.5, 1.75]: their range ends
    at 15.5 (float8_e3m4) or 30 (float8_e4m3b11fnuz), and the intermediate values of
    a derivative rule (x / y**2, a product of four values) must not overflow, or the
    comparison would be about where each library overflows rather than about the rule.
    float8_e8m0fnu holds powers of two only (no zero, no sign): it gets 1/8 .. 2.
    """
    if d is dt.float8_e8m0fnu:
        return np.array([0.125, 0.25, 0.5, 1.0, 2.0])
    mags = _MAGNITUDES
    if d.bits <= 8:
        mags = mags[(mags >= 0.5) & (mags <= 1.75)]
    if domain == "pos":
        vals = mags[mags >= 0.25]
    else:
        if domain == "exponent":
            mags = mags[(mags >= 0.25) & (mags <= 1.75)]
        vals = np.concatenate([-mags[mags >= 0.125], mags[mags >= 0.125]])
    exact = vals.astype(d.storage).astype(np.float64) == vals
    out = np.sort(vals[exact])
    out.setflags(write=False)
    return out


def _int_grid(d: DType, domain: str) -> np.ndarray:
    """Small integers of ``domain`` (products and powers of them stay far from overflow)."""
    if d.kind == "bool":
        return np.array([True]) if domain in ("pos", "nonzero") else np.array([False, True])
    span = range(0, 6) if d.kind == "uint" else range(-3, 4)
    values = {
        "any": list(span),
        "pos": [1, 2, 3],
        "nonzero": [v for v in span if v],
        "exponent": [0, 1, 2, 3],
    }[domain]
    if d.bits < 8:  # the 2-bit ints: keep to the values they hold (int2: -2..1, uint2: 0..3)
        info = ml_dtypes.iinfo(d.storage)
        values = [v for v in values if info.min <= v <= info.max]
    return np.array(values)


def _positional(grid: np.ndarray, position: int, positions: int) -> np.ndarray:
    """Every ``positions``-th grid value from ``position``: disjoint values per operand."""
    sub = grid[position::positions] if positions > 1 and len(grid) >= 2 * positions else grid
    return sub


def draw(slot: DType, domain: str, shape: tuple[int, ...], rng: np.random.Generator,
         position: int = 0, positions: int = 1) -> np.ndarray:  # fmt: skip
    """Random operand values of ``shape`` in dtype ``slot`` from input ``domain``.

    Domains: ``any`` (signed, away from 0), ``pos`` (positive; complex: positive
    real part), ``nonzero``, ``exponent`` (small; non-negative for integers).
    Values come from a grid exact in the dtype, so JAX and castwise see the same
    numbers, and from a per-position share of it, so operands never tie.
    """
    if slot.kind in ("bool", "int", "uint"):
        grid = _int_grid(slot, domain)
        return rng.choice(grid, size=shape).astype(slot.storage)
    comp = _component(slot)
    re = rng.choice(_positional(_float_grid(comp, domain), position, positions), size=shape)
    if slot.kind != "complex":
        return np.asarray(re).astype(slot.storage)
    im_grid = _float_grid(comp, "any")
    im = rng.choice(im_grid[np.abs(im_grid) <= 0.75], size=shape)
    return np.asarray(re + 1j * im).astype(slot.storage)


def draw_distinct(slot: DType, shape: tuple[int, int], axis: int, rng: np.random.Generator) -> np.ndarray:
    """Values of a matrix with no repeats along ``axis`` (max/min reductions stay away from ties)."""
    if slot.kind in ("bool", "int", "uint"):
        return draw(slot, "any", shape, rng)  # integers carry no derivative: ties do not matter
    grid = _float_grid(_component(slot), "any")
    groups, size = (shape[0], shape[1]) if axis == 1 else (shape[1], shape[0])
    re = np.stack([rng.choice(grid, size=size, replace=False) for _ in range(groups)])
    re = re if axis == 1 else re.T
    if slot.kind != "complex":
        return np.asarray(re).astype(slot.storage)
    return np.asarray(re + 1j * rng.choice(grid, size=shape)).astype(slot.storage)


def random_like(d: DType, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """A tangent or cotangent: standard normal values rounded to ``d``."""
    if d is dt.float8_e8m0fnu:
        return (2.0 ** rng.integers(-2, 2, size=shape)).astype(d.storage)  # positive powers of two only
    # Narrow formats get smaller directions: their derivative programs must stay in range too.
    data = rng.standard_normal(shape) * (0.5 if d.bits <= 8 else 1.0)
    if d.kind == "complex":
        data = data + 1j * rng.standard_normal(shape)
    return np.asarray(data).astype(d.storage)


def _as_float(x: Any) -> np.ndarray:
    """``x`` in float64, or complex128 when complex: where values are compared."""
    a = np.asarray(x)
    if a.dtype.kind == "c":
        return a.astype(np.complex128)
    return a.astype(np.float64)


# -- the op table ------------------------------------------------------------------------------------

Gen = Callable[[Sequence[Slot], np.random.Generator], list[Any]]


@dataclass(frozen=True)
class Spec:
    """One op under test and how to call it on both sides.

    ``ours(*operands, **kw)`` runs castwise on Tensors / Python scalars;
    ``lax(*operands, **kw)`` is the same-dtype JAX reference (operands already at
    their planned dtypes); ``jnp`` (optional) is the mixed-dtype reference used
    under policy ``jax``. ``kw`` carries ``dtype=`` for ops with a dtype param
    (convert, iota, full): that dtype is the last slot of a case.
    """

    name: str
    op: str
    ours: Callable[..., Any]
    lax: Callable[..., Any]
    operand_names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    #: input domain per operand (see ``draw``)
    domains: tuple[str, ...] = ()
    jnp: Callable[..., Any] | None = None
    #: operands that must share one dtype for the op (mixed-dtype slots vary them)
    promoted: tuple[int, ...] = ()
    #: operands that may be Python scalars
    scalar_ok: tuple[int, ...] = ()
    #: fixed dtype per operand (the select predicate)
    fixed: dict[int, DType] = field(default_factory=dict)
    #: the op's operand list for ``plan``: an int is a spec operand, a DType or PyScalar a closed-over one
    plan_layout: tuple[int | DType | PyScalar, ...] = ()
    #: the dtype param of convert / iota / full is the case's last slot
    dtype_param: bool = False
    #: custom input generator (clamp, reductions, linalg); default: ``draw`` per operand
    gen: Gen | None = None
    #: values (primal) must match JAX exactly for these kinds of the widest operand
    exact: frozenset[str] = frozenset()
    #: validity predicate on the generated operands (rem: away from its jumps); retried
    valid: Callable[[list[Any]], bool] | None = None
    #: with a Python-scalar operand the primal is compared within tolerance, not exactly: XLA's CPU
    #: backend divides by a broadcast scalar as a multiplication by its reciprocal (up to an ulp off)
    scalar_not_exact: bool = False
    #: no forward mode to compare (a custom_vjp call, as in JAX): the sweep checks the VJP only
    reverse_only: bool = False
    #: the policies the spec runs under (empty: every policy of the sweep)
    policies: tuple[str, ...] = ()
    #: compare the values only: an op whose derivative both sides refuse (geqrf, as JAX has no rule)
    values_only: bool = False
    #: a composed function (``rt.lerp``, ``rt.addcdiv``, ...), not one op: the dtypes its operands
    #: take, from the case, in place of ``op``'s plan (``lax`` then computes the function's formula
    #: at them); it raises ``PromotionError`` where the function's library refuses the dtypes
    targets: Callable[[Case], list[DType]] | None = None

    @property
    def opdef(self) -> ops.OpDef:
        return ops.get(self.op)

    @property
    def family(self) -> str:
        return self.opdef.family

    @property
    def differentiable(self) -> bool:
        return self.opdef.differentiable and not self.values_only

    @property
    def arity(self) -> int:
        return len(self.shapes)


@dataclass(frozen=True)
class Case:
    """One sweep case: a spec under a policy with one slot per operand (plus the dtype param)."""

    spec: Spec
    policy: str
    slots: tuple[Slot, ...]

    @property
    def id(self) -> str:
        return f"{self.spec.name}[{','.join(slot_name(s) for s in self.slots)}]@{self.policy}"

    @property
    def operand_slots(self) -> tuple[Slot, ...]:
        return self.slots[:-1] if self.spec.dtype_param else self.slots

    def describe(self) -> str:
        """``add(x:f32[3], y:py-float) under torch``: operands in order, with shapes."""
        parts = []
        for name, slot, shape in zip(self.spec.operand_names, self.operand_slots, self.spec.shapes, strict=True):
            shape_text = "" if isinstance(slot, PyScalar) else "[" + ",".join(map(str, shape)) + "]"
            parts.append(f"{name}:{slot_name(slot)}{shape_text}")
        if self.spec.dtype_param:
            parts.append(f"dtype={slot_name(self.slots[-1])}")
        return f"{self.spec.name}({', '.join(parts)}) under {self.policy}"


# -- references and compositions used by the table --------------------------------------------------


#: Kinds whose primal must be bit-identical to JAX (correctly rounded ops).
_REAL_EXACT: Final = frozenset({"bool", "int", "uint", "float"})
_ALL_EXACT: Final = frozenset({"bool", "int", "uint", "float", "complex"})
_INT_EXACT: Final = frozenset({"bool", "int", "uint"})


def _structural_spec(name: str, op: str, ours: Callable[..., Any], lax_ref: Callable[..., Any],
                     shape: tuple[int, ...], exact: frozenset[str] = _ALL_EXACT,
                     gen: Gen | None = None, domain: str = "any") -> Spec:  # fmt: skip
    """A one-operand op with static params (reductions, reshapes ...), closed over in both references."""
    return Spec(name, op, ours, lax_ref, ("x",), (shape,), (domain,), plan_layout=(0,), exact=exact, gen=gen)


# -- the plan's per-op families and rewrites, and the kael policy ------------------------------------


def _lax_emit(op: ops.OpDef, operands: Sequence[Any], params: dict[str, Any]) -> Any:
    """The jax.lax call for an op a rewrite emits."""
    lax = _lax()
    if op is ops.logical_or:
        return lax.bitwise_or(*operands)
    if op is ops.logical_and:
        return lax.bitwise_and(*operands)
    if op is ops.full:
        return lax.full(params["shape"], params["fill_value"], dt.dtype(params["dtype"]).storage)
    if op is ops.convert:
        return lax.convert_element_type(operands[0], params["new_dtype"].storage)
    if op is ops.round:  # np.round of bool (0 and 1: either rounding method gives them back)
        return lax.round(operands[0], params.get("rounding_method", lax.RoundingMethod.AWAY_FROM_ZERO))
    raise NotImplementedError(f"parity: no jax.lax reference for {op.name} in a rewrite")


def _rewritten_reference(case: Case, targets: Sequence[DType]) -> Callable[..., Any] | None:
    """The JAX reference of an op the plan rewrites: convert to the targets, then the expansion."""
    if not targets:
        return None
    expansion = rewrite(case.spec.op, targets, case.policy)
    if expansion is None:
        return None

    def f(*xs: Any) -> Any:
        return expansion(_lax_emit, [_convert_jax(x, t) for x, t in zip(xs, targets, strict=True)], {})

    return f


# -- documented, deliberate departures from JAX ------------------------------------------------------


def _has(case: Case, *dtypes: DType) -> bool:
    """Whether one of the case's slots is one of ``dtypes``."""
    return any(s in dtypes for s in case.slots)


# -- building the case list ---------------------------------------------------------------------------


def _case_rng(seed: int, *key: Any) -> np.random.Generator:
    """A generator fixed by the seed and a case key: results do not depend on filters or order."""
    text = "|".join(str(k) for k in key)
    return np.random.default_rng([seed, zlib.crc32(text.encode())])


@dataclass
class CheckResult:
    """One check of one case (and one active set for jvp / vjp)."""

    check: str
    ok: bool
    ratio: float = 0.0
    active: tuple[int, ...] | None = None
    message: str = ""
    expected: str = ""
    got: str = ""
    #: the ``KNOWN_FAILURES`` entry this failure is, if any
    known: str = ""
    #: the ``DEPARTURES`` entry that explains this difference from JAX (the check then passes)
    departure: str = ""


def _make_inputs(case: Case, seed: int) -> list[Any]:
    """The case's operands as NumPy arrays / Python scalars, fixed by the seed and the case."""
    spec = case.spec
    rng = _case_rng(seed, "inputs", case.id)
    slots = case.operand_slots
    for _ in range(50):
        if spec.gen is not None:
            values = spec.gen(slots, rng)
        else:
            values = []
            diff_positions = [i for i, s in enumerate(slots) if isinstance(s, DType)]
            for i, (slot, shape) in enumerate(zip(slots, spec.shapes, strict=True)):
                if isinstance(slot, PyScalar):
                    values.append(PY_VALUES[slot.kind])
                    continue
                domain = spec.domains[i] if spec.domains else "any"
                values.append(draw(slot, domain, shape, rng, diff_positions.index(i), len(diff_positions)))
        if spec.valid is None or spec.valid(values):
            return values
    return values


def _plan_input(slot: Slot) -> PlanInput:
    """What eager execution hands ``plan`` for this operand (a Python scalar is a weak Operand)."""
    if isinstance(slot, PyScalar):
        return Operand(None, slot.kind, True)  # type: ignore[arg-type]
    return slot


def _planned(case: Case) -> list[DType]:
    """castwise's plan for the case's operands (raises PromotionError like eager execution)."""
    spec = case.spec
    if spec.targets is not None:
        return spec.targets(case)
    slots = case.operand_slots
    layout_inputs = [_plan_input(slots[e]) if isinstance(e, int) else _plan_input(e) for e in spec.plan_layout]
    targets = plan(spec.op, layout_inputs, case.policy)
    return [targets[k] for k, e in enumerate(spec.plan_layout) if isinstance(e, int)]


def _to_jax(x: Any) -> Any:
    """A JAX array for a NumPy operand; Python scalars stay Python scalars (weak in JAX)."""
    if isinstance(x, np.ndarray):
        return _jnp().asarray(x)
    return x


def _jax_targets(case: Case, operands: Sequence[Any]) -> list[DType]:
    """JAX's own promotion (``jnp.result_type``) for the promoted operands; others keep their dtype."""
    jnp = _jnp()
    spec = case.spec
    promoted = [operands[i] for i in spec.promoted]
    common = dt.dtype(jnp.result_type(*promoted)) if promoted else None
    out = []
    for i, (slot, x) in enumerate(zip(case.operand_slots, operands, strict=True)):
        if i in spec.promoted and common is not None:
            out.append(common)
        else:
            out.append(dt.dtype(jnp.asarray(x).dtype) if isinstance(slot, PyScalar) else slot)
    return out


def _convert_jax(x: Any, target: DType) -> Any:
    """``x`` at its planned dtype on the JAX side: an explicit ``convert_element_type``."""
    jnp, lax = _jnp(), _lax()
    if not hasattr(x, "dtype"):  # a Python scalar: castwise materialises it at its planned dtype
        if isinstance(x, complex) and target.kind != "complex":
            raise TypeError(f"a Python complex cannot become {target.name}")
        return jnp.asarray(x, dtype=target.storage)
    if np.dtype(x.dtype) == target.storage:
        return x
    return lax.convert_element_type(x, target.storage)


def _jax_function(case: Case, operands: Sequence[Any], lax_only: bool = False) -> Callable[..., Any]:
    """The JAX reference for ``case`` as a function of all its operands."""
    spec = case.spec
    kw = {"dtype": case.slots[-1]} if spec.dtype_param else {}
    if case.policy == "jax" and spec.jnp is not None and not lax_only:
        jnp_ref = spec.jnp
        return lambda *xs: jnp_ref(*xs, **kw)
    if case.policy == "jax" and spec.family in PLAN_RULES and spec.targets is None:  # (per-op rules: below)
        targets = _jax_targets(case, operands)
    else:
        targets = _planned(case) if spec.arity else []
    rewritten = None if spec.targets is not None else _rewritten_reference(case, targets)
    if rewritten is not None:
        return rewritten
    lax_ref = spec.lax

    def f(*xs: Any) -> Any:
        return lax_ref(*(_convert_jax(x, t) for x, t in zip(xs, targets, strict=True)), **kw)

    return f


def _outputs(result: Any) -> list[Any]:
    """The outputs of a call as a list (eigh returns two)."""
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _ours_args(case: Case, operands: Sequence[Any], tracked: Sequence[int] = ()) -> list[Any]:
    """castwise operands: fresh Tensors (tracked leaves at ``tracked``) and the Python scalars."""
    out: list[Any] = []
    for i, (slot, x) in enumerate(zip(case.operand_slots, operands, strict=True)):
        if isinstance(slot, PyScalar):
            out.append(x)
        else:
            t = Tensor(np.array(x, copy=True), slot)
            if i in tracked:
                t.requires_grad_()
            out.append(t)
    return out


def _call_ours(case: Case, args: Sequence[Any]) -> list[Tensor]:
    """Run castwise's side of the case (under the caller's policy); its outputs as a list."""
    kw = {"dtype": case.slots[-1]} if case.spec.dtype_param else {}
    return _outputs(case.spec.ours(*args, **kw))


# -- comparing ---------------------------------------------------------------------------------------------


def _eps(d: DType) -> float:
    """Machine epsilon of ``d`` (of its parts, for complex)."""
    return float(ml_dtypes.finfo(_component(d).storage).eps)
