"""Shards of the sweep for CI matrices (``castwise parity --shard K/N``) and their merge (``--merge``).

A shard is a deterministic part of the selected cases (the case list of
``--ops``/``--dtypes``/``--policy``/``--seed``/``--quick``, itself
deterministic): the N shards are disjoint, their union is the selection, and
each holds about 1/N of its *expected cost*, a static estimate per case from
its op family and how many JAX programs its checks compile (``case_cost``).
Every shard's machine builds the same case list and the same partition, so
nothing is exchanged between them but their ``--json`` reports at the end.

``merge_reports`` rebuilds the one report a single run would give from the
shards' JSON reports (their per-case ``cases`` entries): the same summary
table, departures, failures (in the selection's order) and exit status. It
reads JSON only: merging needs neither JAX nor the case list.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Sequence
from typing import Any, Final

from autodiff.parity._common import Case
from autodiff.parity.report import Report, case_from_json
from runtime.core.dtypes import DType
from runtime.core.errors import CastwiseError

# -- the cost model -----------------------------------------------------------------------------------

#: Relative cost of one JAX program of a family, against an elementwise op's (1.0). A case's time
#: is mostly XLA compiling its references (the primal, one JVP per differentiable operand and a
#: VJP, and every vmap row); these families compile larger programs (decompositions, windows,
#: scans, convolutions) or call back into castwise (custom rules). From the per-op CPU seconds of
#: a ``--quick`` report (``cpu_s_by_op``), rounded: an estimate to balance shards, not a timing.
FAMILY_WEIGHT: Final[dict[str, float]] = {
    "linalg": 2.5,
    "conv": 2.0,
    "window": 2.0,
    "scan": 1.5,
    "reduce": 1.2,
    "scatter": 1.5,
    "gather": 1.5,
    "dot_general": 1.5,
    "call": 2.0,
    "structural": 1.2,
}


def case_cost(case: Case) -> float:
    """The expected cost of a case, in elementwise-op JAX programs (``FAMILY_WEIGHT``).

    Counts the programs its checks compile: the primal; the vmap rows (batch
    axes 0 and 1, each array operand batched alone and all together); and for a
    differentiable op, one JVP per inexact operand plus one VJP. The castwise
    side of each active set costs a fraction of a program. Larger operands cost
    a little more (compilation dominates, not the arithmetic).
    """
    spec = case.spec
    slots = case.operand_slots
    arrays = [i for i, s in enumerate(slots) if isinstance(s, DType)]
    vmap_rows = 2 * (len(arrays) + (len(arrays) > 1)) if spec.arity else 0
    inexact = 0
    if spec.differentiable:
        inexact = sum(1 for i in arrays if isinstance(s := slots[i], DType) and s.is_inexact and i not in spec.fixed)
    programs = 1 + vmap_rows + (inexact + 1 if inexact else 0)
    active_sets = 2**inexact - 1
    size = max((math.prod(shape) for shape in spec.shapes), default=1)
    return FAMILY_WEIGHT.get(spec.family, 1.0) * (programs + 0.25 * active_sets) * (1 + size / 256)


# -- the partition -------------------------------------------------------------------------------------


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> ``(K, N)``, with ``1 <= K <= N``; ``ValueError`` (its message says why) otherwise."""
    k_text, sep, n_text = text.strip().partition("/")
    if not sep or not k_text.strip().isdigit() or not n_text.strip().isdigit():
        raise ValueError(f"--shard takes K/N (shard K of N, counted from 1, as 2/4), got {text!r}")
    k, n = int(k_text), int(n_text)
    if n < 1 or not 1 <= k <= n:
        raise ValueError(f"--shard {text}: K must be 1 to N and N at least 1 (shard K of N, as 2/4)")
    return k, n


def partition(cases: Sequence[Case], n: int) -> list[list[int]]:
    """The ``n`` shards of ``cases``: for each, the positions of its cases in ``cases``, ascending.

    Deterministic (it depends on the case list only). The cases of a spec stay
    together in runs (chunks of consecutive cases, so a shard's worker compiles
    a spec's shared programs once) of at most 1/8 of a shard's expected cost;
    the chunks go, largest first, to the shard with the least cost so far (ties:
    the lower shard). A shard's cost is then at most ``mean + largest chunk``:
    within 1/8 of the mean, unless a single case costs more than that.
    """
    if n < 1:
        raise ValueError(f"partition: n must be at least 1, got {n}")
    costs = [case_cost(c) for c in cases]
    limit = sum(costs) / n / 8
    chunks: list[tuple[float, list[int]]] = []
    for i, case in enumerate(cases):
        if chunks and cases[chunks[-1][1][-1]].spec.name == case.spec.name and chunks[-1][0] + costs[i] <= limit:
            cost, members = chunks[-1]
            chunks[-1] = (cost + costs[i], [*members, i])
        else:
            chunks.append((costs[i], [i]))
    # largest first; equal costs in case order (each chunk's first position is unique)
    chunks.sort(key=lambda chunk: (-chunk[0], chunk[1][0]))
    heap = [(0.0, k) for k in range(n)]
    shards: list[list[int]] = [[] for _ in range(n)]
    for cost, members in chunks:
        load, k = heapq.heappop(heap)
        shards[k].extend(members)
        heapq.heappush(heap, (load + cost, k))
    return [sorted(s) for s in shards]


def shard_indices(cases: Sequence[Case], shard: tuple[int, int]) -> list[int]:
    """The positions in ``cases`` of shard ``K/N``'s cases, ascending."""
    k, n = shard
    return partition(cases, n)[k - 1]


# -- the merge ----------------------------------------------------------------------------------------


class MergeError(CastwiseError, ValueError):
    """Reports that cannot be merged into one (a shard missing or twice, different runs, not a report)."""


#: What must be the same in every shard's report for them to be parts of one run.
_SAME_RUN: Final = ("seed", "quick", "strict", "policies")


def load_report(path: str) -> dict[str, Any]:
    """A ``--json`` report, checked to carry what a merge needs (``MergeError`` naming the file)."""
    try:
        with open(path) as fh:
            data = json.load(fh)
    except OSError as err:
        raise MergeError(f"--merge {path}: {err.strerror or err}") from None
    except json.JSONDecodeError as err:
        raise MergeError(f"--merge {path}: not JSON ({err.msg} at line {err.lineno}); "
                         "give the files castwise parity --json wrote") from None  # fmt: skip
    if not isinstance(data, dict) or "counts" not in data or "summary" not in data:
        raise MergeError(f"--merge {path}: not a castwise parity --json report")
    if "cases" not in data or "shard" not in data:
        raise MergeError(f"--merge {path}: the report has no per-case results (written by an older castwise); "
                         "rerun the shard with this one")  # fmt: skip
    return data


def merge_reports(reports: Sequence[tuple[str, dict[str, Any]]], strict: bool = False) -> Report:
    """The report of the whole selection from its shards' ``--json`` reports ``(path, data)``.

    Every shard ``1/N .. N/N`` of one run (same seed, sample, policies, ops,
    dtypes and selection size) must be there exactly once, and their cases
    must cover the selection once each; ``MergeError`` says what is missing or
    repeated otherwise. ``strict`` (or a shard run with ``--strict``) counts
    known failures as failures, as in a single run. The elapsed time is the
    longest shard's: the wall time of a matrix whose shards run at once.
    """
    if not reports:
        raise MergeError("--merge needs the --json reports of the shards")
    first_path, first = reports[0]
    n = first["shard"]["n"]
    seen: dict[int, str] = {}
    for path, data in reports:
        shard = data["shard"]
        for key in _SAME_RUN:
            if data.get(key) != first.get(key):
                raise MergeError(f"--merge: {path} and {first_path} are not shards of one run "
                                 f"({key}: {data.get(key)!r} and {first.get(key)!r})")  # fmt: skip
        for key in ("n", "selected", "ops", "dtypes"):
            if shard.get(key) != first["shard"].get(key):
                raise MergeError(f"--merge: {path} and {first_path} are not shards of one run "
                                 f"(shard {key}: {shard.get(key)!r} and {first['shard'].get(key)!r})")  # fmt: skip
        k = shard["k"]
        if k in seen:
            raise MergeError(f"--merge: shard {k}/{n} given twice ({seen[k]} and {path})")
        seen[k] = path
    missing = [k for k in range(1, n + 1) if k not in seen]
    if missing:
        raise MergeError(f"--merge: shard {', '.join(f'{k}/{n}' for k in missing)} missing "
                         f"(given: {', '.join(f'{k}/{n}' for k in sorted(seen))})")  # fmt: skip
    by_index: dict[int, Any] = {}
    for path, data in reports:
        for entry in data["cases"]:
            i = entry["i"]
            if i in by_index:
                raise MergeError(f"--merge: case {entry['id']} (number {i}) is in two shards ({path})")
            by_index[i] = case_from_json(entry)
    selected = first["shard"]["selected"]
    absent = [i for i in range(selected) if i not in by_index]
    if absent or len(by_index) != selected:
        raise MergeError(f"--merge: the shards hold {len(by_index)} of the {selected} selected cases "
                         f"(first missing: number {absent[0] if absent else '?'})")  # fmt: skip
    # the merged report is the whole selection (1/1), and can itself be merged (as one shard)
    whole = {"k": 1, "n": 1, "selected": selected, "ops": first["shard"].get("ops"),
             "dtypes": first["shard"].get("dtypes"), "merged": n}  # fmt: skip
    elapsed = max(float(data.get("elapsed_s", 0.0)) for _, data in reports)
    results = [by_index[i] for i in range(selected)]
    return Report(results, first["seed"], first["quick"], tuple(first["policies"]), elapsed,
                  strict or bool(first["strict"]), shard=whole)  # fmt: skip


#: ``castwise parity`` options that choose or run cases: a merge takes its cases from the reports.
_RUN_OPTIONS: Final = (("shard", "--shard", None), ("policies", "--policy", None), ("ops", "--ops", "*"),
                       ("dtypes", "--dtypes", None), ("seed", "--seed", None), ("quick", "--quick", False),
                       ("jobs", "--jobs", None), ("compile_cache", "--compile-cache", None),
                       ("no_compile_cache", "--no-compile-cache", False))  # fmt: skip


def merge_conflicts(args: Any) -> list[str]:
    """The run options given with ``--merge`` (its cases come from the reports: they would mean nothing)."""
    return [flag for attr, flag, default in _RUN_OPTIONS if getattr(args, attr, default) != default]
