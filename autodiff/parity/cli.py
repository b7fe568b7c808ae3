"""Running the sweep (in worker processes with ``--jobs``) and ``castwise parity``."""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import importlib.util
import io
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, TextIO

from autodiff.parity import shards, store
from autodiff.parity._common import (
    DEFAULT_DTYPES,
    DEFAULT_POLICIES,
    QUICK_CASES,
    Case,
    default_compile_cache,
)
from autodiff.parity.cases import _matches, build_cases, parse_dtypes
from autodiff.parity.checks import VMAP_BATCH, _check_arrays, run_case  # noqa: F401 (re-exported)
from autodiff.parity.references import Prepared, prepare
from autodiff.parity.report import Report, markdown, splice_markdown, terminal_width, write_json
from autodiff.parity.runner import CaseResult
from runtime.core import dtypes as dt
from runtime.core.dtypes import DType

# -- running the sweep -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    """What ``castwise parity`` was asked to run."""

    policies: tuple[str, ...] = DEFAULT_POLICIES
    ops: tuple[str, ...] = ("*",)
    dtypes: tuple[DType, ...] = DEFAULT_DTYPES
    seed: int = 0
    quick: bool = False
    jobs: int = 1
    #: known failures fail the run too
    strict: bool = False
    #: JAX's persistent compilation cache directory, shared by the workers ("": none)
    compile_cache: str = ""
    #: ``(K, N)``: run shard K of N of the selection only (``autodiff.parity.shards``)
    shard: tuple[int, int] | None = None
    #: the reference store's directory ("": none; ``autodiff.parity.store``)
    store: str = ""
    #: recompute every reference (and rewrite the store's records)
    refresh: bool = False
    #: replay this oracle database instead of asking JAX
    oracle: str = ""
    #: write every case's record to this oracle database too
    save_oracle: str = ""
    #: a process past this resident size (MB) drops JAX's compiled executables (0: never; the
    #: command line sets ``store.RELEASE_ABOVE_MB``, a library caller keeps its own policy)
    release_above_mb: float = 0.0
    #: compute the references a block of cases misses with ``packing.evaluate`` (a few compiled
    #: programs for many cases) rather than case by case, op by op (the command line's default)
    pack: bool = False


def _source(options: Options) -> store.ReferenceSource:
    """Where this process's cases get JAX's references (JAX itself imported only on a miss)."""
    evaluate = None
    if options.pack:
        from autodiff.parity import packing

        evaluate = packing.evaluate
    return store.ReferenceSource(options.seed, options.store, options.refresh, options.oracle,
                                 options.save_oracle, options.compile_cache, evaluate=evaluate,
                                 release_above_mb=options.release_above_mb)  # fmt: skip


#: Cases whose missing references are computed together (``ReferenceSource.prefetch``): with
#: ``--pack``, a block's requests compile into a few programs; the progress bar moves per case.
PREFETCH_BLOCK: Final = 64


def _run_cases(cases: Sequence[Case], seed: int, source: store.ReferenceSource,
               done: Callable[[CaseResult], None] | None = None) -> list[CaseResult]:  # fmt: skip
    """Run ``cases`` in blocks: prepare a block, fetch what it misses at once, then check each case."""
    results: list[CaseResult] = []
    for start in range(0, len(cases), PREFETCH_BLOCK):
        block = cases[start : start + PREFETCH_BLOCK]
        preps: dict[str, Prepared] = {}
        for case in block:
            with contextlib.suppress(Exception):  # run_case reports what fails here, on its case
                preps[case.id] = prepare(case, seed)
        try:
            source.prefetch(list(preps.values()))
        except Exception as err:  # the block's cases then fetch their own (a sweep bug; said once)
            print(f"parity: fetching a block of references failed ({type(err).__name__}: {err}); "
                  "fetching them case by case", file=sys.stderr)  # fmt: skip
        for case in block:
            result = run_case(case, seed, source, preps.get(case.id))
            results.append(result)
            if done is not None:
                done(result)
    return results


def _duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``: a duration for the progress bar."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def stream_width(stream: TextIO | None) -> int:
    """The columns of the terminal ``stream`` writes to: ``$COLUMNS`` first, as
    ``shutil.get_terminal_size`` does, then the terminal's own size, else 80."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(stream.fileno()).columns if stream is not None else 80  # type: ignore[union-attr]
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return 80


class Progress:
    """A progress bar on a stream (a line per 10% when it is not a terminal): cases done,
    failures, the time so far, cases per second and the time left at that rate."""

    def __init__(self, total: int, stream: TextIO | None = sys.stderr, width: int = 30) -> None:
        self.total = max(total, 1)
        self.stream = stream
        self.width = width
        self.start = time.monotonic()
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self.columns = stream_width(stream) if self.tty else 0
        self._last_tenth = -1
        self._last_draw = 0.0

    def status(self, done: int, failed: int, now: float | None = None) -> str:
        """``43/86 cases, 0 failed, 12s, 3.6 cases/s, 12s left`` (no rate before the first case)."""
        elapsed = (time.monotonic() if now is None else now) - self.start
        text = f"{done}/{self.total} cases, {failed} failed, {_duration(elapsed)}"
        if done and elapsed > 0:
            rate = done / elapsed
            text += f", {rate:.1f} cases/s" if rate < 100 else f", {rate:.0f} cases/s"
            if done < self.total:
                text += f", {_duration((self.total - done) / rate)} left"
        return text

    def update(self, done: int, failed: int) -> None:
        """Show ``done`` of ``total`` cases (redrawn at most every 0.1 s on a terminal)."""
        if self.stream is None:
            return
        frac = done / self.total
        now = time.monotonic()
        if self.tty:
            if now - self._last_draw < 0.1 and done < self.total:
                return
            self._last_draw = now
            text = self.status(done, failed, now)
            # the bar takes what the text leaves of the terminal's width (none on a narrow one)
            width = min(self.width, self.columns - len(text) - 4)
            if width >= 5:
                fill = int(frac * width)
                line = f"[{'#' * fill}{'.' * (width - fill)}] {text}"
            else:
                line = text[: max(self.columns - 1, 1)]
            self.stream.write(f"\r{line}\x1b[K")  # (erase what a longer line left)
            if done >= self.total:
                self.stream.write("\n")
        else:
            tenth = int(frac * 10)
            if tenth == self._last_tenth:
                return
            self._last_tenth = tenth
            self.stream.write(f"parity: {self.status(done, failed, now)}\n")
        self.stream.flush()


def _cases_for(options: Options) -> list[Case]:
    """The case list of a run (each process builds it once; it is deterministic). Replaying an
    oracle, the oracle's own selection, narrowed by ``--ops``."""
    # keyed by the selection alone: choosing the workers or the store must not build it again
    return _selected(replace(options, jobs=1, strict=False, compile_cache="", store="", refresh=False,
                             save_oracle="", release_above_mb=0.0, pack=False))  # fmt: skip


@functools.lru_cache(maxsize=2)
def _selected(options: Options) -> list[Case]:
    if options.shard is not None:
        selection = _cases_for(replace(options, shard=None))
        return [selection[i] for i in shards.shard_indices(selection, options.shard)]
    if options.oracle:
        made = _oracle_options(options.oracle)
        cases = build_cases(made.policies, made.ops, made.dtypes, made.seed, made.quick)
        held = _oracle_cases(options.oracle)  # (a shard's database holds part of its selection)
        return [c for c in cases if c.id in held and _matches(c.spec, options.ops) and c.policy in options.policies]
    return build_cases(options.policies, options.ops, options.dtypes, options.seed, options.quick)


@functools.lru_cache(maxsize=2)
def _oracle_cases(root: str) -> frozenset[str]:
    """The ids of the cases an oracle database holds (its manifest's)."""
    return frozenset(store.read_manifest(root)["cases"])


@functools.lru_cache(maxsize=2)
def _oracle_options(root: str) -> Options:
    """The selection an oracle database was made from (its manifest's)."""
    sel = store.read_manifest(root)["selection"]
    return Options(tuple(sel["policies"]), tuple(sel["ops"]), tuple(dt.dtype(d) for d in sel["dtypes"]),
                   int(sel["seed"]), bool(sel["quick"]))  # fmt: skip


def _run_shard(options: Options, indices: Sequence[int]) -> list[CaseResult]:
    """Worker entry point: rebuild the (deterministic) case list and run a shard of it."""
    cases = _cases_for(options)
    return _run_cases([cases[i] for i in indices], options.seed, _source(options))


def run_parity(options: Options, progress: TextIO | None = sys.stderr) -> Report:
    """Run the sweep and return its report."""
    start = time.monotonic()
    cases = _cases_for(options)
    bar = Progress(len(cases), progress)
    results: list[CaseResult] = []
    bar.update(0, 0)
    if options.jobs > 1 and len(cases) > 1:
        try:
            results = _run_parallel(options, cases, bar)
        except (OSError, RuntimeError) as err:  # no worker processes here (a sandbox, a broken pool)
            print(f"parity: worker processes failed ({err}); running in this process", file=sys.stderr)
            results = []
    if not results:
        counts = [0, 0]  # cases done, failed

        def done(r: CaseResult) -> None:
            counts[0] += 1
            counts[1] += r.status == "failed"
            bar.update(counts[0], counts[1])

        results = _run_cases(cases, options.seed, _source(options), done)
    if options.save_oracle:
        selection = {"policies": list(options.policies), "ops": list(options.ops),
                     "dtypes": [d.name for d in options.dtypes], "seed": options.seed,
                     "quick": options.quick}  # fmt: skip
        whole = _cases_for(replace(options, shard=None)) if options.shard is not None else cases
        store.RecordDir(options.save_oracle).add_to_manifest(
            store.oracle_manifest(selection, [c.id for c in cases], options.seed), [c.id for c in whole]
        )
    return Report(results, options.seed, options.quick, options.policies, time.monotonic() - start, options.strict)


def _run_parallel(options: Options, cases: Sequence[Case], bar: Progress) -> list[CaseResult]:
    """Each spec's cases (every policy) go to one worker, largest groups first: JAX compiles
    once per primitive signature and process, and a spec's cases share their signatures."""
    import concurrent.futures
    import multiprocessing

    groups: dict[str, list[int]] = {}
    for i, case in enumerate(cases):
        groups.setdefault(case.spec.name, []).append(i)
    shards = sorted(groups.values(), key=len, reverse=True)
    if options.pack:  # packing pays per program: give each worker blocks of many specs' cases
        shards = _merged(shards, max(PREFETCH_BLOCK // 2, len(cases) // (4 * options.jobs)))
    results: dict[int, CaseResult] = {}
    done = failed = 0
    # spawn, not fork: JAX's runtime threads do not survive a fork.
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(options.jobs, mp_context=ctx) as pool:
        futures = {pool.submit(_run_shard, options, shard): shard for shard in shards}
        for fut in concurrent.futures.as_completed(futures):
            for i, r in zip(futures[fut], fut.result(), strict=True):
                results[i] = r
                failed += r.status == "failed"
            done += len(futures[fut])
            bar.update(done, failed)
    return [results[i] for i in range(len(cases))]


def _merged(groups: Sequence[list[int]], size: int) -> list[list[int]]:
    """Consecutive groups joined until each holds at least ``size`` cases (the last may hold fewer)."""
    out: list[list[int]] = []
    for group in groups:
        if out and len(out[-1]) < size:
            out[-1] = out[-1] + group
        else:
            out.append(list(group))
    return out


def add_parser(sub: Any) -> None:
    """Register ``castwise parity`` on the CLI's subparsers."""
    p = sub.add_parser(
        "parity",
        help="sweep ops x dtypes x operand orders x active sets against JAX (primal, replay, JVP, VJP)",
        description="Compare castwise with JAX on every op of the vocabulary; exit 1 on any failure.",
    )
    p.add_argument("--policy", dest="policies", nargs="+", action="extend", metavar="P",
                   help=f"promotion policies to sweep (default: {' '.join(DEFAULT_POLICIES)})")  # fmt: skip
    p.add_argument("--ops", default="*", metavar="PATTERN",
                   help="comma-separated glob patterns over op names, sweep ids and families "
                   "(e.g. 'add,dot_*,unary')")  # fmt: skip
    p.add_argument("--dtypes", default=None, metavar="LIST",
                   help="comma-separated dtypes (names or short names; 'core', 'float8', 'narrow-int'); a case runs "
                   "when all its dtypes are listed (default: core + float8 + narrow-int)")  # fmt: skip
    p.add_argument("--seed", type=int, default=None, metavar="N",
                   help="seed of the inputs and sampled dtype pairs, 0 or more (default 0)")  # fmt: skip
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"a stratified sample: {QUICK_CASES} // (number of op specs) cases per spec, a few hundred",
    )
    p.add_argument("--json", dest="json_file", metavar="FILE", help="write the full report as JSON")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="worker processes; 0 (the default, or $CASTWISE_PARITY_JOBS): one per CPU, at most 4, "
                   "for runs of 200 cases or more, none for smaller runs")  # fmt: skip
    p.add_argument(
        "--markdown",
        dest="markdown_file",
        metavar="FILE",
        help="write the summary, unsupported combinations, departures and known failures as Markdown",
    )
    p.add_argument("--strict", action="store_true", help="count known failures (KNOWN_FAILURES) as failures")
    p.add_argument("--compile-cache", metavar="DIR", default=None,
                   help="JAX's persistent compilation cache, kept between runs and shared by the workers "
                   "(default: $CASTWISE_PARITY_CACHE, else castwise/parity-xla in the user's cache "
                   "directory)")  # fmt: skip
    p.add_argument("--no-compile-cache", action="store_true", help="compile every JAX executable afresh")
    p.add_argument("--max-failures", type=int, default=10, metavar="N", help="failures printed in full (default 10)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--shard", metavar="K/N", default=None,
                   help="run shard K of N (1 to N) of the selected cases, balanced by expected cost, for a CI "
                   "matrix; --merge combines the shards' --json reports")  # fmt: skip
    p.add_argument("--merge", nargs="+", metavar="JSON", default=None,
                   help="print (and --json/--markdown write) the report of the whole run from its shards' "
                   "--json reports, with its exit status; runs nothing")  # fmt: skip
    p.add_argument("--no-store", action="store_true",
                   help="neither read nor write the reference store (JAX's references kept between runs in "
                   "$CASTWISE_PARITY_STORE, else castwise/parity-refs in the user's cache directory)")  # fmt: skip
    p.add_argument("--refresh", action="store_true", help="recompute every JAX reference and rewrite the store's")
    p.add_argument("--no-pack", action="store_true",
                   help="compute JAX's references case by case, op by op, instead of packing many cases' into a "
                   "few compiled programs where packing is known to give the same bits (docs/parity.md)")  # fmt: skip
    p.add_argument("--save-oracle", metavar="DIR", default=None,
                   help="also write every case's inputs and references to the oracle database DIR "
                   "(docs/parity.md: the format)")  # fmt: skip
    p.add_argument("--oracle", metavar="DIR", default=None,
                   help="replay the oracle database DIR instead of asking JAX (JAX need not be installed); "
                   "its own selection of cases, narrowed by --ops")  # fmt: skip
    p.set_defaults(func=cmd_parity)


def _cpus() -> int:
    """CPUs this process may run on (the affinity mask where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


class _UsageError(Exception):
    """A bad ``castwise parity`` argument: one line, exit status 2."""


def _hint(word: str, names: Sequence[str]) -> str:
    from autodiff.suggest import did_you_mean

    hint = did_you_mean(word, names)
    return f"; {hint}" if hint else ""


def _policies(args: Any) -> tuple[str, ...]:
    import runtime

    policies = tuple(args.policies) if args.policies else DEFAULT_POLICIES
    known = runtime.policies()
    for p in policies:
        if p not in known:
            raise _UsageError(f"unknown policy {p!r}{_hint(p, known)} (the policies: {', '.join(known)})")
    return policies


def _dtypes(text: str | None) -> tuple[DType, ...]:
    try:
        return parse_dtypes(text)
    except TypeError:
        groups = ("core", "float8", "narrow-int", "all")
        names = [*groups, *(n for d in dt.ALL_DTYPES for n in (d.short, d.name))]
        for item in (t.strip() for t in (text or "").split(",")):
            if item and item not in groups:
                try:
                    dt.dtype(item)
                except TypeError:
                    hint = _hint(item, names) or f" (dtype names such as f32 or float32, or {', '.join(groups)})"
                    raise _UsageError(f"--dtypes: unknown dtype {item!r}{hint}") from None
        raise


def _patterns(text: str) -> tuple[str, ...]:
    """``--ops``: every pattern must name something (an op, a sweep spec or a family)."""
    from autodiff.parity.cases import build_specs

    patterns = tuple(p.strip() for p in text.split(",") if p.strip())
    if not patterns:
        raise _UsageError(f"no cases match --ops {text!r}: give op names, sweep specs or families ('add,unary')")
    specs = build_specs()
    names = sorted({n for s in specs for n in (s.name, s.op, s.family)})
    families = sorted({s.family for s in specs})
    for p in patterns:
        if not any(fnmatch.fnmatchcase(n, p) for n in names):
            hint = _hint(p, names) or f"; the families: {', '.join(families)}"
            raise _UsageError(f"no cases match --ops {p!r}: no op, sweep spec or family is named so{hint}")
    return patterns


def _jobs(value: int | None) -> int:
    """``--jobs``: 0 (choose: one per CPU, at most 4, for runs of 200 cases or more) or a count."""
    if value is None:
        env = os.environ.get("CASTWISE_PARITY_JOBS", "").strip()
        if not env:
            return 0
        try:
            value = int(env)
        except ValueError:
            raise _UsageError(f"$CASTWISE_PARITY_JOBS must be a whole number (0: choose), got {env!r}") from None
        flag = "$CASTWISE_PARITY_JOBS"
    else:
        flag = "--jobs"
    if value < 0:
        raise _UsageError(f"{flag} takes 0 (one worker per CPU, at most 4, for runs of 200 cases or more) "
                          f"or a number of workers, got {value}")  # fmt: skip
    return value


def _writable(flag: str, path: str) -> None:
    """Refuse an output path that could not be written, before the sweep rather than after it."""
    where = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise _UsageError(f"{flag} {path}: is a directory; give a file name")
    if not os.path.isdir(where):
        raise _UsageError(f"{flag} {path}: no such directory {where}")
    if not os.access(where, os.W_OK | os.X_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise _UsageError(f"{flag} {path}: not writable")


def _options(args: Any) -> Options:
    """The run ``args`` ask for, every argument checked (nothing heavy imported yet: not JAX)."""
    policies = _policies(args)
    dtypes = _dtypes(args.dtypes)
    patterns = _patterns(args.ops)
    jobs = _jobs(args.jobs)
    seed = 0 if args.seed is None else args.seed
    if seed < 0:
        raise _UsageError(f"--seed takes 0 or more, got {seed}")
    if args.max_failures < 0:
        raise _UsageError(f"--max-failures takes 0 or more, got {args.max_failures}")
    for flag, path in (("--json", args.json_file), ("--markdown", args.markdown_file)):
        if path:
            _writable(flag, path)
    try:
        shard = shards.parse_shard(args.shard) if args.shard is not None else None
    except ValueError as err:
        raise _UsageError(str(err)) from None
    cache = "" if args.no_compile_cache else (args.compile_cache or default_compile_cache())
    oracle = getattr(args, "oracle", None) or ""
    save = getattr(args, "save_oracle", None) or ""
    refresh = bool(getattr(args, "refresh", False))
    if oracle and (save or refresh):
        raise _UsageError(f"--oracle replays {oracle} and asks JAX nothing: "
                          f"{'--save-oracle' if save else '--refresh'} has nothing to do with it")  # fmt: skip
    if save:
        _writable_dir("--save-oracle", save)
    base = "" if getattr(args, "no_store", False) else store.store_base()
    options = Options(policies, patterns, dtypes, seed, args.quick, jobs, args.strict, cache, shard,
                      base, refresh, os.path.abspath(oracle) if oracle else "",
                      os.path.abspath(save) if save else "", store.RELEASE_ABOVE_MB,
                      pack=not getattr(args, "no_pack", False))  # fmt: skip
    if oracle:
        try:
            made = _oracle_options(options.oracle)
        except (store.OracleError, KeyError, ValueError, TypeError) as err:
            raise _UsageError(f"--oracle: {err}") from None
        _replay_conflicts(args, made)
        narrowed = tuple(p for p in made.policies if p in policies) if args.policies else made.policies
        options = replace(options, policies=narrowed, dtypes=made.dtypes, seed=made.seed, quick=made.quick,
                          store="", compile_cache="")  # fmt: skip
    return options


def _replay_conflicts(args: Any, made: Options) -> None:
    """Refuse a selection flag that asks a replay for cases the database was not made with.

    A database holds one seed's inputs of one selection: a different ``--seed``, ``--quick`` on a
    full database, other ``--dtypes`` or a policy it lacks would silently replay something else.
    ``--policy`` and ``--ops`` may narrow the replay to part of what it holds."""
    where = f"--oracle {args.oracle}"
    if args.seed is not None and args.seed != made.seed:
        raise _UsageError(f"{where} holds seed {made.seed}'s inputs; --seed {args.seed} cannot be replayed from it")
    if args.quick and not made.quick:
        raise _UsageError(f"{where} holds a full sweep; --quick samples other inputs: replay it without --quick")
    if args.dtypes is not None:
        raise _UsageError(f"{where} replays the dtypes it was made with "
                          f"({','.join(d.short for d in made.dtypes)}): --dtypes does not apply")  # fmt: skip
    missing = [p for p in (args.policies or ()) if p not in made.policies]
    if missing:
        raise _UsageError(f"{where} holds policies {' '.join(made.policies)}; --policy {' '.join(missing)} "
                          "is not among them")  # fmt: skip


def _writable_dir(flag: str, path: str) -> None:
    """Refuse a database directory that could not be written, before the sweep."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise _UsageError(f"{flag} {path}: not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as err:
        raise _UsageError(f"{flag} {path}: cannot create it ({err.strerror})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise _UsageError(f"{flag} {path}: not writable")


def _without_record(options: Options, cases: Sequence[Case]) -> int:
    """How many of ``cases`` have no record in the store (each is a JAX computation, unless its
    record turns out to be for other inputs; a cheap estimate, by file name)."""
    if not options.store or options.refresh:
        return len(cases)
    records = store.store_dir(options.store, options.seed)
    return sum(not os.path.exists(records.path(c.id)) for c in cases)


def _jax_installed() -> bool:
    """Whether JAX can be imported (found without importing it: a store-filled run never does)."""
    try:
        return importlib.util.find_spec("jax") is not None and sys.modules.get("jax", True) is not None
    except (ImportError, ValueError):
        return False


def cmd_parity(args: Any) -> int:
    """``castwise parity``: check the arguments, run, print the report, write JSON; 1 on any failure."""
    if args.merge:
        return _cmd_merge(args)
    try:
        options = _options(args)
    except _UsageError as err:
        print(f"castwise parity: {err}", file=sys.stderr)
        return 2
    # XLA's C++ log lines (argmax of int2: "RET_CHECK failure ... reduce_decomposer.cc:95") duplicate
    # the errors JAX raises, which the report gives on their cases (unsupported: JAX's message in
    # --json): raw logs are not a report. Set before JAX loads (workers inherit it); a user's own wins.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if not options.oracle and not _jax_installed():
        print("castwise parity: JAX is needed: pip install 'castwise[jax]' (or replay an oracle database: "
              "--oracle DIR)", file=sys.stderr)  # fmt: skip
        return 2
    n_cases = len(_cases_for(options))
    selected = len(_cases_for(replace(options, shard=None))) if options.shard else n_cases
    if not selected:
        print(f"castwise parity: no cases match --ops {args.ops!r} and --dtypes {args.dtypes!r}", file=sys.stderr)
        return 2
    if options.jobs == 0:
        # Each worker imports JAX and compiles its own primitives (seconds): small runs stay in process,
        # and so do runs whose references are on disk (an oracle, the store's records), which ask JAX nothing.
        to_compute = 0 if options.oracle else _without_record(options, _cases_for(options))
        options = replace(options, jobs=1 if to_compute < 200 else min(_cpus(), 4))
    report = run_parity(options, None if args.no_progress else sys.stderr)
    report.shard = {"k": 1, "n": 1, "selected": selected, "ops": list(options.ops),
                    "dtypes": [d.name for d in options.dtypes]}  # fmt: skip
    if options.shard:
        k, n = options.shard
        report.shard.update(k=k, n=n)
        report.indices = shards.shard_indices(_cases_for(replace(options, shard=None)), options.shard)
        print(f"shard {k}/{n}: {n_cases} of the {selected} selected cases "
              "(castwise parity --merge combines the shards' --json reports)")  # fmt: skip
    return _write_report(args, report)


def _cmd_merge(args: Any) -> int:
    """``castwise parity --merge A.json B.json ...``: the whole run's report from its shards' (no JAX)."""
    try:
        given = shards.merge_conflicts(args)
        if given:
            raise _UsageError(f"--merge combines the shards' reports and runs nothing: {', '.join(given)} "
                              "belong to the shards' own runs")  # fmt: skip
        if args.max_failures < 0:
            raise _UsageError(f"--max-failures takes 0 or more, got {args.max_failures}")
        for flag, path in (("--json", args.json_file), ("--markdown", args.markdown_file)):
            if path:
                _writable(flag, path)
        report = shards.merge_reports([(p, shards.load_report(p)) for p in args.merge], args.strict)
    except (_UsageError, shards.MergeError) as err:
        print(f"castwise parity: {err}", file=sys.stderr)
        return 2
    return _write_report(args, report)


def _write_report(args: Any, report: Report) -> int:
    """Print the report, write its JSON and Markdown; 1 on any failure."""
    print(report.render(args.max_failures, width=terminal_width()))
    if args.json_file:
        with open(args.json_file, "w") as fh:
            write_json(report.to_json(), fh)
    if args.markdown_file:
        text = markdown(report)
        if os.path.exists(args.markdown_file):  # a page with a generated block (docs/parity.md): that block
            with open(args.markdown_file) as fh:
                text = splice_markdown(fh.read(), text) or text
        with open(args.markdown_file, "w") as fh:
            fh.write(text)
    return 0 if report.ok else 1
