"""Choosing a promotion policy and inspecting its lattice.

The same mixed-dtype expression gives different dtypes under different
policies; `castwise lattice POLICY` prints a whole table and `--check` reports
its algebraic laws. This script shows both from Python.

    python examples/choosing_a_policy.py
"""

from __future__ import annotations

import numpy as np

import runtime as rt
from runtime.core import lattice


def main() -> None:
    counts = rt.asarray(np.array([1, 2, 3], np.int64))
    scale = rt.asarray(np.array([0.5, 0.5, 0.5], np.float32))
    print("int64[3] * float32[3] and int64[3] / 2 under each policy:")
    results = {}
    for name in ("jax", "numpy", "torch", "neuron", "tenferro"):
        with rt.use_policy(name):
            product = counts * scale
            quotient = counts / 2
            results[name] = (product.dtype, quotient.dtype)
            print(f"  {name:<9} {product.dtype.short:>4}  {quotient.dtype.short:>4}")
    assert results["jax"][0] is rt.float32 and results["numpy"][0] is rt.float64
    assert results["torch"][1] is rt.float32 and results["numpy"][1] is rt.float64

    with rt.use_policy("strict"):
        try:
            counts * scale
        except rt.PromotionError as err:
            print(f"strict refuses: {err}")
        else:
            raise AssertionError("strict must refuse int64 * float32")

    print()
    print(lattice.render("tenferro"))
    for result in lattice.check_laws("torch"):
        print(f"torch {result.law}: {'holds' if result.holds else 'fails, e.g. ' + result.counterexample}")


if __name__ == "__main__":
    main()
