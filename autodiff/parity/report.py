"""The sweep's report: the summary table, failures, departures, JSON and Markdown."""

from __future__ import annotations

import json
import math
import shutil
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any, Final

from autodiff.parity._common import CHECKS, CheckResult
from autodiff.parity.departures import DEPARTURES, KNOWN_FAILURES
from autodiff.parity.runner import CaseResult


@dataclass
class Cell:
    """One family x check cell of the summary table."""

    passed: int = 0
    failed: int = 0
    known: int = 0
    worst: float = 0.0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.known

    def text(self, show_worst: bool) -> str:
        if not self.total:
            return "-"
        out = f"{self.passed}/{self.total}"
        if self.known:
            out += f" ({self.known}k)"
        return out + (f" w={_short(self.worst)}" if show_worst else "")


@dataclass
class Report:
    """The outcome of a sweep; ``ok`` when nothing failed (known failures count with ``strict``)."""

    results: list[CaseResult]
    seed: int
    quick: bool
    policies: tuple[str, ...]
    elapsed_s: float = 0.0
    strict: bool = False
    #: which part of the selection this is (``--shard K/N``): ``k``, ``n``, ``selected`` (the
    #: selection's case count), ``ops`` and ``dtypes``; the JSON report carries it for ``--merge``
    shard: dict[str, Any] | None = None
    #: each result's position in the selection (``None``: the results are the whole selection)
    indices: Sequence[int] | None = None

    @property
    def failed(self) -> list[CaseResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def known(self) -> list[CaseResult]:
        return [r for r in self.results if r.known_failures]

    @property
    def unsupported(self) -> list[CaseResult]:
        return [r for r in self.results if r.status == "unsupported"]

    @property
    def departures(self) -> list[CaseResult]:
        """Cases whose acceptance disagreement a documented departure explains."""
        return [r for r in self.results if r.status == "departure"]

    @property
    def departed_checks(self) -> list[tuple[CaseResult, CheckResult]]:
        """Checks of accepted cases whose difference from JAX a documented departure explains."""
        return [(r, c) for r in self.results for c in r.checks if c.departure]

    def departure_counts(self) -> dict[str, tuple[int, int]]:
        """Departure name -> (cases it explains an acceptance disagreement of, checks it passes)."""
        counts = {d.name: (0, 0) for d in DEPARTURES}
        for r in self.departures:
            cases, checks = counts[r.departure]
            counts[r.departure] = (cases + 1, checks)
        for _, c in self.departed_checks:
            cases, checks = counts[c.departure]
            counts[c.departure] = (cases, checks + 1)
        return counts

    @property
    def unchecked_families(self) -> dict[str, int]:
        """Families of the run none of whose cases got a check beyond ``agree`` -> their case count.

        Every case of such a family was refused by both sides (or departed): the
        run compared no value of it, and says so instead of reporting OK.
        """
        counts: dict[str, int] = {}
        checked: set[str] = set()
        for r in self.results:
            counts[r.family] = counts.get(r.family, 0) + 1
            if any(c.check != "agree" for c in r.checks):
                checked.add(r.family)
        return {fam: n for fam, n in counts.items() if fam not in checked}

    @property
    def ok(self) -> bool:
        return not self.failed and not (self.strict and self.known) and not self.unchecked_families

    def table(self) -> dict[str, dict[str, Cell]]:
        """family -> check -> pass/fail/known counts and the worst error relative to its tolerance."""
        cells: dict[str, dict[str, Cell]] = {}
        for r in self.results:
            row = cells.setdefault(r.family, {c: Cell() for c in CHECKS})
            for c in r.checks:
                cell = row[c.check]
                if c.ok:
                    cell.passed += 1
                elif c.known:
                    cell.known += 1
                else:
                    cell.failed += 1
                if c.check != "agree" and not c.known and not c.departure:  # both listed on their own
                    cell.worst = max(cell.worst, c.ratio)
        return cells

    def to_json(self) -> dict[str, Any]:
        """The whole report as JSON-ready data (``--json``)."""

        def failure(r: CaseResult, c: CheckResult) -> dict[str, Any]:
            return {"case": r.case_id, "op": r.spec, "family": r.family, "policy": r.policy, "dtypes": list(r.slots),
                    "operands": r.description, "check": c.check,
                    "active": None if c.active is None else list(c.active), "message": c.message,
                    "expected": c.expected, "got": c.got, "ratio": _json_float(c.ratio), "known": c.known,
                    "departure": c.departure,
                    **({"reference": r.reference} if r.reference and not c.ok else {})}  # fmt: skip

        table = self.table()
        return {
            "version": 1,
            "ok": self.ok,
            "seed": self.seed,
            "quick": self.quick,
            "strict": self.strict,
            "policies": list(self.policies),
            "elapsed_s": round(self.elapsed_s, 2),
            "counts": {
                "cases": len(self.results),
                "checks": sum(len(r.checks) for r in self.results),
                "failed_cases": len(self.failed),
                "failed_checks": sum(len(r.failures) for r in self.results),
                "known_failed_checks": sum(len(r.known_failures) for r in self.results),
                "unsupported": len(self.unsupported),
                "departures": len(self.departures),
            },
            "summary": [
                {
                    "family": fam,
                    "check": chk,
                    "passed": cell.passed,
                    "failed": cell.failed,
                    "known": cell.known,
                    "worst": _json_float(cell.worst),
                }
                for fam, row in sorted(table.items())
                for chk, cell in row.items()
            ],
            "failures": [failure(r, c) for r in self.results for c in r.failures],
            "known_failures": [failure(r, c) for r in self.results for c in r.known_failures],
            "unsupported": [
                {
                    "case": r.case_id,
                    "op": r.spec,
                    "policy": r.policy,
                    "dtypes": list(r.slots),
                    "castwise": r.castwise_error,
                    "jax": r.jax_error,
                }
                for r in self.unsupported
            ],
            "departures": [
                {
                    "case": r.case_id,
                    "op": r.spec,
                    "policy": r.policy,
                    "dtypes": list(r.slots),
                    "departure": r.departure,
                    "castwise": r.castwise_error,
                    "jax": r.jax_error,
                }
                for r in self.departures
            ],
            "departed_checks": [failure(r, c) for r, c in self.departed_checks],
            "cpu_s_by_op": _cpu_by_spec(self.results),
            "shard": self.shard or {"k": 1, "n": 1, "selected": len(self.results)},
            "cases": [case_to_json(r, i) for r, i in zip(self.results, self.positions(), strict=True)],
        }

    def positions(self) -> Sequence[int]:
        """Each result's position in the selection (0, 1, ... for a whole run)."""
        return self.indices if self.indices is not None else range(len(self.results))

    def render(self, max_failures: int = 10, width: int | None = None) -> str:
        """The text report: summary table, unsupported and departures, known failures, first failures in full.

        With a ``width`` (``castwise parity`` passes the terminal's, ``terminal_width()``), every
        line fits it (40 columns at least): the summary table's checks are split into blocks that
        fit, each repeating the family column, and the other lines wrap with a hanging indent.
        Nothing is left out (a word longer than the width, such as a long array in a failure, is
        broken). Without one (``None`` or 0), nothing is wrapped.
        """
        width = max(width, _MIN_WIDTH) if width else 0
        lines = _summary_table(self.table(), width)
        lines += [
            "",
            "cells: passed/total checks (k: known failures); "
            "w: worst error / tolerance, known failures aside (0: exact)",
        ]
        lines.append(f"cases: {len(self.results)}, failed: {len(self.failed)}, with known failures: "
                     f"{len(self.known)}, unsupported (castwise and JAX both refuse): {len(self.unsupported)}, "
                     f"documented departures: {len(self.departures)} cases and {len(self.departed_checks)} checks, "
                     f"time: {self.elapsed_s:.1f}s")  # fmt: skip
        if self.unsupported:
            lines += ["", "unsupported (castwise and JAX both refuse), by op and policy:"]
            lines.extend("  " + line for line in group_unsupported(self.unsupported))
        counts = {name: n for name, n in self.departure_counts().items() if any(n)}
        if counts:
            lines += ["", "documented departures (castwise and JAX differ by design: cases accepted by only one, "
                      "checks passed as explained):"]  # fmt: skip
            for dep in DEPARTURES:
                if dep.name in counts:
                    cases, checks = counts[dep.name]
                    what = ", ".join(_count(n, w) for n, w in ((cases, "case"), (checks, "check")) if n)
                    lines.append(f"  {dep.name} ({what}): {dep.reason} [{dep.where}]")
        known: dict[str, int] = {}
        for r in self.results:
            for c in r.known_failures:
                known[c.known] = known.get(c.known, 0) + 1
        if known:
            lines += ["", "known failures (castwise bugs found by this sweep, not fixed yet):"]
            for k in KNOWN_FAILURES:
                if k.name in known:
                    lines.append(f"  {k.name} ({known[k.name]} checks): {k.description}")
        failed = [(r, c) for r in self.results for c in r.failures]
        if self.strict:
            failed += [(r, c) for r in self.results for c in r.known_failures]
        lines.append("")
        for fam, n in sorted(self.unchecked_families.items()):
            lines.append(f"NOT CHECKED: family {fam}: none of its {_count(n, 'case')} was accepted by both "
                         "castwise and JAX, so no value was compared (widen --dtypes or --policy)")  # fmt: skip
        if failed:
            shown = min(max_failures, len(failed))
            lines.append(f"FAILED: {len(failed)} checks in {len({id(r) for r, _ in failed})} cases; the first {shown}:")
            for r, c in failed[:shown]:
                active = "" if c.active is None else f" active={list(c.active)}"
                lines.append(f"- {c.check}: {r.description}{active}{' [known: ' + c.known + ']' if c.known else ''}")
                lines.append(f"    {c.message}")
                if c.expected or c.got:
                    lines.append(f"    expected: {c.expected}")
                    lines.append(f"    got:      {c.got}")
                if r.reference:  # a wrong record fails the case: say which one to look at
                    lines.append(f"    reference: {r.reference}")
        elif not self.unchecked_families:
            lines.append("OK: castwise agrees with JAX on every supported case" +
                         (" (known failures aside)" if known else ""))  # fmt: skip
        return "\n".join(out for line in lines for part in line.split("\n") for out in _wrap(part, width))


#: The narrowest width ``Report.render`` wraps to (a family and one check column fit it).
_MIN_WIDTH: Final = 40


def terminal_width() -> int:
    """The columns of the terminal standard output shows (``shutil.get_terminal_size``: ``$COLUMNS``
    first, then the terminal's size; 80 when standard output is no terminal)."""
    return shutil.get_terminal_size().columns


def _summary_table(table: dict[str, dict[str, Cell]], width: int) -> list[str]:
    """The family x check table, each column as wide as its widest cell, its checks split into
    blocks (a blank line between them, each with the family column) of at most ``width`` columns."""
    families = sorted(table)
    label = max([len("family"), *(len(f) for f in families)])
    cells = {c: [table[f][c].text(c != "agree") for f in families] for c in CHECKS}
    widths = {c: max([len(c), *(len(t) for t in cells[c])]) for c in CHECKS}
    gap = 3

    def fits(block: Sequence[str]) -> bool:
        return not width or label + sum(gap + widths[c] for c in block) <= width

    blocks: list[list[str]] = [[]]
    for c in CHECKS:  # as few blocks as fit ...
        if blocks[-1] and not fits([*blocks[-1], c]):
            blocks.append([])
        blocks[-1].append(c)
    size = -(-len(CHECKS) // len(blocks))  # ... and as even as fit (3 + 3 checks, not 5 + 1)
    even = [list(CHECKS[i : i + size]) for i in range(0, len(CHECKS), size)]
    if len(even) == len(blocks) and all(fits(b) for b in even):
        blocks = even
    lines: list[str] = []
    for block in blocks:
        if lines:
            lines.append("")
        head = "family".ljust(label) + "".join(" " * gap + c.rjust(widths[c]) for c in block)
        lines += [head, "-" * len(head)]
        for k, fam in enumerate(families):
            lines.append(fam.ljust(label) + "".join(" " * gap + cells[c][k].rjust(widths[c]) for c in block))
    return lines


def _wrap(line: str, width: int) -> list[str]:
    """``line`` in lines of at most ``width`` columns (0: as it is), continued under its text:
    indented past its leading spaces and list marker (``- ``), by two more columns."""
    if not width or len(line) <= width:
        return [line]
    body = line.lstrip(" ")
    lead = len(line) - len(body) + (2 if body.startswith("- ") else 0)
    indent = " " * min(lead + 2, width // 2)
    return textwrap.wrap(line, width, subsequent_indent=indent, break_on_hyphens=False) or [line]


def markdown(report: Report) -> str:
    """The report as Markdown (``--markdown``): the summary table, the unsupported combinations
    grouped by op and policy, and the departure and known-failure counts. docs/parity.md pastes it."""
    lines = [f"Seed {report.seed}, policies {', '.join(report.policies)}{' (--quick)' if report.quick else ''}: "
             f"{len(report.results)} cases, {sum(len(r.checks) for r in report.results)} checks, "
             f"{len(report.failed)} failed cases, {len(report.unsupported)} unsupported, "
             f"{len(report.departures)} departures.", ""]  # fmt: skip
    table = report.table()
    lines += ["| family | " + " | ".join(CHECKS) + " |", "|---" * (len(CHECKS) + 1) + "|"]
    for fam in sorted(table):
        lines.append(f"| {fam} | " + " | ".join(table[fam][c].text(c != "agree") for c in CHECKS) + " |")
    same: dict[str, dict[str, set[str]]] = {}
    mixed: dict[tuple[str, str], list[CaseResult]] = {}
    for r in report.unsupported:
        tensor_slots = set(r.slots)
        if len(tensor_slots) == 1 and not any(x.startswith("py-") for x in r.slots):
            same.setdefault(r.spec, {}).setdefault(r.slots[0], set()).add(r.policy)
        else:
            mixed.setdefault((r.policy, r.spec), []).append(r)
    lines += ["", "### Unsupported: an op in one dtype", "",
              "castwise and JAX both refuse (a policy in brackets: only under it).", "",
              "| op | dtypes |", "|---|---|"]  # fmt: skip
    for spec, by_dtype in same.items():
        cells = []
        for d, pols in by_dtype.items():
            only = "" if pols == set(report.policies) else f" [{', '.join(sorted(pols))}]"
            cells.append(f"{d}{only}")
        lines.append(f"| {spec} | {', '.join(cells)} |")
    lines += ["", "### Unsupported: mixed dtypes and Python scalars", "",
              "No promotion path under the policy (castwise's plan refuses; under a policy other than jax "
              "there is then no JAX reference either), or the op refuses the promoted dtype. Counts, then "
              "the first few slot tuples.", "", "<details><summary>by policy and op</summary>", "",
              "| policy | op | no promotion path | promoted dtype refused |", "|---|---|---|---|"]  # fmt: skip
    for (policy, spec), rs in sorted(mixed.items()):
        no_path = [r for r in rs if r.castwise_error.startswith("PromotionError")]
        refused = [r for r in rs if not r.castwise_error.startswith("PromotionError")]

        def cell(items: list[CaseResult]) -> str:
            if not items:
                return ""
            shown = " ".join("(" + ",".join(r.slots) + ")" for r in items[:4])
            return f"{len(items)}: {shown}{' ...' if len(items) > 4 else ''}"

        lines.append(f"| {policy} | {spec} | {cell(no_path)} | {cell(refused)} |")
    lines += ["", "</details>"]
    counts = report.departure_counts()
    known: dict[str, int] = {}
    for r in report.results:
        for c in r.known_failures:
            known[c.known] = known.get(c.known, 0) + 1
    deps = ", ".join(f"{name} {cases}" + (f" + {_count(checks, 'check')}" if checks else "")
                     for name, (cases, checks) in counts.items())  # fmt: skip
    knowns = ", ".join(f"{k.name} {known.get(k.name, 0)}" for k in KNOWN_FAILURES) or "none"
    lines += ["", f"Documented departures (cases): {deps}. Known failures (checks): {knowns}."]
    return "\n".join(lines) + "\n"


def case_to_json(r: CaseResult, index: int) -> dict[str, Any]:
    """A case's entry in the JSON report's ``cases``: all ``--merge`` needs to rebuild its result.

    ``i`` is its position in the selection; each check is ``[check, ok, ratio, active]``, followed by
    ``[message, expected, got, known, departure]`` where any of them is set. Empty strings are left out.
    """
    checks: list[list[Any]] = []
    for c in r.checks:
        row: list[Any] = [c.check, c.ok, _json_float(c.ratio), None if c.active is None else list(c.active)]
        extra = [c.message, c.expected, c.got, c.known, c.departure]
        checks.append(row + extra if any(extra) else row)
    entry: dict[str, Any] = {"i": index, "id": r.case_id, "spec": r.spec, "family": r.family, "policy": r.policy,
                             "slots": list(r.slots), "description": r.description, "status": r.status,
                             "castwise": r.castwise_error, "jax": r.jax_error, "departure": r.departure,
                             "cpu_s": round(r.cpu_s, 4), "checks": checks,
                             "reference": r.reference if r.status == "failed" else ""}  # fmt: skip
    return {k: v for k, v in entry.items() if v != ""}


def case_from_json(entry: dict[str, Any]) -> CaseResult:
    """The ``CaseResult`` a ``case_to_json`` entry was made from (its ratios rounded as in the report)."""
    checks = []
    for row in entry["checks"]:
        check, ok, ratio, active, *extra = row
        message, expected, got, known, departure = extra or ["", "", "", "", ""]
        checks.append(CheckResult(check, ok, math.inf if ratio == "inf" else float(ratio),
                                  None if active is None else tuple(active), message, expected, got, known,
                                  departure))  # fmt: skip
    return CaseResult(entry["id"], entry["spec"], entry["family"], entry["policy"], tuple(entry["slots"]),
                      entry["description"], entry["status"], checks, entry.get("castwise", ""),
                      entry.get("jax", ""), entry.get("departure", ""), float(entry.get("cpu_s", 0.0)),
                      entry.get("reference", ""))  # fmt: skip


def write_json(data: dict[str, Any], fh: IO[str]) -> None:
    """Write a JSON report: indented, except for ``cases``, written one case per line (the full sweep's
    32,000 cases stay 32,000 lines)."""
    head = {k: v for k, v in data.items() if k != "cases"}
    text = json.dumps(head, indent=1)
    if "cases" not in data:
        fh.write(text + "\n")
        return
    fh.write(text[: text.rindex("}")].rstrip() + (',\n "cases": [' if head else '{\n "cases": ['))
    for k, entry in enumerate(data["cases"]):
        fh.write(("," if k else "") + "\n  " + json.dumps(entry, separators=(",", ":")))
    fh.write("\n ]\n}\n")


def _cpu_by_spec(results: Sequence[CaseResult]) -> dict[str, float]:
    """CPU seconds per sweep spec, slowest first (where a sweep spends its time)."""
    out: dict[str, float] = {}
    for r in results:
        out[r.spec] = out.get(r.spec, 0.0) + r.cpu_s
    return {k: round(v, 2) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _short(x: float) -> str:
    return "inf" if math.isinf(x) else ("0" if x == 0 else f"{x:.2g}")


def _json_float(x: float) -> float | str:
    return "inf" if math.isinf(x) else round(x, 6)


def group_unsupported(results: Sequence[CaseResult]) -> list[str]:
    """One line per (op, policy) listing the refused slot tuples, compactly."""
    groups: dict[tuple[str, str], list[str]] = {}
    for r in results:
        groups.setdefault((r.spec, r.policy), []).append("(" + ",".join(r.slots) + ")")
    lines = []
    for (spec, policy), items in groups.items():
        shown = " ".join(items[:8]) + (f" ... ({len(items)} in all)" if len(items) > 8 else "")
        lines.append(f"{spec} @{policy}: {shown}")
    return lines


#: The markers of the generated block in docs/parity.md, between which ``--markdown`` writes.
GENERATED_BEGIN: Final = "<!-- BEGIN GENERATED: castwise parity --markdown"
GENERATED_END: Final = "<!-- END GENERATED -->"


def splice_markdown(existing: str, block: str) -> str | None:
    """``existing`` with the lines between its generated-block markers replaced by ``block``
    (``castwise parity --markdown docs/parity.md`` regenerates the page in place); ``None`` when
    ``existing`` has no such block."""
    lines = existing.splitlines(keepends=True)
    begin = next((k for k, line in enumerate(lines) if line.startswith(GENERATED_BEGIN)), None)
    if begin is None:
        return None
    end = next((k for k in range(begin + 1, len(lines)) if lines[k].startswith(GENERATED_END)), None)
    if end is None:
        return None
    return "".join(lines[: begin + 1]) + "\n" + block.rstrip("\n") + "\n\n" + "".join(lines[end:])
