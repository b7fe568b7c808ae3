"""``autodiff.parity.packing``: packed references equal the eager ones, bit for bit.

The realistic requests come from the sweep's own cases (``references.requests_for``): one
case per family of ``--quick`` by default (its primal, a vmap row and a
derivative), with every family packed, those ``PACKING`` keeps eager included;
every fifth case per family under ``-m slow``, packed as ``PACKING`` says.
The other tests build requests by hand: refusals found without compiling and
reported with the eager run's text, the 2-bit concatenate guard, stacking of
identical requests only, a trace that needs concrete values, and a failing chunk
that is split down to an eager run.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy

import runtime as rt  # noqa: E402
from autodiff.parity import packing  # noqa: E402
from autodiff.parity._common import Case  # noqa: E402
from autodiff.parity.cases import build_cases  # noqa: E402
from autodiff.parity.references import requests_for  # noqa: E402

_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


@pytest.fixture
def compiles() -> Iterator[list[float]]:
    """The executables JAX obtains while the test runs (one duration each)."""
    seen: list[float] = []

    def listen(event: str, duration_secs: float, **_: str | int) -> None:
        if event == _COMPILE_EVENT:
            seen.append(duration_secs)

    jax.monitoring.register_event_duration_secs_listener(listen)
    yield seen
    jax.monitoring.unregister_event_duration_listener(listen)


def _every_family(requests: Sequence[packing.Request]) -> dict[str, packing.Packing]:
    return {r.group: packing.Packing(True, True, "under test") for r in requests}


def _assert_packed_equals_eager(requests: Sequence[packing.Request], table: dict[str, packing.Packing]) -> None:
    eager = packing.evaluate_eager(requests)
    packed = packing.evaluate(requests, packing=table)
    differ = [r.key for r, a, b in zip(requests, eager, packed, strict=True) if not packing.same(a, b)]
    assert not differ


def _one_case_per_family(step: int) -> list[Case]:
    """Every ``step``-th quick case of each family, from its first (so each family keeps one)."""
    seen: dict[str, int] = {}
    picked = []
    for case in build_cases(quick=True):
        k = seen.get(case.spec.family, 0)
        seen[case.spec.family] = k + 1
        if k % step == 0:
            picked.append(case)
    return picked


def _cheap(requests: list[packing.Request]) -> list[packing.Request]:
    """The primal and one derivative of each case: every kind of request, few compiles."""
    keep: list[packing.Request] = []
    kinds: set[tuple[str, str]] = set()
    for r in requests:
        case, what = r.key.rsplit("/", 1)
        kind = what.rstrip("0123456789[], ")
        kind = "derivative" if kind in ("jvp", "vjp") else kind
        if (case, kind) not in kinds:
            kinds.add((case, kind))
            keep.append(r)
    return keep


def test_packed_equals_eager_on_a_case_per_family() -> None:
    requests = _cheap([r for case in _one_case_per_family(10**6) for r in requests_for(case, 0)])
    assert {r.group for r in requests} >= {"unary", "binary", "reduce", "linalg", "scan", "window", "conv"}
    _assert_packed_equals_eager(requests, _every_family(requests))  # the eager families too: their first cases agree


@pytest.mark.slow
def test_packed_equals_eager_on_every_fifth_quick_case() -> None:
    requests = [r for case in _one_case_per_family(5) for r in requests_for(case, 0)]
    _assert_packed_equals_eager(requests, packing.PACKING)


def test_the_table_gives_a_reason_per_family() -> None:
    assert packing.PACKING
    for family, entry in packing.PACKING.items():
        assert entry.reason, family
        assert not entry.vmap or entry.jit, family  # a stack is a packed program


# -- refusals and guards -------------------------------------------------------------------------


def _refusals() -> list[packing.Request]:
    f8a = np.ones(3, jnp.float8_e4m3fn)
    f8b = np.ones(3, jnp.float8_e5m2)
    i8 = np.ones(3, np.int8)
    return [
        packing.Request("fp8 mix", jnp.add, (f8a, f8b), "binary"),  # no implicit promotion path
        packing.Request("shapes", jnp.add, (np.ones(3, np.float32), np.ones(4, np.float32)), "binary"),
        packing.Request("lax dtypes", jax.lax.add, (i8, np.ones(3, np.int16)), "binary"),
        packing.Request("reshape", lambda x: jnp.reshape(x, (4,)), (i8,), "structural"),
    ]


def test_refusals_are_found_without_compiling_and_read_as_eagerly(compiles: list[float]) -> None:
    requests = _refusals()
    table = _every_family(requests)
    stats = packing.Stats()
    packed = packing.evaluate(requests, packing=table, stats=stats)
    assert not compiles
    assert stats.refused == len(requests) and stats.chunks == 0
    eager = packing.evaluate_eager(requests)
    for r, a, b in zip(requests, eager, packed, strict=True):
        assert a.arrays is None and a.error, r.key
        assert b.error == a.error, r.key


def _concatenate_as_uint2(a: Any) -> Any:
    return jnp.concatenate([a.astype(jnp.uint2), a.astype(jnp.uint2)])


def test_a_concatenate_of_2bit_ints_is_refused_before_xla_sees_it(compiles: list[float]) -> None:
    x = np.zeros(3, jnp.int2)
    requests = [
        packing.Request("direct", lambda a, b: jnp.concatenate([a, b]), (x, x), "concatenate"),
        # through a convert and a vmap: the guard reads the whole program
        packing.Request("inner", jax.vmap(_concatenate_as_uint2), (np.zeros((2, 3), np.int8),), "concatenate"),
    ]
    for out in (packing.evaluate(requests, packing=_every_family(requests)), packing.evaluate_eager(requests)):
        assert [o.error for o in out] == [packing.CONCATENATE_2BIT] * 2
    assert not compiles


# -- stacking, traces, fallbacks -------------------------------------------------------------------


def test_identical_requests_share_one_stack_and_others_do_not(compiles: list[float]) -> None:
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(4).astype(np.float32) for _ in range(4)]
    requests = [packing.Request(f"tanh+2 #{k}", lambda x: jnp.tanh(x) + 2.0, (x,), "unary") for k, x in enumerate(xs)]
    # the same ops with another literal, and with another dtype: each is its own program
    requests.append(packing.Request("tanh+3", lambda x: jnp.tanh(x) + 3.0, (xs[0],), "unary"))
    requests.append(packing.Request("tanh+2 f64", lambda x: jnp.tanh(x) + 2.0, (xs[0].astype(np.float64),), "unary"))
    stats = packing.Stats()
    packed = packing.evaluate(requests, packing=_every_family(requests), stats=stats)
    assert stats.groups == 1 and stats.stacked == 4 and stats.chunks == 1
    assert len(compiles) == 1
    for r, a, b in zip(requests, packing.evaluate_eager(requests), packed, strict=True):
        assert packing.same(a, b), r.key
    np.testing.assert_array_equal(packed[4].arrays[0] - packed[0].arrays[0], np.float32(1.0))  # type: ignore[index]


def test_a_weak_python_scalar_stays_weak() -> None:
    x = np.ones(3, np.float16)
    requests = [packing.Request("weak", jnp.multiply, (x, 2.5), "binary"),
                packing.Request("weak complex", jnp.multiply, (x, 2.5 + 1j), "binary")]  # fmt: skip
    packed = packing.evaluate(requests, packing=_every_family(requests))
    assert [o.arrays[0].dtype for o in packed] == [np.float16, np.complex64]  # type: ignore[index]


def test_a_trace_that_needs_concrete_values_runs_eagerly() -> None:
    def branchy(x: Any) -> Any:
        return x + 1 if x[0] > 0 else x - 1  # a Python branch on a value: fine eagerly, not under jit

    requests = [packing.Request("branch", branchy, (np.ones(2, np.float32),), "unary")]
    stats = packing.Stats()
    (out,) = packing.evaluate(requests, packing=_every_family(requests), stats=stats)
    assert stats.eager == 1 and stats.chunks == 0
    np.testing.assert_array_equal(out.arrays[0], np.full(2, 2.0, np.float32))  # type: ignore[index]


def test_a_family_the_table_does_not_pack_runs_eagerly() -> None:
    requests = [packing.Request("sin", jnp.sin, (np.ones(2, np.float32),), "no such family")]
    stats = packing.Stats()
    (out,) = packing.evaluate(requests, stats=stats)
    assert stats.eager == 1 and stats.chunks == 0
    assert packing.same(out, packing.evaluate_eager(requests)[0])


def _scaled_sin(x: Any, k: int) -> Any:
    return jnp.sin(x) * k


def test_no_chunk_fails_on_the_sampled_requests() -> None:
    # a fallback gives right results at the cost of executables: it must stay the exception
    requests = _cheap([r for case in _one_case_per_family(10**6)[:4] for r in requests_for(case, 0)])
    stats = packing.Stats()
    packing.evaluate(requests, packing=_every_family(requests), stats=stats)
    assert stats.chunks and not stats.failed_chunks, stats.errors


def test_a_failing_chunk_is_split_down_to_an_eager_run(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    requests = [packing.Request(f"r{k}", functools.partial(_scaled_sin, k=k), (rng.standard_normal(3),), "unary")
                for k in range(5)]  # fmt: skip
    compile_chunk = packing._compile

    def poisoned(chunk: Any) -> Any:
        # a stand-in for an XLA failure of one request's program: any chunk holding it fails
        if any(m.request.key == "r3" for u in chunk.units for m in u.members):
            raise RuntimeError("INTERNAL: the compiler failed")
        return compile_chunk(chunk)

    monkeypatch.setattr(packing, "_compile", poisoned)
    stats = packing.Stats()
    packed = packing.evaluate(requests, packing=_every_family(requests), stats=stats)
    assert stats.eager == 1 and stats.failed_chunks >= 3  # the whole, a half, r3 alone
    assert stats.errors and stats.errors[0].startswith("RuntimeError: INTERNAL")
    for r, a, b in zip(requests, packing.evaluate_eager(requests), packed, strict=True):
        assert packing.same(a, b), r.key


def _erfc_tangent(x: Any, t: Any) -> Any:
    return jax.jvp(jax.lax.erfc, (x,), (t,))[1]  # erfc's own value is unused: jit would drop it


def test_an_op_xla_cannot_compile_in_float8_fails_as_it_does_eagerly() -> None:
    x = np.full(3, 0.5, jnp.float8_e4m3)
    requests = [
        packing.Request("erfc", jax.lax.erfc, (x,), "unary"),
        packing.Request("erfc tangent", _erfc_tangent, (x, x), "unary"),
    ]
    eager = packing.evaluate_eager(requests)
    assert all(o.arrays is None for o in eager)
    stats = packing.Stats()
    packed = packing.evaluate(requests, packing=_every_family(requests), stats=stats)
    assert stats.eager == 2
    assert [o.error for o in packed] == [o.error for o in eager]


# -- the sweep with packed references ---------------------------------------------------------------------


def _report_checks(report: Any) -> list[Any]:
    """Everything a sweep's report says of each case, but its CPU time and where its references came from."""
    return [(r.case_id, r.status, r.castwise_error, r.jax_error, r.departure,
             [(c.check, c.ok, c.ratio, c.active, c.message, c.expected, c.got, c.known, c.departure)
              for c in r.checks])
            for r in report.results]  # fmt: skip


def _sweep_both_ways(**selection: Any) -> tuple[Any, Any, Any]:
    from autodiff.parity.cli import Options, run_parity

    options = Options(jobs=1, **selection)
    stats = packing.Stats()
    real = packing.evaluate

    def counted(requests: Any) -> Any:
        return real(requests, stats=stats)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(packing, "evaluate", counted)
        packed = run_parity(dataclasses.replace(options, pack=True), progress=None)
    return packed, run_parity(options, progress=None), stats


def test_a_packed_sweep_reports_what_the_case_by_case_sweep_reports() -> None:
    # families packed (select, gather) and not (add), mixed dtypes, Python scalars, bfloat16,
    # several active sets and vmap rows; a block's requests go through one evaluator call
    packed, eager, stats = _sweep_both_ways(policies=("jax",), ops=("select", "gather", "add"),
                                            dtypes=(rt.float32, rt.bfloat16))  # fmt: skip
    assert _report_checks(packed) == _report_checks(eager)
    assert stats.chunks >= 1 and stats.requests > stats.chunks  # it did pack: fewer programs than requests


@pytest.mark.slow
def test_the_quick_sweep_packed_reports_what_it_reports_case_by_case() -> None:
    packed, eager, _ = _sweep_both_ways(quick=True)
    assert _report_checks(packed) == _report_checks(eager)
