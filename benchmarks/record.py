"""Recording overhead and planning cost, measured in one run.

1. Time per op for a small (16-element) ``mul`` untracked against the same op
   with a tracked input (recorded), as a ratio: the cases take turns, ``--rounds``
   rounds (default 15) of one timed block each, and each ratio is the median over
   the rounds of recorded/untracked in the same round (a burst of load on a shared
   machine moves a round, not the figure). Targets: recording adds at most 2x to a
   small op's eager time (issue 4), at most 1.5x (issue 17), at most 1.3x (issue 24);
   the last lines say which are met.
2. ``plan`` time for a ``concatenate`` of 10 .. 100,000 operands (mixed f32/f64),
   per operand, showing linear growth (the per-operand time stays flat).

    python benchmarks/record.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import timeit

import numpy as np

import autodiff  # noqa: F401  (installs the recorder)
import runtime as rt
from runtime.core import ops
from runtime.core.plan import plan


def best(fn, number: int, repeat: int = 5) -> float:  # type: ignore[no-untyped-def]
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds of the per-op cases")
    args = parser.parse_args()
    x = rt.asarray(np.ones(16))
    y = rt.asarray(np.ones(16))
    tracked = rt.asarray(np.ones(16), requires_grad=True)
    mixed = rt.asarray(np.ones(16, np.float32))
    rows = [
        ("mul f64[16] untracked", lambda: x * y),
        ("mul f64[16] recorded", lambda: tracked * y),
        ("mul f32+f64 untracked", lambda: mixed * y),
        ("mul f32+f64 recorded (convert)", lambda: mixed * tracked),
    ]
    times: dict[str, list[float]] = {name: [] for name, _ in rows}
    for _ in range(args.rounds):
        for name, fn in rows:
            times[name].append(best(fn, 1000, repeat=5))  # (the best of 5: a preemption inside a block drops out)
    base = times["mul f64[16] untracked"]
    base_mixed = times["mul f32+f64 untracked"]
    ratios = {}
    print(f"{'case':<34}{'time/op':>12}{'ratio':>10}   (medians over {args.rounds} interleaved rounds)")
    for name, ts in times.items():
        ref = base_mixed if "f32+f64" in name else base
        ratios[name] = statistics.median(t / r for t, r in zip(ts, ref, strict=True))
        print(f"{name:<34}{statistics.median(ts) * 1e6:>10.2f}us{ratios[name]:>10.2f}")
    print()
    print(f"{'concatenate operands':<22}{'plan time':>14}{'per operand':>14}")
    for n in (10, 100, 1_000, 10_000, 100_000):
        dtypes = [rt.float32 if i % 2 else rt.float64 for i in range(n)]
        t = best(lambda dtypes=dtypes: plan(ops.concatenate, dtypes), number=max(1, 20000 // n))
        print(f"{n:<22}{t * 1e3:>12.3f}ms{t / n * 1e9:>12.1f}ns")
    ratio = ratios["mul f64[16] recorded"]
    print("targets (a tracked small op against the untracked one, median ratio):")
    for label, limit in (("issue 4: <= 2x", 2.0), ("issue 17: <= 1.5x", 1.5), ("issue 24: <= 1.3x", 1.3)):
        print(f"  {label:<20} {ratio:5.2f}x  {'met' if ratio <= limit else 'NOT met'}")


if __name__ == "__main__":
    main()
