"""Gradients: castwise against PyTorch, HIPS autograd, JAX eager, jax.jit and hand-written NumPy, in one run.

Three workloads:

* a 150-op elementwise chain on a 256x256 float32 array
  (50 x [tanh, mul by 1.01, add 0.1]), loss = sum;
* a small MLP: x[64,128] -> tanh(x @ W1 + b1) -> @ W2 -> mean of squares;
* the same MLP, large: x[256,784] -> 512 -> 10.

For each: castwise ``autodiff.grad`` (eager); PyTorch eager
(``torch.autograd.grad``) at 1 thread and at its best thread count on this
machine; HIPS ``autograd.grad``; ``jax.grad`` eager; ``jax.jit(jax.grad)``
(compile excluded, reported separately); and a NumPy-only forward plus a
hand-written backward. Ratios are castwise / other, wall clock, measured in the
same run, with the contenders taking turns block by block (best block of
``--repeat`` rounds). PyTorch, autograd and JAX are optional (``pip install
castwise[bench]`` installs them): a missing one prints "not installed" and its
columns are skipped.

Targets (issue 17; the last lines say which are met): castwise's eager
``autodiff.grad`` at or below HIPS autograd and PyTorch (best thread count) on
all three workloads; ``autodiff.jit(autodiff.grad(f))`` at or below
``jax.jit(jax.grad(f))`` on the chain and the small MLP.

Two more rows explain the MLP's ratio to NumPy: castwise's compiled gradient
(``autodiff.jit`` of the same ``autodiff.grad``, with JAX installed), and the
floor of any eager castwise gradient, the ops castwise's derivative program runs
(the loss, a materialised broadcast, both sides of ``out * out``), written as
plain NumPy calls with no framework code between them.

    python benchmarks/backward.py [--repeat N] [--threads N,N,...]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import autodiff
import runtime as rt
from runtime.core import lax as F

CHAIN_REPEATS = 50  # x 3 ops = 150


# -- castwise -------------------------------------------------------------------------------


def cw_chain(x: rt.Tensor) -> rt.Tensor:
    for _ in range(CHAIN_REPEATS):
        x = F.add(F.mul(F.tanh(x), 1.01), 0.1)
    return F.reduce_sum(x, (0, 1))


def cw_mlp(w1: rt.Tensor, b1: rt.Tensor, w2: rt.Tensor, x: rt.Tensor) -> rt.Tensor:
    h = F.tanh(F.add(F.matmul(x, w1), F.broadcast_in_dim(b1, (x.shape[0], b1.shape[0]), (1,))))
    out = F.matmul(h, w2)
    return F.div(F.reduce_sum(F.mul(out, out), (0, 1)), float(out.size))


# -- the same workloads in jax.numpy (jax is imported only when they run) ---------------------------


def jx_chain(x):  # type: ignore[no-untyped-def]
    import jax.numpy as jnp

    for _ in range(CHAIN_REPEATS):
        x = jnp.tanh(x) * 1.01 + 0.1
    return jnp.sum(x)


def jx_mlp(w1, b1, w2, x):  # type: ignore[no-untyped-def]
    import jax.numpy as jnp

    out = jnp.tanh(x @ w1 + b1) @ w2
    return jnp.mean(out * out)


def make_inputs() -> tuple[np.ndarray, ...]:
    """The chain input and the MLP's (w1, b1, w2, x), float32, fixed seed."""
    rng = np.random.default_rng(0)
    x_chain = rng.standard_normal((256, 256)).astype(np.float32)
    w1 = (rng.standard_normal((128, 256)) * 0.1).astype(np.float32)
    b1 = np.zeros(256, np.float32)
    w2 = (rng.standard_normal((256, 10)) * 0.1).astype(np.float32)
    x_mlp = rng.standard_normal((64, 128)).astype(np.float32)
    return x_chain, w1, b1, w2, x_mlp


def make_large_mlp_inputs() -> tuple[np.ndarray, ...]:
    """The large MLP's (w1, b1, w2, x): x[256,784] -> 512 -> 10, float32, fixed seed."""
    rng = np.random.default_rng(1)
    w1 = (rng.standard_normal((784, 512)) * 0.05).astype(np.float32)
    b1 = np.zeros(512, np.float32)
    w2 = (rng.standard_normal((512, 10)) * 0.05).astype(np.float32)
    x = rng.standard_normal((256, 784)).astype(np.float32)
    return w1, b1, w2, x


# -- PyTorch and HIPS autograd (imported only when they run) ------------------------------------


def torch_grads(x_chain: np.ndarray, mlps: dict[str, tuple[np.ndarray, ...]]) -> dict[str, Callable[[], Any]]:
    """Zero-argument PyTorch gradient calls per workload (``torch.autograd.grad``, eager, CPU)."""
    import torch

    def chain(x):  # type: ignore[no-untyped-def]
        for _ in range(CHAIN_REPEATS):
            x = torch.tanh(x) * 1.01 + 0.1
        return x.sum()

    def mlp(w1, b1, w2, x):  # type: ignore[no-untyped-def]
        out = torch.tanh(x @ w1 + b1) @ w2
        return (out * out).mean()

    tx = torch.from_numpy(x_chain).requires_grad_()
    calls: dict[str, Callable[[], Any]] = {"chain": lambda: torch.autograd.grad(chain(tx), (tx,))}
    for name, arrays in mlps.items():
        w1, b1, w2, x = (torch.from_numpy(a) for a in arrays)
        params = tuple(a.requires_grad_() for a in (w1, b1, w2))
        calls[name] = lambda params=params, x=x: torch.autograd.grad(mlp(*params, x), params)
    return calls


def autograd_grads(x_chain: np.ndarray, mlps: dict[str, tuple[np.ndarray, ...]]) -> dict[str, Callable[[], Any]]:
    """Zero-argument HIPS autograd gradient calls per workload."""
    import autograd
    import autograd.numpy as anp

    def chain(x):  # type: ignore[no-untyped-def]
        for _ in range(CHAIN_REPEATS):
            x = anp.tanh(x) * 1.01 + 0.1
        return anp.sum(x)

    def mlp(w1, b1, w2, x):  # type: ignore[no-untyped-def]
        out = anp.dot(anp.tanh(anp.dot(x, w1) + b1), w2)
        return anp.mean(out * out)

    g_chain = autograd.grad(chain)
    g_mlp = autograd.grad(mlp, argnum=(0, 1, 2))
    calls: dict[str, Callable[[], Any]] = {"chain": lambda: g_chain(x_chain)}
    for name, arrays in mlps.items():
        calls[name] = lambda arrays=arrays: g_mlp(*arrays)
    return calls


#: a contender: its zero-argument call, calls per timed block, and what to run before each block
Contender = tuple[Callable[[], Any], int, Callable[[], Any] | None]


def interleaved(contenders: dict[tuple[str, str], Contender], repeat: int) -> dict[tuple[str, str], float]:
    """Best seconds per call of each contender over ``repeat`` rounds. In each round every
    contender runs one timed block of calls in turn, so all of them see the same machine state
    (on a loaded machine, timing one contender after another compares different moments)."""
    best_of = dict.fromkeys(contenders, float("inf"))
    for _ in range(repeat):
        for key, (fn, number, setup) in contenders.items():
            if setup is not None:
                setup()  # (PyTorch's thread count, outside the timed block)
            start = time.perf_counter()
            for _ in range(number):
                fn()
            best_of[key] = min(best_of[key], (time.perf_counter() - start) / number)
    return best_of


# -- NumPy forward + hand-written backward -------------------------------------------------------


def np_chain_grad(x: np.ndarray) -> np.ndarray:
    saved = []
    for _ in range(CHAIN_REPEATS):
        t = np.tanh(x)
        saved.append(t)
        x = t * np.float32(1.01) + np.float32(0.1)
    g = np.ones_like(x)
    for t in reversed(saved):
        g = g * np.float32(1.01) * (1 - t * t)
    return g


def np_mlp_grad(w1, b1, w2, x):  # type: ignore[no-untyped-def]
    h = np.tanh(x @ w1 + b1)
    out = h @ w2
    g_out = 2 * out / out.size
    g_w2 = h.T @ g_out
    g_h = g_out @ w2.T
    g_pre = g_h * (1 - h * h)
    return x.T @ g_pre, g_pre.sum(0), g_w2


def np_mlp_ops_castwise_runs(w1, b1, w2, x):  # type: ignore[no-untyped-def]
    """The kernels of castwise's MLP gradient, op for op, as bare NumPy calls: castwise's floor."""
    one = np.float32(1)
    pre = np.empty((x.shape[0], b1.shape[0]), np.float32)
    np.copyto(pre, b1.reshape(1, -1))  # broadcast_in_dim, materialised
    h = np.tanh(x @ w1 + pre)
    out = h @ w2
    n = np.float32(out.size)
    _loss = np.add.reduce(out * out, axis=(0, 1)) / n
    g_sq = np.empty(out.shape, np.float32)
    np.copyto(g_sq, one / n)  # the reduce_sum's cotangent, broadcast
    g_out = g_sq * out + out * g_sq  # mul's two sides, accumulated
    g_pre = (g_out @ w2.T) * (one - h * h)
    return x.T @ g_pre, g_pre.sum(0), h.T @ g_out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--threads",
        default=",".join(str(k) for k in range(1, (os.cpu_count() or 1) + 1)),
        help="PyTorch thread counts to try (default: 1 to the CPU count); its best is the target",
    )
    args = parser.parse_args()
    threads = [int(k) for k in args.threads.split(",")]
    x_chain, w1, b1, w2, x_mlp = make_inputs()
    mlps = {"mlp": (w1, b1, w2, x_mlp), "mlp large": make_large_mlp_inputs()}
    number = {"chain": 3, "mlp": 20, "mlp large": 5}

    cw_chain_grad = autodiff.grad(cw_chain)
    cw_mlp_grad = autodiff.grad(cw_mlp, argnums=(0, 1, 2))
    t_chain = rt.asarray(x_chain)
    t_mlps = {name: [rt.asarray(a) for a in arrays] for name, arrays in mlps.items()}

    # castwise must agree with the hand-written gradients before it is timed
    np.testing.assert_allclose(cw_chain_grad(t_chain).numpy(), np_chain_grad(x_chain), rtol=1e-4, atol=1e-5)
    for name, arrays in mlps.items():
        for got, want in zip(cw_mlp_grad(*t_mlps[name]), np_mlp_grad(*arrays), strict=True):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)

    # every contender is checked first, then all are timed together, block by block (``interleaved``)
    contenders: dict[tuple[str, str], Contender] = {
        ("chain", "castwise"): (lambda: cw_chain_grad(t_chain), number["chain"], None),
        ("chain", "numpy"): (lambda: np_chain_grad(x_chain), number["chain"], None),
    }
    for name, arrays in mlps.items():
        t = t_mlps[name]
        contenders[name, "castwise"] = (lambda t=t: cw_mlp_grad(*t), number[name], None)
        contenders[name, "numpy"] = (lambda arrays=arrays: np_mlp_grad(*arrays), number[name], None)
    for got, want in zip(np_mlp_ops_castwise_runs(w1, b1, w2, x_mlp), np_mlp_grad(w1, b1, w2, x_mlp), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    contenders["mlp", "floor"] = (lambda: np_mlp_ops_castwise_runs(w1, b1, w2, x_mlp), number["mlp"], None)

    torch_counts: list[int] = []
    try:
        calls = torch_grads(x_chain, mlps)
    except ImportError as err:  # a torch whose native libraries are missing fails here too
        why = "" if isinstance(err, ModuleNotFoundError) else f" ({err})"
        print(f"torch not installed{why}: PyTorch columns skipped (pip install castwise[bench])")
    else:
        import torch

        for name, fn in calls.items():  # PyTorch agrees before it is timed, too
            want = np_chain_grad(x_chain) if name == "chain" else np_mlp_grad(*mlps[name])
            for got, w in zip(fn(), want if name != "chain" else (want,), strict=True):
                np.testing.assert_allclose(got.numpy(), w, rtol=1e-4, atol=1e-5)
        torch_saved_threads = torch.get_num_threads()
        torch_counts = sorted(set(threads) | {1})
        for name, fn in calls.items():
            for k in torch_counts:
                contenders[name, f"torch {k}"] = (fn, number[name], lambda k=k: torch.set_num_threads(k))
    try:
        ag_calls = autograd_grads(x_chain, mlps)
    except ImportError:
        print("autograd not installed: HIPS autograd columns skipped (pip install castwise[bench])")
    else:
        for name, fn in ag_calls.items():
            want = np_chain_grad(x_chain) if name == "chain" else np_mlp_grad(*mlps[name])
            for got, w in zip((fn(),) if name == "chain" else fn(), want if name != "chain" else (want,), strict=True):
                np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-5)
            contenders[name, "autograd"] = (fn, number[name], None)

    compile_times: dict[str, float] = {}
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        print("jax not installed: JAX columns skipped (pip install castwise[jax])")
    else:
        jx_x = jnp.asarray(x_chain)
        eager_chain = jax.grad(jx_chain)
        eager_mlp = jax.grad(jx_mlp, argnums=(0, 1, 2))
        eager_chain(jx_x).block_until_ready()
        contenders["chain", "jax eager"] = (lambda: eager_chain(jx_x).block_until_ready(), 1, None)
        jit_chain, jit_mlp = jax.jit(eager_chain), jax.jit(eager_mlp)
        start = time.perf_counter()
        jit_chain(jx_x).block_until_ready()
        compile_times["chain"] = time.perf_counter() - start
        contenders["chain", "jax.jit"] = (lambda: jit_chain(jx_x).block_until_ready(), number["chain"], None)
        cw_chain_jit = autodiff.jit(cw_chain_grad)
        cw_chain_jit(t_chain)
        contenders["chain", "castwise jit"] = (lambda: cw_chain_jit(t_chain), number["chain"], None)
        cw_mlp_jit = autodiff.jit(cw_mlp_grad)
        for name, arrays in mlps.items():
            jx_args = [jnp.asarray(a) for a in arrays]
            jax.block_until_ready(eager_mlp(*jx_args))
            contenders[name, "jax eager"] = (
                lambda a=jx_args: jax.block_until_ready(eager_mlp(*a)),
                max(1, number[name] // 4),
                None,
            )
            start = time.perf_counter()
            jax.block_until_ready(jit_mlp(*jx_args))
            compile_times[name] = time.perf_counter() - start
            contenders[name, "jax.jit"] = (lambda a=jx_args: jax.block_until_ready(jit_mlp(*a)), number[name], None)
            t = t_mlps[name]
            cw_mlp_jit(*t)
            contenders[name, "castwise jit"] = (lambda t=t: cw_mlp_jit(*t), number[name], None)

    timed = interleaved(contenders, args.repeat)
    if torch_counts:
        torch.set_num_threads(torch_saved_threads)
    rows: dict[str, dict[str, float]] = {"chain": {}, "mlp": {}, "mlp large": {}}
    compiled: dict[str, float] = {}
    torch_threads: dict[str, int] = {}
    for (workload, name), seconds in timed.items():
        if name == "castwise jit":
            compiled[workload] = seconds
        elif name != "floor" and not name.startswith("torch "):
            rows[workload][name] = seconds
    for workload in rows:
        if torch_counts:
            rows[workload]["torch 1 thr"] = timed[workload, "torch 1"]
            rows[workload]["torch best"], torch_threads[workload] = min(
                (timed[workload, f"torch {k}"], k) for k in torch_counts
            )
    floor = timed["mlp", "floor"]

    for workload, times in rows.items():
        cw = times["castwise"]
        print(f"{workload}: castwise {cw * 1e3:.3f} ms per gradient")
        for name, t in times.items():
            if name == "castwise":
                continue
            extra = f"   ({torch_threads[workload]} threads)" if name == "torch best" else ""
            print(f"  vs {name:<12} {t * 1e3:9.3f} ms   castwise/{name} = {cw / t:.2f}x{extra}")
        if workload in compile_times:
            print(f"  (jax.jit compile time, excluded above: {compile_times[workload] * 1e3:.0f} ms)")
        if workload in compiled:
            c = compiled[workload]
            print(
                f"  castwise autodiff.jit(grad): {c * 1e3:.3f} ms = {c / times['numpy']:.2f}x numpy, "
                f"{c / times['jax.jit']:.2f}x jax.jit"
            )
        if workload == "mlp":
            print(
                f"  floor of an eager castwise gradient (its ops as bare NumPy calls): {floor * 1e3:.3f} ms = "
                f"{floor / times['numpy']:.2f}x numpy"
            )
    print("targets (issue 17):")
    print("  1. eager autodiff.grad at or below HIPS autograd and PyTorch (best thread count):")
    for workload, times in rows.items():
        cw = times["castwise"]
        for label, key in (("autograd", "autograd"), ("torch best", "torch best")):
            if key not in times:
                print(f"     {workload:<10} <= {label:<11} (not measured: not installed)")
                continue
            ratio = cw / times[key]
            print(f"     {workload:<10} <= {label:<11} {ratio:5.2f}x  {'met' if ratio <= 1.0 else 'NOT met'}")
    print("  2. autodiff.jit(autodiff.grad(f)) at or below jax.jit(jax.grad(f)):")
    for workload in ("chain", "mlp"):
        if workload not in compiled:
            print(f"     {workload:<10} (not measured: jax not installed)")
            continue
        ratio = compiled[workload] / rows[workload]["jax.jit"]
        print(f"     {workload:<10} {ratio:5.2f}x  {'met' if ratio <= 1.0 else 'NOT met'}")


if __name__ == "__main__":
    main()
