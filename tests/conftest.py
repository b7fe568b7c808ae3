"""Sampled by default, exhaustive on request.

The default run (``-m 'not slow'``, set in pyproject.toml) must stay under ten minutes on
two cores. A few table-driven tests over many (dtype, shape, configuration) rows cost
more than that budget allows; for each of them, ``SAMPLED`` keeps one row in ``k`` in the
default run (every k-th row in parametrize order, so the same rows run every time and
on every machine, and each test keeps its first row) and marks the others ``slow``.
``pytest -m slow`` runs the rows left out, ``pytest -m ''`` runs everything.

Hypothesis is reproducible by default: the ``repro`` profile derandomizes, so every
machine (CI included) draws the same examples and a red run can be rerun anywhere.
``HYPOTHESIS_PROFILE=explore`` draws fresh random examples on each run; run it before
a stop to look for new counterexamples.

``CASTWISE_TEST_PROFILE=DIR`` writes, per worker, one line per test to ``DIR/<worker>.tsv``:
the test id, the CPU seconds its call took (setup and teardown included) and the worker's
resident memory after it, in MB. CPU time, not wall time, because these machines are shared
and differ in speed; ``benchmarks/test_cost.py DIR`` sums the lines by file and by test.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import resource
import sys
import tempfile
import time
from collections.abc import Generator
from typing import TextIO

import pytest
from hypothesis import settings

# JAX compiles the oracles' programs once per process: with two xdist workers, and again after
# each module drops its executables (below), most programs are compiled twice or more. A
# persistent compilation cache shared by the workers turns the repeats into loads (about a
# third of the CPU of a compile). JAX reads these at import; a user's own settings win.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(tempfile.gettempdir(), "castwise-tests-xla-cache"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")

settings.register_profile("repro", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repro"))

#: "file::test function" -> k: one parametrized row in k runs by default
SAMPLED: dict[str, int] = {
    "tests/autodiff/test_rules_windowed.py::test_select_ops_match_lax": 2,
    "tests/autodiff/test_rules_windowed.py::test_conv_jvp_and_vjp_match_jax": 2,
    "tests/autodiff/test_rules_windowed.py::test_conv_values_match_lax": 3,
    "tests/autodiff/test_rules_windowed.py::test_reduce_window_values_match_lax": 3,
    "tests/autodiff/test_reductions_scans.py::test_scan_derivatives_match_jax_with_ties_and_zeros": 4,
    "tests/autodiff/test_reductions_scans.py::test_scans_match_lax": 3,
    "tests/autodiff/test_rules_linalg_factor.py::test_lu_vs_jax": 2,
    "tests/autodiff/test_rules_linalg_factor.py::test_svd_vs_jax": 2,
    "tests/autodiff/test_rules_linalg_factor.py::test_qr_vs_jax": 2,
    "tests/autodiff/test_rules_sorting.py::test_jvp_and_vjp_match_jax": 2,
    "tests/runtime/test_linalg_namespace.py::test_matches_jax_numpy_linalg": 6,
    "tests/runtime/test_preferred_element_type.py::test_preferred_element_type_matches_lax": 2,
    "tests/runtime/test_kernels.py::test_elementwise_matches_lax": 2,
    "tests/runtime/test_opfamilies.py::test_float_only_ops_on_integers_follow_jax_numpy": 2,
    "tests/runtime/test_creation.py::test_rows_jax": 2,
    "tests/runtime/test_manipulation.py::test_manipulation_matches_the_policy_library": 2,
    "tests/runtime/test_manipulation.py::test_product_matches_the_policy_library": 2,
}


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every row of a ``SAMPLED`` test outside its sample ``slow``: rows 0, k, 2k ... of
    each test, in collection order (the parametrize order), run by default."""
    seen: dict[str, int] = {}
    for item in items:
        function, _, row = item.nodeid.partition("[")
        k = SAMPLED.get(function)
        if k is None or not row:
            continue
        position = seen[function] = seen.get(function, -1) + 1
        if position % k:
            item.add_marker(pytest.mark.slow)


def _release_memory() -> None:
    """Drop what JAX compiled for the module that just ran, and hand the freed heap back.

    Eager JAX (the oracles' ``jax.grad``, ``jnp.*`` outside ``jit``) compiles one executable per
    primitive, shape and dtype and keeps it for the life of the process: about 17 MB per
    distinct eager gradient, so an xdist worker grew past 4 GB over the suite. Executables are
    rarely shared between test modules, so clearing JAX's caches after each module bounds a
    worker's memory by its largest module, for a few recompiles. ``malloc_trim`` returns the
    freed pages, so RSS shows what is in use (glibc only; elsewhere it is skipped).
    """
    jax = sys.modules.get("jax")
    if jax is None:
        return
    jax.clear_caches()
    gc.collect()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


_LIBC_NAME = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
_LIBC = ctypes.CDLL(_LIBC_NAME) if _LIBC_NAME else None


@pytest.fixture(autouse=True, scope="module")
def _clear_jax_caches_after_each_module() -> Generator[None, None, None]:
    yield
    _release_memory()


_PROFILE_DIR = os.environ.get("CASTWISE_TEST_PROFILE", "")
_profile_file: list[TextIO] = []


def _rss_mb() -> float:
    """The process's resident memory now, in MB (Linux; the peak elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    """With ``CASTWISE_TEST_PROFILE`` set, record each test's CPU seconds and the RSS after it."""
    if not _PROFILE_DIR:
        yield
        return
    start = time.process_time()
    yield
    spent = time.process_time() - start
    if not _profile_file:
        os.makedirs(_PROFILE_DIR, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _profile_file.append(open(os.path.join(_PROFILE_DIR, f"{worker}.tsv"), "a"))  # noqa: SIM115
    _profile_file[0].write(f"{item.nodeid}\t{spent:.4f}\t{_rss_mb():.0f}\n")
    _profile_file[0].flush()
