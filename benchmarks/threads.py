"""Large kernels on one thread and on several: castwise's kernel threads against its own single thread and NumPy.

Workloads: single elementwise ops at 64K to 1M elements (tanh, exp, mul, add,
a mixed float32 + float64 add through the chunked loop), a 256x784 @ 784x256
GEMM, and two gradients of ``benchmarks/backward.py``: the 150-op elementwise
chain on 256x256 float32 and the large MLP (x[256,784] -> 512 -> 10).

Contenders, taking turns block by block over ``--rounds`` rounds (default 9), so
that each ratio compares one moment of a shared machine: NumPy (the same calls),
castwise with ``rt.set_num_threads(1, blas=False)``, and castwise with ``N`` kernel
threads for each N of ``--threads``; the BLAS keeps its thread count in every
column. Each ratio printed is the median over the rounds of the two times in the
same round ("best": the fastest round of each). On a 2-core machine other
processes share, a worker thread often waits for a core, and castwise then pauses
splitting (``runtime.core.parallel``): the medians move from run to run, and only
their direction over several runs means much.

The GEMM rows show NumPy's BLAS (OpenBLAS in NumPy's wheels), which threads by
itself: run again with ``OPENBLAS_NUM_THREADS=1`` to see the matrix products, and
the MLP gradient, on one BLAS thread (``rt.set_num_threads(1)`` sets both).

    python benchmarks/threads.py [--rounds N] [--threads 2,...]

Run against a tree without ``rt.set_num_threads`` (before kernel threads), it times
castwise as it is, in the ``castwise 1`` column, so that the castwise/NumPy
medians of two runs say what one thread costs against before.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from backward import (
    CHAIN_REPEATS,
    Contender,
    cw_chain,
    cw_mlp,
    interleaved,
    make_large_mlp_inputs,
    median_ratio,
    np_chain_grad,
    np_mlp_grad,
)

import autodiff
import runtime as rt
from runtime.core import lax as F

HAS_THREADS = hasattr(rt, "set_num_threads")
try:
    from runtime.core.blas import blas_threads
except ImportError:  # a tree before kernel threads

    def blas_threads() -> int | None:
        return None


def workloads() -> dict[str, tuple[Callable[[], Any], Callable[[], Any], int]]:
    """name -> (castwise call, NumPy call, calls per timed block)."""
    rng = np.random.default_rng(0)
    cases: dict[str, tuple[Callable[[], Any], Callable[[], Any], int]] = {}

    def f32(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    a64k, a256k, a1m = f32(256, 256), f32(512, 512), f32(1024, 1024)
    d256k = rng.standard_normal((512, 512))
    d1m, e1m = rng.standard_normal(1 << 20), rng.standard_normal(1 << 20)
    m1m = f32(1 << 20)
    t64k, t256k, t1m = rt.asarray(a64k), rt.asarray(a256k), rt.asarray(a1m)
    td256k, td1m, te1m, tm1m = rt.asarray(d256k), rt.asarray(d1m), rt.asarray(e1m), rt.asarray(m1m)
    cases["tanh f32[256,256]"] = (lambda: F.tanh(t64k), lambda: np.tanh(a64k), 50)
    cases["tanh f32[512,512]"] = (lambda: F.tanh(t256k), lambda: np.tanh(a256k), 20)
    cases["exp f64[512,512]"] = (lambda: F.exp(td256k), lambda: np.exp(d256k), 20)
    cases["tanh f32[1024,1024]"] = (lambda: F.tanh(t1m), lambda: np.tanh(a1m), 5)
    cases["mul f32[1024,1024]"] = (lambda: F.mul(t1m, t1m), lambda: np.multiply(a1m, a1m), 10)
    cases["add f64[1M]"] = (lambda: F.add(td1m, te1m), lambda: np.add(d1m, e1m), 10)
    cases["add f32[1M]+f64[1M]"] = (lambda: tm1m + td1m, lambda: np.add(m1m, d1m), 10)

    x, w = f32(256, 784), f32(784, 256)
    tx, tw = rt.asarray(x), rt.asarray(w)
    cases["matmul 256x784 @ 784x256"] = (lambda: F.matmul(tx, tw), lambda: x @ w, 20)

    chain_x = (rng.standard_normal((256, 256)) * 0.5).astype(np.float32)
    t_chain = rt.asarray(chain_x)
    chain_grad = autodiff.grad(cw_chain)
    np.testing.assert_allclose(chain_grad(t_chain).numpy(), np_chain_grad(chain_x), rtol=1e-4, atol=1e-5)
    cases[f"grad chain {3 * CHAIN_REPEATS} ops f32[256,256]"] = (
        lambda: chain_grad(t_chain),
        lambda: np_chain_grad(chain_x),
        3,
    )
    mlp = make_large_mlp_inputs()
    t_mlp = [rt.asarray(a) for a in mlp]
    mlp_grad = autodiff.grad(cw_mlp, argnums=(0, 1, 2))
    for got, want in zip(mlp_grad(*t_mlp), np_mlp_grad(*mlp), strict=True):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
    cases["grad mlp x[256,784]"] = (lambda: mlp_grad(*t_mlp), lambda: np_mlp_grad(*mlp), 5)
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds (at least 7)")
    parser.add_argument("--threads", default="2", help="castwise kernel thread counts to time besides 1")
    args = parser.parse_args()
    counts = [int(k) for k in args.threads.split(",") if int(k) != 1] if HAS_THREADS else []
    saved = rt.get_num_threads() if HAS_THREADS else 1
    cases = workloads()

    def kernels(k: int) -> Callable[[], None] | None:
        # the BLAS is left alone: (re)setting OpenBLAS's count wakes its threads, which then
        # spin for a while and take a core from whatever runs next
        return (lambda: rt.set_num_threads(k, blas=False)) if HAS_THREADS else None

    contenders: dict[tuple[str, str], Contender] = {}
    for name, (cw, npy, number) in cases.items():
        contenders[name, "numpy"] = (npy, number, None)
        for k in [1, *counts]:
            contenders[name, f"castwise {k}"] = (cw, number, kernels(k))
    timed = interleaved(contenders, args.rounds)
    if HAS_THREADS:
        rt.set_num_threads(saved, blas=False)

    print(
        f"{args.rounds} interleaved rounds on {os.cpu_count()} CPUs (load average "
        f"{', '.join(f'{v:.1f}' for v in os.getloadavg())}); NumPy's BLAS threads: {blas_threads()} "
        f"(OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}) in every column"
    )
    print(
        "times are medians; ratios are medians over rounds of the two times in one round "
        "('best': the fastest round of each)"
    )
    head = f"{'workload':<34}{'numpy':>9}{'cw 1':>9}" + "".join(f"{f'cw {k}':>9}" for k in counts)
    head += f"{'cw1/np':>8}" + "".join(f"{f'cw{k}/np':>8}{f'cw{k}/cw1':>9}{'best':>6}" for k in counts)
    print(head)
    print("-" * len(head))
    for name in cases:
        base, one = timed[name, "numpy"], timed[name, "castwise 1"]
        row = f"{name:<34}{np.median(base) * 1e6:>7.0f}us{np.median(one) * 1e6:>7.0f}us"
        row += "".join(f"{np.median(timed[name, f'castwise {k}']) * 1e6:>7.0f}us" for k in counts)
        row += f"{median_ratio(one, base):>8.2f}"
        for k in counts:
            many = timed[name, f"castwise {k}"]
            row += f"{median_ratio(many, base):>8.2f}{median_ratio(many, one):>9.2f}{min(many) / min(one):>6.2f}"
        print(row)


if __name__ == "__main__":
    main()
