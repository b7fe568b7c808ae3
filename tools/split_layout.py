#!/usr/bin/env python3
"""Split ``runtime/kernels.py``, ``runtime/shapes.py`` and ``autodiff/parity.py`` into packages by op family.

Usage (from the repository root, or give the root as the argument)::

    python tools/split_layout.py [ROOT] [--no-ruff]

A mechanical, re-runnable move: each file is parsed with ``ast`` and every
top-level statement goes, verbatim, to one module of a package of the same name:

* a kernel / shape rule goes to the module of its op's family (``FAMILY_MODULE``,
  families as declared in ``runtime/ops.py``), found from its registration line
  (``KERNELS["add"] = add_kernel``, ``PARAM_DEFAULTS["op"] = ...``);
* the parity sweep's case table (the list in ``build_specs``) is split by the
  family of each row's op into ``autodiff/parity/cases_<family>.py``;
* statements under a section header (``# -- title ---``) listed in a target's
  ``anchors`` go to that module;
* every other definition "floats": it goes to the one module that uses it, or
  to ``_common`` (or the section's ``homes`` module) when several do.

The package ``__init__`` keeps the original docstring (plus the layout), the
entry point (the anchored sections), and re-exports every public name and every
private name used elsewhere in the repository. References to the old files in
docs, tests and strings are rewritten to the new modules, and
``monkeypatch.setattr(pkg, "NAME", ...)`` in tests is pointed at the module
that now owns ``NAME``.

Anything the rules cannot place (a new family, a top-level statement of an
unknown kind, a registration of a non-literal op, an import cycle, a name used
across modules through ``global``) stops the script with an error, so code
from a merge is never dropped silently. It checks at the end that every
top-level line of code of the old files is in the new ones.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

#: ``runtime.ops`` family -> module (kernels, shape rules and parity cases alike). The
#: modules follow the sections of ``runtime/ops.py``.
FAMILY_MODULE: dict[str, str] = {
    "binary": "binary",
    "compare": "binary",
    "logical": "binary",
    "dot_general": "contraction",
    "select": "contraction",
    "clamp": "contraction",
    "concatenate": "contraction",
    "scatter": "indexing",
    "gather": "indexing",
    "dynamic_slice": "indexing",
    "dynamic_update_slice": "indexing",
    "unary": "unary",
    "convert": "conversion",
    "reduce": "reductions",
    "structural": "structural",
    "linalg": "linalg",
    "call": "calls",
}
#: How each family module is described in docstrings.
MODULE_DESC: dict[str, str] = {
    "binary": "elementwise binary",
    "contraction": "contraction, selection and joining",
    "indexing": "indexing",
    "unary": "elementwise unary",
    "conversion": "conversion",
    "reductions": "reduction",
    "structural": "structural",
    "linalg": "linear algebra",
    "calls": "user call",
}

SECTION_RE = re.compile(r"^# -- (?P<title>.*?)\s*-*\s*$")


#: files to write and to delete once every target is planned (nothing is written on an error)
PENDING: dict[Path, str] = {}
#: per old file: name -> the other submodules that import it (a monkeypatch must reach them too)
IMPORTERS: dict[str, dict[str, list[str]]] = {}
DELETE: list[Path] = []


class SplitError(Exception):
    pass


def fail(msg: str) -> None:
    raise SplitError(msg)


@dataclass
class Target:
    src: str  # path relative to root
    pkg: str  # dotted package name
    kind: str  # kernels | shapes | parity
    what: str  # "kernels" / "shape rules" / "parity cases"
    table: str | None  # the registration table (KERNELS / SHAPE_RULES), None for parity
    prefix: str = ""  # family module file prefix
    anchors: dict[str, str] = field(default_factory=dict)  # section title -> module
    float_default: dict[str, str] = field(default_factory=dict)  # section title -> module for unused floats
    homes: dict[str, str] = field(default_factory=dict)  # section title -> shared module for multi-use floats
    force: dict[str, str] = field(default_factory=dict)  # name -> module
    common_doc: str = ""
    shared: tuple[str, ...] = ("_common",)  # modules others may import


TARGETS = [
    Target(
        "runtime/kernels.py",
        "runtime.kernels",
        "kernels",
        "kernels",
        "KERNELS",
        anchors={"checked entry point": "__init__"},
        force={"_check_complete": "__init__"},
        homes={"conversion": "conversion"},
        shared=("_common", "conversion"),
        common_doc=(
            "The kernel table and what several op families' kernels share: the storage classes, computing\n"
            "narrow formats in a wider dtype and rounding back as XLA CPU does."
        ),
    ),
    Target(
        "runtime/shapes.py",
        "runtime.shapes",
        "shapes",
        "shape rules",
        "SHAPE_RULES",
        anchors={"entry point": "__init__"},
        force={"_check_complete": "__init__"},
        common_doc=(
            "The shape-rule table and what several op families' rules share: the error classes, dimension\n"
            "numbers, param defaults and the checks of operands, axes and params."
        ),
    ),
    Target(
        "autodiff/parity.py",
        "autodiff.parity",
        "parity",
        "parity cases",
        None,
        prefix="cases_",
        anchors={
            "what is swept": "_common",
            "JAX, imported lazily": "_common",
            "inputs": "_common",
            "the op table": "_common",
            "documented, deliberate departures from JAX": "departures",
            "building the case list": "cases",
            "the report": "report",
            "running the sweep": "cli",
        },
        float_default={
            "running one case": "runner",
            "comparing": "runner",
            "the checks": "runner",
        },
        force={"CheckResult": "_common", "build_specs": "cases", "__all__": "__init__"},
        common_doc=(
            "What the parity sweep's modules share: the swept dtypes, JAX (imported lazily), input\n"
            "generation, the ``Spec`` and ``Case`` types, and the JAX side of a case."
        ),
    ),
]

SUBMODULE_DOCS = {
    (
        "parity",
        "cases",
    ): "The sweep's op table (``build_specs``, assembled from the ``cases_*`` modules) and its case list.",
    ("parity", "departures"): "Documented, deliberate departures from JAX, and the known failures the sweep reports.",
    ("parity", "runner"): "Running one case: castwise and JAX side by side, the comparisons and the checks.",
    ("parity", "report"): "The sweep's report: the summary table, failures, departures, JSON and Markdown.",
    ("parity", "cli"): "Running the sweep (in worker processes with ``--jobs``) and ``castwise parity``.",
}


# -- reading ------------------------------------------------------------------------------------


def load_ops(root: Path) -> dict[str, str]:
    """op name -> family, from runtime/ops.py run on its own (it imports nothing of castwise)."""
    path = root / "runtime" / "ops.py"
    spec = importlib.util.spec_from_file_location("_split_layout_ops", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    out = {name: op.family for name, op in mod.OPS.items()}
    unknown = sorted({f for f in out.values() if f not in FAMILY_MODULE})
    if unknown:
        fail(f"op families without a module in FAMILY_MODULE: {unknown}")
    return out


@dataclass
class Unit:
    idx: int
    node: ast.stmt
    start: int  # first line of code (1-based)
    end: int  # last line (inclusive)
    prefix: list[str]  # attached comment lines (verbatim)
    gap: int  # blank lines before (prefix or code) in the original
    section: str
    names: list[str] = field(default_factory=list)  # defined names
    uses: set[str] = field(default_factory=set)
    ops: list[str] = field(default_factory=list)  # registered op names
    registers: str | None = None  # the unit whose name this registration line registers
    module: str | None = None
    forced: bool = False
    text: list[str] | None = None  # replacement text (build_specs)


def defined_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign):
        targets = [node.target]
    out: list[str] = []
    for t in targets:
        for n in ast.walk(t):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.append(n.id)
    return out


def used_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def global_names(node: ast.AST) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Global):
            out.update(n.names)
    return out


def first_line(node: ast.stmt) -> int:
    decos = getattr(node, "decorator_list", [])
    return min([node.lineno] + [d.lineno for d in decos])


@dataclass
class Parsed:
    lines: list[str]
    docstring: str | None
    imports: list[ast.stmt]
    units: list[Unit]
    sections: dict[str, str]  # title -> verbatim header line
    tree: ast.Module


def parse(path: Path) -> Parsed:
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    body = list(tree.body)
    docstring = None
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        docstring = "\n".join(lines[body[0].lineno - 1 : body[0].end_lineno])
        prev_end = body[0].end_lineno or 0
        body = body[1:]
    else:
        prev_end = 0
    imports: list[ast.stmt] = []
    units: list[Unit] = []
    sections: dict[str, str] = {}
    section = ""
    for node in body:
        start = first_line(node)
        end = node.end_lineno or node.lineno
        gap_lines = lines[prev_end : start - 1]
        prev_end = end
        # section headers in the gap; other comments attach to the statement
        kept: list[str] = []
        for line in gap_lines:
            m = SECTION_RE.match(line)
            if m:
                section = m.group("title")
                sections[section] = line
                kept = []
                continue
            kept.append(line)
        gap = 0
        while kept and not kept[0].strip():
            kept.pop(0)
            gap += 1
        prefix = list(kept)
        if not prefix:
            gap = 0
            for line in reversed(gap_lines):
                if line.strip():
                    break
                gap += 1
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if prefix:
                fail(f"{path}:{start}: comment above an import; place it by hand")
            imports.append(node)
            continue
        if not isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign, ast.Expr)
        ):
            fail(f"{path}:{start}: top-level {type(node).__name__} statement: no rule places it")
        if isinstance(node, ast.Expr) and not isinstance(node.value, ast.Call):
            fail(f"{path}:{start}: top-level expression that is not a call")
        u = Unit(len(units), node, start, end, prefix, gap, section)
        u.names = defined_names(node)
        u.uses = used_names(node)
        units.append(u)
    return Parsed(lines, docstring, imports, units, sections, tree)


# -- placing --------------------------------------------------------------------------------------


def find_registrations(parsed: Parsed, ops: dict[str, str], path: str) -> None:
    """Registration lines ``TABLE["op"] = value``: anchor them (and the unit named by value) to the op's family."""
    by_name = {n: u for u in parsed.units for n in u.names}
    for u in parsed.units:
        node = u.node
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript)):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and not u.names:
                fail(f"{path}:{u.start}: assignment to something other than a name: no rule places it")
            continue
        target = node.targets[0]
        assert isinstance(target, ast.Subscript)
        key = target.slice
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            fail(f"{path}:{u.start}: registration with a non-literal key: no rule places it")
        assert isinstance(key, ast.Constant)
        if key.value not in ops:
            fail(f"{path}:{u.start}: registration for {key.value!r}, which runtime/ops.py does not declare")
        u.ops.append(key.value)
        u.module = FAMILY_MODULE[ops[key.value]]
        if isinstance(node.value, ast.Name) and node.value.id in by_name:
            owner = by_name[node.value.id]
            owner.ops.append(key.value)
            u.registers = node.value.id
            if owner.module is not None and owner.module != u.module:
                fail(
                    f"{path}:{owner.start}: {node.value.id} is registered for ops of two families "
                    f"({owner.module}, {u.module}): move it to a shared module by hand"
                )
            owner.module = u.module


def place(parsed: Parsed, target: Target, extra_users: dict[str, set[str]] | None = None) -> None:
    """Set each unit's module (see the module docstring); ``extra_users``: name -> modules using it."""
    units = parsed.units
    by_name: dict[str, Unit] = {}
    for u in units:
        for n in u.names:
            if n in by_name and by_name[n] is not u:
                fail(f"{target.src}:{u.start}: {n} is defined twice ({by_name[n].start} and {u.start})")
            by_name[n] = u
    for u in units:
        if u.module is not None:
            continue
        forced = [target.force[n] for n in u.names if n in target.force]
        if forced:
            u.module = forced[0]
            u.forced = True
        elif u.section in target.anchors and (
            target.kind != "parity" or not u.names or any(not n.startswith("_") for n in u.names)
        ):
            # parity: only the public names of an anchored section stay there; private helpers
            # go where they are used (the section's module when only there)
            u.module = target.anchors[u.section]
        elif u.section in target.float_default and any(not n.startswith("_") for n in u.names):
            u.module = target.float_default[u.section]  # public names stay in their section's module
    users: dict[int, set[int]] = {u.idx: set() for u in units}
    for u in units:
        for n in u.uses:
            d = by_name.get(n)
            if d is not None and d is not u:
                users[d.idx].add(u.idx)
    # a statement that defines nothing (``_X.setflags(...)``) follows what it uses
    followers = {u.idx for u in units if u.module is None and not u.names}
    floating = {u.idx for u in units if u.module is None and u.names}
    memo: dict[int, str] = {}

    def deco_owners(u: Unit) -> set[int]:
        decos = getattr(u.node, "decorator_list", [])
        return {by_name[n.id].idx for d in decos for n in ast.walk(d) if isinstance(n, ast.Name) and n.id in by_name}

    def follower_owner(u: Unit) -> Unit | None:
        """``f.defvjp(fwd, bwd)``: the statement goes with ``f``."""
        node = u.node
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            base: ast.expr = node.value.func
            while isinstance(base, (ast.Attribute, ast.Call, ast.Subscript)):
                base = base.func if isinstance(base, ast.Call) else base.value
            if isinstance(base, ast.Name) and base.id in by_name:
                return by_name[base.id]
        return None

    def placement(i: int, stack: set[int]) -> str | None:
        """The module of unit i; None while unknown (a cycle through units being placed)."""
        u = units[i]
        if u.module is not None:
            return u.module
        if i in memo:
            return memo[i]
        if i in stack:
            return None
        stack.add(i)
        mods = {m for n in u.names for m in (extra_users or {}).get(n, ())}
        unknown = False
        for j in users[i]:
            user = units[j]
            if not user.names and user.module is None:
                owner = follower_owner(user)  # a follower statement goes with its owner
                if owner is None or owner is u:
                    continue
                j = owner.idx
            elif user.module is None and i in deco_owners(user):
                continue  # ``@f.defjvp def g``: g goes with f, not the other way round
            m = placement(j, stack)
            if m is None:
                unknown = True
            else:
                mods.add(m)
        stack.discard(i)
        if len(mods) == 1:
            out = next(iter(mods))
        elif len(mods) > 1:
            home = target.homes.get(u.section)
            out = home if home is not None else "_common"
        else:
            if unknown:
                return None  # decided once the units around the cycle are
            out = target.float_default.get(u.section, target.anchors.get(u.section, "_common"))
            # unused but decorated by something defined here (``@f.defjvp``): goes with ``f``
            for d in getattr(u.node, "decorator_list", []):
                owners = [by_name[n.id] for n in ast.walk(d) if isinstance(n, ast.Name) and n.id in by_name]
                for owner in owners:
                    if owner is not u:
                        m = placement(owner.idx, stack | {i})
                        if m is not None:
                            out = m
        if not stack or not unknown:
            memo[i] = out
        return out

    for _ in range(3):
        for i in sorted(floating):
            placement(i, set())
    for i in sorted(floating):
        if i not in memo:
            u = units[i]
            memo[i] = target.float_default.get(u.section, target.anchors.get(u.section, "_common"))
    for i in floating:
        units[i].module = memo[i]
    for i in sorted(followers):
        u = units[i]
        owner = follower_owner(u)
        owners = (
            [owner]
            if owner is not None
            else [by_name[n] for n in sorted(u.uses) if n in by_name and by_name[n].idx < i]
        )
        if not owners:
            fail(f"{target.src}:{u.start}: a statement that defines nothing and uses nothing defined here")
        u.module = max(owners, key=lambda d: d.idx).module
    # a module listed as a home is shared: only place things there that belong there
    for u in units:
        for g in global_names(u.node):
            d = by_name.get(g)
            if d is not None and d.module != u.module:
                fail(f"{target.src}:{u.start}: `global {g}` across modules ({u.module} vs {d.module})")


# -- parity: splitting the case table ---------------------------------------------------------------


def op_param_index(parsed: Parsed, func: str) -> tuple[int, str] | None:
    """Where a row constructor (``Spec`` or a ``_*_spec`` helper) takes the op: (position, keyword)."""
    for u in parsed.units:
        if u.names != [func]:
            continue
        node = u.node
        if isinstance(node, ast.ClassDef):
            fields = [s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
        elif isinstance(node, ast.FunctionDef):
            fields = [a.arg for a in node.args.args]
        else:
            return None
        for key in ("op", "name"):
            if key in fields:
                return fields.index(key), key
    return None


def row_ops(e: ast.expr, parsed: Parsed, ops: dict[str, str]) -> set[str]:
    """The op(s) of a case-table row: the ``op`` (else ``name``) argument of its constructor call."""
    calls = [n for n in ast.walk(e) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    for call in calls:
        assert isinstance(call.func, ast.Name)
        where = op_param_index(parsed, call.func.id)
        if where is None:
            continue
        pos, key = where
        arg: ast.expr | None = next((k.value for k in call.keywords if k.arg == key), None)
        if arg is None and pos < len(call.args):
            arg = call.args[pos]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return {arg.value} if arg.value in ops else set()
        # a comprehension variable: the op names among the iterated literals
        gens = [g for n in ast.walk(e) if isinstance(n, (ast.GeneratorExp, ast.ListComp)) for g in n.generators]
        return {
            n.value
            for g in gens
            for n in ast.walk(g.iter)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in ops
        }
    return set()


def split_case_table(parsed: Parsed, ops: dict[str, str]) -> dict[str, list[str]]:
    """The rows of build_specs' list, by family module; rewrites build_specs to assemble them."""
    unit = next((u for u in parsed.units if u.names == ["build_specs"]), None)
    if unit is None:
        fail("autodiff/parity.py: no build_specs")
    assert unit is not None
    fn = unit.node
    assert isinstance(fn, ast.FunctionDef)
    lst_stmt = next(
        (s for s in fn.body if isinstance(s, (ast.Assign, ast.AnnAssign)) and isinstance(s.value, ast.List)), None
    )
    if lst_stmt is None:
        fail("build_specs: no `specs = [...]` list")
    assert lst_stmt is not None and isinstance(lst_stmt.value, ast.List)
    prelude = [s for s in fn.body[: fn.body.index(lst_stmt)] if not (isinstance(s, ast.Expr))]
    lines = parsed.lines
    rows: dict[str, list[str]] = {}
    order: list[str] = []
    seen_end = lst_stmt.lineno
    elts = lst_stmt.value.elts
    for k, e in enumerate(elts):
        start = e.lineno
        end = e.end_lineno or start
        if start <= seen_end:
            fail(f"autodiff/parity.py:{start}: a case-table row does not start on its own line")
        between = lines[seen_end : start - 1]
        comments = [ln for ln in between if ln.strip() and not re.match(r"^\s*# -- [\w ,]+$", ln)]
        for ln in between:
            if ln.strip() and not ln.strip().startswith("#"):
                fail(f"autodiff/parity.py: unexpected text between case-table rows: {ln!r}")
        if k + 1 < len(elts) and (elts[k + 1].lineno == end):
            fail(f"autodiff/parity.py:{end}: two case-table rows on one line")
        text = lines[start - 1 : end]
        if not text[-1].rstrip().endswith(","):
            text = [*text[:-1], text[-1] + ","]
        found = row_ops(e, parsed, ops)
        mods = {FAMILY_MODULE[ops[o]] for o in found}
        if len(mods) != 1:
            fail(f"autodiff/parity.py:{start}: case-table row with ops {sorted(found)}: cannot tell its family")
        mod = mods.pop()
        if mod not in rows:
            rows[mod] = []
            order.append(mod)
        elif order[-1] != mod:
            print(f"warning: the {mod} rows are not contiguous in build_specs: the spec order changes", file=sys.stderr)
        rows[mod].extend(comments + text)
        seen_end = end
    # the rest of build_specs verbatim, the list replaced by the family modules' rows
    fn_lines = lines[first_line(fn) - 1 : fn.end_lineno]
    base = first_line(fn)
    new: list[str] = []
    skip = set()
    for s in prelude:
        skip.update(range(s.lineno, (s.end_lineno or s.lineno) + 1))
    list_end = lst_stmt.end_lineno or lst_stmt.lineno
    for i, ln in enumerate(fn_lines):
        lineno = base + i
        if lineno in skip:
            continue
        if lineno == lst_stmt.lineno:
            head = ln[: ln.index("= [") + 2]
            new.append(head + "[")
            for mod in order:
                new.append(f"        *cases_{mod}.specs(),")
            new.append("    ]")
            continue
        if lst_stmt.lineno < lineno <= list_end:
            continue
        new.append(ln)
    unit.text = new
    unit.uses = (unit.uses - set().union(*(used_names(e) for e in elts))) | {f"cases_{m}" for m in order}
    # preludes used by rows go with them
    prelude_src = {}
    for s in prelude:
        for n in defined_names(s):
            prelude_src[n] = lines[s.lineno - 1 : s.end_lineno]
    parsed.case_order = order  # type: ignore[attr-defined]
    parsed.case_prelude = prelude_src  # type: ignore[attr-defined]
    return rows


# -- writing ----------------------------------------------------------------------------------------


def import_lines(imports: list[ast.stmt], needed: set[str]) -> list[str]:
    out = []
    for node in imports:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                bound = a.asname or a.name.split(".")[0]
                if bound in needed:
                    out.append(f"import {a.name}" + (f" as {a.asname}" if a.asname else ""))
        else:
            assert isinstance(node, ast.ImportFrom)
            parts = [
                a.name + (f" as {a.asname}" if a.asname else "") for a in node.names if (a.asname or a.name) in needed
            ]
            if parts:
                out.append(f"from {'.' * node.level}{node.module} import {', '.join(parts)}")
    return out


def unit_lines(parsed: Parsed, u: Unit) -> list[str]:
    body = u.text if u.text is not None else parsed.lines[u.start - 1 : u.end]
    return [*u.prefix, *body]


def docstring_block(text: str) -> list[str]:
    paras = [wrap(p, 96) for p in text.split("\n\n")]
    text = "\n\n".join(paras)
    return ['"""' + text + ('\n"""' if "\n" in text else '"""')]


def is_block(u: Unit) -> bool:
    return isinstance(u.node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))


def module_body(parsed: Parsed, units: list[Unit]) -> list[str]:
    """Units in original order, original gaps between neighbours, section headers where they change."""
    out: list[str] = []
    prev: Unit | None = None
    sections = {u.section for u in units}
    last_section = None
    for u in units:
        if prev is None:
            pass
        elif (prev.idx + 1 == u.idx and u.section == prev.section) or not (
            is_block(prev) or is_block(u) or u.prefix or u.section != prev.section
        ):
            out.extend([""] * u.gap)
        else:
            out.extend(["", ""])
        if len(sections) > 1 and u.section != last_section and u.section in parsed.sections and not u.forced:
            out.append(parsed.sections[u.section])
            out.extend(["", ""] if not isinstance(u.node, ast.Assign | ast.AnnAssign) or u.prefix else [""])
        last_section = u.section
        out.extend(unit_lines(parsed, u))
        prev = u
    return out


def external_private_names(root: Path, target: Target, moved: set[str]) -> set[str]:
    """Private names of the old module used elsewhere (``kernels._x``, ``from ...parity import _x``)."""
    leaf = target.pkg.rsplit(".", 1)[1]
    pat = re.compile(rf"\b{leaf}\.(_\w+)")
    imp = re.compile(rf"from {re.escape(target.pkg)} import \(?([^)]*?)\)?$", re.M | re.S)
    out: set[str] = set()
    src = (root / target.src).resolve()
    for p in list(root.rglob("*.py")) + list(root.rglob("*.md")):
        if ".venv" in p.parts or "tools" in p.parts or p.resolve() == src or "egg-info" in str(p):
            continue
        if p.is_relative_to(root / target.src.removesuffix(".py")):
            continue
        text = p.read_text(errors="replace")
        out.update(m for m in pat.findall(text) if m in moved)
        for m in imp.findall(text):
            out.update(n.strip().split(" ")[0] for n in m.replace("\n", ",").split(",") if n.strip().startswith("_"))
    return out & moved


def write_target(root: Path, target: Target, ops: dict[str, str]) -> dict[str, str]:
    """Write the package; returns name -> module path (for rewriting references)."""
    path = root / target.src
    parsed = parse(path)
    if target.table is not None:
        find_registrations(parsed, ops, target.src)
    rows: dict[str, list[str]] = {}
    if target.kind == "parity":
        rows = split_case_table(parsed, ops)
    extra: dict[str, set[str]] = {}
    for mod, body in rows.items():
        for n in used_names(ast.parse("[\n" + "\n".join(body) + "\n]")):
            extra.setdefault(n, set()).add(f"cases_{mod}")
    place(parsed, target, extra)
    pkg_dir = root / target.src.removesuffix(".py")
    if pkg_dir.exists():
        fail(f"{pkg_dir} already exists")
    modules: dict[str, list[Unit]] = {}
    for u in parsed.units:
        assert u.module is not None
        modules.setdefault(u.module, []).append(u)
    family_mods = [m for m in dict.fromkeys(FAMILY_MODULE.values()) if m in modules]
    if target.kind == "parity":
        family_mods = []
    case_mods = [f"cases_{m}" for m in getattr(parsed, "case_order", [])]
    all_mods = set(modules) | set(case_mods)
    defined_in: dict[str, str] = {}
    for u in parsed.units:
        for n in u.names:
            defined_in[n] = u.module  # type: ignore[assignment]
    for m in all_mods:
        if m in defined_in:
            fail(f"{target.src}: a top-level name {m!r} collides with a module name")
    # case-table modules: a specs() function each
    case_texts: dict[str, list[str]] = {}
    case_uses: dict[str, set[str]] = {}
    for mod in getattr(parsed, "case_order", []):
        body = rows[mod]
        uses = used_names(ast.parse("[\n" + "\n".join(body) + "\n]"))
        pre: list[str] = []
        for n, src in parsed.case_prelude.items():  # type: ignore[attr-defined]
            if n in uses:
                pre.extend(src)
        text = [
            "def specs() -> list[Spec]:",
            f'    """The sweep\'s rows of the {MODULE_DESC[mod]} ops."""',
            *pre,
            "    return [",
            *body,
            "    ]  # fmt: skip",
        ]
        case_texts[f"cases_{mod}"] = text
        case_uses[f"cases_{mod}"] = (uses | used_names(ast.parse("\n".join(s.strip() for s in pre)))) | {"Spec"}

    # imports each module needs
    def needs(mod: str) -> tuple[set[str], dict[str, set[str]]]:
        uses: set[str] = set()
        if mod in case_uses:
            uses = set(case_uses[mod])
        for u in modules.get(mod, []):
            uses |= u.uses
        own = {n for u in modules.get(mod, []) for n in u.names}
        cross: dict[str, set[str]] = {}
        for n in uses - own:
            m = defined_in.get(n)
            if m is not None and m != mod:
                cross.setdefault(m, set()).add(n)
            if n in all_mods and n != mod and n.startswith("cases_"):
                cross.setdefault("__pkg__", set()).add(n)
        return uses, cross

    graph: dict[str, set[str]] = {}
    for mod in all_mods:
        _, cross = needs(mod)
        graph[mod] = {m for m in cross if m != "__pkg__"} | cross.get("__pkg__", set())
        if mod != "__init__" and "__init__" in cross:
            fail(f"{target.pkg}.{mod} would import {sorted(cross['__init__'])} from the package __init__")
    # cycles
    state: dict[str, int] = {}

    def dfs(m: str, trail: list[str]) -> None:
        state[m] = 1
        for n in graph.get(m, ()):
            if state.get(n) == 1:
                fail(f"{target.pkg}: import cycle {' -> '.join([*trail, m, n])}; adjust the rules")
            if state.get(n) is None:
                dfs(n, [*trail, m])
        state[m] = 2

    for m in sorted(all_mods):
        if state.get(m) is None:
            dfs(m, [])

    written: dict[str, Path] = {}
    importers = IMPORTERS.setdefault(target.src, {})
    for mod in sorted(all_mods - {"__init__"}):
        uses, cross = needs(mod)
        for names in cross.values():
            for n in names:
                importers.setdefault(n, []).append(mod)
        if mod in case_texts:
            fam = mod.removeprefix("cases_")
            fam_text = ", ".join(f"``{f}``" for f, m in FAMILY_MODULE.items() if m == fam and f in ops.values())
            doc = (
                f"The parity sweep's rows of the {MODULE_DESC[fam]} ops (``runtime.ops`` families {fam_text}).\n\n"
                "``specs()`` returns them; ``cases.build_specs`` assembles every family's rows."
            )
        elif mod == "_common":
            doc = target.common_doc
        elif (target.kind, mod) in SUBMODULE_DOCS:
            doc = SUBMODULE_DOCS[(target.kind, mod)]
        else:
            fam_text = ", ".join(f"``{f}``" for f, m in FAMILY_MODULE.items() if m == mod and f in ops.values())
            if target.kind == "kernels":
                doc = (
                    f"Kernels of the {MODULE_DESC[mod]} ops (``runtime.ops`` families {fam_text}).\n\n"
                    "Each kernel is a named function followed by its registration in ``KERNELS``; the\n"
                    "conventions are in ``runtime.kernels``."
                )
                if mod in target.shared:
                    doc += "\nThe conversions here are shared by the other families' kernels."
            else:
                doc = (
                    f"Shape rules of the {MODULE_DESC[mod]} ops (``runtime.ops`` families {fam_text}).\n\n"
                    "Each rule is a named function followed by its registration in ``SHAPE_RULES``; the\n"
                    "checks and their order are described in ``runtime.shapes``."
                )
        out = [*docstring_block(doc), "", "from __future__ import annotations", ""]
        out.extend(import_lines(parsed.imports, uses))
        for m, names in sorted(cross.items()):
            if m == "__pkg__":
                out.append(f"from {target.pkg} import {', '.join(sorted(names))}")
            else:
                out.append(f"from {target.pkg}.{m} import {', '.join(sorted(names))}")
        out.extend(["", ""])
        if mod in case_texts:
            if modules.get(mod):
                out.extend([*module_body(parsed, modules[mod]), "", ""])
            out.extend(case_texts[mod])
        else:
            out.extend(module_body(parsed, modules[mod]))
        written[mod] = pkg_dir / f"{mod}.py"
        PENDING[written[mod]] = "\n".join(out).rstrip("\n") + "\n"

    # __init__: docstring + layout, imports, re-exports, entry point
    init_units = modules.get("__init__", [])
    uses, cross = needs("__init__")
    moved_names = set(defined_in)
    private_ext = external_private_names(root, target, moved_names)
    reexport: dict[str, set[str]] = {}
    for n, m in defined_in.items():
        if m == "__init__":
            continue
        if not n.startswith("_") or n in private_ext:
            reexport.setdefault(m, set()).add(n)
    doc = parsed.docstring or '""""""'
    layout = layout_paragraph(target, modules, case_mods)
    assert doc.endswith('"""')
    doc = doc[:-3].rstrip("\n") + "\n\n" + layout + '\n"""'
    out = [doc, "", "from __future__ import annotations", ""]
    out.extend(import_lines(parsed.imports, uses))
    if family_mods:
        out.append(f"from {target.pkg} import {', '.join(family_mods)}")
    for m in sorted(set(reexport) | set(cross)):
        names = sorted(reexport.get(m, set()) | cross.get(m, set()))
        if not names:
            continue
        out.append(f"from {target.pkg}.{m} import (  # noqa: F401")
        out.extend(f"    {n}," for n in names)
        out.append(")")
    out.extend(["", ""])
    if family_mods:
        out.append(f"#: The op-family modules: importing one registers its {target.what} in ``{target.table}``.")
        out.append(f"FAMILY_MODULES = ({', '.join(family_mods)},)")
        out.extend(["", ""])
    out.extend(module_body(parsed, init_units))
    written["__init__"] = pkg_dir / "__init__.py"
    PENDING[written["__init__"]] = "\n".join(out).rstrip("\n") + "\n"

    # every line of code of the old file is in the new ones (moved verbatim)
    new_text = "\n".join(PENDING[p] for p in written.values())
    new_lines = set(new_text.splitlines())
    missing = []
    for u in parsed.units:
        if u.text is not None:
            continue
        for ln in parsed.lines[u.start - 1 : u.end]:
            if ln not in new_lines:
                missing.append(ln)
    for rows_ in rows.values():
        for ln in rows_:
            if ln not in new_lines and ln.rstrip(",") + "," not in new_lines:
                missing.append(ln)
    if missing:
        fail(f"{target.src}: lines lost in the move: {missing[:5]}")
    DELETE.append(path)
    where = {n: f"{target.src.removesuffix('.py')}/{m}.py" for n, m in defined_in.items()}
    return where


def layout_paragraph(target: Target, modules: dict[str, list[Unit]], case_mods: list[str]) -> str:
    if target.kind == "parity":
        parts = ", ".join(f"``{m}``" for m in case_mods)
        text = (
            "Layout: the op table is one module per op family ("
            + parts
            + "; ``cases.build_specs`` assembles them and builds the case list), ``departures`` holds the "
            "documented departures and known failures, ``runner`` runs and checks one case, ``report`` "
            "summarises, ``cli`` runs the sweep and is ``castwise parity``; ``_common`` holds what they "
            "share. This package re-exports their names."
        )
        return wrap(text)
    fams = []
    for mod in dict.fromkeys(FAMILY_MODULE.values()):
        if mod in modules:
            f = ", ".join(sorted(k for k, v in FAMILY_MODULE.items() if v == mod))
            fams.append(f"``{mod}`` ({f})")
    shared = " and ".join(f"``{m}``" for m in target.shared if m in modules)
    text = (
        f"Layout: the {target.what} live in one module per op family, named after the sections of "
        f"``runtime/ops.py``: {'; '.join(fams)}. What several families share is in {shared}. This "
        f"package re-exports their names, holds the checked entry point and imports every family module, "
        f"so ``{target.table}`` is complete once it is imported."
    )
    return wrap(text)


def wrap(text: str, width: int = 100) -> str:
    out, line = [], ""
    for w in text.split():
        if line and len(line) + 1 + len(w) > width:
            out.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    out.append(line)
    return "\n".join(out)


# -- references elsewhere --------------------------------------------------------------------------


def rewrite_refs(root: Path, wheres: dict[str, dict[str, str]]) -> list[Path]:
    """``runtime/shapes.py: atan2_rule`` -> ``runtime/shapes/binary.py: atan2_rule`` in docs, tests, code."""
    changed = []
    files = [p for p in root.rglob("*") if p.suffix in (".py", ".md") and ".venv" not in p.parts]
    files = [p for p in files if "tools" not in p.relative_to(root).parts[:1] and "egg-info" not in str(p)]
    for p in files:
        text = p.read_text(errors="replace")
        new = text
        for old, where in wheres.items():
            stem = old.removesuffix(".py")

            def sub(m: re.Match[str], where: dict[str, str] = where, stem: str = stem) -> str:
                name = m.group("name")
                if name in where:
                    return where[name] + m.group("sep") + name
                return stem + "/" + m.group("sep") + name

            new = re.sub(rf"{re.escape(old)}(?P<sep>:? `?|: )(?P<name>_?[A-Za-z]\w*)", sub, new)
            new = new.replace(old, stem + "/")
        if p.parts[-3:-1] and "tests" in p.relative_to(root).parts:
            new = rewrite_monkeypatch(new, wheres)
        if new != text:
            p.write_text(new)
            changed.append(p)
    return changed


def rewrite_monkeypatch(text: str, wheres: dict[str, dict[str, str]]) -> str:
    """``monkeypatch.setattr(pkg, "NAME", v)`` -> one setattr per submodule that binds NAME."""
    for old, where in wheres.items():
        leaf = Path(old).stem
        importers = IMPORTERS.get(old, {})

        def sub(m: re.Match[str], where: dict[str, str] = where, importers: dict[str, list[str]] = importers) -> str:
            indent, alias, name, rest = m.group(1), m.group(2), m.group(3), m.group(4)
            mod = Path(where.get(name, "__init__.py")).stem
            if mod == "__init__":
                return m.group(0)
            if not rest.rstrip().endswith(")"):
                fail(f"a multi-line monkeypatch.setattr of {alias}.{name}: point it at {alias}.{mod} by hand")
            mods = [mod, *sorted(set(importers.get(name, [])) - {mod})]
            return "\n".join(f'{indent}monkeypatch.setattr({alias}.{m_}, "{name}"{rest}' for m_ in mods)

        text = re.sub(rf'^(\s*)monkeypatch\.setattr\(({leaf}), "(\w+)"(.*)$', sub, text, flags=re.M)
    return text


def update_architecture(root: Path, families: set[str]) -> None:
    path = root / "docs" / "architecture.md"
    if not path.exists():
        return
    text = path.read_text()
    text = text.replace(
        "shape and dtype rules (`shapes.py`), kernels (`kernels.py`)",
        "shape and dtype rules (`shapes/`), kernels (`kernels/`), both one module per op family",
    )
    rows = []
    for mod in dict.fromkeys(FAMILY_MODULE.values()):
        fams = ", ".join(f"`{f}`" for f, m in FAMILY_MODULE.items() if m == mod and f in families)
        if not fams:
            continue
        rows.append(
            f"| {fams} | `runtime/kernels/{mod}.py` | `runtime/shapes/{mod}.py` | `autodiff/parity/cases_{mod}.py` |"
        )
    table = (
        "\nKernels, shape rules and parity rows are laid out by the op's family (its\n"
        "section in `runtime/ops.py`); what several families share is in the\n"
        "package's `_common.py` (and `runtime/kernels/conversion.py`):\n\n"
        "| family (`ops.py`) | kernel | shape rule | parity rows |\n|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )
    text = re.sub(
        r"3\. \*\*Shape rule\*\* in `runtime/shapes(?:\.py|/)` \(`SHAPE_RULES`\)",
        "3. **Shape rule** in `runtime/shapes/<family>.py` (`SHAPE_RULES`)",
        text,
    )
    text = re.sub(
        r"4\. \*\*Kernel\*\* in `runtime/kernels(?:\.py|/)` \(`KERNELS`\)",
        "4. **Kernel** in `runtime/kernels/<family>.py` (`KERNELS`)",
        text,
    )
    text = re.sub(
        r"the op's case in `autodiff/parity(?:\.py|/)`",
        "the op's case in `autodiff/parity/cases_<family>.py`",
        text,
    )
    marker = "## One op, end to end\n\nAdding an op touches one table per concern:\n"
    if marker in text and "| family (`ops.py`)" not in text:
        # the table goes after the numbered list
        start = text.index(marker) + len(marker)
        m = re.search(r"\n\n(?=[^\d\s ])", text[start:])
        at = start + (m.start() + 1 if m else len(text) - start)
        text = text[:at] + table + "\n" + text[at:]
    path.write_text(text)


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    root = Path(args[0] if args else ".").resolve()
    try:
        ops = load_ops(root)
        wheres = {}
        for target in TARGETS:
            wheres[target.src] = write_target(root, target, ops)
        for p, text in PENDING.items():
            p.parent.mkdir(exist_ok=True)
            p.write_text(text)
        for p in DELETE:
            p.unlink()
        changed = rewrite_refs(root, wheres)
        update_architecture(root, set(ops.values()))
    except SplitError as err:
        print(f"split_layout: {err}", file=sys.stderr)
        return 1
    pkgs = [str(root / t.src.removesuffix(".py")) for t in TARGETS]
    if "--no-ruff" not in argv:
        ruff = str(Path(sys.executable).with_name("ruff"))
        subprocess.run([ruff, "check", "--fix", "--select", "I,F401", "--quiet", *pkgs], cwd=root, check=False)
        subprocess.run([ruff, "format", "--quiet", *pkgs], cwd=root, check=False)
    print("split_layout: wrote", ", ".join(pkgs), "; rewrote references in", len(changed), "files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
