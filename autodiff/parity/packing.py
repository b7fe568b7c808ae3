"""JAX references in few XLA programs: the sweep's evaluator of ``Request`` s.

Every JAX reference a case needs (its primal, each operand's JVP, the VJP, the
vmap rows) is a ``Request``: a pure JAX function and its arguments.
``evaluate_eager`` runs each one as the sweep always has, op by op under
``jax.disable_jit`` with x64 on: that is the ground truth, and it obtains an XLA
executable for about every primitive of every request. ``evaluate`` gives the
same outcomes, bit for bit, from far fewer executables:

1. Each request is traced to a jaxpr (no compile). A request JAX refuses fails
   here, with the error text the eager run gives; so does one XLA's CPU compiler
   would abort the process on (a concatenate of 2-bit integers).
2. Requests whose jaxprs are identical (the same ops, params, literals, constants
   and input types) are stacked along a new leading axis and evaluated by one
   ``jax.vmap`` of their jaxpr, where the family's entry in ``PACKING`` allows it.
3. The rest are packed into chunks of about ``CHUNK_COST`` equations, each chunk one
   ``jax.jit`` taking every member's arrays and returning every member's outputs,
   compiled with ``COMPILER_OPTIONS`` (narrow floats rounded after each op), on one
   thread per CPU.
4. A chunk that fails to compile or run is split in halves, down to single
   requests, which run eagerly: a failure never becomes a wrong result.

``PACKING`` says, per op family, whether it is packed: only where packing was found to
agree bit for bit with the eager run (``benchmarks/parity.py --compare --all-families``
measures it; ``tests/autodiff/test_parity_packing.py`` keeps a sample of it).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

# what a reference is: the sweep's own types
from autodiff.parity.references import Outcome, Request
from autodiff.parity.references import error_line as error_text
from autodiff.parity.references import evaluate_eager as _references_eager

# -- how each family is packed --------------------------------------------------------------------


@dataclass(frozen=True)
class Packing:
    """How a family's requests are evaluated by ``evaluate``."""

    #: compiled in packed chunks (else each request runs eagerly, as ``evaluate_eager``)
    jit: bool
    #: requests with identical jaxprs are stacked under one ``jax.vmap``
    vmap: bool
    #: what the bit-for-bit comparison with ``evaluate_eager`` found
    reason: str


_AGREE: Final = "bit for bit with fusion over every quick request of the family (benchmarks/parity.py --compare)"

#: Per family (``Request.group``, the ops' families of ``runtime.core.ops``), from the
#: comparison of ``evaluate`` with ``evaluate_eager`` over the 1,812 requests of ``--quick``
#: (``benchmarks/parity.py --compare --all-families``); a family not listed runs eagerly.
PACKING: Final[dict[str, Packing]] = {
    **{
        family: Packing(True, True, _AGREE)
        for family in (
            "call",
            "clamp",
            "compare",
            "concatenate",
            "conv",
            "convert",
            "dot_general",
            "dynamic_slice",
            "dynamic_update_slice",
            "gather",
            "logical",
            "scatter",
            "select",
            "structural",
            "window",
        )
    },
    **{
        family: Packing(False, False, f"eager: fused packing differed on {what}; no packing that agrees was found")
        for family, what in (
            ("binary", "7 of 412 requests (div-broadcast f16/f8 primal, vmap rows and JVP; an atan2 VJP)"),
            ("unary", "8 of 420, all derivatives of wide or complex floats (tanh f64, rsqrt/sinh c128, tan c64)"),
            ("reduce", "3 of 80, VJPs of reduce_max/reduce_min (f64, c64, c128)"),
            ("scan", "2 of 100, the f32 cumlogsumexp JVP and VJP"),
            ("linalg", "10 of 105 JVPs/VJPs by an ulp (det c128, eigvals f32/c64, svd f64, qr c64)"),
            ("fft", "8 of 100, hfft of bfloat16 and float8 (primal, vmap rows and JVP)"),
        )
    },
}

#: A family ``PACKING`` does not list: nothing was measured, so nothing is packed.
UNMEASURED: Final = Packing(False, False, "not measured against the eager run: evaluated eagerly")

#: XLA options of every packed executable. XLA may otherwise keep a narrow float's intermediate
#: in float32 across a fused chain of ops (its converts elided); the eager run rounds after each.
COMPILER_OPTIONS: Final[dict[str, Any]] = {"xla_allow_excess_precision": False}

#: Primitives XLA's CPU compiler cannot legalize in a float8 format (chlo): the eager run fails
#: on them, while a jitted JVP whose primal output is unused drops them and succeeds. Requests
#: holding one run eagerly, so that they fail as the sweep sees them fail.
_NO_FLOAT8: Final = frozenset({"erfc", "bessel_i1e"})

#: Equations per packed chunk: 32 chunks for the 1,812 requests of ``--quick``. At this size a
#: chunk compiles in about the sum of its requests' own compile times (XLA's time grows with the
#: program's content), while one chunk for the whole sweep is far slower; not tuned further.
CHUNK_COST: Final = 600

#: Errors of tracing that an eager run need not raise (it has concrete values): such a
#: request runs eagerly to find out.
_TRACE_ONLY_ERRORS: Final = (
    "ConcretizationTypeError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "TracerArrayConversionError",
    "UnexpectedTracerError",
    "NonConcreteBooleanIndexError",
)

#: What a request that XLA's CPU compiler would abort on is answered with (the sweep's own text).
CONCATENATE_2BIT: Final = "RuntimeError: XLA CPU cannot compile a concatenate of 2-bit integers (it aborts)"


# -- shared -------------------------------------------------------------------------------------------


def _jax() -> Any:
    import jax

    return jax


@contextlib.contextmanager
def _x64(eager: bool) -> Iterator[None]:
    """x64 JAX (the references are defined against it), op by op when ``eager``; JAX's warnings
    (a convert dropping an imaginary part) are not the sweep's to report."""
    jax = _jax()
    with jax.enable_x64(True), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if eager:
            with jax.disable_jit():
                yield
        else:
            yield


def same(a: Outcome, b: Outcome) -> bool:
    """Whether two outcomes are equal bit for bit: the same refusal text, or the same dtypes,
    shapes and bytes (NaN payloads and signed zeros included)."""
    if a.arrays is None or b.arrays is None:
        return a.arrays is None and b.arrays is None and a.error == b.error
    return len(a.arrays) == len(b.arrays) and all(
        x.dtype == y.dtype
        and x.shape == y.shape
        and np.ascontiguousarray(x).tobytes() == np.ascontiguousarray(y).tobytes()
        for x, y in zip(a.arrays, b.arrays, strict=True)
    )


def _outputs(result: Any) -> list[Any]:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _is_array(a: Any) -> bool:
    """Arguments that become JAX arrays; anything else (Python scalars) is closed over, weak."""
    return isinstance(a, (np.ndarray, np.generic))


def _narrow_int(d: np.dtype) -> bool:
    return d.name in ("int2", "uint2")


def _float8(aval: Any) -> bool:
    return hasattr(aval, "dtype") and np.dtype(aval.dtype).name.startswith("float8")


def _needs_eager(jaxpr: Any) -> bool:
    """Whether the program holds an op XLA cannot compile in float8 (``_NO_FLOAT8``)."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in _NO_FLOAT8 and any(_float8(v.aval) for v in eqn.invars):
            return True
        if any(_needs_eager(sub) for sub in _subjaxprs(eqn)):
            return True
    return False


def _aborts_xla(jaxpr: Any) -> str:
    """The error to answer instead of compiling a program XLA's CPU compiler aborts the process on."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "concatenate" and any(
            _narrow_int(np.dtype(v.aval.dtype)) for v in eqn.invars if hasattr(v.aval, "dtype")
        ):
            return CONCATENATE_2BIT
        for sub in _subjaxprs(eqn):
            found = _aborts_xla(sub)
            if found:
                return found
    return ""


def _subjaxprs(eqn: Any) -> Iterator[Any]:
    """The jaxprs inside an equation's params (pjit, custom rules, scans, conds)."""
    for p in eqn.params.values():
        for q in p if isinstance(p, (tuple, list)) else (p,):
            inner = getattr(q, "jaxpr", None)
            if inner is not None and hasattr(inner, "eqns"):
                yield inner
            elif hasattr(q, "eqns"):
                yield q


def _cost(jaxpr: Any) -> int:
    """Equations of a jaxpr, those inside its calls counted: the size of its XLA program."""
    return sum(1 + sum(_cost(s) for s in _subjaxprs(e)) for e in jaxpr.eqns)


def _closed(request: Request) -> tuple[Callable[..., tuple[Any, ...]], list[np.ndarray]]:
    """The request as a function of its arrays only (Python scalars closed over, so they stay weak)."""
    arrays = [np.asarray(a) for a in request.args if _is_array(a)]
    where = [i for i, a in enumerate(request.args) if _is_array(a)]

    def f(*xs: Any) -> tuple[Any, ...]:
        call = list(request.args)
        for i, x in zip(where, xs, strict=True):
            call[i] = x
        return tuple(_outputs(request.fn(*call)))

    return f, arrays


# -- the ground truth ------------------------------------------------------------------------------


def _eager_one(request: Request) -> Outcome:
    jax = _jax()
    # a 2-bit integer may appear inside the program only (a convert): the guard reads its trace
    f, arrays = _closed(request)
    try:
        with _x64(eager=False):
            guard = _aborts_xla(jax.make_jaxpr(f)(*arrays).jaxpr)
    except Exception:
        guard = ""  # what fails to trace is left to the eager run to report
    if guard:
        return Outcome(None, guard)
    return _references_eager([request])[0]


def evaluate_eager(requests: Sequence[Request]) -> list[Outcome]:
    """Each request on its own, op by op (``jax.disable_jit``) with x64 on: the sweep's numerics
    (``references.evaluate_eager``), after the guard against programs XLA's CPU compiler aborts on."""
    return [_eager_one(r) for r in requests]


def quick_requests(seed: int = 0) -> list[Request]:
    """Every request of ``castwise parity --quick`` (``references.requests_for`` of each case)."""
    from autodiff.parity.cases import build_cases
    from autodiff.parity.references import requests_for

    return [r for case in build_cases(quick=True, seed=seed) for r in requests_for(case, seed)]


# -- packed ------------------------------------------------------------------------------------------


@dataclass
class Stats:
    """What ``evaluate`` did (the benchmark and the tests read it)."""

    requests: int = 0
    #: refused when traced (JAX's error), or guarded (an XLA abort)
    refused: int = 0
    #: run eagerly: their family is not packed, their trace needs concrete values, or their chunk failed
    eager: int = 0
    #: requests evaluated inside a vmap over a stack of identical requests
    stacked: int = 0
    #: vmap groups (two requests or more)
    groups: int = 0
    #: chunks compiled and run (failed ones included)
    chunks: int = 0
    #: chunks that failed to compile or run, and were split
    failed_chunks: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class _Traced:
    """A request traced to its jaxpr, with its array arguments."""

    index: int
    request: Request
    arrays: list[np.ndarray]
    jaxpr: Any  # ClosedJaxpr

    def signature(self) -> tuple[Any, ...]:
        """Equal for requests that compute the same function of arguments of the same types."""
        consts = tuple((c.dtype.str, c.shape, c.tobytes()) for c in map(np.asarray, self.jaxpr.consts))
        return (str(self.jaxpr.jaxpr), consts)


@dataclass
class _Unit:
    """Requests evaluated as one: a single request, or a stack of identical ones under vmap."""

    members: list[_Traced]
    cost: int

    @property
    def stacked(self) -> bool:
        return len(self.members) > 1

    def inputs(self) -> list[np.ndarray]:
        if not self.stacked:
            return self.members[0].arrays
        return [np.stack(xs) for xs in zip(*(m.arrays for m in self.members), strict=True)]

    def outputs(self, outs: Sequence[np.ndarray]) -> list[tuple[np.ndarray, ...]]:
        if not self.stacked:
            return [tuple(outs)]
        return [tuple(np.array(o[k]) for o in outs) for k in range(len(self.members))]


def _trace(index: int, request: Request) -> _Traced | Outcome | None:
    """The request's jaxpr; or JAX's refusal; or None where only an eager run can tell."""
    jax = _jax()
    f, arrays = _closed(request)
    try:
        with _x64(eager=False):
            jaxpr = jax.make_jaxpr(f)(*arrays)
    except Exception as err:
        if type(err).__name__ in _TRACE_ONLY_ERRORS:
            return None
        return Outcome(None, error_text(err))
    guard = _aborts_xla(jaxpr.jaxpr)
    if guard:
        return Outcome(None, guard)
    if _needs_eager(jaxpr.jaxpr):
        return None
    return _Traced(index, request, arrays, jaxpr)


def _units(traced: Sequence[_Traced], packing: dict[str, Packing], vmap: bool) -> list[_Unit]:
    """Identical requests of a family that allows it stacked into one unit; the others alone."""
    by_sig: dict[tuple[Any, ...], list[_Traced]] = {}
    units: list[_Unit] = []
    for t in traced:
        if vmap and packing.get(t.request.group, UNMEASURED).vmap:
            by_sig.setdefault((t.request.group, *t.signature()), []).append(t)
        else:
            units.append(_Unit([t], _cost(t.jaxpr.jaxpr)))
    units.extend(_Unit(ms, _cost(ms[0].jaxpr.jaxpr)) for ms in by_sig.values())
    return units


def _chunks(units: Sequence[_Unit], budget: int) -> list[list[_Unit]]:
    """Consecutive units up to ``budget`` equations per chunk (a larger unit alone)."""
    chunks: list[list[_Unit]] = []
    current: list[_Unit] = []
    size = 0
    for u in units:
        if current and size + u.cost > budget:
            chunks.append(current)
            current, size = [], 0
        current.append(u)
        size += u.cost
    if current:
        chunks.append(current)
    return chunks


@dataclass
class _Lowered:
    """A chunk's program, lowered (traced) and not yet compiled, with its arguments."""

    units: Sequence[_Unit]
    lowered: Any
    args: list[np.ndarray]


def _lower(units: Sequence[_Unit]) -> _Lowered:
    """One program for every unit of the chunk. Equal arrays (a case's operands, which its
    primal, derivatives and vmap rows share) become one parameter, so that XLA's CSE computes
    what those requests have in common once: a smaller program to compile."""
    jax = _jax()
    from jax import core

    params: dict[tuple[str, tuple[int, ...], bytes], int] = {}
    args: list[np.ndarray] = []
    wiring: list[list[int]] = []
    for u in units:
        where = []
        for x in u.inputs():
            key = (x.dtype.str, x.shape, np.ascontiguousarray(x).tobytes())
            if key not in params:
                params[key] = len(args)
                args.append(x)
            where.append(params[key])
        wiring.append(where)

    def program(*flat: Any) -> list[Any]:
        outs: list[Any] = []
        for u, where in zip(units, wiring, strict=True):
            jaxpr = u.members[0].jaxpr

            def one(*a: Any, jaxpr: Any = jaxpr) -> list[Any]:
                return core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *a)

            xs = [flat[k] for k in where]
            outs.append(jax.vmap(one)(*xs) if u.stacked else one(*xs))
        return outs

    with _x64(eager=False):
        return _Lowered(units, jax.jit(program).lower(*args), args)


def _compile(chunk: _Lowered) -> Any:
    """XLA's executable for a lowered chunk (C++: the GIL is released, chunks compile in parallel)."""
    return chunk.lowered.compile(compiler_options=COMPILER_OPTIONS)


def _execute(chunk: _Lowered, compiled: Any) -> list[list[tuple[np.ndarray, ...]]]:
    """Run a compiled chunk: the outputs per unit and member."""
    jax = _jax()
    with _x64(eager=False):
        results = jax.device_get(compiled(*chunk.args))
    return [u.outputs([np.asarray(o) for o in outs]) for u, outs in zip(chunk.units, results, strict=True)]


def _run_chunk(units: Sequence[_Unit]) -> list[list[tuple[np.ndarray, ...]]]:
    """Lower, compile and run one chunk."""
    chunk = _lower(units)
    return _execute(chunk, _compile(chunk))


def _store(units: Sequence[_Unit], per_unit: Sequence[Sequence[tuple[np.ndarray, ...]]],
           results: list[Outcome | None], stats: Stats) -> None:  # fmt: skip
    for u, outs in zip(units, per_unit, strict=True):
        stats.stacked += len(u.members) if u.stacked else 0
        stats.groups += u.stacked
        for m, arrays in zip(u.members, outs, strict=True):
            results[m.index] = Outcome(arrays)


def _evaluate_chunk(units: list[_Unit], results: list[Outcome | None], stats: Stats,
                    err: BaseException | None = None) -> None:  # fmt: skip
    """Run a chunk (unless it failed already, with ``err``); on failure its halves, then a
    stack's members one by one, then each request eagerly."""
    if err is None:
        stats.chunks += 1
        try:
            _store(units, _run_chunk(units), results, stats)
            return
        except Exception as e:
            err = e
    stats.failed_chunks += 1
    stats.errors.append(error_text(err))
    if len(units) > 1:
        half = len(units) // 2
        _evaluate_chunk(units[:half], results, stats)
        _evaluate_chunk(units[half:], results, stats)
    elif units[0].stacked:
        _evaluate_chunk([_Unit([m], units[0].cost) for m in units[0].members], results, stats)
    else:
        member = units[0].members[0]
        stats.eager += 1
        results[member.index] = _eager_one(member.request)


def _evaluate_chunks(chunks: Sequence[list[_Unit]], results: list[Outcome | None], stats: Stats, threads: int) -> None:
    """Lower every chunk here (tracing is Python), compile them on ``threads`` threads, run them here."""
    lowered: list[_Lowered | BaseException] = []
    for units in chunks:
        try:
            lowered.append(_lower(units))
        except Exception as err:
            lowered.append(err)
    with concurrent.futures.ThreadPoolExecutor(max(1, threads)) as pool:
        futures = [pool.submit(_compile, c) if isinstance(c, _Lowered) else None for c in lowered]
        for units, chunk, fut in zip(chunks, lowered, futures, strict=True):
            stats.chunks += 1
            try:
                if isinstance(chunk, BaseException):
                    raise chunk
                assert fut is not None
                per_unit = _execute(chunk, fut.result())
            except Exception as err:
                _evaluate_chunk(units, results, stats, err)
                continue
            _store(units, per_unit, results, stats)


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def evaluate(
    requests: Sequence[Request],
    *,
    chunk_cost: int = CHUNK_COST,
    vmap: bool = True,
    packing: dict[str, Packing] | None = None,
    stats: Stats | None = None,
    threads: int | None = None,
) -> list[Outcome]:
    """The outcomes ``evaluate_eager`` gives, from a few XLA executables.

    ``chunk_cost`` bounds the equations per executable; ``vmap`` stacks identical
    requests where the family's ``packing`` entry allows it (default ``PACKING``;
    families not in it run eagerly). ``threads`` compile chunks in parallel (default: one
    per CPU). ``stats``, if given, is filled in.
    """
    packing = PACKING if packing is None else packing
    stats = Stats() if stats is None else stats
    stats.requests += len(requests)
    results: list[Outcome | None] = [None] * len(requests)
    traced: list[_Traced] = []
    for i, r in enumerate(requests):
        if not packing.get(r.group, UNMEASURED).jit:
            stats.eager += 1
            results[i] = _eager_one(r)
            continue
        t = _trace(i, r)
        if t is None:  # (its trace passed the guard, or cannot be made: no second trace to look at)
            stats.eager += 1
            results[i] = _references_eager([r])[0]
        elif isinstance(t, Outcome):
            stats.refused += 1
            results[i] = t
        else:
            traced.append(t)
    _evaluate_chunks(_chunks(_units(traced, packing, vmap), chunk_cost), results, stats,
                     _cpus() if threads is None else threads)  # fmt: skip
    assert all(r is not None for r in results)
    return results  # type: ignore[return-value]
