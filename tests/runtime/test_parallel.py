"""Large elementwise kernels split across threads (runtime.core.parallel): the same bits as one call.

Most tests lower the size gates (``memory.POOL_MIN_BYTES``, ``parallel.MIN_ELEMENTS``) so that
small arrays take the split path, and count the splits, so that every comparison below is
one of a split result against the unsplit one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import warnings
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import autodiff
import runtime as rt
from runtime.core import blas, chunked, memory, ops, parallel
from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.executor import apply
from tests.runtime.bit_helpers import bits

#: The op families whose kernels may split (elementwise), and the ones that never may.
ELEMENTWISE = ("unary", "binary", "compare", "logical", "select", "clamp", "convert")
#: Params for the elementwise ops that take some.
PARAMS: dict[str, dict[str, Any]] = {
    "round": {"rounding_method": 1},
    "integer_pow": {"y": 3},
    "reduce_precision": {"exponent_bits": 5, "mantissa_bits": 7},
}


class Splits:
    """Counts the calls the pool ran split."""

    def __init__(self) -> None:
        self.count = 0


@pytest.fixture
def split_all(monkeypatch: pytest.MonkeyPatch) -> Iterator[Splits]:
    """Two threads, every size gate at its lowest, and a count of the split calls."""
    before = rt.get_num_threads()
    rt.set_num_threads(2, blas=False)
    monkeypatch.setattr(memory, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "MIN_ELEMENTS", 2)
    monkeypatch.setattr(parallel, "CHEAP_MIN_ELEMENTS", 2)
    monkeypatch.setattr(parallel, "BLOCK", 64)  # small arrays hold two blocks
    monkeypatch.setattr(parallel, "PAUSE", 0.0)  # a split that lost (a busy machine) pauses nothing
    splits = Splits()
    run = parallel.run

    def counting(fn: Callable[..., Any], parts: Any) -> bool:
        ran = False
        try:
            ran = run(fn, parts)
        except BaseException:
            ran = True  # (a part raised: it ran split)
            raise
        finally:
            splits.count += ran
        return ran

    monkeypatch.setattr(parallel, "run", counting)
    yield splits
    rt.set_num_threads(before, blas=False)


def both_ways(f: Callable[[], Any]) -> tuple[Any, Any]:
    """``f()`` with one thread and with two (the pool's size is all that differs)."""
    rt.set_num_threads(1, blas=False)
    try:
        one = f()
    finally:
        rt.set_num_threads(2, blas=False)
    return one, f()


def same_bits(got: Any, want: Any, what: str = "") -> None:
    """Equal dtype, shape and bits, NaN payloads included: the split call ran the same loop."""
    got, want = np.asarray(got), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), what
    assert np.array_equal(bits(got), bits(want)), what


# -- inputs -----------------------------------------------------------------------------------


def values(d: dt.DType, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Fixed-seed values of ``d`` with its special values (inf, NaN, -0.0, extremes) at the front."""
    rng = np.random.default_rng(zlib.crc32(f"{d.name}/{shape}/{seed}".encode()))
    n = int(np.prod(shape))
    if d.kind == "bool":
        return rng.random(shape) < 0.5
    if d.kind in ("int", "uint"):
        lo, hi = (-8, 7) if d.bits <= 4 and d.kind == "int" else (0, 15) if d.bits <= 4 else (-100, 100)
        if d.kind == "uint":
            lo = 0
        ints = rng.integers(lo, hi, size=n, endpoint=True)
        return np.asarray(ints).astype(d.storage).reshape(shape)
    v = rng.standard_normal(n) * 2
    v[:4] = [np.inf, -np.inf, np.nan, -0.0][: min(4, n)]
    if d.kind == "complex":
        w = v + 1j * rng.standard_normal(n)
        return np.asarray(w.astype(np.complex128)).astype(d.storage).reshape(shape)
    return v.astype(d.storage).reshape(shape)


def _tensor(a: np.ndarray, d: dt.DType) -> rt.Tensor:
    return rt.asarray(a, dtype=d)


def _run(op: ops.OpDef, arrays: list[np.ndarray], ds: list[dt.DType], params: dict[str, Any]) -> np.ndarray | None:
    """The op on fresh Tensors of ``arrays``; ``None`` where castwise refuses the dtypes."""
    try:
        out = apply(op, [_tensor(a, d) for a, d in zip(arrays, ds, strict=True)], params)
    except rt.CastwiseError:
        return None
    assert isinstance(out, rt.Tensor)
    return out.numpy()


def _cases() -> list[Any]:
    cases = []
    for name, op in sorted(ops.OPS.items()):
        if op.family not in ELEMENTWISE or name in ("bitcast_convert_type", "select_n"):
            continue
        for d in dt.ALL_DTYPES:
            cases.append(pytest.param(name, d, id=f"{name}-{d.short}"))
    return cases


#: The calls that must split (float32 through a ufunc kernel): the count proves the path ran.
MUST_SPLIT = {"add", "sub", "mul", "div", "tanh", "exp", "log", "sin", "cos", "sqrt", "square"}


@pytest.mark.parametrize(("name", "d"), _cases())
def test_every_elementwise_op_and_dtype_gives_the_unsplit_bits(split_all: Splits, name: str, d: dt.DType) -> None:
    op = ops.OPS[name]
    shape = (8, 20)  # 160 elements: cut at 64 (the fixture's block) and a tail in the last part
    params = dict(PARAMS.get(name, {}))
    if op.family == "convert":
        params = {"new_dtype": dt.float32 if d is not dt.float32 else dt.float64, "weak_type": False}
    n = len(op.operands)
    if op.family == "select":
        ds = [dt.bool_, d, d]
    else:
        ds = [d] * n
    arrays = [values(x, shape, seed) for seed, x in enumerate(ds)]
    one, two = both_ways(lambda: _run(op, arrays, ds, params))
    if one is None:
        assert two is None  # the same refusal either way
        return
    same_bits(two, one, f"{name} {d.name}")
    if name in MUST_SPLIT and d is dt.float32:
        assert split_all.count > 0


@pytest.mark.parametrize("name", ["add", "sub", "mul"])
@pytest.mark.parametrize(
    ("low", "high"), [(dt.float32, dt.float64), (dt.int32, dt.float64), (dt.float32, dt.complex64)]
)
@pytest.mark.parametrize("low_first", [True, False])
def test_mixed_dtype_chunked_loop_gives_the_unsplit_bits(
    split_all: Splits, monkeypatch: pytest.MonkeyPatch, name: str, low: dt.DType, high: dt.DType, low_first: bool
) -> None:
    monkeypatch.setattr(chunked, "CHUNK_BYTES", 64)  # many chunks in each thread's range
    shape = (9, 13)  # with 64-byte chunks, 8 or 16 chunks cut between two threads
    x, y = values(low, shape, 0), values(high, shape, 1)
    pair = [(x, low), (y, high)] if low_first else [(y, high), (x, low)]
    f = getattr(F, name)
    with rt.use_policy("jax"):
        one, two = both_ways(lambda: f(*(_tensor(a, d) for a, d in pair)).numpy())
    same_bits(two, one, name)
    assert split_all.count > 0


@pytest.mark.parametrize(("source", "target"), [(dt.float64, dt.float32), (dt.int64, dt.float32), (dt.int32, dt.int8)])
def test_large_plain_converts_give_the_unsplit_bits(split_all: Splits, source: dt.DType, target: dt.DType) -> None:
    x = values(source, (40, 50), 0)
    if source is dt.float64:
        x[:, :5] *= 1e39  # overflows to float32's inf
    one, two = both_ways(lambda: chunked.convert_array(x, source, target))
    same_bits(two, one)
    assert split_all.count > 0


# -- shapes, strides, broadcasting, aliasing ----------------------------------------------------------


_FLOATS = st.sampled_from([np.float32, np.float64, np.complex64])
_UFUNCS = st.sampled_from([np.add, np.multiply, np.subtract, np.true_divide, np.maximum, np.power])


#: The layouts the Hypothesis test draws: NumPy's own loops differ between them (a strided
#: float32 power rounds differently from a contiguous one), so the reference call is made on
#: copies laid out the same way.
_LAYOUTS = ("plain", "transposed", "strided", "reversed")


def _lay_out(base: np.ndarray, kind: str) -> np.ndarray:
    """The view of ``base`` a layout names (``base`` as ``_views`` drew it)."""
    if base.ndim == 0 or kind == "plain":
        return base
    if kind == "transposed":
        return base.T
    step = 2 if kind == "strided" else -1
    return base[tuple(slice(None, None, step) for _ in range(base.ndim))]


@st.composite
def _views(draw: st.DrawFn, dtype: Any, shape: tuple[int, ...]) -> tuple[np.ndarray, str]:
    """``(base, layout)`` whose view has ``shape``: contiguous, transposed, a strided slice of a
    bigger array, or reversed."""
    kind = draw(st.sampled_from(_LAYOUTS))
    elements = st.floats(-10, 10, width=32) if np.dtype(dtype).kind == "f" else st.complex_numbers(max_magnitude=10)
    if kind == "transposed":
        base_shape = shape[::-1]
    elif kind == "strided":
        base_shape = tuple(2 * s for s in shape)
    else:
        base_shape = shape
    return draw(hnp.arrays(dtype, base_shape, elements=elements)), kind


@contextmanager
def forced_split(block: int) -> Iterator[None]:
    """Two threads, the size gates at their lowest and cuts on multiples of ``block``."""
    before = rt.get_num_threads()
    saved = parallel.MIN_ELEMENTS, parallel.CHEAP_MIN_ELEMENTS, parallel.BLOCK, parallel.PAUSE
    rt.set_num_threads(2, blas=False)
    parallel.MIN_ELEMENTS = parallel.CHEAP_MIN_ELEMENTS = 2  # type: ignore[misc]
    parallel.BLOCK, parallel.PAUSE = block, 0.0  # type: ignore[misc]
    try:
        yield
    finally:
        parallel.MIN_ELEMENTS, parallel.CHEAP_MIN_ELEMENTS, parallel.BLOCK, parallel.PAUSE = saved  # type: ignore[misc]
        rt.set_num_threads(before, blas=False)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    dtype=_FLOATS,
    ufunc=_UFUNCS,
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=12),
)
def test_split_ufunc_is_bit_for_bit_one_call(data: st.DataObject, dtype: Any, ufunc: Any, shapes: Any) -> None:
    """Any layout of inputs and output, broadcasting included, in place or not: the same bits as
    one call on the same layouts (a layout that cannot be cut runs as one call)."""
    (sx, sy), result = shapes.input_shapes, shapes.result_shape
    drawn = {
        "x": data.draw(_views(dtype, sx), label="x"),
        "y": data.draw(_views(dtype, sy), label="y"),
        "out": data.draw(_views(dtype, result), label="out"),
    }
    where = data.draw(st.sampled_from(["out", "x", "y"]), label="written")
    if where != "out" and _lay_out(*drawn[where]).shape == result:
        drawn["out"] = drawn[where]  # in place: the output is that operand
    mine = {k: _lay_out(*v) for k, v in drawn.items()}
    copies = {id(base): _lay_out(base.copy(), kind) for base, kind in drawn.values()}
    theirs = {k: copies[id(v[0])] for k, v in drawn.items()}
    with np.errstate(all="ignore"):
        want = ufunc(theirs["x"], theirs["y"], out=theirs["out"])
        with forced_split(64):
            got = parallel.ufunc(ufunc, (mine["x"], mine["y"]), mine["out"])
    assert got is mine["out"]
    same_bits(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("ufunc", [np.multiply, np.true_divide, np.add, np.exp, np.tanh, np.sin, np.log, np.sqrt])
def test_the_production_block_keeps_every_simd_tail(dtype: Any, ufunc: Any) -> None:
    """Cuts on multiples of the real ``BLOCK``: the complex multiply (whose vector and scalar
    formulas round differently) and the SIMD transcendentals give one call's bits."""
    n = 3 * parallel.BLOCK + 13
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(n) * 3 + (1j * rng.standard_normal(n) if np.dtype(dtype).kind == "c" else 0)).astype(dtype)
    y = (rng.standard_normal(n) + 2).astype(dtype)
    args = (x, y) if ufunc.nin == 2 else (x,)
    with np.errstate(all="ignore"):
        want = ufunc(*args)
        got = np.empty_like(want)
        with forced_split(parallel.BLOCK):
            parts = parallel._parts(args, got)
            assert parts is not None and len(parts) == 2
            parallel.ufunc(ufunc, args, got)
    same_bits(got, want)


def test_an_input_overlapping_the_output_runs_unsplit(split_all: Splits) -> None:
    """A shifted view of the output: NumPy's own overlap handling decides, in one call."""
    a = np.arange(64, dtype=np.float64)
    want = a.copy()
    np.add(want[:-1], 1.0, out=want[1:])
    parallel.ufunc(np.add, (a[:-1], 1.0), a[1:])
    same_bits(a, want)
    assert split_all.count == 0


def test_the_same_view_as_input_and_output_splits(split_all: Splits) -> None:
    a = np.linspace(-3, 3, 256).reshape(16, 16)
    want = np.tanh(a)
    parallel.ufunc(np.tanh, (a,), a)
    same_bits(a, want)
    assert split_all.count == 1


@pytest.mark.parametrize(
    "make", [lambda x: F.reduce_sum(x, (0, 1)), lambda x: F.reduce_max(x, (1,)), lambda x: F.reduce_prod(x, (0,))]
)
def test_reductions_never_split(split_all: Splits, make: Callable[[rt.Tensor], rt.Tensor]) -> None:
    x = rt.asarray(values(dt.float32, (64, 64), 0))
    make(x)
    assert split_all.count == 0


def test_errors_in_a_worker_reach_the_caller(split_all: Splits) -> None:
    x = np.ones((16, 16))
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        parallel.ufunc(np.true_divide, (x, np.zeros_like(x)), np.empty_like(x))
    assert split_all.count == 1


def test_the_callers_error_state_holds_in_the_workers(split_all: Splits) -> None:
    """Kernels ignore floating-point errors, on the workers too: 0/0 warns nowhere."""
    x = rt.asarray(np.zeros((16, 16), np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.div(x, x)
    assert split_all.count > 0


# -- threads, the recorder, eager programs -----------------------------------------------------------


def _chain(x: rt.Tensor) -> rt.Tensor:
    for _ in range(5):
        x = F.add(F.mul(F.tanh(x), 1.01), 0.1)
    return F.reduce_sum(x, (0, 1))


def test_tracked_ops_from_two_python_threads(split_all: Splits) -> None:
    """Two threads record and differentiate at once, sharing the one pool (the busy one runs unsplit)."""
    inputs = [values(dt.float32, (32, 32), seed) for seed in range(2)]
    for a in inputs:
        a[~np.isfinite(a)] = 0.5
    g = autodiff.grad(_chain)
    rt.set_num_threads(1, blas=False)
    want = [g(rt.asarray(a)).numpy() for a in inputs]
    rt.set_num_threads(2, blas=False)
    got: list[list[np.ndarray]] = [[], []]
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for _ in range(20):
                got[k].append(g(rt.asarray(inputs[k])).numpy())
        except BaseException as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(2):
        assert len(got[k]) == 20
        for r in got[k]:
            same_bits(r, want[k])
    assert split_all.count > 0


def test_a_program_writing_through_a_view_agrees_with_one_thread(split_all: Splits) -> None:
    def program() -> np.ndarray:
        x = rt.asarray(values(dt.float32, (16, 16), 3))
        y = F.tanh(x)  # a cached large result (the gates are lowered)
        v = y[::2]  # a view of it
        v += 1.0  # writes through the view into y
        column = y[:, 3:4]
        column *= 7.0  # a strided view
        z = F.mul(F.exp(F.neg(y)), y)
        v *= z[::2]
        return F.add(y, z).numpy()

    one, two = both_ways(program)
    same_bits(two, one)
    assert split_all.count > 0
    x = values(dt.float32, (16, 16), 3)  # the same program in NumPy
    with np.errstate(all="ignore"):
        y = np.tanh(x)
        y[::2] += np.float32(1.0)
        y[:, 3:4] *= np.float32(7.0)
        z = np.exp(-y) * y
        y[::2] *= z[::2]
        want = y + z
    same_bits(one, want)


# -- the setting ---------------------------------------------------------------------------------


def test_set_num_threads_round_trips_and_refuses_bad_counts() -> None:
    before = rt.get_num_threads()
    try:
        for n in (1, 3, 2):
            rt.set_num_threads(n, blas=False)
            assert rt.get_num_threads() == n
            assert parallel.ON is (n > 1)
        for bad, cls in ((0, rt.OpValueError), (-1, rt.OpValueError), (1.5, rt.OpTypeError), (True, rt.OpTypeError)):
            with pytest.raises(cls, match="set_num_threads"):
                rt.set_num_threads(bad)  # type: ignore[arg-type]
        assert rt.get_num_threads() == 2  # a refused call changes nothing
    finally:
        rt.set_num_threads(before, blas=False)


def test_one_thread_has_no_pool_and_no_worker() -> None:
    before = rt.get_num_threads()
    try:
        rt.set_num_threads(1, blas=False)
        assert parallel._POOL is None
        assert not parallel.run(print, [("not run",)])
    finally:
        rt.set_num_threads(before, blas=False)


def test_the_environment_variable_sets_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(parallel.ENV_VAR, "3")
    assert parallel._default_threads() == 3
    monkeypatch.delenv(parallel.ENV_VAR, raising=False)
    default = parallel._default_threads()
    assert 1 <= default <= 2
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(parallel.ENV_VAR, bad)
        with pytest.warns(RuntimeWarning, match=parallel.ENV_VAR):
            assert parallel._default_threads() == default


def test_the_environment_variable_reaches_a_fresh_interpreter() -> None:
    code = "import runtime as rt; print(rt.get_num_threads())"
    env = {**os.environ, parallel.ENV_VAR: "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"


def test_set_num_threads_sets_numpys_openblas_too() -> None:
    before, blas_before = rt.get_num_threads(), blas.blas_threads()
    if blas_before is None:
        pytest.skip("NumPy's BLAS is not an OpenBLAS castwise can reach")
    try:
        rt.set_num_threads(1)
        assert blas.blas_threads() == 1
        rt.set_num_threads(3)
        assert blas.blas_threads() == 3
        rt.set_num_threads(2, blas=False)
        assert blas.blas_threads() == 3
    finally:
        rt.set_num_threads(before, blas=False)
        blas.set_blas_threads(blas_before)


def test_splits_that_lose_pause_splitting_and_splits_that_gain_keep_it() -> None:
    pool = parallel._Pool(0)  # no worker: judge alone is under test
    for _ in range(20):  # 2 parts, the caller's one took 5 us: one call ~10 us, the split 6 us
        pool.judge(6e-6, 5e-6, 1, 2, now=100.0)
    assert pool.score < 0.7 and pool.resume_at == 0.0
    pool.judge(14e-6, 5e-6, 1, 2, now=100.0)  # one slow split (a late worker) among good ones
    assert pool.resume_at == 0.0
    for _ in range(3):  # a loaded machine: the caller waits for the worker's part
        pool.judge(14e-6, 5e-6, 1, 2, now=100.0)
    assert pool.resume_at == 100.0 + parallel.PAUSE
    assert pool.score == 1.0  # judged afresh after the pause


def test_a_paused_pool_runs_calls_unsplit(monkeypatch: pytest.MonkeyPatch) -> None:
    with forced_split(64):
        pool = parallel._POOL
        assert pool is not None
        monkeypatch.setattr(pool, "resume_at", float("inf"))
        assert not parallel.splitting()
        a = np.linspace(0, 1, 256)
        out = np.empty_like(a)
        assert not parallel.run(np.exp, [((a,), out)])
        parallel.ufunc(np.exp, (a,), out)  # unsplit, the same bits
        same_bits(out, np.exp(a))


_FORK_CHILD = """
import os, threading, numpy as np, runtime as rt
from runtime.core import parallel
rt.set_num_threads(2, blas=False)
parallel.MIN_ELEMENTS = 2
pid = os.fork()
if pid == 0:
    a = np.linspace(0, 1, 4 * parallel.BLOCK)
    out = np.empty_like(a)
    ran = parallel.run(lambda x, o: np.exp(x[0], out=o), [((a[:8192],), out[:8192]), ((a[8192:],), out[8192:])])
    workers = [t for t in threading.enumerate() if t.name == "castwise-kernel"]
    ok = ran and rt.get_num_threads() == 2 and len(workers) == 1 and np.array_equal(out, np.exp(a))
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_starts_its_own_pool() -> None:
    """The workers do not survive a fork: the child makes a pool of the same size, which runs
    (in a fresh interpreter: forking this one, with JAX's threads, could deadlock)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", _FORK_CHILD], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0", out.stderr
