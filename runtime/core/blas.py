"""The thread count of the BLAS NumPy links, where castwise can reach it (OpenBLAS in NumPy's wheels).

Matrix products run in NumPy's BLAS, which starts its own threads: one per CPU,
unless ``OPENBLAS_NUM_THREADS`` says otherwise. ``rt.set_num_threads`` sets that
count too, so one call gives castwise a thread budget as ``torch.set_num_threads``
does. The library is the one NumPy's wheel ships (``numpy.libs`` on Linux,
``numpy/.dylibs`` on macOS); another build (a system BLAS, MKL) is left to its own
controls and ``blas_threads()`` is ``None``.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
from typing import Any

import numpy as np

#: The setter / getter names of OpenBLAS builds: scipy-openblas (NumPy's wheels, 64-bit ints), plain.
_NAMES = (
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
)


@functools.cache
def _openblas() -> tuple[Any, Any] | None:
    """OpenBLAS's (set, get) thread-count functions, from the library NumPy's wheel ships."""
    here = os.path.dirname(np.__file__)
    found = [
        *glob.glob(os.path.join(here, os.pardir, "numpy.libs", "*openblas*")),
        *glob.glob(os.path.join(here, ".dylibs", "*openblas*")),
    ]
    for path in found:
        try:
            lib = ctypes.CDLL(path)  # already loaded by NumPy: the same handle
        except OSError:
            continue
        for set_name, get_name in _NAMES:
            setter, getter = getattr(lib, set_name, None), getattr(lib, get_name, None)
            if setter is not None and getter is not None:
                setter.argtypes, setter.restype = [ctypes.c_int], None
                getter.argtypes, getter.restype = [], ctypes.c_int
                return setter, getter
    return None


def blas_threads() -> int | None:
    """The thread count of NumPy's OpenBLAS, or ``None`` where castwise cannot reach the BLAS."""
    found = _openblas()
    return None if found is None else int(found[1]())


def set_blas_threads(n: int) -> bool:
    """Set NumPy's OpenBLAS thread count; False where castwise cannot reach the BLAS."""
    found = _openblas()
    if found is None:
        return False
    found[0](n)
    return True
