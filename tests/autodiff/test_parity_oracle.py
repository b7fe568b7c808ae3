"""The portable oracle database: ``castwise parity --save-oracle DIR`` / ``--oracle DIR`` and
``autodiff.parity.load_oracle``.

A small sweep (mixed dtypes, a Python scalar, bfloat16, a float8 format and its refusals,
2-bit ints) is saved as an oracle; it is replayed in a subprocess where ``import jax``
fails, and gives the same report; ``load_oracle`` yields its cases with the inputs bit for
bit as the sweep draws them and the outputs JAX computes now; a wrong reference written
into it fails the replay, naming the record.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import runtime as rt
from autodiff import cli
from autodiff.parity import _common, load_oracle, references, store
from autodiff.parity.cases import build_cases
from autodiff.parity.cli import Options, run_parity
from runtime.core.dtypes import ALL_DTYPES

_ARGS = ("--policy", "jax", "torch", "--ops", "add,reduce_max", "--dtypes", "f32,bf16,f8e4m3fn,int2", "--jobs", "1")
_ROOT = Path(__file__).resolve().parents[2]


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def _summary(text: str) -> list[str]:
    """The printed report without its time."""
    return [line.split(", time:")[0] for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], str]:
    """An oracle database of a small sweep, that sweep's JSON report and its printed report."""
    where = tmp_path_factory.mktemp("oracle")
    report = where / "fresh.json"
    code = cli.main(["parity", *_ARGS, "--no-store", "--no-progress", "--save-oracle", str(where / "db"),
                     "--json", str(report)])  # fmt: skip
    assert code == 0
    return where / "db", json.loads(report.read_text()), ""


def _case_checks(report: dict[str, Any]) -> list[Any]:
    return [(c["id"], c["status"], c.get("jax", ""), [row[:2] + row[3:] for row in c["checks"]])
            for c in report["cases"]]  # fmt: skip


def test_the_manifest_holds_the_format_provenance_and_the_cases(oracle: tuple[Path, dict[str, Any], str]) -> None:
    db, fresh, _ = oracle
    manifest = store.read_manifest(str(db))
    assert manifest["format"] == store.FORMAT and manifest["version"] == store.FORMAT_VERSION
    prov = manifest["provenance"]
    assert {"jax", "jaxlib", "numpy", "ml_dtypes", "castwise", "platform", "seed"} <= set(prov)
    assert prov["numpy"] == np.__version__ and prov["ml_dtypes"] == ml_dtypes.__version__ and prov["seed"] == 0
    assert manifest["cases"] == [c["id"] for c in fresh["cases"]]


def test_the_oracle_replays_without_jax(oracle: tuple[Path, dict[str, Any], str], tmp_path: Path) -> None:
    db, fresh, _ = oracle
    out = tmp_path / "replayed.json"
    script = (
        "import sys; sys.modules['jax'] = None; sys.modules['jaxlib'] = None\n"  # import jax now fails
        "from autodiff import cli\n"
        f"code = cli.main(['parity', '--oracle', {str(db)!r}, '--no-progress', '--json', {str(out)!r}])\n"
        "assert 'jax' not in sys.modules or sys.modules['jax'] is None\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=_ROOT, capture_output=True, text=True, timeout=300,
                          env={**_env(), "PYTHONPATH": str(_ROOT)})  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    replayed = json.loads(out.read_text())
    assert _case_checks(replayed) == _case_checks(fresh)
    assert replayed["summary"] == fresh["summary"] and replayed["counts"] == fresh["counts"]


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def test_without_jax_a_plain_sweep_says_what_to_do(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "jax", None)  # what a failed import leaves: ``import jax`` raises
    code, _, err = _main(capsys, "parity", "--ops", "add", "--no-store")
    assert code == 2
    assert err.strip().splitlines() == [
        "castwise parity: JAX is needed: pip install 'castwise[jax]' (or replay an oracle database: --oracle DIR)"
    ]


def test_load_oracle_yields_the_inputs_exactly_and_jaxs_outputs(oracle: tuple[Path, dict[str, Any], str]) -> None:
    db, fresh, _ = oracle
    cases = list(load_oracle(str(db)))
    assert [c.id for c in cases] == [c["id"] for c in fresh["cases"]]
    by_id = {c.id: c for c in build_cases(("jax", "torch"), ("add", "reduce_max"),
                                          (rt.float32, rt.bfloat16, rt.float8_e4m3fn, rt.int2))}  # fmt: skip
    seen_dtypes: set[str] = set()
    refusals = 0
    whats: set[str] = set()
    for oc in cases:
        case = by_id[oc.id]
        drawn = _common._make_inputs(case, 0)
        for got, want in zip(oc.operands, drawn, strict=True):
            if isinstance(want, np.ndarray):
                assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
                seen_dtypes.add(rt.dtype(got.dtype).name)
            else:
                assert type(got) is type(want) and got == want  # a Python scalar stays one (weak)
        if oc.outputs is None:
            refusals += 1
            assert oc.error
            continue
        now = references.evaluate_eager(references.requests_for(case, 0)[:1])[0]
        assert now.arrays is not None
        for got, want in zip(oc.outputs, now.arrays, strict=True):
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
        if any(rt.dtype(o.dtype).is_inexact for o in oc.outputs):
            assert oc.tolerance["dtype"] is not None and oc.tolerance["primal"] > 0
        else:  # integers compare exactly
            assert oc.tolerance == {"dtype": None, "primal": 0.0, "derivative": 0.0}
        whats.update(r.what for r in oc.references)
    assert {"float32", "bfloat16", "float8_e4m3fn", "int2"} <= seen_dtypes
    assert refusals  # the float8 / bfloat16 mixes JAX refuses are in the database too
    assert {"primal", "lax", "jvp:0", "jvp:1", "vjp:0,1", "vmap:0:0", "vmap:1:0,1"} <= whats


def test_every_catalog_dtype_round_trips_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    for d in ALL_DTYPES:
        flat = np.frombuffer(rng.bytes(6 * np.dtype(d.storage).itemsize), dtype=d.storage)
        for a in (flat.reshape(2, 3), flat.reshape(3, 2).T, flat[0].reshape(()), flat[:0]):  # (a transposed view)
            b = store.decode_value(json.loads(json.dumps(store.encode_value(a))))
            assert b.dtype == a.dtype and b.shape == a.shape and b.tobytes() == a.tobytes(), d.name
    for x in (True, 2, 0.6875, 0.6875 + 0.4375j):
        y = store.decode_value(json.loads(json.dumps(store.encode_value(x))))
        assert type(y) is type(x) and y == x


def _wrong_primal(record: dict[str, Any]) -> None:
    ref = next(r for r in record["references"] if r["what"] == "primal")
    value = store.decode_value(ref["outputs"][0])
    ref["outputs"][0] = store.encode_value((value.astype(np.float64) * 2 + 1).astype(value.dtype))


def test_a_wrong_or_corrupt_reference_in_the_oracle_fails_the_replay_naming_it(
    oracle: tuple[Path, dict[str, Any], str], tmp_path: Path
) -> None:
    import shutil

    db = tmp_path / "db"
    shutil.copytree(oracle[0], db)
    records = store.RecordDir(str(db))
    wrong, corrupt = "add[f32,f32]@jax", "add[bf16,bf16]@torch"
    record = records.read(wrong)
    assert record is not None
    _wrong_primal(record)
    Path(records.path(wrong)).write_bytes(store.encode_record(record))
    Path(records.path(corrupt)).write_bytes(Path(records.path(corrupt)).read_bytes()[:-10])
    report = run_parity(Options(ops=("*",), jobs=1, oracle=str(db), seed=0, policies=("jax", "torch")), progress=None)
    failed = {r.case_id: r for r in report.results if r.status == "failed"}
    assert set(failed) == {wrong, corrupt}
    assert failed[wrong].reference == records.path(wrong)
    assert f"reference: {records.path(wrong)}" in report.render()
    (crash,) = failed[corrupt].checks
    assert records.path(corrupt) in crash.message and "truncated" in crash.message


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--seed", "3"), "holds seed 0's inputs; --seed 3 cannot be replayed"),
        (("--quick",), "holds a full sweep; --quick samples other inputs"),
        (("--dtypes", "f32"), "replays the dtypes it was made with"),
        (("--policy", "numpy"), "holds policies jax torch; --policy numpy is not among them"),
    ],
)
def test_a_replay_refuses_a_selection_the_database_was_not_made_with(
    oracle: tuple[Path, dict[str, Any], str], capsys: pytest.CaptureFixture[str], flags: tuple[str, ...], says: str
) -> None:
    db, _, _ = oracle
    code, out, err = _main(capsys, "parity", "--oracle", str(db), "--no-progress", *flags)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("castwise parity:") and says in err, err


def test_a_replay_narrowed_by_policy_and_seed_it_holds_replays_that_part(
    oracle: tuple[Path, dict[str, Any], str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db, fresh, _ = oracle
    out = tmp_path / "torch.json"
    code, _, err = _main(capsys, "parity", "--oracle", str(db), "--no-progress", "--seed", "0", "--policy", "torch",
                         "--json", str(out))  # fmt: skip
    assert code == 0, err
    replayed = json.loads(out.read_text())
    want = [c for c in _case_checks(fresh) if c[0].endswith("@torch")]
    assert want and _case_checks(replayed) == want


def test_shards_saved_into_one_database_replay_as_the_whole_run(
    oracle: tuple[Path, dict[str, Any], str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _, fresh, _ = oracle
    db = tmp_path / "sharded"
    for k in (1, 2, 3):
        code, _, err = _main(
            capsys, "parity", *_ARGS, "--no-store", "--no-progress", "--shard", f"{k}/3", "--save-oracle", str(db)
        )
        assert code == 0, err
        if k == 1:  # the first shard's database replays its own part
            held = store.read_manifest(str(db))["cases"]
            assert 0 < len(held) < len(fresh["cases"])
    assert store.read_manifest(str(db))["cases"] == [c["id"] for c in fresh["cases"]]  # in the selection's order
    out = tmp_path / "replayed.json"
    code, _, err = _main(capsys, "parity", "--oracle", str(db), "--no-progress", "--json", str(out))
    assert code == 0, err
    assert _case_checks(json.loads(out.read_text())) == _case_checks(fresh)
