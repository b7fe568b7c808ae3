"""JAX's references on disk: the reference store and the portable oracle database.

Both are one format, a directory of *records*: one file per case holding the case's inputs,
tangents and cotangents, and every reference the checks read (each request's arguments
and JAX's outputs, or its refusal), with dtypes, shapes, weak flags and raw bytes, so that
every ml_dtypes format round-trips exactly. ``manifest.json`` holds the format version and
the provenance. docs/parity.md describes the format field by field.

- The **store** is such a directory per environment under the user's cache directory
  (``$CASTWISE_PARITY_STORE``, else ``$XDG_CACHE_HOME`` or ``~/.cache``, then
  ``castwise/parity-refs``), named by a hash of the jax, jaxlib, numpy and ml_dtypes
  versions, the format version, the sweep's reference code and the seed. A record is used
  only when its inputs hash (every request's key and argument bytes, and castwise's plan
  for the case) equals the case's, so a changed input is recomputed, never trusted.
- An **oracle** (``castwise parity --save-oracle DIR``) is the same records written to
  ``DIR``; ``castwise parity --oracle DIR`` replays them without JAX, and ``load_oracle``
  yields them as ``OracleCase``s for another autodiff system's own suite.

A record is written to a temporary file in its directory and moved into place with
``os.replace``, so the sweep's workers and two sweeps at once never see a partial one, and
its header carries the body's length and SHA-256: a corrupt or truncated record is
detected, reported in one line naming the file, and recomputed (the store) or failed on
(an oracle).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib.metadata
import json
import os
import platform
import re
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

import numpy as np

from autodiff.parity._common import Case, _planned, slot_name
from autodiff.parity.references import Outcome, Prepared, Request, evaluate_eager
from runtime.core import dtypes as dt
from runtime.core.errors import CastwiseError
from runtime.core.promotion import PromotionError

#: The record format: bump on any change to what a record holds or how it is encoded.
FORMAT: Final = "castwise-parity-oracle"
FORMAT_VERSION: Final = 1
_MAGIC: Final = b"castwise-parity-record"
MANIFEST: Final = "manifest.json"


class OracleError(CastwiseError, ValueError):
    """An oracle database or store record that cannot be used (missing, corrupt, stale)."""


# -- values ---------------------------------------------------------------------------------------------


def encode_value(x: Any) -> dict[str, Any]:
    """A NumPy array as its castwise dtype name, shape and raw bytes (base64), or a Python
    scalar (weakly typed in JAX) as its kind and value."""
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        kind = type(x).__name__
        value: Any = [x.real, x.imag] if isinstance(x, complex) else x
        return {"weak": True, "kind": kind, "value": value}
    a = np.asarray(x)  # (not ascontiguousarray, which makes a 0-d array 1-d; tobytes is C order)
    return {"weak": False, "dtype": dt.dtype(a.dtype).name, "shape": list(a.shape),
            "data": base64.b64encode(a.tobytes()).decode("ascii")}  # fmt: skip


def decode_value(v: Mapping[str, Any]) -> Any:
    """The value ``encode_value`` wrote, bit for bit."""
    if v["weak"]:
        kind, value = v["kind"], v["value"]
        if kind == "complex":
            return complex(value[0], value[1])
        return {"bool": bool, "int": int, "float": float}[kind](value)
    storage = dt.dtype(v["dtype"]).storage
    raw = base64.b64decode(v["data"])
    return np.frombuffer(raw, dtype=storage).reshape(v["shape"]).copy()


def _digest_value(h: Any, x: Any) -> None:
    """Feed a value (dtype, shape, weak flag, bytes) into hash ``h``."""
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        h.update(f"weak {type(x).__name__} {x!r};".encode())
        return
    a = np.asarray(x)
    h.update(f"{a.dtype.name} {a.shape};".encode())
    h.update(a.tobytes())


def _plan_context(case: Case) -> str:
    """castwise's plan for the case: JAX's reference under a non-jax policy applies it."""
    try:
        return ",".join(d.name for d in _planned(case)) if case.spec.arity else ""
    except PromotionError as err:
        return f"refused: {err}"


def inputs_hash(prep: Prepared) -> str:
    """What decides a case's references besides the versions: every request's key and
    arguments, and castwise's plan for the case."""
    h = hashlib.sha256()
    h.update(f"{prep.case.id}|{prep.seed}|{_plan_context(prep.case)}|{prep.plan_refusal}|".encode())
    for req in prep.requests:
        h.update(f"{req.key}|{len(req.args)}|".encode())
        for a in req.args:
            _digest_value(h, a)
    return h.hexdigest()


def _what(req: Request, case: Case) -> str:
    return req.key[len(case.id) + 1 :] if req.key.startswith(case.id + "/") else req.key


# -- records ------------------------------------------------------------------------------------------------


def make_record(prep: Prepared, answers: Mapping[str, Outcome]) -> dict[str, Any]:
    """The record of a case: its inputs, tangents, cotangents and references."""
    case = prep.case
    refs = []
    for req in prep.requests:
        out = answers[req.key]
        refs.append({"key": req.key, "what": _what(req, case), "group": req.group,
                     "args": [encode_value(a) for a in req.args],
                     "outputs": None if out.arrays is None else [encode_value(a) for a in out.arrays],
                     "error": out.error})  # fmt: skip
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "case": case.id,
        "spec": case.spec.name,
        "op": case.spec.op,
        "family": case.spec.family,
        "policy": case.policy,
        "slots": [slot_name(s) for s in case.slots],
        "operand_names": list(case.spec.operand_names),
        "description": case.describe(),
        "seed": prep.seed,
        "inputs_sha256": inputs_hash(prep),
        "planned": _plan_context(case),
        "plan_refusal": prep.plan_refusal,
        "castwise_refusal": "" if prep.ours_err is None else f"{type(prep.ours_err).__name__}: {prep.ours_err}",
        "tolerance": _tolerance(prep, answers),
        "operands": [encode_value(x) for x in prep.operands],
        "tangents": {str(i): encode_value(t) for i, t in prep.tangents.items()},
        "cotangents": [encode_value(c) for c in prep.cts],
        "references": refs,
    }


def _tolerance(prep: Prepared, answers: Mapping[str, Outcome]) -> dict[str, Any]:
    """The tolerances the sweep holds this case to, in units of the narrowest float's epsilon."""
    from autodiff.parity.checks import _narrowest
    from autodiff.parity.runner import tolerance

    case = prep.case
    primal = answers.get(f"{case.id}/primal")
    outs = [dt.dtype(a.dtype) for a in (primal.arrays or ())] if primal is not None else []
    try:
        targets = _planned(case) if case.spec.arity else []
    except PromotionError:
        targets = []
    slots = [s for s in case.slots if isinstance(s, dt.DType)]
    narrow = _narrowest([*slots, *outs, *targets])
    if narrow is None:
        return {"dtype": None, "primal": 0.0, "derivative": 0.0}
    return {"dtype": narrow.name, "primal": tolerance(narrow, False), "derivative": tolerance(narrow, True)}


def encode_record(record: Mapping[str, Any]) -> bytes:
    """A record file: a header line (magic, format version, body length, body SHA-256), then the JSON body."""
    body = json.dumps(record, separators=(",", ":"), allow_nan=True).encode()
    digest = hashlib.sha256(body).hexdigest()
    return _MAGIC + f" {FORMAT_VERSION} {len(body)} {digest}\n".encode() + body


def decode_record(data: bytes, where: str) -> dict[str, Any]:
    """The record of a file's bytes; ``OracleError`` (naming ``where``) if it is not whole."""
    head, sep, body = data.partition(b"\n")
    parts = head.split(b" ")
    if not sep or len(parts) != 4 or parts[0] != _MAGIC:
        raise OracleError(f"{where}: not a record (bad header)")
    if parts[1] != str(FORMAT_VERSION).encode():
        raise OracleError(f"{where}: record format {parts[1].decode(errors='replace')}, this castwise reads "
                          f"{FORMAT_VERSION}")  # fmt: skip
    if len(body) != int(parts[2]):
        raise OracleError(f"{where}: truncated ({len(body)} of {int(parts[2])} bytes)")
    if hashlib.sha256(body).hexdigest().encode() != parts[3]:
        raise OracleError(f"{where}: checksum mismatch")
    try:
        record: dict[str, Any] = json.loads(body)
    except ValueError as err:
        raise OracleError(f"{where}: unreadable ({err})") from None
    return record


def _write_atomic(path: str, data: bytes) -> None:
    """Write ``path`` so that readers see the old file or the whole new one, never a part."""
    where = os.path.dirname(path)
    os.makedirs(where, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=where)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def record_name(case_id: str) -> str:
    """A case's record file, relative to the directory: by spec, a readable name and a CRC
    (the ids' brackets and commas are not safe file names everywhere)."""
    spec = case_id.split("[", 1)[0]
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", case_id).strip("_")
    return os.path.join("records", re.sub(r"[^A-Za-z0-9_.-]+", "_", spec),
                        f"{safe}-{zlib.crc32(case_id.encode()):08x}.rec")  # fmt: skip


def outcomes_of(record: Mapping[str, Any]) -> dict[str, Outcome]:
    """Each reference of a record as the ``Outcome`` the checks read."""
    out: dict[str, Outcome] = {}
    for ref in record["references"]:
        arrays = None if ref["outputs"] is None else tuple(decode_value(v) for v in ref["outputs"])
        out[ref["key"]] = Outcome(arrays, ref["error"])
    return out


class Answers(dict[str, Outcome]):
    """A case's outcomes, and the record they came from ("" when JAX computed them now)."""

    entry: str = ""


class RecordDir:
    """A directory of records: a store's environment directory or an oracle database."""

    def __init__(self, root: str) -> None:
        self.root = root

    def path(self, case_id: str) -> str:
        return os.path.join(self.root, record_name(case_id))

    def read(self, case_id: str) -> dict[str, Any] | None:
        """The record of ``case_id``; None if there is none; ``OracleError`` if it is not whole."""
        path = self.path(case_id)
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            return None
        record = decode_record(data, path)
        if record.get("case") != case_id:
            raise OracleError(f"{path}: holds case {record.get('case')!r}, not {case_id!r}")
        return record

    def load(self, prep: Prepared) -> Answers | None:
        """The case's outcomes if its record matches its inputs; None if there is no record or it
        is for other inputs; ``OracleError`` for a record that is not whole."""
        record = self.read(prep.case.id)
        if record is None or record.get("inputs_sha256") != inputs_hash(prep):
            return None
        answers = Answers(outcomes_of(record))
        if set(answers) != {r.key for r in prep.requests}:
            return None
        answers.entry = self.path(prep.case.id)
        return answers

    def save(self, prep: Prepared, answers: Mapping[str, Outcome]) -> None:
        _write_atomic(self.path(prep.case.id), encode_record(make_record(prep, answers)))

    def write_manifest(self, manifest: Mapping[str, Any]) -> None:
        _write_atomic(os.path.join(self.root, MANIFEST), json.dumps(manifest, indent=1).encode() + b"\n")

    def add_to_manifest(self, manifest: Mapping[str, Any], order: Sequence[str]) -> None:
        """Write ``manifest``, keeping the cases of a manifest already there for the same selection
        (another shard of the run saved into the same database), in ``order`` (the whole
        selection's). Locked, so that shards finishing at once do not drop each other's cases."""
        import fcntl  # (POSIX; the store's records need no lock: each is written atomically)

        os.makedirs(self.root, exist_ok=True)
        with open(os.path.join(self.root, MANIFEST + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            cases = set(manifest["cases"])
            try:
                earlier = read_manifest(self.root)
            except OracleError:
                earlier = None
            if earlier is not None and earlier.get("selection") == manifest["selection"]:
                cases |= set(earlier.get("cases", ()))
            self.write_manifest({**manifest, "cases": [c for c in order if c in cases]})


# -- provenance and where the store lives ---------------------------------------------------------------


def _version(dist: str) -> str:
    """An installed distribution's version, without importing it ("" when it is not installed)."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return ""


def provenance(seed: int) -> dict[str, Any]:
    """What produced the references: versions, platform, seed."""
    return {
        "jax": _version("jax"),
        "jaxlib": _version("jaxlib"),
        "numpy": np.__version__,
        "ml_dtypes": _version("ml_dtypes"),
        "castwise": _version("castwise") or "unreleased",
        "python": platform.python_version(),
        "platform": f"{sys.platform}-{platform.machine()}",
        "seed": seed,
    }


@cache
def _reference_code_hash() -> str:
    """A hash of the sweep's reference code (the case table, the JAX functions): an edited
    reference must not be answered from a store filled by the old one."""
    here = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for name in sorted(os.listdir(here)):
        if name.endswith(".py") and (name.startswith("cases") or name in ("_common.py", "references.py")):
            with open(os.path.join(here, name), "rb") as fh:
                h.update(name.encode() + b"\0" + fh.read())
    return h.hexdigest()[:16]


def store_base() -> str:
    """The store's directory: ``$CASTWISE_PARITY_STORE``, else ``castwise/parity-refs`` under the user's cache."""
    env = os.environ.get("CASTWISE_PARITY_STORE")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "castwise", "parity-refs")


def store_dir(base: str, seed: int) -> RecordDir:
    """The store's records for this environment and seed (its manifest written on first use)."""
    prov = provenance(seed)
    env = "|".join([FORMAT, str(FORMAT_VERSION), prov["jax"], prov["jaxlib"], prov["numpy"], prov["ml_dtypes"],
                    _reference_code_hash(), str(seed)])  # fmt: skip
    records = RecordDir(os.path.join(base, hashlib.sha256(env.encode()).hexdigest()[:20]))
    if not os.path.exists(os.path.join(records.root, MANIFEST)):
        records.write_manifest({"format": FORMAT, "version": FORMAT_VERSION, "kind": "store",
                                "reference_code": _reference_code_hash(), "provenance": prov})  # fmt: skip
    return records


# -- the oracle database, for a user's own suite ---------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    """One reference of an oracle case: what was asked of JAX and its answer."""

    #: ``primal``; ``jvp:I`` (operands ``I`` active, tangents after the operands in ``args``);
    #: ``vjp:I`` (cotangents after the operands; outputs: the cotangents of ``I`` in castwise's
    #: convention, ``conj(jax_vjp(conj(ct)))``); ``vmap:AXIS:I`` (operands ``I`` stacked on AXIS);
    #: ``lax`` (the jax.lax primitive where the reference is a jax.numpy function)
    what: str
    args: tuple[Any, ...]
    #: JAX's outputs, or None where JAX refused (``error``)
    outputs: tuple[np.ndarray, ...] | None
    error: str


@dataclass(frozen=True)
class OracleCase:
    """One case of an oracle database, as ``load_oracle`` yields it."""

    #: ``add[f32,py-float]@jax``: the spec, its slots (a dtype or a Python scalar kind per
    #: operand, then the dtype param of convert/iota/full) and the promotion policy
    id: str
    op: str
    spec: str
    policy: str
    slots: tuple[str, ...]
    description: str
    seed: int
    #: the primal operands: NumPy arrays (exact ml_dtypes values) or Python scalars (weak)
    operands: tuple[Any, ...]
    #: the tangent of each differentiable operand, by position
    tangents: Mapping[int, np.ndarray]
    #: one cotangent per output (castwise's convention; JAX's VJP is ``conj(vjp(conj(ct)))`` of it)
    cotangents: tuple[np.ndarray, ...]
    #: JAX's primal outputs, or None where JAX refuses the case (``error``: its message)
    outputs: tuple[np.ndarray, ...] | None
    error: str
    #: ``{"dtype", "primal", "derivative"}``: the narrowest float and the tolerances (fractions
    #: of ``max(1, max|expected|)``) the sweep compares in
    tolerance: Mapping[str, Any]
    references: tuple[Reference, ...]
    #: the record's file
    path: str


def read_manifest(root: str) -> dict[str, Any]:
    """An oracle's manifest; ``OracleError`` if ``root`` is not an oracle database this castwise reads."""
    path = os.path.join(root, MANIFEST)
    try:
        with open(path, "rb") as fh:
            manifest: dict[str, Any] = json.loads(fh.read())
    except FileNotFoundError:
        raise OracleError(f"{root}: not an oracle database (no {MANIFEST})") from None
    except ValueError as err:
        raise OracleError(f"{path}: unreadable ({err})") from None
    if manifest.get("format") != FORMAT or manifest.get("version") != FORMAT_VERSION:
        raise OracleError(f"{path}: format {manifest.get('format')!r} version {manifest.get('version')!r}; "
                          f"this castwise reads {FORMAT!r} version {FORMAT_VERSION}")  # fmt: skip
    return manifest


def oracle_case(record: Mapping[str, Any], path: str) -> OracleCase:
    """An ``OracleCase`` from a record."""
    refs = tuple(
        Reference(r["what"], tuple(decode_value(a) for a in r["args"]),
                  None if r["outputs"] is None else tuple(decode_value(v) for v in r["outputs"]), r["error"])
        for r in record["references"]
    )  # fmt: skip
    primal = next((r for r in refs if r.what == "primal"), None)
    outputs = primal.outputs if primal is not None else None
    error = primal.error if primal is not None else record["plan_refusal"]
    return OracleCase(record["case"], record["op"], record["spec"], record["policy"], tuple(record["slots"]),
                      record["description"], record["seed"], tuple(decode_value(v) for v in record["operands"]),
                      {int(i): decode_value(v) for i, v in record["tangents"].items()},
                      tuple(decode_value(v) for v in record["cotangents"]), outputs, error, record["tolerance"],
                      refs, path)  # fmt: skip


def load_oracle(root: str) -> Iterator[OracleCase]:
    """The cases of the oracle database at ``root``, in the sweep's order (``OracleError`` for a
    missing, corrupt or truncated record, naming it)."""
    manifest = read_manifest(root)
    records = RecordDir(root)
    for case_id in manifest["cases"]:
        record = records.read(case_id)
        if record is None:
            raise OracleError(f"{records.path(case_id)}: missing (the manifest lists case {case_id})")
        yield oracle_case(record, records.path(case_id))


def oracle_manifest(options: Mapping[str, Any], case_ids: Sequence[str], seed: int) -> dict[str, Any]:
    """The manifest of an oracle database: format, provenance, the selection it was made from, its cases."""
    return {"format": FORMAT, "version": FORMAT_VERSION, "kind": "oracle", "provenance": provenance(seed),
            "selection": dict(options), "cases": list(case_ids)}  # fmt: skip


# -- where a sweep's references come from ---------------------------------------------------------------------


#: A worker past this resident size (MB) drops JAX's compiled executables (kept for the life of
#: the process otherwise), and again only after growing this much more, so that a worker whose
#: floor is above the limit does not recompile after every case.
RELEASE_ABOVE_MB: Final = 1000.0
RELEASE_GROWTH_MB: Final = 300.0
#: the resident size after this process's last release
_released_at: list[float] = [0.0]


def rss_mb() -> float:
    """The process's resident memory now, in MB (Linux; the peak elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024 if sys.platform != "darwin" else 2**20)


def release_memory() -> None:
    """Drop what JAX compiled and hand the freed heap back to the system (glibc)."""
    import ctypes
    import ctypes.util
    import gc

    jax = sys.modules.get("jax")
    if jax is None:
        return
    jax.clear_caches()
    gc.collect()
    name = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
    if name:
        ctypes.CDLL(name).malloc_trim(0)


class ReferenceSource:
    """A sweep's references: an oracle's records, else the store's, else JAX (kept in the store).

    Called with a prepared case, it returns the outcome of each of its requests (an
    ``Answers``, naming the record it came from). JAX is imported, and its persistent
    compilation cache set up, only when a reference has to be computed.
    """

    def __init__(self, seed: int, store: str = "", refresh: bool = False, oracle: str = "",
                 save_oracle: str = "", compile_cache: str = "", warn: Any = None,
                 evaluate: Callable[[Sequence[Request]], list[Outcome]] | None = None,
                 release_above_mb: float = 0.0) -> None:  # fmt: skip
        self.store = store_dir(store, seed) if store and not oracle else None
        self.refresh = refresh
        self.oracle = RecordDir(oracle) if oracle else None
        self.save_to = RecordDir(save_oracle) if save_oracle else None
        self.compile_cache = compile_cache
        #: how references are computed: ``evaluate_eager`` unless another evaluator (one that packs
        #: many requests into a few compiled programs) is given
        self.evaluate = evaluate
        self.warn = warn if warn is not None else (lambda line: print(line, file=sys.stderr, flush=True))
        self.computed = 0
        self._jax_ready = False
        #: past this resident size (MB), drop JAX's executables (0: never)
        self.release_above_mb = release_above_mb
        #: answers ``prefetch`` found or computed, by case id, until the case asks for them
        self._prefetched: dict[str, Answers] = {}

    def prefetch(self, preps: Sequence[Prepared]) -> None:
        """Compute, in one call of the evaluator, the references of every case of ``preps`` that
        neither the oracle nor the store answers: a packing evaluator then compiles a few
        programs for all of them instead of a few per case. Each case's later call gets them."""
        if self.oracle is not None:
            return
        missing = []
        for prep in preps:  # each record read once: a hit waits here for its case's call too
            hit = self._stored(prep)
            if hit is not None:
                self._prefetched[prep.case.id] = hit
            elif prep.requests:
                missing.append(prep)
        if not missing:
            return
        requests = [r for p in missing for r in p.requests]
        outcomes = iter(self._evaluate(requests))
        for prep in missing:
            answers = Answers((r.key, next(outcomes)) for r in prep.requests)
            if self.store is not None:
                self.store.save(prep, answers)
            self._prefetched[prep.case.id] = answers

    def _stored(self, prep: Prepared) -> Answers | None:
        """The store's record of the case (None when there is none, or it is not to be used);
        a bad record is said once, in one line, and counts as none: it is recomputed."""
        if self.store is None or self.refresh:
            return None
        try:
            return self.store.load(prep)
        except OracleError as err:  # never trusted: said once, recomputed and rewritten
            self.warn(f"parity: store entry {err}; recomputing it")
            return None

    def __call__(self, prep: Prepared) -> Answers:
        answers = self._find(prep)
        if self.save_to is not None:
            self.save_to.save(prep, answers)
        return answers

    def _find(self, prep: Prepared) -> Answers:
        if self.oracle is not None:  # never computed: a record that does not hold is an error
            answers = self.oracle.load(prep)
            if answers is None:
                path = self.oracle.path(prep.case.id)
                why = "missing" if not os.path.exists(path) else "made from other inputs (seed, generator or plan)"
                raise OracleError(f"oracle entry {path}: {why}")
            return answers
        prefetched = self._prefetched.pop(prep.case.id, None)
        if prefetched is not None:
            return prefetched
        hit = self._stored(prep)
        if hit is not None:
            return hit
        answers = Answers(zip((r.key for r in prep.requests), self._evaluate(prep.requests), strict=True))
        if self.store is not None:
            self.store.save(prep, answers)
        return answers

    def _evaluate(self, requests: Sequence[Request]) -> list[Outcome]:
        if not self._jax_ready:
            if self.compile_cache:
                from autodiff.parity._common import use_compile_cache

                use_compile_cache(self.compile_cache)
            self._jax_ready = True
        outcomes = (self.evaluate or evaluate_eager)(requests)
        self.computed += len(requests)
        rss = rss_mb()
        # (per process, not per source: a process running many sweeps, a test session, releases
        # once it is past the limit and then only after growing again)
        if self.release_above_mb and rss > max(self.release_above_mb, _released_at[0] + RELEASE_GROWTH_MB):
            release_memory()
            _released_at[0] = rss_mb()
        return outcomes
