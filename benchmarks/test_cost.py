"""Where the test suite's CPU time and memory go.

Run the suite with ``CASTWISE_TEST_PROFILE=DIR`` (tests/conftest.py writes one line per test
and worker: id, CPU seconds, RSS in MB after it), then::

    python benchmarks/test_cost.py DIR [--top 40]

It prints the total CPU seconds of the test calls (the README command's figure also counts
start-up and collection), each worker's peak RSS, and the files and test functions that cost
the most. CPU seconds, not wall time: machines here are shared and differ in speed.
"""

from __future__ import annotations

import argparse
import collections
import pathlib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=pathlib.Path)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    by_file: collections.defaultdict[str, float] = collections.defaultdict(float)
    by_function: collections.defaultdict[str, float] = collections.defaultdict(float)
    counts: collections.Counter[str] = collections.Counter()
    compiles: collections.Counter[str] = collections.Counter()
    compile_s: collections.defaultdict[str, float] = collections.defaultdict(float)
    peaks: dict[str, float] = {}
    growth: collections.defaultdict[str, float] = collections.defaultdict(float)
    total = 0.0
    for path in sorted(args.directory.glob("*.tsv")):
        previous_rss = 0.0
        for line in path.read_text().splitlines():
            nodeid, cpu_text, rss_text, *jit = line.split("\t")
            cpu, rss = float(cpu_text), float(rss_text)
            function = nodeid.partition("[")[0]
            if jit:  # XLA executables obtained, and their seconds (older profiles lack them)
                for key in (function, function.partition("::")[0], ""):
                    compiles[key] += int(jit[0])
                    compile_s[key] += float(jit[1])
            by_file[function.partition("::")[0]] += cpu
            by_function[function] += cpu
            counts[function] += 1
            if previous_rss:
                growth[function.partition("::")[0]] += max(0.0, rss - previous_rss)
            previous_rss = rss
            peaks[path.stem] = max(peaks.get(path.stem, 0.0), rss)
            total += cpu
    print(f"test calls: {total:.0f} CPU s ({total / 60:.1f} CPU min) over {sum(counts.values())} tests")
    print(f"XLA executables obtained: {compiles['']}, in {compile_s['']:.0f} s")
    for worker, peak in sorted(peaks.items()):
        print(f"  {worker}: peak RSS {peak:.0f} MB")
    print(f"\nfiles by CPU s (top {args.top}): CPU s, RSS growth while the file ran, XLA executables, their s")
    for name, cpu in _largest(by_file, args.top):
        print(f"  {cpu:8.1f}  {growth[name]:7.0f} MB  {compiles[name]:6d}  {compile_s[name]:6.1f}  {name}")
    print(f"\ntest functions by CPU s (top {args.top}): CPU s, rows, CPU s per row, XLA executables, their s")
    for name, cpu in _largest(by_function, args.top):
        row = f"{cpu:8.1f}  {counts[name]:5d}  {cpu / counts[name]:6.2f}  {compiles[name]:6d}  {compile_s[name]:6.1f}"
        print(f"  {row}  {name}")


def _largest(values: dict[str, float], top: int) -> list[tuple[str, float]]:
    return sorted(values.items(), key=lambda item: -item[1])[:top]


if __name__ == "__main__":
    main()
