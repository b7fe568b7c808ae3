"""castwise's array API namespace against the standard's own test suite (data-apis/array-api-tests).

The suite is not on PyPI: point ``CASTWISE_ARRAY_API_TESTS`` at an extracted copy (the directory
holding ``array_api_tests/`` and ``conftest.py``; docs/testing.md has the command). Without it,
or without its dependencies (``ndindex``), the suite's tests skip; the skip list's own check runs
always.

Each suite file runs in a subprocess (the suite is a pytest project of its own, with its conftest,
its options and its Hypothesis profile), with ``ARRAY_API_TESTS_MODULE`` naming ``rt.array_api``
under a policy, and the documented skip list (``array_api_skips.txt``: every entry a deliberate
departure or a pending work package, with its reason) as ``--skips-file``. A file passes when the
subprocess does: every test passes or is on the skip list.

The default run samples: a few cheap files at 5 Hypothesis examples, under jax (and the data type
functions under numpy, whose promotion differs). The full run (all
files, both policies, 20 examples derandomized, the settings of the measured baseline) is
``-m slow``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIPS = Path(__file__).with_name("array_api_skips.txt")
SUITE_ENV = "CASTWISE_ARRAY_API_TESTS"

#: every test file of the suite (55fcc60)
SUITE_FILES = (
    "test_array_object.py",
    "test_constants.py",
    "test_creation_functions.py",
    "test_data_type_functions.py",
    "test_dlpack.py",
    "test_fft.py",
    "test_has_names.py",
    "test_indexing_functions.py",
    "test_inspection_functions.py",
    "test_linalg.py",
    "test_manipulation_functions.py",
    "test_operators_and_elementwise_functions.py",
    "test_searching_functions.py",
    "test_set_functions.py",
    "test_signatures.py",
    "test_sorting_functions.py",
    "test_special_cases.py",
    "test_statistical_functions.py",
    "test_utility_functions.py",
)
#: the default run's sample: files that take seconds, and cover the names, the signatures, the
#: data type functions and the functions with data-dependent shapes
SAMPLED = ("test_has_names.py", "test_signatures.py", "test_data_type_functions.py", "test_set_functions.py")
POLICIES = ("jax", "numpy")


def _module_for(policy: str) -> str:
    """``ARRAY_API_TESTS_MODULE`` for ``policy``: the namespace itself under the default policy, and
    the suite's ``exec('...')`` form entering another policy for the whole run (the suite runs its
    tests in one thread, the one that enters it). The context manager is kept in the script's
    namespace, which the suite keeps: a dropped one would be collected and restore the policy."""
    if policy == "jax":
        return "runtime.array_api"
    return f"exec('import runtime as rt; ctx = rt.use_policy(\"{policy}\"); ctx.__enter__(); xp = rt.array_api')"


def suite_location() -> Path | None:
    where = os.environ.get(SUITE_ENV)
    if not where:
        return None
    path = Path(where).expanduser()
    return path if (path / "array_api_tests").is_dir() else None


def run_suite_file(suite: Path, name: str, policy: str, examples: int) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["ARRAY_API_TESTS_MODULE"] = _module_for(policy)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    command = [
        sys.executable, "-m", "pytest", f"array_api_tests/{name}", f"--max-examples={examples}", "--derandomize",
        f"--skips-file={SKIPS}", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-rf", "--tb=line",
        # timing is no correctness: the suite's 800 ms deadline fails on a loaded machine
        "-W", "ignore::UserWarning", "--hypothesis-disable-deadline",
    ]  # fmt: skip
    return subprocess.run(command, cwd=suite, env=env, capture_output=True, text=True, timeout=3600, check=False)


def _check(name: str, policy: str, examples: int) -> None:
    suite = suite_location()
    if suite is None:
        pytest.skip(f"{SUITE_ENV} does not name an extracted array-api-tests (docs/testing.md)")
    if importlib.util.find_spec("ndindex") is None:
        pytest.skip("the suite needs ndindex (pip install ndindex)")
    done = run_suite_file(suite, name, policy, examples)
    tail = "\n".join(done.stdout.splitlines()[-40:])
    # 0: all passed; 5: nothing collected (an extension castwise does not have yet, e.g. fft)
    assert done.returncode in (0, 5), f"array-api-tests {name} under {policy!r} failed:\n{tail}\n{done.stderr[-2000:]}"


@pytest.mark.parametrize(("name", "policy"), [*((n, "jax") for n in SAMPLED), ("test_data_type_functions.py", "numpy")])
def test_sampled_suite_files_pass(name: str, policy: str) -> None:
    _check(name, policy, 5)


@pytest.mark.slow
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("name", SUITE_FILES)
def test_suite_file_passes(name: str, policy: str) -> None:
    _check(name, policy, 20)


def skip_entries() -> list[tuple[str, list[str]]]:
    """The skip list's test ids, each with the comment lines of its block (its reason); blocks
    are separated by blank lines."""
    entries: list[tuple[str, list[str]]] = []
    for block in SKIPS.read_text().split("\n\n"):
        lines = block.strip().splitlines()
        reason = [line.lstrip("#").strip() for line in lines if line.startswith("#")]
        entries += [(line.strip(), reason) for line in lines if line.startswith("array_api_tests")]
    return entries


def test_every_skip_has_a_reason_and_names_a_suite_file() -> None:
    entries = skip_entries()
    assert entries, "the skip list lost its entries"
    for test_id, reason in entries:
        assert reason, f"{test_id} has no reason above it"
        assert any(r.startswith(("departure:", "pending")) for r in reason), f"{test_id}: say departure or pending"
        file = re.split(r"::|\[", test_id, maxsplit=1)[0].removeprefix("array_api_tests/")
        assert file in SUITE_FILES, f"{test_id} names no file of the suite"
    assert len({t for t, _ in entries}) == len(entries), "an entry is listed twice"
