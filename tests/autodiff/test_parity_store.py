"""The reference store (``autodiff.parity.store``): JAX's references kept between runs.

A small sweep is run fresh, then again from the store: the second run asks JAX nothing and
its report equals the fresh one check for check. A wrong reference written into the store
(with a valid checksum) fails the sweep, and the failure names the record; corrupt and
truncated records are detected, reported in one line naming the file, and recomputed.
Two processes writing the same record while this one reads it never show a partial one.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import runtime as rt
from autodiff.parity import references, store
from autodiff.parity.cases import build_cases
from autodiff.parity.cli import Options, run_parity
from autodiff.parity.report import Report

#: a few cases with mixed dtypes, a Python scalar, bfloat16, a float8 format (and its refusals
#: mixed with bfloat16), complex numbers, several active sets and vmap rows
_OPS = ("add", "reduce_sum")
_DTYPES = (rt.float32, rt.bfloat16, rt.float8_e4m3fn, rt.complex64)


def _options(tmp: Path, **kw: Any) -> Options:
    return Options(policies=("jax",), ops=_OPS, dtypes=_DTYPES, jobs=1, store=str(tmp), **kw)


def _checks(report: Report) -> list[Any]:
    """Everything a report says about each case, but its CPU time and where the references came from."""
    out = []
    for r in report.results:
        out.append((r.case_id, r.status, r.castwise_error, r.jax_error, r.departure,
                    [(c.check, c.ok, c.ratio, c.active, c.message, c.expected, c.got, c.known, c.departure)
                     for c in r.checks]))  # fmt: skip
    return out


def _same_dtype_case(op: str, dtype: rt.DType) -> Any:
    """The ``op[d,d]@jax`` case (the selection also holds its Python-scalar cases)."""
    return next(c for c in build_cases(("jax",), (op,), (dtype,)) if all(s is dtype for s in c.slots))


def _no_jax(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(requests: Any) -> Any:
        raise AssertionError(f"asked JAX for {requests[0].key}")

    monkeypatch.setattr(store, "evaluate_eager", refuse)


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Report]:
    """A store filled by one fresh run, and that run's report."""
    where = tmp_path_factory.mktemp("store")
    report = run_parity(_options(where), progress=None)
    return where, report


def test_a_filled_store_answers_everything_and_gives_the_fresh_report(
    filled: tuple[Path, Report], monkeypatch: pytest.MonkeyPatch
) -> None:
    where, fresh = filled
    assert fresh.ok, fresh.render()
    statuses = {r.status for r in fresh.results}
    assert {"ok", "unsupported"} <= statuses  # JAX's refusals (float8 with bfloat16) are stored too
    _no_jax(monkeypatch)
    again = run_parity(_options(where), progress=None)
    assert _checks(again) == _checks(fresh)
    assert any(c.check == "vjp" for r in again.results for c in r.checks)


def _record_dir(where: Path) -> store.RecordDir:
    return store.store_dir(str(where), 0)


def _rewrite(records: store.RecordDir, case_id: str, edit: Any) -> str:
    """Rewrite a record through ``edit`` (a valid checksum: only the values are wrong)."""
    record = records.read(case_id)
    assert record is not None
    edit(record)
    path = records.path(case_id)
    Path(path).write_bytes(store.encode_record(record))
    return path


def _wrong_primal(record: dict[str, Any]) -> None:
    ref = next(r for r in record["references"] if r["what"] == "primal")
    value = store.decode_value(ref["outputs"][0])
    ref["outputs"][0] = store.encode_value((value.astype(np.float64) + 1).astype(value.dtype))


def test_a_wrong_reference_in_the_store_fails_the_sweep_naming_the_record(tmp_path: Path) -> None:
    case = _same_dtype_case("add", rt.bfloat16)
    options = Options(policies=("jax",), ops=("add",), dtypes=(rt.bfloat16,), jobs=1, store=str(tmp_path))
    assert run_parity(options, progress=None).ok
    path = _rewrite(_record_dir(tmp_path), case.id, _wrong_primal)
    report = run_parity(options, progress=None)
    assert not report.ok
    (result,) = [r for r in report.results if r.status == "failed"]
    assert result.case_id == case.id and result.reference == path
    assert [c.check for c in result.checks if not c.ok] == ["primal"]
    assert f"reference: {path}" in report.render()
    assert report.to_json()["failures"][0]["reference"] == path
    # --refresh recomputes it: the sweep passes again and the record is JAX's once more
    assert run_parity(dataclasses.replace(options, refresh=True), progress=None).ok
    assert run_parity(options, progress=None).ok


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_a_corrupt_or_truncated_record_is_reported_and_recomputed(
    tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    case = _same_dtype_case("add", rt.float8_e4m3fn)
    options = Options(policies=("jax",), ops=("add",), dtypes=(rt.float8_e4m3fn,), jobs=1, store=str(tmp_path))
    fresh = run_parity(options, progress=None)
    records = _record_dir(tmp_path)
    path = Path(records.path(case.id))
    good = path.read_bytes()
    if damage == "flip":
        data = bytearray(good)
        data[len(data) // 2] ^= 0x01
        path.write_bytes(bytes(data))
    elif damage == "truncate":
        path.write_bytes(good[: len(good) * 2 // 3])
    else:
        path.write_bytes(b"not a record at all")
    capsys.readouterr()
    again = run_parity(options, progress=None)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "store entry" in line]
    assert len(lines) == 1 and str(path) in lines[0] and "recomputing" in lines[0], err
    assert _checks(again) == _checks(fresh)
    assert path.read_bytes() == good  # rewritten whole


def test_decode_record_names_what_is_wrong() -> None:
    data = store.encode_record({"case": "x", "references": []})
    assert store.decode_record(data, "here") == {"case": "x", "references": []}
    with pytest.raises(store.OracleError, match="here: truncated"):
        store.decode_record(data[:-3], "here")
    with pytest.raises(store.OracleError, match="here: checksum mismatch"):
        store.decode_record(data[:-1] + b"]", "here")
    with pytest.raises(store.OracleError, match="here: not a record"):
        store.decode_record(b"{}", "here")


def test_changed_inputs_are_recomputed_not_trusted(tmp_path: Path) -> None:
    case = _same_dtype_case("add", rt.float32)
    prep = references.prepare(case, 0)
    records = store.RecordDir(str(tmp_path))
    answers = store.Answers(zip((r.key for r in prep.requests), references.evaluate_eager(prep.requests), strict=True))
    records.save(prep, answers)
    hit = records.load(prep)
    assert hit is not None and hit.entry == records.path(case.id)
    assert all(np.array_equal(hit[k].arrays[0], answers[k].arrays[0]) for k in answers)  # type: ignore[index]
    other = references.prepare(case, 1)  # another seed: other inputs, other references
    assert records.load(other) is None


# -- two writers at once ---------------------------------------------------------------------------------


def _writer(root: str, case_id: str, payload: int, times: int) -> None:
    records = store.RecordDir(root)
    for _ in range(times):
        store._write_atomic(records.path(case_id), store.encode_record({"case": case_id, "payload": [payload] * 2000}))


def test_two_processes_writing_one_record_never_show_a_partial_one(tmp_path: Path) -> None:
    case_id = "add[f32,f32]@jax"
    ctx = multiprocessing.get_context("spawn")
    writers = [ctx.Process(target=_writer, args=(str(tmp_path), case_id, k, 80)) for k in (1, 2)]
    for w in writers:
        w.start()
    records = store.RecordDir(str(tmp_path))
    seen = set()
    while any(w.is_alive() for w in writers):
        record = records.read(case_id)  # raises OracleError on a partial record
        if record is not None:
            seen.add(record["payload"][0])
    for w in writers:
        w.join()
        assert w.exitcode == 0
    last = records.read(case_id)
    assert last is not None and seen | {last["payload"][0]} <= {1, 2}
    leftovers = [n for n in os.listdir(os.path.dirname(records.path(case_id))) if n.startswith(".tmp-")]
    assert leftovers == []


# -- the command line and the workers' memory ------------------------------------------------------------


def test_the_command_line_keeps_references_in_castwise_parity_store_unless_no_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from autodiff import cli

    monkeypatch.setenv("CASTWISE_PARITY_STORE", str(tmp_path / "refs"))
    argv = ["parity", "--ops", "add", "--policy", "jax", "--dtypes", "f32", "--no-progress"]
    assert cli.main([*argv, "--no-store"]) == 0
    assert not (tmp_path / "refs").exists()
    assert cli.main(argv) == 0
    recs = list((tmp_path / "refs").glob("*/records/add/*.rec"))
    assert "add_f32_f32_jax" in {p.name.rsplit("-", 1)[0] for p in recs}
    assert len(recs) == len(build_cases(("jax",), ("add",), (rt.float32,)))
    capsys.readouterr()
    assert cli.main([*argv, "--oracle", str(tmp_path), "--refresh"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("castwise parity: --oracle") and "--refresh" in err[0]


def test_a_worker_past_the_memory_limit_drops_jaxs_executables(monkeypatch: pytest.MonkeyPatch) -> None:
    released: list[int] = []
    monkeypatch.setattr(store, "release_memory", lambda: released.append(1))
    monkeypatch.setattr(store, "evaluate_eager", lambda requests: [])
    # the resident size after each evaluation (and, after a release, right after it)
    sizes = iter([500.0, 1200.0, 1100.0, 1300.0, 1600.0, 1500.0, 1700.0])
    monkeypatch.setattr(store, "rss_mb", lambda: next(sizes))
    monkeypatch.setattr(store, "_released_at", [0.0])
    assert store.ReferenceSource(0).release_above_mb == 0  # a library caller keeps its own memory policy
    source = store.ReferenceSource(0, release_above_mb=store.RELEASE_ABOVE_MB)
    counts = []
    for _ in range(5):
        source._evaluate([])
        counts.append(len(released))
    # 1200 is past the limit; 1300 is not 300 MB past the 1100 left after that release; 1600 is
    assert counts == [0, 1, 1, 2, 2]
