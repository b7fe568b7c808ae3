"""vmap: ``autodiff.vmap(f)`` over a batch of 64 against a Python loop of ``f`` and ``jax.vmap``, in one run.

Three workloads, each per example and batched over 64 examples:

* ``chain``: a 60-op elementwise chain on a [256] float32 vector
  (20 x [tanh, mul by 1.01, add 0.1]), then its sum;
* ``mlp``: a small MLP, x[128] -> tanh(x @ W1[128,256] + b1) -> @ W2[256,10],
  then the sum of squares (weights shared, closed over);
* ``per-example grad``: ``vmap(grad(loss), in_axes=(None, 0))`` of that MLP's
  loss with respect to W1 (the per-example gradients of differentially private
  training), against a loop of ``grad``.

Columns: castwise ``autodiff.vmap`` (eager; each call records ``f`` on one
example and replays the recording on the batch), a Python loop of the same
castwise ``f`` over the 64 examples (stacked with ``rt.lax.stack``), ``jax.vmap``
eager, and ``jax.jit(jax.vmap)`` (compile excluded); for the chain also the
same castwise ops written by hand for the whole batch (what vmap's replay
runs, without the recording of one example and the rules). Ratios are
other / castwise vmap (above 1: vmap is faster). Targets (issue 16): vmap at
least 5x faster than the Python loop, and faster than ``jax.vmap`` eager; the
last lines say which are met. ``jax.jit`` is reported, not targeted (a
compiled program against an eager one).

    python benchmarks/vmap.py [--repeat N]

On a shared or loaded machine set ``OPENBLAS_NUM_THREADS=1``: a multithreaded
BLAS call that waits for busy cores can cost a hundred times its arithmetic.
"""

from __future__ import annotations

import argparse
import functools
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

import autodiff
import runtime as rt
from runtime.core import lax as F

BATCH = 64
CHAIN_REPEATS = 20  # x 3 ops = 60


def best(fn: Callable[[], Any], number: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


# -- castwise, per example ------------------------------------------------------------------------


def cw_chain(x: rt.Tensor) -> rt.Tensor:
    for _ in range(CHAIN_REPEATS):
        x = F.add(F.mul(F.tanh(x), 1.01), 0.1)
    return F.reduce_sum(x, (0,))


def cw_chain_by_hand(xs: rt.Tensor) -> rt.Tensor:
    """The chain written for the whole batch at once: what vmap's replay should cost."""
    for _ in range(CHAIN_REPEATS):
        xs = F.add(F.mul(F.tanh(xs), 1.01), 0.1)
    return F.reduce_sum(xs, (1,))


def cw_mlp_loss(w1: rt.Tensor, b1: rt.Tensor, w2: rt.Tensor, x: rt.Tensor) -> rt.Tensor:
    h = F.tanh(F.add(F.matmul(x, w1), b1))
    out = F.matmul(h, w2)
    return F.reduce_sum(F.mul(out, out), (0,))


def loop(f: Callable[..., rt.Tensor], in_axes: tuple[int | None, ...]) -> Callable[..., rt.Tensor]:
    """``f`` called on each example in Python, the results stacked: what vmap replaces."""

    def run(*args: rt.Tensor) -> rt.Tensor:
        n = next(a.shape[0] for a, ax in zip(args, in_axes, strict=True) if ax is not None)
        return F.stack([f(*[a[i] if ax is not None else a for a, ax in zip(args, in_axes, strict=True)])
                        for i in range(n)])  # fmt: skip

    return run


# -- the same in jax.numpy ------------------------------------------------------------------------


def jx_chain(x: Any) -> Any:
    import jax.numpy as jnp

    for _ in range(CHAIN_REPEATS):
        x = jnp.tanh(x) * jnp.float32(1.01) + jnp.float32(0.1)
    return jnp.sum(x)


def jx_mlp_loss(w1: Any, b1: Any, w2: Any, x: Any) -> Any:
    import jax.numpy as jnp

    out = jnp.tanh(x @ w1 + b1) @ w2
    return jnp.sum(out * out)


def run_jax(f: Any, args: tuple[Any, ...]) -> Any:
    import jax

    return jax.block_until_ready(f(*args))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    xs_chain = rng.standard_normal((BATCH, 256)).astype(np.float32)
    w1 = (rng.standard_normal((128, 256)) * 0.1).astype(np.float32)
    b1 = (rng.standard_normal(256) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((256, 10)) * 0.1).astype(np.float32)
    xs_mlp = rng.standard_normal((BATCH, 128)).astype(np.float32)
    t = {k: rt.asarray(v) for k, v in {"xc": xs_chain, "w1": w1, "b1": b1, "w2": w2, "xm": xs_mlp}.items()}

    mlp_axes = (None, None, None, 0)
    grad_w1 = autodiff.grad(cw_mlp_loss)
    workloads: dict[str, tuple[Callable[..., rt.Tensor], tuple[int | None, ...], tuple[rt.Tensor, ...], int]] = {
        "chain": (cw_chain, (0,), (t["xc"],), 5),
        "mlp": (cw_mlp_loss, mlp_axes, (t["w1"], t["b1"], t["w2"], t["xm"]), 10),
        "per-example grad": (grad_w1, mlp_axes, (t["w1"], t["b1"], t["w2"], t["xm"]), 3),
    }
    rows: dict[str, dict[str, float]] = {}
    results: dict[str, np.ndarray] = {}
    for name, (f, in_axes, call_args, number) in workloads.items():
        vf, lf = autodiff.vmap(f, in_axes=in_axes), loop(f, in_axes)
        got, want = vf(*call_args), lf(*call_args)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-4, atol=1e-5)
        results[name] = got.numpy()
        rows[name] = {
            "castwise vmap": best(functools.partial(vf, *call_args), number, args.repeat),
            "python loop": best(functools.partial(lf, *call_args), max(1, number // 5), args.repeat),
        }
    rows["chain"]["castwise by hand"] = best(lambda: cw_chain_by_hand(t["xc"]), 5, args.repeat)
    compile_ms: dict[str, float] = {}
    try:
        import time

        import jax
        import jax.numpy as jnp

        j = {k: jnp.asarray(v) for k, v in {"xc": xs_chain, "w1": w1, "b1": b1, "w2": w2, "xm": xs_mlp}.items()}
        jax_work: dict[str, tuple[Any, tuple[Any, ...], int]] = {
            "chain": (jax.vmap(jx_chain), (j["xc"],), 5),
            "mlp": (jax.vmap(jx_mlp_loss, in_axes=mlp_axes), (j["w1"], j["b1"], j["w2"], j["xm"]), 10),
            "per-example grad": (jax.vmap(jax.grad(jx_mlp_loss), in_axes=mlp_axes),
                                 (j["w1"], j["b1"], j["w2"], j["xm"]), 3),
        }  # fmt: skip
        for name, (jf, jargs, number) in jax_work.items():
            jax.block_until_ready(jf(*jargs))
            np.testing.assert_allclose(np.asarray(jf(*jargs)), results[name], rtol=2e-3, atol=1e-4)
            rows[name]["jax.vmap eager"] = best(functools.partial(run_jax, jf, jargs), number, args.repeat)
            jitted = jax.jit(jf)
            start = time.perf_counter()
            jax.block_until_ready(jitted(*jargs))
            compile_ms[name] = (time.perf_counter() - start) * 1e3
            rows[name]["jax.jit(vmap)"] = best(functools.partial(run_jax, jitted, jargs), 20, args.repeat)
    except ImportError:
        print("jax not installed: JAX columns skipped (pip install castwise[jax])")

    for name, times in rows.items():
        cw = times["castwise vmap"]
        print(f"{name}: castwise vmap {cw * 1e3:.2f} ms per batch of {BATCH}")
        for other, t_other in times.items():
            if other != "castwise vmap":
                print(f"  vs {other:<15} {t_other * 1e3:9.2f} ms   {other}/castwise vmap = {t_other / cw:.2f}x")
        if name in compile_ms:
            print(f"  (jax.jit compile time, excluded above: {compile_ms[name]:.0f} ms)")
    print("targets (issue 16), eager autodiff.vmap:")
    for name, times in rows.items():
        cw = times["castwise vmap"]
        checks = [(">= 5x faster than the loop", times["python loop"] / cw, 5.0)]
        if "jax.vmap eager" in times:
            checks.append(("faster than jax.vmap eager", times["jax.vmap eager"] / cw, 1.0))
        for label, ratio, limit in checks:
            print(f"  {name:<17} {label:<28} {ratio:6.2f}x  {'met' if ratio >= limit else 'NOT met'}")


if __name__ == "__main__":
    main()
