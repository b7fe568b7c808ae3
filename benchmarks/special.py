"""The incomplete gamma kernels (igamma, igammac, igamma_grad_a) against JAX, measured in one run.

Each kernel iterates per element until its term is below the dtype's epsilon, as XLA's
expansion does; castwise computes only the elements still iterating (compacted by index),
so an array costs about its slowest element's iterations on a shrinking subset rather than
on the whole array every step. Prints castwise's time, jax.jit's (compiled, warm) and the
ratio, for 100,000 float32 and float64 values in the range users evaluate (a, x in 0.1 .. 20).

    python benchmarks/special.py
"""

from __future__ import annotations

import timeit

import numpy as np

import runtime as rt


def best(fn, number: int = 3, repeat: int = 5) -> float:  # type: ignore[no-untyped-def]
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main() -> None:
    try:
        import jax
        from jax import lax
    except ImportError:  # the comparison column is optional
        jax = None
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(0)
    print(f"{'op':<16} {'dtype':<8} {'castwise':>12} {'jax.jit':>12} {'ratio':>7}")
    for dtype in (np.float32, np.float64):
        a = rng.uniform(0.1, 20, 100_000).astype(dtype)
        x = rng.uniform(0.1, 20, 100_000).astype(dtype)
        ta, tx = rt.asarray(a), rt.asarray(x)
        for name in ("igamma", "igammac", "igamma_grad_a"):
            ours = best(lambda name=name, ta=ta, tx=tx: getattr(rt.lax, name)(ta, tx))
            if jax is None:
                print(f"{name:<16} {np.dtype(dtype).name:<8} {ours * 1e3:>10.1f}ms {'not installed':>12}")
                continue
            f = jax.jit(getattr(lax, name))
            ja, jx = jax.device_put(a), jax.device_put(x)
            f(ja, jx).block_until_ready()
            theirs = best(lambda f=f, ja=ja, jx=jx: f(ja, jx).block_until_ready())
            print(f"{name:<16} {np.dtype(dtype).name:<8} {ours * 1e3:>10.1f}ms {theirs * 1e3:>10.1f}ms "
                  f"{ours / theirs:>6.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
