"""parity references: ``packing.evaluate`` against ``packing.evaluate_eager`` on the quick sweep's requests.

The requests are every JAX reference ``castwise parity --quick`` asks for
(``autodiff.parity.packing.quick_requests``: primal, JVPs, VJP and vmap
rows of its cases). Each round evaluates them both ways, in alternating order,
each starting from empty caches (``jax.clear_caches()``; no persistent
compilation cache is configured), and counts the XLA executables each obtains
with JAX's monitoring event ``/jax/core/compile/backend_compile_duration``
(it fires for compiled and for persistent-cache-loaded executables alike).

Printed: executables and seconds per evaluator (medians over the rounds), their
ratios (eager / packed: above 1, packing wins), whether the issue's target of at
most 40 executables for the quick sweep is met, and with ``--compare`` whether
the outcomes agree bit for bit, per family (the evidence behind
``packing.PACKING``). ``--all-families`` packs every family (to measure one
that ``PACKING`` keeps eager), ``--chunk-cost`` sets the chunk size.

    python benchmarks/parity.py [--rounds N] [--sample K] [--compare] [--all-families] [--chunk-cost C]

``--sample K`` keeps every K-th request (a cheaper run; the executable target is
for the whole sweep, K = 1). The eager side takes minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import time
from collections.abc import Callable, Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # XLA's C++ logs duplicate the refusals JAX raises

import jax

from autodiff.parity import packing

quick_requests = packing.quick_requests

TARGET_EXECUTABLES = 40
_COMPILES: list[float] = []


def _listen(event: str, duration_secs: float, **_: str | int) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        _COMPILES.append(duration_secs)


def timed(
    fn: Callable[[Sequence[packing.Request]], list[packing.Outcome]], requests: Sequence[packing.Request]
) -> tuple[float, int, list[packing.Outcome]]:
    """Seconds and executables of one evaluation from empty caches."""
    jax.clear_caches()
    n = len(_COMPILES)
    start = time.perf_counter()
    out = fn(requests)
    return time.perf_counter() - start, len(_COMPILES) - n, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--sample", type=int, default=1, metavar="K", help="every K-th request")
    ap.add_argument("--compare", action="store_true", help="bit-for-bit agreement per family")
    ap.add_argument("--all-families", action="store_true", help="pack every family, PACKING aside")
    ap.add_argument("--chunk-cost", type=int, default=packing.CHUNK_COST)
    args = ap.parse_args()
    jax.monitoring.register_event_duration_secs_listener(_listen)
    requests = quick_requests()[:: args.sample]
    table = {r.group: packing.Packing(True, True, "measured") for r in requests} if args.all_families else None
    stats = packing.Stats()

    def packed(rs: Sequence[packing.Request]) -> list[packing.Outcome]:
        return packing.evaluate(rs, chunk_cost=args.chunk_cost, packing=table, stats=stats)

    sides: dict[str, Callable[[Sequence[packing.Request]], list[packing.Outcome]]] = {
        "eager": packing.evaluate_eager,
        "packed": packed,
    }
    seconds: dict[str, list[float]] = collections.defaultdict(list)
    executables: dict[str, list[int]] = collections.defaultdict(list)
    outcomes: dict[str, list[packing.Outcome]] = {}
    for k in range(args.rounds):
        for name in list(sides) if k % 2 == 0 else list(sides)[::-1]:  # interleaved: load drifts hit both
            s, n, outcomes[name] = timed(sides[name], requests)
            seconds[name].append(s)
            executables[name].append(n)
    print(f"{len(requests)} requests (every {args.sample}th of --quick's), {args.rounds} round(s), empty caches")
    for name in sides:
        count, secs = statistics.median(executables[name]), statistics.median(seconds[name])
        print(f"  {name:7s} {count:7.0f} executables {secs:8.1f} s")
    e_s, p_s = statistics.median(seconds["eager"]), statistics.median(seconds["packed"])
    e_n, p_n = statistics.median(executables["eager"]), statistics.median(executables["packed"])
    print(f"  ratio eager/packed: {e_n / max(p_n, 1):.1f}x executables, {e_s / p_s:.2f}x time")
    print(f"  packed: {stats.chunks // args.rounds} chunks ({stats.failed_chunks // args.rounds} failed), "
          f"{stats.eager // args.rounds} requests eager, {stats.refused // args.rounds} refused when traced, "
          f"{stats.stacked // args.rounds} in {stats.groups // args.rounds} vmap stacks")  # fmt: skip
    verdict = "met" if p_n <= TARGET_EXECUTABLES else "NOT met"
    scope = "" if args.sample == 1 else f" (for this 1/{args.sample} sample)"
    print(f"  target: at most {TARGET_EXECUTABLES} executables for --quick{scope}: {verdict} ({p_n:.0f})")
    if args.compare:
        by_family: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
        for r, a, b in zip(requests, outcomes["eager"], outcomes["packed"], strict=True):
            by_family[r.group][packing.same(a, b)] += 1
            if not packing.same(a, b):
                print(f"  differs: {r.key}")
        for fam, (bad, good) in sorted(by_family.items()):
            print(f"  {fam:22s} {good:5d} bit for bit, {bad:4d} differ")


if __name__ == "__main__":
    main()
