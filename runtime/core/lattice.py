"""Rendering and law-checking of a policy's pairwise promotion table.

Used by ``castwise lattice`` and by docs/promotion.md (whose tables are
generated from here and checked for staleness by the tests).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass

from runtime.core.dtypes import DType
from runtime.core.promotion import LatticePolicy, Policy, get_policy_object, table

ERROR_CELL = "-"


def _cells(policy: Policy) -> tuple[tuple[DType, ...], dict[tuple[DType, DType], DType | None]]:
    dtypes = policy.dtypes
    return dtypes, table(policy, dtypes)


#: The text table wraps to this many columns by default (a terminal of 100 columns shows it whole).
TEXT_WIDTH = 100


def render(policy_name: str, fmt: str = "text", width: int | None = TEXT_WIDTH) -> str:
    """The policy's full table: rows x columns of short names, ``-`` for errors.

    ``fmt`` is ``text`` (aligned columns), ``markdown`` (a pipe table) or
    ``json`` (``{"policy", "dtypes", "table": {row: {col: short|null}}}``).
    The text table's lines are at most ``width`` characters (``None``: one
    block, however wide): its columns are split into blocks, each headed by the
    policy's name and the column dtypes and listing every row, which makes a
    28-dtype table readable in a 100-column terminal. Markdown and JSON are
    never wrapped.
    """
    policy = get_policy_object(policy_name)
    dtypes, cells = _cells(policy)
    shorts = [d.short for d in dtypes]
    if fmt == "json":
        body = {
            a.short: {b.short: (r.short if (r := cells[a, b]) is not None else None) for b in dtypes} for a in dtypes
        }
        return json.dumps({"policy": policy.name, "dtypes": shorts, "table": body}, indent=1)
    rows = [[a.short] + [r.short if (r := cells[a, b]) is not None else ERROR_CELL for b in dtypes] for a in dtypes]
    header = [policy.name, *shorts]
    if fmt == "markdown":
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    if fmt != "text":
        raise ValueError(f"unknown format {fmt!r}; use text, markdown or json")
    return _text_blocks([header, *rows], width)


def _text_blocks(table_rows: list[list[str]], width: int | None) -> str:
    """Right-aligned columns (each as wide as its longest cell), split into blocks of at most ``width``."""
    label = max(len(row[0]) for row in table_rows)
    widths = [max(len(row[c]) for row in table_rows) for c in range(1, len(table_rows[0]))]
    blocks: list[list[int]] = [[]]
    used = label
    for c, w in enumerate(widths, start=1):
        if width is not None and blocks[-1] and used + 1 + w > width:
            blocks.append([])
            used = label
        blocks[-1].append(c)
        used += 1 + w
    out = []
    for block in blocks:
        lines = [" ".join([row[0].ljust(label), *(row[c].rjust(widths[c - 1]) for c in block)]) for row in table_rows]
        out.append("\n".join(line.rstrip() for line in lines))
    return "\n\n".join(out)


@dataclass(frozen=True)
class LawResult:
    """Whether a law holds on a policy's dtypes, with a counterexample if not."""

    law: str
    holds: bool
    counterexample: str = ""


def check_laws(policy_name: str) -> list[LawResult]:
    """Check commutativity, associativity and idempotence of ``promote_types``.

    An error counts as a value: ``a+b`` and ``b+a`` must both fail or agree.
    Associativity compares ``(a+b)+c`` with ``a+(b+c)`` where it is defined
    either way.
    """
    policy = get_policy_object(policy_name)
    dtypes, cells = _cells(policy)

    def name(d: DType | None) -> str:
        return d.short if d is not None else "error"

    results = []
    bad = next(((a, b) for a, b in itertools.product(dtypes, repeat=2) if cells[a, b] is not cells[b, a]), None)
    results.append(
        LawResult(
            "commutative",
            bad is None,
            ""
            if bad is None
            else f"{bad[0].short}+{bad[1].short} = {name(cells[bad])}, "
            f"{bad[1].short}+{bad[0].short} = {name(cells[bad[1], bad[0]])}",
        )
    )
    bad_idem = next((a for a in dtypes if cells[a, a] is not a), None)
    results.append(
        LawResult(
            "idempotent",
            bad_idem is None,
            "" if bad_idem is None else f"{bad_idem.short}+{bad_idem.short} = {name(cells[bad_idem, bad_idem])}",
        )
    )

    def join(x: DType | None, y: DType | None) -> DType | None:
        return None if x is None or y is None else cells.get((x, y))

    counter = ""
    for a, b, c in itertools.product(dtypes, repeat=3):
        left, right = join(cells[a, b], c), join(a, cells[b, c])
        if left is not right:
            counter = f"({a.short}+{b.short})+{c.short} = {name(left)}, {a.short}+({b.short}+{c.short}) = {name(right)}"
            break
    results.append(LawResult("associative", not counter, counter))
    if isinstance(policy, LatticePolicy):
        results.append(_lattice_associativity(policy))
    return results


def _lattice_associativity(policy: LatticePolicy) -> LawResult:
    """Associativity of the join on the lattice itself, weak scalar nodes included.

    ``promote_types`` maps a weak result (``u64 + i64`` is the weak float) to a
    concrete dtype, which can break associativity of the table even though the
    lattice's least upper bound is associative.
    """
    nodes = list(policy.edges)

    def join(x: DType | str | None, y: DType | str | None) -> DType | str | None:
        return None if x is None or y is None else policy._lub(x, y)

    def label(x: DType | str | None) -> str:
        return "error" if x is None else (x.short if isinstance(x, DType) else f"weak-{x}")

    for a, b, c in itertools.product(nodes, repeat=3):
        left, right = join(join(a, b), c), join(a, join(b, c))
        if left != right:
            return LawResult(
                "lattice-associative",
                False,
                f"({label(a)}+{label(b)})+{label(c)} = {label(left)}, "
                f"{label(a)}+({label(b)}+{label(c)}) = {label(right)}",
            )
    return LawResult("lattice-associative", True)


# -- docs/promotion.md ---------------------------------------------------------------

DOC_BEGIN = "<!-- generated by `python -m runtime.core.lattice docs/promotion.md`: do not edit below -->"
DOC_END = "<!-- end of generated tables -->"


def _comparison_cases() -> list[tuple[str, tuple[object, ...]]]:
    import numpy as np

    from runtime.core import dtypes as dt

    zero_d_f64 = np.zeros((), np.float64)
    return [
        ("int64 + float32", (dt.int64, dt.float32)),
        ("int32 + float16", (dt.int32, dt.float16)),
        ("uint8 + int8", (dt.uint8, dt.int8)),
        ("uint32 + int32", (dt.uint32, dt.int32)),
        ("uint64 + int64", (dt.uint64, dt.int64)),
        ("bfloat16 + float16", (dt.bfloat16, dt.float16)),
        ("float16 + int64", (dt.float16, dt.int64)),
        ("float32 + complex64", (dt.float32, dt.complex64)),
        ("float64 + complex64", (dt.float64, dt.complex64)),
        ("int32 + complex64", (dt.int32, dt.complex64)),
        ("bool + int32", (dt.bool_, dt.int32)),
        ("float8_e4m3fn + float8_e5m2", (dt.float8_e4m3fn, dt.float8_e5m2)),
        ("float8_e4m3fn + bfloat16", (dt.float8_e4m3fn, dt.bfloat16)),
        ("float32r + float32", (dt.float32r, dt.float32)),
        ("uint16 + float16", (dt.uint16, dt.float16)),
        ("int64 + Python float", (dt.int64, 2.5)),
        ("int32 + Python complex", (dt.int32, 1j)),
        ("float16 + Python complex", (dt.float16, 1j)),
        ("int2 + Python int", (dt.int2, 1)),
        ("float32 + float64 0-d", (dt.float32, zero_d_f64)),
        ("bool + Python int", (dt.bool_, 1)),
    ]


def comparison_table() -> str:
    """Markdown: the result of each comparison case under every policy."""
    from runtime.core.promotion import PromotionError, policies, result_type

    names = policies()
    lines = ["| operands | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for label, operands in _comparison_cases():
        cells = []
        for name in names:
            try:
                cells.append(result_type(*operands, policy=name).short)
            except PromotionError:
                cells.append(ERROR_CELL)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def generated_docs() -> str:
    """The generated part of docs/promotion.md (comparison + every full table)."""
    from runtime.core.promotion import policies

    parts = [DOC_BEGIN, "", "### Where the policies disagree", "", comparison_table(), ""]
    for name in policies():
        laws = ", ".join(f"{r.law} {'holds' if r.holds else 'fails: ' + r.counterexample}" for r in check_laws(name))
        parts += [f"### `{name}`", "", get_policy_object(name).summary + ".", "", f"Laws: {laws}.", ""]
        parts += [render(name, "markdown"), ""]
    parts.append(DOC_END)
    return "\n".join(parts) + "\n"


def update_docs(path: str) -> bool:
    """Rewrite the generated part of ``path``; return True if it changed."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    head = text.split(DOC_BEGIN)[0]
    new = head + generated_docs()
    if new != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
        return True
    return False


if __name__ == "__main__":
    import sys

    from runtime.core import policies as _builtin_policies  # noqa: F401  (registers the policies)

    for doc in sys.argv[1:]:
        print(("updated " if update_docs(doc) else "up to date: ") + doc)
