"""Compiled gradients: ``autodiff.jit`` of a castwise gradient against ``jax.jit(jax.grad)``, in one run.

Two workloads (the castwise functions are those of benchmarks/backward.py):

* a 150-op elementwise chain on a 256x256 float32 array
  (50 x [tanh, mul by 1.01, add 0.1]), loss = sum;
* a small MLP: x[64,128] -> tanh(x @ W1 + b1) -> @ W2 -> mean of squares.

castwise-jit is ``autodiff.jit`` of a function that calls ``autodiff.grad``:
traced once into a castwise graph (forward + derivative program), lowered to
jax.lax and compiled by XLA; each call takes castwise Tensors (made by
``rt.asarray`` from ordinary NumPy arrays, aligned however NumPy allocated
them) and returns castwise Tensors whose arrays are read-only views of XLA's
result buffers (jit's default). The reference is ``jax.jit(jax.grad(...))``
on JAX arrays. Steady-state times are per call, the contenders interleaved
call by call, in a fresh random order each round, so all see the same machine
state (``--repeat`` x a per-workload count of calls each); medians and bests
are printed, and the ratio castwise-jit / jax.jit whatever it is (target:
<= 1.1x), with a breakdown: the compiled castwise program alone on JAX arrays
(``Jitted.jax_function``); the rest (the arguments' NumPy storage handed to
XLA, which reads 64-byte aligned arrays in place and copies others in; one
view per result; the Python per-call path); ``autodiff.jit(..., copy=True)``,
which copies each result into a fresh, writable NumPy array; and castwise-jit
on the same arguments copied into 64-byte aligned memory, which XLA reads in
place (results of ``autodiff.jit`` are such arrays, so a loop feeding them
back gets this). Compile times (first call: trace + lower + XLA compile for
castwise; trace + compile for JAX) are excluded from the ratio and reported
separately.

    python benchmarks/jit.py [--repeat N]
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from backward import cw_chain, cw_mlp, jx_chain, jx_mlp, make_inputs, np_chain_grad, np_mlp_grad

import autodiff
import runtime as rt


def timed_calls(fns: dict[str, Callable[[], Any]], calls: int) -> dict[str, np.ndarray]:
    """Seconds per call of each function, the functions alternating call by call (same machine state).

    Each round runs every function once, in a fresh random order (fixed seed), so none always
    runs right after the same other one (caches, allocator and XLA's threads carry state across).
    """
    out: dict[str, list[float]] = {k: [] for k in fns}
    items = list(fns.items())
    order = np.random.default_rng(0)
    clock = time.perf_counter
    for _ in range(calls):
        for i in order.permutation(len(items)):
            kind, fn = items[i]
            start = clock()
            fn()
            out[kind].append(clock() - start)
    return {k: np.asarray(v) for k, v in out.items()}


def aligned_copy(a: np.ndarray) -> np.ndarray:
    """``a`` copied into 64-byte aligned memory, which XLA on CPU reads in place (as jit's results are)."""
    raw = np.empty(a.nbytes + 64, np.uint8)
    start = -raw.ctypes.data % 64
    out = raw[start : start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def first_call(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()

    import jax
    import jax.numpy as jnp

    x_chain, w1, b1, w2, x_mlp = make_inputs()

    cw_chain_jit = autodiff.jit(autodiff.grad(cw_chain))
    cw_mlp_jit = autodiff.jit(autodiff.grad(cw_mlp, argnums=(0, 1, 2)))
    cw_chain_copy = autodiff.jit(autodiff.grad(cw_chain), copy=True)
    cw_mlp_copy = autodiff.jit(autodiff.grad(cw_mlp, argnums=(0, 1, 2)), copy=True)
    jx_chain_jit = jax.jit(jax.grad(jx_chain))
    jx_mlp_jit = jax.jit(jax.grad(jx_mlp, argnums=(0, 1, 2)))

    t_chain = rt.asarray(x_chain)
    t_mlp = [rt.asarray(a) for a in (w1, b1, w2, x_mlp)]
    t_chain_aligned = rt.asarray(aligned_copy(x_chain))
    t_mlp_aligned = [rt.asarray(aligned_copy(a)) for a in (w1, b1, w2, x_mlp)]
    j_chain = jnp.asarray(x_chain)
    j_mlp = [jnp.asarray(a) for a in (w1, b1, w2, x_mlp)]

    workloads: dict[str, dict[str, Any]] = {
        "chain (150 ops, 256x256 f32)": {
            "castwise": lambda: cw_chain_jit(t_chain),
            "copies": lambda: cw_chain_copy(t_chain),
            "aligned": lambda: cw_chain_jit(t_chain_aligned),
            "program": lambda program: jax.block_until_ready(program(j_chain)),
            "jitted": cw_chain_jit,
            "signature": (t_chain,),
            "jax": lambda: jx_chain_jit(j_chain).block_until_ready(),
            "check": lambda: np.testing.assert_allclose(
                cw_chain_jit(t_chain).numpy(), np_chain_grad(x_chain), rtol=1e-4, atol=1e-5
            ),
            "number": 20,
        },
        "mlp (x[64,128], W1[128,256], W2[256,10])": {
            "castwise": lambda: cw_mlp_jit(*t_mlp),
            "copies": lambda: cw_mlp_copy(*t_mlp),
            "aligned": lambda: cw_mlp_jit(*t_mlp_aligned),
            "program": lambda program: jax.block_until_ready(program(*j_mlp)),
            "jitted": cw_mlp_jit,
            "signature": t_mlp,
            "jax": lambda: jax.block_until_ready(jx_mlp_jit(*j_mlp)),
            "check": lambda: [
                np.testing.assert_allclose(g.numpy(), w, rtol=1e-4, atol=1e-6)
                for g, w in zip(cw_mlp_jit(*t_mlp), np_mlp_grad(w1, b1, w2, x_mlp), strict=True)
            ],
            "number": 200,
        },
    }

    print(f"jax {jax.__version__} on {jax.default_backend()}")
    for name, w in workloads.items():
        compile_cw = first_call(w["castwise"])
        w["copies"]()
        w["aligned"]()
        compile_jx = first_call(w["jax"])
        w["check"]()  # castwise-jit must agree with the hand-written gradient before it is timed
        # the compiled castwise program itself (looked up once, outside the timings)
        w["program"] = functools.partial(w["program"], w["jitted"].jax_function(*w["signature"]))
        w["program"]()
        kinds = ("castwise", "jax", "program", "copies", "aligned")
        times = timed_calls({k: w[k] for k in kinds}, w["number"] * args.repeat)
        med = {k: float(np.median(times[k])) for k in kinds}
        low = {k: float(np.min(times[k])) for k in kinds}
        aligned = sum(t.numpy().ctypes.data % 64 == 0 for t in w["signature"])
        print(f"{name}:  (median / best of {len(times['jax'])} alternating calls)")
        print(
            f"  castwise-jit {med['castwise'] * 1e6:9.1f} / {low['castwise'] * 1e6:9.1f} us per gradient "
            "(Tensors in, Tensors out)"
        )
        print(
            f"  jax.jit      {med['jax'] * 1e6:9.1f} / {low['jax'] * 1e6:9.1f} us per gradient (JAX arrays in and out)"
        )
        print(
            f"  castwise-jit / jax.jit = {med['castwise'] / med['jax']:.2f}x median, "
            f"{low['castwise'] / low['jax']:.2f}x best  (target <= 1.10x)"
        )
        print(
            f"  of which the compiled castwise program on JAX arrays: {med['program'] * 1e6:.1f} us "
            f"({med['program'] / med['jax']:.2f}x jax.jit, median); NumPy in/out and dispatch: "
            f"{(med['castwise'] - med['program']) * 1e6:.1f} us (difference of medians; "
            f"{aligned} of {len(w['signature'])} arguments 64-byte aligned, the others copied in by XLA)"
        )
        for kind, label in (
            ("copies", "castwise-jit with copy=True (fresh writable results)"),
            ("aligned", "castwise-jit on 64-byte aligned arguments (read in place, as jit's results are)"),
        ):
            print(
                f"  {label}: {med[kind] * 1e6:.1f} / {low[kind] * 1e6:.1f} us, "
                f"{med[kind] / med['jax']:.2f}x median, {low[kind] / low['jax']:.2f}x best"
            )
        print(f"  first call, excluded above: castwise-jit {compile_cw * 1e3:.0f} ms (trace + lower + compile), "
              f"jax.jit {compile_jx * 1e3:.0f} ms (trace + compile)")  # fmt: skip


if __name__ == "__main__":
    main()
