"""Eager add: castwise against NumPy directly and jax.numpy eager, in one run.

Prints, for 16-element and 1M-element operands, same-dtype (f32 + f32 and
f64 + f64) and mixed-dtype (f32 + f64) ``add``: the time per op of each library
and castwise's ratio to NumPy and to JAX, plus the peak extra memory of the
mixed 1M case (tracemalloc) against one output's worth of bytes.

    python benchmarks/eager.py [--repeat N]

Targets, each a ratio of wall-clock times in this run (the last lines say which
are met): a small mixed op at most 3x NumPy's mixed add, and a 1M-element op
within 1.1x of NumPy (issue 3); the mixed f32[1M] + f64[1M] add at most 1.1x
castwise's own f64[1M] + f64[1M], with peak extra memory at most one output's
worth (issue 17, mixed dtypes at memory speed).
"""

from __future__ import annotations

import argparse
import timeit
import tracemalloc

import numpy as np

import runtime as rt


def per_op_seconds(fn, number: int, repeat: int) -> float:  # type: ignore[no-untyped-def]
    """Best-of-``repeat`` mean time of ``fn`` over ``number`` calls."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def peak_extra_bytes(fn) -> int:  # type: ignore[no-untyped-def]
    """Peak memory allocated while ``fn`` runs (the result is kept alive)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    result = fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del result
    return peak - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-jax", action="store_true", help="skip the jax.numpy column")
    args = parser.parse_args()
    jnp = None
    if not args.no_jax:
        try:
            import jax

            jax.config.update("jax_enable_x64", True)
            import jax.numpy as jnp
        except ImportError:
            print("jax not installed: the JAX column is skipped (pip install castwise[jax])")
    rng = np.random.default_rng(0)
    header = f"{'case':<22}{'numpy':>12}{'castwise':>12}{'jax eager':>12}{'cw/numpy':>10}{'cw/jax':>9}"
    print(header)
    print("-" * len(header))
    cases = (
        ("same f32+f32", (np.float32, np.float32)),
        ("same f64+f64", (np.float64, np.float64)),
        ("mixed f32+f64", (np.float32, np.float64)),
    )
    cw_times: dict[tuple[str, int], float] = {}
    np_times: dict[tuple[str, int], float] = {}
    for n in (16, 1_000_000):
        for label, dtypes in cases:
            a = rng.standard_normal(n).astype(dtypes[0])
            b = rng.standard_normal(n).astype(dtypes[1])
            ta, tb = rt.asarray(a), rt.asarray(b)
            number = 20000 if n == 16 else 50
            t_np = per_op_seconds(lambda a=a, b=b: np.add(a, b), number, args.repeat)
            t_cw = per_op_seconds(lambda ta=ta, tb=tb: ta + tb, number, args.repeat)
            cw_times[label, n], np_times[label, n] = t_cw, t_np
            row = f"{label + ' n=' + str(n):<22}{t_np * 1e6:>10.2f}us{t_cw * 1e6:>10.2f}us"
            if jnp is not None:
                ja, jb = jnp.asarray(a), jnp.asarray(b)
                (ja + jb).block_until_ready()
                t_jx = per_op_seconds(lambda ja=ja, jb=jb: (ja + jb).block_until_ready(), number, args.repeat)
                row += f"{t_jx * 1e6:>10.2f}us{t_cw / t_np:>10.2f}{t_cw / t_jx:>9.2f}"
            else:
                row += f"{'-':>12}{t_cw / t_np:>10.2f}{'-':>9}"
            print(row)
    n = 1_000_000
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n)
    ta, tb = rt.asarray(a), rt.asarray(b)
    out_bytes = n * 8
    ta + tb  # the signature is cached; the buffer cache is emptied so the output's memory is counted, as NumPy's is
    rt.memory.empty_cache()
    cw = peak_extra_bytes(lambda: ta + tb)
    npy = peak_extra_bytes(lambda: np.add(a, b))
    print()
    print(f"mixed f32[1M] + f64[1M] peak extra memory: castwise {cw / out_bytes:.2f}x output "
          f"({cw / 1e6:.1f} MB), numpy {npy / out_bytes:.2f}x output ({npy / 1e6:.1f} MB)")  # fmt: skip
    small = cw_times["mixed f32+f64", 16] / np_times["mixed f32+f64", 16]
    large = max(cw_times[label, n] / np_times[label, n] for label, _ in cases)
    mixed = cw_times["mixed f32+f64", n] / cw_times["same f64+f64", n]
    checks = [
        ("issue 3: small mixed add <= 3x numpy's", f"{small:.2f}x", small <= 3.0),
        ("issue 3: every 1M-element add <= 1.1x numpy's", f"{large:.2f}x", large <= 1.1),
        ("issue 17: mixed f32+f64[1M] <= 1.1x castwise f64+f64[1M]", f"{mixed:.2f}x", mixed <= 1.1),
        # the output itself, plus at most one output's worth more (a converted copy of an input)
        ("issue 17: mixed 1M peak memory <= output + 1 output", f"{cw / out_bytes:.2f}x", cw <= 2 * out_bytes),
    ]
    print("targets:")
    for label, figure, met in checks:
        print(f"  {label:<58} {figure:>7}  {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
