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
same run, with the contenders taking turns block by block: ``--rounds`` rounds
(default 7), each contender one timed block per round, and each reported ratio
is the median over the rounds of castwise / other in the same round, so a burst
of load on a shared machine moves a round or two, not the figure. PyTorch's
best thread count is found in the same run (lowest median time of each count
in ``--threads``). PyTorch, autograd and JAX are optional (``pip install
castwise[bench]`` installs them): a missing one prints "not installed" and its
columns are skipped.

Targets (issue 24; the last lines say which are met, as median ratios):
castwise's eager ``autodiff.grad`` at most 1.0x the best of HIPS autograd and
PyTorch (best thread count) on all three workloads (per round, the faster of the
two); ``autodiff.jit(autodiff.grad(f))`` at most 1.0x ``jax.jit(jax.grad(f))`` on
all three (``autodiff.jit``'s default; also shown with its opt-in device buffers).

Two more rows explain the MLP's ratio to NumPy: castwise's compiled gradient
(``autodiff.jit`` of the same ``autodiff.grad``, with JAX installed), and the
floor of any eager castwise gradient, the ops castwise's derivative program runs
(the loss, a materialised broadcast, both sides of ``out * out``), written as
plain NumPy calls with no framework code between them.

    python benchmarks/backward.py [--rounds N] [--threads N,N,...]
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


def interleaved(contenders: dict[tuple[str, str], Contender], rounds: int) -> dict[tuple[str, str], list[float]]:
    """Seconds per call of each contender in each of ``rounds`` rounds. In each round every
    contender runs one timed block of calls in turn, so all of them see the same machine state
    (on a loaded machine, timing one contender after another compares different moments), and
    a ratio of two contenders in one round compares the same moment."""
    times: dict[tuple[str, str], list[float]] = {key: [] for key in contenders}
    for _ in range(rounds):
        for key, (fn, number, setup) in contenders.items():
            if setup is not None:
                setup()  # (PyTorch's thread count, outside the timed block)
            start = time.perf_counter()
            for _ in range(number):
                fn()
            times[key].append((time.perf_counter() - start) / number)
    return times


def median_ratio(num: list[float], den: list[float]) -> float:
    """The median over rounds of ``num[r] / den[r]``: each ratio compares one moment, and the
    median ignores the rounds a burst of load hit one side of."""
    return float(np.median([a / b for a, b in zip(num, den, strict=True)]))


def verdict(ratio: float) -> str:
    return "met" if ratio <= 1.0 else "NOT met"


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
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (at least 7 for the targets)")
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
        cw_chain_buffers = autodiff.jit(cw_chain_grad, device_buffers=True)  # (the opt-in: jit.py)
        cw_chain_buffers(t_chain)
        contenders["chain", "castwise jit buffers"] = (lambda: cw_chain_buffers(t_chain), number["chain"], None)
        cw_mlp_jit = autodiff.jit(cw_mlp_grad)
        cw_mlp_buffers = autodiff.jit(cw_mlp_grad, device_buffers=True)
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
            cw_mlp_buffers(*t)
            contenders[name, "castwise jit buffers"] = (lambda t=t: cw_mlp_buffers(*t), number[name], None)

    timed = interleaved(contenders, args.rounds)
    if torch_counts:
        torch.set_num_threads(torch_saved_threads)
    report(timed, torch_counts, compile_times, args.rounds)


def report(
    timed: dict[tuple[str, str], list[float]], torch_counts: list[int], compile_times: dict[str, float], rounds: int
) -> None:
    """Print per workload the median castwise/peer ratio of each peer, then the targets."""
    med = {key: float(np.median(ts)) for key, ts in timed.items()}
    workloads = ("chain", "mlp", "mlp large")
    torch_best: dict[str, int] = {}
    for workload in workloads:
        if torch_counts:  # PyTorch's best thread count in this run: the lowest median time
            torch_best[workload] = min(torch_counts, key=lambda k, w=workload: med[w, f"torch {k}"])
    print(f"{rounds} interleaved rounds; ratios are medians over the rounds of castwise/peer in the same round")
    for workload in workloads:
        cw = timed[workload, "castwise"]
        print(f"{workload}: castwise eager grad {med[workload, 'castwise'] * 1e3:.3f} ms (median)")
        peers = [(name, name) for (w, name) in timed if w == workload and name in ("numpy", "autograd", "jax eager")]
        if torch_counts:
            peers += [(f"torch {k} thr", f"torch {k}") for k in torch_counts]
        for label, key in peers:
            extra = (
                "   <- PyTorch's best thread count" if torch_counts and key == f"torch {torch_best[workload]}" else ""
            )
            print(
                f"  vs {label:<12} {med[workload, key] * 1e3:9.3f} ms   castwise/{label} = "
                f"{median_ratio(cw, timed[workload, key]):.2f}x{extra}"
            )
        if (workload, "castwise jit") in timed:
            c, j = timed[workload, "castwise jit"], timed[workload, "jax.jit"]
            print(
                f"  castwise autodiff.jit(grad) {med[workload, 'castwise jit'] * 1e3:.3f} ms vs jax.jit(jax.grad) "
                f"{med[workload, 'jax.jit'] * 1e3:.3f} ms: {median_ratio(c, j):.2f}x "
                f"(with the opt-in device buffers: {median_ratio(timed[workload, 'castwise jit buffers'], j):.2f}x; "
                f"jax.jit compile, excluded: {compile_times[workload] * 1e3:.0f} ms)"
            )
        if workload == "mlp":
            print(
                f"  floor of an eager castwise gradient (its ops as bare NumPy calls): "
                f"{med['mlp', 'floor'] * 1e3:.3f} ms = "
                f"{median_ratio(timed['mlp', 'floor'], timed['mlp', 'numpy']):.2f}x numpy"
            )
    print("targets (issue 24), median ratios:")
    print("  1. eager autodiff.grad <= 1.0x the best of PyTorch (best thread count) and HIPS autograd:")
    for workload in workloads:
        against: dict[str, list[float]] = {}
        if torch_counts:
            against[f"torch {torch_best[workload]} thr"] = timed[workload, f"torch {torch_best[workload]}"]
        else:
            print(f"     {workload:<10} vs torch: not installed")
        if (workload, "autograd") in timed:
            against["autograd"] = timed[workload, "autograd"]
        else:
            print(f"     {workload:<10} vs autograd: not installed")
        if not against:
            continue
        cw = timed[workload, "castwise"]
        best_peer = [min(ts) for ts in zip(*against.values(), strict=True)]  # the faster peer in each round
        ratio = median_ratio(cw, best_peer)
        each = ", ".join(f"{name} {median_ratio(cw, ts):.2f}x" for name, ts in against.items())
        print(f"     {workload:<10} {ratio:5.2f}x  {verdict(ratio):<8} ({each})")
    print("  2. autodiff.jit(autodiff.grad(f)) <= 1.0x jax.jit(jax.grad(f)):")
    for workload in workloads:
        if (workload, "castwise jit") not in timed:
            print(f"     {workload:<10} jax: not installed")
            continue
        ratio = median_ratio(timed[workload, "castwise jit"], timed[workload, "jax.jit"])
        print(f"     {workload:<10} {ratio:5.2f}x  {verdict(ratio)}")


if __name__ == "__main__":
    main()
