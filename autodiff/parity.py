"""``castwise parity``: the JAX regression sweep.

For every op of the vocabulary, over dtypes (bool, the signed and unsigned
integers, int2/uint2, bfloat16 .. float64, complex64/128 and the float8 family), operand
orders, Python-scalar operands and active sets, the sweep checks castwise
against JAX:

``agree``
    castwise and JAX accept or refuse the same op/dtype combinations. Both
    refusing makes the case *unsupported* (listed, never silently skipped);
    only one refusing is a failure unless it is a documented, deliberate
    departure (``DEPARTURES``; a departure may also explain a documented
    difference in another check of a case both accept).
``primal``
    the eager result has JAX's dtype exactly and its values exactly (integer
    and bool results, and the correctly rounded real ops) or within the
    dtype's tolerance.
``replay``
    the graph recorded while the op ran eagerly (``runtime.graph.collect``)
    verifies (``passes.verify``) and its replay (``runtime.graph.evaluate``)
    equals the eager result bit for bit.
``jvp`` / ``vjp``
    ``autodiff.jvp`` equals ``jax.jvp`` and ``autodiff.vjp`` equals
    ``conj(jax_vjp(conj(ct)))`` (castwise's real-inner-product convention is
    the conjugate of JAX's), for every active set; on the eager tape the
    inactive operands receive no cotangent.

The JAX side: under policy ``jax`` the reference for a promoting op is JAX's
own promotion, the ``jax.numpy`` function applied to the raw mixed-dtype
operands (``jnp.add``, ``jnp.where``, ...; ``jnp.result_type`` + ``jax.lax``
where JAX has no mixed-dtype function with the op's meaning: scatter,
dynamic_update_slice, clamp). Non-promoting ops (unary, reductions,
structural, linalg) are compared with ``jax.lax`` directly, as castwise never
converts their operands. Under any other policy the JAX side applies
castwise's plan (``runtime.plan.plan``) as explicit
``jax.lax.convert_element_type`` calls and then the same-dtype ``jax.lax``
primitive, so kernels and derivative rules are checked against JAX whatever
the lattice.

Bugs the sweep has found and that are not fixed yet are listed in
``KNOWN_FAILURES``: they are reported, but fail the run only with
``--strict``. ``docs/parity.md`` describes the sweep and lists the unsupported
combinations of a full run (``--markdown`` writes that list).

JAX is imported lazily (``import autodiff`` works without it). Everything
here runs eagerly (``jax.disable_jit``): JAX compiles one executable per
primitive and (dtype, shape) signature, and the sweep reuses a handful of
small shapes so those executables are shared across cases; ``--jobs`` runs
each op's cases in one worker process so its signatures compile once.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import itertools
import json
import math
import os
import sys
import time
import warnings
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, TextIO

import ml_dtypes
import numpy as np

import autodiff
from autodiff.record import enable_grad
from autodiff.testing import close_over
from passes import verify
from runtime import dtypes as dt
from runtime import functions as F
from runtime import ops
from runtime.dtypes import DType
from runtime.graph import collect, const_var, evaluate, trace
from runtime.plan import PLAN_RULES, PlanInput, plan, rewrite
from runtime.promotion import Operand, PromotionError, get_policy_object, use_policy
from runtime.shapes import ArityError, GatherDimensionNumbers, KernelDTypeError, OpTypeError, ScatterDimensionNumbers
from runtime.shapes import ShapeError as _ShapeError
from runtime.tensor import Tensor

__all__ = [
    "CHECKS",
    "CORE_DTYPES",
    "DEFAULT_POLICIES",
    "DEPARTURES",
    "FLOAT8_DTYPES",
    "KNOWN_FAILURES",
    "NARROW_INT_DTYPES",
    "Case",
    "CaseResult",
    "CheckResult",
    "Departure",
    "KnownFailure",
    "Options",
    "Report",
    "Spec",
    "build_cases",
    "build_specs",
    "markdown",
    "run_case",
    "run_parity",
]

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

    @property
    def opdef(self) -> ops.OpDef:
        return ops.get(self.op)

    @property
    def family(self) -> str:
        return self.opdef.family

    @property
    def differentiable(self) -> bool:
        return self.opdef.differentiable

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


def _bcast(*xs: Any) -> list[Any]:
    """Broadcast 0-d operands to the common shape (lax.select/clamp want equal shapes)."""
    jnp = _jnp()
    shape = max((jnp.shape(x) for x in xs), key=len)
    return [jnp.broadcast_to(x, shape) if jnp.shape(x) != shape else x for x in xs]


def _lax_pow(x: Any, y: Any) -> Any:
    # castwise accepts int ** int with jnp.power's algorithm (a documented departure
    # from lax.pow, which refuses integer bases): the reference follows the same split.
    jnp = _jnp()
    if jnp.issubdtype(x.dtype, jnp.integer):
        return jnp.power(x, y)
    return _lax().pow(x, y)


def _lax_conj(x: Any) -> Any:
    # castwise conj keeps a real float real (like jnp.conj); lax.conj makes it complex.
    jnp = _jnp()
    if jnp.issubdtype(x.dtype, jnp.floating):
        return x
    return _lax().conj(x)


def _lax_floor_div(x: Any, y: Any) -> Any:
    return _jnp().floor_divide(x, y)  # no lax primitive: castwise follows jnp.floor_divide


def _abs2_ours(v: Tensor) -> Tensor:
    return F.real(F.mul(v, F.conj(v))) if v.dtype.kind == "complex" else F.mul(v, v)


def _abs2_jax(v: Any) -> Any:
    jnp = _jnp()
    return jnp.real(v * jnp.conj(v)) if jnp.iscomplexobj(v) else v * v


def _eigh_ours(a: Tensor) -> tuple[Tensor, Tensor]:
    # Eigenvectors are defined up to a phase per column: compare the gauge-invariant
    # |v|**2 (through the eigenvector derivative) together with the eigenvalues.
    v, w = F.eigh(a)
    return w, _abs2_ours(v)


def _eigh_jax(a: Any) -> tuple[Any, Any]:
    v, w = _lax().linalg.eigh(a)
    return w, _abs2_jax(v)


_ROW_SCATTER = ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                       scatter_dims_to_operand_dims=(0,))  # fmt: skip
_ROW_GATHER = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
_SCATTER_IDX: Final = np.array([[0], [3], [1]], dtype=np.int32)
_SCATTER_ADD_IDX: Final = np.array([[0], [3], [0]], dtype=np.int32)  # a duplicate: updates accumulate
_GATHER_IDX: Final = np.array([[4], [0], [2], [0]], dtype=np.int32)
_MATMUL: Final = (((1,), (0,)), ((), ()))
_BATCHED: Final = (((2,), (1,)), ((0,), (0,)))


def _jax_scatter_dn() -> Any:
    return _lax().ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                          scatter_dims_to_operand_dims=(0,))  # fmt: skip


def _jax_gather_dn() -> Any:
    return _lax().GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))


def _gen_clamp(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
    """lo, x, hi with element 0 inside (lo, hi), element 1 below lo, element 2 above hi, no ties."""
    wanted = ((0, 1, 2), (1, 0, 2), (0, 2, 1))  # rank of (lo, x, hi) for each element
    pools: list[np.ndarray] = []
    for slot in slots:
        if isinstance(slot, PyScalar):
            pools.append(np.array([float(np.real(PY_VALUES[slot.kind]))]))
        elif slot.kind in ("bool", "int", "uint"):
            pools.append(_int_grid(slot, "any").astype(np.float64))
        else:  # the ranks asked for below keep the three operands apart: no positional split needed
            pools.append(_float_grid(_component(slot), "any"))
    columns: list[list[float]] = []
    for ranks in wanted:
        pick = [float(rng.choice(pool)) for pool in pools]
        for _ in range(400):  # rejection sampling: the pools are small grids
            if len(set(pick)) == 3 and tuple(int(r) for r in np.argsort(np.argsort(pick))) == ranks:
                break
            pick = [float(rng.choice(pool)) for pool in pools]
        columns.append(pick)  # integer-only slots may leave ties: they carry no derivative
    out: list[Any] = []
    for i, slot in enumerate(slots):
        if isinstance(slot, PyScalar):
            out.append(PY_VALUES[slot.kind])
        else:
            out.append(np.array([col[i] for col in columns]).astype(slot.storage))
    return out


def _gen_distinct(axis: int) -> Gen:
    """Operands of a max/min reduction over ``axis``: no ties within a reduced group."""

    def gen(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
        slot = slots[0]
        assert isinstance(slot, DType)
        return [draw_distinct(slot, (3, 4), axis, rng)]

    return gen


def _gen_half_ulps(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
    """Rows ``[1, e, e, e]`` with ``e`` half an ulp of 1: summed one by one in the dtype (as
    XLA's CPU reduction does) each ``+ e`` rounds back to 1; a wider accumulator or another
    order gives ``1 + 2e`` or more."""
    slot = slots[0]
    assert isinstance(slot, DType)
    if not slot.is_inexact:
        return [draw(slot, "any", (3, 4), rng)]
    e = _eps(slot) / 2
    rows = np.array([[1.0, e, e, e], [1.0, e, e, e], [0.5, e / 2, e / 2, e / 2]])
    if slot.kind == "complex":
        rows = rows + 1j * rows[::-1]
    return [rows.astype(slot.storage)]


def _herm(a: np.ndarray) -> np.ndarray:
    return (a + np.conj(np.swapaxes(a, -1, -2))) / 2


def _randn(rng: np.random.Generator, shape: tuple[int, ...], complex_: bool) -> np.ndarray:
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if complex_ else x


def _gen_hermitian(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
    """Hermitian 3x3 with well separated eigenvalues, exactly Hermitian in storage."""
    slot = slots[0]
    assert isinstance(slot, DType)
    if not slot.is_inexact:  # symmetric, with distinct eigenvalues (eigenvectors defined up to sign)
        a = [[1, 1, 0], [1, 0, 0], [0, 0, 0]] if slot is dt.bool_ else [[2, 1, 0], [1, 3, 1], [0, 1, 4]]
        return [np.array(a).astype(slot.storage)]
    q, _ = np.linalg.qr(_randn(rng, (3, 3), slot.kind == "complex"))
    a = q @ np.diag([1.0, 2.5, 4.5]) @ np.conj(q.T)
    return [_herm(_herm(a).astype(slot.storage))]


def _gen_spd(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
    slot = slots[0]
    assert isinstance(slot, DType)
    if not slot.is_inexact:
        a = draw(slot, "any", (3, 3), rng)
        return [np.maximum(a, a.T)]
    b = _randn(rng, (3, 3), slot.kind == "complex")
    return [_herm(_herm(b @ np.conj(b.T) + 3 * np.eye(3)).astype(slot.storage))]


def _gen_triangular(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
    """A well-conditioned (both triangles) matrix and a right-hand side."""
    out: list[Any] = []
    a_slot, b_slot = slots
    assert isinstance(a_slot, DType) and isinstance(b_slot, DType)
    if a_slot.is_inexact:
        a = 0.3 * _randn(rng, (3, 3), a_slot.kind == "complex") + np.diag([2.0, 2.5, 3.0])
        out.append(np.asarray(a).astype(a_slot.storage))
    else:
        out.append(draw(a_slot, "any", (3, 3), rng))
    out.append(draw(b_slot, "any", (3, 2), rng))
    return out


def _rem_valid(operands: list[Any]) -> bool:
    """rem jumps where x / y is an integer: keep the ratio's fraction away from 0 and 1."""
    x, y = (_as_float(np.real(o) if np.iscomplexobj(o) else o) for o in operands)
    ratio = np.abs(x / y)
    frac = ratio - np.floor(ratio)
    return bool(np.all((frac > 0.05) & (frac < 0.95)))


def _inside_unit(operands: list[Any]) -> bool:
    """asin / acos / atanh: real operands inside (-1, 1), away from the singular ends (complex: any)."""
    (x,) = operands
    return bool(np.iscomplexobj(x) or np.all(np.abs(_as_float(x)) < 0.9))


def _above_one(operands: list[Any]) -> bool:
    """acosh: real operands above 1, away from the singular end (complex: any)."""
    (x,) = operands
    return bool(np.iscomplexobj(x) or np.all(_as_float(x) > 1.1))


#: Kinds whose primal must be bit-identical to JAX (correctly rounded ops).
_REAL_EXACT: Final = frozenset({"bool", "int", "uint", "float"})
_ALL_EXACT: Final = frozenset({"bool", "int", "uint", "float", "complex"})
_INT_EXACT: Final = frozenset({"bool", "int", "uint"})


def _binary_spec(name: str, lax_name: str | Callable[..., Any], jnp_name: str | None,
                 domains: tuple[str, str] = ("any", "any"), exact: frozenset[str] = _REAL_EXACT,
                 valid: Callable[[list[Any]], bool] | None = None, scalar_not_exact: bool = False) -> Spec:  # fmt: skip
    """An elementwise binary op: promoted operands, Python scalars allowed, shape [3]."""
    fn = getattr(F, {"and": "logical_and", "or": "logical_or", "xor": "logical_xor"}.get(name, name))
    if callable(lax_name):
        lax_ref = lax_name
    else:

        def lax_ref(x: Any, y: Any, _n: str = lax_name) -> Any:
            return getattr(_lax(), _n)(x, y)

    jnp_ref = None
    if jnp_name is not None:

        def jnp_ref(x: Any, y: Any, _n: str = jnp_name) -> Any:
            return getattr(_jnp(), _n)(x, y)

    return Spec(name, name, fn, lax_ref, ("x", "y"), ((3,), (3,)), domains, jnp_ref, promoted=(0, 1),
                scalar_ok=(0, 1), plan_layout=(0, 1), exact=exact, valid=valid,
                scalar_not_exact=scalar_not_exact)  # fmt: skip


def _unary_spec(name: str, lax_ref: Callable[..., Any] | None = None, domain: str = "any",
                exact: frozenset[str] = _INT_EXACT,
                valid: Callable[[list[Any]], bool] | None = None) -> Spec:  # fmt: skip
    """An elementwise unary op on shape [3]; the lax reference defaults to ``lax.<name>``."""
    fn = getattr(F, name)
    if lax_ref is None:

        def lax_ref(x: Any, _n: str = name) -> Any:
            return getattr(_lax(), _n)(x)

    return Spec(name, name, fn, lax_ref, ("x",), ((3,),), (domain,), plan_layout=(0,), exact=exact, valid=valid)


def _structural_spec(name: str, op: str, ours: Callable[..., Any], lax_ref: Callable[..., Any],
                     shape: tuple[int, ...], exact: frozenset[str] = _ALL_EXACT,
                     gen: Gen | None = None, domain: str = "any") -> Spec:  # fmt: skip
    """A one-operand op with static params (reductions, reshapes ...), closed over in both references."""
    return Spec(name, op, ours, lax_ref, ("x",), (shape,), (domain,), plan_layout=(0,), exact=exact, gen=gen)


@autodiff.custom_jvp
def custom_transpose(x: Tensor) -> Tensor:
    """``transpose`` recorded as a ``custom_jvp_call`` (the sweep's user call)."""
    return F.transpose(x, (1, 0))


@custom_transpose.defjvp
def custom_transpose_jvp(primals: tuple[Tensor], tangents: tuple[Tensor]) -> tuple[Tensor, Tensor]:
    return custom_transpose(primals[0]), F.transpose(tangents[0], (1, 0))


@autodiff.custom_vjp
def custom_vjp_transpose(x: Tensor) -> Tensor:
    """``transpose`` recorded as a ``custom_vjp_call`` (the sweep's user call)."""
    return F.transpose(x, (1, 0))


def custom_transpose_fwd(x: Tensor) -> tuple[Tensor, None]:
    return custom_vjp_transpose(x), None


def custom_transpose_bwd(_: None, g: Tensor) -> tuple[Tensor]:
    return (F.transpose(g, (1, 0)),)


custom_vjp_transpose.defvjp(custom_transpose_fwd, custom_transpose_bwd)


# -- broadcasting and weak operands ---------------------------------------------------------------


def _broadcast_lax(name: str) -> Callable[..., Any]:
    """``lax.<name>`` on operands broadcast to one shape first (lax takes no NumPy broadcasting)."""

    def ref(*xs: Any) -> Any:
        return getattr(_lax(), name)(*_jnp().broadcast_arrays(*xs))

    return ref


def _jnp_ref(name: str) -> Callable[..., Any]:
    def ref(*xs: Any) -> Any:
        return getattr(_jnp(), name)(*xs)

    return ref


def _weak(value: float | int) -> Tensor:
    """A weakly typed 0-d tensor, as ``jax.numpy.asarray(value)`` (the weak specs run under jax)."""
    from runtime.tensor import asarray

    out = asarray(value)
    assert out.weak, "weak specs run under a policy with weak types"
    return out


_INT8_ROW: Final = np.array([1, -2, 3], dtype=np.int8)


def broadcast_and_weak_specs() -> list[Spec]:
    """Rows for NumPy broadcasting (every elementwise family, rank-different and rank-equal
    size-1 shapes) and for weakly typed operands (``asarray(2.5)``, ``int8 * 2.5``, under jax).

    Broadcast rows compare with ``jax.numpy`` under jax and with ``lax`` on explicitly
    broadcast operands elsewhere; their replay check holds the recorded
    ``broadcast_in_dim`` equations to eager execution bit for bit, and their VJP checks
    that cotangents are summed back to each operand's shape.
    """
    specs = [
        Spec("div-broadcast", "div", F.div, _broadcast_lax("div"), ("x", "y"), ((3, 1), (4,)), ("any", "nonzero"),
             _jnp_ref("true_divide"), promoted=(0, 1), plan_layout=(0, 1), exact=_INT_EXACT),  # XLA divides by
        # a broadcast operand as a multiplication by its reciprocal (an ulp off): compared within tolerance
        Spec("min-broadcast-rank-equal", "min", F.min, _broadcast_lax("min"), ("x", "y"), ((3, 4), (3, 1)),
             ("any", "any"), _jnp_ref("minimum"), promoted=(0, 1), plan_layout=(0, 1), exact=_ALL_EXACT),
        Spec("atan2-broadcast", "atan2", F.atan2, _broadcast_lax("atan2"), ("x", "y"), ((2, 1, 3), (4, 1)),
             ("any", "any"), _jnp_ref("arctan2"), promoted=(0, 1), plan_layout=(0, 1), exact=_INT_EXACT),
        Spec("lt-broadcast", "lt", F.lt, _broadcast_lax("lt"), ("x", "y"), ((3,), (2, 1)), ("any", "any"),
             _jnp_ref("less"), promoted=(0, 1), plan_layout=(0, 1), exact=_ALL_EXACT),
        Spec("and-broadcast", "and", F.logical_and, _broadcast_lax("bitwise_and"), ("x", "y"), ((1, 3), (2, 1)),
             ("any", "any"), _jnp_ref("bitwise_and"), promoted=(0, 1), plan_layout=(0, 1), exact=_ALL_EXACT),
        Spec("select-broadcast", "select", F.select, _broadcast_lax("select"), ("pred", "on_true", "on_false"),
             ((3,), (2, 1), (2, 3)), ("any", "any", "any"), lambda p, a, b: _jnp().where(p, a, b),
             promoted=(1, 2), fixed={0: dt.bool_}, plan_layout=(0, 1, 2), exact=_ALL_EXACT),
        Spec("clamp-broadcast", "clamp", F.clamp, _broadcast_lax("clamp"), ("min", "operand", "max"),
             ((1,), (2, 3), (3,)), ("any", "any", "any"), promoted=(0, 1, 2), plan_layout=(0, 1, 2),
             exact=_ALL_EXACT),
        # weak operands (jax only: the other policies have no weak values)
        Spec("min-weak-float", "min", lambda x: F.min(x, _weak(2.5)), lambda x: _lax().min(x, x),
             ("x",), ((3,),), ("any",), lambda x: _jnp().minimum(x, _jnp().asarray(2.5)),
             plan_layout=(0, PyScalar("float")), exact=_ALL_EXACT, policies=("jax",)),
        Spec("sub-weak-int", "sub", lambda x: F.sub(_weak(3), x), lambda x: _lax().sub(x, x),
             ("x",), ((3,),), ("any",), lambda x: _jnp().subtract(_jnp().asarray(3), x),
             plan_layout=(PyScalar("int"), 0), exact=_ALL_EXACT, policies=("jax",)),
        Spec("max-weak-result", "max", lambda x: F.max(F.mul(_INT8_ROW, 2.5), x), lambda x: _lax().max(x, x),
             ("x",), ((3,),), ("any",),
             lambda x: _jnp().maximum(_jnp().multiply(_jnp().asarray(_INT8_ROW), 2.5), x),
             plan_layout=(PyScalar("float"), 0), exact=_ALL_EXACT, policies=("jax",)),
        Spec("add-weak-tanh", "tanh", lambda x: F.add(F.tanh(_weak(0.5)), x), lambda x: _lax().add(x, x),
             ("x",), ((3,),), ("any",), lambda x: _jnp().add(_jnp().tanh(_jnp().asarray(0.5)), x),
             plan_layout=(0,), exact=frozenset(), policies=("jax",)),
    ]  # fmt: skip
    return specs


@functools.cache
def build_specs() -> tuple[Spec, ...]:
    """The sweep's op table: every op of the vocabulary, some in several configurations."""
    i32 = dt.int32
    specs: list[Spec] = [
        _binary_spec("add", "add", "add", exact=_ALL_EXACT),
        _binary_spec("sub", "sub", "subtract", exact=_ALL_EXACT),
        _binary_spec("mul", "mul", "multiply"),
        _binary_spec("div", "div", "true_divide", ("any", "nonzero"), scalar_not_exact=True),
        _binary_spec("rem", "rem", "fmod", ("any", "nonzero"), valid=_rem_valid),
        _binary_spec("pow", _lax_pow, "power", ("pos", "exponent"), exact=_INT_EXACT),
        _binary_spec("max", "max", "maximum", exact=_ALL_EXACT),
        _binary_spec("min", "min", "minimum", exact=_ALL_EXACT),
        _binary_spec("atan2", "atan2", "arctan2", exact=_INT_EXACT),
        _binary_spec("floor_div", _lax_floor_div, "floor_divide", ("any", "nonzero")),
        *(_binary_spec(n, n, j, exact=_ALL_EXACT) for n, j in
          (("eq", "equal"), ("ne", "not_equal"), ("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
           ("ge", "greater_equal"))),
        *(_binary_spec(n, f"bitwise_{n}", f"bitwise_{n}", exact=_ALL_EXACT) for n in ("and", "or", "xor")),
        Spec("dot_general", "dot_general", lambda x, y: F.dot_general(x, y, _MATMUL),
             lambda x, y: _lax().dot_general(x, y, _MATMUL), ("lhs", "rhs"), ((2, 3), (3, 2)), ("any", "any"),
             lambda x, y: _jnp().matmul(x, y), promoted=(0, 1), plan_layout=(0, 1), exact=_INT_EXACT),
        Spec("dot_general-batched", "dot_general", lambda x, y: F.dot_general(x, y, _BATCHED),
             lambda x, y: _lax().dot_general(x, y, _BATCHED), ("lhs", "rhs"), ((2, 2, 3), (2, 3, 2)),
             ("any", "any"), lambda x, y: _jnp().matmul(x, y), promoted=(0, 1), plan_layout=(0, 1),
             exact=_INT_EXACT),
        Spec("select", "select", F.select, lambda p, a, b: _lax().select(p, *_bcast(a, b)),
             ("pred", "on_true", "on_false"), ((3,), (3,), (3,)), ("any", "any", "any"),
             lambda p, a, b: _jnp().where(p, a, b), promoted=(1, 2), scalar_ok=(1, 2), fixed={0: dt.bool_},
             plan_layout=(0, 1, 2), exact=_ALL_EXACT),
        # No jnp reference: jnp.clip is minimum(maximum(x, lo), hi), whose derivative differs from
        # lax.clamp's (which castwise follows) when lo > hi; under jax, JAX's result_type + lax.clamp.
        Spec("clamp", "clamp", F.clamp, lambda lo, x, hi: _lax().clamp(*_bcast(lo, x, hi)),
             ("min", "operand", "max"), ((3,), (3,), (3,)), ("any", "any", "any"), promoted=(0, 1, 2),
             scalar_ok=(0, 2), plan_layout=(0, 1, 2), gen=_gen_clamp, exact=_ALL_EXACT),
        Spec("concatenate", "concatenate", lambda a, b: F.concatenate([a, b], 0),
             lambda a, b: _lax().concatenate([a, b], 0), ("operands[0]", "operands[1]"), ((2, 3), (1, 3)),
             ("any", "any"), lambda a, b: _jnp().concatenate([a, b], 0), promoted=(0, 1), plan_layout=(0, 1),
             exact=_ALL_EXACT),
        Spec("scatter", "scatter", lambda x, u: F.scatter(x, _SCATTER_IDX, u, _ROW_SCATTER, unique_indices=True),
             lambda x, u: _lax().scatter(x, _SCATTER_IDX, u, _jax_scatter_dn(), unique_indices=True),
             ("operand", "updates"), ((5, 3), (3, 3)), ("any", "any"), promoted=(0, 1),
             plan_layout=(0, i32, 1), exact=_ALL_EXACT),
        Spec("scatter_add", "scatter_add", lambda x, u: F.scatter_add(x, _SCATTER_ADD_IDX, u, _ROW_SCATTER),
             lambda x, u: _lax().scatter_add(x, _SCATTER_ADD_IDX, u, _jax_scatter_dn()),
             ("operand", "updates"), ((5, 3), (3, 3)), ("any", "any"), promoted=(0, 1),
             plan_layout=(0, i32, 1), exact=_INT_EXACT),
        Spec("gather", "gather", lambda x: F.gather(x, _GATHER_IDX, _ROW_GATHER, (1, 3)),
             lambda x: _lax().gather(x, _GATHER_IDX, _jax_gather_dn(), (1, 3)), ("operand",), ((5, 3),),
             ("any",), plan_layout=(0, i32), exact=_ALL_EXACT),
        Spec("dynamic_slice", "dynamic_slice", lambda x: F.dynamic_slice(x, [2], (3,)),
             lambda x: _lax().dynamic_slice(x, (2,), (3,)), ("operand",), ((6,),), ("any",),
             plan_layout=(0, PyScalar("int")), exact=_ALL_EXACT),
        Spec("dynamic_update_slice", "dynamic_update_slice", lambda x, u: F.dynamic_update_slice(x, u, [1]),
             lambda x, u: _lax().dynamic_update_slice(x, u, (1,)), ("operand", "update"), ((6,), (3,)),
             ("any", "any"), promoted=(0, 1), plan_layout=(0, 1, PyScalar("int")), exact=_ALL_EXACT),
        # -- unary
        _unary_spec("neg", exact=_ALL_EXACT),
        _unary_spec("abs", domain="nonzero", exact=_REAL_EXACT),
        _unary_spec("sign", domain="nonzero", exact=_REAL_EXACT),
        _unary_spec("exp"),
        _unary_spec("log", domain="pos"),
        _unary_spec("expm1"),
        _unary_spec("log1p", domain="pos"),
        _unary_spec("sin"),
        _unary_spec("cos"),
        _unary_spec("tanh"),
        _unary_spec("logistic"),
        _unary_spec("sqrt", domain="pos", exact=_REAL_EXACT),
        _unary_spec("rsqrt", domain="pos"),
        _unary_spec("conj", _lax_conj, exact=_ALL_EXACT),
        _unary_spec("real", exact=_ALL_EXACT),
        _unary_spec("imag", exact=_ALL_EXACT),
        _unary_spec("square", exact=_REAL_EXACT),
        _unary_spec("reciprocal", domain="nonzero", exact=_REAL_EXACT),
        _unary_spec("floor", exact=_REAL_EXACT),
        _unary_spec("ceil", exact=_REAL_EXACT),
        Spec("round", "round", lambda x: F.round(x, 0), lambda x: _lax().round(x, _lax().RoundingMethod(0)),
             ("x",), ((3,),), ("any",), plan_layout=(0,), exact=_REAL_EXACT),
        Spec("round-even", "round", lambda x: F.round(x, 1), lambda x: _lax().round(x, _lax().RoundingMethod(1)),
             ("x",), ((3,),), ("any",), plan_layout=(0,), exact=_REAL_EXACT),
        _unary_spec("is_finite", exact=_REAL_EXACT),
        _unary_spec("exp2"),
        _unary_spec("sinh"),
        _unary_spec("cosh"),
        _unary_spec("tan"),
        _unary_spec("asin", valid=_inside_unit),
        _unary_spec("acos", valid=_inside_unit),
        _unary_spec("atan"),
        _unary_spec("asinh"),
        _unary_spec("acosh", domain="pos", valid=_above_one),
        _unary_spec("atanh", valid=_inside_unit),
        _unary_spec("cbrt", domain="nonzero"),
        Spec("not", "not", F.logical_not, lambda x: _lax().bitwise_not(x), ("x",), ((3,),), ("any",),
             plan_layout=(0,), exact=_ALL_EXACT),
        _unary_spec("population_count", exact=_ALL_EXACT),
        _unary_spec("clz", exact=_ALL_EXACT),
        *(_binary_spec(n, n, None, exact=_ALL_EXACT)
          for n in ("shift_left", "shift_right_arithmetic", "shift_right_logical", "nextafter")),
        _binary_spec("complex", "complex", None, exact=_ALL_EXACT),
        Spec("convert", "convert", lambda x, dtype: F.convert(x, dtype),
             lambda x, dtype: _lax().convert_element_type(x, dtype.storage), ("x",), ((3,),), ("any",),
             plan_layout=(0,), dtype_param=True, exact=_ALL_EXACT),
        # -- reductions
        _structural_spec("reduce_sum", "reduce_sum", lambda x: F.reduce_sum(x, (1,)),
                         lambda x: _lax().reduce_sum(x, (1,)), (3, 4), exact=_INT_EXACT),
        _structural_spec("reduce_sum-rounding", "reduce_sum", lambda x: F.reduce_sum(x, (1,)),
                         lambda x: _lax().reduce_sum(x, (1,)), (3, 4), gen=_gen_half_ulps),
        _structural_spec("reduce_prod", "reduce_prod", lambda x: F.reduce_prod(x, (1,)),
                         lambda x: _lax().reduce_prod(x, (1,)), (3, 4), exact=_INT_EXACT),
        _structural_spec("reduce_max", "reduce_max", lambda x: F.reduce_max(x, (1,)),
                         lambda x: _lax().reduce_max(x, (1,)), (3, 4), gen=_gen_distinct(1)),
        _structural_spec("reduce_min", "reduce_min", lambda x: F.reduce_min(x, (0,)),
                         lambda x: _lax().reduce_min(x, (0,)), (3, 4), gen=_gen_distinct(0)),
        # -- structural
        _structural_spec("reshape", "reshape", lambda x: F.reshape(x, (2, 6)),
                         lambda x: _lax().reshape(x, (2, 6)), (3, 4)),
        _structural_spec("transpose", "transpose", lambda x: F.transpose(x, (1, 0)),
                         lambda x: _lax().transpose(x, (1, 0)), (3, 4)),
        _structural_spec("broadcast_in_dim", "broadcast_in_dim", lambda x: F.broadcast_in_dim(x, (2, 3, 4), (1, 2)),
                         lambda x: _lax().broadcast_in_dim(x, (2, 3, 4), (1, 2)), (3, 1)),
        _structural_spec("slice", "slice", lambda x: F.slice(x, (1, 0), (3, 4), (1, 2)),
                         lambda x: _lax().slice(x, (1, 0), (3, 4), (1, 2)), (3, 4)),
        _structural_spec("pad", "pad", lambda x: F.pad(x, 1, ((1, 0, 1), (0, -1, 0))),
                         lambda x: _lax().pad(x, _jnp().asarray(1, x.dtype), ((1, 0, 1), (0, -1, 0))), (3, 4)),
        _structural_spec("reverse", "reverse", lambda x: F.reverse(x, (0,)), lambda x: _lax().rev(x, (0,)), (3, 4)),
        # -- user calls: a transpose under a custom rule that is its own derivative (so lax.transpose is
        # the reference); tests/autodiff/test_custom_rules.py checks jax.custom_jvp/custom_vjp lowering
        _structural_spec("custom_jvp_call", "custom_jvp_call", custom_transpose,
                         lambda x: _lax().transpose(x, (1, 0)), (3, 4)),
        replace(_structural_spec("custom_vjp_call", "custom_vjp_call", custom_vjp_transpose,
                                 lambda x: _lax().transpose(x, (1, 0)), (3, 4)), reverse_only=True),
        Spec("iota", "iota", lambda dtype: F.iota(dtype, (2, 3), 1),
             lambda dtype: _lax().broadcasted_iota(dtype.storage, (2, 3), 1), (), (), dtype_param=True,
             exact=_ALL_EXACT),
        *(Spec(f"full-{kind}", "full", lambda dtype, _v=value: F.full((2, 3), _v, dtype),
               lambda dtype, _v=value: _lax().full((2, 3), _v, dtype.storage), (), (), dtype_param=True,
               exact=_ALL_EXACT) for kind, value in (("int", 3), ("float", 1.5), ("complex", 1.5 - 0.5j))),
        # -- linear algebra
        Spec("eigh", "eigh", _eigh_ours, _eigh_jax, ("x",), ((3, 3),), ("any",), plan_layout=(0,), gen=_gen_hermitian),
        Spec("cholesky", "cholesky", F.cholesky, lambda a: _lax().linalg.cholesky(a), ("x",), ((3, 3),), ("any",),
             plan_layout=(0,), gen=_gen_spd),
        Spec("triangular_solve", "triangular_solve",
             lambda a, b: F.triangular_solve(a, b, left_side=True, lower=True),
             lambda a, b: _lax().linalg.triangular_solve(a, b, left_side=True, lower=True),
             ("a", "b"), ((3, 3), (3, 2)), ("any", "any"), promoted=(0, 1), plan_layout=(0, 1),
             gen=_gen_triangular),
    ]  # fmt: skip
    specs = [_with_family_jnp(s) for s in specs]
    specs.extend(broadcast_and_weak_specs())
    covered = {s.op for s in specs}
    missing = [name for name in ops.OPS if name not in covered]
    if missing:  # a new op must join the sweep, not be skipped silently
        raise RuntimeError(f"parity: ops without a sweep spec: {', '.join(missing)}")
    return tuple(specs)


# -- the plan's per-op families and rewrites, and the kael policy ------------------------------------
#
# Float-only ops convert integer and bool operands (``runtime.ops.FLOAT_ONLY``), bool add/mul are
# logical or/and and real/imag/conj of a real operand are identities or zeros (``runtime.plan.rewrite``).
# Under ``jax`` the reference for those ops is jax.numpy itself (it converts the same way); under
# the other policies the JAX side applies castwise's plan and then the ops its rewrite stands for,
# as jax.lax calls. The ``kael`` policy has four dtypes: its cases use those only, where JAX (x64)
# computes every value it can produce.

#: jax.numpy functions with the meaning of castwise's per-op families: the reference under ``jax``.
#: (rsqrt has no jax.numpy function: its reference is the plan's convert and ``lax.rsqrt``.)
_FAMILY_JNP: Final[dict[str, Callable[..., Any]]] = {
    **{name: (lambda x, _n=name: getattr(_jnp(), _n)(x))
       for name in ("exp", "log", "expm1", "log1p", "sin", "cos", "tanh", "sqrt", "reciprocal", "real", "imag",
                    "conj")},
    "logistic": lambda x: _jax_modules()[0].scipy.special.expit(x),  # jax.nn.sigmoid refuses integers
}  # fmt: skip


def _with_family_jnp(spec: Spec) -> Spec:
    """``spec`` with its jax.numpy reference where the op has a per-op family and had none."""
    ref = _FAMILY_JNP.get(spec.name)
    return replace(spec, jnp=ref) if ref is not None and spec.jnp is None else spec


def policy_dtypes(policy: str, dtypes: Sequence[DType]) -> tuple[DType, ...]:
    """The swept dtypes a policy knows, for a policy with a small dtype set of its own (kael's
    four): the others would be refused on both sides, cases that check nothing."""
    known = get_policy_object(policy).dtypes
    if len(known) > 8:
        return tuple(dtypes)
    return tuple(d for d in dtypes if d in known)


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
    raise NotImplementedError(f"parity: no jax.lax reference for {op.name} in a rewrite")


def _is_rewritten(case: Case) -> bool:
    """Whether the plan rewrites the case's op into other ops (``runtime.plan.rewrite``)."""
    try:
        return case.spec.arity > 0 and rewrite(case.spec.op, _planned(case), case.policy) is not None
    except (PromotionError, OpTypeError):
        return False


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


def _no_refusal(case: Case, operands: Sequence[Any], ours_refused: bool, jax_refused: bool) -> bool:
    return False


def _no_check(case: Case, check: CheckResult) -> bool:
    return False


@dataclass(frozen=True)
class Departure:
    """A documented place where castwise and JAX differ by design.

    ``applies(case, operands, ours_refused, jax_refused)`` says whether it
    explains a disagreement on acceptance (castwise refuses what JAX accepts,
    or the reverse); ``explains(case, check)``, whether it explains a failed
    check of a case both accept (a result dtype or value). ``where`` names the
    documentation.
    """

    name: str
    reason: str
    where: str
    applies: Callable[[Case, Sequence[Any], bool, bool], bool] = _no_refusal
    explains: Callable[[Case, CheckResult], bool] = _no_check


def _kinds(case: Case) -> set[str]:
    """The kinds among a case's operands, Python scalars included (``py-complex`` is complex)."""
    return {s.kind for s in case.operand_slots}


def _lax_refuses_too(case: Case, operands: Sequence[Any], ours_refused: bool, jax_refused: bool) -> bool:
    """Under ``jax`` the reference is jax.numpy, which converts operands jax.lax refuses
    (bool arithmetic, atan2 of integers, ordering complex numbers ...): castwise follows
    jax.lax, so its refusal stands when lax, at JAX's own promoted dtype, refuses too."""
    if case.policy != "jax" or case.spec.jnp is None or not ours_refused or jax_refused:
        return False
    try:
        _run_jax(case, operands, lax_only=True)
    except Exception:
        return True
    return False


def _refuses_kind(op: str, kind: str) -> Callable[[Case, Sequence[Any], bool, bool], bool]:
    def applies(case: Case, operands: Sequence[Any], ours_refused: bool, jax_refused: bool) -> bool:
        return case.spec.op == op and ours_refused and not jax_refused and kind in _kinds(case)

    return applies


def _integer_pow(case: Case, check: CheckResult) -> bool:
    """pow under jax with a Python int or bool exponent, where jnp.power calls lax.integer_pow:
    a bool base becomes int32 there (int64 in castwise's plan), and in float8_e8m0fnu castwise's
    ``y * x**(y - 1)`` is NaN for ``y = 1`` (0 does not exist) where integer_pow's is not."""
    exponent = case.slots[1] if case.spec.op == "pow" and len(case.slots) == 2 else None
    if case.policy != "jax" or not isinstance(exponent, PyScalar) or exponent.kind not in ("int", "bool"):
        return False
    if check.check == "primal":
        return case.slots[0] is dt.bool_ and _message_has(check, "dtype int64, expected int32")
    return (check.check in ("jvp", "vjp") and case.slots[0] is dt.float8_e8m0fnu
            and _message_has(check, "NaN in different positions"))  # fmt: skip


def _e8m0_derivative_formula(case: Case, check: CheckResult) -> bool:
    """The float8_e8m0fnu derivatives whose formulae differ from JAX's (see DEPARTURES)."""
    return (check.check in ("jvp", "vjp") and case.spec.op in ("scatter_add", "reduce_prod")
            and _has(case, dt.float8_e8m0fnu) and _message_has(check, "NaN in different positions"))  # fmt: skip


#: What XLA on CPU refuses for the 2-bit ints, which castwise computes in 8 bits and wraps.
_NARROW_INT_XLA_GAPS: Final = frozenset({"pow", "dot_general", "abs", "concatenate"})


def _plans_half_complex(case: Case, operands: Sequence[Any], ours_refused: bool, jax_refused: bool) -> bool:
    """A case castwise runs in complex32/bcomplex32 (torch: float16 with a complex scalar), JAX cannot."""
    if ours_refused or not jax_refused or case.policy == "jax":
        return False
    if _has(case, *dt.SMALL_COMPLEX):
        return True
    try:
        return any(t in dt.SMALL_COMPLEX for t in _planned(case))
    except PromotionError:
        return False


def _narrow_int_true_divide(case: Case, check: CheckResult) -> bool:
    """div of 2-bit ints under jax: jnp.true_divide keeps int2/uint2 (see DEPARTURES)."""
    return (case.policy == "jax" and case.spec.op == "div" and check.check == "primal"
            and _has(case, *NARROW_INT_DTYPES) and _message_has(check, "dtype float32, expected "))  # fmt: skip


DEPARTURES: Final[tuple[Departure, ...]] = (
    Departure(
        "jnp-converts",
        "castwise ops follow jax.lax dtype rules: where jax.numpy converts first (bool arithmetic, atan2 of "
        "integers, ordering complex numbers) and jax.lax refuses, castwise refuses too",
        "runtime/shapes.py (accepted dtypes follow jax.lax); docs/promotion.md (bool arithmetic)",
        _lax_refuses_too,
    ),
    Departure(
        "atan2-complex",
        "atan2 is real-only in castwise; jax.lax.atan2 also takes complex operands",
        "runtime/shapes.py: atan2_rule",
        _refuses_kind("atan2", "complex"),
    ),
    Departure(
        "clamp-complex",
        "clamp refuses complex operands (XLA's complex clamp has no documented order); jax.lax.clamp accepts them",
        "runtime/shapes.py: clamp_rule",
        _refuses_kind("clamp", "complex"),
    ),
    Departure(
        "full-complex-fill",
        "full refuses a complex fill value for a non-complex dtype (taking the real part silently would hide a "
        "bug); jax.lax.full converts it to bool as bool(fill)",
        "runtime/shapes.py: _check_scalar_param",
        lambda c, x, o, j: c.spec.name == "full-complex" and o and not j,
    ),
    Departure(
        "floor_div-bool",
        "floor_div of bools is refused where the policy has no bool rule (torch: PyTorch refuses it; neuron); "
        "the reference after the plan, jnp.floor_divide, turns bool operands into int32",
        "runtime/plan.py: NUMERIC_OF_BOOL; runtime/shapes.py: floor_div_rule",
        _refuses_kind("floor_div", "bool"),
    ),
    Departure(
        "pow-integer-exponent",
        "with a Python int or bool exponent, jnp.power is lax.integer_pow: the exponent takes no part in "
        "promotion (a bool base becomes int32, even with x64) and the derivative is n * x**(n-1) through "
        "integer_pow; castwise's pow is the binary op, planned like every other (bool and a Python int give "
        "int64, as jnp.result_type and jnp.add do) and differentiated as y * x**(y - 1), which is NaN in "
        "float8_e8m0fnu for y = 1 (the format has no 0)",
        "docs/promotion.md (departures); docs/parity.md",
        explains=_integer_pow,
    ),
    Departure(
        "narrow-int-xla",
        "castwise computes every integer op on int2/uint2 in 8 bits and wraps back; XLA on CPU has no 2-bit "
        "integer pow (jnp.power's integer algorithm), dot or concatenate (its compiler aborts), and jnp.abs "
        "refuses narrow integers as platform-dependent",
        "runtime/kernels.py (module docstring); tests/runtime/test_kernels_new_dtypes.py (exact integers)",
        lambda c, x, o, j: c.spec.op in _NARROW_INT_XLA_GAPS and not o and j and _has(c, *NARROW_INT_DTYPES),
    ),
    Departure(
        "half-complex-no-jax",
        "under torch, float16 with a complex scalar or 0-d tensor is complex32 (PyTorch's ComplexHalf), which JAX "
        "does not have: no JAX reference; castwise computes it in complex64 and rounds each part to float16",
        "docs/promotion.md (torch); tests/runtime/test_kernels_new_dtypes.py",
        _plans_half_complex,
    ),
    Departure(
        "narrow-int-true-divide",
        "jnp.true_divide keeps int1/int2/uint1/uint2 (JAX's to_inexact_dtype has no entry for them) and divides "
        "as integers; castwise's true division of every integer narrower than 64 bits is float32, as for int4",
        "docs/promotion.md (jax)",
        explains=_narrow_int_true_divide,
    ),
    Departure(
        "e8m0-derivative-formula",
        "float8_e8m0fnu has no zero and no negative values, so a derivative formula that materialises a zero "
        "or sums from one is NaN in it. castwise keeps scatter_add's zero update tangent symbolic where JAX "
        "materialises it (NaN at the scattered positions), and differentiates reduce_prod as "
        "sum_i t_i * prod_{j != i} x_j (a sum from 0: NaN) where JAX differentiates a product tree (finite)",
        "docs/autodiff.md (symbolic zeros); autodiff/rules_structural.py",
        explains=_e8m0_derivative_formula,
    ),
)


def departure_for(case: Case, operands: Sequence[Any], ours_refused: bool, jax_refused: bool) -> Departure | None:
    """The documented departure that explains an acceptance disagreement, if any."""
    for dep in DEPARTURES:
        if dep.applies(case, operands, ours_refused, jax_refused):
            return dep
    return None


def departure_explaining(case: Case, check: CheckResult) -> Departure | None:
    """The documented departure that explains a failed check, if any."""
    for dep in DEPARTURES:
        if dep.explains(case, check):
            return dep
    return None


@dataclass(frozen=True)
class KnownFailure:
    """A castwise bug the sweep found and reported, not yet fixed.

    Failures it ``matches`` are listed as known (``castwise parity --strict``
    counts them as failures). Remove the entry with the fix: the sweep then
    checks the case like any other.
    """

    name: str
    description: str
    matches: Callable[[Case, CheckResult], bool]


def _has(case: Case, *dtypes: DType) -> bool:
    """Whether one of the case's slots is one of ``dtypes``."""
    return any(s in dtypes for s in case.slots)


def _message_has(check: CheckResult, *texts: str) -> bool:
    """Whether the failure message contains every one of ``texts``."""
    return all(t in check.message for t in texts)


#: Known castwise bugs, found by this sweep and reported (docs/parity.md has the details
#: and a reproducer for each). Each matcher is as narrow as the bug.
KNOWN_FAILURES: tuple[KnownFailure, ...] = ()


def known_failure_for(case: Case, check: CheckResult) -> KnownFailure | None:
    """The ``KNOWN_FAILURES`` entry a failed check is, if any."""
    for known in KNOWN_FAILURES:
        if known.matches(case, check):
            return known
    return None


# -- building the case list ---------------------------------------------------------------------------


def _case_rng(seed: int, *key: Any) -> np.random.Generator:
    """A generator fixed by the seed and a case key: results do not depend on filters or order."""
    text = "|".join(str(k) for k in key)
    return np.random.default_rng([seed, zlib.crc32(text.encode())])


def _slot_tuples(spec: Spec, policy: str, dtypes: Sequence[DType], seed: int) -> list[tuple[Slot, ...]]:
    """Operand slot assignments of ``spec``: every dtype alone, plus sampled mixed and scalar ones."""
    n = spec.arity
    rng = _case_rng(seed, "slots", spec.name, policy)
    if n == 0:
        return [(d,) for d in dtypes] if spec.dtype_param else [()]
    free = [i for i in range(n) if i not in spec.fixed]

    def fill(assign: Mapping[int, Slot]) -> tuple[Slot, ...]:
        """A full slot tuple: ``assign`` for the free operands, the fixed dtype elsewhere."""
        return tuple(assign[i] if i in assign else spec.fixed[i] for i in range(n))

    out: list[tuple[Slot, ...]] = []
    seen: set[tuple[Slot, ...]] = set()

    def add(t: tuple[Slot, ...]) -> None:
        if t not in seen:
            seen.add(t)
            out.append(t)

    for d in dtypes:  # every dtype on its own
        add(fill(dict.fromkeys(free, d)))
    if spec.dtype_param:  # convert: every (source, destination) pair
        return [(s, d) for s in dtypes for d in dtypes]
    mixed_positions = [i for i in free if i in spec.promoted] if spec.promoted else free
    if len(dtypes) > 1 and len(mixed_positions) >= 2:
        # Each dtype against a random partner (the float8 formats among themselves and the
        # 16/32-bit floats), in every order of the promoted positions.
        for d in dtypes:
            pool = [e for e in dtypes if (e in FLOAT8_DTYPES) == (d in FLOAT8_DTYPES)
                    or (d in FLOAT8_DTYPES and e in (dt.bfloat16, dt.float16, dt.float32))]  # fmt: skip
            partners = [e for e in pool if e is not d] or [e for e in dtypes if e is not d]
            partner = partners[int(rng.integers(len(partners)))]
            for position in mixed_positions:  # the same pair in every order: (d, p) and (p, d)
                add(fill({i: (d if i == position else partner) for i in free}))
            if len(mixed_positions) >= 3 and len(partners) >= 2:
                # three different dtypes: promotion of a triple is not always a fold of pairs
                others = [partners[int(k)] for k in rng.choice(len(partners), size=len(mixed_positions) - 1,
                                                                replace=False)]  # fmt: skip
                others.insert(int(rng.integers(len(mixed_positions))), d)
                add(fill(dict(zip(mixed_positions, others, strict=True))))
        # Real/complex and int/float pairs of equal width: the promotion story of the project.
        for a, b in ((dt.float64, dt.complex128), (dt.float32, dt.complex64), (dt.int32, dt.float32),
                     (dt.float16, dt.bfloat16)):  # fmt: skip
            if a in dtypes and b in dtypes:
                for first, second in ((a, b), (b, a)):
                    assign = {i: (first if k == 0 else second) for k, i in enumerate(mixed_positions)}
                    add(fill({**dict.fromkeys(free, second), **assign}))
        if len(mixed_positions) >= 3:
            # u64 + i64 is JAX's weak float, so jax promotes (u64, i64, f32) to f32, not to a pairwise f64
            for triple in ((dt.uint64, dt.int64, dt.float32), (dt.float32, dt.uint64, dt.int64)):
                if all(d in dtypes for d in triple):
                    add(fill(dict(zip(mixed_positions, triple, strict=False))))
    if spec.scalar_ok and len(free) >= 2:
        tensors = list(dtypes)
        for py in PY_SCALARS:
            for position in spec.scalar_ok:
                d = tensors[int(rng.integers(len(tensors)))]
                add(fill({i: (py if i == position else d) for i in free}))
    return out


def _quick_score(case: Case) -> tuple[int, int]:
    """Quick mode prefers cases with an inexact operand (derivative checks) and mixed dtypes."""
    inexact = any(isinstance(s, DType) and s.is_inexact for s in case.operand_slots)
    mixed = len(set(case.operand_slots)) > 1
    return (0 if inexact else 1, 0 if mixed else 1)


def castwise_accepts(case: Case, seed: int = 0) -> bool:
    """Whether castwise runs ``case`` eagerly (no JAX involved): a refused case checks nothing.

    Anything but one of castwise's refusals counts as accepted: a crash is worth running.
    """
    try:
        with use_policy(case.policy), warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            _call_ours(case, _ours_args(case, _make_inputs(case, seed)))
    except CASTWISE_REFUSALS:
        return False
    except Exception:
        return True
    return True


def _quick_sample(cases: list[Case], seed: int, budget: int) -> list[Case]:
    """Stratified sample: every spec, random policies, preferring derivative and mixed cases.

    Cases castwise accepts come first (tried in a random order, a cheap eager call
    each), so a spec whose dtypes are mostly refused (the logical ops take only
    bool and integers) is still checked; refused cases fill a spec's share only
    where castwise accepts none of its cases.
    """
    rng = _case_rng(seed, "quick")
    by_spec: dict[str, list[Case]] = {}
    for c in cases:
        by_spec.setdefault(c.spec.name, []).append(c)
    per_spec = max(2, budget // max(1, len(by_spec)))
    chosen: list[Case] = []
    for group in by_spec.values():
        order = [group[int(i)] for i in rng.permutation(len(group))]
        accepted: list[Case] = []
        refused: list[Case] = []
        for c in order:
            if len(accepted) >= per_spec * 3:
                break
            (accepted if castwise_accepts(c, seed) else refused).append(c)
        picked = sorted(accepted, key=_quick_score)[:per_spec]
        picked += refused[: per_spec - len(picked)]
        keep = {id(c) for c in picked}
        chosen.extend(c for c in group if id(c) in keep)
    return chosen


def _matches(spec: Spec, patterns: Sequence[str]) -> bool:
    """``--ops``: a glob over the spec name, the op name or the family."""
    return any(fnmatch.fnmatchcase(name, p) for p in patterns for name in (spec.name, spec.op, spec.family))


def parse_dtypes(text: str | None) -> tuple[DType, ...]:
    """``--dtypes`` value: comma-separated names or short names (``f32,c64,bfloat16``), or a group:
    ``core`` / ``float8`` / ``narrow-int``."""
    if not text:
        return DEFAULT_DTYPES
    out: list[DType] = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        group = {"core": CORE_DTYPES, "float8": FLOAT8_DTYPES, "narrow-int": NARROW_INT_DTYPES,
                 "all": DEFAULT_DTYPES}.get(item)  # fmt: skip
        for d in group if group is not None else (dt.dtype(item),):
            if d not in out:
                out.append(d)
    return tuple(out)


def build_cases(
    policies: Sequence[str] = DEFAULT_POLICIES,
    ops_patterns: Sequence[str] = ("*",),
    dtypes: Sequence[DType] = DEFAULT_DTYPES,
    seed: int = 0,
    quick: bool = False,
) -> list[Case]:
    """The sweep's cases, in a deterministic order (grouped by spec, then policy)."""
    cases: list[Case] = []
    for spec in build_specs():
        if not _matches(spec, ops_patterns):
            continue
        for policy in policies:
            if spec.policies and policy not in spec.policies:
                continue
            for slots in _slot_tuples(spec, policy, policy_dtypes(policy, dtypes), seed):
                cases.append(Case(spec, policy, slots))
    if quick:
        cases = _quick_sample(cases, seed, QUICK_CASES)
    return cases


# -- running one case ------------------------------------------------------------------------------------

#: castwise's own refusals: every other exception from castwise is a crash (a failure).
CASTWISE_REFUSALS: Final = (PromotionError, OpTypeError, KernelDTypeError, ArityError, _ShapeError)


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


@dataclass
class CaseResult:
    """Everything the sweep learned about one case."""

    case_id: str
    spec: str
    family: str
    policy: str
    slots: tuple[str, ...]
    description: str
    #: "ok" | "failed" | "known" (only known failures) | "unsupported" | "departure"
    status: str = "ok"
    checks: list[CheckResult] = field(default_factory=list)
    castwise_error: str = ""
    jax_error: str = ""
    departure: str = ""
    #: CPU seconds the case took (JAX compilation included)
    cpu_s: float = 0.0

    @property
    def failures(self) -> list[CheckResult]:
        """Failed checks that are not known failures."""
        return [c for c in self.checks if not c.ok and not c.known]

    @property
    def known_failures(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.ok and c.known]

    def settle(self, case: Case) -> None:
        """Pass the failed checks a documented departure explains, attach known failures to
        the others, and set the status from the checks."""
        for c in self.checks:
            if not c.ok:
                dep = departure_explaining(case, c)
                if dep is not None:
                    c.ok, c.departure = True, dep.name
                    continue
                found = known_failure_for(case, c)
                c.known = found.name if found is not None else ""
        self.status = "failed" if self.failures else ("known" if self.known_failures else "ok")


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
    if case.policy == "jax" and spec.family in PLAN_RULES:  # (per-op rules: castwise's plan, below)
        targets = _jax_targets(case, operands)
    else:
        targets = _planned(case) if spec.arity else []
    rewritten = _rewritten_reference(case, targets)
    if rewritten is not None:
        return rewritten
    lax_ref = spec.lax

    def f(*xs: Any) -> Any:
        return lax_ref(*(_convert_jax(x, t) for x, t in zip(xs, targets, strict=True)), **kw)

    return f


def _outputs(result: Any) -> list[Any]:
    """The outputs of a call as a list (eigh returns two)."""
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _run_jax(case: Case, operands: Sequence[Any], lax_only: bool = False) -> list[np.ndarray]:
    """JAX's primal outputs for the case (x64, eager); raises where JAX refuses."""
    if case.spec.op == "concatenate" and _has(case, *NARROW_INT_DTYPES):
        # XLA's CPU compiler aborts the process on this (a failed check in its concatenate emitter)
        raise RuntimeError("XLA CPU cannot compile a concatenate of 2-bit integers (it aborts)")
    with _jax_x64():
        xs = [_to_jax(x) for x in operands]
        f = _jax_function(case, xs, lax_only)
        return [np.asarray(o) for o in _outputs(f(*xs))]


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


def tolerance(d: DType, derivative: bool) -> float:
    """Relative tolerance (scaled by ``max(1, max|expected|)``) for values computed in ``d``.

    Counted in units of the dtype's epsilon: wide floats allow the few ulps by
    which NumPy's and XLA's transcendental functions and summation orders
    differ; narrow floats are computed in float32 and rounded once per op, so
    results differ by at most an ulp or two per op. Derivative programs chain
    several ops, hence the wider allowance.
    """
    ulps = (64 if derivative else 16) if d.bits >= 32 or d.kind == "complex" else (8 if derivative else 2)
    return ulps * _eps(d)


def _narrowest(dtypes: Sequence[DType]) -> DType | None:
    """The inexact dtype with the largest epsilon: the precision a result can be trusted to."""
    inexact = [d for d in dtypes if d.is_inexact]
    return max(inexact, key=_eps) if inexact else None


def _fmt(a: np.ndarray, limit: int = 12) -> str:
    """The first ``limit`` values of an array, flat, for a failure report."""
    flat = np.asarray(a).reshape(-1)
    body = np.array2string(flat[:limit], separator=", ", max_line_width=200, threshold=limit)
    more = f" ... ({flat.size} values)" if flat.size > limit else ""
    return f"{body}{more}"


def compare(got: np.ndarray, want: np.ndarray, tol: float, exact: bool) -> tuple[bool, float, str]:
    """``(ok, error / tolerance, message)`` for two arrays of the same dtype family.

    Integer and bool values, and ``exact`` checks, must agree exactly (NaN with
    NaN). Otherwise the error is ``max |got - want|`` against ``tol * max(1, max|want|)``.
    """
    got_a, want_a = np.asarray(got), np.asarray(want)
    if got_a.shape != want_a.shape:
        return False, math.inf, f"shape {got_a.shape} != expected {want_a.shape}"
    if got_a.size == 0:
        return True, 0.0, ""
    if want_a.dtype.kind in "biu" or got_a.dtype.kind in "biu":
        bad = int(np.count_nonzero(got_a != want_a))
        return bad == 0, (0.0 if bad == 0 else math.inf), (f"{bad} of {got_a.size} values differ" if bad else "")
    g, w = _as_float(got_a), _as_float(want_a)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    if np.any(nan_g != nan_w):
        return False, math.inf, "NaN in different positions"
    finite = ~nan_w
    inf_mismatch = np.any((np.isinf(g) | np.isinf(w)) & finite & (g != w))
    if inf_mismatch:
        return False, math.inf, "infinities differ"
    both = finite & ~np.isinf(w)
    err = float(np.max(np.abs(g[both] - w[both]))) if np.any(both) else 0.0
    scale = max(1.0, float(np.max(np.abs(w[both])))) if np.any(both) else 1.0
    if exact:
        if err == 0.0:
            return True, 0.0, ""
        return False, math.inf, f"not bit-exact: max abs error {err:.3g}"
    ratio = err / (tol * scale)
    return ratio <= 1.0, ratio, (f"max abs error {err:.3g} > tolerance {tol * scale:.3g}" if ratio > 1 else "")


def _check_arrays(check: str, got: Sequence[Any], want: Sequence[np.ndarray], tol_dtype: DType | None,
                  exact: bool, derivative: bool, active: tuple[int, ...] | None = None,
                  want_dtypes: Sequence[DType] | None = None) -> CheckResult:  # fmt: skip
    """Compare castwise outputs (Tensors / arrays) with JAX's, dtype first."""
    worst = 0.0
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        g_dtype = g.dtype if isinstance(g, Tensor) else dt.dtype(np.asarray(g).dtype)
        w_dtype = want_dtypes[k] if want_dtypes is not None else dt.dtype(np.asarray(w).dtype)
        g_arr = g.numpy() if isinstance(g, Tensor) else np.asarray(g)
        if g_dtype is not w_dtype:
            return CheckResult(check, False, math.inf, active, f"output {k}: dtype {g_dtype.name}, expected "
                               f"{w_dtype.name}", w_dtype.name, g_dtype.name)  # fmt: skip
        tol = tolerance(tol_dtype, derivative) if tol_dtype is not None else 0.0
        ok, ratio, msg = compare(g_arr, w, tol, exact or tol_dtype is None)
        worst = max(worst, ratio)
        if not ok:
            return CheckResult(check, False, ratio, active, f"output {k} ({w_dtype.name}): {msg}", _fmt(w), _fmt(g_arr))
    return CheckResult(check, True, worst, active)


def _crash(
    check: str, err: BaseException, active: tuple[int, ...] | None = None, side: str = "castwise"
) -> CheckResult:
    """A failed check for an exception where a result was due (castwise's, JAX's, or the sweep's)."""
    return CheckResult(check, False, math.inf, active, f"{side} raised {type(err).__name__}: {err}",
                       "a result", f"{type(err).__name__}: {err}")  # fmt: skip


# -- the checks ------------------------------------------------------------------------------------------


def _check_replay(case: Case, operands: Sequence[Any], eager: Sequence[Tensor]) -> CheckResult:
    """Record the op eagerly (inexact operands tracked; traced when there are none),
    verify the graph, replay it, and compare bit for bit with eager execution."""
    slots = case.operand_slots
    inexact = tuple(i for i, s in enumerate(slots) if isinstance(s, DType) and s.is_inexact)
    try:
        with use_policy(case.policy):
            if inexact:
                args = _ours_args(case, operands, tracked=inexact)
                with enable_grad():
                    recorded = _call_ours(case, args)
                leaves = [args[i] for i in inexact]
                # an op the plan rewrites into a constant (imag of a real operand) records none
                out_vars = [o.node if o.node is not None or not _is_rewritten(case) else const_var(o) for o in recorded]
                if any(v is None for v in out_vars):
                    return CheckResult("replay", False, math.inf, None, "an output of a tracked op was not recorded")
                graph = collect(out_vars, [leaf.node for leaf in leaves])
                inputs = [Tensor(leaf.numpy(), leaf.dtype) for leaf in leaves]
            else:
                tensors = [i for i, s in enumerate(slots) if isinstance(s, DType)]
                args = _ours_args(case, operands)

                def f(*ts: Tensor) -> Any:
                    call = list(args)
                    for i, t in zip(tensors, ts, strict=True):
                        call[i] = t
                    return tuple(_call_ours(case, call))

                graph = trace(f, *[args[i] for i in tensors])
                recorded = _call_ours(case, args)
                inputs = [args[i] for i in tensors]
            verify(graph)
            replayed = evaluate(graph, *inputs)
    except Exception as err:
        return _crash("replay", err)
    for k, (e, r, rec) in enumerate(zip(eager, replayed, recorded, strict=True)):
        for what, other in (("replay", r), ("recorded eager run", rec)):
            same = (
                other.dtype is e.dtype
                and other.shape == e.shape
                and np.ascontiguousarray(other.numpy()).tobytes() == np.ascontiguousarray(e.numpy()).tobytes()
            )
            if not same:
                return CheckResult("replay", False, math.inf, None,
                                   f"output {k}: {what} differs from eager execution (bit for bit)",
                                   f"{e.dtype.name} {_fmt(e.numpy())}",
                                   f"{other.dtype.name} {_fmt(other.numpy())}")  # fmt: skip
    return CheckResult("replay", True)


def _active_sets(case: Case) -> list[tuple[int, ...]]:
    """Non-empty subsets of the operands that can be tracked (inexact tensors)."""
    if not case.spec.differentiable:
        return []
    pos = [i for i, s in enumerate(case.operand_slots) if isinstance(s, DType) and s.is_inexact
           and i not in case.spec.fixed]  # fmt: skip
    return [s for r in range(1, len(pos) + 1) for s in itertools.combinations(pos, r)]


def _jax_derivatives(case: Case, operands: Sequence[Any], full: tuple[int, ...], tangents: dict[int, np.ndarray],
                     cts: Sequence[np.ndarray]) -> tuple[dict[int, list[np.ndarray]], list[np.ndarray]]:  # fmt: skip
    """JAX's derivatives, computed once per case rather than once per active set.

    Returns ``J_i t_i`` per operand ``i`` of ``full`` (per output), from
    ``jax.jvp`` with only that operand active (the others closed over, so no zero
    tangent is ever materialised: float8_e8m0fnu has no zero), and the cotangent
    of every operand in castwise's convention, ``conj(jax_vjp(conj(ct)))``, from
    one ``jax.vjp``. Both maps are linear, so the expectation for any active set
    follows: its JVP is the sum of its operands' ``J_i t_i`` (except in a format
    without a zero, see ``_NO_ZERO``), and an operand's cotangent does not
    depend on which others are active.
    """
    jax, jnp = _jax_modules()[0], _jnp()
    with _jax_x64():
        jx = [_to_jax(x) for x in operands]
        fj = _jax_function(case, jx)

        def as_tuple(f: Callable[..., Any]) -> Callable[..., tuple[Any, ...]]:
            return lambda *a: tuple(_outputs(f(*a)))

        per_operand: dict[int, list[np.ndarray]] = {}
        for i in full:
            _, out_t = jax.jvp(as_tuple(close_over(fj, jx, (i,))), (jx[i],), (jnp.asarray(tangents[i]),))
            per_operand[i] = [np.asarray(t) for t in out_t]
        _, vjp_fn = jax.vjp(as_tuple(close_over(fj, jx, full)), *(jx[i] for i in full))
        cotangents = [np.conj(np.asarray(g)) for g in vjp_fn(tuple(jnp.asarray(np.conj(c)) for c in cts))]
    return per_operand, cotangents


#: Formats without a zero. A JAX JVP with one operand active pads with instantiated zeros
#: (NaN there) where the others' tangents would go, so summing them is not JAX's JVP of the
#: active set: ``_jax_joint_jvp`` asks JAX for it directly.
_NO_ZERO: Final = frozenset({dt.float8_e8m0fnu})


def _jax_joint_jvp(case: Case, operands: Sequence[Any], active: tuple[int, ...],
                   tangents: dict[int, np.ndarray]) -> list[np.ndarray]:  # fmt: skip
    """``jax.jvp`` with every operand of ``active`` active at once (the others closed over)."""
    jax, jnp = _jax_modules()[0], _jnp()
    with _jax_x64():
        jx = [_to_jax(x) for x in operands]
        f = close_over(_jax_function(case, jx), jx, active)
        _, out_t = jax.jvp(lambda *a: tuple(_outputs(f(*a))), tuple(jx[i] for i in active),
                           tuple(jnp.asarray(tangents[i]) for i in active))  # fmt: skip
    return [_as_float(np.asarray(t)) for t in out_t]


def _sum_jvps(parts: Sequence[Sequence[np.ndarray]]) -> list[np.ndarray]:
    """The JVP of an active set: the sum of its operands' ``J_i t_i``, accumulated in float64/complex128."""
    return [functools.reduce(np.add, (_as_float(p[k]) for p in parts)) for k in range(len(parts[0]))]


class _SkipJvp(Exception):
    """The spec has no forward mode to compare (``Spec.reverse_only``)."""


def _check_derivatives(case: Case, operands: Sequence[Any], eager: Sequence[Tensor], seed: int,
                       tol_dtype: DType | None) -> list[CheckResult]:  # fmt: skip
    """JVP and VJP against JAX for every active set; the tape's inactive leaves get nothing."""
    sets = _active_sets(case)
    if not sets:
        return []
    full = sets[-1]  # combinations come by size: the last one holds every differentiable operand
    slots = case.operand_slots
    out_dtypes = [o.dtype for o in eager]
    rng = _case_rng(seed, "derivatives", case.id)
    tangents = {i: random_like(slots[i], np.shape(operands[i]), rng) for i in full}  # type: ignore[arg-type]
    cts = [random_like(o.dtype, o.shape, rng) for o in eager]
    if not all(d.is_inexact for d in out_dtypes):
        return [_jvp_to_zero(case, operands, active, tangents, out_dtypes) for active in sets]
    try:
        per_operand, want_cts = _jax_derivatives(case, operands, full, tangents, cts)
    except Exception as err:
        return [_crash("jvp", err, full, side="JAX")]
    results: list[CheckResult] = []
    with use_policy(case.policy):
        consts = _ours_args(case, operands)
        for active in sets:
            f = close_over(lambda *a: tuple(_call_ours(case, a)), consts, active)
            primals = [consts[i] for i in active]
            try:
                if case.spec.reverse_only:
                    raise _SkipJvp
                _, got_t = autodiff.jvp(f, primals, [Tensor(tangents[i], slots[i]) for i in active])  # type: ignore[arg-type]
                if len(active) > 1 and any(d in _NO_ZERO for d in [*out_dtypes, *(slots[i] for i in active)]):
                    want_t = _jax_joint_jvp(case, operands, active, tangents)
                else:
                    want_t = _sum_jvps([per_operand[i] for i in active])
                results.append(_check_arrays("jvp", list(got_t), want_t, tol_dtype, False, True, active, out_dtypes))
            except _SkipJvp:
                pass
            except Exception as err:
                results.append(_crash("jvp", err, active))
            want_ct = [want_cts[full.index(i)] for i in active]
            try:
                _, vjp_ours = autodiff.vjp(f, *primals)
                got_ct = vjp_ours(tuple(Tensor(c, d) for c, d in zip(cts, out_dtypes, strict=True)))
                if any(g is None for g in got_ct):
                    results.append(CheckResult("vjp", False, math.inf, active, "an active operand got no cotangent"))
                    continue
                in_slots = [slots[i] for i in active]
                result = _check_arrays("vjp", list(got_ct), want_ct, tol_dtype, False, True, active, in_slots)  # type: ignore[arg-type]
                if result.ok and len(out_dtypes) == 1:
                    result = _check_tape(case, operands, active, cts[0], want_ct, tol_dtype, result)
                results.append(result)
            except Exception as err:
                results.append(_crash("vjp", err, active))
    return results


def _check_tape(
    case: Case,
    operands: Sequence[Any],
    active: tuple[int, ...],
    ct: np.ndarray,
    want_ct: Sequence[np.ndarray],
    tol_dtype: DType | None,
    vjp_result: CheckResult,
) -> CheckResult:
    """``backward`` on the eager tape: active leaves get JAX's cotangent, inactive ones nothing."""
    slots = case.operand_slots
    args = _ours_args(case, operands, tracked=active)
    (out,) = _call_ours(case, args)
    if out.node is None and _is_rewritten(case):  # a constant (imag of a real operand): no tape to run
        # (a format without a zero, float8_e8m0fnu, has JAX's zero cotangent all NaN)
        if all(np.all(np.isnan(w) if slots[i] in _NO_ZERO else w == 0) for i, w in zip(active, want_ct, strict=True)):
            return vjp_result
        return CheckResult(
            "vjp", False, math.inf, active, "castwise's output is a constant, JAX's cotangent is not zero"
        )
    out.backward(cotangent=Tensor(ct, out.dtype))
    for i, (slot, arg) in enumerate(zip(slots, args, strict=True)):
        if not isinstance(arg, Tensor):
            continue
        if i not in active:
            if arg.grad is not None:
                return CheckResult("vjp", False, math.inf, active, f"inactive operand {i} received a cotangent "
                                   "on the eager tape", "None", _fmt(arg.grad.numpy()))  # fmt: skip
            continue
        want = want_ct[active.index(i)]
        if arg.grad is None:  # a symbolic-zero cotangent is never stored
            # (JAX's zero is NaN in a format without one: its zero cotangent is all NaN there)
            if not np.all(np.isnan(want) if slot in _NO_ZERO else want == 0):
                return CheckResult("vjp", False, math.inf, active, f"active operand {i} got no cotangent on the "
                                   "eager tape", _fmt(want), "None")  # fmt: skip
            continue
        tape = _check_arrays("vjp", [arg.grad], [want], tol_dtype, False, True, active, [slot])  # type: ignore[list-item]
        if not tape.ok:
            tape.message = "eager tape (backward): " + tape.message
            return tape
    return vjp_result


def _jvp_to_zero(case: Case, operands: Sequence[Any], active: tuple[int, ...], tangents: dict[int, np.ndarray],
                 out_dtypes: Sequence[DType]) -> CheckResult:  # fmt: skip
    """An integer or bool output has no tangent (JAX's float0): ours must be zero."""
    try:
        with use_policy(case.policy):
            consts = _ours_args(case, operands)
            f = close_over(lambda *a: tuple(_call_ours(case, a)), consts, active)
            slots = case.operand_slots
            _, got = autodiff.jvp(f, [consts[i] for i in active], [Tensor(tangents[i], slots[i]) for i in active])  # type: ignore[arg-type]
    except Exception as err:
        return _crash("jvp", err, active)
    want = [np.zeros(g.shape, d.storage) for g, d in zip(got, out_dtypes, strict=True)]
    return _check_arrays("jvp", list(got), want, None, True, True, active, out_dtypes)


# -- the vmap rows --------------------------------------------------------------------------------------------

#: examples per vmap row
VMAP_BATCH: Final = 3


def _vmap_rows(case: Case) -> list[tuple[int, tuple[int, ...]]]:
    """``(batch axis, batched operands)`` per vmap row: axes 0 and 1, each array operand
    batched alone and all of them together (Python scalars are never batched)."""
    arrays = tuple(i for i, s in enumerate(case.operand_slots) if isinstance(s, DType))
    sets = [(i,) for i in arrays] + ([arrays] if len(arrays) > 1 else [])
    return [(axis, batched) for axis in (0, 1) for batched in sets]


def _check_vmap(case: Case, operands: Sequence[Any], seed: int, tol_dtype: DType | None, exact: bool,
                primal_ok: bool) -> list[CheckResult]:  # fmt: skip
    """``autodiff.vmap`` of the op against ``jax.vmap`` of the JAX reference, one check per row.

    Example 0 is the case's operands, the others are drawn the same way with
    other seeds. The unbatched operands are example 0's. Where the primal check
    did not pass (a documented departure), the reference is castwise's own op
    on each example instead, so the row still checks the batching.
    """
    jax = _jax_modules()[0]
    examples = [list(operands)] + [_make_inputs(case, seed + k) for k in range(1, VMAP_BATCH)]
    kw = {"dtype": case.slots[-1]} if case.spec.dtype_param else {}
    checks: list[CheckResult] = []
    for axis, batched in _vmap_rows(case):
        in_axes = tuple(axis if i in batched else None for i in range(len(operands)))
        stacked = [np.stack([np.asarray(e[i]) for e in examples], axis=axis) if i in batched else operands[i]
                   for i in range(len(operands))]  # fmt: skip
        try:
            with use_policy(case.policy):
                args = _ours_args(case, stacked)
                got = _outputs(autodiff.vmap(lambda *xs: case.spec.ours(*xs, **kw), in_axes=in_axes)(*args))
        except Exception as err:
            checks.append(_crash("vmap", err, batched))
            continue
        if primal_ok:
            try:
                with _jax_x64():
                    xs = [_to_jax(x) for x in stacked]
                    ref = _jax_function(case, [_to_jax(x) for x in operands])
                    want = [np.asarray(o) for o in _outputs(jax.vmap(ref, in_axes=in_axes)(*xs))]
            except Exception:  # jax.vmap refuses what jax.lax accepts: JAX's results per example instead
                per_jax = [_run_jax(case, [e[i] if i in batched else operands[i] for i in range(len(operands))])
                           for e in examples]  # fmt: skip
                want = [np.stack([p[k] for p in per_jax], axis=axis) for k in range(len(per_jax[0]))]
        else:
            with use_policy(case.policy):
                per = [_call_ours(case, _ours_args(case, [e[i] if i in batched else operands[i]
                                                          for i in range(len(operands))]))
                       for e in examples]  # fmt: skip
            want = [np.stack([p[k].numpy() for p in per], axis=axis) for k in range(len(per[0]))]
        # XLA divides by an unbatched (broadcast) operand through its reciprocal: an ulp off
        row_exact = exact and not (case.spec.op == "div" and len(batched) < len(operands))
        check = _check_arrays("vmap", got, want, tol_dtype, row_exact, False, batched,
                              [o.dtype for o in got] if not primal_ok else None)  # fmt: skip
        if not check.ok:
            check.message = f"batch axis {axis}, operands {batched} batched: {check.message}"
        checks.append(check)
    return checks


def run_case(case: Case, seed: int = 0) -> CaseResult:
    """Run every check of ``case``."""
    start = time.process_time()
    try:
        result = _run_case(case, seed)
    except Exception as err:  # a bug of the sweep itself: report it on the case, keep sweeping
        result = CaseResult(case.id, case.spec.name, case.spec.family, case.policy,
                            tuple(slot_name(s) for s in case.slots), case.describe())  # fmt: skip
        result.checks.append(_crash("agree", err, side="the parity sweep"))
        result.settle(case)
    result.cpu_s = time.process_time() - start
    return result


def _run_case(case: Case, seed: int) -> CaseResult:
    """``run_case`` without the guard: agree, then primal, replay and derivatives."""
    result = CaseResult(case.id, case.spec.name, case.spec.family, case.policy,
                        tuple(slot_name(s) for s in case.slots), case.describe())  # fmt: skip
    operands = _make_inputs(case, seed)
    # castwise, eagerly, untracked
    eager: list[Tensor] = []
    ours_err: BaseException | None = None
    try:
        with use_policy(case.policy):
            eager = _call_ours(case, _ours_args(case, operands))
    except CASTWISE_REFUSALS as err:
        ours_err = err
    except Exception as err:
        result.checks.append(_crash("agree", err))
        result.settle(case)
        return result
    # JAX (under a policy other than jax, through castwise's plan: no plan, no reference)
    want: list[np.ndarray] = []
    jax_err: str = ""
    try:
        if case.spec.arity and case.policy != "jax":
            _planned(case)
    except PromotionError as err:
        jax_err = f"no reference: the {case.policy} plan refuses ({err})"
    if not jax_err:
        try:
            want = _run_jax(case, operands)
        except Exception as err:
            jax_err = f"{type(err).__name__}: {err}".splitlines()[0]
    result.castwise_error = "" if ours_err is None else f"{type(ours_err).__name__}: {ours_err}"
    result.jax_error = jax_err
    if ours_err is not None or jax_err:
        if ours_err is not None and jax_err:
            result.status = "unsupported"
            return result
        dep = departure_for(case, operands, ours_err is not None, bool(jax_err))
        if dep is not None:
            result.status = "departure"
            result.departure = dep.name
            result.checks.append(CheckResult("agree", True))
            return result
        who = "castwise refuses what JAX accepts" if ours_err is not None else "castwise accepts what JAX refuses"
        result.checks.append(CheckResult("agree", False, math.inf, None, who,
                                         jax_err or "accepted", result.castwise_error or "accepted"))  # fmt: skip
        result.settle(case)
        return result
    result.checks.append(CheckResult("agree", True))
    # primal: JAX's dtype exactly; values exactly or within the narrowest dtype's tolerance
    slots = [s for s in case.slots if isinstance(s, DType)]
    out_dtypes = [o.dtype for o in eager]
    try:
        targets = _planned(case) if case.spec.arity else []
    except PromotionError:  # jax policy with a jnp reference: castwise accepted, so its plan did too
        targets = []
    tol_dtype = _narrowest([*slots, *out_dtypes, *targets])
    widest_kind = max((s.kind for s in [*slots, *out_dtypes]), key=lambda k: dt.KIND_CATEGORY[k], default="int")
    exact = widest_kind in case.spec.exact or tol_dtype is None
    if case.spec.scalar_not_exact and any(isinstance(s, PyScalar) for s in case.slots):
        exact = tol_dtype is None
    primal = _check_arrays("primal", eager, want, tol_dtype, exact, False)
    result.checks.append(primal)
    if case.spec.arity:
        result.checks.append(_check_replay(case, operands, eager))
        result.checks.extend(_check_vmap(case, operands, seed, tol_dtype, exact, primal.ok))
    same_avals = all(o.dtype is dt.dtype(w.dtype) and o.shape == w.shape for o, w in zip(eager, want, strict=True))
    if same_avals:  # a wrong dtype or shape makes every cotangent check fail on JAX's side: said once above
        result.checks.extend(_check_derivatives(case, operands, eager, seed, tol_dtype))
    result.settle(case)
    return result


# -- the report ------------------------------------------------------------------------------------------


@dataclass
class Cell:
    """One family x check cell of the summary table."""

    passed: int = 0
    failed: int = 0
    known: int = 0
    worst: float = 0.0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.known

    def text(self, show_worst: bool) -> str:
        if not self.total:
            return "-"
        out = f"{self.passed}/{self.total}"
        if self.known:
            out += f" ({self.known}k)"
        return out + (f" w={_short(self.worst)}" if show_worst else "")


@dataclass
class Report:
    """The outcome of a sweep; ``ok`` when nothing failed (known failures count with ``strict``)."""

    results: list[CaseResult]
    seed: int
    quick: bool
    policies: tuple[str, ...]
    elapsed_s: float = 0.0
    strict: bool = False

    @property
    def failed(self) -> list[CaseResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def known(self) -> list[CaseResult]:
        return [r for r in self.results if r.known_failures]

    @property
    def unsupported(self) -> list[CaseResult]:
        return [r for r in self.results if r.status == "unsupported"]

    @property
    def departures(self) -> list[CaseResult]:
        """Cases whose acceptance disagreement a documented departure explains."""
        return [r for r in self.results if r.status == "departure"]

    @property
    def departed_checks(self) -> list[tuple[CaseResult, CheckResult]]:
        """Checks of accepted cases whose difference from JAX a documented departure explains."""
        return [(r, c) for r in self.results for c in r.checks if c.departure]

    def departure_counts(self) -> dict[str, tuple[int, int]]:
        """Departure name -> (cases it explains an acceptance disagreement of, checks it passes)."""
        counts = {d.name: (0, 0) for d in DEPARTURES}
        for r in self.departures:
            cases, checks = counts[r.departure]
            counts[r.departure] = (cases + 1, checks)
        for _, c in self.departed_checks:
            cases, checks = counts[c.departure]
            counts[c.departure] = (cases, checks + 1)
        return counts

    @property
    def unchecked_families(self) -> dict[str, int]:
        """Families of the run none of whose cases got a check beyond ``agree`` -> their case count.

        Every case of such a family was refused by both sides (or departed): the
        run compared no value of it, and says so instead of reporting OK.
        """
        counts: dict[str, int] = {}
        checked: set[str] = set()
        for r in self.results:
            counts[r.family] = counts.get(r.family, 0) + 1
            if any(c.check != "agree" for c in r.checks):
                checked.add(r.family)
        return {fam: n for fam, n in counts.items() if fam not in checked}

    @property
    def ok(self) -> bool:
        return not self.failed and not (self.strict and self.known) and not self.unchecked_families

    def table(self) -> dict[str, dict[str, Cell]]:
        """family -> check -> pass/fail/known counts and the worst error relative to its tolerance."""
        cells: dict[str, dict[str, Cell]] = {}
        for r in self.results:
            row = cells.setdefault(r.family, {c: Cell() for c in CHECKS})
            for c in r.checks:
                cell = row[c.check]
                if c.ok:
                    cell.passed += 1
                elif c.known:
                    cell.known += 1
                else:
                    cell.failed += 1
                if c.check != "agree" and not c.known and not c.departure:  # both listed on their own
                    cell.worst = max(cell.worst, c.ratio)
        return cells

    def to_json(self) -> dict[str, Any]:
        """The whole report as JSON-ready data (``--json``)."""

        def failure(r: CaseResult, c: CheckResult) -> dict[str, Any]:
            return {"case": r.case_id, "op": r.spec, "family": r.family, "policy": r.policy, "dtypes": list(r.slots),
                    "operands": r.description, "check": c.check,
                    "active": None if c.active is None else list(c.active), "message": c.message,
                    "expected": c.expected, "got": c.got, "ratio": _json_float(c.ratio), "known": c.known,
                    "departure": c.departure}  # fmt: skip

        table = self.table()
        return {
            "version": 1,
            "ok": self.ok,
            "seed": self.seed,
            "quick": self.quick,
            "strict": self.strict,
            "policies": list(self.policies),
            "elapsed_s": round(self.elapsed_s, 2),
            "counts": {
                "cases": len(self.results),
                "checks": sum(len(r.checks) for r in self.results),
                "failed_cases": len(self.failed),
                "failed_checks": sum(len(r.failures) for r in self.results),
                "known_failed_checks": sum(len(r.known_failures) for r in self.results),
                "unsupported": len(self.unsupported),
                "departures": len(self.departures),
            },
            "summary": [
                {
                    "family": fam,
                    "check": chk,
                    "passed": cell.passed,
                    "failed": cell.failed,
                    "known": cell.known,
                    "worst": _json_float(cell.worst),
                }
                for fam, row in sorted(table.items())
                for chk, cell in row.items()
            ],
            "failures": [failure(r, c) for r in self.results for c in r.failures],
            "known_failures": [failure(r, c) for r in self.results for c in r.known_failures],
            "unsupported": [
                {
                    "case": r.case_id,
                    "op": r.spec,
                    "policy": r.policy,
                    "dtypes": list(r.slots),
                    "castwise": r.castwise_error,
                    "jax": r.jax_error,
                }
                for r in self.unsupported
            ],
            "departures": [
                {
                    "case": r.case_id,
                    "op": r.spec,
                    "policy": r.policy,
                    "dtypes": list(r.slots),
                    "departure": r.departure,
                    "castwise": r.castwise_error,
                    "jax": r.jax_error,
                }
                for r in self.departures
            ],
            "departed_checks": [failure(r, c) for r, c in self.departed_checks],
            "cpu_s_by_op": _cpu_by_spec(self.results),
        }

    def render(self, max_failures: int = 10) -> str:
        """The text report: summary table, unsupported and departures, known failures, first failures in full."""
        lines = []
        table = self.table()
        head = f"{'family':<21}" + "".join(f"{c:>22}" for c in CHECKS)
        lines += [head, "-" * len(head)]
        for fam in sorted(table):
            lines.append(f"{fam:<21}" + "".join(f"{table[fam][c].text(c != 'agree'):>22}" for c in CHECKS))
        lines += [
            "",
            "cells: passed/total checks (k: known failures); "
            "w: worst error / tolerance, known failures aside (0: exact)",
        ]
        lines.append(f"cases: {len(self.results)}, failed: {len(self.failed)}, with known failures: "
                     f"{len(self.known)}, unsupported (castwise and JAX both refuse): {len(self.unsupported)}, "
                     f"documented departures: {len(self.departures)} cases and {len(self.departed_checks)} checks, "
                     f"time: {self.elapsed_s:.1f}s")  # fmt: skip
        if self.unsupported:
            lines += ["", "unsupported (castwise and JAX both refuse), by op and policy:"]
            lines.extend("  " + line for line in group_unsupported(self.unsupported))
        counts = {name: n for name, n in self.departure_counts().items() if any(n)}
        if counts:
            lines += ["", "documented departures (castwise and JAX differ by design: cases accepted by only one, "
                      "checks passed as explained):"]  # fmt: skip
            for dep in DEPARTURES:
                if dep.name in counts:
                    cases, checks = counts[dep.name]
                    what = ", ".join(_count(n, w) for n, w in ((cases, "case"), (checks, "check")) if n)
                    lines.append(f"  {dep.name} ({what}): {dep.reason} [{dep.where}]")
        known: dict[str, int] = {}
        for r in self.results:
            for c in r.known_failures:
                known[c.known] = known.get(c.known, 0) + 1
        if known:
            lines += ["", "known failures (castwise bugs found by this sweep, not fixed yet):"]
            for k in KNOWN_FAILURES:
                if k.name in known:
                    lines.append(f"  {k.name} ({known[k.name]} checks): {k.description}")
        failed = [(r, c) for r in self.results for c in r.failures]
        if self.strict:
            failed += [(r, c) for r in self.results for c in r.known_failures]
        lines.append("")
        for fam, n in sorted(self.unchecked_families.items()):
            lines.append(f"NOT CHECKED: family {fam}: none of its {_count(n, 'case')} was accepted by both "
                         "castwise and JAX, so no value was compared (widen --dtypes or --policy)")  # fmt: skip
        if failed:
            shown = min(max_failures, len(failed))
            lines.append(f"FAILED: {len(failed)} checks in {len({id(r) for r, _ in failed})} cases; the first {shown}:")
            for r, c in failed[:shown]:
                active = "" if c.active is None else f" active={list(c.active)}"
                lines.append(f"- {c.check}: {r.description}{active}{' [known: ' + c.known + ']' if c.known else ''}")
                lines.append(f"    {c.message}")
                if c.expected or c.got:
                    lines.append(f"    expected: {c.expected}")
                    lines.append(f"    got:      {c.got}")
        elif not self.unchecked_families:
            lines.append("OK: castwise agrees with JAX on every supported case" +
                         (" (known failures aside)" if known else ""))  # fmt: skip
        return "\n".join(lines)


def markdown(report: Report) -> str:
    """The report as Markdown (``--markdown``): the summary table, the unsupported combinations
    grouped by op and policy, and the departure and known-failure counts. docs/parity.md pastes it."""
    lines = [f"Seed {report.seed}, policies {', '.join(report.policies)}{' (--quick)' if report.quick else ''}: "
             f"{len(report.results)} cases, {sum(len(r.checks) for r in report.results)} checks, "
             f"{len(report.failed)} failed cases, {len(report.unsupported)} unsupported, "
             f"{len(report.departures)} departures.", ""]  # fmt: skip
    table = report.table()
    lines += ["| family | " + " | ".join(CHECKS) + " |", "|---" * (len(CHECKS) + 1) + "|"]
    for fam in sorted(table):
        lines.append(f"| {fam} | " + " | ".join(table[fam][c].text(c != "agree") for c in CHECKS) + " |")
    same: dict[str, dict[str, set[str]]] = {}
    mixed: dict[tuple[str, str], list[CaseResult]] = {}
    for r in report.unsupported:
        tensor_slots = set(r.slots)
        if len(tensor_slots) == 1 and not any(x.startswith("py-") for x in r.slots):
            same.setdefault(r.spec, {}).setdefault(r.slots[0], set()).add(r.policy)
        else:
            mixed.setdefault((r.policy, r.spec), []).append(r)
    lines += ["", "### Unsupported: an op in one dtype", "",
              "castwise and JAX both refuse (a policy in brackets: only under it).", "",
              "| op | dtypes |", "|---|---|"]  # fmt: skip
    for spec, by_dtype in same.items():
        cells = []
        for d, pols in by_dtype.items():
            only = "" if pols == set(report.policies) else f" [{', '.join(sorted(pols))}]"
            cells.append(f"{d}{only}")
        lines.append(f"| {spec} | {', '.join(cells)} |")
    lines += ["", "### Unsupported: mixed dtypes and Python scalars", "",
              "No promotion path under the policy (castwise's plan refuses; under a policy other than jax "
              "there is then no JAX reference either), or the op refuses the promoted dtype. Counts, then "
              "the first few slot tuples.", "", "<details><summary>by policy and op</summary>", "",
              "| policy | op | no promotion path | promoted dtype refused |", "|---|---|---|---|"]  # fmt: skip
    for (policy, spec), rs in sorted(mixed.items()):
        no_path = [r for r in rs if r.castwise_error.startswith("PromotionError")]
        refused = [r for r in rs if not r.castwise_error.startswith("PromotionError")]

        def cell(items: list[CaseResult]) -> str:
            if not items:
                return ""
            shown = " ".join("(" + ",".join(r.slots) + ")" for r in items[:4])
            return f"{len(items)}: {shown}{' ...' if len(items) > 4 else ''}"

        lines.append(f"| {policy} | {spec} | {cell(no_path)} | {cell(refused)} |")
    lines += ["", "</details>"]
    counts = report.departure_counts()
    known: dict[str, int] = {}
    for r in report.results:
        for c in r.known_failures:
            known[c.known] = known.get(c.known, 0) + 1
    deps = ", ".join(f"{name} {cases}" + (f" + {_count(checks, 'check')}" if checks else "")
                     for name, (cases, checks) in counts.items())  # fmt: skip
    knowns = ", ".join(f"{k.name} {known.get(k.name, 0)}" for k in KNOWN_FAILURES) or "none"
    lines += ["", f"Documented departures (cases): {deps}. Known failures (checks): {knowns}."]
    return "\n".join(lines) + "\n"


def _cpu_by_spec(results: Sequence[CaseResult]) -> dict[str, float]:
    """CPU seconds per sweep spec, slowest first (where a sweep spends its time)."""
    out: dict[str, float] = {}
    for r in results:
        out[r.spec] = out.get(r.spec, 0.0) + r.cpu_s
    return {k: round(v, 2) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _short(x: float) -> str:
    return "inf" if math.isinf(x) else ("0" if x == 0 else f"{x:.2g}")


def _json_float(x: float) -> float | str:
    return "inf" if math.isinf(x) else round(x, 6)


def group_unsupported(results: Sequence[CaseResult]) -> list[str]:
    """One line per (op, policy) listing the refused slot tuples, compactly."""
    groups: dict[tuple[str, str], list[str]] = {}
    for r in results:
        groups.setdefault((r.spec, r.policy), []).append("(" + ",".join(r.slots) + ")")
    lines = []
    for (spec, policy), items in groups.items():
        shown = " ".join(items[:8]) + (f" ... ({len(items)} in all)" if len(items) > 8 else "")
        lines.append(f"{spec} @{policy}: {shown}")
    return lines


# -- running the sweep -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    """What ``castwise parity`` was asked to run."""

    policies: tuple[str, ...] = DEFAULT_POLICIES
    ops: tuple[str, ...] = ("*",)
    dtypes: tuple[DType, ...] = DEFAULT_DTYPES
    seed: int = 0
    quick: bool = False
    jobs: int = 1
    #: known failures fail the run too
    strict: bool = False


class Progress:
    """A simple progress bar on a stream (a line per 10% when it is not a terminal)."""

    def __init__(self, total: int, stream: TextIO | None = sys.stderr, width: int = 30) -> None:
        self.total = max(total, 1)
        self.stream = stream
        self.width = width
        self.start = time.monotonic()
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self._last_tenth = -1
        self._last_draw = 0.0

    def update(self, done: int, failed: int) -> None:
        """Show ``done`` of ``total`` cases (redrawn at most every 0.1 s on a terminal)."""
        if self.stream is None:
            return
        frac = done / self.total
        now = time.monotonic()
        if self.tty:
            if now - self._last_draw < 0.1 and done < self.total:
                return
            self._last_draw = now
            fill = int(frac * self.width)
            bar = "#" * fill + "." * (self.width - fill)
            self.stream.write(f"\r[{bar}] {done}/{self.total} cases, {failed} failed, {now - self.start:.0f}s")
            if done >= self.total:
                self.stream.write("\n")
        else:
            tenth = int(frac * 10)
            if tenth == self._last_tenth:
                return
            self._last_tenth = tenth
            self.stream.write(f"parity: {done}/{self.total} cases, {failed} failed, {now - self.start:.0f}s\n")
        self.stream.flush()


@functools.lru_cache(maxsize=2)
def _cases_for(options: Options) -> list[Case]:
    """The case list of a run (each worker builds it once; it is deterministic)."""
    return build_cases(options.policies, options.ops, options.dtypes, options.seed, options.quick)


def _run_shard(options: Options, indices: Sequence[int]) -> list[CaseResult]:
    """Worker entry point: rebuild the (deterministic) case list and run a shard of it."""
    cases = _cases_for(options)
    return [run_case(cases[i], options.seed) for i in indices]


def run_parity(options: Options, progress: TextIO | None = sys.stderr) -> Report:
    """Run the sweep and return its report."""
    start = time.monotonic()
    cases = build_cases(options.policies, options.ops, options.dtypes, options.seed, options.quick)
    bar = Progress(len(cases), progress)
    results: list[CaseResult] = []
    failed = 0
    bar.update(0, 0)
    if options.jobs > 1 and len(cases) > 1:
        try:
            results = _run_parallel(options, cases, bar)
        except (OSError, RuntimeError) as err:  # no worker processes here (a sandbox, a broken pool)
            print(f"parity: worker processes failed ({err}); running in this process", file=sys.stderr)
            results = []
    if not results:
        for i, case in enumerate(cases):
            r = run_case(case, options.seed)
            failed += r.status == "failed"
            results.append(r)
            bar.update(i + 1, failed)
    return Report(results, options.seed, options.quick, options.policies, time.monotonic() - start, options.strict)


def _run_parallel(options: Options, cases: Sequence[Case], bar: Progress) -> list[CaseResult]:
    """Each spec's cases (every policy) go to one worker, largest groups first: JAX compiles
    once per primitive signature and process, and a spec's cases share their signatures."""
    import concurrent.futures
    import multiprocessing

    groups: dict[str, list[int]] = {}
    for i, case in enumerate(cases):
        groups.setdefault(case.spec.name, []).append(i)
    shards = sorted(groups.values(), key=len, reverse=True)
    results: dict[int, CaseResult] = {}
    done = failed = 0
    # spawn, not fork: JAX's runtime threads do not survive a fork.
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(options.jobs, mp_context=ctx) as pool:
        futures = {pool.submit(_run_shard, options, shard): shard for shard in shards}
        for fut in concurrent.futures.as_completed(futures):
            for i, r in zip(futures[fut], fut.result(), strict=True):
                results[i] = r
                failed += r.status == "failed"
            done += len(futures[fut])
            bar.update(done, failed)
    return [results[i] for i in range(len(cases))]


def add_parser(sub: Any) -> None:
    """Register ``castwise parity`` on the CLI's subparsers."""
    p = sub.add_parser(
        "parity",
        help="sweep ops x dtypes x operand orders x active sets against JAX (primal, replay, JVP, VJP)",
        description="Compare castwise with JAX on every op of the vocabulary; exit 1 on any failure.",
    )
    p.add_argument("--policy", dest="policies", nargs="+", action="extend", metavar="P",
                   help=f"promotion policies to sweep (default: {' '.join(DEFAULT_POLICIES)})")  # fmt: skip
    p.add_argument("--ops", default="*", metavar="PATTERN",
                   help="comma-separated glob patterns over op names, sweep ids and families "
                   "(e.g. 'add,dot_*,unary')")  # fmt: skip
    p.add_argument("--dtypes", default=None, metavar="LIST",
                   help="comma-separated dtypes (names or short names; 'core', 'float8', 'narrow-int'); a case runs "
                   "when all its dtypes are listed (default: core + float8 + narrow-int)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="seed of the inputs and sampled dtype pairs (default 0)")
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"a stratified sample: {QUICK_CASES} // (number of op specs) cases per spec, a few hundred",
    )
    p.add_argument("--json", dest="json_file", metavar="FILE", help="write the full report as JSON")
    p.add_argument("--jobs", type=int, default=int(os.environ.get("CASTWISE_PARITY_JOBS", "0")),
                   help="worker processes (default 0: one per CPU, at most 4, for runs of 200 cases or more; "
                   "or $CASTWISE_PARITY_JOBS)")  # fmt: skip
    p.add_argument(
        "--markdown",
        dest="markdown_file",
        metavar="FILE",
        help="write the summary, unsupported combinations, departures and known failures as Markdown",
    )
    p.add_argument("--strict", action="store_true", help="count known failures (KNOWN_FAILURES) as failures")
    p.add_argument("--max-failures", type=int, default=10, help="failures printed in full (default 10)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=cmd_parity)


def _cpus() -> int:
    """CPUs this process may run on (the affinity mask where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def cmd_parity(args: Any) -> int:
    """``castwise parity``: run, print the report, write JSON; 1 on any failure."""
    try:
        _jax_modules()
    except ImportError:
        print("castwise parity needs JAX: pip install 'castwise[jax]'", file=sys.stderr)
        return 2
    import runtime

    policies = tuple(args.policies) if args.policies else DEFAULT_POLICIES
    unknown = [p for p in policies if p not in runtime.policies()]
    if unknown:
        print(f"unknown policy {', '.join(unknown)}; known: {', '.join(runtime.policies())}", file=sys.stderr)
        return 2
    try:
        dtypes = parse_dtypes(args.dtypes)
    except TypeError as err:
        print(f"--dtypes: {err}", file=sys.stderr)
        return 2
    options = Options(policies, tuple(p.strip() for p in args.ops.split(",") if p.strip()), dtypes, args.seed,
                      args.quick, max(1, args.jobs), args.strict)  # fmt: skip
    n_cases = len(_cases_for(options))
    if not n_cases:
        print(f"no cases match --ops {args.ops!r} and --dtypes {args.dtypes!r}", file=sys.stderr)
        return 2
    if args.jobs <= 0:
        # Each worker imports JAX and compiles its own primitives (seconds): small runs stay in process.
        options = replace(options, jobs=1 if n_cases < 200 else min(_cpus(), 4))
    report = run_parity(options, None if args.no_progress else sys.stderr)
    print(report.render(args.max_failures))
    if args.json_file:
        with open(args.json_file, "w") as fh:
            json.dump(report.to_json(), fh, indent=1)
            fh.write("\n")
    if args.markdown_file:
        with open(args.markdown_file, "w") as fh:
            fh.write(markdown(report))
    return 0 if report.ok else 1
