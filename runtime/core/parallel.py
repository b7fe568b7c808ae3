"""Both cores for large elementwise kernels: the output split into contiguous parts, one per thread.

NumPy releases the GIL inside a ufunc's inner loop, so two Python threads can run
one ufunc's parts at the same time. An elementwise ufunc computes each output
element from the input elements at the same index, but *how* it computes one can
depend on where the element falls in the loop: NumPy's SIMD loops treat the last
few elements of a call (the tail) with scalar code or masked vectors, and the
complex multiply's scalar and vector formulas round differently. A split that
moved an element into a tail could change its bits. So a call is split only where
each part runs exactly the loop the whole call ran over those elements:

* the output is C-contiguous and every array operand is 0-d or C-contiguous of the
  output's shape (one flat 1-D loop over all of them; anything else runs unsplit);
* the cuts fall on multiples of ``BLOCK`` elements (8,192: NumPy's buffer size, and a
  multiple of every SIMD width and unrolling), so a part starts at the same
  alignment, its vector steps cover the same elements, and only the last part has a
  tail, the whole call's;
* no operand overlaps the output except as the very same elements.

Only elementwise calls are split: the ufuncs of the float and complex kernels that
write a cached large result (``kernels._common._KEEPS_DTYPE``, add/sub/mul, the
executor's fast path), the mixed-dtype chunked loop (``runtime.core.chunked``, cut at
its own chunk boundaries) and large plain converts. Reductions are never split:
their summation order would change.

Matrix products stay with the BLAS NumPy links (OpenBLAS in NumPy's wheels), which
threads each GEMM itself (one thread per CPU by default): running the two GEMMs of a
dense layer's VJP at once on top of that would oversubscribe the cores.
``set_num_threads`` sets OpenBLAS's count too (``runtime.core.blas``).

The pool is ``get_num_threads() - 1`` persistent worker threads; the calling thread
runs parts too. Parts are claimed from a shared counter, so a worker the OS does not
schedule in time (another process on the other core) costs the caller only the
wake-up: the caller runs the unclaimed parts itself. A worker that claims its part
and then waits for a core makes the caller wait too, so each split is judged by the
time it saved (``_Pool.judge``): while recent splits lose, calls run unsplit, and a
split is tried again every ``PAUSE`` seconds. Measured on a 2-core machine shared
with other processes (``benchmarks/threads.py``), a split then lost 1.1-1.6x at
every size from 64K to 1M elements. One call uses the pool at a
time; a call from a second Python thread while the pool is busy runs unsplit. Each
worker runs its parts in a copy of the caller's context, so NumPy's floating-point
error state (a context variable) is the caller's.

With one thread (``set_num_threads(1)``, ``CASTWISE_NUM_THREADS=1`` or a one-core
machine) there is no pool and no thread; each call site pays one flag test.
"""

from __future__ import annotations

import _thread
import contextvars
import itertools
import os
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Final

import numpy as np

from runtime.core.blas import set_blas_threads

#: The environment variable that sets the thread count at import.
ENV_VAR: Final = "CASTWISE_NUM_THREADS"
#: Outputs with fewer elements run as one call. Measured on a 2-core VM (benchmarks/threads.py):
#: waking a worker costs 10-20 us, so only calls of ~50 us and more gain.
MIN_ELEMENTS: Final = 1 << 16
#: The same for the ufuncs that cost one memory pass per element (add, mul, ...): at 64K float32
#: elements they take ~5 us, less than the wake-up.
CHEAP_MIN_ELEMENTS: Final = 1 << 20
#: ufuncs that cost about a memory pass: split only from ``CHEAP_MIN_ELEMENTS``.
CHEAP: Final[frozenset[Any]] = frozenset(
    {np.add, np.subtract, np.multiply, np.negative, np.maximum, np.minimum, np.square, np.absolute, np.copyto}
)
#: Cuts fall on multiples of this many elements: NumPy's buffer size, a multiple of every SIMD step.
BLOCK: Final = 8192
#: Parts per thread. One: a worker the OS runs late leaves its part to the caller, which then
#: runs both, so the worst case is one unsplit call plus the wake-up.
PARTS_PER_THREAD: Final = 1

#: Seconds splitting pauses after recent splits lost (see ``_Pool.judge``).
PAUSE: Final = 0.5

#: True when the pool runs (more than one thread): the flag every call site tests first.
ON = False


class _Job:
    """One split call: ``fn(*parts[i])`` for every part, claimed by whichever thread is free."""

    __slots__ = ("claim", "context", "done", "error", "finish", "fn", "n", "parts")

    def __init__(self, fn: Callable[..., Any], parts: Sequence[tuple[Any, ...]]) -> None:
        self.fn = fn
        self.parts = parts
        self.n = len(parts)
        # next() on itertools.count is atomic under the GIL: each part is claimed once
        self.claim = itertools.count().__next__
        self.finish = itertools.count().__next__
        self.done = _thread.allocate_lock()
        self.done.acquire()  # released by whoever finishes the last part
        self.error: BaseException | None = None
        self.context = contextvars.copy_context()

    def drain(self) -> int:
        """Run unclaimed parts until none is left; how many this thread ran."""
        fn, n, ran = self.fn, self.n, 0
        # (no local name for the parts: once they are done, the caller drops them, and with
        # them the last views of its output, whose cached memory is then free for reuse)
        while (i := self.claim()) < n:
            try:
                fn(*self.parts[i])
            except BaseException as err:  # re-raised in the caller
                self.error = err
            ran += 1
            if self.finish() == n - 1:
                self.done.release()
        return ran


class _Pool:
    def __init__(self, workers: int) -> None:
        self.busy = _thread.allocate_lock()  # one split call at a time
        self.job: _Job | None = None
        #: the recent splits' time over one call's (estimated): above 1, splitting loses
        self.score = 1.0
        #: splits are paused until this ``perf_counter`` time
        self.resume_at = 0.0
        self.wakes: list[Any] = []
        for _ in range(workers):
            wake = _thread.allocate_lock()
            wake.acquire()
            self.wakes.append(wake)
            threading.Thread(target=self._work, args=(wake,), name="castwise-kernel", daemon=True).start()

    def _work(self, wake: Any) -> None:
        while True:
            wake.acquire()
            job = self.job
            if job is None:  # the pool was shut down
                return
            job.context.copy().run(job.drain)

    def run(self, job: _Job) -> None:
        start = time.perf_counter()
        self.job = job
        for wake in self.wakes:
            # only this method releases a wake lock: if it is unlocked, the worker has a
            # pending wake-up already (it will find this job, or none left to claim)
            if wake.locked():
                wake.release()
        mine = job.drain()
        mid = time.perf_counter()
        job.done.acquire()
        end = time.perf_counter()
        job.parts = ()  # every part is done: no thread indexes them again
        self.judge(end - start, mid - start, mine, job.n, end)
        if job.error is not None:
            raise job.error

    def judge(self, elapsed: float, own: float, mine: int, n: int, now: float) -> None:
        """Score a split that took ``elapsed`` seconds, ``own`` of them running ``mine`` of its
        ``n`` parts on the calling thread: those parts' time, scaled to all ``n``, is what one
        call would have taken. When the recent splits lose on average (the workers start or
        finish late: another process has the other core), pause splitting for ``PAUSE``."""
        if mine == 0 or own <= 0.0:
            return  # (the workers ran every part: nothing to compare)
        ratio = elapsed / (own * n / mine) if mine < n else 1.05  # (all on the caller: the wake lost)
        self.score = 0.75 * self.score + 0.25 * ratio
        if self.score > 1.0:
            self.resume_at = now + PAUSE
            self.score = 1.0  # the next split, after the pause, is judged afresh

    def shutdown(self) -> None:
        with self.busy:
            self.job = None
            for wake in self.wakes:
                if wake.locked():
                    wake.release()


_POOL: _Pool | None = None
_THREADS = 1


def get_num_threads() -> int:
    """The number of threads castwise's large elementwise kernels run on (1: no pool)."""
    return _THREADS


def set_num_threads(n: int, *, blas: bool = True) -> None:
    """Run large elementwise kernels on ``n`` threads (the calling one and ``n - 1`` workers).

    ``1`` runs every kernel on the calling thread with no pool. Results are the same
    bits for every ``n``; only elementwise ufuncs on outputs of at least
    ``MIN_ELEMENTS`` (``CHEAP_MIN_ELEMENTS`` for add, mul and the like) are split.
    With ``blas`` (the default), NumPy's OpenBLAS, which runs the matrix products, is
    set to ``n`` threads too (``runtime.core.blas``; other BLAS builds keep their own
    setting), so one call is the process's thread budget, as ``torch.set_num_threads``.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        from runtime.core.errors import OpTypeError, OpValueError  # (no import cycle at load)
        from runtime.core.promotion import get_policy

        cls = OpValueError if isinstance(n, int) and not isinstance(n, bool) else OpTypeError
        raise cls(f"set_num_threads: expected an int >= 1 (a thread count), got {n!r} [policy {get_policy()!r}]")
    if blas:
        set_blas_threads(n)
    _set_pool(n)


def _set_pool(n: int) -> None:
    global _POOL, _THREADS, ON
    if n == _THREADS:
        return
    old, _POOL, ON = _POOL, None, False
    if old is not None:
        old.shutdown()
    _THREADS = n
    if n > 1:
        _POOL = _Pool(n - 1)
        ON = True


def _default_threads() -> int:
    """``CASTWISE_NUM_THREADS`` if set to an int >= 1, else min(2, the CPUs this process may run on).

    A value that is not such an int warns and takes the default: a typo in the environment
    should not make ``import runtime`` fail."""
    value = os.environ.get(ENV_VAR)
    if value:
        try:
            n = int(value)
        except ValueError:
            n = 0
        if n >= 1:
            return n
        warnings.warn(f"{ENV_VAR}={value!r} is not an int >= 1: ignored", RuntimeWarning, stacklevel=2)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # (not on every platform)
        cpus = os.cpu_count() or 1
    return min(2, cpus)


def _after_fork_in_child() -> None:
    # the workers do not survive a fork: the child starts its own pool
    global _POOL, _THREADS, ON
    n, _POOL, _THREADS, ON = _THREADS, None, 1, False
    _set_pool(n)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# -- splitting calls ------------------------------------------------------------------------------


def _flat(a: Any, shape: tuple[int, ...]) -> Any:
    """``a`` as a flat view to cut (an array of the output's shape, C-contiguous), ``a`` itself to
    pass whole (a scalar or 0-d array), or ``None``: the call runs unsplit."""
    if not isinstance(a, np.ndarray) or a.ndim == 0:
        return a
    if a.shape == shape and a.flags.c_contiguous:
        return a.reshape(-1)
    return None


def _aliases(args: Sequence[Any], out: np.ndarray) -> bool:
    """True if an input overlaps ``out`` other than as the very same elements (which an
    elementwise call may read and write in place, part by part)."""
    for a in args:
        if (
            isinstance(a, np.ndarray)
            and a is not out
            and np.may_share_memory(a, out)
            and not (a.shape == out.shape and a.strides == out.strides and a.ctypes.data == out.ctypes.data)
        ):
            return True
    return False


def cuts(n: int, parts: int, block: int) -> list[int]:
    """``parts + 1`` cut points of ``range(n)`` on multiples of ``block`` (fewer parts when ``n``
    holds fewer blocks); ``[0, n]`` when it holds fewer than two."""
    blocks = n // block
    parts = min(parts, blocks)
    if parts < 2:
        return [0, n]
    return [blocks * k // parts * block for k in range(parts)] + [n]


def _parts(args: Sequence[Any], out: np.ndarray) -> list[tuple[Any, ...]] | None:
    """``(args_i, out_i)`` for each part of ``out``'s flat elements; ``None`` if the call must run
    whole (see the module docstring)."""
    if not out.flags.c_contiguous or _aliases(args, out):
        return None
    shape = out.shape
    flat: list[Any] = []
    for a in args:
        f = _flat(a, shape)
        if f is None:
            return None
        flat.append(f)
    at = cuts(out.size, _THREADS * PARTS_PER_THREAD, BLOCK)
    if len(at) < 3:
        return None
    cut = [isinstance(f, np.ndarray) and f.ndim == 1 and f is not a for f, a in zip(flat, args, strict=True)]
    flat_out = out.reshape(-1)
    return [
        (tuple(f[lo:hi] if c else f for f, c in zip(flat, cut, strict=True)), flat_out[lo:hi])
        for lo, hi in itertools.pairwise(at)
    ]


def splitting() -> bool:
    """Whether a call may split now: a pool runs and recent splits did not lose."""
    pool = _POOL
    return pool is not None and time.perf_counter() >= pool.resume_at


def run(fn: Callable[..., Any], parts: Sequence[tuple[Any, ...]]) -> bool:
    """Run ``fn(*part)`` for every part on the pool; False (nothing run) if the pool is off, busy
    or paused."""
    pool = _POOL
    if pool is None or time.perf_counter() < pool.resume_at or not pool.busy.acquire(blocking=False):
        return False
    try:
        pool.run(_Job(fn, parts))
    finally:
        pool.busy.release()
    return True


def ufunc(f: Any, args: tuple[Any, ...], out: np.ndarray, **kwargs: Any) -> np.ndarray:
    """``f(*args, out=out, **kwargs)`` for an elementwise ufunc, bit for bit, split across the pool's
    threads when ``out`` is large enough and the split keeps every element's loop (module docstring)."""
    if out.size >= (CHEAP_MIN_ELEMENTS if f in CHEAP else MIN_ELEMENTS) and splitting():
        parts = _parts(args, out)
        if parts is not None and run(lambda a, o: f(*a, out=o, **kwargs), parts):
            return out
    return f(*args, out=out, **kwargs)


def copyto(out: np.ndarray, array: np.ndarray) -> None:
    """``np.copyto(out, array, casting="unsafe")``, split as ``ufunc`` splits (a cast is elementwise)."""
    if out.size >= CHEAP_MIN_ELEMENTS and splitting():
        parts = _parts((array,), out)
        if parts is not None and run(lambda a, o: np.copyto(o, a[0], casting="unsafe"), parts):
            return
    np.copyto(out, array, casting="unsafe")


_set_pool(_default_threads())  # (NumPy's BLAS keeps its own default: OPENBLAS_NUM_THREADS, else every CPU)
